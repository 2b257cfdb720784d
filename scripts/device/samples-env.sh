# Sourced by the device scripts that run the samples (asynctiming, buildload, fused, short-runs,
# tiles), from the repository root, with S set to where the samples are to be built:
# the carried release library ($lib; LIB=path picks another), a compiler that finds the carried OpenCL headers and
# loader ($CC), the samples built under $S, and each sample's large size (`large NAME`; with
# SMALL=1, a small one for blackscholes and particles, to check a script on PoCL). $1 is the
# platform name (default NVIDIA).
root=$(pwd)
OUT=${OUT:-/tmp/out}
platform=${1:-NVIDIA}
lib=$(readlink -f "${LIB:-.devcarry/rt/libclayout.so}")
CC="gcc -I$root/.devcarry/rt/include -L$root/.devcarry/rt/lib"
make -s -C samples OUT=$S CC="$CC" >/dev/null || exit 1
large() {
    case $1:${SMALL:-0} in
    blackscholes:1) echo "-n 65536" ;; particles:1) echo "-n 32768" ;;
    blackscholes:*) echo "-n 33554432" ;; particles:*) echo "-n 16777216" ;;
    lbm:*) echo "-x 192 -y 192 -z 128" ;; spmv-ell:*) echo "-n 4194304 -k 32" ;;
    esac
}
# Fills the clayout cache CACHE (emptied first) as a program's history would: SAMPLE run under
# the library LIB once per SIZE:LAUNCHES of RUNS, in turn, with SIZE its -n (lbm: the edge of its
# cubic grid), the stress sequence's shape (scripts/policy-stress.sh). The caller's environment (CLAYOUT_POLICY=...) holds.
#   prime_cache CACHE SAMPLE LIB "SIZE:LAUNCHES ..."
prime_cache() {
    local c=$1 s=$2 l=$3 p
    rm -rf "$c"
    for p in $4; do
        local n=${p%%:*} size
        case $s in lbm) size="-x $n -y $n -z $n" ;; *) size="-n $n" ;; esac
        (cd samples/$s && CLAYOUT_CACHE_DIR=$c CLAYOUT_ANNOTATIONS=$root/samples/$s/$s.dl LD_PRELOAD=$l \
            $S/$s/$s $size -i ${p##*:} --platform $platform >/dev/null 2>&1)
    done
}
