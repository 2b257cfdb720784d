#!/usr/bin/env bash
# On the GPU machine (issue 17): what the application's waits say of particles' launches
# (`cost::pace`): at each size of SIZES (default 64,000 and 262,144), a cache primed with the
# stress sequence's history under POLICY (default `auto`), then RUNS runs (default 3) of IT iterations (default
# 1000) with CLAYOUT_LOG=debug, printing each wait clayout measured, the verdicts kept, each
# run's total and its kernels' forms. Writes $OUT/pace.txt ($OUT/pace-POLICY.txt).
#   POLICY=auto SIZES="64000 262144" RUNS=3 IT=1000 PLATFORM=NVIDIA scripts/device/pace.sh
S=/tmp/pace-samples
P=${PLATFORM:-NVIDIA}
. scripts/device/samples-env.sh $P
IT=${IT:-1000}
export POLICY_NAME=${POLICY:-auto}
A=$root/samples/particles/particles.dl
history="64000:1 262144:100 64000:2 262144:30 64000:1 262144:1000 64000:8 262144:30"
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for n in ${SIZES:-64000 262144}; do
  c=/tmp/pace-cache-$n
  CLAYOUT_POLICY=${POLICY:-auto} prime_cache $c particles $lib "$history"
  for r in $(seq ${RUNS:-3}); do
    (cd samples/particles && $S/particles/particles -n $n -i $IT --platform $P 2>/dev/null | awk -v n=$n '/^total_ms/ {print "none", n, "total_ms", $2}')
    (cd samples/particles && CLAYOUT_LOG=debug CLAYOUT_POLICY=${POLICY:-auto} CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A \
      CLAYOUT_STATS=/tmp/pace-stats.json LD_PRELOAD=$lib $S/particles/particles -n $n -i $IT --platform $P 2>/tmp/pace-err.txt \
      | awk -v n=$n '/^total_ms/ {print ENVIRON["POLICY_NAME"], n, "total_ms", $2}')
    grep -E "wait took|finds the device" /tmp/pace-err.txt | sed 's/kernel platform.*|particles_/particles_/' | head -8
    python3 -c "
import json; d=json.load(open('/tmp/pace-stats.json'))
print('  forms', {k: v['launches'] for k, v in d['policy']['kernels'].items()})"
  done
done
} 2>&1 | tee $OUT/pace${POLICY:+-$POLICY}.txt
