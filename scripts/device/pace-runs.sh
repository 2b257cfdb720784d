#!/usr/bin/env bash
# On the GPU machine (issue 17): a program's first runs on a fresh cache, run after run, under
# `auto` with each library of LIBS: particles at N (default 262,144), one run per length of
# RUNS (default three of 1000 iterations), each next to a run without clayout; prints each
# run's total_ms, its kernels' forms and the waits' verdicts (`cost::pace`, CLAYOUT_LOG=debug).
# Shows what learning whether the device keeps up costs at a size where ASTA pays.
#   LIBS="a.so b.so" N=262144 RUNS="1000 1000 1000" PLATFORM=NVIDIA scripts/device/pace-runs.sh
S=/tmp/pace-samples
P=${PLATFORM:-NVIDIA}
. scripts/device/samples-env.sh $P
N=${N:-262144}
A=$root/samples/particles/particles.dl
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for l in ${LIBS:-.devcarry/rt/libclayout.so}; do
  c=/tmp/pace-runs-cache; rm -rf $c
  l=$(readlink -f $l)
  echo "== $(basename $l) particles -n $N"
  for it in ${RUNS:-1000 1000 1000}; do
    none=$(cd samples/particles && $S/particles/particles -n $N -i $it --platform $P 2>/dev/null | awk '/^total_ms/ {print $2}')
    auto=$(cd samples/particles && CLAYOUT_LOG=debug CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=/tmp/pace-runs.json \
      LD_PRELOAD=$l $S/particles/particles -n $N -i $it --platform $P 2>/tmp/pace-runs-err.txt | awk '/^total_ms/ {print $2}')
    echo "-i $it: none $none ms, auto $auto ms"
    grep -E "finds the device" /tmp/pace-runs-err.txt | sed 's/.*|particles_/    particles_/; s/: Wait.*//' | head -3
    python3 -c "
import json; d=json.load(open('/tmp/pace-runs.json'))
print('    forms', {k: v['launches'] for k, v in d['policy']['kernels'].items()})"
  done
done
} 2>&1 | tee $OUT/pace-runs.txt
