#!/usr/bin/env bash
# On the GPU machine (issue 19, item 3): fused conversions (docs/cost-model.md, "Fused
# conversions"). blackscholes and particles at their large size, 1, 30 and 100 iterations:
# without clayout, then under CLAYOUT_POLICY=always with CLAYOUT_FUSE=0 (conversion kernel, then
# the ASTA copy) and CLAYOUT_FUSE=1 (the first launch is the staged copy storing ASTA), on one
# clayout cache primed first (so that both find the same tile and copies). For each: the
# checksum (must be the same in all three), kernel_ms of three runs, and from one more run's
# statistics the tile, the conversions to ASTA and the fused ones; then, at debug level, why a
# launch fused or not.
#   TILE=32 scripts/device/fused.sh [PLATFORM]   (TILE optional: CLAYOUT_TILE for every run;
#   SMALL=1: small sizes, to check the script)   (writes $OUT/fused.txt)
# Carry: .devcarry/rt with include/, lib/libOpenCL.so and a release libclayout.so.
set -uo pipefail
S=/tmp/fu-samples
. scripts/device/samples-env.sh
tile=()
[[ -n ${TILE:-} ]] && tile=(CLAYOUT_TILE=$TILE)
# Output of sample $s at its large size with $i iterations, clayout's cache in $cache, under the
# environment given.
run() {
    (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache "$@" \
        $S/$s/$s $(large $s) --platform $platform -i $i 2>/dev/null)
}
ms() { grep -E "^kernel_ms" | awk '{print $2}'; }
sum() { grep -E "^checksum" | awk '{print $2}'; }
# "checksum [kernel_ms x3]" of `run` under the environment given.
three() {
    local c="" t=""
    for r in 1 2 3; do
        out=$(run "$@")
        c=$(echo "$out" | sum)
        t="$t $(echo "$out" | ms)"
    done
    echo "$c [$t ]"
}
counts() {
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); m = d['marshal']
print('tile', d['policy']['tiles'], 'to_device', m['to_device_layout'], 'to_host', m['to_host_layout'], 'fused', m.get('fused'))
" "$1" 2>/dev/null
}
always=(env LD_PRELOAD=$lib CLAYOUT_POLICY=always "${tile[@]}")
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for s in blackscholes particles; do
        cache=/tmp/fu-cache-$s
        rm -rf $cache
        # Primes clayout's cache (tile search, copies, conversion kernels) under always.
        i=1
        for f in 0 1; do run "${always[@]}" CLAYOUT_BUILD_AFTER=wait CLAYOUT_FUSE=$f >/dev/null; done
        for i in 1 30 100; do
            echo "$s -i $i: none $(three env)"
            echo "$s -i $i: always fuse=0 $(three "${always[@]}" CLAYOUT_FUSE=0)"
            echo "$s -i $i: always fuse=1 $(three "${always[@]}" CLAYOUT_FUSE=1)"
        done
        i=30
        for f in 0 1; do
            run "${always[@]}" CLAYOUT_FUSE=$f CLAYOUT_STATS=/tmp/fu-stats.json >/dev/null
            echo "$s -i 30 fuse=$f: $(counts /tmp/fu-stats.json)"
        done
        rm -f /tmp/fu-log.txt
        run "${always[@]}" CLAYOUT_FUSE=1 CLAYOUT_LOG=debug CLAYOUT_LOG_FILE=/tmp/fu-log.txt >/dev/null
        grep -E "fused|by the launch that uses it" /tmp/fu-log.txt | sort | uniq -c | head -8
        rm -f /tmp/fu-log.txt
    done
} 2>&1 | tee "$OUT/fused.txt"
