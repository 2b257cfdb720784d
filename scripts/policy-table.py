#!/usr/bin/env python3
"""The cost model's table for docs/results.md, from one or more run-samples.sh JSON files made
with --with-auto --with-transparent (several files: the median of each run's net time).

    scripts/policy-table.py RESULTS.json... [--markdown]

"Spread" is how far apart the slowest and fastest runs of the program without clayout were: the
noise floor against which the 2 % target is judged. Net time as clayout-plot computes it: kernel_ms, plus for clayout runs the share of the
conversions' device time that went back to the host layout at the read (by count). For every
sample and iteration count it prints the plain program (no clayout), `always` (the `transparent`
variant), `auto` with the cache the warm-up filled, and `auto` with an empty cache, and checks the
issue's two targets: auto never more than 2 % slower than the program without clayout, and at 30
iterations at least 95 % of the speedup `always` gives.
"""
import json
import statistics
import sys

files = [a for a in sys.argv[1:] if not a.startswith('--')]
runs = {}
for f in files:
    for r in json.load(open(f)):
        if r.get('status') != 'ok' or r.get('kernel_ms') is None:
            continue
        ms = r['kernel_ms']
        moves = (r.get('to_device_layout') or 0) + (r.get('to_host_layout') or 0)
        if moves and r.get('marshal_device_ns'):
            ms += r['marshal_device_ns'] * (r.get('to_host_layout') or 0) / moves / 1e6
        runs.setdefault((r['sample'], r['variant'], r['iters']), []).append(ms)

med = {k: statistics.median(v) for k, v in runs.items()}
# Each form's fastest timed launch, per kernel, from the runs with an empty cache (which time
# every form they may choose), and the forms the warm runs ran.
forms = {}
chosen = {}
for f in files:
    for r in json.load(open(f)):
        if r.get('status') != 'ok':
            continue
        if r['variant'] in ('auto-cold', 'auto-soa'):
            for k, m in (r.get('measured_ms') or {}).items():
                for v, t in (m or {}).items():
                    key = (r['sample'], k, v)
                    forms[key] = min(t, forms.get(key, t))
        if r['variant'] in ('auto', 'auto-soa'):
            for k, d in (r.get('decisions') or {}).items():
                for v, n in (d or {}).items():
                    chosen.setdefault((r['sample'], k, r['iters']), {}).setdefault(v, 0)
                    chosen[(r['sample'], k, r['iters'])][v] += n
# (label, plain variant, always variant, auto variant, auto-cold variant)
rows = [
    ('blackscholes', 'aos', 'transparent', 'auto', 'auto-cold'),
    ('lbm', 'aos', 'transparent', 'auto', 'auto-cold'),
    ('particles', 'aos', 'transparent', 'auto', 'auto-cold'),
    ('spmv-ell', 'aos', 'transparent', 'auto', 'auto-cold'),
    ('spmv-ell (column-major)', 'soa', 'transparent-soa', 'auto-soa', None),
]
iters = sorted({k[2] for k in med})
print('| Sample | iterations | without clayout ms (spread) | always ms (speedup) | auto ms (speedup) | auto, empty cache ms (speedup) | auto vs without | auto / always speedup |')
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
misses = []
for label, plain, always, auto, cold in rows:
    sample = label.split(' ')[0]
    for it in iters:
        p = med.get((sample, plain, it))
        if p is None:
            continue
        cell = lambda v: '%.2f (%.2fx)' % (med[(sample, v, it)], p / med[(sample, v, it)]) if v and (sample, v, it) in med else '-'
        a = med.get((sample, auto, it))
        al = med.get((sample, always, it))
        vs = '%+.1f %%' % ((a / p - 1) * 100) if a else '-'
        keep = '%.0f %%' % (100 * (p / a) / (p / al)) if a and al else '-'
        rs = runs[(sample, plain, it)]
        spread = ' (%.0f %%)' % (100 * (max(rs) / min(rs) - 1)) if len(rs) > 1 else ''
        print('| %s | %d | %.2f%s | %s | %s | %s | %s | %s |' % (label, it, p, spread, cell(always), cell(auto), cell(cold), vs, keep))
        if a and a > 1.02 * p:
            misses.append('%s, %d iterations: auto %.1f %% slower than without clayout' % (label, it, (a / p - 1) * 100))
        if it == 30 and a and al and p / al > 1 and (p / a) < 0.95 * (p / al):
            misses.append('%s, 30 iterations: auto keeps %.0f %% of the speedup of always' % (label, 100 * (p / a) / (p / al)))
print()
print('Runs per cell: %s.' % ', '.join(sorted({str(len(v)) for v in runs.values()})))
print('Targets missed: ' + ('none' if not misses else '; '.join(misses)))
print()
print('Each form of each rewritten kernel, fastest timed launch (ms), from the runs with an empty cache:')
print()
print('| Sample | kernel | as written | staged | ASTA |')
print('| --- | --- | ---: | ---: | ---: |')
for (sample, k) in sorted({(a, b) for a, b, _ in forms}):
    cell = lambda v: '%.3f' % forms[(sample, k, v)] if (sample, k, v) in forms else '-'
    print('| %s | %s | %s | %s | %s |' % (sample, k, cell('written'), cell('staged'), cell('asta')))
print()
print('Forms the warm `auto` runs ran (launches, all repetitions together):')
print()
for (sample, k, it), d in sorted(chosen.items()):
    print('- %s %s, %d iterations: %s' % (sample, k, it, ', '.join('%s %d' % (v, n) for v, n in sorted(d.items()))))
