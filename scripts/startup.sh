#!/usr/bin/env bash
# Start-up cost of clayout's on-disk cache: wall time of a sample at its small size, one
# iteration, under the transparent mode (policy auto), with the cache off, with an empty cache
# directory (first run: tile search, conversion costs, conversion kernels built from source)
# and with the cache that first run filled; and the same program without clayout.
# --driver-cache off turns the OpenCL implementation's own kernel cache off for every run, the
# run without clayout included (CUDA_CACHE_DISABLE=1 on NVIDIA, POCL_KERNEL_CACHE=0 on PoCL):
# what a first run costs on a fresh machine.
#   scripts/startup.sh [--platform NAME] [--lib PATH] [--reps N] [--driver-cache on|off] [sample...]
set -uo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
platform=${SAMPLE_PLATFORM:-}
lib=
reps=3
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift 2 ;;
        --lib) lib=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --driver-cache)
            [ "$2" = off ] && export CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0
            shift 2 ;;
        *) break ;;
    esac
done
samples=${*:-blackscholes lbm particles spmv-ell}
target=${CARGO_TARGET_DIR:-$root/target}
out=$target/samples
make -s -C "$root/samples" OUT="$out" >/dev/null || exit 1
lib=${lib:-$target/release/libclayout.so}
lib=$(readlink -f "$lib")
work=$(mktemp -d)
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || echo "FAILED: $*" >&2; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| sample | without clayout ms | cache off ms | empty cache ms | warm cache ms |"
echo "| --- | ---: | ---: | ---: | ---: |"
for s in $samples; do
    bin=$out/$s/$s
    run() { env ${platform:+SAMPLE_PLATFORM=$platform} "$@" "$bin" -i 1; }
    shim=(env LD_PRELOAD="$lib" CLAYOUT_ANNOTATIONS="$root/samples/$s/$s.dl" CLAYOUT_POLICY=auto)
    plain="" off="" cold="" warm=""
    for r in $(seq "$reps"); do
        plain+=" $(ms run env)"
        off+=" $(ms run "${shim[@]}" CLAYOUT_CACHE_DIR=off)"
        rm -rf "$work/c$r"
        cold+=" $(ms run "${shim[@]}" CLAYOUT_CACHE_DIR="$work/c$r")"
        warm+=" $(ms run "${shim[@]}" CLAYOUT_CACHE_DIR="$work/c$r")"
    done
    echo "| $s | $(echo $plain | median) | $(echo $off | median) | $(echo $cold | median) | $(echo $warm | median) |"
done
rm -rf "$work"
