#!/usr/bin/env bash
# scripts/setup-deps.sh - make sure the build dependencies of tapegrad are present.
#
# Contract:
#   - Checks for: make, cmake, a C compiler with OpenMP (gcc), a C++ compiler
#     (g++: the test suite builds the CUDA kernels a second time as C++ to run
#     them on an emulated device, and nvcc needs it as host compiler), pkg-config,
#     Criterion (libcriterion-dev), OpenBLAS with CBLAS (libopenblas-dev), and
#     optionally ninja (ninja-build) and NumPy for python3 (python3-numpy: the
#     CLI test compares `tapegrad logprob` with bench/reference_logprob.py,
#     and skips that comparison without it), PyTorch for python3
#     (python3-torch: the differential test tests/diff, skipped without it),
#     pytest, pip, venv, hypothesis and Python's headers for python3
#     (python3-pytest, python3-pip, python3-venv, python3-hypothesis,
#     python3-dev: the Python package is built and tested, skipped without
#     them; its `pip install .` test fetches scikit-build-core from PyPI),
#     clang with libFuzzer and OpenMP (clang, libclang-rt-dev, libomp-dev:
#     the fuzzers of tests/fuzz, skipped without them), and OpenBLAS's OpenMP
#     build (libopenblas-openmp-dev: its GEMMs then share the kernels' OpenMP
#     threads; CMake prefers it where installed), and Open MPI (libopenmpi-dev,
#     openmpi-bin: the vocab-parallel ops over MPI and their tests under
#     mpirun; a build without it builds and tests everything else). The CUDA
#     toolkit (with NCCL) is
#     optional and is only detected by CMake; this script never installs it.
#   - Everything present: prints nothing (unless -v) and exits 0 quickly.
#   - Something missing and running as root: installs the missing Debian
#     packages with apt-get (non-interactive), then checks again.
#   - Something required missing and not root: prints the exact
#     `sudo apt-get install -y ...` line and exits 1. A missing optional
#     package (ninja, numpy, torch, clang, OpenBLAS's OpenMP build) only prints
#     a hint.
#   - Honours CC (default: cc, else gcc) for the compiler checks.
set -euo pipefail

verbose=0
[[ "${1:-}" == "-v" ]] && verbose=1

CC_BIN="${CC:-}"
if [[ -z "$CC_BIN" ]]; then
    if command -v cc >/dev/null 2>&1; then CC_BIN=cc; else CC_BIN=gcc; fi
fi

missing=()   # required Debian packages that are missing
optional=()  # optional Debian packages that are missing

