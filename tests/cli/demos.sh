#!/usr/bin/env bash
# tests/cli/demos.sh - checks `tapegrad demo entropy|chunk|inplace|leak`, the
# output flags every demo and `bench logprob` take, and the tour's sections,
# as a user runs them, at tiny sizes:
#  - entropy --json: four JSON lines (a, b, c, d) with the expected keys; the
#    composite saved bytes drop by >= 2 x seq x vocab x 4 with entropy_grad
#    off, the fused ones by at most 64 bytes per row; the same loss everywhere;
#  - chunk --json: one line per seq x chunk x impl in the documented order
#    (0 added and first, chunks >= seq skipped), ratios 1 on unchunked rows,
#    chunked composite peaks lower where the claim applies (peak_checked),
#    fused peaks unchanged;
#  - text output of both: the table and the explanations, no escape codes
#    when piped, nothing on stderr;
#  - --trace/--plot/--dot on each demo and on bench logprob: the files exist
#    and start right ({"traceEvents", <svg, digraph); with python3 the trace
#    parses as JSON and the plot as XML;
#  - flag errors: exit 2 and one "tapegrad: " line; a file that cannot be
#    written: exit 1 and one line;
#  - progress: escape codes on stderr only when it is a terminal (with
#    script(1), when installed).
# TAPEGRAD_PYTHON=none checks without python3.
# Usage: demos.sh PATH_TO_TAPEGRAD. Prints each failed check, then
# "cli_demos: N passed, N failed"; exits 0 when nothing failed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init demos "$1"
no_stderr() {
    if [[ -s "$tmp/err" ]]; then
        bad "$1: printed on stderr:"
        sed 's/^/  | /' "$tmp/err" | head -5
    else ok; fi
}
no_escapes() { # NAME: no escape character in stdout or stderr
    if grep -q $'\e' "$tmp/out" "$tmp/err"; then bad "$1: escape codes in piped output"; else ok; fi
}
one_line_error() { # NAME EXPECTED_RC ARGS...: exit status, nothing on stdout, one line on stderr
    local name="$1" want="$2"
    shift 2
    run "$name" "$want" "$@" || return
    if [[ -s "$tmp/out" ]]; then bad "$name: printed on stdout"; else ok; fi
    if [[ "$(wc -l <"$tmp/err")" == 1 ]] && grep -q '^tapegrad: ' "$tmp/err"; then ok; else
        bad "$name: stderr is not one 'tapegrad: ...' line:"
        sed 's/^/  | /' "$tmp/err" | head -5
    fi
}

have_python=0
if [[ "${TAPEGRAD_PYTHON:-}" != none ]] && command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import json, xml.etree.ElementTree' 2>/dev/null; then
    have_python=1
fi

# py NAME SCRIPT ARGS...: runs a python3 check that prints its errors
py() {
    local name="$1" script="$2"
    shift 2
    local msg
    msg="$(python3 -c "$script" "$@" 2>&1)"
    if [[ -z "$msg" ]]; then ok; else
        bad "$name:"
        sed 's/^/  /' <<<"$msg"
    fi
}

# ---- demo entropy --json ------------------------------------------------------------------
ENTROPY_CHECK='
import json, sys
path, seq, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
err = []
rows = []
for i, line in enumerate(open(path).read().splitlines()):
    try:
        rows.append(json.loads(line))
    except ValueError as e:
        err.append("line %d is not JSON (%s): %r" % (i + 1, e, line[:80]))
keys = ["demo", "config", "impl", "entropy_grad", "seq", "vocab", "steps", "peak_bytes",
        "saved_bytes", "held_bytes", "fwd_ms", "bwd_ms", "time_ms", "loss", "entropy_mean",
        "grad_rel_diff"]
if not err:
    if [r.get("config") for r in rows] != ["a", "b", "c", "d"]:
        err.append("configs are %r, expected a b c d" % [r.get("config") for r in rows])
    want = [("composite", True), ("composite", False), ("fused", True), ("fused", False)]
    for r, (impl, eg) in zip(rows, want):
        miss = [k for k in keys if k not in r]
        if miss:
            err.append("row %s lacks %s" % (r.get("config"), miss))
        if (r.get("impl"), r.get("entropy_grad")) != (impl, eg):
            err.append("row %s is %r" % (r.get("config"), (r.get("impl"), r.get("entropy_grad"))))
        if r.get("seq") != seq or r.get("vocab") != vocab or r.get("demo") != "entropy":
            err.append("row %s: demo/seq/vocab %r" % (r.get("config"), (r.get("demo"), r.get("seq"), r.get("vocab"))))
        if not all(isinstance(r.get(k), int) and r.get(k) >= 0 for k in ("peak_bytes", "saved_bytes")):
            err.append("row %s: bytes are not counts" % r.get("config"))
