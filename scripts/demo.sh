#!/usr/bin/env bash
# The demo: the lbm sample (D3Q19 lattice-Boltzmann, 19 floats per cell, kernels written for
# its array of structures) run on PoCL, plainly and unmodified under clayout: with no
# annotation at all (CLAYOUT_ANNOTATIONS=auto: clayout infers them from the kernel source and
# rewrites the AoS kernel to ASTA addressing), and with the sample's side file
# (samples/lbm/lbm.dl) under CLAYOUT_POLICY=always (the grids converted in place) and under the
# default policy, auto (the cost model times each form and keeps the fastest). Every result is
# compared bit for bit. After one warm-up run (PoCL compiles kernels at first use), each variant
# runs three times; the kernel time shown is the median with the spread (fastest-slowest), and a
# speedup is printed only when the two spreads do not overlap. On a CPU no speedup is expected:
# the speedups are on GPUs (docs/results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CLAYOUT_SKIP_PYOPENCL=1 bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --quiet
make -s -C samples >/dev/null

sample=target/samples/lbm/lbm
args=(-x 48 -y 48 -z 24 -i 10)
runs=3
sum() { grep '^checksum:' <<<"$1" | awk '{print $2}'; }
ms() { grep '^kernel_ms:' <<<"$1" | awk '{print $2}'; }

# run NAME ENV... : runs the sample $runs times with ENV set; keeps the kernel times in
# times_NAME and checks each checksum against the plain run's.
run() {
    local name=$1; shift
    local t=() out
    for _ in $(seq "$runs"); do
        out=$(env "$@" "$sample" "${args[@]}")
        if [ -n "${want:-}" ] && [ "$(sum "$out")" != "$want" ]; then
            echo "RESULTS DIFFER under $name: $(sum "$out") vs $want"
            exit 1
        fi
        want=$(sum "$out")
        t+=("$(ms "$out")")
    done
    printf -v "times_$name" '%s ' "${t[@]}"
}

# median and spread of a list of times
stats() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {printf "%s %s %s", a[int((NR+1)/2)], a[1], a[NR]}'; }

# compare NAME: the variant's median and spread against the plain run's, and a speedup only
# when the spreads do not overlap.
compare() {
    local v="times_$1"
    read -r pm plo phi <<<"$(stats "$times_plain")"
    read -r vm vlo vhi <<<"$(stats "${!v}")"
    awk -v pm="$pm" -v plo="$plo" -v phi="$phi" -v vm="$vm" -v vlo="$vlo" -v vhi="$vhi" -v name="$2" 'BEGIN {
        printf "%-44s %8.1f ms (%.1f-%.1f)  ", name, vm, vlo, vhi
        if (vhi < plo || vlo > phi) printf "%.2fx\n", pm / vm
        else printf "no difference beyond run-to-run spread (%.2f-%.2fx)\n", plo / vhi, phi / vlo
    }'
}

lib=$(readlink -f target/release/libclayout.so)
echo "== warm-up (PoCL and clayout compile and cache their kernels)"
"$sample" "${args[@]}" >/dev/null
CLAYOUT_ANNOTATIONS=auto LD_PRELOAD=$lib "$sample" "${args[@]}" >/dev/null
CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl LD_PRELOAD=$lib "$sample" "${args[@]}" >/dev/null

echo "== what clayout infers from the kernel source (ld_preload/clayout-run --suggest FILE -- $sample ...)"
suggest=$(mktemp)
ld_preload/clayout-run --suggest "$suggest" -- "$sample" "${args[@]}" >/dev/null
grep -v '^# clayout --suggest' "$suggest" | grep .
rm -f "$suggest"
echo "== with no annotation at all (CLAYOUT_ANNOTATIONS=auto ld_preload/clayout-run --stats), one run"
CLAYOUT_ANNOTATIONS=auto ld_preload/clayout-run --stats -- "$sample" "${args[@]}" 2>&1 | grep -E "checksum|rewritten|launches|conversions" || true

echo "== $runs runs of each variant"
want=
run plain
run inferred CLAYOUT_ANNOTATIONS=auto LD_PRELOAD="$lib"
run always CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl LD_PRELOAD="$lib"
run sidefile CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl LD_PRELOAD="$lib"
echo "identical results in every run (checksum $want)"
echo "kernel time, median of $runs (fastest-slowest), speedup over plain:"
read -r pm plo phi <<<"$(stats "$times_plain")"
printf "%-44s %8.1f ms (%.1f-%.1f)\n" "plain" "$pm" "$plo" "$phi"
compare inferred "no annotation (CLAYOUT_ANNOTATIONS=auto)"
compare always "side file, CLAYOUT_POLICY=always"
compare sidefile "side file, cost model (CLAYOUT_POLICY=auto)"
echo "(PoCL runs the kernels on the CPU, whose caches already suit AoS: no speedup is expected here. The GPU figures are in docs/results.md.)"
