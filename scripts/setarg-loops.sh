#!/usr/bin/env bash
# What clayout's own code costs a loop that sets its kernel's arguments before every launch
# (issue 17), on PoCL here: bench/firstlaunch.c's paired loop (blackscholes' kernel at 4,096
# options, PAIRS pairs of 64 launches, default 100) under callgrind, collecting inside
# clSetKernelArg and clEnqueueNDRangeKernel, for each shape of FIRSTLAUNCH_SETARGS (1: every
# argument set again to the value it has; 2: and a time step; 3: and the first argument swapped
# between two buffers, as a loop that swaps its source and destination does) under
# CLAYOUT_REWRITE=0 and under `never` (its cache primed with the builds waited for). Prints
# the instructions of libclayout.so's own code per launch (the driver's and the C library's
# left out, which differ from run to run on PoCL), and the launches through the express lane.
# Needs valgrind.
#   scripts/setarg-loops.sh [LIB...]          (default: target/release/libclayout.so)
set -euo pipefail
cd "$(dirname "$0")/.."
libs=("$@")
[ ${#libs[@]} -gt 0 ] || libs=(target/release/libclayout.so)
pairs=${PAIRS:-100}
work=$(mktemp -d /tmp/setarg-loops.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wno-deprecated-declarations -Wno-unused-function -o "$work/firstlaunch" bench/firstlaunch.c -lOpenCL -lm -ldl
ann=$PWD/samples/blackscholes/blackscholes.dl
echo "| library | configuration | FIRSTLAUNCH_SETARGS | clayout's instructions a launch | launches in a lane |"
echo "| --- | --- | ---: | ---: | ---: |"
for l in "${libs[@]}"; do
    lib=$(readlink -f "$l")
    for config in rewrite0 never; do
        case $config in
            rewrite0) envs=(CLAYOUT_REWRITE=0) ;;
            never) envs=(CLAYOUT_POLICY=never CLAYOUT_CACHE_DIR="$work/cache" CLAYOUT_BUILD_AFTER=wait) ;;
        esac
        rm -rf "$work/cache"
        for _ in 1 2 3; do
            env LD_PRELOAD="$lib" CLAYOUT_ANNOTATIONS="$ann" "${envs[@]}" FIRSTLAUNCH_LOOP=256 "$work/firstlaunch" - 4096 >/dev/null 2>&1
        done
        for shape in 1 2 3; do
            env LD_PRELOAD="$lib" CLAYOUT_ANNOTATIONS="$ann" "${envs[@]}" CLAYOUT_STATS="$work/stats.json" \
                FIRSTLAUNCH_SETARGS=$shape FIRSTLAUNCH_PAIRED="$pairs" \
                valgrind --tool=callgrind --collect-atstart=no --toggle-collect=clSetKernelArg \
                --toggle-collect=clEnqueueNDRangeKernel --callgrind-out-file="$work/cg" -q \
                "$work/firstlaunch" - 4096 >/dev/null 2>&1
            own=$(callgrind_annotate --threshold=100 "$work/cg" 2>/dev/null |
                awk -v n=$((pairs * 64)) '/libclayout\.so\]/ { gsub(",", "", $1); s += $1 } END { printf "%.0f", s / n }')
            lane=$(python3 -c "import json; print(json.load(open('$work/stats.json'))['launches_in_lane'])" 2>/dev/null || echo "?")
            echo "| $l | $config | $shape | $own | $lane |"
        done
    done
done
