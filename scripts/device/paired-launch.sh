#!/usr/bin/env bash
# On the GPU machine (issue 17): what clayout adds to a launch call where the launch repeats the
# last (bench/firstlaunch.c, FIRSTLAUNCH_PAIRED): in one process, pairs of blocks of 64 launch
# calls of blackscholes' kernel over N options (default 4096), one block through clayout and one
# through the loader's own symbol, so that the host's drift is the same on both sides of a pair.
# For each library of LIBS: CLAYOUT_DISABLE=1, CLAYOUT_REWRITE=0 (the DL runtime), `never` and
# `auto` on caches primed with the builds waited for; without clayout as the control (its
# difference is the timer's noise). REPS rounds (default 5), PAIRS pairs per run (default 2000).
# Writes $OUT/paired-launch.txt.
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
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for l in $libs; do
        for p in never auto; do
            for w in 1 2 3; do FIRSTLAUNCH_LOOP=256 LD_PRELOAD=$(readlink -f $l) CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=/tmp/pa-cache-$p-$(basename $l) /tmp/firstlaunch - $N >/dev/null 2>&1; done
        done
    done
    echo "== us added per launch call (median of ${PAIRS:-2000} pairs of 64), N=$N"
    for r in $(seq ${REPS:-5}); do
        line="none $(added X=1)"
        for l in $libs; do
            L=$(readlink -f $l); b=$(basename $l .so)
            line="$line | $b disable $(added LD_PRELOAD=$L CLAYOUT_DISABLE=1) rewrite0 $(added LD_PRELOAD=$L CLAYOUT_REWRITE=0)"
            for p in never auto; do line="$line $p $(added LD_PRELOAD=$L CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=/tmp/pa-cache-$p-$b.so)"; done
        done
        echo "$line"
    done
    echo "== one run each with the statistics (launches repeated)"
    for l in $libs; do
        for p in never auto; do
            L=$(readlink -f $l); b=$(basename $l .so)
            env LD_PRELOAD=$L CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=/tmp/pa-cache-$p-$b.so CLAYOUT_STATS=/tmp/pa.json FIRSTLAUNCH_PAIRED=200 /tmp/firstlaunch - $N >/dev/null 2>&1
            python3 -c "import json; d=json.load(open('/tmp/pa.json')); print('$b $p', 'repeated', d['launches_repeated'], {k: v['launches'] for k, v in d['policy']['kernels'].items()})"
        done
    done
} 2>&1 | tee "$OUT/paired-launch.txt"
