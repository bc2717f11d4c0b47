"""The op registry walked from Python: every f64 sample of every row
(tests/registry, through its tool `tg_registry run`, which also gives the
C library's own results) called through the generated bindings, checked
bit for bit against the C results (the binding passes every argument as the
C call does) and against PyTorch in float64 (tests/registry/torch_ops.py's
comparison, documented differences allowed), values and gradients. Each
sample is also made in the ways Python hands memory over: from big-endian
NumPy arrays (converted), from read-only arrays (shared), and, for empty
samples, through DLPack with a NULL data pointer and every float input
requiring grad. The binary operators get each two-input sample's operands
as Python numbers and lists too.

The tool is found through TAPEGRAD_REGISTRY (scripts/test-python.sh sets
it) or in the checkout's build/tests; without it, or without PyTorch, the
tests skip."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tapegrad as tg
from tapegrad._ops import OPS

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "registry"), str(ROOT / "tests" / "diff")]
torch_ops = pytest.importorskip("torch_ops")

FLAG_INPLACE, FLAG_CREATE, FLAG_RANDOM, FLAG_UNINIT = 1 << 1, 1 << 2, 1 << 3, 1 << 4
S_BAD = 1 << 7


def _tool():
    env = os.environ.get("TAPEGRAD_REGISTRY")
    for p in ([env] if env else []) + [str(ROOT / "build" / "tests" / "tg_registry")]:
        if p and os.access(p, os.X_OK):
            return p
    return None


TOOL = _tool()
pytestmark = pytest.mark.skipif(TOOL is None, reason="no tests/registry tool (tg_registry): "
                                "build the checkout or set TAPEGRAD_REGISTRY")


def _lines(cmd):
    out = subprocess.run([TOOL, cmd], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def registry():
    rows = {r["row"]: r for r in _lines("manifest")}
    return rows, _lines("run")


# ---- inputs as Python hands them over ---------------------------------------------------------

NP_DT = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "bool": np.bool_}


def _array(d, order="="):
    a = np.array(d["values"], dtype=NP_DT[d["dtype"]]).reshape(d["shape"])
    return a.astype(a.dtype.newbyteorder(order)) if d["dtype"] != "bool" else a


def _strided(t, d):
    """tests/registry's tgr_strided layout: the last two dims transposed, or
    every second element of a 1-D tensor twice as long."""
    if not d.get("strided"):
        return t
    if t.ndim >= 2:
        return t.transpose(-2, -1).contiguous().transpose(-2, -1)
    return tg.stack([t, t], -1).reshape([-1]).slice(0, 0, 2 * t.shape[0], 2)


def make_input(d, how):
    if d is None:
        return None
    if how == "null" and 0 in d["shape"] and d["dtype"] != "bool":  # (PyTorch 1.13 exports
        # no bool through DLPack) what DLPack hands over for an empty tensor: data NULL
        t = torch.empty(d["shape"], dtype=torch_ops.torch_ref.TORCH_DT[d["dtype"]])
        assert t.data_ptr() == 0
        return tg.from_dlpack(t)
    if how == "big-endian":
        t = tg.tensor(_array(d, ">"), dtype=d["dtype"])
    elif how == "read-only":  # the strided layout made on NumPy's side: shared, read-only
        a = _array(d)
        if d.get("strided"):
            a = (np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2) if a.ndim >= 2
                 else np.stack([a, a], -1).reshape(-1)[::2])
        a.flags.writeable = False
        return tg.from_numpy(a)
    else:
        t = tg.tensor(_array(d), dtype=d["dtype"])
    return _strided(t, d)


# ---- one sample through the binding ----------------------------------------------------------------

def _as_json(t):
    if t is None:
        return None
    flat = t.reshape([-1]).tolist() if t.ndim else [t.tolist()]
    return {"dtype": t.dtype, "shape": list(t.shape), "values": flat}


def _call(row, rec, ins):
    """The row's op through the binding on ins: the list of its outputs."""
    name, a = row["c_name"][3:], [rec["args"][p[0]] for p in row["params"]]
    kinds = {p[0]: p[1] for p in row["params"]}
    if name in ("logprob_entropy", "logprob_entropy_lse"):
        impl, temp, ignore, chunk, entropy, egrad = a
        out = tg.logprob_entropy(ins[0], ins[1], temperature=temp, ignore_index=ignore,
                                 chunk_size=chunk, entropy_grad=bool(egrad),
                                 impl=("fused", "composite")[impl], want_lse=True,
                                 want_entropy=bool(entropy))
        return list(out if name.endswith("lse") else out[:2])
    if name == "linear_loss":  # rows_loss.c's loss_chunk: a fixed per-token loss
        _, temp, ignore, chunk_rows, _, egrad, vocab_block = a

        def per_token(ch):
            return (tg.exp(ch.logprob).scale(0.3) - ch.logprob +
                    (tg.square(ch.lse).scale(0.05) - ch.entropy.scale(0.1))).sum()
        return [tg.linear_loss(ins[0], ins[1], ins[2], per_token, ins[3], temperature=temp,
                               ignore_index=ignore, chunk_rows=chunk_rows,
                               vocab_block=vocab_block, entropy_grad=bool(egrad))[0]]
    if name == "linear_logprob_entropy":
        impl, temp, ignore, chunk_rows, entropy, egrad, vocab_block = a
        return list(tg.linear_logprob_entropy(
            ins[0], ins[1], ins[2], ins[3], temperature=temp, ignore_index=ignore,
            chunk_rows=chunk_rows, vocab_block=vocab_block, entropy_grad=bool(egrad),
            impl=("fused", "composite")[impl], want_lse=True, want_entropy=bool(entropy)))
    if name == "from_data":  # tapegrad.tensor: the registry row's values, repeated
        dtype, shape, vals = a
        if any(s < 0 for s in shape):
            raise ValueError("negative size")
        n = math.prod(shape)
        v = [vals[i % len(vals)] for i in range(n)] if vals else []
        if dtype == "i64":  # as the row converts a double: saturating
            v = [0 if math.isnan(x) else 2**63 - 1 if x >= 9.2e18 else -2**63
                 if x <= -9.2e18 else int(x) for x in v]
        return [tg.tensor(np.array(v, dtype=NP_DT[dtype]).reshape(shape), dtype=dtype)]
    if name == "detach":
        return [ins[0].detach()]
    spec = OPS[name]
    values, tensors = iter(a), iter(ins)
    args = []
    for pname, kind in spec["params"]:
        if kind == "tensor":
            args.append(next(tensors, None))  # an optional input the sample leaves out
        elif kind == "tensors":
            args.append(list(tensors))
        elif kind == "out":
            continue
        else:
            v = next(values)  # JSON gives literal values as floats: ints where C takes ints
            args.append(bool(v) if kind == "bool" else [int(x) for x in v]
                        if kind in ("int64s", "ints") else v)
    res = tg.ops[name](*args)
    if spec["returns"] == "status":
        return [res]
    return list(res) if isinstance(res, tuple) else [res]


