#!/usr/bin/env bash
# On the GPU machine: where a one-launch run of a sample at a small size spends clayout's fixed
# costs: kernel_ms and total_ms, five runs each, without clayout and with more and more of
# clayout switched on, on a cache that two 30-launch runs under auto filled; then one run of
# never and auto with CLAYOUT_LOG=debug, after two rounds of runs timing each OpenCL call
# (bench/calltime.c) without clayout and under never, auto and always. Writes $OUT/split-small.txt.
#   scripts/device/split-small.sh [PLATFORM] [SAMPLE] [SIZE ARGS]
set -uo pipefail
S=/tmp/ss-samples
. scripts/device/samples-env.sh
sample=${2:-particles}
size=${3:--n 64000}
bin=$S/$sample/$sample
A=$root/samples/$sample/$sample.dl
export CLAYOUT_CACHE_DIR=/tmp/ss-cache
rm -rf $CLAYOUT_CACHE_DIR
one() { (cd samples/$sample && env "${@:1:$#-2}" $bin $size "${@: -2}" --platform $platform 2>/dev/null | awk '/^kernel_ms/ {k=$2} /^total_ms/ {t=$2} END {printf "%s/%s", k, t}'); }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for w in 1 2; do one CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -i 30 >/dev/null; done
    echo "== $sample $size -i 1, kernel_ms/total_ms: none disable norewrite never auto always"
    for r in 1 2 3 4 5; do
        echo "$(one X=1 -i 1) $(one CLAYOUT_DISABLE=1 LD_PRELOAD=$lib -i 1) $(one CLAYOUT_REWRITE=0 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -i 1)" \
            "$(one CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -i 1) $(one CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -i 1)" \
            "$(one CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -i 1)"
    done
    $CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
    for r in 1 2; do
        echo "== calltime, without clayout"
        (cd samples/$sample && LD_PRELOAD=/tmp/calltime.so $bin $size -i 1 --platform $platform 2>&1 | grep -E "total_ms|calltime")
        for p in never auto always; do
            echo "== calltime, $p"
            (cd samples/$sample && CLAYOUT_POLICY=$p CLAYOUT_ANNOTATIONS=$A LD_PRELOAD="/tmp/calltime.so $lib" $bin $size -i 1 --platform $platform 2>&1 | grep -E "total_ms|calltime")
        done
    done
    for p in never auto; do
        echo "== $p, CLAYOUT_LOG=debug"
        (cd samples/$sample && CLAYOUT_LOG=debug CLAYOUT_POLICY=$p CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin $size -i 1 --platform $platform 2>&1 | tail -40)
    done
} 2>&1 | tee "$OUT/split-small.txt"
