"""Retained PyTorch graphs: which live Python reference keeps each autograd
graph alive, the path from it to what the graph holds, the bytes kept, and
their growth step after step. The report has the shape of tapegrad's own
leak checker (``tapegrad.leak_check``): text, DOT, ``.entries``, a notebook
display.

PyTorch has no equivalent: its memory snapshots say who allocated a block,
not who keeps it; the cycle collector finds unreachable garbage only (a loss
kept in a live list is not garbage); torchviz draws a graph without bytes or
holder.
"""
from __future__ import annotations

import html
import itertools
import json
import sys
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

import torch

from . import _dot
from ._graph import children, is_accumulate, leaf_of, node_name, saved_of
from ._refs import Ref, Search, unreached_holders
from ._util import Internal, fmt_bytes, storage_bytes, storage_key, tensor_desc

FIX = ("fix: keep a detached copy for logging (loss.detach(), or loss.item() for a number), "
       "or drop the reference once the step is done")


class _Root:
    """A reported reference and what its graph keeps."""

    def __init__(self, obj: Any, refs: List[Ref]) -> None:
        self.obj = obj                 # the tensor (or the node held directly)
        self.refs = refs
        self.ref = _preferred(refs)
        self.nodes: List[Any] = []     # interior nodes, breadth first from the root
        self.parent: Dict[int, Any] = {}
        self.leaves: List[Any] = []    # AccumulateGrad nodes
        self.first_step: Optional[int] = None
        self.storages: Dict[Any, int] = {}   # key -> bytes, what it keeps
        self.saved_keys: Set[Any] = set()
        self.nodes_with_saved = 0
        self.target: Any = None
        self.target_desc = ""
        self.shared = 0                # of its bytes, those other reported roots keep too

    @property
    def top(self) -> Any:
        return self.obj.grad_fn if torch.is_tensor(self.obj) else self.obj


def _preferred(refs: List[Ref]) -> Ref:
    """The reference a report names: one from a container or an attribute
    (``losses[2]``, ``self.metrics['loss']``) over a bare variable (``loss``),
    which the next step rebinds anyway; the first found among equals."""
    return next((r for r in refs if r.container is not None), refs[0])


class LeakReport(Internal):
    """What ``leak_check()`` or a step of ``watch_steps()`` found: the graphs
    kept alive, each by the reference that holds it. ``bool(report)`` is True
    when one was found. ``entries``: one dict per root (``holder``, the
    expression of the reference; ``scope``, where its first name lives;
    ``container``; ``also``, other references to the same tensor; ``shape``;
    ``path``, the text from the holder to what the graph keeps; ``chain``, the
    node names on it; ``nodes``; ``nodes_with_saved``; ``bytes``;
    ``saved_bytes``; ``shared_bytes``; ``first_step``). ``holders``: one dict
    per holding object (``holder``, ``graphs``, ``bytes``). ``kept_bytes``
    counts every storage once. PyTorch has no equivalent."""

    def __init__(self, roots: List[_Root], step: Optional[int], outlived_nodes: int,
                 kept_bytes: int, growth: float, growth_steps: int, truncated: bool,
                 dot: str, after_test: bool = False, in_frames: Optional[List[str]] = None) -> None:
        self.step = step
        self.after_test = after_test
        self.in_frames: List[str] = in_frames or []
        self.roots = len(roots)
        self.outlived_nodes = outlived_nodes
        self.kept_bytes = kept_bytes
        self.growth = growth
        self.growth_steps = growth_steps
        self.truncated = truncated
        self.entries: List[dict] = [_entry(r) for r in roots]
        self.holders: List[dict] = _holders(roots)
        self.dot = dot
        self._text = _text(self)

    def __bool__(self) -> bool:
        return self.roots > 0

    def text(self) -> str:
        """The report for people, in the C leak checker's shape."""
        return self._text

    def __str__(self) -> str:
        return self._text

    def json(self) -> str:
        """The report as one JSON object (the C report's fields, and holders)."""
        return json.dumps({"step": self.step, "outlived_nodes": self.outlived_nodes,
                           "kept_bytes": self.kept_bytes, "growth_bytes_per_step": self.growth,
                           "growth_steps": self.growth_steps, "roots": self.entries,
                           "holders": self.holders})

    def svg(self) -> str:
        """The graphs drawn: by Graphviz's ``dot`` when installed, else each
        retained path as a row of boxes."""
        return _dot.draw(self.dot, [(e["holder"], e["chain"], e["bytes"]) for e in self.entries])

    def _repr_html_(self) -> str:
        head = ("no graph kept alive" if not self else
                f"{self.outlived_nodes} graph nodes kept alive by {self.roots} roots, "
                f"{fmt_bytes(self.kept_bytes)}")
        pic = self.svg() if self else ""
        return (f"<b>tapegrad leak check (PyTorch graphs): {html.escape(head)}</b>{pic}"
                f"<pre>{html.escape(self._text)}</pre>")


