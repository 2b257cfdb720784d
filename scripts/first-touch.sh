#!/usr/bin/env bash
# What clayout runs for the first time in a short run (issue 17): on PoCL here, under callgrind
# with caches large enough to keep every line (so that each miss is a line of code or data met
# for the first time in the process, whatever the code's layout), particles' -i ITERS at 4,096
# particles with its copies declined, as the H100 declines them after the stress sequence's
# first runs. For each of the application's calls that clayout adds to: the instructions, and
# the lines of code and of data first met there. On the H100 a line first met costs some 30-40
# ns from the last-level cache, which is most of what a short run's calls pay for clayout
# (docs/results.md, "Code met for the first time").
#   scripts/first-touch.sh [ITERS] [LIB]
# LIB: a build with the `fault-injection` feature (its `quick-build` site makes every build count
# as answered from a driver cache, as NVIDIA's are); built here if not given. ANN=path runs with
# another side file (ANN=/tmp/empty.dl, a file of no line: no program annotated). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-2}
NAME=first-touch LIB_ARG=${2:-}
. scripts/valgrind-particles.sh
# The history that declines the copies: timed under `always`, then runs of the stress sequence.
under always 4096 1
under always 16384 1
for p in 4096:1 16384:100 4096:2 16384:30 4096:1 4096:2 4096:2; do under auto "${p%%:*}" "${p##*:}"; done
entries="clCreateBuffer clEnqueueWriteBuffer clSetKernelArg clEnqueueNDRangeKernel clFinish clEnqueueReadBuffer
    clReleaseMemObject clCreateKernel clReleaseKernel clCreateCommandQueue clReleaseCommandQueue"
big="--I1=4194304,16,64 --D1=4194304,16,64"
profile() { # OUT TOGGLES...: the declined run of ITERS under callgrind, collecting inside the toggles
    local out=$1
    shift
    cp -r "$work/cache" "$work/run-cache"
    env CLAYOUT_FAULT=quick-build CLAYOUT_CACHE_DIR="$work/run-cache" CLAYOUT_ANNOTATIONS="${ANN:-$ann}" LD_PRELOAD="$lib" \
        valgrind --tool=callgrind --cache-sim=yes $big --collect-atstart=no --separate-threads=yes \
        "$@" --callgrind-out-file="$out" -q "$bin" -n 4096 -i "$iters" >/dev/null 2>&1
    rm -rf "$work/run-cache"
}
# The application's thread: callgrind numbers it 01.
profile "$work/run" $(for e in $entries; do echo "--toggle-collect=$e"; done)
profile "$work/build" --toggle-collect=clBuildProgram
echo "particles -n 4096 -i $iters, copies declined, $(basename "$lib"); side file ${ANN:-$ann}"
echo "| call | instructions | code lines first met | data lines first met |"
echo "| --- | ---: | ---: | ---: |"
row() { # FILE NAME PATTERN
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null | { grep -E "$3" || true; } | head -1 | sed 's/([^)]*)//g' |
        awk -v n="$2" '{printf "| %s | %s | %s | %s |\n", n, $1, $4, $5}'
}
for e in $entries; do row "$work/run-01" "$e" "exports.rs:$e( |\$)"; done
row "$work/run-01" "all of the run's calls" "PROGRAM TOTALS"
row "$work/build-01" "clBuildProgram" "PROGRAM TOTALS"
