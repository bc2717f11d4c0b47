#!/usr/bin/env python3
"""scripts/gen_python_ops.py - writes python/tapegrad/_ops.py, the Python
package's table of the library's ops, from the public headers.

Every `tg_tensor *tg_NAME_at(tg_site s, ...)` and `tg_status tg_NAME_at(...)`
of include/tapegrad/tensor.h and ops.h becomes one entry: its C parameters
(names and kinds; an `int n` count before an array is folded into the
array), whether it returns a tensor or a status (an in-place op), and the
contract comment above it (the Python docstring). The enums the parameters
use are copied with their values. Functions the package binds by hand
(memory from outside, DLPack, custom functions, opts structs) are left out.

    python3 scripts/gen_python_ops.py            # rewrite the table
    python3 scripts/gen_python_ops.py --check    # exit 1 if it is stale

python/tests/test_ops.py runs --check, so a header change without the
regenerated table fails the test suite: the two cannot drift.
"""
import argparse
import pprint
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADERS = ["include/tapegrad/dtype.h", "include/tapegrad/tensor.h", "include/tapegrad/ops.h"]
OUT = ROOT / "python" / "tapegrad" / "_ops.py"
# bound by hand in the package, or not expressible as plain arguments
SKIP = {"tg_from_blob", "tg_from_data", "tg_from_dlpack", "tg_function_apply",
        "tg_mark_modified"}
SCALARS = {"double": "double", "int": "int", "int64_t": "int64", "uint64_t": "uint64",
           "bool": "bool", "const char *": "str", "tg_tensor *": "tensor",
           "tg_tensor **": "out"}
ARRAYS = {"const int64_t *": "int64s", "const int *": "ints", "tg_tensor *const *": "tensors"}


def strip_line_comments(src: str) -> str:
    return re.sub(r"//[^\n]*", "", src)


def enums(src: str) -> tuple:
    """typedef enum NAME { A = 0, B = 1 } NAME; -> ({NAME: {"a": 0, "b": 1}},
    {NAME: "prefix_"}): the names lower-cased, without the longest prefix they
    share, and that prefix (lower-cased) to take a C name."""
    out, prefixes = {}, {}
    for body, name in re.findall(r"typedef enum \w*\s*\{([^}]*)\}\s*(\w+);", src):
        items = [(k, int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)", body)]
        keys = [k for k, _ in items]
        prefix = keys[0][:keys[0].rfind("_") + 1] if keys else ""
        while prefix and not all(k.startswith(prefix) for k in keys):
            prefix = prefix[:prefix[:-1].rfind("_") + 1]
        out[name] = {k[len(prefix):].lower(): v for k, v in items}
        prefixes[name] = prefix.lower()
    return out, prefixes


def params(arglist: str, known_enums: dict):
    """[(name, kind)] of one prototype's parameters after the site, or None
    when one cannot be passed from Python."""
    raw = [re.sub(r"\s+", " ", a.strip()) for a in arglist.split(",")][1:]
    out = []
    i = 0
    while i < len(raw):
        m = re.match(r"(.*?)\s*(\w+)$", raw[i])
        ctype, name = m.group(1).replace("* ", "*").replace(" *", " *"), m.group(2)
        ctype = re.sub(r"\s*\*", " *", ctype).replace("* *", "**").replace("*const", "*const")
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        nm = re.match(r"(.*?)\s*(\w+)$", nxt) if nxt else None
        if ctype == "int" and nm and re.sub(r"\s*\*", " *", nm.group(1)) in ARRAYS:
            out.append((nm.group(2), ARRAYS[re.sub(r"\s*\*", " *", nm.group(1))]))
            i += 2
            continue
        if ctype in SCALARS:
            out.append((name, SCALARS[ctype]))
        elif ctype in known_enums:
            out.append((name, "enum:" + ctype))
        else:
            return None
        i += 1
    return out


def doc_of(comment: str) -> str:
    lines = [re.sub(r"^\s*\*? ?", "", ln) for ln in comment.strip("/*").splitlines()]
    text = "\n".join(ln.rstrip() for ln in lines).strip()
    first, nl, rest = text.partition("\n")  # a section header's rules, on its first line
    return (re.sub(r"^-{2,}\s*|\s*-{2,}$", "", first) + nl + rest).strip()


def table() -> tuple:
    ops, all_enums, all_prefixes = {}, {}, {}
    for h in HEADERS:
        src = strip_line_comments((ROOT / h).read_text())
        values, prefixes = enums(src)
        all_enums.update(values)
        all_prefixes.update(prefixes)
    for h in HEADERS:
        src = strip_line_comments((ROOT / h).read_text())
        last_comment = ""
        pat = re.compile(r"(/\*.*?\*/)|(tg_tensor\s*\*|tg_status)\s*(tg_\w+)_at\s*\(([^;]*?)\)\s*;",
                         re.S)
        for m in pat.finditer(src):
            if m.group(1):  # a comment covers the prototypes after it, up to the next
                last_comment = m.group(1)
                continue
            name = m.group(3)
            if name in SKIP:
                continue
            ps = params(m.group(4), all_enums)
            if ps is None:
                raise SystemExit(f"gen_python_ops: {h}: {name}_at has a parameter Python "
                                 "cannot pass: bind it by hand and add it to SKIP, or "
                                 "teach params() the kind")
            ret = "tensor" if m.group(2).startswith("tg_tensor") else "status"
            ops[name[3:]] = {"returns": ret, "params": ps, "header": h.split("/")[-1],
                             "doc": doc_of(last_comment)}
    used = {k.split(":", 1)[1] for op in ops.values() for _, k in op["params"]
            if k.startswith("enum:")}
    return (ops, {k: v for k, v in all_enums.items() if k in used},
            {k: v for k, v in all_prefixes.items() if k in used})


def render() -> str:
    ops, used_enums, prefixes = table()
    return ('"""The library\'s ops as data, written by scripts/gen_python_ops.py from\n'
            'include/tapegrad/tensor.h and ops.h: do not edit by hand (regenerate;\n'
            'python/tests/test_ops.py fails when this is stale)."""\n\n'
            f"ENUMS = {pprint.pformat(used_enums, width=96, sort_dicts=True)}\n\n"
            "# the prefix of each enum's C names (lower-cased), for names given that way\n"
            f"ENUM_PREFIXES = {pprint.pformat(prefixes, width=96, sort_dicts=True)}\n\n"
            f"OPS = {pprint.pformat(ops, width=96, sort_dicts=True)}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    a = ap.parse_args()
    text = render()
    if a.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run scripts/gen_python_ops.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
