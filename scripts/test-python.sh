#!/usr/bin/env bash
# scripts/test-python.sh [BUILD_DIR] - tests the Python package.
#
# Contract:
#   - The interpreter is scripts/python.sh's (the one the build made the
#     module for). Without pytest there, or without the module in
#     BUILD_DIR/python/tapegrad (a build without Python's headers), it prints
#     "test-python: skipped: ..." and exits 0 (scripts/setup-deps.sh installs
#     python3-pytest, python3-dev and the rest as root).
#   - Plain (default): the package is installed the way a user installs it,
#     `pip install .` into a virtual environment (BUILD_DIR/pip-venv, with
#     the system's site packages: NumPy, PyTorch, pytest; scikit-build-core
#     comes from PyPI), built by the project's CMake into BUILD_DIR/wheel
#     (kept: a second run rebuilds only what changed) without CUDA (the
#     suite's CUDA tests need a GPU; a wheel with CUDA is the same code). The
#     whole of python/tests then runs against that installed copy from
#     outside the checkout (nothing of python/ on sys.path).
#   - TG_PY_SANITIZE=1 (make test-asan, with BUILD_DIR an ASan + UBSan build):
#     python/tests runs against BUILD_DIR's own module (TAPEGRAD_EXT) with the
#     compiler's libasan and libubsan preloaded (leak detection off: the
#     interpreter's own allocations are never freed), so every test, the
#     lifetimes of memory shared with NumPy and PyTorch included, runs under
#     the sanitizers.
#   - TG_PY_TESTS="-k expr ..." passes extra arguments to pytest.
#   - BUILD_DIR/tests/tg_registry (the op registry's tool) is given to the
#     registry walk (TAPEGRAD_REGISTRY); without it that test skips.
#   - Exit status: pytest's (0 all passed), or pip's on a failed install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
py="$(bash "$root/scripts/python.sh" || true)"
if [[ -z "$py" ]] || ! "$py" -c 'import pytest' >/dev/null 2>&1; then
    echo "test-python: skipped: no python3 here imports pytest (Debian: python3-pytest)"
    exit 0
fi
ext="$(ls "$build"/python/tapegrad/_C.*.so 2>/dev/null | head -n 1 || true)"
if [[ -z "$ext" ]]; then
    echo "test-python: skipped: $build has no Python module (no Python headers at configure" \
        "time; Debian: python3-dev)"
    exit 0
fi
# shellcheck disable=SC2206
extra=(${TG_PY_TESTS:-})
# the op registry's tool, for python/tests/test_registry_walk.py
[[ -x "$build/tests/tg_registry" ]] && export TAPEGRAD_REGISTRY="$build/tests/tg_registry"

if [[ "${TG_PY_SANITIZE:-0}" == 1 ]]; then
    cc="$(sed -n 's/^CMAKE_C_COMPILER:FILEPATH=//p' "$build/CMakeCache.txt")"
    cd "$root"
    exec env "LD_PRELOAD=$("$cc" -print-file-name=libasan.so) $("$cc" -print-file-name=libubsan.so)" \
        "ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0" \
        "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1" \
        PYTHONPATH="$root/python" TAPEGRAD_EXT="$ext" \
        "$py" -m pytest -q -p no:cacheprovider "${extra[@]}" python/tests
fi

venv="$build/pip-venv"
[[ -x "$venv/bin/python" ]] || "$py" -m venv --system-site-packages "$venv"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
"$venv/bin/python" -c 'import scikit_build_core' >/dev/null 2>&1 ||
    "$venv/bin/pip" install --quiet 'scikit-build-core>=0.10'
start=$(date +%s)
"$venv/bin/pip" install --quiet --no-deps --no-build-isolation --force-reinstall \
    --config-settings=build-dir="$build/wheel" --config-settings=cmake.define.TG_CUDA=OFF "$root"
echo "test-python: pip install . took $(($(date +%s) - start)) s (build dir $build/wheel)"
# from outside the checkout: `python -m pytest` puts the working directory on
# sys.path, and pytest puts python/tests there (it has no __init__.py), never python/
outside="$(mktemp -d)"
trap 'rm -rf "$outside"' EXIT
cd "$outside"
env -u PYTHONPATH -u TAPEGRAD_EXT TAPEGRAD_TEST_INSTALLED=1 \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider "${extra[@]}" "$root/python/tests"
