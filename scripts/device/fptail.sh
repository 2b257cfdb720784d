#!/usr/bin/env bash
# On the GPU machine (the device tool): floating-point corpus programs at sizes that are and are
# not whole tiles, plain and under clayout (CLAYOUT_POLICY=always). Where the device's compiler
# may fuse floating-point operations across statements (NVIDIA), a launch on buffers that are
# not whole tiles must run the kernel as written (docs/reliability.md), and every run must print
# the plain run's bytes. No cargo: the corpus driver is built here with gcc, clayout is the
# release libclayout.so carried in $CARRY (with the OpenCL headers and a link-time libOpenCL.so,
# as scripts/device/corpus.sh).
#   scripts/device/fptail.sh [PLATFORM]        (default NVIDIA; "Portable" runs it on PoCL)
# Environment: ENTRIES (corpus entries with one `let N`), SIZES (values of N), OUT, OPTIONS
# (build options added to every entry's, e.g. -cl-mad-enable to see the rule on PoCL).
# Per run one line: entry, N, whether N is a multiple of 32/64/128, SAME or DIFF against the
# plain run, and the launches of rewritten kernels in ASTA and as written (from CLAYOUT_STATS=1);
# then the reason clayout gave, if it ran a kernel as written. Writes $OUT/fptail.txt; exits 1
# on any DIFF or failed run.
set -uo pipefail
platform=${1:-NVIDIA}
CARRY=${CARRY:-.devcarry/rt}
OUT=${OUT:-/tmp/out}
ENTRIES=${ENTRIES:-"hydro_euler_flat particles_float3 pso_swarm real_macro_double blackscholes_elem"}
# 65536 and 131072 are whole tiles of 32, 64 and 128; the others are whole tiles of none.
SIZES=${SIZES:-"65536 131072 65537 100003 131071"}
root=$(pwd)
mkdir -p "$OUT"
lib=$(readlink -f "$CARRY/libclayout.so")
[ -f "$lib" ] || { echo "fptail: $CARRY/libclayout.so not found" >&2; exit 1; }
work=$(mktemp -d /tmp/fptail.XXXXXX)
gcc -O2 -Wall -pthread -Wno-deprecated-declarations -I"$root/$CARRY/include" -L"$root/$CARRY/lib" \
    -o "$work/driver" "$root/tests/corpus/driver.c" -lOpenCL -lm || { echo "fptail: cannot build the driver" >&2; exit 1; }
# A copy of the corpus: the specs resized next to their sources (some name ../other/file.cl).
cp -r "$root/tests/corpus" "$work/corpus"

bad=0
{
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "== platform $platform, clayout $lib${OPTIONS:+, added options $OPTIONS}"
    printf '%-20s %7s %-12s %-5s %s\n' entry N "whole tiles" bytes "launches of rewritten kernels"
    for e in $ENTRIES; do
        dir=$work/corpus/$e
        [ -f "$dir/$e.spec" ] || { echo "$e: no such corpus entry"; bad=1; continue; }
        for n in $SIZES; do
            spec=$dir/$e-fptail-$n.spec
            # The work-group size is left to the implementation: N need not be its multiple.
            sed -e "s/^let N = .*/let N = $n/" -e '/^[[:space:]]*local[[:space:]]/d' "$dir/$e.spec" >"$spec"
            if [ -n "${OPTIONS:-}" ]; then
                if grep -q '^options ' "$spec"; then
                    sed -i "s/^options .*/& $OPTIONS/" "$spec"
                else
                    sed -i "0,/^source /s//options $OPTIONS\nsource /" "$spec"
                fi
            fi
            run=$work/$e-$n
            mkdir -p "$run"
            env -u LD_PRELOAD "$work/driver" --platform "$platform" "$spec" >"$run/plain.out" 2>"$run/plain.err"
            prc=$?
            envs=(LD_PRELOAD="$lib" CLAYOUT_POLICY=always CLAYOUT_STATS=1 CLAYOUT_LOG=info
                  CLAYOUT_CACHE_DIR="$work/cache")
            [ -f "$dir/$e.dl" ] && envs+=(CLAYOUT_ANNOTATIONS="$dir/$e.dl")
            env "${envs[@]}" "$work/driver" --platform "$platform" "$spec" >"$run/shim.out" 2>"$run/shim.err"
            src=$?
            whole=
            for t in 32 64 128; do [ $((n % t)) = 0 ] && whole="$whole$t,"; done
            whole=${whole%,}
            if [ $prc != 0 ] || [ $src != 0 ]; then
                verdict="FAIL(plain $prc, clayout $src)"
                bad=1
            elif cmp -s "$run/plain.out" "$run/shim.out"; then
                verdict=SAME
            else
                verdict=DIFF
                bad=1
            fi
            form=$(grep -o 'launches of rewritten kernels: [0-9]* in ASTA, [0-9]* as written' "$run/shim.err" |
                sed 's/launches of rewritten kernels: //')
            printf '%-20s %7s %-12s %-5s %s\n' "$e" "$n" "${whole:-none}" "$verdict" "${form:-no launch of a rewritten kernel}"
            grep -h 'clayout: info: kernel .*: it runs \|clayout: info: kernel .*not a multiple of the tile' "$run/shim.err" |
                sed 's/^/      /' | head -4
            if [ "$verdict" = DIFF ]; then
                diff "$run/plain.out" "$run/shim.out" | head -6 | sed 's/^/      /'
            fi
        done
    done
    [ $bad = 0 ] && echo "fptail: every run printed the plain run's bytes" || echo "fptail: PROBLEMS above"
} 2>&1 | tee "$OUT/fptail.txt"
grep -q "PROBLEMS above" "$OUT/fptail.txt" && exit 1
exit 0
