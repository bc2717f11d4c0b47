#!/usr/bin/env bash
# tests/cli/bench.sh - checks `tapegrad bench` on a tiny case: the JSON lines
# are well formed and carry every key (one object per configuration), the
# table prints, bench/ratios.py reads the JSON, and bad options give one line on stderr and exit 2.
# Progress goes to stderr only when it is a terminal: on a pipe a successful
# run prints nothing there; the progress lines themselves are checked on a
# pseudo-terminal (script(1), when installed).
# `--device cuda` is checked against the second binary when given: the same
# command linked against the emulated CUDA device (tests/simt), whose kernels
# run on the host, slowly, so its sizes stay tiny.
# Usage: bench.sh PATH_TO_TAPEGRAD [PATH_TO_TAPEGRAD_SIMT]. Exits 0 when every
# check passes, else 1 after printing each failed check. Prints "N passed, N
# failed" at the end.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init bench "$1"
simt="${2:-}"

tiny=(bench logprob --seq 64 --vocab 128 --reps 1 --bandwidth-mib 8)
no_stderr() {
    if [[ -s "$tmp/err" ]]; then
        bad "$1: printed on a stderr that is not a terminal:"
        sed 's/^/  | /' "$tmp/err" | head -5
    else ok; fi
}
have_script=0
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
    have_script=1
fi
# tty_run ARGS...: runs the command with stderr (and stdin) on a pseudo-terminal,
# stdout to $tmp/out; what the terminal showed goes to $tmp/tty. Returns its status.
tty_run() {
    local cmd
    cmd="$(printf '%q ' "$bin" "$@")"
    script -qec "$cmd >'$tmp/out'" "$tmp/tty" >/dev/null 2>&1 </dev/null
}
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
    no_stderr "json"
fi
# the same on a terminal: progress there, rewritten in place; stdout unchanged
if ((have_script)); then
    if tty_run "${tiny[@]}" --json; then ok; else bad "json on a terminal: exit status $?"; fi
    has "terminal progress" tty "[4/4] composite seq=64 vocab=128 chunk=0 entropy_grad=off rep 1/1"
    has "terminal progress" tty "machine bandwidth:"
    has "terminal progress" tty $'\e[K'
    if [[ "$(wc -l <"$tmp/out")" == 4 ]] && ! grep -q $'\e' "$tmp/out"; then ok; else
        bad "json on a terminal: stdout is not the 4 JSON lines"
    fi
fi

# ---- table; the tracked ratios from the JSON (bench/ratios.py) -----------------------------
if run "table" 0 "${tiny[@]}" --impl fused,composite --chunk 0,16 --entropy-grad on,off; then
    has table out "median_ms"
    has table out "roofline"
    has table out "machine bandwidth"
    no_stderr "table"
    if [[ "$(grep -cE '^(fused|composite) +64 +128 ' "$tmp/out")" == 8 ]]; then ok; else
        bad "table: expected 8 rows"
    fi
    if grep -q "MISSES\|meets" "$tmp/out"; then bad "table: the command printed verdicts"; else ok; fi
fi
ratios="$(dirname "$0")/../../bench/ratios.py"
if command -v python3 >/dev/null 2>&1 &&
    run "ratios json" 0 "${tiny[@]}" --impl fused,composite --chunk 0,16 --entropy-grad on,off --json; then
    python3 "$ratios" "$tmp/out" >"$tmp/ratios" 2>"$tmp/rerr"
    rrc=$?
    if [[ "$rrc" == 0 || "$rrc" == 1 ]]; then ok; else bad "ratios.py: exit status $rrc"; fi
    has ratios ratios "fused / composite median time"
    has ratios ratios "fused chunk C / chunk 0 median time"
    has ratios ratios "composite saved bytes, entropy_grad on - off"
    has ratios ratios "fused peak_bytes / logits bytes"
    if [[ "$(grep -cE '(meets|MISSES)$' "$tmp/ratios")" -ge 10 ]]; then ok; else
        bad "ratios.py: expected a verdict per configuration"
    fi
    printf 'not json\n' >"$tmp/bad"
    python3 "$ratios" "$tmp/bad" >/dev/null 2>&1
    if [[ "$?" == 2 || "$?" != 0 ]]; then ok; else bad "ratios.py accepted bad input"; fi
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
run "bf16 logits" 0 "${tiny[@]}" --dtype bf16 --impl fused --entropy-grad on --json &&
    has "bf16 logits" out '"dtype":"bf16"'
