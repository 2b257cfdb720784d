#!/usr/bin/env bash
# The demo: the lbm sample (D3Q19 lattice-Boltzmann, 19 floats per cell, kernels written for
# its array of structures) run on PoCL, first plainly, then unmodified under clayout in the
# transparent mode (its annotation comes from a side file, samples/lbm/lbm.dl: clayout rewrites
# the AoS kernel to ASTA addressing) with CLAYOUT_POLICY=always (the grids converted in place),
# then under the default policy, auto, whose cost model times each form and keeps the fastest;
# clayout's statistics each time, and every result compared bit for bit. On a CPU no speedup is
# expected: the speedups are on GPUs (docs/results.md).
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
echo "== under clayout, every launch converted (CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl CLAYOUT_PROFILE=1 ld_preload/clayout-run --stats)"
always=$(CLAYOUT_POLICY=always CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl CLAYOUT_PROFILE=1 ld_preload/clayout-run --stats -- "$sample" "${args[@]}")
echo "$always"
echo "== under clayout, the cost model deciding (the default, CLAYOUT_POLICY=auto)"
auto=$(CLAYOUT_ANNOTATIONS=samples/lbm/lbm.dl CLAYOUT_PROFILE=1 ld_preload/clayout-run --stats -- "$sample" "${args[@]}")
echo "$auto"
sum() { grep '^checksum:' <<<"$1" | awk '{print $2}'; }
ms() { grep '^kernel_ms:' <<<"$1" | awk '{print $2}'; }
echo "== results"
if [ "$(sum "$plain")" = "$(sum "$always")" ] && [ "$(sum "$plain")" = "$(sum "$auto")" ]; then
    echo "identical results (checksum $(sum "$plain"))"
else
    echo "RESULTS DIFFER: $(sum "$plain") vs $(sum "$always") (always) vs $(sum "$auto") (auto)"
    exit 1
fi
awk -v a="$(ms "$plain")" -v b="$(ms "$always")" -v c="$(ms "$auto")" 'BEGIN { printf "kernel time: %.1f ms plain, %.1f ms under clayout always (%.2fx), %.1f ms under clayout auto (%.2fx)\n", a, b, a / b, c, a / c }'
echo "(PoCL runs the kernels on the CPU, whose caches already suit AoS: no speedup is expected here. The GPU figures are in docs/results.md.)"
