#!/usr/bin/env bash
# Races between the application's threads that clayout meets only now and then: a CI run once
# hung in one of dl_threads' runs in some fifteen (a launch held its kernel table's lock while
# a lane's opening read it again, behind another thread's release). Here dl_threads runs in each
# of its modes, under each policy, TIMES times over, and its output is compared with the plain
# run's; a run still going after LIMIT seconds counts as hung: its threads' stacks are written
# (gdb, when installed) beside its log, and the script fails. Odd rounds start from an empty
# cache (clayout's builds and first measurements race the threads), even ones reuse the cache
# the last round left (the decisions it made: staged copies, repeats, lanes).
#   scripts/threads-stress.sh [TIMES] [LIB]
# LIB: a build with the `fault-injection` feature (`quick-build` counts every application build
# as answered from a driver cache, so that `auto` weighs the copies as on NVIDIA); built here if
# not given. THREADS (8) and ROUNDS (20) size each run; LIMIT (60) is in seconds; CL_FLAGS adds
# compiler flags (the GPU machine's headers and loader: -I.devcarry/rt/include -L.devcarry/rt/lib);
# MODES picks dl_threads' modes (all six by default); FAULT adds fault sites (conversion-back: every
# conversion back to the host's layout goes through the host fallback);
# CL_PLATFORM_NAME picks the platform (tests/include/pick_platform.h).
set -uo pipefail
cd "$(dirname "$0")/.."
times=${1:-10}
lib=${2:-}
if [ -z "$lib" ]; then
    CARGO_TARGET_DIR=target/fault-injection cargo build --lib --quiet --features fault-injection || exit 1
    lib=$PWD/target/fault-injection/debug/libclayout.so
fi
threads=${THREADS:-8} rounds=${ROUNDS:-20} limit=${LIMIT:-60}
work=${WORK:-/tmp/clayout-threads-stress}
rm -rf "$work" && mkdir -p "$work"
bin=$work/dl_threads
gcc -O2 -Wall ${CL_FLAGS:-} -o "$bin" tests/dl/dl_threads.c -Itests/include -lOpenCL -lpthread || exit 1
kernels=$PWD/tests/dl/particles_aos.cl
configs=("always" "never" "auto:wait" "auto:auto")
read -r -a modes <<<"${MODES:-gather repeat late build churn callbacks}"
failed=0 runs=0
for mode in "${modes[@]}"; do
    "$bin" "$kernels" "$threads" "$rounds" "$mode" >"$work/plain-$mode" 2>&1 || {
        echo "plain $mode failed"
        exit 1
    }
done
for i in $(seq 1 "$times"); do
    for mode in "${modes[@]}"; do
        for config in "${configs[@]}"; do
            policy=${config%%:*} after=${config#*:}
            [ "$after" = "$config" ] && after=wait
            cache=$work/cache-$mode-$policy-$after
            [ $((i % 2)) = 1 ] && rm -rf "$cache"
            mkdir -p "$cache"
            log=$work/run-$i-$mode-$policy-$after
            env LD_PRELOAD="$lib" CLAYOUT_ANNOTATIONS="$PWD/tests/dl/particles.dl" CLAYOUT_POLICY="$policy" \
                CLAYOUT_BUILD_AFTER="$after" CLAYOUT_STAGED=1 CLAYOUT_FAULT=quick-build${FAULT:+,$FAULT} CLAYOUT_CACHE_DIR="$cache" \
                "$bin" "$kernels" "$threads" "$rounds" "$mode" >"$log.out" 2>"$log.err" &
            pid=$!
            waited=0
            while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((limit * 10)) ]; do
                sleep 0.1
                waited=$((waited + 1))
            done
            runs=$((runs + 1))
            if kill -0 "$pid" 2>/dev/null; then
                echo "HUNG: round $i, $mode under $policy (build after $after): stacks in $log.stacks"
                command -v gdb >/dev/null && gdb -p "$pid" -batch -ex "thread apply all bt" >"$log.stacks" 2>&1
                kill -9 "$pid"
                wait "$pid" 2>/dev/null
                failed=$((failed + 1))
                continue
            fi
            wait "$pid"
            rc=$?
            if [ "$rc" != 0 ] || ! cmp -s "$log.out" "$work/plain-$mode"; then
                echo "DIFFERS: round $i, $mode under $policy (build after $after): exit $rc, $log.out"
                failed=$((failed + 1))
            fi
        done
    done
done
echo "$runs runs of dl_threads ($threads threads, $rounds rounds; ${modes[*]}; ${configs[*]}): $failed failed"
[ "$failed" = 0 ]
