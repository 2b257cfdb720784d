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
entries="clCreateBuffer clEnqueueWriteBuffer clSetKernelArg clEnqueueNDRangeKernel clFinish clEnqueueReadBuffer
    clReleaseMemObject clCreateKernel clReleaseKernel clCreateCommandQueue clReleaseCommandQueue"
# One profile of the application's calls and of its build call, collecting inside their toggles
# (the driver's entry points of the same names turn it off beneath them), with caches large
# enough to keep every line; the history is made under the same command line (`under`).
VG=(valgrind --tool=callgrind --cache-sim=yes --I1=4194304,16,64 --D1=4194304,16,64 --collect-atstart=no
    --separate-threads=yes $(for e in $entries clBuildProgram; do echo "--toggle-collect=$e"; done)
    --callgrind-out-file="$work/cg" -q)
# The history that declines the copies: timed under `always`, then runs of the stress sequence.
under always 4096 1
under always 16384 1
for p in 4096:1 16384:100 4096:2 16384:30 4096:1 4096:2 4096:2; do under auto "${p%%:*}" "${p##*:}"; done
rm -f "$work"/cg*
EXTRA=(CLAYOUT_STATS="$work/stats.json")
ann=${ANN:-$ann}
under auto 4096 "$iters"
declined=$(python3 -c "import json, sys; print(any(r.startswith('not loaded') for r in json.load(open(sys.argv[1]))['policy']['copies_not_loaded']))" "$work/stats.json")
[ "$declined" = True ] || [ -n "${ANN:-}" ] || echo "warning: the copies were not declined at the build of the run profiled" >&2
echo "particles -n 4096 -i $iters, copies declined: $declined, $(basename "$lib"); side file $ann"
echo "| call | instructions | code lines first met | data lines first met |"
echo "| --- | ---: | ---: | ---: |"
row() { # FILE NAME PATTERN
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | { grep -E "$3" || true; } | head -1 | sed 's/([^)]*)//g' |
        awk -v n="$2" '{printf "| %s | %s | %s | %s |\n", n, $1, $4, $5}'
}
# The application's thread: callgrind numbers it 01.
for e in $entries; do row "$work/cg-01" "$e" "exports.rs:$e( |\$)"; done
# The calls' sum: the totals less the build call, from the same profile.
{ row "$work/cg-01" total "PROGRAM TOTALS"; row "$work/cg-01" build "exports.rs:clBuildProgram( |\$)"; } |
    tr -d ',' | awk -F'|' 'NR == 1 {for (i = 3; i <= 5; i++) t[i] = $i} NR == 2 {for (i = 3; i <= 5; i++) b[i] = $i}
        END {printf "| all of the run'"'"'s calls | %d | %d | %d |\n", t[3] - b[3], t[4] - b[4], t[5] - b[5]}'
row "$work/cg-01" "clBuildProgram" "exports.rs:clBuildProgram( |\$)"
