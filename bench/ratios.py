#!/usr/bin/env python3
"""bench/ratios.py - the ratios the project tracks for the log-prob op, with
their targets, computed from the JSON lines of `tapegrad bench logprob --json`.

    build/bin/tapegrad bench logprob --chunk 0,1024 --json | python3 bench/ratios.py
    python3 bench/ratios.py results.jsonl

Each ratio is printed per configuration with `meets` or `MISSES`. Skipped
configurations (a device too small) take no part. Exit status: 0 when every
ratio shown meets its target, 1 when one misses, 2 for unreadable input.
Standard library only.
"""
import json
import sys

from checks import Tally

MIB = 1024.0 * 1024.0
ELEM = {"f32": 4, "f64": 8}


def load(stream):
    rows = []
    for n, line in enumerate(stream, 1):
        line = line.strip()
        if not line:
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            raise SystemExit("ratios.py: line %d is not JSON: %s" % (n, e)) from None
        if isinstance(r, dict) and "impl" in r and "median_ms" in r:
            rows.append(r)
    return rows


def key(r, **over):
    k = {f: r[f] for f in ("impl", "seq", "vocab", "chunk", "entropy_grad")}
    k.update(over)
    return tuple(sorted(k.items()))


def label(r, chunk=True, eg=True):
    s = "seq=%-7d vocab=%-7d" % (r["seq"], r["vocab"])
    if chunk:
        s += " chunk=%-6d" % r["chunk"]
    if eg:
        s += " entropy_grad=%-3s" % ("on" if r["entropy_grad"] else "off")
    return s


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    try:
        if len(argv) == 2:
            with open(argv[1]) as f:
                rows = load(f)
        else:
            rows = load(sys.stdin)
    except OSError as e:
        print("ratios.py: %s" % e, file=sys.stderr)
        return 2
    by = {key(r): r for r in rows}
    tally = Tally("(needs %s)")
    verdict, section = tally.verdict, tally.section

    out = []
    for f in rows:
        c = by.get(key(f, impl="composite")) if f["impl"] == "fused" else None
        if c and c["median_ms"] > 0:
            q = f["median_ms"] / c["median_ms"]
            out.append("%s  %7.4f  (%.1fx faster)  %s" % (label(f), q, 1 / q if q else 0,
                                                         verdict(q <= 0.125)))
    section("fused / composite median time [<= 0.125]", out, "both impls")

    out = []
    for f in rows:
        z = by.get(key(f, chunk=0)) if f["impl"] == "fused" and f["chunk"] else None
        if z and z["median_ms"] > 0:
            q = f["median_ms"] / z["median_ms"]
            out.append("%s  %7.4f  %s" % (label(f), q, verdict(q <= 1.15)))
    section("fused chunk C / chunk 0 median time [<= 1.15]", out,
            "fused with chunk 0 and another chunk")

    out = []
    for on in rows:
        off = (by.get(key(on, entropy_grad=False))
               if on["impl"] == "composite" and on["entropy_grad"] else None)
        if off:
            elem = ELEM.get(on.get("dtype"), 4)
            nv = float(on["seq"]) * on["vocab"] * elem
            diff = float(on["saved_bytes"]) - off["saved_bytes"]
            # a chunked composite is a checkpoint: it saves only the logits either way
            v = "(chunked: recomputed in backward)" if on["chunk"] else verdict(diff >= 2 * nv)
            out.append("%s  %10.1f MiB = %.3f x seq x vocab x %d  %s"
                       % (label(on, eg=False), diff / MIB, diff / nv, elem, v))
    section("composite saved bytes, entropy_grad on - off [>= 2 x seq x vocab x elem]", out,
            "composite with entropy_grad on and off")

    out = []
    for f in rows:
        if f["impl"] != "fused":
            continue
        lb = float(f["seq"]) * f["vocab"] * ELEM.get(f.get("dtype"), 4)
        q, lim = f["peak_bytes"] / lb, 1.02 + 64.0 * f["seq"] / lb
        out.append("%s  %7.4f  (limit %.4f)  %s" % (label(f), q, lim, verdict(q <= lim)))
    section("fused peak_bytes / logits bytes [<= 1.02 + 64 bytes per row]", out, "fused")

    out = []
    for f in rows:
        if f["impl"] == "fused" and f.get("machine_gbps", 0) > 0:
            q = f["roofline_fraction"]
            out.append("%s  %7.4f  %s" % (label(f), q, verdict(q >= 0.4)))
    section("fused roofline fraction [>= 0.4]", out, "fused, with a known peak bandwidth")

    # time per element across the seq series: the cost grows with the work, not faster
    out = []
    groups = {}
    for r in rows:
        if r["median_ms"] > 0:
            g = (r["impl"], r["vocab"], r["chunk"], r["entropy_grad"])
            groups.setdefault(g, []).append(r)
    for g in sorted(groups):
        rs = sorted(groups[g], key=lambda r: r["seq"])
        if len(rs) < 2:
            continue
        per = [r["median_ms"] * 1e6 / (float(r["seq"]) * r["vocab"]) for r in rs]
        q = max(per) / min(per)
        out.append("%-9s vocab=%-7d chunk=%-6d entropy_grad=%-3s seq %s: %s ns/element, "
                   "max/min %.2f  %s" % (g[0], g[1], g[2], "on" if g[3] else "off",
                                         ",".join(str(r["seq"]) for r in rs),
                                         ",".join("%.3f" % x for x in per), q,
                                         verdict(q <= 1.3)))
    section("time per element across seq [max / min <= 1.3]", out,
            "two seq values or more of one configuration")
    return 1 if tally.missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
