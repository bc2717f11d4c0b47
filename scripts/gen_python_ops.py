#!/usr/bin/env python3
"""scripts/gen_python_ops.py - writes the Python package's ops from the public
headers: python/tapegrad/_ops.py (the table as data: names, parameters,
docs) and python/src/ops_gen.c (the extension's function and Tensor method
for each op: a parameter table and a call stub run by python/src/ops_run.c).

Every `tg_tensor *tg_NAME_at(tg_site s, ...)` and `tg_status tg_NAME_at(...)`
of include/tapegrad/tensor.h and ops.h becomes one entry: its C parameters
(names and kinds; an `int n` count before an array is folded into the
array), whether it returns a tensor or a status (an in-place op), and the
contract comment above it (the Python docstring). The enums the parameters
use are copied with their values. Functions the package binds by hand
(memory from outside, DLPack, custom functions, opts structs) are left out.

    python3 scripts/gen_python_ops.py            # rewrite both files
    python3 scripts/gen_python_ops.py --check    # exit 1 if one is stale

python/tests/test_ops.py runs --check, so a header change without the
regenerated files fails the test suite: they cannot drift.
"""
import argparse
import keyword
import pprint
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADERS = ["include/tapegrad/dtype.h", "include/tapegrad/tensor.h", "include/tapegrad/ops.h"]
OUT = ROOT / "python" / "tapegrad" / "_ops.py"
OUT_C = ROOT / "python" / "src" / "ops_gen.c"
# Tensor parameters that take NULL (None from Python): the header says so in
# words; python/tests/test_ops.py checks this set against the op registry's
# required inputs, so a new optional input cannot be missed.
NULLABLE = {("binary_cross_entropy_with_logits", "pos_weight"), ("clamp_tensor", "min"),
            ("clamp_tensor", "max"), ("cross_entropy", "weight"), ("nll_loss", "weight")}
# No Tensor method for these: PyTorch's method of the same name reads its
# arguments otherwise (x.where(cond, y): x is the value, not the condition;
# x.var(1): 1 is a dim, not a correction). The functions are there.
NOT_METHODS = {"where", "var", "std"}
MAX_PARAMS, MAX_OUTS = 16, 4  # python/src/ops_run.c's bounds
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


C_KIND = {"tensor": "TGPY_TENSOR", "double": "TGPY_DOUBLE", "int": "TGPY_INT",
          "int64": "TGPY_INT64", "uint64": "TGPY_UINT64", "bool": "TGPY_BOOL",
          "int64s": "TGPY_INT64S", "ints": "TGPY_INTS", "tensors": "TGPY_TENSORS",
          "out": "TGPY_OUT"}
# how a call stub passes a converted argument (tgpy_arg a[i]) to the C function
C_PASS = {"tensor": "a[{i}].t", "double": "a[{i}].d", "int": "a[{i}].i", "int64": "a[{i}].l",
          "uint64": "a[{i}].u", "bool": "a[{i}].b", "enum": "a[{i}].i",
          "int64s": "a[{i}].arr.n, (const int64_t *)a[{i}].arr.v",
          "ints": "a[{i}].arr.n, (const int *)a[{i}].arr.v",
          "tensors": "a[{i}].arr.n, (tg_tensor *const *)a[{i}].arr.v", "out": "&a[{i}].t"}


def c_string(text: str) -> str:
    """text as a C string literal (split at newlines)."""
    esc = (text.replace("\\", "\\\\").replace('"', '\\"').replace("??", "?\\?"))
    lines = esc.split("\n")
    return "\n".join(f'    "{ln}\\n"' for ln in lines[:-1]) + ("\n" if len(lines) > 1 else "") + \
        f'    "{lines[-1]}"'