usage_error "json with value" bench logprob --json=1
# which CPU kernels ran, in every CPU line: the machine's best, or the lower one asked for
if run "cpu kernels, json" 0 bench logprob --seq 8,9 --vocab 16 --reps 1 --bandwidth-mib 1 --json
then
    [[ "$(grep -c '"cpu_kernels":"\(avx512\|avx2\|base\)","stream_stores":\(true\|false\)' \
        "$tmp/out")" == "$(grep -c . "$tmp/out")" ]] &&
        ok || bad "cpu kernels, json: a line without cpu_kernels/stream_stores"
fi
if TAPEGRAD_CPU_KERNELS=base TAPEGRAD_CPU_STREAM_STORES= run "cpu kernels base" 0 \
    bench logprob --seq 8 --vocab 16 --reps 1 \
    --bandwidth-mib 1 --json; then
    has "cpu kernels base" out '"cpu_kernels":"base","stream_stores":false'
fi
if [[ "$(uname -m)" == x86_64 ]] &&
    TAPEGRAD_CPU_KERNELS=base TAPEGRAD_CPU_STREAM_STORES=on run "stream stores on" 0 bench logprob \
    --seq 8 --vocab 16 --reps 1 --bandwidth-mib 1; then
    has "stream stores on" out "CPU kernels: base, non-temporal stores on"
