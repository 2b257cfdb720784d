#!/usr/bin/env bash
# Runs the sample applications (samples/) in every variant and collects their figures into one
# JSON file; checks that all variants of a sample compute the same bits.
#
#   scripts/run-samples.sh [--platform NAME] [--size small|large] [--iters "1 2 4 8 30 100"]
#                          [--tile T] [--json FILE] [--with-transparent] [--with-auto]
#                          [--samples "lbm ..."] [--only "aos auto ..."]
#                          [--timeout SECONDS] [--lib PATH] [--no-profile] [--no-warmup]
#                          [--out DIR]
#
# Variants, for each sample and each iteration count:
#   aos          the unmodified program: AoS host data, AoS kernel (*_aos.cl), no clayout
#   soa          the hand-written discrete-array peer (--soa, *_soa.cl), no clayout
#   asta         the kernel written by hand for ASTA (--asta, *_asta.cl) under clayout
#                (ld_preload/clayout-run): clayout converts the AoS buffers to ASTA and back
#   asta-soa     spmv-ell only: the same ASTA kernel, the host keeping the matrix column-major
#                (SoA host layout, --asta --soa)
#   transparent  with --with-transparent: the unmodified AoS program under clayout with the
#                sample's side file (CLAYOUT_ANNOTATIONS=samples/NAME/NAME.dl), for the
#                transparent mode that rewrites the AoS kernel itself, CLAYOUT_POLICY=always
#   auto         with --with-auto: the same under CLAYOUT_POLICY=auto (the default), the cost
#                model choosing per launch; its cache (tiles, conversion costs, kernel times) is
#                the one the warm-up runs filled
#   auto-cold    with --with-auto: the same with an empty cache directory of its own
# Every clayout run except auto-cold shares one CLAYOUT_CACHE_DIR under the work directory.
# --only "VARIANT..." runs just those variants (e.g. for repeated timing runs).
# Before the measured runs, each variant of each sample runs once with -i 1 (auto: -i 30, so that
# the cost model has timed every form it may choose), unrecorded, so that the OpenCL
# implementation's program caches (and clayout's) are warm (PoCL compiles kernels at their first launch
# and keeps them on disk); --no-warmup skips that. Every run is killed after --timeout seconds (default 60 for small, 600 for large) and the
# harness goes on with the next one.
#
# The JSON file (default target/samples-results.json) is a list of records: sample, variant,
# iters, size, tile, args, status (ok, timeout, failed (exit N)), checksum, kernel_ms, total_ms,
# wall_ms, device, and for the clayout runs the statistics (docs/stats.md): to_device_layout,
# to_host_layout, marshal_bytes, marshal_device_ns, fallbacks, rewritten_kernels.
# Conversions are timed on the device (CLAYOUT_PROFILE=1) unless --no-profile.
#
# Exit status: 0 when every run succeeded and all variants of a sample agree bit for bit at every
# iteration count; otherwise 1, after printing FAILED / MISMATCH lines.
# Sizes: small runs everything in about a minute on PoCL with 2 cores; large is for a big GPU
# (lbm 192x192x128 = 4.7 M cells, 2 x 360 MB; particles 2^24; blackscholes 2^25; spmv-ell 2^22
# rows with K = 32, 1 GiB of matrix).
set -uo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
platform=${SAMPLE_PLATFORM:-}
size=small
iters_list="1 2"
tile=
json=
transparent=0
auto=0
only=
samples="blackscholes lbm particles spmv-ell"
timeout_s=
lib=${CLAYOUT_LIB:-}
profile=1
warmup=1
out=

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift ;;
        --size) size=$2; shift ;;
        --iters) iters_list=$2; shift ;;
        --tile) tile=$2; shift ;;
        --json) json=$2; shift ;;
        --with-transparent) transparent=1 ;;
        --with-auto) auto=1 ;;
        --only) only=" $2 "; shift ;;
        --samples) samples=$2; shift ;;
        --timeout) timeout_s=$2; shift ;;
        --lib) lib=$2; shift ;;
        --no-profile) profile=0 ;;
        --no-warmup) warmup=0 ;;
        --out) out=$2; shift ;;
        -h|--help) usage ;;
        *) echo "run-samples: unknown argument $1" >&2; usage ;;
    esac
    shift
done

case "$size" in
    small) : "${timeout_s:=60}" ;;
    large) : "${timeout_s:=600}" ;;
    *) echo "run-samples: --size is small or large" >&2; exit 2 ;;
esac

size_args() { # sample -> its size arguments
    case "$size:$1" in
        small:blackscholes) echo "-n 1048576" ;;
        small:particles) echo "-n 262144" ;;
        small:lbm) echo "-x 64 -y 64 -z 32" ;;
        small:spmv-ell) echo "-n 262144 -k 32" ;;
        large:blackscholes) echo "-n 33554432" ;;
        large:particles) echo "-n 16777216" ;;
        large:lbm) echo "-x 192 -y 192 -z 128" ;;
        large:spmv-ell) echo "-n 4194304 -k 32" ;;
        *) echo "run-samples: unknown sample $1" >&2; exit 2 ;;
    esac
}

