#!/usr/bin/env bash
# The whole test suite: sets the machine up if needed, then runs every test on PoCL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
export CLAYOUT_REQUIRE_PYOPENCL=1
cargo build --all-targets
cargo test --no-fail-fast -- --test-threads=2
# The benchmark's build (feature `bench`: the tuning knobs): its variant test, and the benchmark.
cargo test --features bench --test marshal_variants -- --test-threads=2
cargo build --features bench --bin clayout-bench
