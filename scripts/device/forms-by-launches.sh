#!/usr/bin/env bash
# On the GPU machine (issue 17): what each form of particles costs a run, by its number of
# launches: without clayout, under `always` (the ASTA copy, converting at the first launch) and
# under `never` (the host-layout forms), on a cache primed with the builds waited for; REPS
# interleaved runs at each of 1, 2, 4, 8, 30 and 100 iterations at N particles, each timing its
# OpenCL calls (bench/calltime.c). Prints, per count and form, the medians of total_ms, of the
# launch calls' time, of the largest launch call (a first launch's costs) and of the read.
# Appends its raw lines to $OUT/forms.lines. PLAT names the platform (default NVIDIA).
#   N=262144 REPS=7 scripts/device/forms-by-launches.sh
S=/tmp/sc-samples
. scripts/device/samples-env.sh ${PLAT:-NVIDIA}
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
A=$root/samples/particles/particles.dl
c=/tmp/forms-cache; rm -rf $c
cd samples/particles
for p in always auto never; do for i in 100 100; do CLAYOUT_POLICY=$p CLAYOUT_BUILD_AFTER=wait CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $S/particles/particles -n ${N:-262144} -i $i --platform ${PLAT:-NVIDIA} >/dev/null 2>&1; done; done
one() { local tag=$1; shift; env "$@" $S/particles/particles -n ${N:-262144} -i $it --platform ${PLAT:-NVIDIA} 2>&1 >/tmp/o.txt | grep '^calltime: clEnqueueNDRange\|^calltime: clEnqueueRead' | awk -v t=$tag -v it=$it '{print t, it, $2, $5, $8}' >> $OUT/forms.lines; awk -v t=$tag -v it=$it '/^total_ms/ {print t, it, "total", $2*1000, 0}' /tmp/o.txt >> $OUT/forms.lines; }
for it in 1 2 4 8 30 100; do
  for r in $(seq ${REPS:-7}); do
    one none LD_PRELOAD=/tmp/calltime.so
    one always CLAYOUT_POLICY=always LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A
    one never CLAYOUT_POLICY=never LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A
  done
done
python3 - $OUT/forms.lines <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    t, it, what, v, big = l.split()
    d[(t, int(it), what)].append(float(v))
    if what.startswith('clEnqueueNDRange'): d[(t, int(it), 'largest')].append(float(big.rstrip(')')))
print("| launches | form | total_ms (us) | NDRange calls (us) | largest NDRange call | read (us) |")
for it in sorted({k[1] for k in d}):
    for t in ('none', 'always', 'never'):
        g = lambda w: st.median(d[(t, it, w)]) if d[(t, it, w)] else float('nan')
        print(f"| {it} | {t} | {g('total'):.0f} | {g('clEnqueueNDRangeKernel'):.0f} | {g('largest'):.0f} | {g('clEnqueueReadBuffer'):.0f} |")
PY