def render_c() -> str:
    ops, used_enums, prefixes = table()
    out = ['/* python/src/ops_gen.c - written by scripts/gen_python_ops.py from the public',
           ' * headers: do not edit by hand (regenerate; python/tests/test_ops.py fails when',
           ' * this is stale). One parameter table and one call stub per op; the module',
           ' * function and the Tensor method both run python/src/ops_run.c. */',
           '#include "tgpy.h"', '',
           '#define FUNCTION(NAME)                                                              \\',
           '    static PyObject *F_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t n,         \\',
           '                              PyObject *kw) {                                         \\',
           '        (void)m;                                                                    \\',
           '        return tgpy_run_op(&D_##NAME, NULL, args, n, kw);                            \\',
           '    }',
           '#define METHOD(NAME)                                                                \\',
           '    static PyObject *M_##NAME(PyObject *self, PyObject *const *args, Py_ssize_t n,      \\',
           '                              PyObject *kw) {                                         \\',
           '        return tgpy_run_op(&D_##NAME, self, args, n, kw);                            \\',
           '    }', '']
    for enum in sorted(used_enums):
        items = sorted(used_enums[enum].items(), key=lambda kv: kv[1])
        names = ", ".join(f'"{k}"' for k, _ in items)
        values = ", ".join(str(v) for _, v in items)
        out += [f"static const char *const E_{enum}_names[] = {{{names}}};",
                f"static const int E_{enum}_values[] = {{{values}}};",
                f'static const tgpy_enum_def E_{enum} = {{"{enum}", "{prefixes[enum]}", '
                f"{len(items)}, E_{enum}_names, E_{enum}_values}};", ""]
    funcs, methods = [], []
    for name, spec in sorted(ops.items()):
        params = spec["params"]
        if len(params) > MAX_PARAMS or sum(k == "out" for _, k in params) > MAX_OUTS:
            raise SystemExit(f"gen_python_ops: {name} has more than {MAX_PARAMS} parameters "
                             f"or {MAX_OUTS} extra outputs (python/src/ops_run.c's bounds)")
        for p, _ in params:
            if keyword.iskeyword(p) or not p.isidentifier():
                raise SystemExit(f"gen_python_ops: {name}: parameter {p!r} is not a Python name")
        rows = []
        for p, kind in params:
            if kind.startswith("enum:"):
                rows.append(f'{{"{p}", TGPY_ENUM, &E_{kind[5:]}}}')
            else:
                ck = "TGPY_TENSOR_OPT" if (name, p) in NULLABLE else C_KIND[kind]
                rows.append(f'{{"{p}", {ck}, NULL}}')
        args = ", ".join(["s"] + [C_PASS["enum" if k.startswith("enum:") else k].format(i=i)
                                  for i, (_, k) in enumerate(params)])
        status = spec["returns"] == "status"
        ret = "tg_status " if status else "tg_tensor *"
        unused = "" if params else "(void)a; "
        out += [f"static const tgpy_param P_{name}[] = {{{', '.join(rows)}}};",
                f"static {ret}C_{name}(tg_site s, tgpy_arg *a) {{",
                f"    {unused}return tg_{name}_at({args});", "}",
                f'static const tgpy_op_def D_{name} = {{"{name}", "Tensor.{name}", {len(params)}, '
                f"P_{name}, {'true' if status else 'false'},",
                f"    {'NULL' if status else 'C_' + name}, {'C_' + name if status else 'NULL'}}};",
                f"FUNCTION({name})"]
        inputs = [p for p, k in params if k != "out"]
        outs = [p for p, k in params if k == "out"]
        extra = f" -> (result, {', '.join(outs)})" if outs else ""
        doc = f"{name}({', '.join(inputs)}){extra}: tg_{name} ({spec['header']}).\n\n{spec['doc']}"
        funcs.append((name, f"{name}($module, {', '.join(inputs)})\n--\n\n{doc}"))
        if params and params[0][1] == "tensor" and name not in NOT_METHODS:
            out.append(f"METHOD({name})")
            methods.append((name, f"{name}($self, {', '.join(inputs[1:])})\n--\n\n{doc}"))
        out.append("")
    for table_name, entries, prefix in (("tgpy_op_functions", funcs, "F"),
                                        ("tgpy_op_methods", methods, "M")):
        out.append(f"PyMethodDef {table_name}[] = {{")
        for name, doc in entries:
            out += [f'    {{"{name}", (PyCFunction)(void (*)(void)){prefix}_{name}, '
                    "METH_FASTCALL | METH_KEYWORDS,", c_string(doc) + "},"]
        out += ["    {NULL, NULL, 0, NULL}};", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    a = ap.parse_args()
    files = {OUT: render(), OUT_C: render_c()}
    if a.check:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text() != text]
        for p in stale:
            print(f"{p.relative_to(ROOT)} is stale: run scripts/gen_python_ops.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for p, text in files.items():
        p.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
