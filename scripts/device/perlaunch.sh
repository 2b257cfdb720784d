#!/usr/bin/env bash
# On the GPU machine: what clayout adds to each launch where launches are short (issue 17).
# Part 1: bench/firstlaunch.c's loop (FIRSTLAUNCH_LOOP launches of blackscholes' kernel over N
# options, clFinish every 64; wall time per launch): without clayout, without clayout asking
# for an event per launch, and under clayout with CLAYOUT_DISABLE=1, CLAYOUT_REWRITE=0 and each
# policy (on a cache primed by a run of each). Part 2: particles at 262,144 and 1000
# iterations, kernel_ms. REPS rounds each, interleaved. LIBS: libraries to compare (default the
# carried one). Writes $OUT/perlaunch.txt.
#   LIBS=".devcarry/rt/libclayout.so .devcarry/rt/old.so" REPS=5 scripts/device/perlaunch.sh [PLATFORM]
set -uo pipefail
S=/tmp/pl-samples
. scripts/device/samples-env.sh
$CC -O2 -Wno-deprecated-declarations -Wno-unused-function -o /tmp/firstlaunch bench/firstlaunch.c -lOpenCL -lm || exit 1
libs=${LIBS:-.devcarry/rt/libclayout.so}
A=$root/samples/blackscholes/blackscholes.dl
N=${N:-4096}
LOOP=${LOOP:-30000}
export SAMPLE_PLATFORM=$platform CLAYOUT_BUILD_AFTER=wait
# Each measure takes the environment of its run (annotations are its own).
loop() { env CLAYOUT_ANNOTATIONS=$A "$@" FIRSTLAUNCH_LOOP=$LOOP /tmp/firstlaunch - $N 2>/dev/null | awk '/^loop/ {print $2}'; }
parts() {
    (cd samples/particles && env CLAYOUT_ANNOTATIONS=particles.dl "$@" $S/particles/particles -n 262144 -i ${ITERS:-1000} \
        --platform $platform 2>/dev/null | awk '/^kernel_ms/ {print $2}')
}
# REPS lines of measure $1: the program without clayout, then per library the DL runtime alone
# and each policy; part 1 (loop) also without clayout asking an event per launch and under
# CLAYOUT_DISABLE=1.
rounds() {
    local m=$1
    for r in $(seq ${REPS:-3}); do
        line="none $($m X=1)"
        [ $m = loop ] && line="$line none+event $(loop FIRSTLAUNCH_EVENT=1)"
        for l in $libs; do
            L=$(readlink -f $l); b=$(basename $l)
            line="$line | $b"
            [ $m = loop ] && line="$line disable $(loop LD_PRELOAD=$L CLAYOUT_DISABLE=1)"
            line="$line rewrite0 $($m LD_PRELOAD=$L CLAYOUT_REWRITE=0)"
            for p in auto always never; do
                line="$line $p $($m LD_PRELOAD=$L CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=/tmp/pl-cache-$p-$b)"
            done
        done
        echo "$line"
    done
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for l in $libs; do
        for p in auto always never; do
            c=/tmp/pl-cache-$p-$(basename $l)
            for w in 1 2; do
                loop LD_PRELOAD=$(readlink -f $l) CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=$c >/dev/null
                parts LD_PRELOAD=$(readlink -f $l) CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=$c >/dev/null
            done
        done
    done
    echo "== part 1: us per launch, $LOOP launches over $N options"
    rounds loop
    echo "== part 2: particles -n 262144 -i ${ITERS:-1000}, kernel_ms"
    rounds parts
    if command -v perf >/dev/null && [ -n "${PERF:-}" ]; then
        L=$(readlink -f ${libs%% *})
        echo "== perf: auto, part 1's loop"
        LD_PRELOAD=$L CLAYOUT_ANNOTATIONS=$A CLAYOUT_CACHE_DIR=/tmp/pl-cache-auto-$(basename ${libs%% *}) FIRSTLAUNCH_LOOP=$LOOP \
            perf record -F 10000 -e cpu-clock -g -o /tmp/pl.perf /tmp/firstlaunch - $N >/dev/null 2>&1
        perf report -i /tmp/pl.perf --no-children --sort dso,sym -g none 2>/dev/null | grep -v "^#" | head -40
    else
        echo "(perf: $(command -v perf || echo none))"
    fi
} 2>&1 | tee "$OUT/perlaunch.txt"
