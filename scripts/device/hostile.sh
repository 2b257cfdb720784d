#!/usr/bin/env bash
# On the GPU machine (the device tool): every case of the hostile suite (tests/hostile/) on the
# platform named $CL_PLATFORM_NAME, without clayout and under it (the program's side file,
# CLAYOUT_POLICY=always, and the case's policy= or side= flag where it gives one), comparing
# standard output and exit status within the case's time limit. The statistics, memory and
# address-space checks of tests/hostile.rs are left to CI. Needs a release libclayout.so, the
# OpenCL headers and a link-time libOpenCL.so in $CARRY. Writes $OUT/hostile.log.
# POLICY replaces `always` where a case names no policy; HOSTILE_ENV adds variables to the runs
# under clayout (POLICY=auto HOSTILE_ENV=CLAYOUT_BUILD_AFTER=60000: every launch made while the
# copies are built). ONLY, a regular expression, runs only the cases whose names match it
# (ONLY='^callback-|-callback$|destructor').
set -uo pipefail
CARRY=${CARRY:-.devcarry/rt}
OUT=${OUT:-/tmp/out}
export CL_PLATFORM_NAME=${CL_PLATFORM_NAME:-NVIDIA}
lib=$(readlink -f "$CARRY/libclayout.so")
b=/tmp/clayout-hostile; mkdir -p "$b"
for p in bytes objects events loops kernels; do
    gcc -O2 -pthread -I"$CARRY/include" -DCL_TARGET_OPENCL_VERSION=300 -o "$b/$p" "tests/hostile/$p.c" -L"$CARRY/lib" -lOpenCL -lm || exit 1
done
exec > >(tee "$OUT/hostile.log") 2>&1
same=0 diff=0 known=0
for p in bytes objects events loops kernels; do
    side=tests/hostile/particles.dl; [ $p = kernels ] && side=
    while IFS=$'\t' read -r case flags; do
        [ -n "$case" ] || continue
        [ -z "${ONLY:-}" ] || [[ "$case" =~ $ONLY ]] || continue
        policy=${POLICY:-always} timeout=30 cside=$side extra=
        for f in $flags; do
            case "$f" in
                policy=*) policy=${f#policy=} ;;
                env=*) extra="$extra ${f#env=}" ;;
                timeout=*) timeout=${f#timeout=} ;;
                side=*) cside=skip ;;
            esac
        done
        [ "$cside" = skip ] && continue
        a=$(timeout "$timeout" "$b/$p" "$case" 2>/dev/null; echo "exit $?")
        s=$(env CLAYOUT_POLICY=$policy ${cside:+CLAYOUT_ANNOTATIONS=$cside} ${HOSTILE_ENV:-} $extra LD_PRELOAD="$lib" timeout "$timeout" "$b/$p" "$case" 2>/dev/null; echo "exit $?")
        if [ "$a" = "$s" ]; then
            same=$((same + 1)); echo "same        $p $case"
        elif grep -q "^$case " tests/hostile/KNOWN_BROKEN; then
            known=$((known + 1)); echo "known-broken $p $case"
        else
            diff=$((diff + 1)); echo "DIFFERS     $p $case"
            diff <(echo "$a") <(echo "$s") | head -6
        fi
    done < <("$b/$p" --list)
done
echo "hostile on $CL_PLATFORM_NAME: $same same, $known known broken, $diff differ"
[ $diff -eq 0 ]
