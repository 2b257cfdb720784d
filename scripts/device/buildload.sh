#!/usr/bin/env bash
# On the GPU machine (issue 17): what clayout's background work costs the application.
# 1. bench/buildload.c on each sample's rewritten copy (dumped by CLAYOUT_DUMP_DIR): a build from
#    source, its binary loaded back, the source again; in a first and a second process (driver
#    cache cold, then warm).
# 2. bench/buildload.c contend: 30 launches of a 0.3 ms kernel beside a binary load, a source
#    build and a GPU stream on another thread.
# 3. The samples at their large size, 1 and 30 iterations: without clayout, under auto with a
#    warm clayout cache, the same with CLAYOUT_BUILD_AFTER far in the future (nothing loaded
#    or built during the run), under never and under always; kernel_ms, three runs each.
# 4. The samples at their large size, a run's second and later runs: after two priming runs,
#    1, 30 and 100 iterations without clayout and under auto (three runs each), then under
#    always; nothing else runs between (a run under another policy may search tiles, and a new
#    tile means new copies for auto to learn).
# PARTS="1 2 3" (the default) picks the parts to run; SAMPLES (default all four) the samples
# of part 4.
#   scripts/device/buildload.sh [PLATFORM]   (writes $OUT/buildload.txt)
set -uo pipefail
S=/tmp/bl-samples
. scripts/device/samples-env.sh
$CC -O2 -o /tmp/bl bench/buildload.c -lOpenCL -lpthread || exit 1
# kernel_ms of sample $s at its large size with $i iterations, clayout's cache in $cache, under
# the environment given (e.g. `env LD_PRELOAD=...`).
run() {
    (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_ANNOTATIONS=$s.dl CLAYOUT_CACHE_DIR=$cache "$@" \
        $S/$s/$s $(large $s) --platform $platform -i $i 2>/dev/null | grep -E "^kernel_ms" | awk '{print $2}')
}
# Three runs of `run`, on one line.
three() { for r in 1 2 3; do run "$@"; done | tr '\n' ' '; }
# Primes clayout's cache: copies, conversions, times at this size.
prime() { rm -rf $cache; for i in 100 100; do run env LD_PRELOAD=$lib CLAYOUT_BUILD_AFTER=wait >/dev/null; done; }
opts="-D CLAYOUT_TILE=32 -D CLAYOUT_INDEX32 -D CLAYOUT_STAGE_WG=64"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    parts=${PARTS:-1 2 3}
    [[ " $parts " == *" 1 "* ]] && for s in blackscholes lbm particles spmv-ell; do
        rm -rf /tmp/bl-dump
        (cd samples/$s && SAMPLE_PLATFORM=$platform CLAYOUT_DUMP_DIR=/tmp/bl-dump CLAYOUT_ANNOTATIONS=$s.dl \
            CLAYOUT_CACHE_DIR=/tmp/bl-nocache LD_PRELOAD=$lib $S/$s/$s -i 1 --platform $platform >/dev/null 2>&1)
        f=$(ls /tmp/bl-dump/*.cl | head -1)
        echo "== $s copy ($(wc -c <"$f") bytes): first process"
        BL_OPTS="$opts" /tmp/bl $platform "$f" times
        echo "== $s copy: second process"
        BL_OPTS="$opts" /tmp/bl $platform "$f" times
        cp "$f" /tmp/bl-$s.cl
    done
    if [[ " $parts " == *" 2 "* ]]; then
        echo "== contention (background program: lbm's copy)"
        BL_OPTS="$opts" /tmp/bl $platform /tmp/bl-lbm.cl contend 30
        BL_OPTS="$opts" /tmp/bl $platform /tmp/bl-lbm.cl contend 3
    fi
    [[ " $parts " == *" 3 "* ]] && echo "== samples, large size: kernel_ms of 3 runs"
    [[ " $parts " == *" 3 "* ]] && for s in blackscholes lbm particles spmv-ell; do
        cache=/tmp/bl-cache-$s
        prime
        for i in 1 30; do
            a=$(three env) b=$(three env LD_PRELOAD=$lib) c=$(three env LD_PRELOAD=$lib CLAYOUT_BUILD_AFTER=10000000)
            d=$(three env LD_PRELOAD=$lib CLAYOUT_POLICY=never) e=$(three env LD_PRELOAD=$lib CLAYOUT_POLICY=always)
            echo "$s -i $i: none [$a] auto [$b] auto-nothing-loaded [$c] never [$d] always [$e]"
        done
    done
    [[ " $parts " == *" 4 "* ]] && echo "== samples, large size, later runs: kernel_ms of 3 runs"
    [[ " $parts " == *" 4 "* ]] && for s in ${SAMPLES:-blackscholes lbm particles spmv-ell}; do
        cache=/tmp/bl-cache4-$s
        prime
        for i in 1 30 100; do
            echo "$s -i $i: none [$(three env)] auto [$(three env LD_PRELOAD=$lib)]"
        done
        for i in 1 30 100; do
            echo "$s -i $i: always [$(three env LD_PRELOAD=$lib CLAYOUT_POLICY=always)]"
        done
    done
} 2>&1 | tee "$OUT/buildload.txt"
