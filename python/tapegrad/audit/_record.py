"""The recorder behind ``inplace_guard()`` and ``track_saved()``: while it is
active in a thread,

- saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``) record,
  for every tensor a node saves for backward, its version and storage and the
  Python line of the op that saved it (a ``Record``, which PyTorch keeps in
  place of the tensor);
- a dispatch mode (``TorchDispatchMode``) sees every op: an in-place op (an
  argument its schema writes) on a storage that a live record saved is
  remembered with its line (the last 8 per storage, as the C library's
  version history); after each op, the graph nodes it created are found from
  its outputs, and each record learns which node saved it and as what.

With saved-tensor hooks installed PyTorch no longer checks versions itself
(its SavedVariable leaves that to the hooks), so the unpack hook does: a
record whose tensor moved on is the version error, told in full
(``inplace.py``). Graphs keep their records after the recorder is gone.
"""
from __future__ import annotations

import itertools
import sys
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._graph import children, is_accumulate, node_name, saved_of
from ._util import TLS, Internal, Site, site_of, storage_key, user_frame

_OLD_WRAPPED = int(torch.__version__.split(".")[0]) < 2
_WRAPPED = (torch.float64, torch.int64, torch.bool, torch.complex128)
HISTORY = 8  # in-place events remembered per storage (TG__VERSION_HISTORY in the C library)
_seq = itertools.count(1)
SERIAL = itertools.count()  # names of the metadata keys (an id() could come back)


class Record(Internal):
    """One tensor saved for backward: what the pack hook returned and PyTorch
    keeps. ``tensor`` (the saved tensor, detached when it has a grad_fn, so
    that a saved output holds no cycle through its node), ``version`` at the
    save, ``key`` (its storage), ``site`` (the line of the op), ``seq`` (order
    of saves), ``ident`` (the storage told apart from a later one at the same
    address), ``producer`` (PyTorch's words for it: "output 0 of
    MulBackward0"), and, once found, ``node`` (the saving node's name) and
    ``slot`` (``self``, ``result``, ``saved_tensors[0]``)."""

    __slots__ = ("tensor", "version", "key", "ident", "site", "seq", "producer", "node",
                 "slot", "owner")

    def __del__(self) -> None:  # the graph let go of it: its storage may stop being watched
        owner = getattr(self, "owner", None)
        if owner is not None:
            try:
                owner.release(self.key)
            except Exception:  # noqa: BLE001 - at interpreter exit the module may be gone
                pass


def _unrecorded(fn: Callable, t: torch.Tensor) -> torch.Tensor:
    """fn(t) past the dispatch modes (tapegrad's own alias or copy)."""
    guard = torch._C._DisableTorchDispatch()  # noqa: F841 - held for the call
    try:
        return fn(t)
    finally:
        del guard


class Event:
    """An in-place op on a watched storage: op name, line, versions, order."""

    __slots__ = ("op", "site", "before", "after", "seq")

    def __init__(self, op: str, site: Site, before: int, seq: int) -> None:
        self.op, self.site, self.before, self.after, self.seq = op, site, before, before + 1, seq


_WRITES: Dict[Any, Tuple[int, ...]] = {}  # OpOverload -> indices of the arguments it writes


def _written(func: Any) -> Tuple[int, ...]:
    w = _WRITES.get(func)
    if w is None:
        try:
            args = func._schema.arguments
            w = tuple(i for i, a in enumerate(args)
                      if a.alias_info is not None and a.alias_info.is_write)
        except AttributeError:
            w = ()
        _WRITES[func] = w
    return w


_UNCOUNTED: Dict[Any, bool] = {}  # OpOverload -> writes without PyTorch's version bump under a mode


def _uncounted(func: Any) -> bool:
    """True for an op that writes its arguments but has no ADInplaceOrView
    kernel (``_foreach_add_``, ``_fused_adam_``): its version bumps come from
    the in-place ops it runs inside, which a dispatch mode's handler runs
    below that key, so under a mode nothing would bump them."""
    u = _UNCOUNTED.get(func)
    if u is None:
        sch = func._schema
        name = f"{sch.name}.{sch.overload_name}" if sch.overload_name else sch.name
        try:
            u = bool(_written(func)) and not torch._C._dispatch_has_kernel_for_dispatch_key(
                name, "ADInplaceOrView")
        except (AttributeError, RuntimeError):
            u = False
        _UNCOUNTED[func] = u
    return u


_increment = getattr(torch.autograd.graph, "increment_version", None)  # PyTorch >= 2.1


