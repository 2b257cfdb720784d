#!/usr/bin/env bash
# On the GPU machine: scripts/policy-stress.sh (issue 17): one sample, one clayout cache, a
# shuffled sequence of run lengths at two sizes in turn, each run under auto, without clayout
# and under always, with auto's reasons per run. Needs the release library, headers and
# link-time loader in .devcarry/rt (no cargo). Defaults: NVIDIA, particles, the sizes
# (64,000 and 262,144 particles). LIB picks another library, REPS=K makes K passes on fresh
# caches with a table of medians (scripts/policy-stress.sh --reps). Writes $OUT/policy-stress.txt
# (TAG=name: $OUT/policy-stress-name.txt).
#   LIB=path REPS=K TAG=name scripts/device/policy-stress.sh [PLATFORM] [SAMPLE] [SIZES] [RUNS]
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}
platform=${1:-NVIDIA}
sample=${2:-particles}
sizes=${3:-64000 262144}
runs=${4:-1 100 2 30 1 1000 8 30}
export CARGO_TARGET_DIR=/tmp/ps-target
export CC="gcc -I$root/.devcarry/rt/include -L$root/.devcarry/rt/lib"
lib=$(readlink -f "${LIB:-.devcarry/rt/libclayout.so}")
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    scripts/policy-stress.sh --platform "$platform" --lib "$lib" --sample "$sample" --sizes "$sizes" \
        --runs "$runs" --details ${REPS:+--reps "$REPS"}
    echo "exit $?"
} 2>&1 | tee "$OUT/policy-stress${TAG:+-$TAG}.txt"
