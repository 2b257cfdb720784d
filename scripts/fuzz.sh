#!/usr/bin/env bash
# Coverage-guided fuzzing of the annotation grammar, the extent evaluator, the rewriter and the
# preprocessor (fuzz/, cargo fuzz with libFuzzer). Not part of CI: it needs cargo-fuzz
# (`cargo install cargo-fuzz`) and runs for minutes. The stable toolchain is enough with
# RUSTC_BOOTSTRAP=1, which lets it take the sanitizer-coverage flags cargo fuzz passes.
#   scripts/fuzz.sh [SECONDS per target, default 600] [targets, default "annotation extent rewrite preprocess"]
# Each target starts from fuzz/seeds/<target> and grows a corpus in $FUZZ_CORPUS (default
# /tmp/clayout-fuzz/<target>); a crash, panic, failed invariant or an input running past 10 s
# stops it with the input saved under fuzz/artifacts/<target>/. Logs: $FUZZ_CORPUS/<target>.log.
set -uo pipefail
secs=${1:-600}
targets=${2:-"annotation extent rewrite preprocess"}
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${FUZZ_CORPUS:-/tmp/clayout-fuzz}
export RUSTC_BOOTSTRAP=1
cd "$root/fuzz" || exit 1
cargo fuzz build -O || exit 1
# The rewriter's seeds also include every AoS kernel of the samples and tests, with the side
# file's annotations written into the source (the rewriter fuzz target reads only those).
derived="$corpus/derived-seeds"
mkdir -p "$derived"
for f in "$root"/samples/*/*_aos.cl "$root"/tests/dl/*_aos.cl; do
    dl=$(ls "$(dirname "$f")"/*.dl 2>/dev/null | head -1)
    out="$derived/$(basename "$(dirname "$f")")-$(basename "$f")"
    awk -v dl="$dl" '
        BEGIN { while (dl != "" && (getline line < dl) > 0) if (line !~ /^#/ && index(line, ":")) { k = substr(line, 1, index(line, ":") - 1); ann[k] = substr(line, index(line, ":") + 2) } }
        /__kernel[ \t]+void[ \t]+[A-Za-z_0-9]+/ { match($0, /void[ \t]+[A-Za-z_0-9]+/); k = substr($0, RSTART, RLENGTH); sub(/void[ \t]+/, "", k); if (k in ann) print "//DL: " ann[k] }
        { print }' "$f" > "$out"
done
status=0
for t in $targets; do
    mkdir -p "$corpus/$t"
    extra=""
    [ "$t" = rewrite ] && extra="$derived"
    cargo fuzz run -O "$t" "$corpus/$t" "seeds/$t" $extra -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        > "$corpus/$t.log" 2>&1
    rc=$?
    echo "$t: exit $rc, $(grep -E '^(#[0-9]+|Done)' "$corpus/$t.log" | tail -1)"
    [ $rc = 0 ] || status=1
done
exit $status