def bump(ts: List[torch.Tensor]) -> None:
    """Moves the version counters of ``ts`` on by one, as PyTorch does for an
    in-place op. Called inside a dispatch handler; PyTorch 1.13, without
    increment_version: an in-place op that changes nothing (as_strided_ to
    the same geometry), with ADInplaceOrView let through for it."""
    if _increment is not None:
        for t in ts:
            _increment(t)
        return
    key = torch._C.DispatchKey.ADInplaceOrView
    prev = torch._C._dispatch_tls_is_dispatch_key_excluded(key)
    torch._C._dispatch_tls_set_dispatch_key_excluded(key, False)
    try:
        with torch.no_grad():
            for t in ts:
                t.as_strided_(t.size(), t.stride(), t.storage_offset())
    finally:
        torch._C._dispatch_tls_set_dispatch_key_excluded(key, prev)


def _op_name(func: Any, i: int) -> str:
    """``sub_``; ``add (out=)`` for an out= variant."""
    name = func.overloadpacket.__name__
    arg = func._schema.arguments[i]
    return name if arg.name == "self" or name.endswith("_") else f"{name} ({arg.name}=)"


class _Mode(TorchDispatchMode):
    def __init__(self, rec: "Recorder") -> None:
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        if not TLS.busy:
            w = _written(func)
            if w and rec.live:
                rec.writing(func, w, args, kwargs)
            if rec.pending:
                rec.flush()
        if not TLS.busy and _uncounted(func):
            return rec.uncounted(func, args, kwargs)
        out = func(*args, **kwargs)
        if not TLS.busy and torch.is_grad_enabled():
            t = out if isinstance(out, torch.Tensor) else \
                next((o for o in out if isinstance(o, torch.Tensor)), None) \
                if isinstance(out, (tuple, list)) else None
            if t is not None:  # the op's line: for the trackers' reports only
                at = site_of(user_frame(sys._getframe(1))) if rec.trackers else None
                rec.pending.append((weakref.ref(t), at))
        return out


class NodeInfo(Internal):
    """What a recorder learned of one node that saved tensors: its name, the
    line that made it, its saves (slot, tensor description, storage key,
    bytes, order), its input nodes among those known (indices), and, when
    watched, whether backward gave it a gradient other than zero."""

    __slots__ = ("name", "site", "saves", "inputs", "runs", "nonzero")

    def __init__(self, name: str, site: Optional[Site]) -> None:
        self.name, self.site = name, site
        self.saves: List[Tuple[str, str, Any, int, int]] = []
        self.inputs: List[int] = []
        self.runs = 0
        self.nonzero = False


def recorded_site(md: dict) -> Optional[Site]:
    """The line of the op that made a node, as a recorder noted it in the
    node's metadata (None when none did)."""
    for k, v in md.items():
        if isinstance(k, str) and k.startswith("tapegrad.rec.") and v is not None:
            return v
    return None


def zero_hook(info: NodeInfo) -> Callable:
    """A node post-hook noting whether the gradient coming into the node
    (w.r.t. its outputs) was zero everywhere (None counts as zero)."""
    def hook(grad_inputs, grad_outputs):
        info.runs += 1
        if not info.nonzero:
            for g in grad_outputs:
                if g is not None and bool(g.any()):
                    info.nonzero = True
                    break
    return hook