def through_binding(row, rec, how):
    """rec's sample through the binding, made `how`: a record of torch_ops'
    shape (status, message, outputs, grads)."""
    torch_ops.torch_ref.NOTES.clear()
    ins = [make_input(d, how) for d in rec["inputs"]]
    c_grads = rec.get("grads") or [None] * len(ins)
    for k, t in enumerate(ins):
        wants = c_grads[k] is not None or (how == "null" and row["diff"] >> k & 1)
        if t is not None and wants and t.dtype in ("f32", "f64"):
            t.requires_grad_(True)
    args = list(ins)
    if row["flags"] & FLAG_INPLACE and not rec["flags"] & S_BAD and ins[0] is not None:
        args[0] = ins[0].clone()  # as tgr_call: the op on a recorded copy of its target
    out = dict(rec, status="TG_OK", message="", outputs=[], grads=[None] * len(ins))
    try:
        outs = _call(row, rec, args)
    except tg.TapegradError as e:
        return dict(out, status=e.status_name, message=str(e))
    except (ValueError, TypeError, IndexError, OverflowError) as e:  # refused by the binding
        return dict(out, status="refused in Python", message=f"{type(e).__name__}: {e}")
    out["outputs"] = [_as_json(o) for o in outs]
    loss = None
    for k, o in enumerate(outs):
        weights = rec.get("weights") or []
        w = weights[k] if k < len(weights) else None
        if w is None or o is None or not o.requires_grad:
            continue
        term = (o * tg.tensor(_array(w), dtype=w["dtype"])).sum()
        loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
        out["grads"] = [_as_json(t.grad) if t is not None and t.requires_grad else None
                        for t in ins]
    return out


def _same(a, b):
    """Bit for bit, NaN equal to NaN (JSON records of one tensor)."""
    if a is None or b is None:
        return a is None and b is None
    if a["dtype"] != b["dtype"] or list(a["shape"]) != list(b["shape"]):
        return False
    return all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(a["values"], b["values"]))


def check(rows, rec, how, failures):
    row = rows[rec["row"]]
    got = through_binding(row, rec, how)
    where = f"{rec['row']} ({rec['what']}, {how})"
    refused_both = got["status"] == "refused in Python" and rec["status"] != "TG_OK"
    if got["status"] != rec["status"] and not refused_both:
        failures.append(f"{where}: {got['status']} where the C call gave {rec['status']}: "
                        f"{got['message'][:200]}")
        return
    if got["status"] != "TG_OK":
        return
    # bit for bit where the inputs' layout is known (a strided sample's is its row's own:
    # PyTorch's comparison below covers those)
    bitwise = not any(d is not None and d.get("strided") for d in rec["inputs"])
    values = not row["flags"] & (FLAG_RANDOM | FLAG_UNINIT)
    for k, (g, c) in enumerate(zip(got["outputs"], rec["outputs"])):
        if not (_same(g, c) if values and bitwise else (g is None) == (c is None)):
            failures.append(f"{where}: output {k} differs from the C call's")
    for k, (g, c) in enumerate(zip(got["grads"], rec.get("grads") or [])):
        if how != "null" and bitwise and not _same(g, c):
            failures.append(f"{where}: the gradient of input {k} differs from the C call's")
    res = torch_ops.run_record(rows, got)
    if res is not None and res[0] == "fail":
        failures.append(f"{where}: against PyTorch: {res[1]}")


