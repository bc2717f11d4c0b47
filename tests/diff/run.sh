#!/usr/bin/env bash
# tests/diff/run.sh - the CTest test diff_torch: tapegrad against PyTorch
# (tests/diff/tg_diff.py) on seeded random programs.
#
#   tests/diff/run.sh TG_DIFF_RUN OUT_DIR [tg_diff.py options...]
#
# Finds a python3 that imports torch (the one on PATH, then /usr/bin/python3,
# where Debian's python3-torch lives); without one it prints
# "skipped: no torch" and exits 77 (CTest's SKIP_RETURN_CODE for this test).
# TG_DIFF_SEEDS (default 1) and TG_DIFF_PROGRAMS (default 300) choose the random
# programs; the fixed ones of tests/diff/scenarios.txt run every time;
# failing programs are written to OUT_DIR.
set -uo pipefail
run="$1"
out="$2"
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py=""
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then
        py="$p"
        break
    fi
done
if [[ -z "$py" ]]; then
    echo "diff_torch: skipped: no torch (no python3 here imports it; Debian: python3-torch)"
    exit 77
fi
rm -rf "$out"
exec "$py" "$here/tg_diff.py" --runner "$run" --seeds "${TG_DIFF_SEEDS:-1}" \
    --file "$here/scenarios.txt" \
    --programs "${TG_DIFF_PROGRAMS:-300}" --out "$out" "$@"
