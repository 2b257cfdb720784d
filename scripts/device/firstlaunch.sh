#!/usr/bin/env bash
# On the GPU machine: where blackscholes' fixed first-launch cost under clayout comes from
# (docs/results.md). Part 1, no clayout: bench/firstlaunch.c plain (-) and after pieces of what
# clayout does after a build (P: a second program and its probe kernel run on a queue of its
# own; k: the same, kept alive; C: k plus a third program, unlaunched). Part 2: the sample with
# one iteration without clayout, with the DL runtime only (CLAYOUT_REWRITE=0), under auto and
# under never. Part 3: bench/firstlaunch.c under clayout, each launch's enqueue call timed
# apart from its completion. Then one auto run's debug log and statistics. Needs the release
# library, headers and link-time loader in .devcarry/rt. Writes $OUT/firstlaunch.txt.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}
CC="gcc -I$root/.devcarry/rt/include -L$root/.devcarry/rt/lib"
lib=$(readlink -f .devcarry/rt/libclayout.so)
export SAMPLE_PLATFORM=${SAMPLE_PLATFORM:-NVIDIA} CLAYOUT_CACHE_DIR=/tmp/fl-cache
$CC -O2 -Wno-deprecated-declarations -Wno-unused-function -o /tmp/firstlaunch bench/firstlaunch.c -lOpenCL -lm || exit 1
make -s -C samples OUT=/tmp/fl-samples CC="$CC" >/dev/null || exit 1
bin=/tmp/fl-samples/blackscholes/blackscholes
A=samples/blackscholes/blackscholes.dl
N=${N:-33554432}
{
    echo "== part 1: MODE first_ms second_ms (no clayout)"
    for rep in 1 2 3 4 5; do for m in - P k C; do /tmp/firstlaunch $m $N; done; done
    echo "== part 2: blackscholes -i 1, kernel_ms"
    CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -i 30 -n $N >/dev/null
    run() { env "$@" $bin -i 1 -n $N | grep kernel_ms | cut -d' ' -f2; }
    for rep in 1 2 3 4 5; do
        echo "plain $(run X=1) norewrite $(run CLAYOUT_REWRITE=0 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) auto $(run CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib) never $(run CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib)"
    done
    echo "== part 3: part 1's program, no extra work, under clayout (annotated through the side file)"
    for warm in 1 2 3; do CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib /tmp/firstlaunch - $N; CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib /tmp/firstlaunch - $N; done >/dev/null
    for rep in 1 2 3 4 5; do
        echo "disable $(CLAYOUT_DISABLE=1 LD_PRELOAD=$lib /tmp/firstlaunch - $N) norewrite $(CLAYOUT_REWRITE=0 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib /tmp/firstlaunch - $N) auto $(CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib /tmp/firstlaunch - $N) never $(CLAYOUT_POLICY=never CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib /tmp/firstlaunch - $N)"
    done
    echo "== one auto run with the debug log"
    CLAYOUT_LOG=debug CLAYOUT_STATS=1 CLAYOUT_ANNOTATIONS=$A LD_PRELOAD=$lib $bin -i 1 -n $N 2>&1 | grep -v "^clayout: trace" | tail -60
} 2>&1 | tee "$OUT/firstlaunch.txt"
