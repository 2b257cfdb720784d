#!/usr/bin/env bash
# On the GPU machine: one sample at its large size, after the priming runs of buildload.sh part 4
# (two runs of 100 launches under CLAYOUT_BUILD_AFTER=wait), then runs of the given lengths under
# auto, each with its kernel_ms and, per kernel, the launches in each form and the reasons
# (CLAYOUT_STATS). For each library in LIBS (default: the carried build). Writes
# $OUT/seqstats.txt.
#   LIBS="a.so b.so" scripts/device/seqstats.sh [PLATFORM] [SAMPLE] [LENGTHS]
set -uo pipefail
S=/tmp/sq-samples
. scripts/device/samples-env.sh
s=${2:-lbm}
lengths=${3:-1 1 1 30 30 30}
{
    for l in ${LIBS:-.devcarry/rt/libclayout.so}; do
        l=$(readlink -f $l)
        cache=/tmp/sq-cache
        rm -rf $cache
        echo "== $l: $s $(large $s), runs of $lengths after two of 100 (BUILD_AFTER=wait)"
        for i in 100 100; do
            (cd samples/$s && CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache CLAYOUT_BUILD_AFTER=wait LD_PRELOAD=$l \
                $S/$s/$s $(large $s) --platform $platform -i $i >/dev/null 2>&1)
        done
        for i in $lengths; do
            (cd samples/$s && CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache CLAYOUT_STATS=/tmp/sq.json LD_PRELOAD=$l \
                $S/$s/$s $(large $s) --platform $platform -i $i 2>/dev/null | grep kernel_ms | sed "s/^/-i $i /")
            python3 -c "
import json
d = json.load(open('/tmp/sq.json'))
for k, v in d.get('policy', {}).get('kernels', {}).items():
    print('   ', k, v.get('launches'), '|', ' / '.join(v.get('reasons', [])))
"
        done
    done
} 2>&1 | tee "$OUT/seqstats.txt"