def _entry(r: _Root) -> dict:
    t = r.obj
    chain = _chain(r)
    return {"holder": r.ref.expr, "scope": r.ref.scope, "container": r.ref.container,
            "kind": r.ref.kind, "also": [x.expr for x in r.refs if x is not r.ref],
            "shape": tensor_desc(t) if torch.is_tensor(t) else "graph node",
            "path": _path_text(r, chain), "chain": [c for c, _ in chain],
            "nodes": len(r.nodes), "nodes_with_saved": r.nodes_with_saved,
            "bytes": sum(r.storages.values()),
            "saved_bytes": sum(b for k, b in r.storages.items() if k in r.saved_keys),
            "shared_bytes": r.shared, "first_step": r.first_step}


def _chain(r: _Root) -> List[Tuple[str, str]]:
    """(name, detail) from the root's node to its target."""
    if r.target is None:
        return []
    out, n = [], r.target
    while n is not None:
        out.append(n)
        n = r.parent.get(id(n))
    names = []
    for n in reversed(out):
        if is_accumulate(n):
            names.append(("leaf", r.target_desc if n is r.target else ""))
        else:
            names.append((node_name(n), r.target_desc if n is r.target else ""))
    return names


def _path_text(r: _Root, chain: List[Tuple[str, str]]) -> str:
    what = tensor_desc(r.obj) if torch.is_tensor(r.obj) else "graph node"
    s = f'root "{r.ref.expr}" ({what})'
    for name, detail in chain:
        s += f" -> {name}" + (f" {detail}" if detail else "")
    return s


def _holders(roots: List[_Root]) -> List[dict]:
    groups: Dict[Tuple[Optional[str], str], List[_Root]] = {}
    for r in roots:
        groups.setdefault((r.ref.container, r.ref.scope), []).append(r)
    out = []
    for (cont, scope), rs in groups.items():
        keys: Dict[Any, int] = {}
        for r in rs:
            keys.update(r.storages)
        holder = rs[0].ref.holder() if cont is not None else f"{scope}"
        out.append({"holder": holder, "container": cont, "scope": scope, "graphs": len(rs),
                    "bytes": sum(keys.values()), "roots": [r.ref.expr for r in rs]})
    out.sort(key=lambda h: -h["bytes"])
    return out


