#!/usr/bin/env bash
# On the GPU machine (issue 17): the time of a run's launch calls under two builds of clayout
# (LIBS, default .devcarry/rt/base.so and libclayout.so), under each policy of CONFIGS (default
# "auto never"; `always` too), against the run without clayout: particles at N (default 64,000)
# for each count of ITERS (default "8 100"), REPS interleaved rounds, each run timing its OpenCL
# calls (bench/calltime.c). Each build's caches are primed alike with the builds waited for (the
# stress sequence's history under `auto`, two 100-iteration runs under `never` and `always`), and
# each policy's decisions in one more run are printed: the two builds' caches may have learnt
# different forms (`never` picks the faster host-layout form by its timings; only `always` runs
# one form whatever they say). Writes $OUT/launchcalls.lines and a table of medians. PLAT names
# the platform (default NVIDIA).
#   LIBS="a.so b.so" N=64000 ITERS="1 8 100" REPS=9 CONFIGS="always never" scripts/device/launchcalls.sh
S=/tmp/sc-samples
. scripts/device/samples-env.sh ${PLAT:-NVIDIA}
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
A=$root/samples/particles/particles.dl
LIBS=${LIBS:-".devcarry/rt/base.so .devcarry/rt/libclayout.so"}
cd samples/particles
# Each policy's cache: auto's holds the stress history, never's and always' their own runs.
cache() { case $2 in auto) echo $1 ;; *) echo $1-$2 ;; esac; }
for l in $LIBS; do
  L=$root/$l; c=/tmp/launchcalls-cache-$(basename $l); rm -rf $c $c-never $c-always
  for p in 262144:100 64000:2 262144:30 64000:1 262144:1000 64000:8 ${N:-64000}:100; do
    CLAYOUT_BUILD_AFTER=wait CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$L $S/particles/particles -n ${p%%:*} -i ${p##*:} --platform ${PLAT:-NVIDIA} >/dev/null 2>&1
  done
  for p in never always; do for i in 100 100; do CLAYOUT_POLICY=$p CLAYOUT_BUILD_AFTER=wait CLAYOUT_CACHE_DIR=$c-$p CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$L $S/particles/particles -n ${N:-64000} -i $i --platform ${PLAT:-NVIDIA} >/dev/null 2>&1; done; done
done
one() { local tag=$1; shift; env "$@" $S/particles/particles -n ${N:-64000} -i $it --platform ${PLAT:-NVIDIA} 2>&1 >/tmp/o.txt | grep '^calltime: clEnqueueNDRange' | awk -v t=$tag -v it=$it '{print t, it, "launch", $5}' >> $OUT/launchcalls.lines; awk -v t=$tag -v it=$it '/^total_ms/ {print t, it, "total", $2*1000}' /tmp/o.txt >> $OUT/launchcalls.lines; }
rm -f $OUT/launchcalls.lines
for it in ${ITERS:-8 100}; do
  for r in $(seq ${REPS:-9}); do
    one none LD_PRELOAD=/tmp/calltime.so
    for l in $LIBS; do
      L=$root/$l; c=/tmp/launchcalls-cache-$(basename $l); b=$(basename $l .so)
      for p in ${CONFIGS:-auto never}; do
        one $p-$b CLAYOUT_POLICY=$p LD_PRELOAD="/tmp/calltime.so $L" CLAYOUT_CACHE_DIR=$(cache $c $p) CLAYOUT_ANNOTATIONS=$A
      done
    done
  done
done
for l in $LIBS; do for p in ${CONFIGS:-auto never}; do L=$root/$l; c=/tmp/launchcalls-cache-$(basename $l); echo "== $(basename $l) $p reasons:"; CLAYOUT_POLICY=$p CLAYOUT_STATS=/tmp/launchcalls.json CLAYOUT_CACHE_DIR=$(cache $c $p) CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$L $S/particles/particles -n ${N:-64000} -i 100 --platform ${PLAT:-NVIDIA} >/dev/null 2>&1; python3 -c "
import json; d=json.load(open('/tmp/launchcalls.json'))['policy']['kernels']
for k,v in d.items(): print(' ', k, v['launches'], v['reasons'][-2:])"; done; done
python3 - $OUT/launchcalls.lines <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    t, it, what, v = l.split()
    d[(t, int(it), what)].append(float(v))
print("| launches | form | runs | launch calls (us), median | total (us), median |")
for (t, it, w) in sorted(k for k in d if k[2] == 'launch'):
    print(f"| {it} | {t} | {len(d[(t,it,w)])} | {st.median(d[(t,it,'launch')]):.0f} | {st.median(d[(t,it,'total')]):.0f} |")
# Each run against the run without clayout of its own round (the rounds' totals drift).
rounds = []
for l in open(sys.argv[1]):
    t, it, what, v = l.split()
    if t == 'none' and what == 'launch':
        rounds.append({})
    if rounds:
        rounds[-1][(t, int(it), what)] = float(v)
print("| launches | form | total against the round's run without clayout, median | launch calls added per launch (us), median |")
for (t, it, w) in sorted(k for k in d if k[2] == 'launch' and k[0] != 'none'):
    r = [x for x in rounds if (t, it, 'total') in x and ('none', it, 'total') in x and (t, it, 'launch') in x]
    tot = [100 * (x[(t, it, 'total')] / x[('none', it, 'total')] - 1) for x in r]
    calls = [(x[(t, it, 'launch')] - x[('none', it, 'launch')]) / (3 * it) for x in r]
    if r:
        print(f"| {it} | {t} | {st.median(tot):+.1f} % | {st.median(calls):+.2f} |")
PY
