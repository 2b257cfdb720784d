#!/usr/bin/env bash
# The demo: an unmodified AoS OpenCL program run on PoCL, first plainly, then under clayout
# with its statistics, and the two results compared bit for bit.
set -euo pipefail
cd "$(dirname "$0")/.."
CLAYOUT_SKIP_PYOPENCL=1 bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --quiet
make -s -C samples >/dev/null

sample=target/samples/blackscholes/blackscholes
args=(-n 262144 -i 10)
echo "== without clayout"
plain=$("$sample" "${args[@]}")
echo "$plain"
echo "== under clayout (ld_preload/clayout-run --stats)"
shim=$(ld_preload/clayout-run --stats -- "$sample" "${args[@]}")
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
