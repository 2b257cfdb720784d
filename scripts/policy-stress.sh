#!/usr/bin/env bash
# The cost model against run lengths that vary (issue 17): one sample, one clayout cache, a
# fixed shuffled sequence of runs of 1, 100, 2, 30, 1, 1000, 8 and 30 launches at two problem
# sizes. Each run's total_ms (upload, launches, read-back: clayout's host time inside the
# application's calls included) under `auto`, which learns from the runs before it in the
# shared cache, against the same run without clayout and under `always` (the better of --reps
# runs each; `always` keeps a cache of its own, filled before the sequence). Every checksum is
# compared with the run without clayout.
#   scripts/policy-stress.sh --platform NAME [--lib PATH] [--sample NAME] [--reps N]
#                            [--sizes "SMALL_ARGS;LARGE_ARGS"]
# Without cargo (the GPU machine): give --lib and, if the OpenCL headers are elsewhere, CC.
# Columns: auto vs none (+: auto slower), and the share of always' gain over no clayout that
# auto kept (blank where always gains nothing).
set -uo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
platform=${SAMPLE_PLATFORM:-}
lib=
sample=blackscholes
reps=2
sizes=
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift 2 ;;
        --lib) lib=$2; shift 2 ;;
        --sample) sample=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        *) echo "policy-stress: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$sizes" ]; then
    case "$sample" in
        blackscholes) sizes="-n 4194304;-n 33554432" ;;
        particles) sizes="-n 2097152;-n 16777216" ;;
        lbm) sizes="-x 96 -y 96 -z 64;-x 192 -y 192 -z 128" ;;
        spmv-ell) sizes="-n 1048576 -k 32;-n 4194304 -k 32" ;;
        *) echo "policy-stress: give --sizes for $sample" >&2; exit 2 ;;
    esac
fi
small=${sizes%%;*} large=${sizes#*;}
# The sequence: launches and size (S or L), shuffled once and fixed.
sequence="1:L 100:S 2:L 30:S 1:S 1000:L 8:S 30:L"
target=${CARGO_TARGET_DIR:-$root/target}
out=$target/samples
make -s -C "$root/samples" OUT="$out" ${CC:+CC="$CC"} >/dev/null || exit 1
lib=$(readlink -f "${lib:-$target/release/libclayout.so}")
bin=$out/$sample/$sample
work=$(mktemp -d)
auto_cache=$work/auto always_cache=$work/always
shim=(LD_PRELOAD="$lib" CLAYOUT_ANNOTATIONS="$root/samples/$sample/$sample.dl")
# run NAME ITERS ARGS ENV...: prints "total_ms checksum" of one run.
one() {
    local iters=$1 args=$2; shift 2
    local o
    o=$(env ${platform:+SAMPLE_PLATFORM=$platform} "$@" "$bin" -i "$iters" $args 2>"$work/err") || { echo "FAILED -"; return; }
    echo "$(echo "$o" | awk '/^total_ms:/ {print $2}') $(echo "$o" | awk '/^checksum:/ {print $2}')"
}
best() { # ITERS ARGS ENV...: the lowest total_ms of --reps runs, and the checksum
    local b="" c="" r t k
    for r in $(seq "$reps"); do
        read -r t k < <(one "$@")
        c=$k
        if [ -z "$b" ] || awk -v a="$t" -v b="$b" 'BEGIN {exit !(a < b)}'; then b=$t; fi
    done
    echo "$b $c"
}
# always' cache holds its tile and conversion costs before the sequence, as auto's will later.
one 1 "$small" "${shim[@]}" CLAYOUT_POLICY=always CLAYOUT_CACHE_DIR="$always_cache" >/dev/null
one 1 "$large" "${shim[@]}" CLAYOUT_POLICY=always CLAYOUT_CACHE_DIR="$always_cache" >/dev/null
echo "$sample on ${platform:-the default platform}; small: $small, large: $large; one auto cache for the whole sequence"
echo "| run | launches | size | none ms | always ms | auto ms | auto vs none | share of always' gain kept | results |"
echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"
i=0
for step in $sequence; do
    i=$((i + 1))
    iters=${step%%:*} sz=${step#*:}
    args=$small
    [ "$sz" = L ] && args=$large
    read -r none cn < <(best "$iters" "$args" X=1)
    read -r always ca < <(best "$iters" "$args" "${shim[@]}" CLAYOUT_POLICY=always CLAYOUT_CACHE_DIR="$always_cache")
    read -r auto cu < <(one "$iters" "$args" "${shim[@]}" CLAYOUT_POLICY=auto CLAYOUT_CACHE_DIR="$auto_cache")
    same=same
    [ "$ca" = "$cn" ] && [ "$cu" = "$cn" ] || same="DIFFERENT ($cn / $ca / $cu)"
    cols=$(awk -v n="$none" -v a="$always" -v u="$auto" 'BEGIN {
        if (n + 0 <= 0) { print "- | -"; exit }
        d = (u - n) / n * 100
        g = n - a
        share = (g > 0 && n / a > 1.02) ? sprintf("%.0f%%", (n - u) / g * 100) : ""
        printf "%+.1f%% | %s", d, share }')
    echo "| $i | $iters | $sz | $none | $always | $auto | $cols | $same |"
done
grep -h "clayout: \(warn\|error\)" "$work/err" 2>/dev/null | head -5
rm -rf "$work"
