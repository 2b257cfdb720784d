#!/usr/bin/env bash
# On the GPU machine (the device tool): inferred annotations against the samples' side files.
# For each sample at its large size (as scripts/run-samples.sh --size large), at 30 and 100
# iterations: the plain program; under clayout with the sample's side file (CLAYOUT_ANNOTATIONS=
# samples/NAME/NAME.dl) under CLAYOUT_POLICY=always and under the default policy, auto; and with
# no side file at all, CLAYOUT_ANNOTATIONS=auto (annotations inferred from the kernel source),
# under the default policy and under always. Prints a table of kernel_ms, each variant's speedup
# over plain and the ratio of the inferred speedup to the side file's (same policy), checks that
# every run prints the plain run's checksum, and writes $OUT/auto-annotations.txt (the table),
# $OUT/auto-annotations.log (everything) and $OUT/auto-annotations-stats.tgz (clayout's statistics
# of every run). Needs a release libclayout.so, the OpenCL headers and a link-time libOpenCL.so
# carried in $CARRY (as scripts/device/samples.sh); no cargo. About 3 minutes on an H100.
#   scripts/device/auto-annotations.sh PLATFORM        (e.g. NVIDIA)
# REPEAT=N runs each timed variant N times and keeps the fastest (default 1). SIZE=small with
# no $CARRY: a quick local check on PoCL with the checkout's target/release/libclayout.so.
set -uo pipefail
platform=${1:?usage: auto-annotations.sh PLATFORM}
CARRY=${CARRY:-.devcarry/rt}
OUT=${OUT:-/tmp/out}
REPEAT=${REPEAT:-1}
root=$(pwd)
mkdir -p "$OUT"
if [ -d "$CARRY" ]; then
    export CC="gcc -I$root/$CARRY/include -L$root/$CARRY/lib"
    lib=$(readlink -f "$CARRY/libclayout.so")
else
    # A local check (SIZE=small on PoCL): the checkout's own release build.
    lib=$(readlink -f "${CLAYOUT_LIB:-target/release/libclayout.so}")
fi
bin=/tmp/auto-annotations/samples
stats=/tmp/auto-annotations/stats
rm -rf /tmp/auto-annotations
mkdir -p "$bin" "$stats"
export CLAYOUT_CACHE_DIR=/tmp/auto-annotations/cache

size_of() {
    [ "${SIZE:-large}" = small ] && case $1 in
        blackscholes) echo "-n 100000"; return ;;
        particles) echo "-n 100000"; return ;;
        lbm) echo "-x 32 -y 32 -z 16"; return ;;
        spmv-ell) echo "-n 50000 -k 32"; return ;;
    esac
    case $1 in
        blackscholes) echo "-n 33554432" ;;
        particles) echo "-n 16777216" ;;
        lbm) echo "-x 192 -y 192 -z 128" ;;
        spmv-ell) echo "-n 4194304 -k 32" ;;
    esac
}

# one SAMPLE ITERS VARIANT: runs it (REPEAT times, the fastest kept) and prints
# "checksum kernel_ms"; clayout's statistics go to $stats.
one() {
    local s=$1 it=$2 v=$3 best= sum= out
    local env=()
    case $v in
        plain) ;;
        side-always) env=(CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS="$root/samples/$s/$s.dl") ;;
        side-auto) env=(CLAYOUT_ANNOTATIONS="$root/samples/$s/$s.dl") ;;
        inferred-always) env=(CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS=auto) ;;
        inferred-auto) env=(CLAYOUT_ANNOTATIONS=auto) ;;
    esac
    [ "$v" = plain ] || env+=(LD_PRELOAD="$lib" CLAYOUT_STATS="$stats/$s-$it-$v.json")
    for _ in $(seq "$REPEAT"); do
        # shellcheck disable=SC2046
        out=$(timeout 300 env "${env[@]}" "$bin/$s/$s" $(size_of "$s") -i "$it" --platform "$platform" 2>>"$stats/$s-$it-$v.err")
        local c k
        c=$(awk '/^checksum:/ {print $2}' <<<"$out")
        k=$(awk '/^kernel_ms:/ {print $2}' <<<"$out")
        [ -n "$c" ] || { echo "FAILED -"; return; }
        if [ -n "$sum" ] && [ "$c" != "$sum" ]; then sum=VARIES; else sum=$c; fi
        if [ -z "$best" ] || awk -v a="$k" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$k; fi
    done
    echo "$sum $best"
}

variants="plain side-always side-auto inferred-always inferred-auto"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
    make -s -C samples OUT="$bin" >/dev/null || { echo "make -C samples failed"; exit 1; }
    start=$(date +%s)
    # The always variants build the same rewritten copies as the auto ones (kept in clayout's
    # cache); the inferred run also records spmv-ell's stride K, so that later runs prepare its
    # copy at build time as the side file's do.
    echo "== warm-up: side file and inferred under auto, 30 iterations (caches; the cost model times its forms)"
    for s in blackscholes lbm particles spmv-ell; do
        for v in side-auto inferred-auto; do one "$s" 30 "$v" >/dev/null; done
    done
    echo "warm-up done in $(($(date +%s) - start)) s"
    rows=()
    bad=0
    for s in blackscholes lbm particles spmv-ell; do
        for it in 30 100; do
            declare -A ms=() sums=()
            for v in $variants; do
                read -r c k <<<"$(one "$s" "$it" "$v")"
                sums[$v]=$c
                ms[$v]=$k
            done
            same=SAME
            for v in $variants; do
                [ "${sums[$v]}" = "${sums[plain]}" ] && [ "${sums[$v]}" != FAILED ] || { same="DIFFERENT(${v})"; bad=1; }
            done
            rows+=("$(awk -v s="$s" -v it="$it" -v p="${ms[plain]}" -v sa="${ms[side-always]}" -v su="${ms[side-auto]}" \
                -v ia="${ms[inferred-always]}" -v iu="${ms[inferred-auto]}" -v same="$same" 'BEGIN {
                    printf "| %s | %d | %.2f | %.2f (%.2fx) | %.2f (%.2fx) | %.2f (%.2fx) | %.2f (%.2fx) | %.0f %% | %.0f %% | %s |",
                        s, it, p, sa, p / sa, su, p / su, ia, p / ia, iu, p / iu, 100 * sa / ia, 100 * su / iu, same }')")
            unset ms sums
        done
    done
    echo "== kernel_ms (speedup over plain); inferred/side: the inferred annotations' speedup as a share of the side file's, same policy"
    {
        echo "| sample | iters | plain | side file, always | side file, auto | inferred, always | inferred, auto | inferred/side (always) | inferred/side (auto) | checksums |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        printf '%s\n' "${rows[@]}"
    } | tee "$OUT/auto-annotations.txt"
    echo "== statistics of the inferred runs (rewritten kernels, launches in ASTA / as written)"
    for f in "$stats"/*-inferred-*.json; do
        printf '%s: ' "$(basename "$f" .json)"
        grep -oE '"(rewritten_kernels|launches_rewritten|launches_as_written)": *[0-9]+' "$f" | tr '\n' ' '
        echo
    done
    echo "== warnings"
    cat "$stats"/*.err 2>/dev/null | grep -E "clayout: (warn|error)" | sort | uniq -c | head -20
    echo "total $(($(date +%s) - start)) s; exit $bad"
} 2>&1 | tee "$OUT/auto-annotations.log"
tar -czf "$OUT/auto-annotations-stats.tgz" -C /tmp/auto-annotations stats 2>/dev/null
