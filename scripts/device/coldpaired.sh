#!/usr/bin/env bash
# On the GPU machine: clayout's added wall time on a first run, in pairs (issue 17). Each pair
# runs a sample at its small size, one iteration, with the driver's kernel cache off
# (CUDA_CACHE_DISABLE=1, POCL_KERNEL_CACHE=0), first without clayout, then under clayout with an
# empty cache directory; REPS pairs per sample. Each run also reports (bench/calltime.c) the
# time of its clGetPlatformIDs and clCreateContext, the platform's start-up, which varies by
# hundreds of ms between runs: the wall time less it is the steadier figure. Prints every pair
# and, per sample, the median of the pairs' differences. DRIVER_CACHE fresh: the driver's cache
# on, emptied before each pair (~/.nv/ComputeCache, PoCL's kcache) and filled by one run of the
# program without clayout: the application's program is in it, clayout's are not, as on a
# machine that ran the program before clayout came. DRIVER_CACHE second: as fresh, and one run
# under clayout (not timed) before the pair's: the pair's is the program's second run under
# clayout, which builds what the first did not. Writes $OUT/coldpaired.txt.
#   scripts/device/coldpaired.sh [PLATFORM] [REPS] [DRIVER_CACHE on|off|fresh|second]
set -uo pipefail
S=/tmp/cp-samples
. scripts/device/samples-env.sh
reps=${2:-6}
mode=${3:-off}
[ "$mode" = off ] && export CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
export SAMPLE_PLATFORM=$platform
# One run: "wall_ms init_ms" (init from calltime's last line).
one() {
    local t0 t1 init
    t0=$(date +%s%N)
    init=$(env "$@" 2>&1 >/dev/null | awk '/^calltime: init/ {print $3}')
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000000)) $((${init:-0} / 1000))"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    echo "driver cache: $mode; pairs: $reps; columns: plain wall, plain init, clayout wall, clayout init, wall difference, difference less init (ms)"
    for s in blackscholes lbm particles spmv-ell; do
        bin=$S/$s/$s
        diffs=() rest=()
        for r in $(seq $reps); do
            if [ "$mode" = fresh ] || [ "$mode" = second ]; then
                rm -rf ~/.nv/ComputeCache ~/.cache/pocl/kcache
                $bin -i 1 >/dev/null 2>&1
            fi
            rm -rf /tmp/cp-cache
            if [ "$mode" = second ]; then
                LD_PRELOAD=$lib CLAYOUT_ANNOTATIONS=$root/samples/$s/$s.dl CLAYOUT_CACHE_DIR=/tmp/cp-cache $bin -i 1 >/dev/null 2>&1
            fi
            read pw pi < <(one LD_PRELOAD=/tmp/calltime.so $bin -i 1)
            read cw ci < <(one LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_ANNOTATIONS=$root/samples/$s/$s.dl CLAYOUT_CACHE_DIR=/tmp/cp-cache $bin -i 1)
            d=$((cw - pw)) e=$(((cw - ci) - (pw - pi)))
            diffs+=($d) rest+=($e)
            echo "$s pair $r: $pw $pi $cw $ci $d $e"
        done
        echo "$s: median wall difference $(printf '%s\n' "${diffs[@]}" | median) ms, less init $(printf '%s\n' "${rest[@]}" | median) ms"
    done
} 2>&1 | tee "$OUT/coldpaired.txt"
