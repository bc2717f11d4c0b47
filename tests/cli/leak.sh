#!/usr/bin/env bash
# tests/cli/leak.sh - checks `tapegrad demo leak` as a user runs it: small
# runs with and without --detach and with --log-entropy-with-grad, in text
# and --json; each JSON line is validated (with python3's json module when
# python3 is there, else by its shape and with sed), kept bytes must grow at
# every microbatch when losses are kept as they are and stay 0 with --detach,
# the report must name "losses[" and "LogprobEntropyBackward", the entropy
# case must report live saved tensors; flag errors must exit 2 with one line.
# TAPEGRAD_PYTHON=none checks without python3.
# Usage: leak.sh PATH_TO_TAPEGRAD. Prints each failed check, then
# "cli_leak: N passed, N failed"; exits 0 when nothing failed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init leak "$1"
small=(--microbatches 4 --seq 64 --vocab 512)
lacks() { # NAME FILE TEXT: FILE (under $tmp) does not contain TEXT
    if grep -qF -- "$3" "$tmp/$2"; then bad "$1: $2 contains '$3'"; else ok; fi
}
no_stderr() {
    if [[ -s "$tmp/err" ]]; then
        bad "$1: printed on stderr:"
        sed 's/^/  | /' "$tmp/err" | head -5
    else ok; fi
}
leak_usage() { # NAME ARGS...: usage_error for `demo leak ARGS...`
    local name="$1"
    shift
    usage_error "$name" demo leak "$@"
}

have_python=0
if [[ "${TAPEGRAD_PYTHON:-}" != none ]] && command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import json' 2>/dev/null; then
    have_python=1
fi

# check_json NAME MODE KEPT(grow|zero) ENTROPY(0|1) K: validates $tmp/out, the
# output of --json: K microbatch objects, then one {"report": ...}.
check_json() {
    local name="$1" mode="$2" kept="$3" entropy="$4" k="$5"
    if ((have_python)); then
        local msg
        msg="$(python3 - "$tmp/out" "$mode" "$kept" "$entropy" "$k" <<'EOF'
import json, sys
path, mode, kept, entropy, k = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5])
errors = []
lines = open(path).read().split("\n")
if lines and lines[-1] == "":
    lines.pop()
objs = []
for i, line in enumerate(lines):
    try:
        objs.append(json.loads(line))
    except ValueError as e:
        errors.append("line %d is not JSON (%s): %r" % (i + 1, e, line[:80]))
if not errors:
    if len(objs) != k + 1:
        errors.append("%d lines, expected %d" % (len(objs), k + 1))
    rows, rep = objs[:-1], objs[-1]
    for i, o in enumerate(rows):
        for key in ("microbatch", "mode", "kept_bytes", "live_nodes", "live_bytes", "rss_bytes"):
            if key not in o:
                errors.append("row %d lacks %s" % (i, key))
        if o.get("microbatch") != i:
            errors.append("row %d: microbatch is %r" % (i, o.get("microbatch")))
        if o.get("mode") != mode:
            errors.append("row %d: mode is %r, expected %r" % (i, o.get("mode"), mode))
    kb = [o.get("kept_bytes", -1) for o in rows]
    nodes = [o.get("live_nodes", -1) for o in rows]
    if kept == "grow":
        if not all(isinstance(b, int) and b > 0 for b in kb) or \
           any(b2 <= b1 for b1, b2 in zip(kb, kb[1:])):
            errors.append("kept_bytes do not grow strictly: %r" % kb)
        if any(n2 <= n1 for n1, n2 in zip(nodes, nodes[1:])):
            errors.append("live_nodes do not grow: %r" % nodes)
    else:
        if any(b != 0 for b in kb):
            errors.append("kept_bytes are not all 0: %r" % kb)
        if any(n != 0 for n in nodes):
            errors.append("live_nodes are not all 0: %r" % nodes)
    if list(rep.keys()) != ["report"]:
        errors.append("last line is not {\"report\": ...}: keys %r" % list(rep.keys()))
    r = rep.get("report", {})
    roots = r.get("roots", [])
    text = json.dumps(r)
    want_roots = (k if mode == "retain" else 0) + (k if entropy else 0)
    if len(roots) != want_roots:
        errors.append("%d roots, expected %d" % (len(roots), want_roots))
    if r.get("unreachable") != 0:
        errors.append("unreachable is %r" % r.get("unreachable"))
    if mode == "retain":
        for w in ("losses[", "LogprobEntropyBackward", "NegBackward"):
            if w not in text:
                errors.append("report does not name %s" % w)
        if r.get("growth_steps", 0) < 3:
            errors.append("no growth reported: growth_steps %r" % r.get("growth_steps"))
    if entropy:
        ent = [q for q in roots if q.get("name", "").startswith("entropies[")]
        if len(ent) != k:
            errors.append("%d entropies[] roots, expected %d" % (len(ent), k))
        if not all(q.get("nodes_with_saved", 0) > 0 and q.get("saved_bytes", 0) > 0 for q in ent):
            errors.append("entropies[] roots without live saved tensors: %r" % ent)
    if mode == "detach" and not entropy and r.get("kept_bytes") != 0:
        errors.append("report kept_bytes is %r" % r.get("kept_bytes"))
