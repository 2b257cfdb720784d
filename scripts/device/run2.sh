#!/usr/bin/env bash
# Run 2 of the stress sequence, isolated: a fresh cache taught by one run of one launch at
# 64,000, then 100 launches at 262,144, under auto with the builds as they are and with them
# held a minute (CLAYOUT_BUILD_AFTER=60000) and under CLAYOUT_REWRITE=0, against no clayout;
# total_ms, one line per round (docs/results.md, "A short run, call by call").
#   REPS=9 scripts/device/run2.sh [PLATFORM]
set -uo pipefail
S=/tmp/r2-samples
. scripts/device/samples-env.sh
bin=$S/particles/particles
A=$root/samples/particles/particles.dl
# t ENV... -- ARGS...: one run's total_ms.
t() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    (cd samples/particles && env "${envs[@]}" $bin "$@" --platform $platform 2>/dev/null | awk '/^total_ms/ {print $2}')
}
for r in $(seq ${REPS:-7}); do
    n=$(t X=1 -- -n 262144 -i 100)
    rm -rf /tmp/r2c; t CLAYOUT_CACHE_DIR=/tmp/r2c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -- -n 64000 -i 1 >/dev/null
    a=$(t CLAYOUT_CACHE_DIR=/tmp/r2c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -- -n 262144 -i 100)
    rm -rf /tmp/r2c; t CLAYOUT_CACHE_DIR=/tmp/r2c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -- -n 64000 -i 1 >/dev/null
    h=$(t CLAYOUT_BUILD_AFTER=60000 CLAYOUT_CACHE_DIR=/tmp/r2c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -- -n 262144 -i 100)
    rm -rf /tmp/r2c; t CLAYOUT_CACHE_DIR=/tmp/r2c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -- -n 64000 -i 1 >/dev/null
    w=$(t CLAYOUT_REWRITE=0 CLAYOUT_CACHE_DIR=/tmp/r2c CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib -- -n 262144 -i 100)
    echo "none $n auto $a held $h norewrite $w"
done