def _text(rep: LeakReport) -> str:
    where = f" (step {rep.step})" if rep.step is not None else ""
    lines = []
    if not rep:
        lines.append("no graph node from an earlier step is alive" + where if rep.step is not None
                     else "no autograd graph is kept alive by a reference the program holds")
    else:
        ago = " from earlier steps still" if rep.step is not None else ""
        if rep.after_test:
            ago, where = " made during the watch still", " after it"
        lines.append(f"{rep.outlived_nodes} graph node{'s' if rep.outlived_nodes != 1 else ''}"
                     f"{ago} alive{where}, keeping {fmt_bytes(rep.kept_bytes)}, held by "
                     f"{rep.roots} root{'s' if rep.roots != 1 else ''}:")
        for e in rep.entries:
            lines.append(f"  {e['path']}")
            also = f" (also {', '.join(e['also'])})" if e["also"] else ""
            seen = f"; first seen in step {e['first_step']}" if e["first_step"] is not None else ""
            state = ("saved tensors still live: backward never ran through them"
                     if e["nodes_with_saved"] else
                     "saved tensors already freed: only the node chain and its inputs")
            shared = (f" ({fmt_bytes(e['shared_bytes'])} shared with other roots)"
                      if e["shared_bytes"] else "")
            holder = (f"the {e['kind']} `{e['container']}`" if e["container"] is not None
                      else f"`{e['holder']}`")
            lines.append(f"      held by {holder} ({e['scope']}){also}{seen}; {e['nodes']} "
                         f"node{'s' if e['nodes'] != 1 else ''} ({state}); keeps "
                         f"{fmt_bytes(e['bytes'])}{shared}")
            if e["saved_bytes"]:
                lines.append(f"      of which {fmt_bytes(e['saved_bytes'])} held as saved tensors")
        for h in rep.holders:
            if h["container"] is not None:
                lines.append(f"  {h['holder']} keeps {h['graphs']} graph"
                             f"{'s' if h['graphs'] != 1 else ''}, {fmt_bytes(h['bytes'])}")
        lines.append("  " + FIX)
    if rep.in_frames:
        lines.append(f"(not reported: {len(rep.in_frames)} graph"
                     f"{'s' if len(rep.in_frames) != 1 else ''} only variables of running "
                     f"functions hold, gone when they are rebound or the function returns: "
                     f"{', '.join(rep.in_frames)})")
    if rep.growth_steps:
        lines.append(f"memory kept by graphs grew at each of the last {rep.growth_steps} steps: "
                     f"+{fmt_bytes(rep.growth)} per step")
    if rep.truncated:
        lines.append("(the search for holders stopped at its object limit: pass a larger limit)")
    return "\n".join(lines)


# ---- the scan ------------------------------------------------------------------------------------

def _walk(r: _Root, key: Optional[str], step: Optional[int], lo: int = 0,
          finish: bool = False) -> bool:
    """Walks r's graph breadth first, tagging each interior node with the step
    it is first seen in (under ``key`` in its metadata). True (report it):
    without steps, always; else when a node was first seen in a step from
    ``lo`` to the one before ``step``; with ``finish``, when a node was first
    seen in step ``lo`` or later, or now."""
    top = r.top
    if top is None:
        return False
    seen = {id(top)}
    todo, i, hit = [top], 0, step is None
    while i < len(todo):
        n = todo[i]
        i += 1
        if is_accumulate(n):
            r.leaves.append(n)
        else:
            r.nodes.append(n)
            if key is not None:
                md = n.metadata
                tag = md.get(key)
                if tag is None:
                    md[key] = tag = step
                if tag >= lo and (tag < step or finish):
                    hit = True
                    if tag < step:
                        r.first_step = tag if r.first_step is None else min(r.first_step, tag)
        for c, _ in children(n):
            if id(c) not in seen:
                seen.add(id(c))
                r.parent[id(c)] = n
                todo.append(c)
    return hit


def _add(store: Dict[Any, int], t: Optional[torch.Tensor]) -> Optional[Any]:
    if t is None:
        return None
    k = storage_key(t)
    if k is not None and k not in store:
        store[k] = storage_bytes(t)
    return k


def _held_elsewhere(search: Search, others: List[_Root]) -> Set[Any]:
    """Storages the program holds outside the reported graphs: tensors
    without a graph (parameters, their .grad, optimizer state, data), the
    graphs of this step (their roots and leaves)."""
    keys: Dict[Any, int] = {}
    for t, _ in search.tensors.values():
        if t.grad_fn is None:
            _add(keys, t)
            _add(keys, t.grad)
    for r in others:
        if torch.is_tensor(r.obj):
            _add(keys, r.obj)
        for a in r.leaves:
            _add(keys, leaf_of(a))
    return set(keys)


