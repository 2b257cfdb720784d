#!/usr/bin/env bash
# On the GPU machine (the device tool), issue 17: first runs and short runs. Part 1,
# scripts/startup.sh --cold: clayout's added wall time with the driver's kernel cache off and
# clayout's cache empty (target: at most 150 ms a sample), then warm. Part 2, the same with the
# driver cache warm (the "empty cache" column: target at most 50 ms over "without clayout").
# Part 3, scripts/policy-stress.sh on blackscholes: auto against no clayout and `always` over a
# fixed sequence of run lengths and sizes (targets: "auto vs none" at most +2 % on every row;
# from the second row on, at 30 launches or more, at least 90 % of always' gain kept). Part 4,
# a single launch's kernel_ms under auto, never and CLAYOUT_REWRITE=0 against none. Needs a
# release libclayout.so, the OpenCL headers and a link-time libOpenCL.so in $CARRY. Writes
# $OUT/issue17.txt. Takes about 5 minutes on an H100.
#   scripts/device/issue17.sh [PLATFORM]
set -uo pipefail
platform=${1:-NVIDIA}
CARRY=${CARRY:-.devcarry/rt}
OUT=${OUT:-/tmp/out}
root=$(pwd)
export CC="gcc -I$root/$CARRY/include -L$root/$CARRY/lib"
export CARGO_TARGET_DIR=/tmp/clayout-target
lib=$(readlink -f "$CARRY/libclayout.so")
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
    echo "== 1: cold start, driver cache off, clayout cache empty (added ms: target <= 150)"
    timeout 150 scripts/startup.sh --cold --reps 2 --platform "$platform" --lib "$lib"
    echo "== 2: driver cache warm (empty cache - without clayout: target <= 50)"
    timeout 80 scripts/startup.sh --reps 2 --platform "$platform" --lib "$lib"
    echo "== 3: policy stress, blackscholes"
    timeout 130 scripts/policy-stress.sh --platform "$platform" --lib "$lib" --sample blackscholes --reps 2
    echo "== 4: one launch, blackscholes large, kernel_ms (auto after 4 such runs filled its cache; target: within 2 % of none)"
    b=$CARGO_TARGET_DIR/samples/blackscholes/blackscholes
    c=$(mktemp -d)
    A="CLAYOUT_ANNOTATIONS=samples/blackscholes/blackscholes.dl LD_PRELOAD=$lib CLAYOUT_CACHE_DIR=$c SAMPLE_PLATFORM=$platform"
    k() { env "$@" "$b" -i 1 -n 33554432 2>/dev/null | awk '/^kernel_ms:/ {print $2}'; }
    for warm in 1 2 3 4; do k $A >/dev/null; done
    for rep in 1 2 3; do
        echo "none $(k SAMPLE_PLATFORM=$platform) auto $(k $A) never $(k $A CLAYOUT_POLICY=never) norewrite $(k $A CLAYOUT_REWRITE=0)"
    done
    rm -rf "$c"
    echo "== one auto run of 30 launches at the large size after the sequence's kind of history, debug log"
    c=$(mktemp -d)
    for n in 1 100; do
        CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=samples/blackscholes/blackscholes.dl LD_PRELOAD=$lib \
            SAMPLE_PLATFORM=$platform "$CARGO_TARGET_DIR/samples/blackscholes/blackscholes" -i $n -n 33554432 >/dev/null 2>&1
    done
    CLAYOUT_LOG=debug CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=samples/blackscholes/blackscholes.dl LD_PRELOAD=$lib \
        SAMPLE_PLATFORM=$platform "$CARGO_TARGET_DIR/samples/blackscholes/blackscholes" -i 30 -n 33554432 2>&1 |
        grep -E "runs |total_ms|kernel_ms|tuned" | head -20
    rm -rf "$c"
} 2>&1 | tee "$OUT/issue17.txt"
