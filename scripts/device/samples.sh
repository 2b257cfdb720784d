#!/usr/bin/env bash
# On the GPU machine (the device tool): the samples on the NVIDIA platform. First a small
# sanity pass of the transparent mode with clayout's log, then scripts/run-samples.sh at the
# large size with the arguments given (e.g. --iters "1 2 4 8 30 100" --with-transparent
# --samples "lbm particles"). Needs a release libclayout.so, the OpenCL headers and a
# link-time libOpenCL.so carried in $CARRY. Writes $OUT/NAME.json, $OUT/NAME.log and
# $OUT/NAME-runs.tgz (every run's output and statistics). SANITY=0 skips the sanity pass.
#   scripts/device/samples.sh NAME [run-samples arguments...]
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
    make -s -C samples OUT=/tmp/sanity >/dev/null 2>&1 || exit 1
    [ "${SANITY:-1}" = 1 ] && echo "== sanity: small sizes, transparent mode, NVIDIA"
    [ "${SANITY:-1}" = 1 ] && for s in blackscholes lbm particles spmv-ell; do
        for extra in "" "--soa"; do
            [ -n "$extra" ] && [ $s != spmv-ell ] && continue
            a=$(/tmp/sanity/$s/$s -i 2 --platform NVIDIA $extra | grep checksum)
            b=$(CLAYOUT_LOG=info CLAYOUT_STATS=1 CLAYOUT_ANNOTATIONS=samples/$s/$s.dl LD_PRELOAD=$lib /tmp/sanity/$s/$s -i 2 --platform NVIDIA $extra 2>/tmp/sanity/err | grep checksum)
            [ "$a" = "$b" ] && echo "$s $extra SAME $a" || echo "$s $extra DIFFERENT: $a / $b"
            grep -E "clayout: (warn|error|info)|rewritten|launches|conversions|fallbacks" /tmp/sanity/err | head -12
        done
    done
    echo "== run-samples $*"
    scripts/run-samples.sh --platform NVIDIA --size large --lib "$lib" --json "$OUT/$name.json" "$@"
    echo "exit $?"
} 2>&1 | tee "$OUT/$name.log"
tar -czf "$OUT/$name-runs.tgz" -C "$CARGO_TARGET_DIR" samples-runs 2>/dev/null
