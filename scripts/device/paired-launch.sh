#!/usr/bin/env bash
# On the GPU machine (issue 17): what clayout adds to a launch call where the launch repeats the
# last (bench/firstlaunch.c, FIRSTLAUNCH_PAIRED): in one process, pairs of blocks of 64 launch
# calls of blackscholes' kernel over N options (default 4096), one block through clayout and one
# through the loader's own symbol, so that the host's drift is the same on both sides of a pair.
# For each library of LIBS: CLAYOUT_DISABLE=1, CLAYOUT_REWRITE=0 (the DL runtime), and each
# configuration of CONFIGS (default "never auto": a policy, with VAR=VALUE after a colon for one
# more variable, e.g. never:CLAYOUT_STAGED=0) on its own cache primed with the builds waited
# for; without clayout as the control (its difference is the timer's noise). The caches may
# learn different forms: the statistics at the end say which ran. The configuration `declined`
# is `auto` on a cache primed with the builds waited for whose program's record then makes the
# copies' load too dear to repay (a run left untracked, its launches as written through the
# express lane once they repeat: docs/cost-model.md, "declined runs through the express lane").
# REPS rounds (default 5),
# PAIRS pairs per run (default 2000). Then, without clayout, what the driver's call costs more
# for the ASTA copy of the kernel (dumped by the first library) than for the kernel as
# written (FIRSTLAUNCH_COPY), REPS runs. Writes $OUT/paired-launch.txt.
#   LIBS=".devcarry/rt/base.so .devcarry/rt/libclayout.so" REPS=5 scripts/device/paired-launch.sh [PLATFORM]
set -uo pipefail
S=/tmp/pa-samples
. scripts/device/samples-env.sh
$CC -O2 -Wno-deprecated-declarations -Wno-unused-function -o /tmp/firstlaunch bench/firstlaunch.c -lOpenCL -lm -ldl || exit 1
libs=${LIBS:-.devcarry/rt/libclayout.so}
A=$root/samples/blackscholes/blackscholes.dl
N=${N:-4096}
export SAMPLE_PLATFORM=$platform CLAYOUT_BUILD_AFTER=wait CLAYOUT_ANNOTATIONS=$A
added() { env "$@" FIRSTLAUNCH_PAIRED=${PAIRS:-2000} /tmp/firstlaunch - $N 2>/dev/null | awk '/^paired:/ {print $16}'; }
configs=${CONFIGS:-never auto}
# The environment of configuration $1 with library $2: its policy, its variable, its cache.
cenv() {
    local c=$1 b=$(basename $2 .so) extra=X=1 policy=${1%%:*}
    case $c in *:*) extra=${c#*:} ;; declined) policy=auto extra=CLAYOUT_BUILD_AFTER=auto ;; esac
    echo "LD_PRELOAD=$(readlink -f $2) CLAYOUT_POLICY=$policy $extra CLAYOUT_CACHE_DIR=/tmp/pa-cache-${c//[:=]/-}-$b"
}
# Every `worth` record in cache $1 rewritten so that no run repays the copies' load.
decline() {
    python3 - "$1" <<'PY'
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/worth-*"):
    raw = open(path, "rb").read()
    nl = raw.index(b"\n")
    head, payload = raw[:nl].decode().split(" ", 4), json.loads(raw[nl + 1:])
    payload["load_ns"] = 1e15
    body = json.dumps(payload, separators=(",", ":")).encode()
    h = 0xcbf29ce484222325
    for byte in body:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    open(path, "wb").write(f"{head[0]} {head[1]} {len(body)} {h:016x} {head[4]}".encode() + b"\n" + body)
PY
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for l in $libs; do
        for c in $configs; do
            for w in 1 2 3; do env $(cenv $c $l) CLAYOUT_BUILD_AFTER=wait FIRSTLAUNCH_LOOP=256 /tmp/firstlaunch - $N >/dev/null 2>&1; done
            if [ $c = declined ]; then
                # A run whose build is not waited for writes the program's record of worth.
                env $(cenv $c $l) FIRSTLAUNCH_LOOP=256 /tmp/firstlaunch - $N >/dev/null 2>&1
                decline /tmp/pa-cache-declined-$(basename $l .so)
            fi
        done
    done
    echo "== us added per launch call (median of ${PAIRS:-2000} pairs of 64), N=$N"
    for r in $(seq ${REPS:-5}); do
        line="none $(added X=1)"
        for l in $libs; do
            L=$(readlink -f $l); b=$(basename $l .so)
            line="$line | $b disable $(added LD_PRELOAD=$L CLAYOUT_DISABLE=1) rewrite0 $(added LD_PRELOAD=$L CLAYOUT_REWRITE=0)"
            for c in $configs; do line="$line $c $(added $(cenv $c $l))"; done
        done
        echo "$line"
    done
    echo "== one run each with the statistics (launches repeated)"
    for l in $libs; do
        for c in $configs rewrite0; do
            b=$(basename $l .so)
            e=$(cenv $c $l); [ $c = rewrite0 ] && e="LD_PRELOAD=$(readlink -f $l) CLAYOUT_REWRITE=0"
            env $e CLAYOUT_STATS=/tmp/pa.json FIRSTLAUNCH_PAIRED=200 /tmp/firstlaunch - $N >/dev/null 2>&1
            python3 -c "import json; d=json.load(open('/tmp/pa.json')); print('$b $c', 'repeated', d['launches_repeated'], d.get('launches_repeated_without_copies', '-'), 'lane', d.get('launches_in_lane', '-'), {k: v['launches'] for k, v in d['policy']['kernels'].items()})"
        done
    done
    echo "== without clayout: the ASTA copy's launch call against the kernel's (us, median of pairs)"
    d=/tmp/pa-dump; rm -rf $d
    env $(cenv always ${libs%% *}) CLAYOUT_CACHE_DIR=off CLAYOUT_DUMP_DIR=$d FIRSTLAUNCH_LOOP=4 /tmp/firstlaunch - $N >/dev/null 2>&1
    copy=$(ls $d/*.cl 2>/dev/null | head -1)
    for r in $(seq ${REPS:-5}); do
        [ -n "$copy" ] && echo "copy $(FIRSTLAUNCH_COPY=$copy added X=1)"
    done
} 2>&1 | tee "$OUT/paired-launch.txt"
