#!/usr/bin/env bash
# On the GPU machine (issue 17): a program's first and second runs under `auto` on a fresh
# clayout cache, for each library of LIBS, in ROUNDS interleaved rounds (default 12), each round
# with one run without clayout to pair with: particles at N (default 64,000), IT iterations
# (default 1000). Prints the medians, over the rounds, of each run's time in the launch calls
# (bench/calltime.c) and total_ms against its round's run without clayout; the lines are in
# $OUT/first-runs-rounds.lines. Checks that every run's checksum is the plain run's. The last
# round's runs under clayout keep their statistics ($OUT/frr-TAG.json): each kernel's launches
# per form and reasons, and the launches in the lane, are printed at the end.
#   LIBS="a.so b.so" ROUNDS=12 N=64000 IT=1000 scripts/device/first-runs-rounds.sh
S=/tmp/fr-samples
. scripts/device/samples-env.sh ${PLAT:-NVIDIA}
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
A=$root/samples/particles/particles.dl
N=${N:-64000}
IT=${IT:-1000}
cd samples/particles
lines=$OUT/first-runs-rounds.lines
rm -f $lines
# One run tagged $1, environment in the rest: "tag launch_us total_ms" to $lines.
one() {
  local tag=$1; shift
  env "$@" $S/particles/particles -n $N -i $IT --platform ${PLAT:-NVIDIA} 2>/tmp/frr-e.txt >/tmp/frr-o.txt
  local l=$(awk '/^calltime: clEnqueueNDRange/ {print $5}' /tmp/frr-e.txt)
  local t=$(awk '/^total_ms/ {print $2}' /tmp/frr-o.txt)
  echo "$tag $l $t" >> $lines
  grep '^checksum' /tmp/frr-o.txt > /tmp/frr-sum.txt
  [ $tag = none ] && cp /tmp/frr-sum.txt /tmp/frr-sum-none.txt
  cmp -s /tmp/frr-sum.txt /tmp/frr-sum-none.txt || echo "$tag: checksum differs from the plain run's"
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in $(seq ${ROUNDS:-12}); do
  one none LD_PRELOAD=/tmp/calltime.so
  for l in ${LIBS:-.devcarry/rt/libclayout.so}; do
    c=/tmp/frr-cache; rm -rf $c
    for run in 1 2; do
      t=$(basename $l .so)-run$run
      one $t LD_PRELOAD="/tmp/calltime.so $root/$l" CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A CLAYOUT_STATS=$OUT/frr-$t.json
    done
  done
done
python3 - $lines $IT <<'PY'
import sys, statistics as st, collections
rounds, d = [], collections.defaultdict(list)
for l in open(sys.argv[1]):
    tag, launch, total = l.split()
    if tag == 'none':
        rounds.append((float(launch), float(total)))
    d[tag].append((float(launch), float(total), rounds[-1]))
print("| run | rounds | launch calls added per launch (us), median | total against the round's plain run, median |")
for tag, v in d.items():
    if tag == 'none':
        continue
    # particles launches three kernels a step.
    per = [(l - n[0]) / (3 * int(sys.argv[2])) for l, t, n in v]
    rel = [100 * (t / n[1] - 1) for l, t, n in v]
    print(f"| {tag} | {len(v)} | {st.median(per):+.2f} | {st.median(rel):+.1f} % |")
PY
for f in $OUT/frr-*.json; do
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(sys.argv[1].split('frr-')[1], 'lane', d.get('launches_in_lane'), 'repeated', d['launches_repeated']); [print('   ', k, v['launches'], v['reasons']) for k, v in d['policy']['kernels'].items()]" $f
done
} 2>&1 | tee $OUT/first-runs-rounds.txt
