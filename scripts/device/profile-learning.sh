#!/usr/bin/env bash
# On the GPU machine (issue 17): `auto` on queues that profile (CLAYOUT_PROFILE=1) learning on a
# fresh cache, for each library NAME of LIBS (.devcarry/rt/NAME.so; default "prev libclayout"):
# particles at 64,000 and 262,144, lbm at 128^3 and blackscholes at 2^22, each run without
# clayout, then four runs of 100 iterations and one of the case's count under `auto`, then
# without clayout again, with the last run's forms and reasons.
#   LIBS="prev libclayout" scripts/device/profile-learning.sh
S=/tmp/sc-samples
. scripts/device/samples-env.sh NVIDIA
for l in ${LIBS:-prev libclayout}; do
 for case in "particles:-n 64000:1000" "particles:-n 262144:300" "lbm:-x 128 -y 128 -z 128:30" "blackscholes:-n 4194304:30"; do
  IFS=: read s size it <<< "$case"
  A=$root/samples/$s/$s.dl; c=/tmp/pl-$l-$s; rm -rf $c
  echo "== $l $s $size: none, then auto PROFILE=1 runs of 100 x4 and $it; then none again"
  (cd samples/$s; $S/$s/$s $size -i $it --platform NVIDIA 2>/dev/null | grep -E "total_ms|kernel_ms" | tr '\n' ' '; echo
  for i in 100 100 100 100 $it; do CLAYOUT_PROFILE=1 CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=/tmp/pl.json LD_PRELOAD=$root/.devcarry/rt/$l.so $S/$s/$s $size -i $i --platform NVIDIA 2>/dev/null | grep -E "total_ms|kernel_ms" | tr '\n' ' '; done; echo
  $S/$s/$s $size -i $it --platform NVIDIA 2>/dev/null | grep -E "total_ms|kernel_ms" | tr '\n' ' '; echo
  python3 -c "
import json; d=json.load(open('/tmp/pl.json'))['policy']['kernels']
for k,v in d.items(): print(' ', k, v['launches'], v['reasons'][-2:])")
 done
done
