#!/usr/bin/env bash
# tests/cli/logprob.sh - checks `tapegrad logprob` as a user runs it.
#
# Usage: logprob.sh PATH_TO_TAPEGRAD PATH_TO_reference_logprob.py
# Without NumPy: small .npy inputs are written byte by byte (printf), the
# outputs are read back with od, and their values are checked against the
# formulas computed with awk; flag errors and library errors are checked for
# their exit codes and one-line messages. With NumPy (python3, or the Python
# named by $TAPEGRAD_PYTHON): random inputs of several shapes, dtypes and
# options are also compared with bench/reference_logprob.py (float64);
# TAPEGRAD_PYTHON=none skips them.
# Prints each failed check, then "cli_logprob: N passed, N failed[, N skipped]";
# exits 0 when nothing failed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init logprob "$1"
ref="$2"
skipped=0
one_line() { # NAME PREFIX: stderr is exactly one line starting with PREFIX, stdout empty
    if [[ -s "$tmp/out" ]]; then bad "$1: printed on stdout"; else ok; fi
    if [[ "$(wc -l <"$tmp/err")" == 1 ]] && grep -q "^$2" "$tmp/err"; then ok; else
        bad "$1: stderr is not one '$2...' line:"
        cat "$tmp/err"
    fi
}
usage_error() { # NAME ARGS...: exit 2 with one "tapegrad: " line
    local name="$1"
    shift
    run "$name" 2 logprob "$@" && one_line "$name" "tapegrad: "
}
failure() { # NAME TEXT ARGS...: exit 1 with one "tapegrad logprob: " line containing TEXT
    local name="$1" text="$2"
    shift 2
    run "$name" 1 logprob "$@" || return
    one_line "$name" "tapegrad logprob: "
    has "$name" err "$text"
}

# ---- writing .npy files without NumPy -------------------------------------------

# npy FILE DESCR SHAPE DATA: a version 1.0 .npy file; DATA is printf escapes.
npy() {
    local file="$1" descr="$2" shape="$3" data="$4"
    local dict="{'descr': '$descr', 'fortran_order': False, 'shape': $shape, }"
    local hl=$((${#dict} + 1))
    local pad=$((64 - (10 + hl) % 64))
    local field=$((hl + pad))
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((field & 255)))\\x$(printf %02x $((field >> 8)))"
        printf '%s' "$dict"
        printf '%*s\n' "$pad" ''
        printf "$data"
    } >"$file"
}
# Little-endian bytes of a few exact values, as printf escapes.
f64() {
    local v out=""
    for v in "$@"; do
        case "$v" in
        0) out+='\x00\x00\x00\x00\x00\x00\x00\x00' ;;
        1) out+='\x00\x00\x00\x00\x00\x00\xf0\x3f' ;;
        2) out+='\x00\x00\x00\x00\x00\x00\x00\x40' ;;
        3) out+='\x00\x00\x00\x00\x00\x00\x08\x40' ;;
        0.5) out+='\x00\x00\x00\x00\x00\x00\xe0\x3f' ;;
        -1) out+='\x00\x00\x00\x00\x00\x00\xf0\xbf' ;;
        -2) out+='\x00\x00\x00\x00\x00\x00\x00\xc0' ;;
        *) echo "f64: no bytes for $v" >&2 ;;
        esac
    done
    printf '%s' "$out"
}
f32() {
    local v out=""
    for v in "$@"; do
        case "$v" in
        0) out+='\x00\x00\x00\x00' ;;
        1) out+='\x00\x00\x80\x3f' ;;
        2) out+='\x00\x00\x00\x40' ;;
        3) out+='\x00\x00\x40\x40' ;;
        0.5) out+='\x00\x00\x00\x3f' ;;
        -1) out+='\x00\x00\x80\xbf' ;;
        -2) out+='\x00\x00\x00\xc0' ;;
        *) echo "f32: no bytes for $v" >&2 ;;
        esac
    done
    printf '%s' "$out"
}
i64() { # small non-negative values, and -100
    local v out=""
    for v in "$@"; do
        if [[ "$v" == -100 ]]; then out+='\x9c\xff\xff\xff\xff\xff\xff\xff'; else
            out+="\\x$(printf %02x "$v")\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
        fi
    done
    printf '%s' "$out"
}
i32() {
    local v out=""
    for v in "$@"; do
        if [[ "$v" == -100 ]]; then out+='\x9c\xff\xff\xff'; else
            out+="\\x$(printf %02x "$v")\\x00\\x00\\x00"
        fi
    done
    printf '%s' "$out"
}