target=${CARGO_TARGET_DIR:-$root/target}
out=${out:-$target/samples}
json=${json:-$target/samples-results.json}
work=$target/samples-runs
rm -rf "$work"
mkdir -p "$work" "$(dirname "$json")"

echo "== building the samples into $out"
make -s -C "$root/samples" OUT="$out" >"$work/make.log" 2>&1 || { cat "$work/make.log"; echo "run-samples: make failed" >&2; exit 1; }

if [ -z "$lib" ]; then
    for c in "$target/release/libclayout.so" "$target/debug/libclayout.so"; do
        if [ -f "$c" ]; then lib=$c; break; fi
    done
fi
if [ -z "$lib" ]; then
    echo "== building libclayout.so (cargo build --release --lib)"
    (cd "$root" && cargo build --release --lib --quiet) || { echo "run-samples: cargo build failed" >&2; exit 1; }
    lib=$target/release/libclayout.so
fi
[ -f "$lib" ] || { echo "run-samples: $lib not found (--lib PATH)" >&2; exit 1; }
lib=$(readlink -f "$lib")
echo "== clayout: $lib"

# One line per run in $work/runs.tsv: sample variant iters dir args; the python at the end reads
# the files each run left in its directory.
: >"$work/runs.tsv"
n=0
run_one() { # sample variant iters use_clayout(0/1) annotations args...
    local sample=$1 variant=$2 iters=$3 clayout=$4 ann=$5
    shift 5
    [ -n "$only" ] && [[ "$only" != *" $variant "* ]] && return
    local policy=always cache="$work/cache"
    case "$variant" in
        auto|auto-soa)
            policy=auto
            # The warm-up trains the cost model: long enough to time every form it may choose.
            [ "$recording" = 0 ] && iters=30 ;;
        auto-cold) policy=auto; cache="$work/$((n + 1))/cache" ;;
    esac
    n=$((n + 1))
    local d="$work/$n"
    mkdir -p "$d"
    local bin="$out/$sample/$sample"
    local -a envs=(env -u LD_PRELOAD -u CLAYOUT_STATS -u CLAYOUT_ANNOTATIONS -u CLAYOUT_TILE -u CLAYOUT_PROFILE -u CLAYOUT_DISABLE -u CLAYOUT_POLICY -u CLAYOUT_CACHE_DIR)
    [ -n "$platform" ] && envs+=(SAMPLE_PLATFORM="$platform")
    local -a launcher=()
    if [ "$clayout" = 1 ]; then
        [ -n "$tile" ] && envs+=(CLAYOUT_TILE="$tile")
        [ "$profile" = 1 ] && envs+=(CLAYOUT_PROFILE=1)
        [ -n "$ann" ] && envs+=(CLAYOUT_ANNOTATIONS="$ann")
        envs+=(CLAYOUT_POLICY="$policy" CLAYOUT_CACHE_DIR="$cache")
        launcher=("$root/ld_preload/clayout-run" --lib "$lib" --stats="$d/stats.json" --)
    fi
    local t0 t1 rc
    t0=$(date +%s%N)
    timeout -k 5 "$timeout_s" "${envs[@]}" "${launcher[@]}" "$bin" -i "$iters" "$@" >"$d/stdout" 2>"$d/stderr"
    rc=$?
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >"$d/wall_ms"
    echo "$rc" >"$d/rc"
    if [ "$recording" = 0 ]; then
        [ "$rc" = 0 ] || echo "  (warm-up of $sample $variant failed: exit $rc)"
        return
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$sample" "$variant" "$iters" "$d" "$*" >>"$work/runs.tsv"
    local st=ok
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then st="TIMEOUT after ${timeout_s}s"; elif [ "$rc" != 0 ]; then st="FAILED (exit $rc)"; fi
    printf '  %-13s %-12s -i %-4s %-40s %s\n' "$sample" "$variant" "$iters" \
        "$(grep -m1 '^checksum:' "$d/stdout" | cut -d' ' -f2) $(grep -m1 '^total_ms:' "$d/stdout" | sed 's/total_ms: /total_ms=/')" "$st"
}

run_all() { # iteration list
    local sample args ann it
    for sample in $samples; do
    args=$(size_args "$sample")
    ann="$root/samples/$sample/$sample.dl"
    for it in $1; do
        # shellcheck disable=SC2086
        {
            run_one "$sample" aos "$it" 0 "" $args
            run_one "$sample" soa "$it" 0 "" $args --soa
            run_one "$sample" asta "$it" 1 "" $args --asta
            [ "$sample" = spmv-ell ] && run_one "$sample" asta-soa "$it" 1 "" $args --asta --soa
            if [ "$transparent" = 1 ]; then
                run_one "$sample" transparent "$it" 1 "$ann" $args
                [ "$sample" = spmv-ell ] && run_one "$sample" transparent-soa "$it" 1 "$ann" $args --soa
            fi
            if [ "$auto" = 1 ]; then
                run_one "$sample" auto "$it" 1 "$ann" $args
                [ "$recording" = 1 ] && run_one "$sample" auto-cold "$it" 1 "$ann" $args
                [ "$sample" = spmv-ell ] && run_one "$sample" auto-soa "$it" 1 "$ann" $args --soa
            fi
        }
    done
    done
}

