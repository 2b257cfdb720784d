#!/usr/bin/env bash
# On the GPU machine (issue 17): a program of kernels of a few microseconds, bound by the host
# (particles at N, default 64,000, IT iterations, default 1000): five interleaved rounds of each
# form's whole run (without clayout; CLAYOUT_REWRITE=0, the kernel as written under the DL
# runtime; `never`; `always`; `always` and CLAYOUT_REWRITE=0 on profiling queues), then `auto`
# learning on a fresh cache (four runs of 100 iterations, one of IT) with CLAYOUT_PROFILE=0 and
# =1, and its decisions. Writes $OUT/tinykernels.lines.
#   N=64000 IT=1000 scripts/device/tinykernels.sh
S=/tmp/sc-samples
. scripts/device/samples-env.sh NVIDIA
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
A=$root/samples/particles/particles.dl
cd samples/particles
N=${N:-64000}; IT=${IT:-1000}
c=/tmp/tinykernels-cache; rm -rf $c
for p in always never; do for i in 100 100; do CLAYOUT_POLICY=$p CLAYOUT_BUILD_AFTER=wait CLAYOUT_CACHE_DIR=$c-$p CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $S/particles/particles -n $N -i $i --platform NVIDIA >/dev/null 2>&1; done; done
one() { local tag=$1; shift; env "$@" $S/particles/particles -n $N -i $IT --platform NVIDIA 2>&1 >/tmp/tinykernels-out.txt | grep '^calltime: clEnqueueNDRange' | awk -v t=$tag '{print t, "launch", $5}' >> $OUT/tinykernels.lines; awk -v t=$tag '/^total_ms/ {print t, "total", $2*1000}' /tmp/tinykernels-out.txt >> $OUT/tinykernels.lines; }
rm -f $OUT/tinykernels.lines
for r in 1 2 3 4 5; do
  one none LD_PRELOAD=/tmp/calltime.so
  one always CLAYOUT_POLICY=always LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c-always CLAYOUT_ANNOTATIONS=$A
  one never CLAYOUT_POLICY=never LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c-never CLAYOUT_ANNOTATIONS=$A
  one written CLAYOUT_REWRITE=0 LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c-never CLAYOUT_ANNOTATIONS=$A
  one always-prof CLAYOUT_PROFILE=1 CLAYOUT_POLICY=always LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c-always CLAYOUT_ANNOTATIONS=$A
  one none-prof CLAYOUT_PROFILE=1 CLAYOUT_REWRITE=0 LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c-never CLAYOUT_ANNOTATIONS=$A
done
python3 - $OUT/tinykernels.lines <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    t, w, v = l.split(); d[(t, w)].append(float(v))
for t in ('none','written','never','always','always-prof','none-prof'):
    if (t,'total') in d: print(f"{t:12s} launch calls {st.median(d[(t,'launch')]):8.0f} us  total {st.median(d[(t,'total')]):8.0f} us  (totals {sorted(int(x) for x in d[(t,'total')])})")
PY
for prof in 0 1; do
  echo "== auto, CLAYOUT_PROFILE=$prof, fresh cache, 4 runs of 100 then one of $IT"
  rm -rf $c-a$prof
  for i in 100 100 100 100 $IT; do CLAYOUT_PROFILE=$prof CLAYOUT_CACHE_DIR=$c-a$prof CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=/tmp/tinykernels.json LD_PRELOAD=$lib $S/particles/particles -n $N -i $i --platform NVIDIA 2>/dev/null | grep total_ms; done
  python3 -c "
import json; d=json.load(open('/tmp/tinykernels.json'))['policy']['kernels']
for k,v in d.items(): print(' ', k, v['launches'], v['measured_ms'], v['reasons'][-2:])"
done
