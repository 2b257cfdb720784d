#!/usr/bin/env bash
# On the GPU machine (issue 17): where a short run's time goes under clayout, call by call. One
# sample at one size, on a cache primed as onelaunch.sh primes it (two runs of 100 launches with
# the builds waited for, three one-launch runs); then REPS interleaved runs of ITERS launches
# without clayout and for each library in LIBS under each configuration in CONFIGS (auto,
# never, always, norewrite: CLAYOUT_REWRITE=0, disable: CLAYOUT_DISABLE=1, noprofile: auto with
# CLAYOUT_PROFILE=0, late: auto with CLAYOUT_BUILD_AFTER=60000 (nothing of clayout's on its thread
# during a short run), bare: without clayout again, a control for the order; default auto), each
# in a turn that rotates from one round to the next, so that no configuration always runs first;
# ENVALL="VAR=value ..." is set for every run, the one without clayout included; each timing
# every OpenCL call (bench/calltime.c): per entry point the median over the runs of its total
# time in the run (and of its largest call), and the median total_ms. FRESH=1: no priming, every run on an empty cache
# (a program's first run). PRIME="SIZE:LAUNCHES ...": prime instead with those runs under auto,
# in turn (the stress sequence's history: PRIME="262144:100 64000:2 262144:30 64000:1"), with
# SIZE the sample's -n. Writes $OUT/shortcalls.txt.
#   LIBS="a.so b.so" CONFIGS="auto never" REPS=9 ITERS=1 scripts/device/shortcalls.sh [PLATFORM] [SAMPLE] [SIZE ARGS]
set -uo pipefail
S=/tmp/sc-samples
. scripts/device/samples-env.sh
sample=${2:-particles}
size=${3:--n 64000}
bin=$S/$sample/$sample
A=$root/samples/$sample/$sample.dl
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
# One run, its calltime lines and total_ms appended to $1.
one() {
    local f=$1
    shift
    (cd samples/$sample && env "$@" $bin $size -i ${ITERS:-1} --platform $platform 2>&1 >/tmp/sc-out.txt | grep '^calltime: cl' >>$f
        awk '/^total_ms/ {print "calltime: total_ms 1 calls", $2 * 1000, "us"}' /tmp/sc-out.txt >>$f)
}
# Per entry point: the median of its time per run (us), from the lines of $1.
medians() {
    awk 'function med(s,   a, k, i, j, x) {k = split(s, a, " ")
            for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] + 0 < a[j - 1] + 0; j--) {x = a[j]; a[j] = a[j - 1]; a[j - 1] = x}
            return a[int((k + 1) / 2)]}
        {t[$2] = t[$2] " " $5; sub(/\)/, "", $8); l[$2] = l[$2] " " $8; r[$2]++}
        END {for (n in t) printf "  %-24s %9.1f us (%d runs; largest call %.1f)\n", n, med(t[n]), r[n], med(l[n])}' $1 | sort
}
libs=$(for l in ${LIBS:-.devcarry/rt/libclayout.so}; do readlink -f $l; done)
configs=${CONFIGS:-auto}
setting() {
    case $1 in
    never) echo CLAYOUT_POLICY=never ;; noprofile) echo CLAYOUT_PROFILE=0 ;; always) echo CLAYOUT_POLICY=always ;; norewrite) echo CLAYOUT_REWRITE=0 ;; disable) echo CLAYOUT_DISABLE=1 ;; late) echo CLAYOUT_BUILD_AFTER=60000 ;; *) echo X=1 ;;
    esac
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for l in $libs; do
        cache=/tmp/sc-cache-$(basename $l)
        rm -rf $cache
        [ "${FRESH:-0}" = 1 ] && continue
        if [ -n "${PRIME:-}" ]; then
            prime_cache $cache $sample $l "$PRIME"
            continue
        fi
        for i in 100 100; do (cd samples/$sample && CLAYOUT_BUILD_AFTER=wait CLAYOUT_CACHE_DIR=$cache CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$l $bin $size -i $i --platform $platform >/dev/null 2>&1); done
        for i in 1 1 1; do (cd samples/$sample && CLAYOUT_CACHE_DIR=$cache CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$l $bin $size -i $i --platform $platform >/dev/null 2>&1); done
    done
    rm -f /tmp/sc-*.lines
    turns=(none)
    for l in $libs; do for c in $configs; do turns+=("$l:$c"); done; done
    for r in $(seq ${REPS:-9}); do
        for k in $(seq 0 $((${#turns[@]} - 1))); do
            t=${turns[$(((k + r) % ${#turns[@]}))]}
            l=${t%:*} c=${t##*:}
            if [ "$t" = none ]; then
                one /tmp/sc-none.lines ${ENVALL:-} LD_PRELOAD=/tmp/calltime.so
            elif [ "$c" = bare ]; then
                one /tmp/sc-$(basename $l)-$c.lines ${ENVALL:-} LD_PRELOAD=/tmp/calltime.so
            else
                [ "${FRESH:-0}" = 1 ] && rm -rf /tmp/sc-cache-$(basename $l)
                one /tmp/sc-$(basename $l)-$c.lines ${ENVALL:-} $(setting $c) LD_PRELOAD="/tmp/calltime.so $l" CLAYOUT_CACHE_DIR=/tmp/sc-cache-$(basename $l) CLAYOUT_ANNOTATIONS=$A
            fi
        done
    done
    echo "== $sample $size -i ${ITERS:-1}: without clayout"
    medians /tmp/sc-none.lines
    for l in $libs; do
        for c in $configs; do
            echo "== $c, $(basename $l)"
            medians /tmp/sc-$(basename $l)-$c.lines
        done
        (cd samples/$sample && CLAYOUT_STATS=/tmp/sc-stats.json CLAYOUT_CACHE_DIR=/tmp/sc-cache-$(basename $l) CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$l $bin $size -i ${ITERS:-1} --platform $platform >/dev/null 2>&1)
        echo "  reasons: $(grep -A1 '"reasons"' /tmp/sc-stats.json | grep -v '"reasons"\|^--' | tr -s ' ' | tr '\n' ' ')"
    done
} 2>&1 | tee "$OUT/shortcalls${TAG:+-$TAG}.txt"
