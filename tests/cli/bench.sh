#!/usr/bin/env bash
# tests/cli/bench.sh - checks `tapegrad bench` on a tiny case: the JSON lines
# are well formed and carry every key (one object per configuration), the
# table and ratios print, and bad options give one line on stderr and exit 2.
# Usage: bench.sh PATH_TO_TAPEGRAD. Exits 0 when every check passes, else 1
# after printing each failed check. Prints "N passed, N failed" at the end.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init bench "$1"

tiny=(bench logprob --seq 64 --vocab 128 --reps 1 --bandwidth-mib 8)
keys=(impl seq vocab chunk entropy_grad threads median_ms peak_bytes saved_bytes
    rss_peak_growth_bytes gbps roofline_fraction machine_gbps dtype fwd_ms bwd_ms)

# ---- JSON lines: 2 impls x 2 entropy_grad = 4 objects -------------------------------
if run "json" 0 "${tiny[@]}" --json; then
    if [[ "$(wc -l <"$tmp/out")" == 4 ]]; then ok; else
        bad "json: $(wc -l <"$tmp/out") lines on stdout, expected 4"
        cat "$tmp/out"
    fi
    if command -v python3 >/dev/null 2>&1; then
        if python3 - "$tmp/out" "${keys[@]}" <<'PY'; then ok; else bad "json: structure"; fi
import json, sys
path, keys = sys.argv[1], sys.argv[2:]
seen = set()
for n, line in enumerate(open(path), 1):
    o = json.loads(line)
    missing = [k for k in keys if k not in o]
    assert not missing, f"line {n}: missing {missing}"
    assert o["impl"] in ("fused", "composite"), o["impl"]
    assert isinstance(o["entropy_grad"], bool)
    assert (o["seq"], o["vocab"], o["chunk"], o["dtype"]) == (64, 128, 0, "f32"), line
    for k in ("threads", "peak_bytes", "saved_bytes", "rss_peak_growth_bytes"):
        assert isinstance(o[k], int) and o[k] >= 0, (k, o[k])
    for k in ("median_ms", "fwd_ms", "bwd_ms", "gbps", "roofline_fraction", "machine_gbps"):
        assert isinstance(o[k], (int, float)) and o[k] >= 0, (k, o[k])
    assert o["threads"] >= 1 and o["machine_gbps"] > 0 and o["median_ms"] > 0
    # the gradient of the logits (64 x 128 f32) is part of every peak
    assert o["peak_bytes"] >= 64 * 128 * 4, o
    seen.add((o["impl"], o["entropy_grad"]))
assert len(seen) == 4, seen
PY
    else
        for k in "${keys[@]}"; do
            if [[ "$(grep -c "\"$k\":" "$tmp/out")" == 4 ]]; then ok; else bad "json: key $k"; fi
        done
    fi
    has "json progress" err "[4/4] composite seq=64 vocab=128 chunk=0 entropy_grad=off rep 1/1"
    has "json bandwidth" err "machine bandwidth:"
    if grep -q $'\e' "$tmp/err"; then bad "json: escape codes in piped stderr"; else ok; fi
fi

# ---- table and ratios -----------------------------------------------------------------
if run "table" 0 "${tiny[@]}" --impl fused,composite --chunk 0,16 --entropy-grad on,off; then
    has table out "median_ms"
    has table out "roofline"
    has table out "fused / composite median time"
    has table out "fused chunk C / chunk 0 median time"
    has table out "composite saved bytes, entropy_grad on - off"
    has table out "fused peak_bytes / logits bytes"
    if [[ "$(grep -cE '^(fused|composite) +64 +128 ' "$tmp/out")" == 8 ]]; then ok; else
        bad "table: expected 8 rows"
    fi
fi
run "f64, one impl" 0 "${tiny[@]}" --dtype f64 --impl fused --entropy-grad off --json &&
    has "f64" out '"dtype":"f64"'
run "bench help" 0 bench --help && has "bench help" out "logprob"
run "bench logprob help" 0 bench logprob --help && has "bench logprob help" out "--entropy-grad"

# ---- misuse: one line on stderr, exit 2 ---------------------------------------------------
usage_error "bench without name" bench
usage_error "unknown benchmark" bench nosuch
usage_error "unknown flag" bench logprob --frobnicate 1
usage_error "missing value" bench logprob --seq
usage_error "bad list element" bench logprob --seq 64,x
usage_error "empty list element" bench logprob --seq 64,
usage_error "zero seq" bench logprob --seq 0
usage_error "negative vocab" bench logprob --vocab -5
usage_error "negative chunk" bench logprob --chunk=-1
usage_error "bad impl" bench logprob --impl fused,fast
usage_error "bad entropy-grad" bench logprob --entropy-grad maybe
usage_error "zero threads" bench logprob --threads 0
usage_error "zero reps" bench logprob --reps 0
usage_error "bad dtype" bench logprob --dtype f16
usage_error "json with value" bench logprob --json=1
usage_error "too big for RAM" bench logprob --seq 1000000 --vocab 1000000
has "too big for RAM" err "RAM"

echo "cli bench: $passed passed, $failed failed"
((failed == 0))