def _measure(r: _Root, elsewhere: Set[Any], names: Dict[int, str]) -> None:
    """What r keeps: its tensor, the saved tensors of its nodes, the leaves
    only its graph holds (and their .grad), each storage once; the path's
    target: the node saving the most, or the heaviest leaf only it holds."""
    def keep(t: Optional[torch.Tensor]) -> int:
        k = _add(r.storages, t)
        if k is None or k in elsewhere:
            r.storages.pop(k, None)
            return 0
        return r.storages[k]
    if torch.is_tensor(r.obj):
        keep(r.obj)
    best = -1
    for n in r.nodes:
        saved = saved_of(n)
        if saved:
            r.nodes_with_saved += 1
        b = 0
        for s in saved:
            b += keep(s.tensor)
            k = storage_key(s.tensor)
            if k in r.storages:
                r.saved_keys.add(k)
        if saved and b + 1 >= best:
            big = max(saved, key=lambda s: storage_bytes(s.tensor))
            best, r.target = b + 1, n
            r.target_desc = (f"(saved: {big.slot} {tensor_desc(big.tensor)}, "
                             f"{fmt_bytes(b)} in all)")
    for a in r.leaves:
        v = leaf_of(a)
        b = keep(v) + (keep(v.grad) if v is not None else 0)
        if v is not None and b + 1 > best:
            best, r.target = b + 1, a
            name = names.get(id(v))
            g = f", .grad {fmt_bytes(storage_bytes(v.grad))}" if v.grad is not None else ""
            r.target_desc = (f"{'' if name is None else repr(name) + ' '}{tensor_desc(v)} "
                             f"({fmt_bytes(storage_bytes(v))}{g})").strip()
    if r.target is None and r.nodes:
        r.target = r.nodes[-1]


class _Scan(NamedTuple):
    reported: List[_Root]
    nodes: int
    kept: int
    truncated: bool
    dot: str
    in_frames: List[str]  # graphs only running functions' variables hold, not reported


def scan(frame: Any, key: Optional[str] = None, step: Optional[int] = None,
         thorough: bool = True, limit: int = 200_000, lo: int = 0, finish: bool = False,
         frame_locals: bool = True) -> _Scan:
    """The graphs kept alive and what they keep; without ``frame_locals``, a
    graph that only variables of running functions hold is left out (listed
    in ``in_frames``): it goes when they are rebound or the function returns."""
    search = Search(limit).run(frame)
    roots = [_Root(t, refs) for t, refs in search.tensors.values() if t.grad_fn is not None]
    roots += [_Root(n, refs) for n, refs in search.nodes.values() if not is_accumulate(n)]
    if thorough:
        found = set(search.tensors)
        for t, desc in unreached_holders(found):
            roots.append(_Root(t, [Ref("<unreached>", desc, None, "object")]))
    reported, others, in_frames = [], [], []
    for r in roots:
        hit = _walk(r, key, step, lo, finish)
        if hit and not frame_locals and all(x.kind == "frame" for x in r.refs):
            hit = False
            in_frames.append(f"`{r.ref.expr}` ({r.ref.scope})")
        (reported if hit else others).append(r)
    elsewhere = _held_elsewhere(search, others)
    names = {id(t): refs[0].expr for t, refs in search.tensors.values()}
    for r in reported:
        _measure(r, elsewhere, names)
    count: Dict[Any, int] = {}
    for r in reported:
        for k in r.storages:
            count[k] = count.get(k, 0) + 1
    kept: Dict[Any, int] = {}
    for r in reported:
        r.shared = sum(b for k, b in r.storages.items() if count[k] > 1)
        kept.update(r.storages)
    nodes = len({id(n) for r in reported for n in r.nodes})
    reported.sort(key=lambda r: (-sum(r.storages.values()), r.ref.expr))
    dot = _dot.leak_dot(reported, step) if reported else ""
    return _Scan(reported, nodes, sum(kept.values()), search.truncated, dot, sorted(in_frames))


def leak_check(*, thorough: bool = True, frame_locals: bool = False,
               limit: int = 200_000) -> LeakReport:
    """Every PyTorch autograd graph that a live Python reference keeps alive:
    who holds it (a global, a container, an attribute, a closure, a suspended
    generator), the path from it to what the graph keeps, and the bytes (the
    tensors saved for backward, the held tensors' own storages, the leaves
    only the graph holds and their ``.grad``; a storage the program also
    holds otherwise, a parameter say, is not counted). A graph that only
    variables of running functions hold (the ``loss`` of the step under way)
    is listed apart, not reported, unless ``frame_locals``. ``thorough`` also
    finds holders no frame or module reaches (one pass over the garbage
    collector's objects). ``limit``: objects the search looks at, at most.
    PyTorch has no equivalent."""
    sc = scan(sys._getframe(1), None, None, thorough, limit, frame_locals=frame_locals)
    return LeakReport(sc.reported, None, sc.nodes, sc.kept, 0.0, 0, sc.truncated, sc.dot,
                      in_frames=sc.in_frames)


