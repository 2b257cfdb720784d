#!/usr/bin/env bash
# On the GPU machine (issue 17, item 2): what timing launches by their events (CLAYOUT_PROFILE=auto,
# the default) costs and saves, against timing them by draining the queue (CLAYOUT_PROFILE=0).
# A. bench/profq.c: a burst of small launches on a queue without and with profiling, no clayout.
# B. blackscholes at its large size, one launch (kernel_ms, the 2 % target's hardest case):
#    without clayout, under auto, under auto with CLAYOUT_PROFILE=0, under never; seven rounds
#    after two priming runs that fill clayout's cache.
# Needs the release library, headers and link-time loader in .devcarry/rt. Writes
# $OUT/asynctiming.txt.   scripts/device/asynctiming.sh [PLATFORM]
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}
platform=${1:-NVIDIA}
CC="gcc -I$root/.devcarry/rt/include -L$root/.devcarry/rt/lib"
lib=$(readlink -f .devcarry/rt/libclayout.so)
$CC -O2 -o /tmp/profq bench/profq.c -lOpenCL || exit 1
make -s -C samples OUT=/tmp/at-samples CC="$CC" >/dev/null || exit 1
bin=/tmp/at-samples/blackscholes/blackscholes
A=$root/samples/blackscholes/blackscholes.dl
export SAMPLE_PLATFORM=$platform CLAYOUT_CACHE_DIR=/tmp/at-cache
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    echo "== A: profq (no clayout)"
    /tmp/profq "$platform" 65536 1000 5
    /tmp/profq "$platform" 16777216 200 3
    echo "== B: blackscholes -n 33554432 -i 1, kernel_ms"
    run() { env "$@" $bin -i 1 -n 33554432 | grep kernel_ms | cut -d' ' -f2; }
    for p in auto 0; do
        for prime in 1 2; do CLAYOUT_PROFILE=$p CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -i 1 -n 33554432 >/dev/null; done
    done
    for rep in 1 2 3 4 5 6 7; do
        echo "none $(run X=1) auto $(run CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) auto-drain $(run CLAYOUT_PROFILE=0 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) never $(run CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib)"
    done
    echo "== auto's statistics, one run"
    CLAYOUT_STATS=1 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -i 1 -n 33554432 2>&1 | tail -25
} 2>&1 | tee "$OUT/asynctiming.txt"
