#!/usr/bin/env bash
# On the GPU machine (issue 19, items 1-3): what lbm pays for its conversions, and what the
# alternatives to them would cost.
# 1. lbm at its large size, 30 and 100 iterations: the hand-written SoA peer, the program without
#    clayout, and under clayout with its side file (whose destination grid clayout proves
#    overwritten) and with a side file that says `out` itself, under always and under auto (one
#    clayout cache per side file, primed by two runs of 100 iterations under
#    CLAYOUT_BUILD_AFTER=wait). Each: checksum and kernel_ms of three runs, then one more run's
#    statistics with CLAYOUT_PROFILE=1: conversions to ASTA and back and their device time.
# 2. bench/mixedlayout.c at the same size, tiles 32 and 64: per-launch device time of lbm's
#    kernel as written, in ASTA, reading its source in AoS and writing ASTA (per-argument
#    layouts), reading ASTA and writing AoS (a conversion back fused into the last launch),
#    and a copy of one grid.
# PARTS="1 2" (the default) picks the parts.
#   scripts/device/overwrite.sh [PLATFORM]   (writes $OUT/overwrite.txt; SMALL=1: small sizes)
# Carry: .devcarry/rt with include/, lib/libOpenCL.so and a release libclayout.so.
set -uo pipefail
S=/tmp/ow-samples
. scripts/device/samples-env.sh
dims=(192 192 128)
[[ ${SMALL:-0} = 1 ]] && dims=(24 24 16)
size=(-x ${dims[0]} -y ${dims[1]} -z ${dims[2]})
out_dl=/tmp/ow-lbm-out.dl
echo "lbm_stream_collide: AoS: src[nx * ny * nz], out dst[nx * ny * nz]" >$out_dl
# Output of lbm with $i iterations (and the arguments in $extra) under the environment given.
extra=""
run() {
    (cd samples/lbm && SAMPLE_PLATFORM=$platform "$@" $S/lbm/lbm "${size[@]}" --platform $platform -i $i $extra 2>/dev/null)
}
# "checksum [kernel_ms x3]" of `run` under the environment given.
three() {
    local c="" t="" out
    for r in 1 2 3; do
        out=$(run "$@")
        c=$(echo "$out" | grep -E "^checksum" | awk '{print $2}')
        t="$t $(echo "$out" | grep -E "^kernel_ms" | awk '{print $2}')"
    done
    echo "$c [$t ]"
}
stats() {
    python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))['marshal']
print('to_device', m['to_device_layout'], 'to_host', m['to_host_layout'], 'device_ms %.3f' % (m['device_ns'] / 1e6))" "$1"
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "$platform"
    parts=${PARTS:-1 2}
    [[ " $parts " == *" 1 "* ]] && for i in 30 100; do
        echo "== lbm ${size[*]} -i $i"
        echo "soa: $(extra=--soa three env)"
        echo "none: $(three env)"
        for side in lbm.dl $out_dl; do
            cache=/tmp/ow-cache-$(basename $side)
            if [[ ! -d $cache ]]; then
                for p in 1 2; do
                    (i=100 run env LD_PRELOAD=$lib CLAYOUT_ANNOTATIONS=$side CLAYOUT_CACHE_DIR=$cache CLAYOUT_BUILD_AFTER=wait >/dev/null)
                done
            fi
            for policy in always auto; do
                shim=(env LD_PRELOAD=$lib CLAYOUT_ANNOTATIONS=$side CLAYOUT_CACHE_DIR=$cache CLAYOUT_POLICY=$policy)
                echo "$side $policy: $(three "${shim[@]}")"
                run "${shim[@]}" CLAYOUT_PROFILE=1 CLAYOUT_STATS=/tmp/ow-stats.json >/dev/null
                echo "    profiled run: $(stats /tmp/ow-stats.json)"
            done
        done
    done
    if [[ " $parts " == *" 2 "* ]]; then
        $CC -O2 -o /tmp/ow-mixed bench/mixedlayout.c -lOpenCL -lm || exit 1
        for t in 32 64; do
            /tmp/ow-mixed $platform samples/lbm "${dims[@]}" 21 $t
        done
    fi
} 2>&1 | tee "$OUT/overwrite.txt"
