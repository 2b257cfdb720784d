#!/usr/bin/env bash
# The cost model (CLAYOUT_POLICY=auto) against a program whose run lengths it cannot know: one
# sample, one clayout cache directory kept for the whole sequence, a fixed shuffled sequence of
# run lengths (-i) at two problem sizes taken in turn. Each run goes first under auto (which
# learns from the runs before it through the cache), then without clayout, then under always,
# and one markdown table row says what each took (the sample's total_ms: writes, launches and
# reads), how auto did against the run without clayout, and what share of always' gain it got
# (also with the builds counted, where always pays the copies' load that auto may decline);
# and how auto did against it with the sample's builds counted (build_ms, where clayout loads
# its copies: clayout's host time inside the application's calls, the issue's measure).
#   scripts/policy-stress.sh [--platform NAME] [--lib PATH] [--sample NAME] [--sizes "A B"]
#                            [--runs "1 100 2 30 1 1000 8 30"] [--timeout SECONDS] [--details]
#                            [--reps K]
# --sizes: the sample's size argument (particles, blackscholes, spmv-ell: -n; lbm: -x A -y A
# -z A); the default is small, for PoCL. --lib: the libclayout.so to preload (else the release
# library of $CARGO_TARGET_DIR, built with cargo when missing): with it the script needs no
# cargo, only make and a C compiler ($CC) for the samples. --details: after the table, the
# reasons auto gave in each run (its statistics' policy.kernels.*.reasons), the host time of
# each form's first launch (first_enqueue_us) and the run's conversions. --reps K: K passes,
# each on a fresh cache, and one table of medians (auto against no clayout taken pair by pair,
# with its range): single runs of a few ms vary by more than the 2 % they are judged by.
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
reps=
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift 2 ;;
        --lib) lib=$2; shift 2 ;;
        --sample) sample=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --details) details=1; shift ;;
        --reps) reps=$2; shift 2 ;;
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

# One run: prints "total_ms checksum build_ms" (or "FAILED ..."; build_ms: the sample's builds
# of its programs, outside total_ms, where clayout loads its copies); the output is kept in $work.
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
    local ms sum build
    ms=$(sed -n 's/^total_ms: //p' "$work/$tag.out" | head -1)
    build=$(awk '/^build_ms:/ { b += $2 } END { print b + 0 }' "$work/$tag.out")
    sum=$(sed -n 's/^checksum: \([0-9a-f]*\).*/\1/p' "$work/$tag.out" | head -1)
    if [ "$rc" != 0 ] || [ -z "$ms" ] || [ -z "$sum" ]; then
        echo "FAILED exit $rc"
        sed 's/^/    /' "$work/$tag.err" | tail -5 >&2
    else
        echo "$ms $sum $build"
    fi
}

