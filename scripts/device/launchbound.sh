#!/usr/bin/env bash
# On the GPU machine: clayout's cost per launch where launches are short (issue 17, launch-bound
# programs): particles at 262,144 particles (3 kernels of about 9 us each on an H100), 1000
# iterations, kernel_ms without clayout and, for each library in LIBS, under always and auto
# (on a cache primed by two runs), REPS runs each, interleaved. Writes $OUT/launchbound.txt.
# Each auto run keeps its statistics ($OUT/lb-auto-LIB-REP.json); each kernel's launches per
# form are printed after the times.
#   LIBS=".devcarry/rt/libclayout.so .devcarry/rt/other.so" scripts/device/launchbound.sh [PLATFORM]
set -uo pipefail
S=/tmp/lb-samples
. scripts/device/samples-env.sh
libs=${LIBS:-.devcarry/rt/libclayout.so}
run() {
    (cd samples/particles && CLAYOUT_ANNOTATIONS=particles.dl "$@" $S/particles/particles -n 262144 -i ${ITERS:-1000} \
        --platform $platform 2>/dev/null | awk '/^kernel_ms/ {print $2}')
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    for l in $libs; do
        for p in always auto; do
            for w in 1 2; do run env LD_PRELOAD=$(readlink -f $l) CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=/tmp/lb-cache-$p-$(basename $l) >/dev/null; done
        done
    done
    for r in $(seq ${REPS:-3}); do
        line="none $(run env)"
        for l in $libs; do
            for p in always auto; do
                st=X=1; [ $p = auto ] && st=CLAYOUT_STATS=$OUT/lb-auto-$(basename $l .so)-$r.json
                line="$line | $(basename $l) $p $(run env LD_PRELOAD=$(readlink -f $l) CLAYOUT_POLICY=$p CLAYOUT_CACHE_DIR=/tmp/lb-cache-$p-$(basename $l) $st)"
            done
        done
        echo "$line"
    done
    for f in $OUT/lb-auto-*.json; do
        python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(sys.argv[1].split('lb-auto-')[1], {k: v['launches'] for k, v in d['policy']['kernels'].items()})" $f
    done
} 2>&1 | tee "$OUT/launchbound.txt"
