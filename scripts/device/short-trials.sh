#!/usr/bin/env bash
# On the GPU machine (issue 17): where short runs at a small size spend what clayout adds, on a
# cache primed by the stress sequence's history (scripts/policy-stress.sh: 100 launches at
# 262,144 particles, 2 at 64,000, 30, 1, 1000, 8). Diagnostics for docs/cost-model.md,
# "Timings the model can do without"; the carried release library ($lib, LIB=path). MODE:
#   calls   8- and 1-launch runs at 64,000 without clayout, CLAYOUT_REWRITE=0, auto (also with
#           CUDA_MODULE_LOADING=EAGER) and never, each OpenCL call timed (bench/calltime.c)
#   log     the debug log and statistics of an 8-, a 1- and an 8-launch run under auto
#   steady  400 launches at 64,000 and 262,144: without clayout, CLAYOUT_REWRITE=0, and never on
#           a queue that profiles (CLAYOUT_PROFILE=1), with the forms' measured times
#   lbm     lbm's sequence (64^3 and 128^3, auto then always on one cache) with its times records
# Writes $OUT/short-trials-MODE.txt.
#   scripts/device/short-trials.sh MODE [PLATFORM]
set -uo pipefail
mode=${1:?MODE: calls, log, steady or lbm}
shift
S=/tmp/st-samples
. scripts/device/samples-env.sh "$@"
$CC -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl || exit 1
k() { awk '/^kernel_ms/ {k=$2} /^total_ms/ {t=$2} END {print "kernel", k, "total", t}'; }
A=$root/samples/particles/particles.dl
# The particles sample under clayout on cache $1, the rest its environment and arguments.
parts() { local c=$1; shift; env CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$A "$@"; }
prime() { prime_cache $1 particles $lib "262144:100 64000:2 262144:30 64000:1 262144:1000 64000:8"; }
calls() {
    local b=$S/particles/particles
    one() { local tag=$1; shift; env "$@" $b -n 64000 -i $IT --platform $platform 2>/tmp/st-err >/tmp/st-out
        echo "$tag $(awk '/^total_ms/ {print $2}' /tmp/st-out) $(grep -h 'NDRange\|ReadBuffer' /tmp/st-err | tr -s ' ' | tr '\n' ' ')"; }
    for IT in 8 1; do
        echo "== -i $IT: name total_ms, then clEnqueueNDRangeKernel and clEnqueueReadBuffer (calls, us, largest)"
        prime /tmp/st-auto; prime /tmp/st-eager; prime /tmp/st-never
        CLAYOUT_POLICY=never prime /tmp/st-never2
        for r in 1 2 3 4; do
            one none LD_PRELOAD=/tmp/calltime.so
            one norewrite LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_REWRITE=0 CLAYOUT_CACHE_DIR=/tmp/st-never CLAYOUT_ANNOTATIONS=$A
            one auto LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_CACHE_DIR=/tmp/st-auto CLAYOUT_ANNOTATIONS=$A
            one auto-eager LD_PRELOAD="/tmp/calltime.so $lib" CUDA_MODULE_LOADING=EAGER CLAYOUT_CACHE_DIR=/tmp/st-eager CLAYOUT_ANNOTATIONS=$A
            one never LD_PRELOAD="/tmp/calltime.so $lib" CLAYOUT_POLICY=never CLAYOUT_CACHE_DIR=/tmp/st-never2 CLAYOUT_ANNOTATIONS=$A
        done
    done
}
log() {
    prime /tmp/st-log
    for it in 8 1 8; do
        echo "=============== -i $it"
        parts /tmp/st-log CLAYOUT_STATS=1 CLAYOUT_LOG=debug LD_PRELOAD=$lib $S/particles/particles -n 64000 -i $it --platform $platform 2>&1 | cut -c1-400
    done
}
steady() {
    for n in 64000 262144; do
        rm -rf /tmp/st-n$n /tmp/st-w$n
        for r in 1 2 3 4; do
            echo "n $n round $r: none $($S/particles/particles -n $n -i 400 --platform $platform 2>/dev/null | k)" \
                "| norewrite $(parts /tmp/st-w$n CLAYOUT_REWRITE=0 LD_PRELOAD=$lib $S/particles/particles -n $n -i 400 --platform $platform 2>/dev/null | k)" \
                "| never+profile $(parts /tmp/st-n$n CLAYOUT_BUILD_AFTER=wait CLAYOUT_PROFILE=1 CLAYOUT_POLICY=never CLAYOUT_STATS=/tmp/st-s.json LD_PRELOAD=$lib $S/particles/particles -n $n -i 400 --platform $platform 2>/dev/null | k)"
            python3 -c "
import json
d = json.load(open('/tmp/st-s.json'))
for name, k in d['policy']['kernels'].items(): print('   ', name, k.get('launches'), k.get('measured_ms'))"
        done
    done
}
lbm() {
    local c=/tmp/st-lbm i=0 s it
    rm -rf $c
    cd samples/lbm
    for p in 64:1 128:100 64:2 128:30 64:1 128:1000; do
        i=$((i + 1)); s=${p%%:*}; it=${p##*:}
        echo "== run $i: -x $s -y $s -z $s -i $it"
        for pol in auto always; do
            echo "$pol $(CLAYOUT_POLICY=$pol CLAYOUT_LOG=debug CLAYOUT_LOG_FILE=/tmp/st-lbm-$pol$i CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$root/samples/lbm/lbm.dl LD_PRELOAD=$lib $S/lbm/lbm -x $s -y $s -z $s -i $it --platform $platform 2>/dev/null | k)"
            grep 'runs \|times from\|measured\|tile' /tmp/st-lbm-$pol$i | cut -c1-200 | head -20
        done
        for f in $c/times-*.bin; do echo "$f: $(strings $f | tail -1 | cut -c1-900)"; done
    done
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    $mode
} 2>&1 | tee "$OUT/short-trials-$mode.txt"
