#!/usr/bin/env bash
# On the GPU machine (the device tool): the corpus (tests/corpus/) on the NVIDIA platform through
# scripts/corpus.sh with the arguments given (e.g. --scale 256 --only "nbody_tiled lbm_d2q9_flat").
# Needs a release libclayout.so, the OpenCL headers and a link-time libOpenCL.so carried in
# $CARRY (as scripts/device/samples.sh). Writes $OUT/NAME.json and $OUT/NAME.log.
#   scripts/device/corpus.sh NAME [corpus.sh arguments...]
set -uo pipefail
name=$1; shift
CARRY=${CARRY:-.devcarry/rt}
OUT=${OUT:-/tmp/out}
root=$(pwd)
export CC="gcc -I$root/$CARRY/include -L$root/$CARRY/lib"
lib=$(readlink -f "$CARRY/libclayout.so")
export CARGO_TARGET_DIR=/tmp/clayout-target
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    scripts/corpus.sh --platform NVIDIA --lib "$lib" --json "$OUT/$name.json" "$@"
    echo "exit $?"
} 2>&1 | tee "$OUT/$name.log"
