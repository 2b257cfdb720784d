#!/usr/bin/env bash
# What clayout executes in the launch calls of a long run whose copies were declined at its
# build (issue 17): on PoCL here, particles at 4,096 after a history of one run under `always`
# and seven one-iteration runs under `auto` (which declines the copies of a run with other
# arguments), then one run of ITERS iterations (3 kernels each) under callgrind, collecting
# inside clEnqueueNDRangeKernel (the loader's and the driver's calls beneath it are left out:
# their own toggles turn the collection off). Prints clayout's instructions in those calls, per
# launch, and how the launches ran (the statistics: `launches_in_lane` are those of the
# express lane, docs/cost-model.md, "declined runs through the express lane").
#   scripts/declined-launches.sh [ITERS] [LIB]
# LIB: a build with the `fault-injection` feature (its `quick-build` site makes every build count
# as answered from a driver cache, as NVIDIA's are); built here if not given. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-200}
NAME=declined-launches LIB_ARG=${2:-}
. scripts/valgrind-particles.sh
# The history under the profile's own command line (`under`).
VG=(valgrind --tool=callgrind --collect-atstart=no --toggle-collect=clEnqueueNDRangeKernel --callgrind-out-file="$work/cg.out" -q)
under always 4096 1
for _ in 1 2 3 4 5 6 7; do under auto 4096 1; done
EXTRA=(CLAYOUT_STATS="$work/stats.json")
under auto 4096 "$iters"
total=$(callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
python3 - "$work/stats.json" "$total" "$iters" "$(basename "$lib")" <<'PY'
import json, sys
stats, total, iters, lib = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
launches = 3 * iters
declined = any(r.startswith("not loaded") for r in stats["policy"]["copies_not_loaded"])
print(f"particles -n 4096 -i {iters}, {lib}: copies {'declined' if declined else 'NOT declined'} at the build")
print(f"clayout's instructions in {launches} launch calls: {total:,} ({total / launches:.0f} a launch)")
for k in ["launches_as_written", "launches_repeated", "launches_in_lane"]:
    print(f"{k}: {stats[k]}")
PY
