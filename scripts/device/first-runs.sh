#!/usr/bin/env bash
# On the GPU machine (issue 17): a program's first runs under `auto` on a fresh clayout cache,
# each next to a run without clayout, for each library of LIBS and each setting of SETS: particles
# at N (default 64,000), one run per length of RUNS (default four of 1000 iterations). Prints per
# run the total_ms of both, the time inside the launch calls (bench/calltime.c), the launches
# that repeated the last one, the forms run, and whether the checksums differ. Without debug
# logging.
#   LIBS="a.so b.so" SETS="- CLAYOUT_TILE=32" N=64000 RUNS="1000 1000 1000 1000" scripts/device/first-runs.sh
S=/tmp/fr-samples
. scripts/device/samples-env.sh ${PLAT:-NVIDIA}
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
A=$root/samples/particles/particles.dl
N=${N:-64000}
cd samples/particles
# "total_ms launch_us" of one run of $it iterations, with the environment in "$@".
# The run's checksum line goes to /tmp/fr-sum.txt.
one() { env "$@" $S/particles/particles -n $N -i $it --platform ${PLAT:-NVIDIA} 2>&1 >/tmp/fr-o.txt | awk '/^calltime: clEnqueueNDRange/ {l=$5} END {printf "%s ", l}'; awk '/^total_ms/ {printf "%s", $2}' /tmp/fr-o.txt; grep '^checksum' /tmp/fr-o.txt > /tmp/fr-sum.txt; }
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for l in ${LIBS:-.devcarry/rt/libclayout.so}; do
  L=$root/$l
  for set in ${SETS:--}; do
    c=/tmp/fr-cache; rm -rf $c
    extra=(); [ "$set" != - ] && extra=($set)
    echo "== $(basename $l) $set particles -n $N"
    for it in ${RUNS:-1000 1000 1000 1000}; do
      none=$(one LD_PRELOAD=/tmp/calltime.so); cp /tmp/fr-sum.txt /tmp/fr-sum-none.txt
      auto=$(one "${extra[@]}" LD_PRELOAD="/tmp/calltime.so $L" CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=/tmp/fr.json)
      forms=$(python3 -c "
import json; d=json.load(open('/tmp/fr.json'))
print('repeated', d['launches_repeated'], {k[10:]: v['launches'] for k, v in d['policy']['kernels'].items()})" 2>&1)
      same=$(cmp -s /tmp/fr-sum.txt /tmp/fr-sum-none.txt && echo same || echo DIFFER)
      echo "-i $it: none launch_us/total_ms $none | auto $auto | $same | $forms"
    done
  done
done
} 2>&1 | tee $OUT/first-runs.txt
