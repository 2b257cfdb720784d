#!/usr/bin/env python3
"""Bootstraps src/api_table.rs: the one table of OpenCL entry points clayout exports.

Names and order come from the Khronos cl.h; Rust signatures come from opencl-sys's
cl_function_types.rs, so parameter types match the headers exactly. The generated file is
committed and edited by hand afterwards (to mark which entry points are hooked); rerun this
only when a new OpenCL version adds entry points, and merge the `hook` marks back.
usage: gen_api_table.py /usr/include/CL/cl.h path/to/opencl-sys/src/cl_function_types.rs > src/api_table.rs
"""
import re, sys

hdr, rs = open(sys.argv[1]).read(), open(sys.argv[2]).read()
names = []
for m in re.finditer(r'^(cl[A-Za-z0-9]+)\(', hdr, re.M):
    if m.group(1) not in names:
        names.append(m.group(1))
# Deprecated 1.0 entry point that cl.h only declares indented under CL_USE_DEPRECATED_OPENCL_1_0_APIS;
# loaders still export it and old applications still call it.
names.append('clSetCommandQueueProperty')

def sig(name):
    m = re.search(r'pub type %s_t =\s*Option<\s*unsafe extern "C" fn\(' % name, rs)
    if not m:
        return None
    i, depth, start = m.end(), 1, m.end()
    while depth:
        c = rs[i]
        depth += {'(': 1, ')': -1}.get(c, 0)
        i += 1
    params = rs[start:i - 1]
    rest = rs[i:i + 120]
    ret = re.match(r'\s*(?:->\s*([^,\n>]+?))?\s*,?\s*>', rest)
    params = re.sub(r'\s+', ' ', params).strip().rstrip(',')
    params = params.replace('( ', '(').replace(', )', ')').replace(' )', ')').replace('< ', '<').replace(', >', '>').replace(' >', '>')
    return params, (ret.group(1) if ret and ret.group(1) else '()')

hooked = set(sys.argv[3:])
print('// One line per exported OpenCL entry point: `fwd` forwards untouched, `hook` routes the call')
print('// through crate::hooks. Bootstrapped by tools/gen_api_table.py from cl.h; edited by hand since.')
print('cl_api! {')
for n in names:
    s = sig(n)
    if s is None:
        sys.stderr.write('no signature for %s\n' % n)
        continue
    kind = 'hook' if n in hooked else 'fwd'
    print('    %s %s(%s) -> %s;' % (kind, n, s[0], s[1]))
print('}')
