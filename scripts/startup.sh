#!/usr/bin/env bash
# Start-up cost of clayout: wall time of a sample at its small size, one iteration, under the
# transparent mode (policy auto), against the same program without clayout.
#
# Default mode, with the driver's kernel cache as it is: clayout's cache off, an empty cache
# directory (first run: tile search, conversion costs, conversion kernels built from source) and
# the cache that first run filled.
#
# --cold: a first run on a new machine. Every run, the program without clayout included, has
# the driver's kernel cache off (CUDA_CACHE_DISABLE=1 for NVIDIA, POCL_KERNEL_CACHE=0 for PoCL),
# and clayout's cache is empty for each run under it; the table adds what clayout adds to the
# wall time (the median of --reps runs each), then the same with clayout's cache warm.
#   scripts/startup.sh [--cold] [--platform NAME] [--lib PATH] [--reps N] [sample...]
# Without cargo (the GPU machine): give --lib and, if the OpenCL headers are elsewhere, CC.
set -uo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
platform=${SAMPLE_PLATFORM:-}
lib=
reps=3
cold=0
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift 2 ;;
        --lib) lib=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --cold) cold=1; shift ;;
        *) break ;;
    esac
done
samples=${*:-blackscholes lbm particles spmv-ell}
target=${CARGO_TARGET_DIR:-$root/target}
out=$target/samples
make -s -C "$root/samples" OUT="$out" ${CC:+CC="$CC"} >/dev/null || exit 1
lib=${lib:-$target/release/libclayout.so}
lib=$(readlink -f "$lib")
work=$(mktemp -d)
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || echo "FAILED: $*" >&2; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
if [ "$cold" = 1 ]; then
    export CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0
    echo "driver kernel caches off (CUDA_CACHE_DISABLE=1, POCL_KERNEL_CACHE=0) for every run; medians of $reps"
    echo "| sample | without clayout ms | clayout, empty cache ms | added ms | clayout, warm cache ms | added ms |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
else
    echo "| sample | without clayout ms | cache off ms | empty cache ms | warm cache ms |"
    echo "| --- | ---: | ---: | ---: | ---: |"
fi
for s in $samples; do
    bin=$out/$s/$s
    run() { env ${platform:+SAMPLE_PLATFORM=$platform} "$@" "$bin" -i 1; }
    shim=(env LD_PRELOAD="$lib" CLAYOUT_ANNOTATIONS="$root/samples/$s/$s.dl" CLAYOUT_POLICY=auto)
    plain="" off="" empty="" warm=""
    for r in $(seq "$reps"); do
        plain+=" $(ms run env)"
        [ "$cold" = 1 ] || off+=" $(ms run "${shim[@]}" CLAYOUT_CACHE_DIR=off)"
        rm -rf "$work/c$r"
        empty+=" $(ms run "${shim[@]}" CLAYOUT_CACHE_DIR="$work/c$r")"
        warm+=" $(ms run "${shim[@]}" CLAYOUT_CACHE_DIR="$work/c$r")"
    done
    p=$(echo $plain | median) e=$(echo $empty | median) w=$(echo $warm | median)
    if [ "$cold" = 1 ]; then
        echo "| $s | $p | $e | $((e - p)) | $w | $((w - p)) |"
    else
        echo "| $s | $p | $(echo $off | median) | $e | $w |"
    fi
done
rm -rf "$work"
