#!/usr/bin/env bash
# On the GPU machine (issue 17, item 2): what the cost model's timing of launches costs, waiting
# for the queue around a few launches (the default) or reading their events' profiling
# information later (CLAYOUT_PROFILE=1, which has every launch ask its queue for profiling).
# A. bench/profq.c: a burst of small launches on a queue without and with profiling, with and
#    without an event asked for each launch; no clayout.
# B. blackscholes at its large size, one launch (kernel_ms, the 2 % target's hardest case):
#    without clayout, under auto, under auto with CLAYOUT_PROFILE=1, under never; seven rounds
#    after priming runs.
# C. particles at 262,144 with 1000 iterations, a run bound by launch overhead: without clayout,
#    under auto, auto with CLAYOUT_PROFILE=1, CLAYOUT_REWRITE=0 and CLAYOUT_DISABLE=1.
# D. The clocks against each other: each sample's first run at its large size with 3 launches
#    and an empty cache, under CLAYOUT_POLICY=never with CLAYOUT_BUILD_AFTER=wait, the kernel
#    times measured (measured_ms in the statistics) by waiting and by profiling.
# Needs the release library, headers and link-time loader in .devcarry/rt. Writes
# $OUT/asynctiming.txt.   scripts/device/asynctiming.sh [PLATFORM] [PARTS]
set -uo pipefail
parts=${2:-A B C D}
S=/tmp/at-samples
. scripts/device/samples-env.sh
$CC -O2 -o /tmp/profq bench/profq.c -lOpenCL || exit 1
export SAMPLE_PLATFORM=$platform
# kernel_ms of sample $s with arguments $args, under the environment given.
run() { (cd samples/$s && env "$@" $S/$s/$s $args 2>/dev/null | grep -E "^kernel_ms" | cut -d' ' -f2); }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    if [[ " $parts " == *" A "* ]]; then
        echo "== A: profq (no clayout)"
        /tmp/profq "$platform" 65536 1000 3
    fi
    if [[ " $parts " == *" B "* ]]; then
        echo "== B: blackscholes -n 33554432 -i 1, kernel_ms"
        s=blackscholes args="-n 33554432 -i 1"
        on() { run CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=/tmp/at-cache-$s LD_PRELOAD=$lib "$@"; }
        for prime in 1 2; do on X=1 >/dev/null; on CLAYOUT_PROFILE=1 >/dev/null; done
        for rep in 1 2 3 4 5 6 7; do
            echo "none $(run X=1) auto $(on X=1) auto-profiled $(on CLAYOUT_PROFILE=1) never $(on CLAYOUT_POLICY=never)"
        done
    fi
    if [[ " $parts " == *" C "* ]]; then
        echo "== C: particles -n 262144 -i 1000, kernel_ms"
        s=particles args="-n 262144 -i 1000"
        on() { run CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=/tmp/at-cache-$s LD_PRELOAD=$lib "$@"; }
        for prime in 1 2 3; do on X=1 >/dev/null; done
        for rep in 1 2 3; do
            echo "none $(run X=1) auto $(on X=1) auto-profiled $(on CLAYOUT_PROFILE=1) norewrite $(on CLAYOUT_REWRITE=0) disable $(run CLAYOUT_DISABLE=1 LD_PRELOAD=$lib)"
        done
    fi
    if [[ " $parts " == *" D "* ]]; then
        echo "== D: measured_ms per form, waiting against profiling (fresh cache, never, 3 launches)"
        for s in blackscholes lbm particles spmv-ell; do
            for p in 0 1; do
                rm -rf /tmp/at-d; args="$(large $s) -i 3"
                run CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=/tmp/at-d CLAYOUT_POLICY=never CLAYOUT_BUILD_AFTER=wait \
                    CLAYOUT_PROFILE=$p CLAYOUT_STATS=/tmp/at-d.json LD_PRELOAD=$lib >/dev/null
                python3 -c "
import json; k = json.load(open('/tmp/at-d.json'))['policy']['kernels']
print('$s profile=$p', {n: v.get('measured_ms') for n, v in k.items()})"
            done
        done
    fi
} 2>&1 | tee "$OUT/asynctiming.txt"