def _report(failures, total):
    assert not failures, f"{len(failures)} of {total} samples:\n" + "\n".join(failures[:40])


def test_every_sample_through_the_bindings(registry):
    rows, records = registry
    failures = []
    for rec in records:
        check(rows, rec, "plain", failures)
    _report(failures, len(records))
    assert len({r["row"] for r in records}) == len(rows)  # every row ran


def test_big_endian_inputs_give_the_same_results(registry):
    rows, records = registry
    failures = []
    for rec in records:
        if rec["inputs"] and not rows[rec["row"]]["flags"] & FLAG_CREATE:
            check(rows, rec, "big-endian", failures)
    _report(failures, len(records))


def test_read_only_inputs_give_the_same_results_or_refuse_a_write(registry):
    rows, records = registry
    failures, refused = [], 0
    for rec in records:
        row = rows[rec["row"]]
        if not rec["inputs"] or row["flags"] & FLAG_CREATE:
            continue
        if not row["flags"] & FLAG_INPLACE:
            check(rows, rec, "read-only", failures)
            continue
        if rec["status"] != "TG_OK" or rec["inputs"][0] is None:
            continue
        # the in-place op on the read-only target itself: refused, nothing written
        target = make_input(rec["inputs"][0], "read-only")
        before = _as_json(target)
        others = [make_input(d, "plain") for d in rec["inputs"][1:]]
        try:
            _call(row, rec, [target] + others)
            failures.append(f"{rec['row']} ({rec['what']}): wrote read-only memory")
        except tg.ReadOnlyError:
            refused += 1
        if not _same(_as_json(target), before):
            failures.append(f"{rec['row']} ({rec['what']}): read-only memory changed")
    assert refused > 20
    _report(failures, len(records))


def test_empty_samples_with_null_data_and_every_input_requiring_grad(registry):
    rows, records = registry
    failures = []
    empties = [r for r in records if any(d is not None and 0 in d["shape"]
                                         for d in r["inputs"])]
    assert len(empties) > 50
    for rec in empties:
        check(rows, rec, "null", failures)
    _report(failures, len(empties))


# ---- operators with Python numbers and lists ------------------------------------------------------

OPERATORS = {"add": ("__add__", "__iadd__"), "sub": ("__sub__", "__isub__"),
             "mul": ("__mul__", "__imul__"), "div": ("__truediv__", "__itruediv__"),
             "pow": ("__pow__", "__ipow__"), "matmul": ("__matmul__", None),
             "eq": ("__eq__", None), "lt": ("__lt__", None), "remainder": ("__mod__", "__imod__"),
             "floor_divide": ("__floordiv__", "__ifloordiv__")}
REFLECTED = {"__add__": "__radd__", "__sub__": "__rsub__", "__mul__": "__rmul__",
             "__truediv__": "__rtruediv__", "__pow__": "__rpow__", "__matmul__": "__rmatmul__",
             "__mod__": "__rmod__", "__floordiv__": "__rfloordiv__"}


def _forms(y):
    """y as a Python list, and as a number when it has one element and no dims."""
    forms = [y.tolist()] if y.ndim else []
    if y.ndim == 0:
        forms.append(y.item())
    return forms


def test_operators_take_numbers_and_lists_as_tensors(registry):
    rows, records = registry
    failures, checked = [], 0
    for rec in records:
        ops = OPERATORS.get(rec["row"])
        if ops is None or rec["status"] != "TG_OK" or len(rec["inputs"]) != 2:
            continue
        x, y = (make_input(d, "plain") for d in rec["inputs"])
        if x.dtype != y.dtype or x.numel() == 0 or y.numel() == 0:
            continue  # a list takes its partner's dtype: only like pairs compare bit for bit
        op, iop = ops
        want = _as_json(getattr(x, op)(y))
        for form in _forms(y):
            checked += 1
            if not _same(_as_json(getattr(x, op)(form)), want):
                failures.append(f"{rec['row']} ({rec['what']}): x {op} {form!r}")
            if op in REFLECTED and not _same(_as_json(getattr(y, REFLECTED[op])(
                    x.tolist() if x.ndim else x.item())), want):
                failures.append(f"{rec['row']} ({rec['what']}): reflected {op}")
            if iop and want["shape"] == list(x.shape) and want["dtype"] == x.dtype:
                t = x.clone()
                t2 = x.clone()
                getattr(t, iop)(form)
                getattr(t2, iop)(y)
                if not _same(_as_json(t), _as_json(t2)):
                    failures.append(f"{rec['row']} ({rec['what']}): x {iop} {form!r}")
    assert checked > 100
    _report(failures, checked)