class Recorder(Internal):
    """One per thread while a guard or a tracker is active (they share it:
    nested saved-tensor hooks would hide the outer ones)."""

    def __init__(self) -> None:
        self.trackers: List[Any] = []
        self.live: Dict[Any, int] = {}     # storage key -> live records
        self.first: Dict[Any, int] = {}    # storage key -> seq of its first live record
        self.events: Dict[Any, List[Event]] = {}
        self.pending: List[Any] = []       # weakrefs to the last ops' outputs
        self.key = f"tapegrad.rec.{next(SERIAL)}"
        self.lock = threading.RLock()  # a record may go (__del__) while it is held
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
        self._mode = _Mode(self)

    # -- hooks -----------------------------------------------------------------------------

    def pack(self, t: torch.Tensor) -> Any:
        if TLS.busy:
            return t
        r = Record()
        r.owner = None
        r.version = t._version
        if t.grad_fn is not None:
            r.tensor = _unrecorded(torch.Tensor.detach, t)
            r.producer = f"output {t.output_nr} of {node_name(t.grad_fn)}"
        elif _OLD_WRAPPED and t.dim() == 0 and not t.requires_grad and t.dtype in _WRAPPED \
                and not t.is_cuda:
            # PyTorch 1.13: a Python number an op saved (a "wrapped number") comes back to
            # a dispatch mode as a float, which breaks its detach in backward: a plain copy
            r.tensor = _unrecorded(torch.Tensor.clone, t)
            r.version, r.producer = r.tensor._version, None
        else:
            r.tensor = t
            r.producer = "a leaf tensor that requires grad" if t.requires_grad else None
        r.key = storage_key(t)
        r.site = site_of(user_frame(sys._getframe(1)))
        r.seq = next(_seq)
        r.node = r.slot = None
        r.ident = (r.key, r.seq)
        if r.key is not None:
            with self.lock:
                n = self.live.get(r.key, 0)
                if n == 0:
                    self.first[r.key] = r.seq
                self.live[r.key] = n + 1
                r.ident = (r.key, self.first[r.key])
            r.owner = self
        return r

    def unpack(self, r: Any) -> torch.Tensor:
        if not isinstance(r, Record):
            return r
        if TLS.probe is not None:
            TLS.probe.append(r)
            return r.tensor
        if r.tensor._version != r.version:  # PyTorch's check, which its hooks turn off
            from .inplace import version_error
            self.flush()
            raise RuntimeError(version_error(r, self, sys._getframe(1)))
        return r.tensor

    def release(self, key: Any) -> None:
        with self.lock:
            n = self.live.get(key, 0) - 1
            if n > 0:
                self.live[key] = n
            else:
                self.live.pop(key, None)
                self.first.pop(key, None)
                self.events.pop(key, None)

    # -- in-place ops ------------------------------------------------------------------------

    def writing(self, func: Any, w: Tuple[int, ...], args: tuple, kwargs: dict) -> None:
        site = None
        names = [a.name for a in func._schema.arguments]
        for i in w:
            a = args[i] if i < len(args) else kwargs.get(names[i])
            for t in (a if isinstance(a, (list, tuple)) else (a,)):  # _foreach_add_ writes lists
                if not isinstance(t, torch.Tensor):
                    continue
                k = storage_key(t)
                if k is None or k not in self.live:
                    continue
                site = site or site_of(user_frame(sys._getframe(2)))
                ev = Event(_op_name(func, i), site, t._version, next(_seq))
                with self.lock:
                    h = self.events.setdefault(k, [])
                    h.append(ev)
                    del h[:-HISTORY]

    def uncounted(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """Runs an op that writes without a version bump under a mode
        (``_uncounted``) and moves the written tensors' versions on, as they
        move without the mode (where the op moved none itself)."""
        names = [a.name for a in func._schema.arguments]
        ts = []
        for i in _written(func):
            a = args[i] if i < len(args) else kwargs.get(names[i])
            ts += [t for t in (a if isinstance(a, (list, tuple)) else (a,))
                   if isinstance(t, torch.Tensor)]
        before = [t._version for t in ts]
        out = func(*args, **kwargs)
        bump([t for t, v in zip(ts, before) if t._version == v])
        return out

    def since(self, r: Record) -> Tuple[List[Event], int]:
        """The remembered in-place events on r's storage after its save, and
        how many the history had forgotten (version moves not listed)."""
        evs = [e for e in self.events.get(r.key, []) if e.seq > r.seq]
        moved = r.tensor._version - r.version
        return evs, max(0, moved - len(evs))

    # -- the nodes ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Finds the nodes the last ops created (from their outputs' grad_fn)
        and, breadth first, the nodes behind them not known yet."""
        pend, self.pending = self.pending, []
        for ref, site in pend:
            t = ref()
            if t is not None and t.grad_fn is not None:
                self.discover(t.grad_fn, site)

    def discover(self, top: Any, site: Optional[Site] = None) -> None:
        """Learns ``top`` (made by the op called at ``site``) and the nodes
        behind it not known yet."""
        busy, TLS.busy = TLS.busy, True
        try:
            todo, learned = [(top, site)], []
            while todo:
                n, at = todo.pop()
                md = n.metadata
                if self.key in md:
                    continue
                md[self.key] = at  # the line of the op that made it, for reports
                if is_accumulate(n):
                    continue
                self.learn(n, at)
                learned.append(n)
                todo.extend((c, None) for c, _ in children(n))
            for tr in self.trackers:
                for n in learned:
                    tr.link(n)
        finally:
            TLS.busy = busy

    def learn(self, n: Any, site: Optional[Site] = None) -> None:
        """Tells the records of n's saves their node and slot; hands the node
        (and the line of the op that made it, when known) to the trackers."""
        saved = saved_of(n)
        name = node_name(n)
        for s in saved:
            r = s.record
            if r is not None and r.node is None:
                r.node = name
                r.slot = f"saved_tensors[{s.slot}]" if s.slot.isdigit() else s.slot
        for tr in self.trackers:
            tr.learn(n, name, saved, site=site)

    # -- activation --------------------------------------------------------------------------

    def enter(self) -> None:
        self._hooks.__enter__()
        self._mode.__enter__()

    def exit(self) -> None:
        self.flush()
        self._mode.__exit__(None, None, None)
        self._hooks.__exit__(None, None, None)


_local = threading.local()


def acquire() -> Recorder:
    """This thread's recorder, started if none is active."""
    rec = getattr(_local, "rec", None)
    if rec is None:
        rec = _local.rec = Recorder()
        _local.users = 0
        rec.enter()
    _local.users += 1
    return rec


def release(rec: Recorder) -> None:
    """Stops this thread's recorder when its last user is done."""
    _local.users -= 1
    if _local.users == 0:
        rec.exit()
        _local.rec = None