have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_cc() { have_cmd "$CC_BIN"; }
# A header is present when the compiler's preprocessor finds it.
have_header() { printf '#include <%s>\n' "$1" | "$CC_BIN" -E -x c - >/dev/null 2>&1; }
# A library is present when the compiler's linker search path has it.
have_lib() {
    local p
    p="$("$CC_BIN" -print-file-name="lib$1.so" 2>/dev/null)" || return 1
    [[ "$p" == /* && -e "$p" ]]
}
# Without a compiler we cannot ask it; ask dpkg instead.
have_pkg() {
    have_cmd dpkg-query &&
        [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}
need() { missing+=("$1"); }
# NumPy importable by python3 on PATH or by the system's /usr/bin/python3
# (where python3-numpy installs it), as tests/cli/logprob.sh looks for it.
have_numpy() {
    local py
    for py in python3 /usr/bin/python3; do
        have_cmd "$py" && "$py" -c 'import numpy' >/dev/null 2>&1 && return 0
    done
    return 1
}

# The Python package's build and tests, for /usr/bin/python3 or python3 on PATH
# (scripts/python.sh picks the same one): pytest, pip, venv and hypothesis
# importable, and Python's headers (the extension module tapegrad._C).
have_python_tools() {
    local py
    for py in /usr/bin/python3 python3; do
        have_cmd "$py" && "$py" -c 'import os, sys, sysconfig
import pytest, pip, venv, ensurepip, hypothesis
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
            >/dev/null 2>&1 && return 0
    done
    return 1
}

# PyTorch importable by python3 on PATH or by /usr/bin/python3 (tests/diff/run.sh
# looks in the same two places).
have_torch() {
    local py
    for py in python3 /usr/bin/python3; do
        have_cmd "$py" && "$py" -c 'import importlib.util, sys
sys.exit(importlib.util.find_spec("torch") is None)' >/dev/null 2>&1 && return 0
    done
    return 1
}
# clang with libFuzzer's runtime and OpenMP (tests/fuzz/run.sh checks by linking one).
have_libfuzzer() {
    have_cmd clang || return 1
    local p
    p="$(clang -print-file-name="libclang_rt.fuzzer-$(uname -m).a" 2>/dev/null)" || return 1
    [[ "$p" == /* && -e "$p" ]] || return 1
    printf '#include <omp.h>\n' | clang -E -x c - >/dev/null 2>&1
}

check_all() {
    missing=()
    optional=()
    have_cmd make || need make
    have_cmd cmake || need cmake
    have_cmd pkg-config || need pkg-config
    { have_cmd g++ || have_cmd c++; } || need g++
    have_cmd ninja || optional+=(ninja-build)
    have_numpy || optional+=(python3-numpy)
    have_torch || optional+=(python3-torch)
    have_python_tools ||
        optional+=(python3-pytest python3-pip python3-venv python3-dev python3-hypothesis)
    have_libfuzzer || optional+=(clang libclang-rt-dev libomp-dev)
    { have_cmd mpicc && have_cmd mpirun; } || optional+=(libopenmpi-dev openmpi-bin)
    # OpenBLAS's OpenMP build: its GEMMs share the kernels' OpenMP threads
    # (without it, the pthread build works but two thread pools compete)
    [[ -e /usr/lib/$(gcc -print-multiarch 2>/dev/null)/openblas-openmp/libopenblas.so ]] ||
        optional+=(libopenblas-openmp-dev)
    if have_cc; then
        have_header stdio.h || need libc6-dev
        { have_header omp.h && have_lib gomp; } || need gcc
        { have_header criterion/criterion.h && have_lib criterion; } || need libcriterion-dev
        { have_header cblas.h && have_lib openblas; } || need libopenblas-dev
    else
        need gcc
        need libc6-dev
        have_pkg libcriterion-dev || need libcriterion-dev
        have_pkg libopenblas-dev || need libopenblas-dev
    fi
    # de-duplicate, keep order
    if ((${#missing[@]})); then
        mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
    fi
}

check_all
if ((${#missing[@]} == 0 && ${#optional[@]} == 0)); then
    ((verbose)) && echo "setup-deps: all build dependencies are present"
    exit 0
fi

if [[ "$(id -u)" == 0 ]] && have_cmd apt-get; then
    pkgs=("${missing[@]}" "${optional[@]}")
    echo "setup-deps: installing ${pkgs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
    check_all
    if ((${#missing[@]})); then
        echo "setup-deps: still missing after apt-get: ${missing[*]}" >&2
        exit 1
    fi
    exit 0
fi

if ((${#missing[@]} == 0)); then
    echo "setup-deps: optional: 'sudo apt-get install -y ${optional[*]}' (ninja: faster" \
        "builds; numpy: the reference comparison of the logprob CLI test; torch: the" \
        "differential test against PyTorch; pytest, python3-dev: the Python package;" \
        "clang: the fuzzers; Open MPI: the" \
        "vocab-parallel ops and their tests)" >&2
    exit 0
fi

echo "setup-deps: missing build dependencies: ${missing[*]}" >&2
echo "Install them with:" >&2
pkgs=("${missing[@]}" "${optional[@]}")
echo "  sudo apt-get update && sudo apt-get install -y ${pkgs[*]}" >&2
exit 1