fi
usage_error "too big for RAM" bench logprob --seq 1000000 --vocab 1000000
has "too big for RAM" err "RAM"
# the default seq list with a vocabulary no RAM holds: every configuration skipped, and each
# JSON line says so and why (they said "device":"cuda" or, later, nothing at all)
if run "skipped for RAM, json" 0 bench logprob --vocab 2000000000 --impl fused \
    --entropy-grad on --reps 1 --bandwidth-mib 1 --json; then
    if [[ "$(grep -c '"skipped":true,"reason":"needs ~' "$tmp/out")" == 3 ]] &&
        ! grep -q '"device"' "$tmp/out"; then ok; else
        bad "skipped for RAM, json: expected 3 lines with skipped and a reason, no device"
        head -3 "$tmp/out"
    fi
fi
usage_error "bad device" bench logprob --device gpu
usage_error "two devices" bench logprob --device cpu,cuda
usage_error "two dtypes" bench logprob --dtype f32,f64
run "bench logprob help, device" 0 bench logprob --help && has "help, device" out "--device cpu|cuda"

# ---- bench threads: runs, names the BLAS build and its threading (the ratio is timing) ------
run "bench threads" 0 bench threads --reps 1 --size 32 --threads 2 &&
    has "bench threads" out "BLAS threading: " && has "bench threads" out "ratio step / (elementwise + gemm)"
no_stderr "bench threads"
run "bench threads json" 0 bench threads --reps 1 --size 32 --json &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert set(d) >= {"threads","size",
"blas","blas_threading","elementwise_ms","gemm_ms","step_ms","ratio"}, d' "$tmp/out" &&
    ok || bad "bench threads json: not one object with every key"
usage_error "threads: zero size" bench threads --size 0
usage_error "threads: bad reps" bench threads --reps x
usage_error "threads: unknown flag" bench threads --seq 1
run "bench threads help" 0 bench threads --help && has "bench threads help" out "--size N"
run "bench help lists threads" 0 bench --help && has "bench help lists threads" out "threads"

# ---- bench linear-logprob: three modes side by side, JSON keys, the targets script ----------
lin=(bench linear-logprob --shapes 40x8x300,33x5x70 --reps 1 --workspace-mib 1)
if run "linear json" 0 "${lin[@]}" --json; then
    no_stderr "linear json"
    # 2 shapes x 2 dtypes (f32, bf16) x 3 modes
    if [[ "$(wc -l <"$tmp/out")" == 12 ]]; then ok; else bad "linear json: expected 12 lines"; fi
    if python3 - "$tmp/out" <<'PY'; then ok; else bad "linear json: structure"; fi
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
need = {"bench", "device", "dtype", "mode", "seq", "hidden", "vocab", "chunk", "skipped",
        "median_ms", "fwd_ms", "bwd_ms", "peak_bytes", "saved_bytes", "grad_bytes",
        "logits_bytes", "rss_peak_growth_bytes"}
for r in rows:
    assert need <= set(r), need - set(r)
    assert r["bench"] == "linear-logprob" and not r["skipped"], r
    if r["mode"] != "materialized":
        assert r["chunk_rows"] >= 1 and r["vocab_block"] >= 1 and r["workspace_bytes"] > 0, r
assert [r["mode"] for r in rows[:3]] == ["materialized", "fused", "fused-no-entropy-grad"]
assert [r["dtype"] for r in rows[:6]] == ["f32"] * 3 + ["bf16"] * 3, rows
PY
    if python3 "$(dirname "$0")/../../bench/linear_targets.py" "$tmp/out" >"$tmp/targets"; then
        ok
    else
        # the time target is timing at a tiny size; the memory targets must hold
        if grep -q "peak.*MISSES" "$tmp/targets"; then
            bad "linear targets: a memory target missed"
            cat "$tmp/targets"
        else ok; fi
    fi
fi
run "linear table" 0 "${lin[@]}" --mode fused --dtype bf16 &&
    has "linear table" out "N 40, D 8, V 300, bf16" &&
    has "linear table" out "fused"
# --mode loss: the loss entry and the fused op followed by the same loss, two rows per
# configuration, their steps interleaved
if run "linear loss json" 0 "${lin[@]}" --mode loss --json; then
    no_stderr "linear loss json"
    if [[ "$(wc -l <"$tmp/out")" == 8 ]]; then ok; else bad "linear loss json: expected 8 lines"; fi
    if python3 - "$tmp/out" <<'PY'; then ok; else bad "linear loss json: structure"; fi
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
need = {"bench", "device", "dtype", "mode", "seq", "hidden", "vocab", "chunk", "skipped",
        "interleaved", "median_ms", "fwd_ms", "bwd_ms", "peak_bytes", "saved_bytes",
        "grad_bytes"}
assert [r["mode"] for r in rows] == ["loss", "fused+loss"] * 4, rows
for r in rows:
    assert need <= set(r), need - set(r)
    assert r["bench"] == "linear-logprob" and not r["skipped"] and r["interleaved"], r
    assert r["peak_bytes"] > 0 and r["median_ms"] >= 0, r
    if r["mode"] == "loss":
        assert r["chunks"] >= 1 and 1 <= r["chunk_rows"] <= r["seq"], r
    else:
        assert r["chunk_rows"] >= 1 and r["vocab_block"] >= 1 and r["workspace_bytes"] > 0, r
PY
    # the targets script reads them (target (d)); at this size both of its targets are
    # noise (tens of microseconds; the per-row buffers, not the (chunk, vocab) workspace,
    # decide the peak), so only that it ran and checked every configuration
    python3 "$(dirname "$0")/../../bench/linear_targets.py" "$tmp/out" >"$tmp/targets"
    rc=$?
    if [[ $rc -le 1 && "$(grep -c "time: loss .* / fused+loss" "$tmp/targets")" == 4 &&
        "$(grep -c "peak: loss .*, fused+loss" "$tmp/targets")" == 4 ]]; then
        ok
    else
        bad "linear loss targets: exit $rc, expected 4 time and 4 peak lines:"
        cat "$tmp/targets"
    fi
fi
run "linear loss table" 0 "${lin[@]}" --mode loss --dtype f32 --chunk 7 &&
    has "linear loss table" out "fused+loss" &&
    has "linear loss table" out "loss / fused+loss: time" &&
    has "linear loss table" out " chunks of "
usage_error "linear bad shapes" bench linear-logprob --shapes 4x4
# 16 x 16 x 2 lists make 512 shapes, more than the list holds (it wrote past its end)
usage_error "linear too many shapes" bench linear-logprob --seq 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 \
    --hidden 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 --vocab 2,3
usage_error "linear bad mode" bench linear-logprob --mode nope
usage_error "linear bad dtype" bench linear-logprob --dtype bf17
usage_error "linear zero reps" bench linear-logprob --reps 0
usage_error "linear bad tf32" bench linear-logprob --tf32 maybe
run "linear tf32 json" 0 "${lin[@]}" --mode fused --dtype f32 --tf32 on --json &&
    has "linear tf32 json" out '"tf32":true'
run "bench help lists linear" 0 bench --help && has "bench help lists linear" out "linear-logprob"

# ---- --device cuda on this build: no device here (exit 1, one line), or a real one -----
gpu_tiny=(bench logprob --device cuda --seq 64 --vocab 50 --reps 1 --impl fused --chunk 0
    --entropy-grad off)
"$bin" "${gpu_tiny[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
if [[ "$rc" == 1 ]]; then
    if [[ "$(wc -l <"$tmp/err")" == 1 ]] &&
        grep -q '^tapegrad: bench logprob: no CUDA device: .' "$tmp/err" &&
        [[ ! -s "$tmp/out" ]]; then ok; else
        bad "device cuda without a device: expected one 'no CUDA device' line"
        cat "$tmp/err"
    fi
elif [[ "$rc" == 0 ]]; then # a build with the CUDA backend on a machine with a GPU
    has "device cuda (real device)" out ", cuda ("
    no_stderr "device cuda (real device)"
else
    bad "device cuda: exit status $rc, expected 1 (no device) or 0"
    cat "$tmp/err"
fi

# ---- --device cuda on the emulated device ----------------------------------------------
if [[ -n "$simt" && -x "$simt" ]]; then
    bin="$simt"
    emu="tapegrad simt emulator (host)"
    if run "simt table" 0 bench logprob --device cuda --seq 64,100 --vocab 50 --reps 1 \
        --impl fused --chunk 0 --entropy-grad off; then
        has "simt table" out "cuda ($emu"
        has "simt table" out "device peak unknown"
        has "simt table" out "median_ms"
        no_stderr "simt table"
        if [[ "$(grep -cE '^fused +(64|100) +50 +0 +off ' "$tmp/out")" == 2 ]]; then ok; else
            bad "simt table: expected 2 rows"
            cat "$tmp/out"
        fi
    fi
    # seq 300: more than the 256 rows tiled, and not a multiple of them
    if run "simt json" 0 bench logprob --device cuda --seq 64,300 --vocab 50 --reps 1 \
        --impl fused --chunk 0 --entropy-grad off --json; then
        if [[ "$(wc -l <"$tmp/out")" == 2 ]]; then ok; else bad "simt json: expected 2 lines"; fi
        if [[ "$(grep -cF '"device":"cuda","device_name":"'"$emu"'","skipped":false' \
            "$tmp/out")" == 2 ]]; then ok; else
            bad "simt json: device keys"
            cat "$tmp/out"
        fi
        if command -v python3 >/dev/null 2>&1; then
            if python3 - "$tmp/out" "${keys[@]}" <<'PY'; then ok; else bad "simt json: structure"; fi
import json, sys
path, keys = sys.argv[1], sys.argv[2:]
rows = [json.loads(line) for line in open(path)]
for o in rows:
    missing = [k for k in keys if k not in o]
    assert not missing, f"missing {missing}"
    assert o["device"] == "cuda" and o["skipped"] is False, o
    assert o["machine_gbps"] == 0 and o["roofline_fraction"] == 0, o
    n = o["seq"] * o["vocab"] * 4
    # the gradient is a peak's part; the logits' storage is saved, and is
    # exactly seq x vocab even when tiled from 256 rows with a remainder
    assert o["peak_bytes"] >= n and n <= o["saved_bytes"] < n + 64 * o["seq"], o
assert sorted(o["seq"] for o in rows) == [64, 300], rows
PY
        fi
    fi
    # too big for the emulated device's 16 GiB: reported, not run, not an error
    if run "simt skipped" 0 bench logprob --device cuda --seq 64,16777216 --vocab 50 \
        --impl composite --chunk 0 --entropy-grad off --reps 1; then
        has "simt skipped" out "skipped: needs ~26.0 GiB of 16.0 GiB"
        no_stderr "simt skipped"
        if [[ "$(grep -cE '^composite +64 +50 +0 +off +[0-9]+ +[0-9.]+ ' "$tmp/out")" == 1 ]]
        then ok; else bad "simt skipped: the tiny configuration's row"; fi
    fi
    # what ran, from the progress on a terminal: the skipped one was not run
    if ((have_script)) && tty_run bench logprob --device cuda --seq 64,16777216 --vocab 50 \
        --impl composite --chunk 0 --entropy-grad off --reps 1; then
        has "simt skipped, terminal" tty "device: $emu"
        has "simt skipped, terminal" tty "making logits (64, 50) f32 and targets on the device"
        has "simt skipped, terminal" tty \
            "[2/2] composite seq=16777216 vocab=50 chunk=0 entropy_grad=off skipped"
        if grep -q "16777216.*rep 1/1\|making logits (16777216" "$tmp/tty"; then
            bad "simt skipped: the configuration was run"
        else ok; fi
    fi
    if run "simt skipped json" 0 bench logprob --device cuda --seq 131072 --vocab 128256 \
        --impl composite --reps 1 --json; then
        # the GPU defaults: chunk 0,8192 x entropy-grad on,off, all skipped
        if [[ "$(grep -c '"skipped":true,"reason":"needs ~' "$tmp/out")" == 4 ]]; then ok; else
            bad "simt skipped json: expected 4 skipped objects"
            cat "$tmp/out"
        fi
        no_stderr "simt skipped json"
    fi
    if ((have_script)) && tty_run bench logprob --device cuda --seq 131072 --vocab 128256 \
        --impl composite --reps 1 --json; then
        if grep -q "making logits\|rep 1/1" "$tmp/tty"; then
            bad "simt skipped json: inputs made or run for skipped configurations"
        else ok; fi
        has "simt skipped json, terminal" tty "skipped: needs ~"
    fi
    usage_error "simt bad device" bench logprob --device gpu
    # --mode loss on the device: the loss entry's callback runs there
    if run "simt linear loss json" 0 bench linear-logprob --device cuda --shapes 24x4x50 \
        --dtype f32 --mode loss --reps 1 --json; then
        if [[ "$(grep -c '"device":"cuda".*"mode":"loss".*"skipped":false' "$tmp/out")" == 1 &&
            "$(grep -c '"mode":"fused+loss".*"skipped":false' "$tmp/out")" == 1 ]]; then ok; else
            bad "simt linear loss json: expected a loss and a fused+loss line"
            cat "$tmp/out"
        fi
        no_stderr "simt linear loss json"
    fi
elif [[ -n "$simt" ]]; then
    echo "note: $simt not found; the --device cuda checks on the emulated device are skipped"
fi

echo "cli bench: $passed passed, $failed failed"
((failed == 0))
