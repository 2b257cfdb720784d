#!/usr/bin/env bash
# On the GPU machine: what clayout adds to a launch whose CPU caches are cold (docs/results.md,
# "A launch on a cold CPU"). For each library in LIBS (default: the carried release build):
# bench/firstlaunch.c over N options without clayout, under auto and under never, five
# processes each: the first launch (enqueue to clFinish, then its enqueue call alone) and the
# median enqueue call of 25 launches each made after 0.1 s asleep (FIRSTLAUNCH_COLD); then the
# blackscholes sample with one iteration (kernel_ms), five runs each. Writes $OUT/coldlaunch.txt.
#   LIBS=".devcarry/rt/libclayout.so .devcarry/rt/other.so" scripts/device/coldlaunch.sh [PLATFORM]
set -uo pipefail
S=/tmp/cl-samples
. scripts/device/samples-env.sh
$CC -O2 -Wno-deprecated-declarations -o /tmp/firstlaunch bench/firstlaunch.c -lOpenCL -lm 2>/dev/null || exit 1
A=samples/blackscholes/blackscholes.dl
N=${N:-33554432}
export SAMPLE_PLATFORM=$platform
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for l in ${LIBS:-.devcarry/rt/libclayout.so}; do
        l=$(readlink -f $l)
        export CLAYOUT_CACHE_DIR=/tmp/cl-cache-$(basename $l)
        rm -rf $CLAYOUT_CACHE_DIR
        # Fills clayout's cache: the runs below load the copies inside the build.
        for w in 1 2; do CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$l /tmp/firstlaunch - $N >/dev/null 2>&1; done
        echo "== $l: first launch (ms: first second enqueue first second), cold enqueue (median, min)"
        for r in 1 2 3 4 5; do
            for m in none auto never; do
                case $m in
                none) out=$(FIRSTLAUNCH_COLD=25 /tmp/firstlaunch - $N) ;;
                auto) out=$(FIRSTLAUNCH_COLD=25 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$l /tmp/firstlaunch - $N) ;;
                never) out=$(FIRSTLAUNCH_COLD=25 CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$l /tmp/firstlaunch - $N) ;;
                esac
                echo "$m: $(echo "$out" | head -1 | cut -d' ' -f2-6) | $(echo "$out" | grep cold)"
            done
        done
        echo "== $l: blackscholes -i 1 -n $N, kernel_ms (none auto)"
        for r in 1 2 3 4 5; do
            a=$(cd samples/blackscholes && $S/blackscholes/blackscholes -n $N -i 1 --platform $platform | awk '/^kernel_ms/ {print $2}')
            b=$(cd samples/blackscholes && CLAYOUT_ANNOTATIONS=blackscholes.dl LD_PRELOAD=$l $S/blackscholes/blackscholes -n $N -i 1 --platform $platform 2>/dev/null | awk '/^kernel_ms/ {print $2}')
            echo "$a $b"
        done
    done
} 2>&1 | tee "$OUT/coldlaunch.txt"
