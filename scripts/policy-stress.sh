#!/usr/bin/env bash
# The cost model (CLAYOUT_POLICY=auto) against a program whose run lengths it cannot know: one
# sample, one clayout cache directory kept for the whole sequence, a fixed shuffled sequence of
# run lengths (-i) at two problem sizes taken in turn. Each run goes first under auto (which
# learns from the runs before it through the cache), then without clayout, then under always,
# and one markdown table row says what each took (the sample's total_ms: writes, launches and
# reads), how auto did against the run without clayout, and what share of always' gain it got.
#   scripts/policy-stress.sh [--platform NAME] [--lib PATH] [--sample NAME] [--sizes "A B"]
#                            [--runs "1 100 2 30 1 1000 8 30"] [--timeout SECONDS] [--details]
# --sizes: the sample's size argument (particles, blackscholes, spmv-ell: -n; lbm: -x A -y A
# -z A); the default is small, for PoCL. --lib: the libclayout.so to preload (else the release
# library of $CARGO_TARGET_DIR, built with cargo when missing): with it the script needs no
# cargo, only make and a C compiler ($CC) for the samples. --details: after the table, the
# reasons auto gave in each run (its statistics' policy.kernels.*.reasons).
# Exit status 1 when a run failed or the three checksums of a run differ.
set -uo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
platform=${SAMPLE_PLATFORM:-}
lib=
sample=particles
sizes=
runs="1 100 2 30 1 1000 8 30"
timeout_s=600
details=0
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift 2 ;;
        --lib) lib=$2; shift 2 ;;
        --sample) sample=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --details) details=1; shift ;;
        -h|--help) usage ;;
        *) echo "policy-stress: unknown argument $1" >&2; usage ;;
    esac
done
case "$sample" in
    particles) : "${sizes:=8192 65536}" ;;
    blackscholes) : "${sizes:=65536 524288}" ;;
    spmv-ell) : "${sizes:=16384 131072}" ;;
    lbm) : "${sizes:=16 40}" ;;
    *) echo "policy-stress: unknown sample $sample" >&2; exit 2 ;;
esac
read -r -a size_list <<<"$sizes"
[ "${#size_list[@]}" = 2 ] || { echo "policy-stress: --sizes takes two sizes" >&2; exit 2; }
size_args() {
    case "$sample" in
        lbm) echo "-x $1 -y $1 -z $1" ;;
        *) echo "-n $1" ;;
    esac
}

target=${CARGO_TARGET_DIR:-$root/target}
out=$target/samples
make -s -C "$root/samples" OUT="$out" ${CC:+CC="$CC"} >/dev/null || { echo "policy-stress: make failed" >&2; exit 1; }
if [ -z "$lib" ]; then
    lib=$target/release/libclayout.so
    if [ ! -f "$lib" ]; then
        (cd "$root" && cargo build --release --lib --quiet) || { echo "policy-stress: cargo build failed" >&2; exit 1; }
    fi
fi
[ -f "$lib" ] || { echo "policy-stress: $lib not found" >&2; exit 1; }
lib=$(readlink -f "$lib")
bin=$out/$sample/$sample
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$work/cache

# One run: prints "total_ms checksum" (or "FAILED ..."); the sample's output is kept in $work.
run() { # tag variant(none|always|auto) iters size
    local tag=$1 variant=$2 iters=$3 size=$4
    local -a envs=(env -u LD_PRELOAD -u CLAYOUT_POLICY -u CLAYOUT_CACHE_DIR -u CLAYOUT_ANNOTATIONS -u CLAYOUT_STATS)
    [ -n "$platform" ] && envs+=(SAMPLE_PLATFORM="$platform")
    if [ "$variant" != none ]; then
        envs+=(LD_PRELOAD="$lib" CLAYOUT_POLICY="$variant" CLAYOUT_CACHE_DIR="$cache"
            CLAYOUT_ANNOTATIONS="$root/samples/$sample/$sample.dl" CLAYOUT_STATS="$work/$tag.json")
    fi
    # shellcheck disable=SC2046
    timeout -k 5 "$timeout_s" "${envs[@]}" "$bin" -i "$iters" $(size_args "$size") >"$work/$tag.out" 2>"$work/$tag.err"
    local rc=$?
    local ms sum
    ms=$(sed -n 's/^total_ms: //p' "$work/$tag.out" | head -1)
    sum=$(sed -n 's/^checksum: \([0-9a-f]*\).*/\1/p' "$work/$tag.out" | head -1)
    if [ "$rc" != 0 ] || [ -z "$ms" ] || [ -z "$sum" ]; then
        echo "FAILED exit $rc"
        sed 's/^/    /' "$work/$tag.err" | tail -5 >&2
    else
        echo "$ms $sum"
    fi
}

