"""The in-place op that broke a saved tensor, named. PyTorch says "one of the
variables needed for gradient computation has been modified by an inplace
operation: ... is at version 3; expected version 1 instead" and stops there;
under ``inplace_guard()`` the same error also names the node that saved the
tensor and the line that made it, and every in-place op that moved the
version since with its line, as tapegrad's TG_ERR_INPLACE does for its own
graphs (tape/node.c, inplace_error)."""
from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

import torch

from . import _record
from ._graph import children, is_custom, node_name, saved_of
from ._refs import frame_locals
from ._util import Internal, shape_str

_TORCH_AUTOGRAD = os.path.dirname(os.path.abspath(torch.autograd.__file__)) + os.sep
_TORCH_TENSOR = os.path.abspath(torch._tensor.__file__)


def version_error(r: "_record.Record", rec: "_record.Recorder", frame: Any) -> str:
    """The message for a record whose tensor moved on since its save."""
    t = r.tensor
    node, slot = r.node, r.slot
    if node is None:
        node, slot = _find_saver(r, frame)
    what = f", which is {r.producer}" if r.producer else ""
    saver = (f", saved by {node} (created at {r.site})" if node else
             f", saved for backward at {r.site}") + (f" as {slot}" if slot else "")
    evs, lost = rec.since(r)
    hist = "; ".join(f"{e.op} at {e.site} (version {e.before} -> {e.after})" for e in evs)
    if lost:
        hist += ("; " if hist else "") + f"{lost} not recorded (made while no inplace_guard() " \
                                          "was active, or forgotten)"
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{t.type()} {shape_str(t.shape)}]{what}{saver}, is at version "
            f"{t._version}; expected version {r.version} instead. In-place operations since it "
            f"was saved: {hist or '(none recorded)'}. Hint: make the modification out of place "
            f"({_hint([e.op for e in evs])}), or clone the tensor before modifying it.")


def _hint(ops: List[str]) -> str:
    seen: List[str] = []
    for op in ops:
        if op not in seen:
            seen.append(op)
    out = []
    for op in seen:
        base = op[:-1] if op.endswith("_") else ""
        out.append(f"{base} instead of {op}" if base and hasattr(torch.Tensor, base)
                   else f"a new tensor instead of {op}")
    return ", ".join(out) or "the out-of-place form of the op"


def _find_saver(r: Any, frame: Any) -> Tuple[Optional[str], Optional[str]]:
    """The node holding r, when the recorder had not met it: the custom
    Function whose backward is unpacking it, or a node of the graph that the
    running backward started from (found in PyTorch's frames)."""
    roots: List[Any] = []
    f = frame
    while f is not None:
        code = f.f_code
        if code.co_name == "backward" and "ctx" in code.co_varnames:
            ctx = dict(frame_locals(f)).get("ctx")
            if is_custom(ctx):
                roots.insert(0, ctx)
        elif code.co_filename.startswith(_TORCH_AUTOGRAD) or code.co_filename == _TORCH_TENSOR:
            loc = dict(frame_locals(f))
            for name in ("self", "tensors", "outputs", "t_outputs"):
                v = loc.get(name)
                for x in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(x, torch.Tensor) and x.grad_fn is not None:
                        roots.append(x.grad_fn)
        f = f.f_back
    seen = set()
    for root in roots:
        todo = [root]
        while todo:
            n = todo.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            for s in saved_of(n):
                if s.record is r:
                    slot = f"saved_tensors[{s.slot}]" if s.slot.isdigit() else s.slot
                    return node_name(n), slot
            todo.extend(c for c, _ in children(n))
    return None, None


class InplaceGuard(Internal):
    """``inplace_guard()``'s context (see there)."""

    def __init__(self) -> None:
        self.recorder: Optional[_record.Recorder] = None

    def __enter__(self) -> "InplaceGuard":
        self.recorder = _record.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        _record.release(self.recorder)


def inplace_guard() -> InplaceGuard:
    """A context under which every tensor saved for backward is recorded (its
    version, the op that saved it and the line), and every in-place op on a
    saved storage (its line, the versions it moved). A backward that meets a
    saved tensor modified since raises PyTorch's version error completed with
    the saving op and each in-place op since, with their lines:

        ... [torch.FloatTensor [4, 6]], which is output 0 of MulBackward0,
        saved by LogprobBackward (created at train.py:40) as saved_tensors[0],
        is at version 3; expected version 1 instead. In-place operations since
        it was saved: sub_ at train.py:28 (version 1 -> 2); add_ at
        train.py:31 (version 2 -> 3). Hint: ...

    The graphs built inside keep their checks after the context ends; the
    in-place ops are seen while it is active (in this thread, and in the
    backward it runs). PyTorch's nearest equivalent,
    ``torch.autograd.set_detect_anomaly(True)``, names the backward that
    failed, not the in-place op."""
    return InplaceGuard()
