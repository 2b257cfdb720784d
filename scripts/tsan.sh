#!/usr/bin/env bash
# ThreadSanitizer over clayout's concurrency tests (not part of CI: a sanitized build and slow
# runs). clayout is built with -Zsanitizer=thread (RUSTC_BOOTSTRAP=1 on the stable toolchain;
# std is not instrumented, hence -Cunsafe-allow-abi-mismatch) and preloaded after the system
# libtsan, with three __tsan_mem* entry points that gcc 12's libtsan lacks supplied by a small
# compatibility library. The C test programs are not instrumented: races inside clayout, and
# between clayout and the threads calling it, are what this looks for.
#   scripts/tsan.sh [THREADS] [ROUNDS]     (reports, if any, in /tmp/clayout-tsan/report.*)
set -uo pipefail
threads=${1:-6}
rounds=${2:-100}
root=$(cd "$(dirname "$0")/.." && pwd)
out=/tmp/clayout-tsan
mkdir -p "$out"
rm -f "$out"/report.*
cd "$root" || exit 1
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer" \
    cargo build --lib --target x86_64-unknown-linux-gnu --target-dir "$out/target" || exit 1
cat > "$out/compat.c" <<'C'
#include <string.h>
void *__tsan_memcpy(void *d, const void *s, size_t n) { return memcpy(d, s, n); }
void *__tsan_memmove(void *d, const void *s, size_t n) { return memmove(d, s, n); }
void *__tsan_memset(void *d, int c, size_t n) { return memset(d, c, n); }
C
# The last reference of an Arc dropped in one thread while another dropped an earlier one is
# reported as a race between the other thread's decrement and the free: std is not built with
# the sanitizer, so its Arc orders them with an acquire fence, which ThreadSanitizer does not
# model (rust-lang/rust#65097 made Arc use an acquire load instead, but only in a std built with
# it). In safe code that free cannot race with anything else, so only that report is suppressed.
# The same holds where the last reference is a Weak (a repeated launch's ticket keeps its
# stretch so, and may outlive it): Weak's drop frees after the same fence.
printf 'race:drop_slow\nrace:4Weak*4Drop4drop\n' > "$out/suppressions"
opts="log_path=$out/report suppressions=$out/suppressions"
tsan=$(gcc -print-file-name=libtsan.so)
gcc -shared -fPIC -O1 -o "$out/libcompat.so" "$out/compat.c" "$tsan" || exit 1
cargo test --release --test transparent threads >/dev/null 2>&1   # builds the C test programs
bin=target/clayout-shim-tests/tests-dl/dl_threads
preload="$(readlink -f "$tsan") $out/libcompat.so $out/target/x86_64-unknown-linux-gnu/debug/libclayout.so"
status=0
# (`repeat` under `never`: launches that repeat their kernel object's last one, beside the
# other threads' launches on the shared buffer.)
for run in "gather auto" "- auto" "repeat never"; do
    mode=${run% *} policy=${run#* }
    args="tests/dl/particles_aos.cl $threads $rounds ${mode#-}"
    want=$($bin $args)
    got=$(CLAYOUT_POLICY=$policy CLAYOUT_ANNOTATIONS=tests/dl/particles.dl LD_PRELOAD="$preload" TSAN_OPTIONS="$opts" $bin $args 2>/dev/null)
    [ "$want" = "$got" ] && same=identical || { same=DIFFERENT; status=1; }
    echo "dl_threads $args (CLAYOUT_POLICY=$policy): results $same"
done
# The shim's own thread test: 8 threads creating, launching and releasing without annotations.
cargo test --release --test shim threads >/dev/null 2>&1
want=$(target/clayout-shim-tests/tests-c/threads)
got=$(LD_PRELOAD="$preload" TSAN_OPTIONS="$opts" target/clayout-shim-tests/tests-c/threads 2>/dev/null)
[ "$want" = "$got" ] && same=identical || { same=DIFFERENT; status=1; }
echo "threads (no annotations): results $same"
if ls "$out"/report.* >/dev/null 2>&1; then
    echo "ThreadSanitizer reports: $(ls "$out"/report.* | wc -l) file(s), $(cat "$out"/report.* | grep -c 'WARNING: ThreadSanitizer') warning(s)"
    status=1
else
    echo "ThreadSanitizer: no report"
fi
exit $status
