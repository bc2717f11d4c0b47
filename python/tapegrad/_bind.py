"""The op vocabulary: one Python function per entry of the generated table
(_ops.OPS, written from the public headers), and a Tensor method for each op
whose first parameter is a tensor.

Arguments are passed in the C order after the site, by position or by the C
parameter's name: a Tensor (None where the C function takes NULL; a number
or nested list becomes a tensor of the first tensor argument's dtype); a
sequence of ints for a shape or dims (the count is implied); a sequence of
tensors for cat/stack; an enum by its lower-case name ("mean", "f32") or
value; a `tg_tensor **` extra output is not an argument: it comes back as a
second result. A function returning a tensor returns a Tensor (with its
extra outputs, a tuple); an in-place op returns its first operand, as
PyTorch's do.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict

from ._lib import Site, check, check_status, lib, site
from ._ops import ENUM_PREFIXES, ENUMS, OPS

_CTYPES = {"tensor": ctypes.c_void_p, "double": ctypes.c_double, "int": ctypes.c_int,
           "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "bool": ctypes.c_bool,
           "str": ctypes.c_char_p, "out": ctypes.POINTER(ctypes.c_void_p)}
_ARRAY_ELEM = {"int64s": ctypes.c_int64, "ints": ctypes.c_int, "tensors": ctypes.c_void_p}


def _argtypes(params) -> list:
    out = [Site]
    for _, kind in params:
        if kind in _ARRAY_ELEM:
            out += [ctypes.c_int, ctypes.POINTER(_ARRAY_ELEM[kind])]
        elif kind.startswith("enum:"):
            out.append(ctypes.c_int)
        else:
            out.append(_CTYPES[kind])
    return out


def _enum_value(op: str, pname: str, enum: str, v: Any) -> int:
    if isinstance(v, str):
        table, prefix = ENUMS[enum], ENUM_PREFIXES[enum]
        key = v.lower()
        if key.startswith(prefix):  # the C name, e.g. "TG_REDUCTION_MEAN"
            key = key[len(prefix):]
        if key not in table:
            raise ValueError(f"tapegrad.{op}: {pname}={v!r} is not a {enum} "
                             f"(one of {', '.join(sorted(table))})")
        return table[key]
    return int(v)


def make_op(name: str, spec: dict, Tensor: type, as_tensor: Callable) -> Callable:
    """The Python function for one table entry (see the module's docstring)."""
    fn = getattr(lib, f"tg_{name}_at")
    params = spec["params"]
    fn.argtypes = _argtypes(params)
    fn.restype = ctypes.c_void_p if spec["returns"] == "tensor" else ctypes.c_int
    inputs = [(p, k) for p, k in params if k != "out"]
    n_outs = sum(1 for _, k in params if k == "out")

    def op(*args: Any, **kwargs: Any):
        if len(args) > len(inputs):
            raise TypeError(f"tapegrad.{name}: takes {len(inputs)} arguments "
                            f"({', '.join(p for p, _ in inputs)}), got {len(args)}")
        values = dict(zip((p for p, _ in inputs), args))
        for k, v in kwargs.items():
            if k in values or k not in {p for p, _ in inputs}:
                raise TypeError(f"tapegrad.{name}: unexpected or repeated argument {k!r}")
            values[k] = v
        missing = [p for p, _ in inputs if p not in values]
        if missing:
            raise TypeError(f"tapegrad.{name}: missing {', '.join(missing)}")
        like = next((v for v in values.values() if isinstance(v, Tensor)), None)
        c_args, outs, keep = [site()], [], []
        for p, kind in params:
            if kind == "out":
                outs.append(ctypes.c_void_p())
                c_args.append(ctypes.byref(outs[-1]))
                continue
            v = values[p]
            if kind == "tensor":
                if v is not None and not isinstance(v, Tensor):
                    v = as_tensor(v, like)
                    keep.append(v)
                c_args.append(v._h if v is not None else None)
            elif kind in _ARRAY_ELEM:
                seq = [v] if isinstance(v, int) else list(v)
                if kind == "tensors":
                    keep.append(seq)  # the Tensors stay alive until the call returns
                    seq = [t._h for t in seq]
                arr = (_ARRAY_ELEM[kind] * max(len(seq), 1))(*seq)
                c_args += [len(seq), arr]
            elif kind.startswith("enum:"):
                c_args.append(_enum_value(name, p, kind[5:], v))
            elif kind == "str":
                c_args.append(v.encode())
            else:
                c_args.append(v)
        res = fn(*c_args)
        if spec["returns"] == "status":
            check_status(res)
            return values[inputs[0][0]]
        t = Tensor(check(res))
        return (t, *[Tensor(o.value) if o.value else None for o in outs]) if n_outs else t

    op.__name__ = op.__qualname__ = name
    sig = ", ".join(p for p, _ in inputs)
    extra = f" -> (result, {', '.join(p for p, k in params if k == 'out')})" if n_outs else ""
    op.__doc__ = f"{name}({sig}){extra}: tg_{name} ({spec['header']}).\n\n{spec['doc']}"
    return op


# No method for these: PyTorch's method of the same name reads its arguments
# otherwise (x.where(cond, y): x is the value, not the condition; x.var(1):
# 1 is a dim, not a correction). The functions are there (tapegrad.where).
NOT_METHODS = {"where", "var", "std"}


def bind_all(Tensor: type, as_tensor: Callable, namespace: Dict[str, Any]) -> Dict[str, Any]:
    """Puts one function per op into namespace and a method on Tensor for each
    op taking a tensor first (a method Tensor already has, hand-written, is
    kept; NOT_METHODS get none); returns namespace."""
    for name, spec in sorted(OPS.items()):
        op = make_op(name, spec, Tensor, as_tensor)
        namespace[name] = op
        first = spec["params"][0][1] if spec["params"] else None
        if first == "tensor" and not hasattr(Tensor, name) and name not in NOT_METHODS:
            setattr(Tensor, name, op)
    return namespace