if len(rows) == 4 and not err:
    a, b, c, d = rows
    nv = seq * vocab * 4
    if a["saved_bytes"] - b["saved_bytes"] < 2 * nv:
        err.append("composite saved drop %d < 2 x seq x vocab x 4 = %d" % (a["saved_bytes"] - b["saved_bytes"], 2 * nv))
    if not 0 <= c["saved_bytes"] - d["saved_bytes"] <= 64 * seq:
        err.append("fused saved change %d outside 0..64 per row" % (c["saved_bytes"] - d["saved_bytes"]))
    if b["peak_bytes"] >= a["peak_bytes"]:
        err.append("composite peak did not drop: %d -> %d" % (a["peak_bytes"], b["peak_bytes"]))
    if c["peak_bytes"] >= a["peak_bytes"]:
        err.append("fused peak %d not below composite %d" % (c["peak_bytes"], a["peak_bytes"]))
    for r in rows:
        if abs(r["loss"] - a["loss"]) > 1e-4 * abs(a["loss"]) or r["grad_rel_diff"] > 1e-4:
            err.append("row %s: loss %r, grad diff %r differ from (a)" % (r["config"], r["loss"], r["grad_rel_diff"]))
print("\n".join(err))
'
if run "entropy json" 0 demo entropy --seq 48 --vocab 300 --reps 2 --json; then
    no_stderr "entropy json"
    if ((have_python)); then
        py "entropy json" "$ENTROPY_CHECK" "$tmp/out" 48 300
    else
        n="$(wc -l <"$tmp/out")"
        if [[ "$n" == 4 ]]; then ok; else bad "entropy json: $n lines, expected 4"; fi
        if grep -vq '^{"demo":"entropy","config":"[abcd]",.*"peak_bytes":[0-9]*,"saved_bytes":[0-9]*,.*"time_ms":[0-9.]*,.*}$' "$tmp/out"; then
            bad "entropy json: a line lacks the expected keys"
        else ok; fi
        sa="$(sed -n '1s/.*"saved_bytes":\([0-9]*\).*/\1/p' "$tmp/out")"
        sb="$(sed -n '2s/.*"saved_bytes":\([0-9]*\).*/\1/p' "$tmp/out")"
        if ((sa - sb >= 2 * 48 * 300 * 4)); then ok; else
            bad "entropy json: composite saved drop $((sa - sb)) < 2 x seq x vocab x 4"
        fi
    fi
fi

# ---- demo chunk --json --------------------------------------------------------------------
CHUNK_CHECK='
import json, sys
path, vocab = sys.argv[1], int(sys.argv[2])
seqs = [int(x) for x in sys.argv[3].split(",")]
chunks = sorted(set([0] + [int(x) for x in sys.argv[4].split(",")]))
err = []
rows = []
for i, line in enumerate(open(path).read().splitlines()):
    try:
        rows.append(json.loads(line))
    except ValueError as e:
        err.append("line %d is not JSON (%s): %r" % (i + 1, e, line[:80]))
want = [(s, c, impl) for s in seqs for c in chunks if c == 0 or c < s
        for impl in ("composite", "fused")]
got = [(r.get("seq"), r.get("chunk"), r.get("impl")) for r in rows]
if not err and got != want:
    err.append("rows are %r,\n expected %r" % (got, want))
keys = ["demo", "seq", "vocab", "chunk", "impl", "entropy_grad", "steps", "time_ms", "fwd_ms",
        "bwd_ms", "peak_bytes", "saved_bytes", "time_vs_unchunked", "peak_vs_unchunked",
        "peak_checked"]
