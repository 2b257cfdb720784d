#!/usr/bin/env bash
# Times every corpus entry (tests/corpus/, see its README.md) plain and under clayout, for a GPU.
#
#   scripts/corpus.sh [--platform NAME] [--scale N] [--only "a b ..."] [--repeat N]
#                     [--variants "plain always auto"] [--no-warmup] [--lib PATH]
#                     [--timeout SECONDS] [--json FILE]
#
# Each entry runs through the corpus driver (tests/corpus/driver.c, built here with $CC) in up
# to three variants:
#   plain    without clayout
#   always   under clayout with the entry's side file, CLAYOUT_POLICY=always (every launch of a
#            rewritten kernel runs its ASTA copy on converted buffers)
#   auto     the same under CLAYOUT_POLICY=auto (the default: the cost model chooses per launch);
#            its cache is the one the warm-up runs trained
# Before the measured runs each variant runs once unrecorded (--no-warmup skips that), so that
# the OpenCL implementation's program caches and clayout's (tiles, conversion costs, kernel times)
# are warm. --repeat N keeps the fastest of N measured runs.
#
# Per entry it prints the annotated kernels and how many were rewritten, and for each variant the
# loop time (every launch up to the final clFinish: the first iteration, where clayout converts
# the buffers, included; the read-back and its conversion left out) with the speedup over plain.
# The steady columns leave out the first iteration too. Every variant must print the same bytes
# (return codes and checksums): a difference is a MISMATCH and the exit status is 1.
#
# --scale: the corpus's sizes are for CI at 1; 256 makes most buffers 0.5-1.5 GiB (an H100 holds
# them; `driver --dry-run --scale N ENTRY.spec` prints what an entry allocates) and switches to
# the large iteration counts. The JSON file (default <target>/corpus-results.json) holds every
# run: entry, variant, status, loop/first/steady/total ms, and clayout's statistics.
set -uo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
platform=${CORPUS_PLATFORM:-${SAMPLE_PLATFORM:-}}
scale=1
only=
repeat=1
variants="plain always auto"
warmup=1
lib=${CLAYOUT_LIB:-}
timeout_s=600
json=

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --platform) platform=$2; shift ;;
        --scale) scale=$2; shift ;;
        --only) only=" $2 "; shift ;;
        --repeat) repeat=$2; shift ;;
        --variants) variants=$2; shift ;;
        --no-warmup) warmup=0 ;;
        --lib) lib=$2; shift ;;
        --timeout) timeout_s=$2; shift ;;
        --json) json=$2; shift ;;
        -h|--help) usage ;;
        *) echo "corpus: unknown argument $1" >&2; usage ;;
    esac
    shift
done

target=${CARGO_TARGET_DIR:-$root/target}
json=${json:-$target/corpus-results.json}
work=$target/corpus-runs
rm -rf "$work"
mkdir -p "$work" "$(dirname "$json")"

driver=$target/corpus/driver
mkdir -p "$(dirname "$driver")"
# shellcheck disable=SC2086
${CC:-cc} -O2 -Wall -pthread -Wno-deprecated-declarations -o "$driver" "$root/tests/corpus/driver.c" -lOpenCL -lm ||
    { echo "corpus: cannot build the driver" >&2; exit 1; }

if [[ " $variants " == *" always "* || " $variants " == *" auto "* ]]; then
    if [ -z "$lib" ]; then
        for c in "$target/release/libclayout.so" "$target/debug/libclayout.so"; do
            if [ -f "$c" ]; then lib=$c; break; fi
        done
    fi
    if [ -z "$lib" ]; then
        echo "== building libclayout.so (cargo build --release --lib)"
        (cd "$root" && cargo build --release --lib --quiet) || { echo "corpus: cargo build failed" >&2; exit 1; }
        lib=$target/release/libclayout.so
    fi
    [ -f "$lib" ] || { echo "corpus: $lib not found (--lib PATH)" >&2; exit 1; }
    lib=$(readlink -f "$lib")
    echo "== clayout: $lib"
fi
echo "== driver: $driver, scale $scale${platform:+, platform $platform}"

: >"$work/runs.tsv"
n=0
run_one() { # entry variant recorded(0/1)
    local entry=$1 variant=$2 recorded=$3
    local dir=$root/tests/corpus/$entry
    n=$((n + 1))
    local d=$work/$n
    mkdir -p "$d"
    local -a envs=(env -u LD_PRELOAD -u CLAYOUT_STATS -u CLAYOUT_ANNOTATIONS -u CLAYOUT_POLICY -u CLAYOUT_CACHE_DIR -u CLAYOUT_LOG)
    local -a args=("$driver" --scale "$scale")
    [ -n "$platform" ] && args+=(--platform "$platform")
    args+=("$dir/$entry.spec")
    if [ "$variant" != plain ]; then
        [ -f "$dir/$entry.dl" ] && envs+=(CLAYOUT_ANNOTATIONS="$dir/$entry.dl")
        envs+=(LD_PRELOAD="$lib" CLAYOUT_POLICY="$variant" CLAYOUT_CACHE_DIR="$work/cache" CLAYOUT_LOG=info
               CLAYOUT_STATS="$d/stats.json")
    fi
    timeout -k 5 "$timeout_s" "${envs[@]}" "${args[@]}" >"$d/stdout" 2>"$d/stderr"
    echo $? >"$d/rc"
    [ "$recorded" = 1 ] && printf '%s\t%s\t%s\n' "$entry" "$variant" "$d" >>"$work/runs.tsv"
}

