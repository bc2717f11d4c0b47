#!/usr/bin/env bash
# tests/registry/run.sh - the CTest test registry_torch: every sample of every
# registry row against PyTorch (tests/registry/torch_ops.py).
#
#   tests/registry/run.sh TG_REGISTRY [torch_ops.py options...]
#
# Finds a python3 that imports torch (the one on PATH, then /usr/bin/python3,
# where Debian's python3-torch lives); without one it prints "skipped: no
# torch" and exits 77 (CTest's SKIP_RETURN_CODE for this test).
set -uo pipefail
runner="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then
        exec "$p" "$here/torch_ops.py" "$runner" "$@"
    fi
done
echo "registry_torch: skipped: no torch (no python3 here imports it; Debian: python3-torch)"
exit 77
