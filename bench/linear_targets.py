#!/usr/bin/env python3
"""bench/linear_targets.py - the targets of the fused linear log-prob op, checked
on the JSON lines of `tapegrad bench linear-logprob --json` and, optionally,
of its PyTorch peer `bench/peer_linear_logprob.py --json`.

    build/bin/tapegrad bench linear-logprob --json | python3 bench/linear_targets.py
    python3 bench/linear_targets.py tapegrad.jsonl torch.jsonl

Reads the files given (or stdin); lines of other benchmarks are ignored.
The checks, one printed line each, with the measured figures:

  (a) every fused line (modes fused, fused-no-entropy-grad): peak_bytes <=
      grad_bytes + workspace_bytes + 16 x seq (the outputs) + 24 x seq (the
      saved statistics) + 16 x seq (the upstream gradient vectors): no
      (seq, vocab) buffer ever exists.
  (b) on device cpu, for each (seq, hidden, vocab, dtype) with both a
      materialized and a fused line: fused median_ms <= 1.4 x materialized
      median_ms.
  (c) at seq 8192, vocab 128256 (any hidden, f32, cpu): the torch-naive
      peak_rss_growth_bytes >= 5 x tapegrad's fused peak_bytes.
  (d) for each configuration of --mode loss (a loss line and the fused+loss
      line after it, measured interleaved): the loss entry's median_ms <=
      0.8 x fused+loss's (at least 1.25x faster: three GEMMs where the
      fused op and its backward make four), and its peak_bytes <=
      fused+loss's.

Each line ends in `meets`, `MISSES`, or `not measured: <why>` (a skipped
configuration, or a missing line); a check not measured fails nothing.
Exit status: 0 when no target is missed, 1 when one is, 2 for unreadable
input. Standard library only.
"""
import json
import sys

from checks import Tally

MIB = 1024.0 * 1024.0
FUSED_MODES = ("fused", "fused-no-entropy-grad")
TIME_RATIO = 1.4     # (b): fused / materialized median time, at most
RSS_FACTOR = 5.0     # (c): torch-naive RSS growth / fused peak, at least
LOSS_TIME_RATIO = 0.8  # (d): loss entry / fused+loss median time, at most
BIG_SEQ, BIG_VOCAB = 8192, 128256


class BadInput(Exception):
    pass


def load(stream, name, tg, peer):
    for n, line in enumerate(stream, 1):
        line = line.strip()
        if not line:
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            raise BadInput("%s line %d is not JSON: %s" % (name, n, e)) from None
        if not isinstance(r, dict):
            continue
        if r.get("bench") in ("linear-logprob", "linear-logprob-torch") and not all(
                isinstance(r.get(k), int) for k in ("seq", "hidden", "vocab")):
            raise BadInput("%s line %d lacks seq, hidden or vocab" % (name, n))
        if r.get("bench") == "linear-logprob":
            tg.append(r)
        elif r.get("bench") == "linear-logprob-torch":
            peer.append(r)


def shape(r):
    return (r["seq"], r["hidden"], r["vocab"], r.get("dtype", "f32"))


def label(r, mode=True):
    s = "%-4s seq=%-6d hidden=%-5d vocab=%-6d %s" % (
        r.get("device", "cpu"), r["seq"], r["hidden"], r["vocab"], r.get("dtype", "f32"))
    if mode and "mode" in r:
        s += " %-21s" % r["mode"]
        if r["mode"] in FUSED_MODES:
            s += " chunk=%-5d" % r.get("chunk", 0)
    return s


def skipped(r):
    return "skipped (%s)" % r.get("reason", "no reason given") if r.get("skipped") else None


