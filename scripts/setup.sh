#!/usr/bin/env bash
# Installs what clayout's build, tests and demo need on a Debian machine, skipping what is
# already there: PoCL (the CPU OpenCL), the ICD loader, the headers, a C compiler, Rust, and
# pyopencl from PyPI (for the first-client test). Safe to run again.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
[ -e /usr/include/CL/cl.h ] || need_apt+=(opencl-headers)
ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so ' || need_apt+=(ocl-icd-opencl-dev)
ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 || need_apt+=(pocl-opencl-icd)
command -v clinfo >/dev/null 2>&1 || need_apt+=(clinfo)
command -v curl >/dev/null 2>&1 || need_apt+=(curl ca-certificates)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] || {
        echo "setup: installing Rust with rustup" >&2
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component rustfmt,clippy >/dev/null
    }
fi

if [ "${CLAYOUT_SKIP_PYOPENCL:-0}" != 1 ] && ! python3 -c 'import pyopencl' >/dev/null 2>&1; then
    echo "setup: installing pyopencl from PyPI" >&2
    python3 -m pip install -q pyopencl numpy 2>/dev/null ||
        python3 -m pip install -q --break-system-packages pyopencl numpy
fi
