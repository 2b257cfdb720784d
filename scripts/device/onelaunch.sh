#!/usr/bin/env bash
# On the GPU machine (issue 17): runs of one launch at the samples' large sizes, from a
# program's later runs on: kernel_ms without clayout and under `auto` for each library in
# LIBS, in PAIRS interleaved rounds (so that drift of the machine falls on every
# configuration alike), with the median and range of each. Before the rounds each library's
# cache is primed as buildload.sh part 4 does (two runs of 100 launches, builds waited for),
# then taught three one-launch runs, so that the history holds long and short runs. One more
# run per library with CLAYOUT_STATS says why its first launch ran as it did; every run's
# checksum is counted (one value: every configuration printed the same results). ITERS=n
# measures runs of n launches instead of one.
#   LIBS=".devcarry/rt/base.so .devcarry/rt/libclayout.so" PAIRS=9 scripts/device/onelaunch.sh [PLATFORM]
# Writes $OUT/onelaunch.txt.
set -uo pipefail
S=/tmp/ol-samples
. scripts/device/samples-env.sh
# kernel_ms of sample $s at its large size, $i iterations, clayout's cache in $cache, under the
# environment given.
run() {
    (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache "$@" \
        $S/$s/$s $(large $s) --platform $platform -i $i 2>/dev/null | awk '/^kernel_ms/ {k=$2} /^checksum/ {c=$2} END {print k, c}')
}
# Median (range) of the numbers on standard input.
med() { cut -d' ' -f1 | sort -g | awk '{a[NR]=$1} END {printf "%.3f (%.3f-%.3f, %d runs)", a[int((NR+1)/2)], a[1], a[NR], NR}'; }
libs=$(for l in ${LIBS:-.devcarry/rt/libclayout.so}; do readlink -f $l; done)
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for s in ${SAMPLES:-blackscholes lbm particles spmv-ell}; do
        for l in $libs; do
            cache=/tmp/ol-cache-$s-$(basename $l)
            rm -rf $cache
            i=100
            for w in 1 2; do run env LD_PRELOAD=$l CLAYOUT_BUILD_AFTER=wait >/dev/null; done
            i=1
            for w in 1 2 3; do run env LD_PRELOAD=$l >/dev/null; done
        done
        rm -f /tmp/ol-*.txt
        i=${ITERS:-1}
        for r in $(seq ${PAIRS:-9}); do
            cache=/tmp/ol-unused run env >>/tmp/ol-none.txt
            for l in $libs; do
                cache=/tmp/ol-cache-$s-$(basename $l)
                run env LD_PRELOAD=$l >>/tmp/ol-$(basename $l).txt
            done
        done
        echo "== $s -i $i, kernel_ms: median (range); checksums: $(cut -d' ' -f2 /tmp/ol-*.txt | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
        echo "none: $(med </tmp/ol-none.txt)"
        for l in $libs; do
            cache=/tmp/ol-cache-$s-$(basename $l)
            run env LD_PRELOAD=$l CLAYOUT_STATS=/tmp/ol-stats.json >/dev/null
            why=$(grep -A1 '"reasons"' /tmp/ol-stats.json | grep -v '"reasons"\|^--' | tr -s ' ' | tr '\n' ' ')
            echo "auto $(basename $l): $(med </tmp/ol-$(basename $l).txt) | first launch: $why"
        done
    done
} 2>&1 | tee "$OUT/onelaunch.txt"
