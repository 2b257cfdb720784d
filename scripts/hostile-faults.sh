#!/usr/bin/env bash
# Every case of the hostile suite (tests/hostile/) under each site of CLAYOUT_FAULT in turn, on
# PoCL here: the fault-injection build of clayout makes its own calls at that site fail, and
# each case must still print what it prints without clayout (scripts/device/hostile.sh, which
# compares them, run with the fault-injection build in place of the release one). The CI suite
# runs one such pass (`conversion-back`, tests/hostile.rs); this runs them all, about a minute
# each. Prints one summary line per site; each site's log goes to $OUT/<site>/hostile.log.
#   SITES="conversion chunk" POLICY=auto scripts/hostile-faults.sh
set -uo pipefail
cd "$(dirname "$0")/.."
sites=${SITES:-conversion conversion-back enqueue build kernel chunk wait scratch probe all}
OUT=${OUT:-/tmp/hostile-faults}
target=${CARGO_TARGET_DIR:-target}/fault-injection
CARGO_TARGET_DIR=$target cargo build --release --lib --quiet --features fault-injection || exit 1
carry=$(mktemp -d /tmp/hostile-faults-carry.XXXXXX)
trap 'rm -rf "$carry"' EXIT
mkdir -p "$carry/lib"
ln -s /usr/include "$carry/include"
ln -s "$(ldconfig -p | awk '/libOpenCL.so.1 / {print $NF; exit}')" "$carry/lib/libOpenCL.so"
cp "$target/release/libclayout.so" "$carry/libclayout.so"
failed=0
for site in $sites; do
    mkdir -p "$OUT/$site"
    CARRY=$carry OUT=$OUT/$site CL_PLATFORM_NAME=${CL_PLATFORM_NAME:-Portable} POLICY=${POLICY:-always} \
        HOSTILE_ENV="CLAYOUT_FAULT=$site" bash scripts/device/hostile.sh >/dev/null 2>&1 || failed=1
    echo "CLAYOUT_FAULT=$site: $(tail -1 "$OUT/$site/hostile.log")"
done
exit $failed
