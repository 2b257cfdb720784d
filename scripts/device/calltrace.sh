#!/usr/bin/env bash
# On the GPU machine (issue 17): where a short run's time goes under clayout, call by call and
# thread by thread. Primes one clayout cache with the stress sequence's history (PRIME, as
# shortcalls.sh), then makes ROUNDS rounds of one run per configuration of CONFIGS, each run
# traced by bench/calltrace.c twice over (before libclayout.so: the application's calls; after
# it: what reaches the driver, clayout's threads included). A configuration is `none` (without
# clayout), `auto`, or NAME:VAR=value[,VAR=value] (auto with those settings; LIB=path there runs
# that build of clayout instead, on the same cache, e.g. `base:LIB=.devcarry/rt/base.so`; NONE=1
# runs without clayout, CPUS=list under `taskset -c list`, CPUS=l3 on the processors that share
# processor 0's last-level cache). REPRIME=1 primes the cache again before every run under clayout, so
# that each finds the same history (the run after PRIME, not after the rounds before it). Writes
# $OUT/calltrace.tgz (every run's traces and output, for scripts/calltrace-report.py) and, where
# the machine has python3, $OUT/calltrace.txt (the table of scripts/calltrace-report.py --table).
#   LIB=path ROUNDS=9 CONFIGS="none auto cold:CLAYOUT_WARM=0" PRIME="64000:1 262144:100" \
#     scripts/device/calltrace.sh [PLATFORM] [SAMPLE] [SIZE ARGS] [ITERS]
set -uo pipefail
S=/tmp/ct-samples
. scripts/device/samples-env.sh
sample=${2:-particles}
size=${3:--n 64000}
iters=${4:-2}
for side in app drv; do
    $CC -O2 ${CT_CFLAGS:-} -shared -fPIC -DCL_USE_DEPRECATED_OPENCL_1_1_APIS -DCL_USE_DEPRECATED_OPENCL_1_2_APIS -DSIDE="\"$side\"" \
        -o /tmp/ct-$side.so bench/calltrace.c -ldl -lpthread || exit 1
done
# CPUS=l3 in a configuration: the processors that share the last-level cache of processor 0
# (one core complex on an AMD EPYC); any other value is taskset's list as given.
cpus() {
    if [ "$1" = l3 ]; then
        cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list
    else
        echo "$1"
    fi
}
cache=/tmp/ct-cache
prime_cache $cache $sample $lib "${PRIME:-64000:1 262144:100 64000:2 262144:30 64000:1}"
A=$root/samples/$sample/$sample.dl
rm -rf /tmp/calltrace && mkdir -p /tmp/calltrace
for r in $(seq ${ROUNDS:-9}); do
    for c in ${CONFIGS:-none auto}; do
        name=${c%%:*} d=/tmp/calltrace/${c%%:*}-$r
        mkdir -p $d
        settings=() l=$lib pin=() none=$([ "$name" = none ] && echo 1)
        [[ $c == *:* ]] && IFS=, read -ra settings <<<"${c#*:}"
        for i in "${!settings[@]}"; do
            case ${settings[$i]} in
                LIB=*) l=$(realpath "${settings[$i]#LIB=}") ;;
                NONE=1) none=1 ;;
                CPUS=*) pin=(taskset -c "$(cpus "${settings[$i]#CPUS=}")") ;;
                *) continue ;;
            esac
            unset "settings[$i]"
        done
        if [ -n "$none" ]; then
            (cd samples/$sample && "${pin[@]}" env CALLTRACE_DIR=$d LD_PRELOAD="/tmp/ct-app.so /tmp/ct-drv.so" \
                $S/$sample/$sample $size -i $iters --platform $platform >$d/out.txt 2>&1)
        else
            [ "${REPRIME:-0}" = 1 ] && prime_cache $cache $sample $l "${PRIME:-64000:1 262144:100 64000:2 262144:30 64000:1}"
            (cd samples/$sample && "${pin[@]}" env CALLTRACE_DIR=$d CLAYOUT_CACHE_DIR=$cache CLAYOUT_ANNOTATIONS=$A "${settings[@]}" \
                LD_PRELOAD="/tmp/ct-app.so $l /tmp/ct-drv.so" $S/$sample/$sample $size -i $iters --platform $platform >$d/out.txt 2>&1)
        fi
    done
done
(cd samples/$sample && CLAYOUT_LOG=debug CLAYOUT_CACHE_DIR=$cache CLAYOUT_ANNOTATIONS=$A LD_PRELOAD="$lib" \
    $S/$sample/$sample $size -i $iters --platform $platform >/tmp/calltrace/debug.txt 2>&1)
tar -C /tmp -czf $OUT/calltrace${TAG:+-$TAG}.tgz calltrace
if command -v python3 >/dev/null; then
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
      echo "$sample $size -i $iters, ${ROUNDS:-9} rounds of: ${CONFIGS:-none auto}; $(basename $lib)"
      python3 scripts/calltrace-report.py --table /tmp/calltrace; } | tee $OUT/calltrace${TAG:+-$TAG}.txt
fi
