#!/usr/bin/env bash
# On the GPU machine (issue 17): bench/launchtrace.c, particles' kernels timed by their events
# at each point of a run, in AoS and SoA, interleaved and split, at 262,144 and 64,000, three
# processes each (does a launch timed early in a run say what the run's later launches take?).
# Writes $OUT/launchtrace.txt.
#   scripts/device/launchtrace.sh [PLATFORM]
set -uo pipefail
CARRY=.devcarry/rt
OUT=${OUT:-/tmp/out}
gcc -O2 -Wno-deprecated-declarations -Wno-unused-function -I$CARRY/include -o /tmp/launchtrace bench/launchtrace.c -L$CARRY/lib -lOpenCL -lm || exit 1
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,persistence_mode --format=csv,noheader 2>/dev/null
    for n in 262144 64000; do
        for o in interleaved split; do
            for r in 1 2 3; do /tmp/launchtrace $n ${ITERS:-1000} $o ${1:-NVIDIA}; done
        done
        /tmp/launchtrace $n 30 split ${1:-NVIDIA}
    done
} 2>&1 | tee "$OUT/launchtrace.txt"