entries=$(cd "$root/tests/corpus" && for s in */*.spec; do dirname "$s"; done)
for e in $entries; do
    [ -n "$only" ] && [[ "$only" != *" $e "* ]] && continue
    echo "== $e"
    for v in $variants; do
        [ "$warmup" = 1 ] && run_one "$e" "$v" 0
        for _ in $(seq "$repeat"); do run_one "$e" "$v" 1; done
    done
done

python3 - "$work/runs.tsv" "$json" "$root/tests/corpus" "$scale" <<'EOF'
import json, os, re, sys
runs_tsv, out, corpus, scale = sys.argv[1:5]

def annotated(entry):
    """Annotated kernels: side-file lines and //DL: lines in the sources (as tests/corpus.rs)."""
    names = set()
    d = os.path.join(corpus, entry)
    side = os.path.join(d, entry + '.dl')
    if os.path.exists(side):
        for l in open(side):
            l = l.strip()
            if l and not l.startswith('#'):
                names.add(re.split(r'[:\s]', l, 1)[0])
    for f in os.listdir(d):
        if f.endswith(('.cl', '.h', '.clh')):
            text = open(os.path.join(d, f)).read()
            for m in re.finditer(r'//\s?DL:.*?\b(?:__)?kernel\b.*?\bvoid\s+(\w+)', text, re.S):
                names.add(m.group(1))
    return names

records = []
for line in open(runs_tsv):
    entry, variant, d = line.rstrip('\n').split('\t')
    rc = int(open(os.path.join(d, 'rc')).read())
    err = open(os.path.join(d, 'stderr'), errors='replace').read()
    m = re.search(r'corpus-time: loop_ms=(\S+) first_ms=(\S+) steady_ms=(\S+) total_ms=(\S+)', err)
    rec = {'entry': entry, 'variant': variant, 'scale': int(scale),
           'status': 'ok' if rc == 0 else 'timeout' if rc in (124, 137) else 'failed (exit %d)' % rc,
           'stdout': open(os.path.join(d, 'stdout'), errors='replace').read()}
    if m:
        rec.update(loop_ms=float(m.group(1)), first_ms=float(m.group(2)), steady_ms=float(m.group(3)),
                   total_ms=float(m.group(4)))
    dev = re.search(r'corpus-device: (.*)', err)
    rec['device'] = dev.group(1) if dev else None
    rec['rewritten'] = sorted(set(re.findall(r'clayout: info: kernel (\S+): rewritten to ASTA addressing', err)))
    sp = os.path.join(d, 'stats.json')
    if os.path.exists(sp):
        try:
            st = json.load(open(sp))
            mar = st.get('marshal', {})
            rec.update(to_device_layout=mar.get('to_device_layout'), to_host_layout=mar.get('to_host_layout'),
                       launches_rewritten=st.get('launches_rewritten'),
                       launches_as_written=st.get('launches_as_written'),
                       fallbacks=[f.get('object', '') + ': ' + f.get('reason', '') for f in st.get('fallbacks', [])][:20],
                       decisions={k: v.get('launches') for k, v in st.get('policy', {}).get('kernels', {}).items()})
        except Exception as e:
            rec['stats_error'] = str(e)
    if rc != 0:
        rec['stderr_tail'] = err.strip().splitlines()[-5:]
    records.append(rec)
json.dump(records, open(out, 'w'), indent=1)

bad = 0
by_entry = {}
for r in records:
    by_entry.setdefault(r['entry'], []).append(r)
print('%-22s %-7s %10s %10s %8s %10s %8s %9s %9s' % ('entry', 'rewrite', 'plain ms', 'always ms', 'speedup',
                                                     'auto ms', 'speedup', 'steady-al', 'steady-au'))
def best(rs, v, key):
    xs = [r[key] for r in rs if r['variant'] == v and r['status'] == 'ok' and key in r]
    return min(xs) if xs else None
def ratio(a, b):
    return '%8.2fx' % (a / b) if a and b else '%9s' % '-'
for e, rs in by_entry.items():
    outs = {r['stdout'] for r in rs if r['status'] == 'ok'}
    failed = [r for r in rs if r['status'] != 'ok']
    ann = annotated(e)
    rw = set()
    for r in rs:
        rw |= set(r['rewritten'])
    p, al, au = (best(rs, v, 'loop_ms') for v in ('plain', 'always', 'auto'))
    ps, als, aus = (best(rs, v, 'steady_ms') for v in ('plain', 'always', 'auto'))
    f = lambda x: '%10.1f' % x if x is not None else '%10s' % '-'
    note = ''
    if failed:
        bad += 1
        note = '  FAILED: ' + '; '.join('%s %s %s' % (r['variant'], r['status'], ' | '.join(r.get('stderr_tail', [])))
                                       for r in failed)
    elif len(outs) > 1:
        bad += 1
        note = '  MISMATCH between variants'
    print('%-22s %3d/%-3d %s %s %s %s %s %s %s%s' % (e, len(rw & ann), len(ann), f(p), f(al), ratio(p, al), f(au),
                                                  ratio(p, au), ratio(ps, als), ratio(ps, aus), note))
print('== %d entries, %d problems; records in %s' % (len(by_entry), bad, out))
sys.exit(1 if bad else 0)
EOF
