#!/usr/bin/env bash
# scripts/test-python.sh [BUILD_DIR] - builds the Python package and runs its tests.
#
# Contract:
#   - Uses the first of /usr/bin/python3 (Debian's, with python3-numpy and
#     python3-torch) and python3 that imports pytest, pip and setuptools;
#     without one it prints "test-python: skipped: ..." and exits 0
#     (scripts/setup-deps.sh installs python3-pytest, python3-pip and
#     python3-setuptools as root).
#   - Builds and installs the package from python/ with that python's pip,
#     offline (--no-index --no-build-isolation: setuptools from the system),
#     into BUILD_DIR/python (default build/python), never into the system.
#   - Runs python/tests with pytest against that installed copy, loading
#     BUILD_DIR/lib/libtapegrad.so (TAPEGRAD_LIB); the PyTorch tests skip
#     themselves where torch is absent.
#   - TG_PY_SANITIZE=1 (make test-asan, with BUILD_DIR an ASan + UBSan build):
#     pytest runs with the compiler's libasan and libubsan preloaded
#     (LD_PRELOAD; leak detection off: the interpreter's own allocations are
#     never freed), so every Python test, the lifetimes of memory shared with
#     NumPy and PyTorch included, runs under the sanitizers.
#   - Exit status: pytest's (0 all passed), or pip's on a failed build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
py=""
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1 &&
        "$p" -c 'import setuptools, pytest, pip' >/dev/null 2>&1; then
        py="$p"
        break
    fi
done
if [[ -z "$py" ]]; then
    echo "test-python: skipped: no python3 here imports pytest, pip and setuptools" \
        "(Debian: python3-pytest python3-pip python3-setuptools)"
    exit 0
fi
dest="$build/python"
rm -rf "$dest"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
    "$py" -m pip install --quiet --no-deps --no-build-isolation --no-index --target "$dest" \
    "$root/python"
cd "$root"
preload=()
if [[ "${TG_PY_SANITIZE:-0}" == 1 ]]; then
    cc="$(sed -n 's/^CMAKE_C_COMPILER:FILEPATH=//p' "$build/CMakeCache.txt")"
    preload=(env "LD_PRELOAD=$("$cc" -print-file-name=libasan.so) $("$cc" -print-file-name=libubsan.so)"
             "ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0"
             "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
fi
PYTHONPATH="$dest" TAPEGRAD_LIB="$build/lib/libtapegrad.so" \
    "${preload[@]}" "$py" -m pytest -q -p no:cacheprovider python/tests