# values FILE TYPE: the data of a .npy file (f8 or f4), one value per line
values() {
    local hl
    hl=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
    od -A n -v -t "$2" -j $((10 + hl)) "$1" | tr -s ' ' '\n' | sed '/^$/d'
}
# header FILE: the header dict of a .npy file
header() { head -c 128 "$1" | tr -d '\0' | grep -ao "{.*}"; }

# ---- the small case: 3 rows of 3 logits -----------------------------------------------
# logits [[1, 2, 3], [0, 0.5, -1], [2, -2, 0]], targets [2, 0, -100],
# G = [1, -1, 2], H = [0.5, 2, -1]
Z="1 2 3 0 0.5 -1 2 -2 0"
npy "$tmp/z64.npy" '<f8' '(3, 3)' "$(f64 $Z)"
npy "$tmp/z32.npy" '<f4' '(3, 3)' "$(f32 $Z)"
npy "$tmp/y.npy" '<i8' '(3,)' "$(i64 2 0 -100)"
npy "$tmp/y32.npy" '<i4' '(3,)' "$(i32 2 0 -100)"
npy "$tmp/g.npy" '<f8' '(3,)' "$(f64 1 -1 2)"
npy "$tmp/h.npy" '<f4' '(3,)' "$(f32 0.5 2 -1)"

# expect WHAT T G H: the expected values (awk, float64) one per line;
# WHAT = lp | ent | grad. G/H "0 0 0" when absent.
expect() {
    awk -v what="$1" -v T="$2" -v gs="$3" -v hs="$4" -v zs="$Z" 'BEGIN {
        split(zs, z, " "); split(gs, g, " "); split(hs, h, " ");
        y[1] = 2; y[2] = 0; y[3] = -100; V = 3
        for (r = 1; r <= 3; r++) {
            ign = (y[r] == -100)
            m = -1e300
            for (j = 1; j <= V; j++) { x[j] = z[(r - 1) * V + j] / T; if (x[j] > m) m = x[j] }
            s = 0; for (j = 1; j <= V; j++) s += exp(x[j] - m)
            lse = m + log(s); H = lse
            for (j = 1; j <= V; j++) { p[j] = exp(x[j] - lse); H -= p[j] * x[j] }
            if (what == "lp") printf "%.17g\n", ign ? 0 : x[y[r] + 1] - lse
            if (what == "ent") printf "%.17g\n", ign ? 0 : H
            if (what == "grad") for (j = 1; j <= V; j++) {
                oh = (j == y[r] + 1) ? 1 : 0
                dx = g[r] * (oh - p[j]) - h[r] * p[j] * (x[j] - lse + H)
                printf "%.17g\n", ign ? 0 : dx / T
            }
        }
    }'
}