recording=1
if [ "$warmup" = 1 ]; then
    echo "== warm-up (-i 1 of every variant, not recorded)"
    recording=0
    run_all 1
    recording=1
fi
echo "== running (size $size, iterations $iters_list, tile ${tile:-auto}, timeout ${timeout_s}s)"
run_all "$iters_list"

python3 - "$work/runs.tsv" "$json" "$size" "${tile:-}" <<'EOF'
import json, re, sys, os
runs_tsv, out, size, tile = sys.argv[1:5]
records = []
for line in open(runs_tsv):
    sample, variant, iters, d, args = line.rstrip('\n').split('\t')
    text = open(os.path.join(d, 'stdout'), errors='replace').read()
    rc = int(open(os.path.join(d, 'rc')).read())
    def field(name):
        m = re.search(r'^%s:\s*(\S+)' % name, text, re.M)
        return m.group(1) if m else None
    first = text.splitlines()[0] if text else ''
    m = re.search(r' on (.*)$', first)
    rec = {
        'sample': sample, 'variant': variant, 'iters': int(iters), 'size': size,
        'tile': int(tile) if tile else None, 'args': args,
        'status': 'ok' if rc == 0 else 'timeout' if rc in (124, 137) else 'failed (exit %d)' % rc,
        'checksum': field('checksum'),
        'kernel_ms': float(field('kernel_ms')) if field('kernel_ms') else None,
        'total_ms': float(field('total_ms')) if field('total_ms') else None,
        'wall_ms': int(open(os.path.join(d, 'wall_ms')).read()),
        'device': m.group(1) if m else None,
        'clayout': variant not in ('aos', 'soa'),
    }
    sp = os.path.join(d, 'stats.json')
    if rec['clayout']:
        try:
            st = json.load(open(sp))
            mar = st.get('marshal', {})
            rec.update({
                'to_device_layout': mar.get('to_device_layout'),
                'to_host_layout': mar.get('to_host_layout'),
                'marshal_bytes': mar.get('bytes'),
                'marshal_device_ns': mar.get('device_ns'),
                'fallbacks': len(st.get('fallbacks', [])) + st.get('fallbacks_not_listed', 0),
                'fallback_reasons': [f.get('object', '') + ': ' + f.get('reason', '') for f in st.get('fallbacks', [])][:5],
                'rewritten_kernels': st.get('rewritten_kernels'),
                'decisions': {k: v.get('launches') for k, v in st.get('policy', {}).get('kernels', {}).items()},
                'reasons': {k: v.get('reasons') for k, v in st.get('policy', {}).get('kernels', {}).items()},
                'measured_ms': {k: v.get('measured_ms') for k, v in st.get('policy', {}).get('kernels', {}).items()},
            })
        except Exception as e:
            rec['stats_error'] = str(e)
    if rc != 0:
        err = open(os.path.join(d, 'stderr'), errors='replace').read().strip().splitlines()
        rec['stderr_tail'] = err[-5:]
    records.append(rec)
json.dump(records, open(out, 'w'), indent=1)

bad = 0
groups = {}
for r in records:
    if r['status'] != 'ok' or not r['checksum']:
        bad += 1
        print('FAILED: %s %s -i %d: %s %s' % (r['sample'], r['variant'], r['iters'], r['status'],
                                              ' | '.join(r.get('stderr_tail', []))))
        continue
    if r['variant'] in ('asta', 'asta-soa') and not r.get('to_device_layout'):
        print('NOTE: %s %s -i %d converted nothing to ASTA (to_device_layout = %s)' % (
            r['sample'], r['variant'], r['iters'], r.get('to_device_layout')))
    if r['variant'].startswith('transparent') and not r.get('rewritten_kernels'):
        print('NOTE: %s %s -i %d: no kernel was rewritten (the AoS kernel ran as written)' % (
            r['sample'], r['variant'], r['iters']))
    if r.get('fallbacks'):
        print('NOTE: %s %s -i %d: %d fallbacks: %s' % (r['sample'], r['variant'], r['iters'], r['fallbacks'],
                                                      '; '.join(r.get('fallback_reasons', []))))
    groups.setdefault((r['sample'], r['iters']), []).append(r)
for (sample, iters), rs in sorted(groups.items()):
    sums = {r['checksum'] for r in rs}
    if len(sums) > 1:
        bad += 1
        print('MISMATCH: %s -i %d: %s' % (sample, iters, ', '.join('%s=%s' % (r['variant'], r['checksum']) for r in rs)))
print('== %d runs, %d problems; records in %s' % (len(records), bad, out))
sys.exit(1 if bad else 0)
EOF
