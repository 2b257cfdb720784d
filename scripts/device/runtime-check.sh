#!/usr/bin/env bash
# On the GPU machine (the device tool), with a release libclayout.so, the OpenCL headers and a
# link-time libOpenCL.so carried in $CARRY: every DL runtime call sequence on the platform named
# $CL_PLATFORM_NAME, plain (AoS kernels) against clayout (ASTA kernels), the threads test and
# the interposition overhead. Writes logs under $OUT.
set -uo pipefail
CARRY=${CARRY:-.devcarry/rt}
OUT=${OUT:-/tmp/out}
export CL_PLATFORM_NAME=${CL_PLATFORM_NAME:-NVIDIA}
cc="gcc -O2 -pthread -I$CARRY/include -DCL_TARGET_OPENCL_VERSION=300"
b=/tmp/clayout-dev; mkdir -p $b
$cc -o $b/dl_seq tests/dl/dl_seq.c -L$CARRY/lib -lOpenCL || exit 1
$cc -o $b/dl_threads tests/dl/dl_threads.c -L$CARRY/lib -lOpenCL || exit 1
$cc -o $b/overhead bench/overhead.c -L$CARRY/lib -lOpenCL || exit 1
lib=$(readlink -f $CARRY/libclayout.so)
fail=0
# ONLY=transparent skips the hand-written ASTA sequences.
[ "${ONLY:-}" = transparent ] || for m in launches map partial copy fill mixed twoqueues ooo subbuf hostptr soa multi; do
    for n in 1000 1000000; do
        a=$($b/dl_seq tests/dl/particles_aos.cl $m $n 2>&1)
        s=$(CLAYOUT_PROFILE=1 CLAYOUT_STATS=$OUT/stats-$m-$n.json LD_PRELOAD=$lib $b/dl_seq tests/dl/particles_asta.cl $m $n 2>&1)
        if [ "$a" = "$s" ]; then r=SAME; else r=DIFFERENT; fail=1; fi
        conv=$(python3 -c "import json;d=json.load(open('$OUT/stats-$m-$n.json'));m=d['marshal'];print(m['to_device_layout'],m['to_host_layout'],m['bytes'],m['device_ns'],len(d['fallbacks']))" 2>&1)
        echo "$m n=$n $r conversions(dev host bytes ns fallbacks)=$conv"
        [ $r = SAME ] || { echo "$a"; echo "--- under clayout:"; echo "$s"; }
    done
done
echo "== transparent mode (unmodified AoS kernels, side file)"
for m in launches map partial copy fill mixed twoqueues ooo subbuf hostptr soa multi mapread binary; do
    a=$($b/dl_seq tests/dl/particles_aos.cl $m 100000 2>/dev/null)
    # stdout only: clayout warns on stderr about the kernel the rewriter refuses.
    s=$(CLAYOUT_ANNOTATIONS=tests/dl/particles.dl CLAYOUT_STATS=$OUT/tstats-$m.json LD_PRELOAD=$lib $b/dl_seq tests/dl/particles_aos.cl $m 100000 2>/dev/null)
    if [ "$a" = "$s" ]; then r=SAME; else r=DIFFERENT; fail=1; fi
    info=$(python3 -c "import json;d=json.load(open('$OUT/tstats-$m.json'));m=d['marshal'];print(m['to_device_layout'],m['to_host_layout'],d['launches_rewritten'],d['launches_as_written'],d['contexts_left_referenced'])" 2>&1)
    echo "$m $r conversions/rewritten/as-written/contexts-left=$info"
done
echo "== threads on a shared buffer that changes layout (transparent)"
a=$($b/dl_threads tests/dl/particles_aos.cl 8 300 gather 2>/dev/null)
for i in 1 2 3; do
    s=$(CLAYOUT_ANNOTATIONS=tests/dl/particles.dl LD_PRELOAD=$lib CLAYOUT_STATS=$OUT/stats-gather-$i.json $b/dl_threads tests/dl/particles_aos.cl 8 300 gather 2>/dev/null)
    [ "$a" = "$s" ] && echo "threads gather SAME" || { echo "threads gather DIFFERENT"; fail=1; }
done
a=$($b/dl_threads tests/dl/particles_aos.cl 8 200 2>&1)
s=$(LD_PRELOAD=$lib CLAYOUT_STATS=$OUT/stats-threads.json $b/dl_threads tests/dl/particles_asta.cl 8 200 2>&1)
[ "$a" = "$s" ] && echo "threads SAME" || { echo "threads DIFFERENT"; fail=1; }
echo "== overhead ($CL_PLATFORM_NAME)"
CLAYOUT_LOG=off $b/overhead > $OUT/overhead-without.txt 2>&1
CLAYOUT_LOG=off LD_PRELOAD=$lib $b/overhead > $OUT/overhead-with.txt 2>&1
paste $OUT/overhead-without.txt $OUT/overhead-with.txt
exit $fail
