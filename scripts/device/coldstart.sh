#!/usr/bin/env bash
# On the GPU machine: what a first run costs (issue 17). scripts/startup.sh with the driver's
# kernel cache on and off, then one run per sample with both caches empty and clayout's debug
# log, each line stamped with the seconds since the program started, to show what sits on the
# application's path. Needs the release library, headers and loader in .devcarry/rt.
#   scripts/device/coldstart.sh [PLATFORM] [REPS]   (writes $OUT/coldstart.txt)
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}
platform=${1:-NVIDIA}
reps=${2:-3}
export CARGO_TARGET_DIR=/tmp/cs-target
lib=$(readlink -f .devcarry/rt/libclayout.so)
CC="gcc -I$root/.devcarry/rt/include -L$root/.devcarry/rt/lib"
make -s -C samples OUT=$CARGO_TARGET_DIR/samples CC="$CC" >/dev/null || exit 1
stamp() { perl -MTime::HiRes=time -e '$t0=time; while(<STDIN>){printf "%7.3f %s", time-$t0, $_}'; }
{
    echo "== driver cache on"
    scripts/startup.sh --platform "$platform" --lib "$lib" --reps "$reps"
    echo "== driver cache off"
    scripts/startup.sh --platform "$platform" --lib "$lib" --reps "$reps" --driver-cache off
    for s in blackscholes lbm particles spmv-ell; do
        echo "== $s: both caches empty, debug log"
        rm -rf /tmp/cs-cache
        (CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0 SAMPLE_PLATFORM=$platform LD_PRELOAD=$lib \
            CLAYOUT_ANNOTATIONS=samples/$s/$s.dl CLAYOUT_CACHE_DIR=/tmp/cs-cache CLAYOUT_LOG=debug \
            CLAYOUT_STATS=1 $CARGO_TARGET_DIR/samples/$s/$s -i 1 2>&1; echo "exit $?") | stamp |
            grep -v 'clayout: trace' | cut -c1-220 | head -80
    done
} 2>&1 | tee "$OUT/coldstart.txt"