# close NAME FILE TYPE TOL WHAT T G H: FILE's values match expect WHAT within TOL
close() {
    local name="$1" file="$2" type="$3" tol="$4"
    shift 4
    if [[ ! -f "$file" ]]; then bad "$name: $file missing"; return; fi
    local msg
    msg=$(paste <(values "$file" "$type") <(expect "$@") | awk -v tol="$tol" '
        { n++; d = $1 - $2; if (d < 0) d = -d; if (d > tol || $1 != $1) { bad++; if (!w) w = NR ": got " $1 ", expected " $2 } }
        END { if (n == 0) print "no values"; else if (bad) print bad " of " n " values off; first at " w }')
    if [[ -z "$msg" ]]; then ok; else bad "$name: $msg"; fi
}

o="$tmp/o1"
if run "f64, no gradient" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/y.npy" --out "$o"; then
    has "summary" out "3 rows x 3 (f64, fused, chunk 0, temperature 1, upstream gradient none), 1 ignored"
    has "summary" out "wrote $o/logprob.npy, $o/entropy.npy"
    [[ "$(wc -l <"$tmp/out")" == 1 ]] && ok || bad "summary is not one line"
    [[ -s "$tmp/err" ]] && bad "f64: printed on stderr" || ok
    [[ -e "$o/grad_logits.npy" ]] && bad "grad_logits.npy written without G or H" || ok
    header "$o/logprob.npy" >"$tmp/hdr"
    has "logprob header" hdr "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"
    close "f64 logprob" "$o/logprob.npy" f8 1e-12 lp 1 "0 0 0" "0 0 0"
    close "f64 entropy" "$o/entropy.npy" f8 1e-12 ent 1 "0 0 0" "0 0 0"
fi

for impl in fused composite; do
    o="$tmp/both-$impl"
    if run "G and H, T=2, $impl" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/y.npy" \
        --grad-logprob "$tmp/g.npy" --grad-entropy="$tmp/h.npy" --temperature 2 --chunk 1 \
        --impl "$impl" --out "$o"; then
        has "G and H $impl" out "(f64, $impl, chunk 1, temperature 2, upstream gradient G and H)"
        header "$o/grad_logits.npy" >"$tmp/hdr"
        has "grad header" hdr "'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }"
        close "$impl logprob T=2" "$o/logprob.npy" f8 1e-12 lp 2 "1 -1 2" "0.5 2 -1"
        close "$impl entropy T=2" "$o/entropy.npy" f8 1e-12 ent 2 "1 -1 2" "0.5 2 -1"
        close "$impl grad G,H T=2" "$o/grad_logits.npy" f8 1e-12 grad 2 "1 -1 2" "0.5 2 -1"
    fi
done

# (the command checks that the entropy requires grad exactly when H is given)
for impl in fused composite; do
    o="$tmp/g-only-$impl"
    run "G only $impl" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/y.npy" --impl $impl \
        --grad-logprob "$tmp/g.npy" --out "$o" &&
        close "grad G only $impl" "$o/grad_logits.npy" f8 1e-12 grad 1 "1 -1 2" "0 0 0"
    o="$tmp/h-only-$impl"
    run "H only $impl" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/y.npy" --impl $impl \
        --grad-entropy "$tmp/h.npy" --out "$o" &&
        close "grad H only $impl" "$o/grad_logits.npy" f8 1e-12 grad 1 "0 0 0" "0.5 2 -1"
done

o="$tmp/deep/er/dir"
if run "f32 logits, i4 targets, nested --out" 0 logprob --logits "$tmp/z32.npy" \
    --targets "$tmp/y32.npy" --grad-logprob "$tmp/g.npy" --out "$o"; then
    header "$o/entropy.npy" >"$tmp/hdr"
    has "f32 entropy header" hdr "'descr': '<f4'"
    header "$o/grad_logits.npy" >"$tmp/hdr"
    has "f32 grad header" hdr "'descr': '<f4'"
    close "f32 logprob" "$o/logprob.npy" f4 1e-6 lp 1 "1 -1 2" "0 0 0"
    close "f32 entropy" "$o/entropy.npy" f4 1e-6 ent 1 "1 -1 2" "0 0 0"
    close "f32 grad" "$o/grad_logits.npy" f4 1e-6 grad 1 "1 -1 2" "0 0 0"
fi
# another ignore index
npy "$tmp/y021.npy" '<i8' '(3,)' "$(i64 0 2 1)"
o="$tmp/ignore-2"
run "ignore-index 2" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/y021.npy" \
    --ignore-index=2 --grad-logprob "$tmp/g.npy" --out "$o" && has "ignore-index 2" out "1 ignored"
run "negative ignore-index" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/y021.npy" \
    --ignore-index -7 --out "$o" && has "negative ignore-index" out "0 ignored"
# every row ignored: zero gradient, still written
o="$tmp/all-ignored"
npy "$tmp/yall.npy" '<i8' '(3,)' "$(i64 -100 -100 -100)"
if run "every row ignored" 0 logprob --logits "$tmp/z64.npy" --targets "$tmp/yall.npy" \
    --grad-logprob "$tmp/g.npy" --out "$o"; then
    has "every row ignored" out "3 ignored, no row kept"
    if [[ "$(values "$o/grad_logits.npy" f8 | sort -u)" == 0 ]]; then ok; else
        bad "every row ignored: gradient not all zero"
    fi
fi

# ---- failures: exit 1, one line, nothing written ---------------------------------------------
L=(--logits "$tmp/z64.npy")
T=(--targets "$tmp/y.npy")
failure "missing logits file" "$tmp/nope.npy: cannot open: No such file or directory" \
    --logits "$tmp/nope.npy" "${T[@]}" --out "$tmp/f1"
[[ -e "$tmp/f1" ]] && bad "failed run created its --out directory" || ok
printf 'not a numpy file at all' >"$tmp/junk.npy"
failure "bad magic" "junk.npy: not a .npy file" --logits "$tmp/junk.npy" "${T[@]}" --out "$tmp/f1"
npy "$tmp/big.npy" '>f8' '(3, 3)' "$(f64 $Z)"
failure "big-endian" "big-endian dtype '>f8' is not supported" \
    --logits "$tmp/big.npy" "${T[@]}" --out "$tmp/f1"
npy "$tmp/trunc.npy" '<f8' '(3, 4)' "$(f64 $Z)"
failure "truncated" "data is truncated" --logits "$tmp/trunc.npy" "${T[@]}" --out "$tmp/f1"
npy "$tmp/yout.npy" '<i8' '(3,)' "$(i64 2 5 0)"
failure "target out of range" "target 5 is outside [0, 3)" \
    "${L[@]}" --targets "$tmp/yout.npy" --out "$tmp/f1"
npy "$tmp/y2.npy" '<i8' '(2,)' "$(i64 0 1)"
failure "targets shape" "do not match" "${L[@]}" --targets "$tmp/y2.npy" --out "$tmp/f1"
npy "$tmp/g2.npy" '<f8' '(2,)' "$(f64 1 1)"
failure "G shape" "g2.npy: shape (2,) does not match the targets' shape (3,)" \
    "${L[@]}" "${T[@]}" --grad-logprob "$tmp/g2.npy" --out "$tmp/f1"
failure "H missing" "h-missing.npy: cannot open" \
    "${L[@]}" "${T[@]}" --grad-entropy "$tmp/h-missing.npy" --out "$tmp/f1"
failure "integer logits" "logits must be f32 or f64, got i64" \
    --logits "$tmp/y.npy" --targets "$tmp/y2.npy" --out "$tmp/f1"
failure "float targets" "targets must be integers" \
    "${L[@]}" --targets "$tmp/g.npy" --out "$tmp/f1"
[[ -e "$tmp/f1" ]] && bad "a failed run created its --out directory" || ok
touch "$tmp/afile"
failure "--out is a file" "is not a directory" "${L[@]}" "${T[@]}" --out "$tmp/afile"
failure "--out under a file" "cannot create directory" "${L[@]}" "${T[@]}" --out "$tmp/afile/sub"

# ---- usage errors: exit 2, one line -------------------------------------------------------------
usage_error "no flags"
usage_error "missing --targets" "${L[@]}" --out "$tmp/u"
usage_error "missing --logits" "${T[@]}" --out "$tmp/u"
usage_error "missing --out" "${L[@]}" "${T[@]}"
usage_error "unknown flag" "${L[@]}" "${T[@]}" --out "$tmp/u" --frobnicate 1
usage_error "missing value" "${L[@]}" "${T[@]}" --out
usage_error "empty path" "${L[@]}" "${T[@]}" --out=
usage_error "positional argument" "${L[@]}" "${T[@]}" --out "$tmp/u" extra
for t in abc 0 -1 inf nan 1e999 "" 2x; do
    usage_error "temperature '$t'" "${L[@]}" "${T[@]}" --out "$tmp/u" --temperature "$t"
done
for c in -1 x 1.5 99999999999999999999; do
    usage_error "chunk '$c'" "${L[@]}" "${T[@]}" --out "$tmp/u" --chunk "$c"
done
for i in x 1.5 -99999999999999999999 --; do
    usage_error "ignore-index '$i'" "${L[@]}" "${T[@]}" --out "$tmp/u" --ignore-index="$i"
done
usage_error "impl" "${L[@]}" "${T[@]}" --out "$tmp/u" --impl fast
has "impl message" err "invalid value 'fast' for --impl (expected fused or composite)"
usage_error "temperature message" "${L[@]}" "${T[@]}" --out "$tmp/u" --temperature 0
has "temperature message" err "invalid value '0' for --temperature"
[[ -e "$tmp/u" ]] && bad "a usage error created its --out directory" || ok
run "logprob --help" 0 logprob --help && has "logprob --help" out "Usage: tapegrad logprob"
run "tapegrad --help" 0 --help && has "tapegrad --help" out "tapegrad logprob"

# ---- against the NumPy reference -----------------------------------------------------------------
# $TAPEGRAD_PYTHON, when set, is the only Python tried ("none" skips these checks)
py=""
if [[ -n "${TAPEGRAD_PYTHON+set}" ]]; then cands=("$TAPEGRAD_PYTHON"); else
    cands=(python3 /usr/bin/python3)
fi
for cand in "${cands[@]}"; do
    if [[ -n "$cand" ]] && "$cand" -c 'import numpy' >/dev/null 2>&1; then
        py="$cand"
        break
    fi
done

# compare NAME ARGS...: runs tapegrad logprob ARGS --out DIR, then the reference
# with the same inputs in --compare mode.
compare() {
    local name="$1"
    shift
    local dir="$tmp/cmp-${name//[^a-zA-Z0-9]/_}"
    run "$name" 0 logprob "$@" --out "$dir" || return
    local refargs=() a
    while (($#)); do
        a="$1"
        shift
        case "$a" in
        --chunk | --impl) shift ;; # tapegrad only
        *) refargs+=("$a") ;;
        esac
    done
    if "$py" "$ref" "${refargs[@]}" --compare "$dir" >"$tmp/cmp" 2>&1; then ok; else
        bad "$name: differs from the NumPy reference:"
        sed 's/^/  | /' "$tmp/cmp"
    fi
}

if [[ -z "$py" ]]; then
    echo "skipped: comparisons with bench/reference_logprob.py (no python3 with NumPy;" \
        "scripts/setup-deps.sh installs python3-numpy)"
    skipped=$((skipped + 9))
else
    d="$tmp/np"
    mkdir -p "$d"
    if ! "$py" - "$d" <<'EOF'; then bad "writing random inputs with NumPy"; fi
import sys
import numpy as np
d = sys.argv[1]
r = np.random.default_rng(1234)
def save(name, a): np.save("%s/%s.npy" % (d, name), a)
# (4, 9, 1000) f32 logits up to |30|, int32 targets with ignored rows
z = r.uniform(-30, 30, size=(4, 9, 1000)).astype(np.float32)
y = r.integers(0, 1000, size=(4, 9)).astype(np.int32)
y[0, :3] = -100
save("z3", z); save("y3", y)
save("g3", r.normal(size=(4, 9)).astype(np.float32)); save("h3", r.normal(size=(4, 9)))
# (37, 3000) f64 with masked (-inf) vocabulary entries, Fortran order on disk
z = r.normal(scale=4.0, size=(37, 3000))
z[:, r.choice(3000, 500, replace=False)] = -np.inf
y = r.integers(0, 3000, size=37)
y = np.where(np.isinf(z[np.arange(37), y]), 7, y)
z[:, 7] = r.normal(size=37)
save("zf", np.asfortranarray(z)); save("yf", y)
save("zu", np.where(np.isinf(z), -50.0, z))
save("gf", r.normal(size=37)); save("hf", r.normal(size=37))
# the largest vocabulary of the accuracy target: V = 262144, |logits| <= 30
z = r.uniform(-30, 30, size=(3, 262144)).astype(np.float32)
save("zv", z); save("yv", np.array([5, 262143, 0])); save("gv", np.ones(3)); save("hv", np.ones(3))
EOF
    compare "f32 3-d fused" --logits "$d/z3.npy" --targets "$d/y3.npy" --grad-logprob "$d/g3.npy" \
        --grad-entropy "$d/h3.npy" --temperature 0.7 --chunk 5
    compare "f32 3-d composite" --logits "$d/z3.npy" --targets "$d/y3.npy" \
        --grad-logprob "$d/g3.npy" --grad-entropy "$d/h3.npy" --temperature 0.7 --chunk 5 \
        --impl composite
    compare "f32 3-d no gradient" --logits "$d/z3.npy" --targets "$d/y3.npy"
    compare "f64 masked fortran G only" --logits "$d/zf.npy" --targets "$d/yf.npy" \
        --grad-logprob "$d/gf.npy"
    compare "f64 masked H only, ignore 7" --logits "$d/zf.npy" --targets "$d/yf.npy" \
        --grad-entropy "$d/hf.npy" --ignore-index 7 --temperature 1.5
    # (the composite baseline computes the naive sum(p * log p), NaN for -inf
    # logits by design, so it gets the unmasked data)
    compare "f64 composite" --logits "$d/zu.npy" --targets "$d/yf.npy" \
        --grad-logprob "$d/gf.npy" --grad-entropy "$d/hf.npy" --impl composite --chunk 8
    compare "f32 V=262144" --logits "$d/zv.npy" --targets "$d/yv.npy" --grad-logprob "$d/gv.npy" \
        --grad-entropy "$d/hv.npy"
    # the reference flags a wrong result (a different temperature)
    if "$py" "$ref" --logits "$d/z3.npy" --targets "$d/y3.npy" --temperature 0.5 \
        --compare "$tmp/cmp-f32_3_d_no_gradient" >/dev/null 2>&1; then
        bad "reference accepted outputs computed with another temperature"
    else ok; fi
    if "$py" "$ref" --logits "$d/z3.npy" --targets "$d/y3.npy" --write "$tmp/refout" >/dev/null &&
        [[ -f "$tmp/refout/logprob.npy" && -f "$tmp/refout/entropy.npy" ]]; then ok; else
        bad "reference --write"
    fi
fi

if ((skipped)); then
    echo "cli_logprob: $passed passed, $failed failed, $skipped skipped"
else
    echo "cli_logprob: $passed passed, $failed failed"
fi
((failed == 0))