# ---- steps -----------------------------------------------------------------------------------------

_serial = itertools.count()
_active = threading.local()


def _watchers() -> List["StepWatcher"]:
    if not hasattr(_active, "stack"):
        _active.stack = []
    return _active.stack


class StepWatcher(Internal):
    """Watches a loop step by step (``watch_steps()``): ``step()`` ends a step
    and reports the graphs alive at its end that were already alive at the
    end of an earlier one (a loop's ``loss``, rebound every step, holds only
    the latest graph and is never reported; a list it is appended to is).
    ``history``: (step, kept bytes, roots) per step; ``report``: the last
    step's LeakReport; ``reports``: those that found something. PyTorch has
    no equivalent."""

    def __init__(self, thorough: bool = False, limit: int = 200_000) -> None:
        self.key = f"tapegrad.step.{next(_serial)}"
        self.steps = 0
        self.thorough, self.limit = thorough, limit
        self.history: List[Tuple[int, int, int]] = []
        self.report: Optional[LeakReport] = None
        self.reports: List[LeakReport] = []
        self._since = 0

    def step(self, _frame: Any = None) -> LeakReport:
        """Ends the current step; the report of what outlived it."""
        frame = _frame or sys._getframe(1)
        k = self.steps
        sc = scan(frame, self.key, k, self.thorough, self.limit, lo=self._since)
        self.steps += 1
        self.history.append((k, sc.kept, len(sc.reported)))
        growth, n = _growth([b for _, b, _ in self.history])
        self.report = LeakReport(sc.reported, k, sc.nodes, sc.kept, growth, n, sc.truncated,
                                 sc.dot)
        if self.report:
            self.reports.append(self.report)
        return self.report

    def finish(self, _frame: Any = None) -> LeakReport:
        """The graphs made after the first step of this watcher (or after it
        started, when ``start()`` marked it) that are still alive: for the end
        of a test, when its own variables are gone. Also searches objects no
        frame or module reaches (the collector's pass)."""
        frame = _frame or sys._getframe(1)
        k = self.steps
        sc = scan(frame, self.key, k, True, self.limit, lo=self._since, finish=True)
        self.steps += 1
        return LeakReport(sc.reported, k, sc.nodes, sc.kept, 0.0, 0, sc.truncated, sc.dot,
                          after_test=True)

    def start(self, _frame: Any = None) -> None:
        """Marks what is alive now as older than the watch: ``finish()`` does
        not report it."""
        frame = _frame or sys._getframe(1)
        scan(frame, self.key, self.steps, True, self.limit)
        self.steps += 1
        self._since = self.steps

    @property
    def growth(self) -> float:
        """Bytes kept per step over the last run of growing steps (0: none)."""
        return _growth([b for _, b, _ in self.history])[0]

    def __enter__(self) -> "StepWatcher":
        _watchers().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        st = _watchers()
        if self in st:
            st.remove(self)


def _growth(kept: List[int]) -> Tuple[float, int]:
    """As the C checker: at least 3 increases in a row up to the last step,
    averaging 4 KiB or more: (bytes per step, steps)."""
    inc = 0
    for a, b in zip(reversed(kept[:-1]), reversed(kept)):
        if b > a:
            inc += 1
        else:
            break
    if inc < 3:
        return 0.0, 0
    per = (kept[-1] - kept[-1 - inc]) / inc
    return (per, inc) if per >= 4096 else (0.0, 0)


def watch_steps(*, thorough: bool = False, limit: int = 200_000) -> StepWatcher:
    """A StepWatcher to use as a context: ``with watch_steps() as w: for ...:
    ...; w.step()`` (or ``tapegrad.torch.step_mark()`` from inside the loop's
    code). Nothing is hooked: each step searches the program's references and
    walks the graphs they hold. ``thorough`` adds the collector pass of
    ``leak_check``. PyTorch has no equivalent."""
    return StepWatcher(thorough, limit)


def step_mark() -> Optional[LeakReport]:
    """Ends the current step of every ``watch_steps()`` active in this thread;
    the innermost one's report (None when none is active). The C library's
    ``tg_step_mark`` for PyTorch graphs; PyTorch has no equivalent."""
    rep = None
    for w in list(_watchers()):
        rep = w.step(sys._getframe(1))
    return rep
