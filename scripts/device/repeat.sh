#!/usr/bin/env bash
# On the GPU machine (issue 17): a program of kernels of a few microseconds, bound by the host
# (particles at N, default 64,000, IT iterations, default 1000), under each library of LIBS
# (default base.so and libclayout.so of .devcarry/rt), with clayout's cache primed by the stress
# sequence's history (runs of 1 100 2 30 1 1000 8 30 launches at 64,000 and 262,144 in turn,
# scripts/policy-stress.sh), then ROUNDS interleaved rounds (default 7) of: without clayout,
# and under each policy of POLICIES (default `never auto`) with each library. Prints the
# medians of the run's total and of its launch calls (bench/calltime.c), and the launches that
# repeated the one before (`launches_repeated`) with each kernel's forms. Writes
# $OUT/repeat.lines.
#   LIBS="a.so b.so" POLICIES="never auto always" N=64000 IT=1000 ROUNDS=7 PLATFORM=NVIDIA scripts/device/repeat.sh
S=/tmp/rp-samples
P=${PLATFORM:-NVIDIA}
. scripts/device/samples-env.sh $P
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
LIBS=${LIBS:-.devcarry/rt/base.so .devcarry/rt/libclayout.so}
N=${N:-64000}; IT=${IT:-1000}; ROUNDS=${ROUNDS:-7}
history="64000:1 262144:100 64000:2 262144:30 64000:1 262144:1000 64000:8 262144:30"
A=$root/samples/particles/particles.dl
tags=()
for l in $LIBS; do
  t=$(basename $l .so)
  for p in ${POLICIES:-never auto}; do
    CLAYOUT_POLICY=$p prime_cache /tmp/rp-cache-$t-$p particles $(readlink -f $l) "$history"
    tags+=("$t-$p")
  done
done
one() { # TAG LIB POLICY
  local env=(LD_PRELOAD=/tmp/calltime.so)
  [ "$2" != none ] && env=(LD_PRELOAD="/tmp/calltime.so $(readlink -f $2)" CLAYOUT_POLICY=$3 CLAYOUT_CACHE_DIR=/tmp/rp-cache-$1 CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=/tmp/rp-stats-$1.json)
  (cd samples/particles && env "${env[@]}" $S/particles/particles -n $N -i $IT --platform $P 2>/tmp/rp-err.txt >/tmp/rp-out.txt)
  awk -v t=$1 '/^calltime: clEnqueueNDRange/ {print t, "launch", $5}' /tmp/rp-err.txt >> $OUT/repeat.lines
  awk -v t=$1 '/^total_ms/ {print t, "total", $2*1000} /^checksum/ {print t, "checksum", $2}' /tmp/rp-out.txt >> $OUT/repeat.lines
}
rm -f $OUT/repeat.lines
for r in $(seq $ROUNDS); do
  one none none
  for l in $LIBS; do t=$(basename $l .so); for p in ${POLICIES:-never auto}; do one $t-$p $l $p; done; done
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "particles -n $N -i $IT, $ROUNDS rounds, medians (us)"
python3 - $OUT/repeat.lines none "${tags[@]}" <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    t, w, v = l.split()
    d[(t, w)].append(v if w == 'checksum' else float(v))
none = st.median(d[('none', 'total')])
for t in sys.argv[2:]:
    tot = d[(t, 'total')]
    sums = set(d[(t, 'checksum')])
    print(f"{t:22s} launch calls {st.median(d[(t,'launch')]):8.0f}  total {st.median(tot):8.0f} ({100*(st.median(tot)/none-1):+.1f} %)  range {min(tot):.0f}-{max(tot):.0f}  checksums {len(sums)}")
# Each run against the run without clayout of its own round: a run's total moves by tens of
# percent from one round to the next on the machine's host.
rounds = []
for l in open(sys.argv[1]):
    t, w, v = l.split()
    if w == 'checksum':
        continue
    if t == 'none' and w == 'launch':
        rounds.append({})
    rounds[-1][(t, w)] = float(v)
print("paired with each round's run without clayout: total, and what clayout adds to the launch calls")
for t in sys.argv[2:]:
    r = [x for x in rounds if (t, 'total') in x and ('none', 'total') in x]
    tot = [100 * (x[(t, 'total')] / x[('none', 'total')] - 1) for x in r]
    calls = [x[(t, 'launch')] - x[('none', 'launch')] for x in r]
    print(f"{t:22s} total {st.median(tot):+6.1f} %  launch calls {st.median(calls):+8.0f} us")
PY
for t in "${tags[@]}"; do
  python3 -c "
import json,sys; d=json.load(open('/tmp/rp-stats-$t.json'))
print('$t', 'repeated', d.get('launches_repeated', '-'), {k: v['launches'] for k, v in d['policy']['kernels'].items()})
for k, v in d['policy']['kernels'].items(): print('   ', k, v['reasons'][-1:])"
done