def missing(r, keys):
    gone = [k for k in keys if k not in r]
    return "no %s" % ", ".join(gone) if gone else None


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    tg, peer = [], []
    try:
        if len(argv) > 1:
            for path in argv[1:]:
                with open(path) as f:
                    load(f, path, tg, peer)
        else:
            load(sys.stdin, "stdin", tg, peer)
    except (OSError, BadInput) as e:
        print("linear_targets.py: %s" % e, file=sys.stderr)
        return 2
    tally = Tally("not measured: %s")
    verdict, section = tally.verdict, tally.section

    # (a) the fused modes' exact peak holds no (seq, vocab) buffer
    out = []
    for r in tg:
        if r.get("mode") not in FUSED_MODES:
            continue
        why = skipped(r) or missing(r, ("peak_bytes", "grad_bytes", "workspace_bytes"))
        if why:
            out.append("%s  not measured: %s" % (label(r), why))
            continue
        n = r["seq"]
        bound = r["grad_bytes"] + r["workspace_bytes"] + 16 * n + 24 * n + 16 * n
        out.append("%s  peak %9.2f MiB  bound %9.2f MiB (grads %.2f + workspace %.2f + 56 x seq)"
                   "  %s" % (label(r), r["peak_bytes"] / MIB, bound / MIB,
                             r["grad_bytes"] / MIB, r["workspace_bytes"] / MIB,
                             verdict(r["peak_bytes"] <= bound)))
    section("(a) fused peak_bytes <= grads + workspace + 56 bytes per row", out,
            "no fused line")

    # (b) fusing costs little time against the materialized logits on the CPU
    out = []
    mat = {shape(r): r for r in tg
           if r.get("mode") == "materialized" and r.get("device") == "cpu"}
    for f in tg:
        if f.get("mode") != "fused" or f.get("device") != "cpu" or shape(f) not in mat:
            continue
        m = mat[shape(f)]
        why = skipped(m) and "materialized " + skipped(m)
        why = why or (skipped(f) and "fused " + skipped(f))
        why = why or missing(m, ("median_ms",)) or missing(f, ("median_ms",))
        if why:
            out.append("%s  not measured: %s" % (label(f), why))
            continue
        q = f["median_ms"] / m["median_ms"] if m["median_ms"] > 0 else float("inf")
        out.append("%s  fused %9.1f ms / materialized %9.1f ms = %5.3f  %s"
                   % (label(f), f["median_ms"], m["median_ms"], q, verdict(q <= TIME_RATIO)))
    section("(b) cpu: fused median_ms <= %.1f x materialized median_ms" % TIME_RATIO, out,
            "no cpu shape with both a materialized and a fused line")

    # (c) the memory saved against PyTorch's plain version of the same step
    out = []
    big = lambda r: (r["seq"], r["vocab"], r.get("dtype", "f32")) == (BIG_SEQ, BIG_VOCAB, "f32")
    fused = [r for r in tg if r.get("mode") == "fused" and r.get("device") == "cpu" and big(r)]
    naive = {r["hidden"]: r for r in peer if r.get("impl") == "torch-naive" and big(r)}
    for h in sorted(set(r["hidden"] for r in fused) | set(naive)):
        t = naive.get(h)
        fs = [r for r in fused if r["hidden"] == h]
        lab = label(fs[0] if fs else t, mode=False)
        if not fs:
            out.append("%s  not measured: no tapegrad fused line" % lab)
            continue
        for f in fs:
            lab = label(f)
            why = skipped(f) and "fused " + skipped(f)
            why = why or missing(f, ("peak_bytes",))
            if not why and t is None:
                why = "no torch-naive line"
            if not why and t.get("skipped"):
                why = "torch-naive: %s" % t.get("reason", "skipped")
            why = why or missing(t, ("peak_rss_growth_bytes",))
            if why:
                out.append("%s  not measured: %s" % (lab, why))
                continue
            q = t["peak_rss_growth_bytes"] / float(f["peak_bytes"]) if f["peak_bytes"] else float("inf")
            out.append("%s  torch-naive RSS growth %9.1f MiB / fused peak %9.1f MiB = %6.2f  %s"
                       % (lab, t["peak_rss_growth_bytes"] / MIB, f["peak_bytes"] / MIB, q,
                          verdict(q >= RSS_FACTOR)))
    section("(c) seq %d vocab %d f32 cpu: torch-naive peak RSS growth >= %g x fused peak_bytes"
            % (BIG_SEQ, BIG_VOCAB, RSS_FACTOR), out,
            "no tapegrad fused line or torch-naive line at seq %d vocab %d" % (BIG_SEQ, BIG_VOCAB))

    # (d) the loss known in forward against the fused op followed by that loss
    out = []
    for a, b in zip(tg, tg[1:]):
        if a.get("mode") != "loss" or b.get("mode") != "fused+loss" or shape(a) != shape(b):
            continue
        lab = label(a, mode=False) + " chunk=%-5d" % a.get("chunk", 0)
        why = skipped(a) or missing(a, ("median_ms", "peak_bytes"))
        why = why or missing(b, ("median_ms", "peak_bytes"))
        if why:
            out.append("%s  not measured: %s" % (lab, why))
            continue
        q = a["median_ms"] / b["median_ms"] if b["median_ms"] > 0 else float("inf")
        out.append("%s  time: loss %9.1f ms / fused+loss %9.1f ms = %5.3f  %s"
                   % (lab, a["median_ms"], b["median_ms"], q, verdict(q <= LOSS_TIME_RATIO)))
        out.append("%s  peak: loss %9.2f MiB, fused+loss %9.2f MiB  %s"
                   % (lab, a["peak_bytes"] / MIB, b["peak_bytes"] / MIB,
                      verdict(a["peak_bytes"] <= b["peak_bytes"])))
    section("(d) loss median_ms <= %.1f x fused+loss median_ms, peak_bytes <= fused+loss's"
            % LOSS_TIME_RATIO, out, "no loss line followed by its fused+loss line")
    return 1 if tally.missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