# From auto's statistics: the forms each kernel ran in ("kernel: written N, asta N; ..."), or
# with "reasons" the reasons it gave, one line each.
forms() { # stats.json [reasons]
    command -v python3 >/dev/null || { echo "?"; return; }
    python3 - "$@" <<'EOF' 2>/dev/null || echo "?"
import json, sys
k = json.load(open(sys.argv[1]))["policy"]["kernels"]
if len(sys.argv) > 2:
    for name, v in sorted(k.items()):
        for r in v.get("reasons", []):
            print(f"    {name}: {r}")
else:
    print("; ".join(
        f"{name}: " + ", ".join(f"{f} {n}" for f, n in v["launches"].items() if n)
        for name, v in sorted(k.items())))
EOF
}

pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%+.1f %%", (a / b - 1) * 100; else print "-" }'; }
# The share of always' gain over the run without clayout that auto got.
share() { # none always auto
    awk -v n="$1" -v w="$2" -v a="$3" 'BEGIN {
        if (n - w > 0) printf "%.0f %%", (n - a) / (n - w) * 100;
        else if (n > 0) printf "none (always %+.1f %%)", (w / n - 1) * 100;
        else print "-" }'
}

echo "policy-stress: $sample, sizes ${size_list[*]}, runs $runs, ${platform:-default platform}"
echo "clayout: $lib"
echo
echo "| run | size | launches (-i) | ms without clayout | ms always | ms auto | auto vs none | auto's share of always' gain | checksums same? | auto ran |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
i=0 bad=0 tn=0 tw=0 ta=0
for iters in $runs; do
    size=${size_list[$((i % 2))]}
    i=$((i + 1))
    ra=$(run "$i-auto" auto "$iters" "$size")
    rn=$(run "$i-none" none "$iters" "$size")
    rw=$(run "$i-always" always "$iters" "$size")
    if [[ "$ra $rn $rw" == *FAILED* ]]; then
        echo "| $i | $size | $iters | $rn | $rw | $ra | - | - | - | - |"
        bad=1
        continue
    fi
    read -r mn sn <<<"$rn"
    read -r mw sw <<<"$rw"
    read -r ma sa <<<"$ra"
    same=yes
    if [ "$sn" != "$sw" ] || [ "$sn" != "$sa" ]; then same="NO ($sn, $sw, $sa)"; bad=1; fi
    tn=$(awk -v x="$tn" -v y="$mn" 'BEGIN { print x + y }')
    tw=$(awk -v x="$tw" -v y="$mw" 'BEGIN { print x + y }')
    ta=$(awk -v x="$ta" -v y="$ma" 'BEGIN { print x + y }')
    echo "| $i | $size | $iters | $mn | $mw | $ma | $(pct "$ma" "$mn") | $(share "$mn" "$mw" "$ma") | $same | $(forms "$work/$i-auto.json") |"
done
echo "| all | | | $tn | $tw | $ta | $(pct "$ta" "$tn") | $(share "$tn" "$tw" "$ta") | | |"
if [ "$details" = 1 ]; then
    for j in $(seq "$i"); do
        echo
        echo "run $j, auto's reasons:"
        forms "$work/$j-auto.json" reasons
    done
fi
exit "$bad"
