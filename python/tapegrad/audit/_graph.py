"""Reading a PyTorch autograd graph from Python: its nodes (``grad_fn`` and
``next_functions``), the tensors each node saved for backward (the
``_saved_*`` attributes of PyTorch's nodes; ``saved_tensors`` and the tensor
attributes of a custom Function's ctx) and its leaves (``AccumulateGrad``'s
``variable``). Nothing here changes the graph."""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch

from ._util import TLS, is_tensor

_PY_NODE = torch.autograd.function.BackwardCFunction  # a custom Function's node (its ctx)


def is_node(o: Any) -> bool:
    """True for an autograd graph node (``t.grad_fn``), PyTorch's or a custom
    Function's."""
    t = type(o)
    r = _NODE_TYPES.get(t)
    if r is None:
        r = (hasattr(t, "next_functions") and hasattr(t, "register_hook")
             and hasattr(t, "metadata"))
        _NODE_TYPES[t] = r
    return r


_NODE_TYPES: Dict[type, bool] = {}


def is_custom(node: Any) -> bool:
    """True for the node of a custom ``torch.autograd.Function``."""
    return isinstance(node, _PY_NODE)


def is_accumulate(node: Any) -> bool:
    """True for ``AccumulateGrad``, the node standing for a leaf."""
    return type(node).__name__ == "AccumulateGrad"


def node_name(node: Any) -> str:
    """The node's name as PyTorch's errors write it (``LogSoftmaxBackward0``;
    ``MyFnBackward`` for a custom Function)."""
    if is_custom(node):
        return type(node).__name__
    try:
        return node.name()
    except Exception:  # noqa: BLE001 - a name for a report, never an error
        return type(node).__name__


def children(node: Any) -> Iterator[Tuple[Any, int]]:
    """(input node, which output of it) for each input edge with a node."""
    try:
        nf = node.next_functions
    except RuntimeError:
        return
    for n, k in nf:
        if n is not None:
            yield n, k


def leaf_of(node: Any) -> Optional[torch.Tensor]:
    """The leaf tensor of an AccumulateGrad node (None once it is gone)."""
    try:
        return node.variable
    except (RuntimeError, AttributeError):
        return None


_SAVED_ATTRS: Dict[type, Tuple[str, ...]] = {}


def _saved_attr_names(node: Any) -> Tuple[str, ...]:
    """The ``_saved_*`` attributes of a PyTorch node type that hold tensors
    (those with a ``_raw_saved_*`` twin), cached per type."""
    t = type(node)
    names = _SAVED_ATTRS.get(t)
    if names is None:
        names = tuple(n[len("_raw"):] for n in dir(t) if n.startswith("_raw_saved_"))
        _SAVED_ATTRS[t] = names
    return names


def _tensors_in(v: Any) -> List[torch.Tensor]:
    if is_tensor(v):
        return [v]
    if isinstance(v, (list, tuple)):
        return [x for x in v if is_tensor(x)]
    return []


class Saved:
    """One tensor a node holds for backward: its slot (``self``, ``result``,
    ``0`` for a custom Function's first saved tensor, ``ctx.cache`` for a
    tensor kept as a ctx attribute), the tensor, and the recorder's record of
    its save when one was active (None otherwise)."""

    __slots__ = ("slot", "tensor", "record")

    def __init__(self, slot: str, tensor: torch.Tensor, record: Any) -> None:
        self.slot, self.tensor, self.record = slot, tensor, record


def saved_of(node: Any) -> List[Saved]:
    """The tensors ``node`` still holds for backward (none once backward freed
    them, or for a tensor modified in place since, which PyTorch refuses to
    hand out). Reading them runs the saved-tensor unpack hooks, tapegrad's
    with their version check off."""
    out: List[Saved] = []
    outer, TLS.probe = TLS.probe, []
    try:
        if is_custom(node):
            _custom_saved(node, out)
        else:
            for name in _saved_attr_names(node):
                _read_slot(node, name, name[len("_saved_"):], out)
    finally:
        TLS.probe = outer
    return out


def _read_slot(node: Any, attr: str, slot: str, out: List[Saved]) -> None:
    TLS.probe.clear()
    try:
        v = getattr(node, attr)
    except RuntimeError:  # freed by backward, or modified in place (PyTorch's check)
        return
    recs = list(TLS.probe)
    for i, t in enumerate(_tensors_in(v)):
        out.append(Saved(slot if not isinstance(v, (list, tuple)) else f"{slot}[{i}]", t,
                         recs[i] if i < len(recs) else None))


def _custom_saved(node: Any, out: List[Saved]) -> None:
    TLS.probe.clear()
    try:
        ts = node.saved_tensors
    except RuntimeError:
        ts = ()
    recs = list(TLS.probe)
    for i, t in enumerate(ts):
        if is_tensor(t):
            out.append(Saved(str(i), t, recs[i] if i < len(recs) else None))
    try:
        attrs = vars(node)
    except TypeError:
        return
    for k, v in attrs.items():
        for j, t in enumerate(_tensors_in(v)):
            out.append(Saved(f"ctx.{k}" + (f"[{j}]" if not is_tensor(v) else ""), t, None))