base = {}
for r in rows:
    miss = [k for k in keys if k not in r]
    if miss:
        err.append("row %r lacks %s" % (got[rows.index(r)], miss))
        continue
    if r["demo"] != "chunk" or r["vocab"] != vocab:
        err.append("row %r: demo %r vocab %r" % (r["seq"], r["demo"], r["vocab"]))
    key = (r["seq"], r["impl"])
    if r["chunk"] == 0:
        base[key] = r
        if r["time_vs_unchunked"] != 1 or r["peak_vs_unchunked"] != 1:
            err.append("unchunked row %r has ratios %r, %r" % (key, r["time_vs_unchunked"], r["peak_vs_unchunked"]))
        continue
    z = base.get(key)
    if z is None:
        err.append("chunked row %r before its unchunked row" % (key,))
        continue
    ratio = r["peak_bytes"] / z["peak_bytes"]
    if abs(ratio - r["peak_vs_unchunked"]) > 1e-3:
        err.append("row %r chunk %d: peak_vs_unchunked %r, peaks give %r" % (key, r["chunk"], r["peak_vs_unchunked"], ratio))
    # the peak is compared where the claim applies: a chunk of at most half the sequence, vocab >= 16
    applies = r["impl"] == "composite" and 2 * r["chunk"] <= r["seq"] and r["vocab"] >= 16
    if r["peak_checked"] != applies:
        err.append("row %r chunk %d: peak_checked %r" % (key, r["chunk"], r["peak_checked"]))
    if r["impl"] == "composite" and not ((r["peak_bytes"] < z["peak_bytes"] or not applies) and r["saved_bytes"] <= z["saved_bytes"]):
        err.append("composite seq %d chunk %d: peak %d saved %d, unchunked %d %d" % (r["seq"], r["chunk"], r["peak_bytes"], r["saved_bytes"], z["peak_bytes"], z["saved_bytes"]))
    if r["impl"] == "fused" and r["peak_bytes"] > 1.01 * z["peak_bytes"] + 64 * r["seq"]:
        err.append("fused seq %d chunk %d: peak %d, unchunked %d" % (r["seq"], r["chunk"], r["peak_bytes"], z["peak_bytes"]))
print("\n".join(err))
'
if run "chunk json" 0 demo chunk --seq 64,24 --vocab 256 --chunk 32,16 --reps 1 --json; then
    no_stderr "chunk json"
    if ((have_python)); then
        py "chunk json" "$CHUNK_CHECK" "$tmp/out" 256 64,24 32,16
    else
        # seq 64: chunks 0 16 32; seq 24: chunks 0 16 (32 >= 24 skipped); x 2 impls
        n="$(wc -l <"$tmp/out")"
        if [[ "$n" == 10 ]]; then ok; else bad "chunk json: $n lines, expected 10"; fi
        if grep -vq '^{"demo":"chunk","seq":[0-9]*,"vocab":256,"chunk":[0-9]*,"impl":"\(composite\|fused\)",.*"peak_bytes":[0-9]*,"saved_bytes":[0-9]*,"time_vs_unchunked":[0-9.]*,"peak_vs_unchunked":[0-9.]*}$' "$tmp/out"; then
            bad "chunk json: a line lacks the expected keys"
        else ok; fi
        order="$(sed 's/.*"seq":\([0-9]*\),"vocab":[0-9]*,"chunk":\([0-9]*\),"impl":"\([a-z]*\)".*/\1 \2 \3/' "$tmp/out" | tr '\n' ',')"
        want="64 0 composite,64 0 fused,64 16 composite,64 16 fused,64 32 composite,64 32 fused,24 0 composite,24 0 fused,24 16 composite,24 16 fused,"
        if [[ "$order" == "$want" ]]; then ok; else bad "chunk json: rows are '$order'"; fi
    fi
fi
run "chunk json entropy off" 0 demo chunk --seq=32 --vocab=64 --chunk=8 --reps=1 --entropy-grad=off --json &&
    has "chunk json entropy off" out '"entropy_grad":false'

# ---- text output --------------------------------------------------------------------------
if run "entropy text" 0 demo entropy --seq 32 --vocab 256 --reps 1; then
    no_stderr "entropy text"
    no_escapes "entropy text"
    has "entropy text" out "(a) composite, entropy recorded"
    has "entropy text" out "(d) fused, entropy_grad off"
    has "entropy text" out "3.00 x [seq, vocab] f32"
    has "entropy text" out "with torch.no_grad(): entropy ="
    has "entropy text" out "entropy.detach()"
    has "entropy text" out "opts.entropy_grad = false"
fi
if run "chunk text" 0 demo chunk --seq 64 --vocab 128 --chunk 16 --reps 1; then
    no_stderr "chunk text"
    no_escapes "chunk text"
    has "chunk text" out "vs unch."
    has "chunk text" out "composite"
    has "chunk text" out "recomputes the chunk's forward"
    if grep -Eq '^ +64 +16  composite ' "$tmp/out" && grep -Eq '^ +64 +-  fused ' "$tmp/out"; then
        ok
    else bad "chunk text: the table lacks the rows 'seq 64 chunk 16 composite' / '64 - fused'"; fi
