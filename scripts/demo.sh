#!/usr/bin/env bash
# The demo: the lbm sample (D3Q19 lattice-Boltzmann, 19 floats per cell, kernels written for
# its array of structures) run on PoCL, first plainly, then unmodified under clayout in the
# transparent mode (its annotation comes from a side file, samples/lbm/lbm.dl: clayout rewrites
# the AoS kernel to ASTA addressing and converts the grids in place), with clayout's statistics;
# the two results are compared bit for bit. On a CPU no speedup is expected: the speedups are on
# GPUs (docs/results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CLAYOUT_SKIP_PYOPENCL=1 bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --quiet
make -s -C samples >/dev/null

sample=target/samples/lbm/lbm
args=(-x 48 -y 48 -z 24 -i 10)
echo "== without clayout"
plain=$("$sample" "${args[@]}")
echo "$plain"
echo "== under clayout (CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl CLAYOUT_PROFILE=1 ld_preload/clayout-run --stats)"
shim=$(CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl CLAYOUT_PROFILE=1 ld_preload/clayout-run --stats -- "$sample" "${args[@]}")
echo "$shim"
sum() { grep '^checksum:' <<<"$1" | awk '{print $2}'; }
ms() { grep '^kernel_ms:' <<<"$1" | awk '{print $2}'; }
echo "== results"
if [ "$(sum "$plain")" = "$(sum "$shim")" ]; then
    echo "identical results (checksum $(sum "$plain"))"
else
    echo "RESULTS DIFFER: $(sum "$plain") vs $(sum "$shim")"
    exit 1
fi
awk -v a="$(ms "$plain")" -v b="$(ms "$shim")" 'BEGIN { printf "kernel time: %.1f ms plain, %.1f ms under clayout (speedup %.2fx)\n", a, b, a / b }'
echo "(PoCL runs the kernels on the CPU, whose caches already suit AoS: no speedup is expected here. The GPU figures are in docs/results.md.)"
