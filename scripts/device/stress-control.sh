#!/usr/bin/env bash
# On the GPU machine (issue 17): how far two runs of the same short run apart from clayout
# differ, beside the stress sequence's own comparison. Part 1 runs the stress sequence
# (scripts/policy-stress.sh's runs and sizes, one cache for auto and always) with each run made
# four times in a row: without clayout, under auto, without clayout again, under always; the two
# runs without clayout say what the run's place in the order and the machine's spread do.
# Part 2 makes the sequence's run 3 (particles -n 64000 -i 2) after its runs 1-2, ROUNDS times in
# rotated order, each run under clayout on a fresh copy of the cache those runs left: without
# clayout; under auto with the statistics on (stats) and off (plain); on a cache that auto alone
# primed (autoonly). Each line: total_ms, kernel_ms, the checksum's first digits. Writes
# $OUT/stress-control.txt, and the debug log and statistics of one more run 3.
#   LIB=path ROUNDS=9 scripts/device/stress-control.sh
set -uo pipefail
S=/tmp/ex-samples
. scripts/device/samples-env.sh NVIDIA
bin=$S/particles/particles
A=$root/samples/particles/particles.dl
exec > >(tee "$OUT/stress-control.txt") 2>&1
one() { # policy|none iters n cache [VAR=value...]
    local cfg=$1 it=$2 n=$3 c=$4
    shift 4
    if [ "$cfg" = none ]; then
        (cd samples/particles && $bin -n "$n" -i "$it" --platform NVIDIA)
    else
        (cd samples/particles && env CLAYOUT_POLICY="$cfg" CLAYOUT_CACHE_DIR="$c" CLAYOUT_ANNOTATIONS="$A" \
            LD_PRELOAD="$lib" "$@" $bin -n "$n" -i "$it" --platform NVIDIA)
    fi | awk '/^total_ms/ {t=$2} /^kernel_ms/ {k=$2} /^checksum/ {s=$2} END {printf "%s %s %s", t, k, substr(s,1,8)}'
}
echo "== part 1: the stress sequence, each run as none_a auto none_b always (one cache for auto and always)"
for pass in 1 2; do
    c=/tmp/sc-cache-$pass
    rm -rf "$c"
    i=0
    for it in 1 100 2 30 1 1000 8 30; do
        n=$([ $((i % 2)) = 0 ] && echo 64000 || echo 262144)
        i=$((i + 1))
        a=$(one none "$it" $n "$c")
        b=$(one auto "$it" $n "$c" CLAYOUT_STATS=/tmp/sc-st.json)
        d=$(one none "$it" $n "$c")
        e=$(one always "$it" $n "$c" CLAYOUT_STATS=/tmp/sc-st2.json)
        echo "pass $pass run $i n=$n i=$it | none_a $a | auto $b | none_b $d | always $e"
    done
done
echo "== part 2: run 3 (64000 -i 2) after runs 1-2 as the stress makes them, rotated, fresh cache copy each"
snap=/tmp/sc-snap snap2=/tmp/sc-snap2
rm -rf $snap $snap2
for it_n in "1 64000" "100 262144"; do
    one auto $it_n $snap >/dev/null
    one always $it_n $snap >/dev/null
    one auto $it_n $snap2 >/dev/null
done
cfgs="none stats plain autoonly"
for r in $(seq "${ROUNDS:-9}"); do
    for c in $cfgs; do
        rm -rf /tmp/sc-run
        case $c in
            none) x=$(one none 2 64000 /tmp/sc-run) ;;
            stats) cp -a $snap /tmp/sc-run && x=$(one auto 2 64000 /tmp/sc-run CLAYOUT_STATS=/tmp/sc-st3.json) ;;
            plain) cp -a $snap /tmp/sc-run && x=$(one auto 2 64000 /tmp/sc-run) ;;
            autoonly) cp -a $snap2 /tmp/sc-run && x=$(one auto 2 64000 /tmp/sc-run) ;;
        esac
        echo "round $r $c $x"
    done
    cfgs="$(echo $cfgs | awk '{for (i = 2; i <= NF; i++) printf "%s ", $i; print $1}')"
done
rm -rf /tmp/sc-run && cp -a $snap /tmp/sc-run
one auto 2 64000 /tmp/sc-run CLAYOUT_LOG=debug CLAYOUT_STATS="$OUT/run3-stats.json" 2>"$OUT/run3-debug.log" >/dev/null