print("\n".join(errors))
EOF
)"
        if [[ -z "$msg" ]]; then ok; else
            bad "$name:"
            sed 's/^/  /' <<<"$msg"
        fi
        return
    fi
    # Without python3: the shape of every line, and the numbers with sed.
    local n
    n="$(wc -l <"$tmp/out")"
    if [[ "$n" == $((k + 1)) ]]; then ok; else bad "$name: $n lines, expected $((k + 1))"; fi
    if head -n "$k" "$tmp/out" | grep -vq '^{"microbatch":[0-9]*,"mode":"'"$mode"'",.*"kept_bytes":[0-9]*,"live_nodes":[0-9]*,.*}$'; then
        bad "$name: a microbatch line does not have the expected keys"
    else ok; fi
    if tail -n 1 "$tmp/out" | grep -q '^{"report":{.*}}$'; then ok; else
        bad "$name: the last line is not {\"report\":{...}}"
    fi
    local prev=-1 b
    for b in $(head -n "$k" "$tmp/out" | sed 's/.*"kept_bytes":\([0-9]*\).*/\1/'); do
        if [[ "$kept" == grow ]] && ((b <= prev)); then bad "$name: kept_bytes $b after $prev"; fi
        if [[ "$kept" == zero ]] && ((b != 0)); then bad "$name: kept_bytes $b, expected 0"; fi
        prev="$b"
    done
    ok
    if [[ "$mode" == retain ]]; then
        has "$name" out '"name":"losses['
        has "$name" out "LogprobEntropyBackward"
    fi
    if [[ "$entropy" == 1 ]]; then
        has "$name" out '"name":"entropies['
        if grep -q '"name":"entropies\[[0-9]*\]"[^}]*"nodes_with_saved":[1-9][0-9]*,"bytes":[0-9]*,"saved_bytes":[1-9]' "$tmp/out"; then
            ok
        else bad "$name: no entropies[] root with live saved tensors"; fi
    fi
}

# ---- --json, the four modes ---------------------------------------------------------------
run "json retain" 0 demo leak "${small[@]}" --json && no_stderr "json retain" &&
    check_json "json retain" retain grow 0 4
run "json detach" 0 demo leak "${small[@]}" --json --detach && no_stderr "json detach" &&
    check_json "json detach" detach zero 0 4
run "json entropy" 0 demo leak "${small[@]}" --json --log-entropy-with-grad &&
    no_stderr "json entropy" && check_json "json entropy" retain grow 1 4
run "json entropy detach" 0 demo leak "${small[@]}" --json --detach --log-entropy-with-grad &&
    no_stderr "json entropy detach" && check_json "json entropy detach" detach grow 1 4
run "json one microbatch" 0 demo leak --microbatches=1 --seq=8 --vocab=16 --json --detach &&
    check_json "json one microbatch" detach zero 0 1

# ---- text ---------------------------------------------------------------------------------
if run "text retain" 0 demo leak "${small[@]}"; then
    no_stderr "text retain"
    has "text retain" out 'root "losses[3]"'
    has "text retain" out "-> NegBackward -> MeanBackward -> LogprobEntropyBackward -> leaf 'logits[3]'"
    has "text retain" out "live memory grew at each of the last"
    has "text retain" out "losses.append(loss.detach())"
    has "text retain" out "loss.item()"
    has "text retain" out "tg_leak_check() returns TG_OK"
    has "text retain" out "Demo passed."
    if grep -q $'\e' "$tmp/out"; then bad "text retain: escape codes in piped output"; else ok; fi
fi
if run "text detach" 0 demo leak "${small[@]}" --detach; then
    has "text detach" out "no graph node from an earlier step is alive"
    lacks "text detach" out "live memory grew"
    has "text detach" out "Demo passed."
fi
if run "text entropy" 0 demo leak "${small[@]}" --detach --log-entropy-with-grad; then
    has "text entropy" out 'root "entropies[3]"'
    has "text entropy" out "saved tensors still live"
    has "text entropy" out "Demo passed."
fi

# ---- help, tour ---------------------------------------------------------------------------
run "demo leak --help" 0 demo leak --help && has "demo leak --help" out "--log-entropy-with-grad"
run "help" 0 --help && has "help" out "demo leak"
run "tour --list" 0 tour --list && has "tour --list" out "leak"
run "tour leak" 0 tour leak && has "tour leak" out 'root "losses[' &&
    has "tour leak" out "all sections passed"

# ---- flag errors --------------------------------------------------------------------------
leak_usage "unknown flag" --frobnicate
leak_usage "unknown flag after valid ones" --detach --bogus
leak_usage "microbatches 0" --microbatches 0
leak_usage "microbatches negative" --microbatches -2
leak_usage "microbatches not a number" --microbatches abc
leak_usage "microbatches trailing junk" --microbatches=4x
leak_usage "microbatches too many" --microbatches 100000
leak_usage "missing value" --microbatches
leak_usage "empty value" --seq=
leak_usage "seq 0" --seq 0
leak_usage "vocab 1" --vocab 1
leak_usage "flag with a value" --detach=1
leak_usage "json with a value" --json=yes
leak_usage "logits too large" --seq 65536 --vocab 65536
leak_usage "too much kept" --microbatches 4096 --seq 4096 --vocab 4096
leak_usage "positional argument" 8

echo "cli_leak: $passed passed, $failed failed$( ((have_python)) || echo ' (no python3: JSON checked by shape)')"
((failed == 0))