# From auto's statistics: the forms each kernel ran in ("kernel: written N, asta N; ..."), or
# with "reasons" the reasons it gave, one line each.
forms() { # stats.json [reasons]
    command -v python3 >/dev/null || { echo "?"; return; }
    python3 - "$@" <<'EOF' 2>/dev/null || echo "?"
import json, sys
stats = json.load(open(sys.argv[1]))
k = stats["policy"]["kernels"]
if len(sys.argv) > 2:
    for name, v in sorted(k.items()):
        for r in v.get("reasons", []):
            print(f"    {name}: {r}")
        first = v.get("first_enqueue_us", {})
        if first:
            print(f"    {name}: first launches (host us): " + ", ".join(f"{f} {t:.1f}" for f, t in first.items()))
    for why in stats["policy"].get("copies_not_loaded", []):
        print(f"    copies {why}")
    m = stats.get("marshal", {})
    print(f"    conversions: {m.get('to_device_layout', 0)} to ASTA, {m.get('to_host_layout', 0)} back, "
          f"{m.get('device_ns', 0) / 1e3:.1f} us on the device")
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

echo "policy-stress: $sample, sizes ${size_list[*]}, runs $runs, ${platform:-default platform}${reps:+, $reps passes}"
echo "clayout: $lib"
echo

# One pass of the sequence on a fresh cache: a line per run in $work/pass-N.txt ("run size
# iters none always auto same forms"), and with one pass the table's rows as they come.
pass() { # N
    local p=$1 i=0 iters size ra rn rw mn mw ma sn sw sa same
    cache=$work/cache-$p
    for iters in $runs; do
        size=${size_list[$((i % 2))]}
        i=$((i + 1))
        # Every other pass runs without clayout first, so that what a run leaves behind (the
        # driver's caches, the GPU's clocks) falls on both alike.
        if [ $((p % 2)) = 1 ]; then
            ra=$(run "$i-auto" auto "$iters" "$size")
            rn=$(run "$i-none" none "$iters" "$size")
        else
            rn=$(run "$i-none" none "$iters" "$size")
            ra=$(run "$i-auto" auto "$iters" "$size")
        fi
        rw=$(run "$i-always" always "$iters" "$size")
        if [[ "$ra $rn $rw" == *FAILED* ]]; then
            [ "$npass" = 1 ] && echo "| $i | $size | $iters | $rn | $rw | $ra | - | - | - | - | - | - |"
            echo "$i $size $iters FAILED" >>"$work/pass-$p.txt"
            bad=1
            continue
        fi
        read -r mn sn bn <<<"$rn"
        read -r mw sw bw <<<"$rw"
        read -r ma sa ba <<<"$ra"
        # With the builds: what the process spent in the sample's calls that clayout may slow.
        bn=$(awk -v a="$mn" -v b="$bn" 'BEGIN { print a + b }')
        bw=$(awk -v a="$mw" -v b="$bw" 'BEGIN { print a + b }')
        ba=$(awk -v a="$ma" -v b="$ba" 'BEGIN { print a + b }')
        same=yes
        if [ "$sn" != "$sw" ] || [ "$sn" != "$sa" ]; then same="NO ($sn, $sw, $sa)"; bad=1; fi
        local f
        f=$(forms "$work/$i-auto.json")
        echo "$i $size $iters $mn $mw $ma $bn $bw $ba $same $f" >>"$work/pass-$p.txt"
        [ "$npass" = 1 ] && echo "| $i | $size | $iters | $mn | $mw | $ma | $(pct "$ma" "$mn") | $(share "$mn" "$mw" "$ma") | $(pct "$ba" "$bn") | $(share "$bn" "$bw" "$ba") | $same | $f |"
    done
    if [ "$details" = 1 ] && [ "$p" = "$npass" ]; then
        for j in $(seq "$i"); do
            echo "run $j, auto's reasons:" >>"$work/details.txt"
            forms "$work/$j-auto.json" reasons >>"$work/details.txt"
            echo >>"$work/details.txt"
        done
    fi
}

bad=0
npass=${reps:-1}
echo "| run | size | launches (-i) | ms without clayout | ms always | ms auto | auto vs none | auto's share of always' gain | auto vs none, builds included | auto's share of always' gain, builds included | checksums same? | auto ran |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
for p in $(seq "$npass"); do pass "$p"; done
if [ "$npass" = 1 ]; then
    read -r tn tw ta tbn tbw tba < <(awk '$4 != "FAILED" { n += $4; w += $5; a += $6; bn += $7; bw += $8; ba += $9 } END { print n + 0, w + 0, a + 0, bn + 0, bw + 0, ba + 0 }' "$work/pass-1.txt")
    echo "| all | | | $tn | $tw | $ta | $(pct "$ta" "$tn") | $(share "$tn" "$tw" "$ta") | $(pct "$tba" "$tbn") | $(share "$tbn" "$tbw" "$tba") | | |"
else
    # Medians over the passes: each column's own, and auto against the run without clayout
    # taken pair by pair (median and range); the last row sums each pass first; "auto ran" is
    # the last pass's.
    for p in $(seq "$npass"); do
        awk -v p="$p" '$4 != "FAILED" { n += $4; w += $5; a += $6; bn += $7; bw += $8; ba += $9 } END { print "all", "-", "-", n, w, a, bn, bw, ba, "yes" }' "$work/pass-$p.txt" >>"$work/pass-$p.txt"
    done
    cat "$work"/pass-*.txt | awk -v np="$npass" '
        function med(s,   a, k, t, m) { k = split(s, a, " "); for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            m = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2; lo = a[1]; hi = a[k]; return m }
        $4 == "FAILED" { failed[$1]++; next }
        { key = $1; if (!(key in seen)) { seen[key] = 1; order[++nk] = key; sz[key] = $2; it[key] = $3 }
          N[key] = N[key] " " $4; W[key] = W[key] " " $5; A[key] = A[key] " " $6; R[key] = R[key] " " ($6 / $4 - 1) * 100
          B[key] = B[key] " " ($9 / $7 - 1) * 100; BN[key] = BN[key] " " $7; BW[key] = BW[key] " " $8; BA[key] = BA[key] " " $9
          if ($10 != "yes") diff[key]++; cnt[key]++
          f = ""; for (c = 11; c <= NF; c++) f = f (c > 11 ? " " : "") $c; forms[key] = f }
        END { for (q = 1; q <= nk; q++) { k = order[q]
            n = med(N[k]); w = med(W[k]); a = med(A[k]); r = med(R[k]); rlo = lo; rhi = hi; b = med(B[k]); blo = lo; bhi = hi
            if (n - w > 0) s = sprintf("%.0f %%", (n - a) / (n - w) * 100); else s = sprintf("none (always %+.1f %%)", (w / n - 1) * 100)
            bn = med(BN[k]); bw = med(BW[k]); ba = med(BA[k])
            if (bn - bw > 0) sb = sprintf("%.0f %%", (bn - ba) / (bn - bw) * 100); else sb = sprintf("none (always %+.1f %%)", (bw / bn - 1) * 100)
            printf "| %s | %s | %s | %.3f | %.3f | %.3f | %+.1f %% (%+.1f to %+.1f) | %s | %+.1f %% (%+.1f to %+.1f) | %s | %s | %s |\n", k, sz[k], it[k], n, w, a, r, rlo, rhi, s, b, blo, bhi, sb,
                (diff[k] || failed[k]) ? "NO" : sprintf("yes (%d passes)", cnt[k]), forms[k] } }'
fi
if [ "$npass" -gt 1 ]; then
    # Each pass's own figures, since a median hides a pass that chose otherwise.
    echo
    echo "each pass (run size launches ms-none ms-always ms-auto, the same with builds, checksums-same auto-ran):"
    for p in $(seq "$npass"); do sed "s/^/  pass $p: /" "$work/pass-$p.txt"; done
fi
[ -f "$work/details.txt" ] && { echo; echo "auto's reasons in the last pass:"; echo; cat "$work/details.txt"; }
exit "$bad"