fi
for d in entropy chunk; do
    run "demo $d --help" 0 demo "$d" --help && has "demo $d --help" out "--trace FILE.json" &&
        has "demo $d --help" out "--dot FILE"
done
run "help lists demos" 0 --help && has "help lists demos" out "demo entropy" &&
    has "help lists demos" out "demo chunk" && has "help lists demos" out "--plot FILE.svg"
if run "tour --list" 0 tour --list; then
    order="$(sed -n 's/^  [0-9]\. \([a-z]*\) .*/\1/p' "$tmp/out" | tr '\n' ' ')"
    if [[ "$order" == "inplace entropy chunk leak linear " ]]; then ok; else
        bad "tour --list: sections are '$order', expected 'inplace entropy chunk leak linear '"
    fi
fi

if run "tour --quick chunk" 0 tour --quick chunk; then
    has "tour --quick chunk" out "quick: tiny sizes"
    has "tour --quick chunk" out "Section 3/5"
    has "tour --quick chunk" out "all sections passed"
fi
one_line_error "tour two sections" 2 tour entropy chunk

# ---- --trace / --plot / --dot -----------------------------------------------------------------
# check_files NAME PREFIX: $tmp/PREFIX.json, .svg, .dot exist and start right
check_files() {
    local name="$1" p="$tmp/$2"
    if [[ -s "$p.json" ]] && [[ "$(head -c 15 "$p.json")" == '{"traceEvents":' ]]; then ok; else
        bad "$name: $p.json is missing or does not start with {\"traceEvents\":"
    fi
    if [[ -s "$p.svg" ]] && head -c 400 "$p.svg" | grep -q '<svg'; then ok; else
        bad "$name: $p.svg is missing or does not start with <svg"
    fi
    if [[ -s "$p.dot" ]] && head -n 1 "$p.dot" | grep -q '^digraph'; then ok; else
        bad "$name: $p.dot is missing or does not start with digraph"
    fi
    if ((have_python)); then
        py "$name: files" '
import json, sys, xml.etree.ElementTree as ET
p = sys.argv[1]
try:
    t = json.load(open(p + ".json"))
    if not isinstance(t.get("traceEvents"), list) or not t["traceEvents"]:
        print("trace: no traceEvents")
except Exception as e:
    print("trace is not JSON: %s" % e)
try:
    root = ET.parse(p + ".svg").getroot()
    if not root.tag.endswith("svg"):
        print("plot: root element is %s" % root.tag)
except Exception as e:
    print("plot is not XML: %s" % e)
' "$p"
    fi
}
files() { echo --trace "$tmp/$1.json" --plot "$tmp/$1.svg" --dot "$tmp/$1.dot"; }

# shellcheck disable=SC2046
if run "inplace files" 0 demo inplace $(files inplace); then
    check_files "inplace files" inplace
    has "inplace files" out "wrote $tmp/inplace.dot"
    has "inplace files" inplace.dot "loss (buggy EntropyBackward)"
    has "inplace files" inplace.dot "EntropyBackward"
fi
# shellcheck disable=SC2046
if run "entropy files" 0 demo entropy --seq 16 --vocab 64 --reps 1 --json $(files entropy); then
    check_files "entropy files" entropy
    has "entropy files" err "wrote $tmp/entropy.json"
    has "entropy files" entropy.dot "SoftmaxBackward"
    if [[ "$(wc -l <"$tmp/out")" == 4 ]]; then ok; else bad "entropy files: stdout is not 4 JSON lines"; fi
fi
# shellcheck disable=SC2046
if run "chunk files" 0 demo chunk --seq 32 --vocab 64 --chunk 8 --reps 1 $(files chunk); then
    check_files "chunk files" chunk
    has "chunk files" out "wrote $tmp/chunk.svg"
    has "chunk files" chunk.dot "chunk 8"
fi
# shellcheck disable=SC2046
if run "leak files" 0 demo leak --microbatches 3 --seq 16 --vocab 64 $(files leak); then
    check_files "leak files" leak
    has "leak files" leak.dot "losses[0]"
    has "leak files" leak.dot "losses[2]"
fi
# shellcheck disable=SC2046
if run "bench files" 0 bench logprob --seq 16 --vocab 64 --reps 1 --bandwidth-mib 8 \
    --impl fused --entropy-grad on --json $(files bench); then
    check_files "bench files" bench
    if [[ "$(wc -l <"$tmp/out")" == 1 ]]; then ok; else bad "bench files: stdout is not 1 JSON line"; fi
