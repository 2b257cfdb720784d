#!/usr/bin/env bash
# On the GPU machine: each sample at its large size under CLAYOUT_POLICY=always at fixed tiles,
# against its hand-written SoA peer (issue 19: is some tile's ASTA layout as fast as discrete
# arrays?). kernel_ms and total_ms, three runs each, after one unmeasured run per tile that
# fills clayout's cache.
#   SAMPLES="blackscholes" TILES="32 64 128 256 512 1024" ITERS="30 100" scripts/device/tile-sweep.sh [PLATFORM]
#   (writes $OUT/tile-sweep.txt)
set -uo pipefail
S=/tmp/ts-samples
. scripts/device/samples-env.sh
run() {
    (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=/tmp/ts-cache "$@" \
        $S/$s/$s $(large $s) $extra --platform $platform -i $i 2>/dev/null)
}
three() {
    for r in 1 2 3; do run "$@" | awk '/^(kernel|total)_ms/ {printf "%s ", $2}'; echo -n "| "; done
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for spec in ${SAMPLES:-blackscholes}; do
        s=${spec%%:*}; extra=""; [[ $spec == *:* ]] && extra=${spec#*:}
        for i in ${ITERS:-30 100}; do
            echo "== $s $extra -i $i (kernel_ms total_ms, three runs)"
            base=$extra; extra="--soa"; echo "soa-peer: $(three env)"; extra=$base
            echo "none: $(three env)"
            for t in ${TILES:-32 64 128 256 512 1024}; do
                run env LD_PRELOAD=$lib CLAYOUT_POLICY=always CLAYOUT_TILE=$t >/dev/null
                echo "always tile $t: $(three env LD_PRELOAD=$lib CLAYOUT_POLICY=always CLAYOUT_TILE=$t) $(run env LD_PRELOAD=$lib CLAYOUT_POLICY=always CLAYOUT_TILE=$t | grep -m1 checksum)"
            done
        done
    done
} 2>&1 | tee "$OUT/tile-sweep.txt"
