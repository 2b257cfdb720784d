# Sourced by scripts/first-touch.sh and scripts/declined-launches.sh, from the repository's root,
# with NAME (the work directory's prefix) and LIB_ARG (the script's LIB argument, maybe empty)
# set: sets `lib` (LIB_ARG, or the `fault-injection` build made here, whose `quick-build` site
# makes every build count as answered from a driver cache, as NVIDIA's are), `work` (a temporary
# directory, removed at exit unless KEEP is set), `bin` (particles built there) and `ann` (its
# side file), moves to samples/particles, and defines `under POLICY N ITERS`: one run of N
# particles and ITERS iterations under the valgrind command line of the array VG (set by the
# caller: the profile's own), on the cache in $work/cache, with the variables of the array EXTRA
# (may be empty) added. Every run of a history goes through the same command line as the run
# profiled: clayout weighs the runs made with the same arguments (/proc/self/cmdline, which
# under valgrind holds valgrind's options), and a history made under other options is not the
# profiled run's (under `valgrind --tool=none` its copies were loaded, not declined).
if [ -n "$LIB_ARG" ]; then
    lib=$(readlink -f "$LIB_ARG")
else
    CARGO_TARGET_DIR=target/fault-injection cargo build --release --lib --features fault-injection --quiet
    lib=$(readlink -f target/fault-injection/release/libclayout.so)
fi
work=$(mktemp -d "/tmp/$NAME.XXXXXX")
trap "[ -n \"${KEEP:-}\" ] || rm -rf $work" EXIT
make -s -C samples OUT="$work/smp" >/dev/null
bin=$work/smp/particles/particles
ann=$PWD/samples/particles/particles.dl
cd samples/particles
EXTRA=()
under() {
    env CLAYOUT_FAULT=quick-build CLAYOUT_CACHE_DIR="$work/cache" CLAYOUT_ANNOTATIONS="$ann" CLAYOUT_POLICY="$1" \
        ${EXTRA[@]+"${EXTRA[@]}"} LD_PRELOAD="$lib" "${VG[@]}" "$bin" -n "$2" -i "$3" >/dev/null 2>&1
}
