#!/usr/bin/env bash
# On the GPU machine (issue 17, "whatever lengths the earlier runs had"): a sample at its large
# size run again and again at the same short length under auto, on a fresh clayout cache and the
# default settings; kernel_ms of each run, with the program without clayout and under always
# for reference.
#   SAMPLES="blackscholes particles" ITERS=30 RUNS=6 scripts/device/short-runs.sh [PLATFORM]
#   (writes $OUT/short-runs.txt; STATS=1 adds the launches of each form in each auto run)
set -uo pipefail
S=/tmp/sr-samples
. scripts/device/samples-env.sh
run() {
    (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache "$@" \
        $S/$s/$s $(large $s) --platform $platform -i ${ITERS:-30} 2>/dev/null | grep -E "^kernel_ms" | awk '{print $2}')
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for s in ${SAMPLES:-blackscholes particles}; do
        cache=/tmp/sr-cache-$s; rm -rf $cache
        echo "$s -i ${ITERS:-30}: none [$(run env; run env)] always [$(run env LD_PRELOAD=$lib CLAYOUT_POLICY=always CLAYOUT_CACHE_DIR=/tmp/sr-always-$s; run env LD_PRELOAD=$lib CLAYOUT_POLICY=always CLAYOUT_CACHE_DIR=/tmp/sr-always-$s)]"
        echo "$s auto, run after run: $(for r in $(seq 1 ${RUNS:-6}); do run env LD_PRELOAD=$lib CLAYOUT_STATS=/tmp/sr-stats-$r.json; done | tr '\n' ' ')"
        [[ ${STATS:-0} = 1 ]] && for r in $(seq 1 ${RUNS:-6}); do
            python3 -c "
import json, sys
k = json.load(open(sys.argv[1]))['policy']['kernels']
print('    run', sys.argv[2] + ':', '; '.join(n + ' ' + ', '.join(f + ' ' + str(c) for f, c in v['launches'].items()) for n, v in sorted(k.items())))" /tmp/sr-stats-$r.json $r
        done
    done
} 2>&1 | tee "$OUT/short-runs.txt"