fi
# shellcheck disable=SC2046
if run "linear files" 0 demo linear --seq 48 --hidden 16 --vocab 300 --workspace-mib 1 \
    $(files linear); then
    check_files "linear files" linear
    has "linear files" linear.dot "LinearLogprobEntropyBackward"
    has "linear files" out "(b) fused linear op"
    has "linear files" out "At a trainer's size"
fi
if run "linear json" 0 demo linear --seq 48 --hidden 16 --vocab 300 --json; then
    if [[ "$(wc -l <"$tmp/out")" == 3 ]]; then ok; else bad "linear json: stdout is not 3 lines"; fi
    if ((have_python)); then
        py "linear json" '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["config"] for r in rows] == ["a", "b", "c"], rows
assert rows[1]["peak_bytes"] < rows[0]["peak_bytes"], rows
assert abs(rows[1]["loss"] - rows[0]["loss"]) <= 1e-4 * abs(rows[0]["loss"]), rows
for r in rows[1:]:
    assert r["chunk_rows"] >= 1 and r["vocab_block"] >= 1 and r["workspace_bytes"] > 0, r
' "$tmp/out"
    fi
fi
one_line_error "linear too large" 2 demo linear --seq 4000000 --vocab 4000000
one_line_error "linear hidden 0" 2 demo linear --hidden 0
run "trace only" 0 demo entropy --seq 8 --vocab 16 --reps 1 --json --trace="$tmp/only.json" &&
    if [[ -s "$tmp/only.json" && ! -e "$tmp/only.svg" ]]; then ok; else bad "trace only: files"; fi

# ---- errors -------------------------------------------------------------------------------------
for d in inplace entropy chunk leak linear; do
    one_line_error "$d --trace without value" 2 demo "$d" --trace
    one_line_error "$d --plot empty" 2 demo "$d" --plot=
    one_line_error "$d same file twice" 2 demo "$d" --trace "$tmp/x" --dot "$tmp/x"
    one_line_error "$d unwritable dot" 1 demo "$d" --dot "$tmp/no/such/dir/g.dot"
done
one_line_error "bench --dot without value" 2 bench logprob --dot
one_line_error "bench unwritable trace" 1 bench logprob --seq 8 --vocab 8 --reps 1 \
    --bandwidth-mib 8 --trace "$tmp/no/such/dir/t.json"
if [[ ! -e "$tmp/x" ]]; then ok; else bad "a usage error left a file behind"; fi
one_line_error "entropy unknown flag" 2 demo entropy --bogus
one_line_error "entropy seq 0" 2 demo entropy --seq 0
one_line_error "entropy vocab 1" 2 demo entropy --vocab 1
one_line_error "entropy reps 0" 2 demo entropy --reps 0
one_line_error "entropy json with value" 2 demo entropy --json=1
one_line_error "entropy too large" 2 demo entropy --seq 4000000 --vocab 4000000
one_line_error "chunk unknown flag" 2 demo chunk --frobnicate
one_line_error "chunk bad list" 2 demo chunk --seq 64,,128
one_line_error "chunk negative chunk" 2 demo chunk --chunk -4
one_line_error "chunk list junk" 2 demo chunk --chunk 16x
one_line_error "chunk too many" 2 demo chunk --chunk 1,2,3,4,5,6,7,8,9
one_line_error "chunk entropy-grad" 2 demo chunk --entropy-grad maybe
one_line_error "chunk missing value" 2 demo chunk --vocab
one_line_error "demo without name" 2 demo

# ---- progress on a terminal ----------------------------------------------------------------------
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
    # stderr on a pseudo-terminal, stdout to a file: progress appears on the terminal only
    script -qec "'$bin' demo entropy --seq 16 --vocab 32 --reps 2 >'$tmp/tty_out'" \
        "$tmp/typescript" >/dev/null 2>&1 </dev/null
    if grep -q 'step 2/2' "$tmp/typescript" && grep -q $'\e\\[K' "$tmp/typescript"; then ok; else
        bad "progress: no 'step 2/2' progress line on the terminal"
    fi
    if grep -q $'\e' "$tmp/tty_out"; then bad "progress: escape codes in stdout"; else ok; fi
fi

echo "cli_demos: $passed passed, $failed failed$( ((have_python)) || echo ' (no python3: JSON checked by shape)')"
((failed == 0))
