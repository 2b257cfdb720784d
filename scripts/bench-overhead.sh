#!/usr/bin/env bash
# What the shim adds per call: builds the release libclayout.so and bench/overhead.c, runs the
# benchmark without and with LD_PRELOAD (ROUNDS times each, alternating, keeping each call's
# best figure) and prints: call, ns/call without, ns/call with, ns added.
#   scripts/bench-overhead.sh [ROUNDS]      (default 3)
# Env: CLAYOUT_BENCH_SCALE=N divides the iteration counts (quick runs); CC picks the compiler.
# Targets: < 100 ns added per pure forward, < 300 ns per clSetKernelArg / clEnqueueNDRangeKernel.
# Not a test: timings depend on the machine and its load.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
scale=${CLAYOUT_BENCH_SCALE:-1}

cargo build --release --lib --quiet
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
target=${target:-${CARGO_TARGET_DIR:-target}}
lib="$target/release/libclayout.so"
[ -f "$lib" ] || { echo "bench-overhead: $lib not found" >&2; exit 1; }

work="$target/bench"
mkdir -p "$work"
${CC:-cc} -O2 -pthread -o "$work/overhead" bench/overhead.c -lOpenCL

# Keep the shim quiet and statistics off: only the interception itself is measured.
unset CLAYOUT_STATS CLAYOUT_LOG_FILE CLAYOUT_DISABLE
export CLAYOUT_LOG=off

: >"$work/without.txt"
: >"$work/with.txt"
for ((r = 1; r <= rounds; r++)); do
    env -u LD_PRELOAD "$work/overhead" "$scale" >>"$work/without.txt"
    LD_PRELOAD="$lib" "$work/overhead" "$scale" >>"$work/with.txt"
done

echo "shim: $lib"
echo "best of $rounds rounds (each the best of several repetitions); ns per call"
awk '
    FNR == NR { if (!($1 in a) || $2 < a[$1]) a[$1] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } next }
    { if (!($1 in b) || $2 < b[$1]) b[$1] = $2 }
    END {
        printf "%-30s %14s %14s %10s\n", "call", "without shim", "with shim", "added"
        for (i = 1; i <= n; i++) {
            k = order[i]
            printf "%-30s %14.1f %14.1f %10.1f\n", k, a[k], b[k], b[k] - a[k]
        }
    }
' "$work/without.txt" "$work/with.txt"
