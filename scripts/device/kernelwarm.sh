#!/usr/bin/env bash
# On the GPU machine: what a first launch costs a kernel built after the application's own
# launches (bench/kernelwarm.c, five processes per mode, at 512,000 and 33,554,432 floats), and
# where a one-launch run of particles at 64,000 spends its fixed costs under clayout: total_ms,
# five runs each, without clayout and with more and more of clayout switched on, on a cache that
# two 30-launch runs under auto filled. Writes $OUT/kernelwarm.txt.
#   scripts/device/kernelwarm.sh [PLATFORM]
set -uo pipefail
S=/tmp/kw-samples
. scripts/device/samples-env.sh
$CC -O2 -Wno-deprecated-declarations -o /tmp/kernelwarm bench/kernelwarm.c -lOpenCL -lm 2>/dev/null || exit 1
export SAMPLE_PLATFORM=$platform
bin=$S/particles/particles
A=$root/samples/particles/particles.dl
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for n in 512000 33554432; do
        echo "== kernelwarm at $n floats: MODE app k1 k1again k2 | enqueue calls | busy"
        for r in 1 2 3 4 5; do for m in - e s q; do /tmp/kernelwarm $m $n; done; done
    done
    echo "== particles -n 64000 -i 1, total_ms: none disable norewrite never auto always"
    export CLAYOUT_CACHE_DIR=/tmp/kw-cache
    rm -rf $CLAYOUT_CACHE_DIR
    (cd samples/particles && CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -n 64000 -i 30 --platform $platform >/dev/null 2>&1)
    (cd samples/particles && CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -n 64000 -i 30 --platform $platform >/dev/null 2>&1)
    for r in 1 2 3 4 5; do
        one() { (cd samples/particles && env "$@" $bin -n 64000 -i 1 --platform $platform 2>/dev/null | awk '/^total_ms/ {print $2}'); }
        echo "$(one X=1) $(one CLAYOUT_DISABLE=1 LD_PRELOAD=$lib) $(one CLAYOUT_REWRITE=0 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib)" \
            "$(one CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) $(one CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib)" \
            "$(one CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib)"
    done
    echo "== the same, auto with its statistics"
    (cd samples/particles && CLAYOUT_STATS=/tmp/kw-stats.json CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -n 64000 -i 1 --platform $platform 2>&1 | grep -E "total_ms|kernel_ms")
    python3 -c "import json; d=json.load(open('/tmp/kw-stats.json')); print(json.dumps(d.get('policy',{}), indent=1)[:3000])" 2>/dev/null
} 2>&1 | tee "$OUT/kernelwarm.txt"
