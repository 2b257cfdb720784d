#!/usr/bin/env bash
# On the GPU machine (issue 19, item 5): the copies' tile chosen from what each program's own
# kernels measured (docs/cost-model.md, "The tile, from the program's own kernels").
# For each sample at its large size:
# 1. the climb: CLIMB runs (default 9) of 30 iterations under auto with CLAYOUT_BUILD_AFTER=wait
#    (copies for the next tile built ahead at once) on a fresh cache; the tile each run used
#    (policy.tiles in its statistics) and its kernel_ms;
# 2. kernel_ms at 30 and 100 iterations, three runs each: the hand-written SoA peer without
#    clayout, the program without clayout, auto on the climbed cache, and auto with
#    CLAYOUT_TILE=32 on a cache primed the same way (the tile every kernel had before).
#   SAMPLES="particles spmv-ell spmv-ell:--soa lbm blackscholes" scripts/device/tiles.sh [PLATFORM]
#   (writes $OUT/tiles.txt)
set -uo pipefail
S=/tmp/tl-samples
. scripts/device/samples-env.sh
# Output of sample $s ($extra: its host-layout flag) at its large size with $i iterations,
# clayout's cache in $cache, under the environment given.
run() {
    (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache "$@" \
        $S/$s/$s $(large $s) $extra --platform $platform -i $i 2>/dev/null)
}
ms() { grep -E "^kernel_ms" | awk '{print $2}'; }
three() { for r in 1 2 3; do run "$@" | ms; done | tr '\n' ' '; }
tile_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['policy']['tiles'])" "$1" 2>/dev/null; }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for spec in ${SAMPLES:-particles spmv-ell spmv-ell:--soa lbm blackscholes}; do
        s=${spec%%:*}; extra=""; [[ $spec == *:* ]] && extra=${spec#*:}
        echo "== $s $extra: the climb (30 iterations, auto, CLAYOUT_BUILD_AFTER=wait)"
        cache=/tmp/tl-cache-$s$extra; rm -rf $cache
        i=30
        for r in $(seq 1 ${CLIMB:-9}); do
            out=$(run env LD_PRELOAD=$lib CLAYOUT_BUILD_AFTER=wait CLAYOUT_STATS=/tmp/tl-stats.json)
            echo "run $r: $(echo "$out" | grep -m1 checksum) kernel_ms $(echo "$out" | ms) tiles $(tile_of /tmp/tl-stats.json)"
        done
        fixed=/tmp/tl-fixed-$s$extra; rm -rf $fixed
        for r in 1 2 3; do cache=$fixed run env LD_PRELOAD=$lib CLAYOUT_BUILD_AFTER=wait CLAYOUT_TILE=32 >/dev/null; done
        for i in 30 100; do
            base_flag=$extra; extra="--soa"; p=$(three env); extra=$base_flag
            a=$(three env)
            m=$(three env LD_PRELOAD=$lib)
            f=$(cache=$fixed three env LD_PRELOAD=$lib CLAYOUT_TILE=32)
            echo "$s $extra -i $i: soa-peer [$p] none [$a] auto-measured-tile [$m] auto-tile-32 [$f]"
        done
        run env LD_PRELOAD=$lib CLAYOUT_STATS=/tmp/tl-stats.json >/dev/null
        echo "tiles after: $(tile_of /tmp/tl-stats.json)"
    done
} 2>&1 | tee "$OUT/tiles.txt"
