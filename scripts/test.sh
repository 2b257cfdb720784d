#!/usr/bin/env bash
# The whole test suite: sets the machine up if needed, then checks formatting and lints, and
# runs every test on PoCL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
export CLAYOUT_REQUIRE_PYOPENCL=1
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all -- --check
cargo clippy --all-targets --features bench -- -D warnings
cargo build --all-targets
cargo test --no-fail-fast -- --test-threads=2
# The benchmark-only tuning variants and the benchmark itself (cargo feature `bench`).
cargo test --features bench --test marshal_variants -- --test-threads=2
cargo build --features bench --bin clayout-bench
