#!/usr/bin/env bash
# On the GPU machine (issue 17): the stress sequence's runs under `auto` on a machine whose
# driver has compiled nothing yet (its kernel cache a new, empty directory: CUDA_CACHE_PATH,
# POCL_CACHE_DIR) and clayout's cache empty, for each library in LIBS, ROUNDS times: per run its
# total_ms, the forms each kernel ran in, whether the copies were ready, and the run's wall time
# (the exit included, which waits for a build of clayout's in flight).
#   LIBS="a.so b.so" ROUNDS=2 scripts/device/cold-sequence.sh [PLATFORM] [SAMPLE] [RUNS]
# RUNS: "SIZE:LAUNCHES ..." (default the stress sequence at particles' sizes). Writes
# $OUT/cold-sequence.txt.
set -uo pipefail
S=/tmp/cq-samples
. scripts/device/samples-env.sh
sample=${2:-particles}
runs=${3:-64000:1 262144:100 64000:2 262144:30 64000:1 262144:1000 64000:8 262144:30}
A=$root/samples/$sample/$sample.dl
size() { case $sample in lbm) echo "-x $1 -y $1 -z $1" ;; *) echo "-n $1" ;; esac; }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for r in $(seq ${ROUNDS:-1}); do
        for l in ${LIBS:-.devcarry/rt/libclayout.so}; do
            L=$(readlink -f $l)
            w=/tmp/cq-$r-$(basename $l)
            rm -rf $w && mkdir -p $w
            echo "== round $r, $(basename $l)"
            i=0
            for p in $runs; do
                i=$((i + 1))
                t0=$(date +%s%N)
                (cd samples/$sample && CUDA_CACHE_PATH=$w/driver POCL_CACHE_DIR=$w/driver CLAYOUT_CACHE_DIR=$w/clayout \
                    CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=$w/stats.json LD_PRELOAD=$L \
                    $S/$sample/$sample $(size ${p%%:*}) -i ${p##*:} --platform $platform >$w/out.txt 2>&1)
                wall=$((($(date +%s%N) - t0) / 1000000))
                python3 - "$w/stats.json" "$i" "$p" "$(sed -n 's/^total_ms: //p' $w/out.txt)" "$wall" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
k = s.get("policy", {}).get("kernels", {})
forms = "; ".join(f"{n}: " + ", ".join(f"{f} {c}" for f, c in v["launches"].items() if c) for n, v in sorted(k.items()))
building = any("still being built" in r for v in k.values() for r in v["reasons"])
print(f"run {sys.argv[2]} ({sys.argv[3]}): total_ms {sys.argv[4]}, wall {sys.argv[5]} ms, "
      f"{'copies still being built' if building else 'copies ready'}; {forms}")
PY
            done
        done
    done
} 2>&1 | tee "$OUT/cold-sequence.txt"
