#!/usr/bin/env bash
# On the GPU machine: tests/dl/dl_repeat.c (the loop whose launches repeat the one before, with
# everything that must stop that between its runs, a conversion on another queue among them)
# at N particles and STEPS launches a run of the loop, without clayout and RUNS times under each
# policy on one cache per policy, every checksum compared with the plain run's, and the
# launches that repeated (`launches_repeated`). Writes $OUT/repeat-check.txt.
#   N=200000 STEPS=20 RUNS=4 scripts/device/repeat-check.sh [PLATFORM]
root=$(pwd)
OUT=${OUT:-/tmp/out}
export CL_PLATFORM_NAME=${1:-NVIDIA}
N=${N:-200000}; STEPS=${STEPS:-20}; RUNS=${RUNS:-4}
lib=$(readlink -f "${LIB:-.devcarry/rt/libclayout.so}")
bin=/tmp/dl_repeat
gcc -O2 -I.devcarry/rt/include -o $bin tests/dl/dl_repeat.c -L.devcarry/rt/lib -lOpenCL || exit 1
exec > >(tee "$OUT/repeat-check.txt") 2>&1
$bin tests/dl/particles_aos.cl plain $N $STEPS > /tmp/repeat-plain.txt || exit 1
bad=0
for p in never auto always; do
  c=/tmp/repeat-check-$p; rm -rf $c
  for r in $(seq $RUNS); do
    CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=tests/dl/particles.dl CLAYOUT_STATS=/tmp/repeat-check.json \
      LD_PRELOAD=$lib $bin tests/dl/particles_aos.cl asta $N $STEPS > /tmp/repeat-out.txt 2>/dev/null
    if cmp -s /tmp/repeat-plain.txt /tmp/repeat-out.txt; then v=same; else v=DIFFER; bad=$((bad + 1)); diff /tmp/repeat-plain.txt /tmp/repeat-out.txt | head -4; fi
    echo "$p run $r: $v, $(python3 -c "
import json; d=json.load(open('/tmp/repeat-check.json')); k=d['policy']['kernels'].get('advance', {})
print('repeated', d['launches_repeated'], 'of', sum(k.get('launches', {}).values()), k.get('launches'))")"
  done
done
echo "runs that differ: $bad"
