#!/usr/bin/env bash
# On the GPU machine: what a read of a buffer clayout keeps in ASTA costs (docs/results.md,
# "Conversions beside transfers"). bench/readback.c over N bodies (default 2^25, 640 MiB),
# into pinned and into malloc'd memory: without clayout, under CLAYOUT_POLICY=always with
# CLAYOUT_CHUNKED_READS=0 (the whole buffer converted back, then read) and with the default
# (auto: chunked into pinned memory only), three processes each, in turn. Then bench/overlap.c
# (no clayout): a kernel beside a transfer split in chunks. Writes $OUT/readback.txt.
#   [HOSTS="pinned malloc"] [RUNS=3] scripts/device/readback.sh [PLATFORM]
set -uo pipefail
S=/tmp/cl-samples
. scripts/device/samples-env.sh
$CC -O2 -Wno-deprecated-declarations -o /tmp/readback bench/readback.c -lOpenCL -lm 2>/dev/null || exit 1
$CC -O2 -Wno-deprecated-declarations -o /tmp/overlap bench/overlap.c -lOpenCL -lm 2>/dev/null || exit 1
N=${N:-33554432}
export CLAYOUT_CACHE_DIR=/tmp/cl-cache-readback
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    # Fills clayout's cache, so that no run below builds.
    CLAYOUT_POLICY=always LD_PRELOAD=$lib /tmp/readback $platform $N 2 >/dev/null 2>&1
    for host in ${HOSTS:-pinned malloc}; do
        m=; [ $host = malloc ] && m=1
        for r in $(seq ${RUNS:-3}); do
            echo "none $(READBACK_MALLOC=$m /tmp/readback $platform $N)"
            echo "whole $(READBACK_MALLOC=$m CLAYOUT_POLICY=always CLAYOUT_CHUNKED_READS=0 LD_PRELOAD=$lib /tmp/readback $platform $N)"
            echo "auto $(READBACK_MALLOC=$m CLAYOUT_POLICY=always CLAYOUT_STATS=/tmp/rb.json LD_PRELOAD=$lib /tmp/readback $platform $N) $(grep -o '"chunked_reads": *[0-9]*' /tmp/rb.json)"
        done
    done
    echo "== overlap (no clayout), pinned"
    OVERLAP_PINNED=1 /tmp/overlap $platform $((N * 20)) 7
} 2>&1 | tee "$OUT/readback.txt"
