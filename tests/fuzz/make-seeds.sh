#!/usr/bin/env bash
# tests/fuzz/make-seeds.sh - regenerate the committed seed corpora of the fuzzers.
#
#   tests/fuzz/make-seeds.sh BUILD_DIR      (a build with tests/tg_diff_run, e.g. build)
#
# corpus/ops: every program of tests/prog/programs/*.txt, and (when a python3 with torch
# is found) 24 short programs of the differential generator (seed 7), each encoded with
# `tg_diff_run --encode`. corpus/npy: small .npy files written by NumPy (versions 1.0-3.0,
# every accepted dtype, Fortran order, 0-d, empty and 8-d arrays) plus a few broken ones.
# The output is deterministic; commit what changes. Other files in corpus/ops (regression
# inputs, inputs merged by `make fuzz-merge`) are left as they are.
set -euo pipefail
build="${1:?usage: make-seeds.sh BUILD_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run="$build/tests/tg_diff_run"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# only the seeds this script writes are replaced: regression inputs added by
# hand and those merged from exploring (make fuzz-merge) stay
mkdir -p "$here/corpus/ops" "$here/corpus/npy"
rm -f "$here"/corpus/ops/diff_seed7_*.bin
for f in "$here"/../prog/programs/*.txt; do
    base="$(basename "$f" .txt)"
    rm -f "$here/corpus/ops/${base}"_[0-9]*.bin
    # one file per program (programs are separated by lines ---)
    awk -v out="$tmp/$base" 'BEGIN{n=0; f=out "_" n ".txt"} /^---$/{n++; f=out "_" n ".txt"; next} {print > f}' "$f"
done
# the first of python3 on PATH and /usr/bin/python3 that imports module $1
python_with() {
    local p
    for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null 2>&1 && "$p" -c "import $1" >/dev/null 2>&1; then
            echo "$p"
            return
        fi
    done
}
py="$(python_with torch)"
if [[ -n "$py" ]]; then
    "$py" "$here/../diff/tg_diff.py" --runner "$run" --seeds 7 --programs 60 --emit "$tmp/gen"
    # the short ones (the byte decoder reads at most 64 instructions)
    n=0
    for f in "$tmp"/gen/*.txt; do
        if (( $(grep -c . "$f") <= 64 && n < 24 )); then cp "$f" "$tmp/diff_$(basename "$f")"; n=$((n + 1)); fi
    done
else
    echo "make-seeds: no python3 with torch: corpus/ops gets the hand-written programs only" >&2
fi
for f in "$tmp"/*.txt; do
    "$run" --encode "$f" "$here/corpus/ops/$(basename "$f" .txt).bin"
done

nppy="$(python_with numpy)"
if [[ -z "$nppy" ]]; then
    echo "make-seeds: no python3 with numpy: corpus/npy left as it is" >&2
    exit 0
fi
# the files below are overwritten; inputs merged from exploring (named by their
# SHA-1) and regression inputs added by hand stay
"$nppy" - "$here/corpus/npy" <<'PY'
import io, os, sys
import numpy as np
from numpy.lib import format as fmt
out = sys.argv[1]
def save(name, a, version=None, raw=None):
    path = os.path.join(out, name)
    if raw is not None:
        open(path, 'wb').write(raw); return
    b = io.BytesIO()
    fmt.write_array(b, a, version=version)
    open(path, 'wb').write(b.getvalue())
save('f4_2x3.npy', np.arange(6, dtype='<f4').reshape(2, 3))
save('f8_scalar.npy', np.array(2.5))
save('f8_v2.npy', np.array([1.0, -2.0, 3.5]), version=(2, 0))
save('i8_v3.npy', np.array([[1, -2], [3, 4]], dtype='<i8'), version=(3, 0))
save('i4.npy', np.array([0, -1, 7, -100], dtype='<i4'))
save('f8_fortran.npy', np.asfortranarray(np.arange(6.0).reshape(2, 3)))
save('i4_fortran_3d.npy', np.asfortranarray(np.arange(24, dtype='<i4').reshape(2, 3, 4)))
save('f4_empty.npy', np.zeros((0, 3), dtype='<f4'))
save('f8_8d.npy', np.arange(4.0).reshape(1, 2, 1, 1, 1, 1, 1, 2))
save('i8_zero.npy', np.zeros(0, dtype='<i8'))
save('f8_special.npy', np.array([np.nan, np.inf, -np.inf, -0.0, 1e-310]))
good = open(os.path.join(out, 'f4_2x3.npy'), 'rb').read()
save('bad_truncated.npy', None, raw=good[:-3])
save('bad_trailing.npy', None, raw=good + b'\0')
save('bad_big_shape.npy', None, raw=good.replace(b'(2, 3)', b'(9999999999, 99999999)'[:6]))
save('bad_descr.npy', None, raw=good.replace(b"'<f4'", b"'>f4'"))
PY
echo "make-seeds: $(ls "$here/corpus/ops" | wc -l) ops seeds, $(ls "$here/corpus/npy" | wc -l) npy seeds"
