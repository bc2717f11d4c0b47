#!/usr/bin/env bash
# tests/dlpack/run.sh LIBTAPEGRAD - the CTest test dlpack_torch (torch_interop.py beside).
# Finds a python3 that imports torch (the one on PATH, then /usr/bin/python3, where Debian's
# python3-torch lives); without one it prints "skipped: no torch" and exits 77.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then
        exec "$p" "$here/torch_interop.py" "$1"
    fi
done
echo "dlpack_torch: skipped: no torch (no python3 here imports it; Debian: python3-torch)"
exit 77
