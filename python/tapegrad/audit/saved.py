"""Memory saved for backward, by op and by line, and what of it a zero
gradient made useless: an entropy kept differentiable at coefficient 0 saves
its (N, V) activations for a backward that sends zeros through them.

``saved_report(loss)`` reads one graph (before backward) and watches its
nodes through backward; ``track_saved()`` does the same for every graph
built while it is active (the lines come from the recorder's saved-tensor
hooks, which ``saved_report`` also uses when one was active). PyTorch has no
equivalent: ``torch.cuda.memory_snapshot`` says who allocated a block, not
that backward never needed it.
"""
from __future__ import annotations

import linecache
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from . import _record
from ._graph import children, is_accumulate, node_name, saved_of
from ._record import NodeInfo, recorded_site, zero_hook
from ._util import (Internal, Site, fmt_bytes, is_library_file, storage_bytes, storage_key,
                    tensor_desc)

FIX = ("fix: compute what only feeds a zero coefficient under torch.no_grad() (or from "
       ".detach()ed inputs); for an entropy next to a log-prob, "
       "tapegrad.torch.logprob_entropy(..., entropy_grad=False)")

_LATE = 1 << 62  # order of a save no recorder saw: after every recorded one


class _Nodes(Internal):
    """NodeInfos of some graph nodes, their edges, and the hooks that tell
    whether each got a gradient other than zero."""

    def __init__(self) -> None:
        self.infos: List[NodeInfo] = []
        self.key = f"tapegrad.saved.{next(_record.SERIAL)}"

    def learn(self, n: Any, name: str, saved: Sequence[Any], order: int = 0,
              site: Optional[Any] = None) -> int:
        """A NodeInfo for n (once), its saves, and a hook watching its gradient;
        its line: its records', else ``site`` or what a recorder noted (the
        op's), else anomaly mode's."""
        md = n.metadata
        i = md.get(self.key)
        if i is not None:
            return i
        rec_site = next((s.record.site for s in saved if s.record is not None), None)
        info = NodeInfo(name, rec_site or site or recorded_site(md) or _anomaly_site(md))
        for s in saved:
            r = s.record
            ident = r.ident if r is not None else (storage_key(s.tensor), 0)
            seq = r.seq if r is not None else _LATE + order
            info.saves.append((s.slot, tensor_desc(s.tensor), ident if ident[0] else None,
                               storage_bytes(s.tensor), seq))
        md[self.key] = i = len(self.infos)
        self.infos.append(info)
        n.register_hook(zero_hook(info))
        return i

    def link(self, n: Any) -> None:
        """Records n's inputs among the known nodes."""
        i = n.metadata.get(self.key)
        if i is None:
            return
        for c, _ in children(n):
            if not is_accumulate(c):
                j = c.metadata.get(self.key)
                if j is not None and j not in self.infos[i].inputs:
                    self.infos[i].inputs.append(j)

    def report(self, title: str) -> "SavedReport":
        return SavedReport(self.infos, title)


def _anomaly_site(md: dict) -> Optional[Site]:
    """The line anomaly mode (``torch.autograd.set_detect_anomaly(True)``)
    recorded for a node in its ``traceback_``: the innermost frame of the
    program's own code."""
    tb = md.get("traceback_")
    if not tb:
        return None
    text = "".join(tb) if isinstance(tb, (list, tuple)) else str(tb)
    for ln in reversed(text.splitlines()):
        m = re.match(r'\s*File "(.+)", line (\d+)', ln)
        if m and not is_library_file(m.group(1)):
            return Site(m.group(1), int(m.group(2)))
    return None


class SavedReport(Internal):
    """The bytes saved for backward by some nodes, each storage counted once
    (for the first node that saved it): per op (``ops``), per line of the
    program (``lines``), in all (``total_bytes``); after backward, the
    subgraphs whose incoming gradient was zero everywhere (``zero``: dicts
    with ``chain``, ``bytes``, ``savers``, ``lines``) and the bytes saved only
    by them (``zero_grad_bytes``). Read it after backward for the second
    half: the figures are computed when read. PyTorch has no equivalent."""

    def __init__(self, infos: List[NodeInfo], title: str) -> None:
        self._infos = infos
        self.title = title

    # -- the figures -----------------------------------------------------------------------

    def _owner(self) -> Dict[Any, Tuple[int, int]]:
        """storage key -> (index of the node that saved it first, bytes)."""
        own: Dict[Any, Tuple[int, int, int]] = {}
        for i, info in enumerate(self._infos):
            for _, _, k, b, seq in info.saves:
                if k is not None and (k not in own or seq < own[k][2]):
                    own[k] = (i, b, seq)
        return {k: (i, b) for k, (i, b, _) in own.items()}

    @property
    def total_bytes(self) -> int:
        return sum(b for _, b in self._owner().values())

    @property
    def ops(self) -> List[dict]:
        rows: Dict[str, dict] = {}
        own = self._owner()
        for i, info in enumerate(self._infos):
            r = rows.setdefault(info.name, {"op": info.name, "nodes": 0, "bytes": 0,
                                            "lines": []})
            r["nodes"] += 1 if info.saves else 0
            site = str(info.site) if info.site else None
            if site and site not in r["lines"] and info.saves:
                r["lines"].append(site)
        for k, (i, b) in own.items():
            rows[self._infos[i].name]["bytes"] += b
        return sorted((r for r in rows.values() if r["nodes"]), key=lambda r: -r["bytes"])

    @property
    def lines(self) -> List[dict]:
        rows: Dict[str, dict] = {}
        own = self._owner()
        for info in self._infos:
            if info.saves:
                site = str(info.site) if info.site else "?"
                r = rows.setdefault(site, {"site": site, "bytes": 0, "ops": [],
                                           "source": _source(site)})
                if info.name not in r["ops"]:
                    r["ops"].append(info.name)
        for k, (i, b) in own.items():
            site = self._infos[i].site
            rows[str(site) if site else "?"]["bytes"] += b
        return sorted(rows.values(), key=lambda r: -r["bytes"])

    @property
    def backward_ran(self) -> bool:
        return any(info.runs for info in self._infos)

    @property
    def zero(self) -> List[dict]:
        """The subgraphs backward sent only zeros into, heaviest first."""
        zero = {i for i, info in enumerate(self._infos) if info.runs and not info.nonzero}
        if not zero:
            return []
        saved_by_other = {k for i, info in enumerate(self._infos) if i not in zero
                          for _, _, k, _, _ in info.saves}
        out = []
        for comp in _components(zero, self._infos):
            keys: Dict[Any, int] = {}
            savers, sites, weight = [], [], {}
            for i in comp:
                info = self._infos[i]
                for _, _, k, b, _ in info.saves:
                    if k is not None and k not in saved_by_other:
                        keys[k] = b
                        weight[i] = weight.get(i, 0) + b
                if info.saves and info.name not in savers:
                    savers.append(info.name)
                if info.saves and info.site and str(info.site) not in sites:
                    sites.append(str(info.site))
            out.append({"chain": _chain(comp, self._infos, weight), "bytes": sum(keys.values()),
                        "savers": savers, "lines": sites, "nodes": len(comp)})
        return sorted(out, key=lambda z: -z["bytes"])

    @property
    def zero_grad_bytes(self) -> int:
        return sum(z["bytes"] for z in self.zero)

    # -- for people -----------------------------------------------------------------------

    def text(self) -> str:
        ops, lines = self.ops, self.lines
        nsav = sum(1 for i in self._infos if i.saves)
        out = [f"saved for backward{self.title}: {fmt_bytes(self.total_bytes)} in "
               f"{len(self._owner())} storages, by {nsav} of {len(self._infos)} nodes"]
        w = max([len(r["op"]) for r in ops] + [2])
        out.append(f"  {'op':{w}}  {'nodes':>5}  {'saved':>10}  lines")
        for r in ops:
            out.append(f"  {r['op']:{w}}  {r['nodes']:5}  {fmt_bytes(r['bytes']):>10}  "
                       f"{', '.join(r['lines']) or '?'}")
        out.append("  by line:")
        for r in lines:
            src = f"  {r['source']}" if r["source"] else ""
            out.append(f"  {r['site']}  {fmt_bytes(r['bytes'])}  ({', '.join(r['ops'])}){src}")
        if any(r["site"] == "?" for r in lines):
            out.append("  (? : no line known: build the graph under tapegrad.torch.track_saved()"
                       " or inplace_guard() to record them)")
        out += self._zero_text()
        return "\n".join(out)

    def _zero_text(self) -> List[str]:
        if not self.backward_ran:
            return ["gradients: backward has not run through these nodes yet (read the report "
                    "again after it)"]
        zero = self.zero
        if not zero:
            return ["gradients: every node got a gradient other than zero"]
        out = [f"gradient zero everywhere in {len(zero)} subgraph{'s' if len(zero) > 1 else ''},"
               f" holding {fmt_bytes(self.zero_grad_bytes)} saved for nothing:"]
        for z in zero:
            out.append(f"  {' -> '.join(z['chain'])}: {fmt_bytes(z['bytes'])} saved by "
                       f"{', '.join(z['savers']) or 'no node'}"
                       + (f" (created at {', '.join(z['lines'])})" if z["lines"] else ""))
        out.append("  " + FIX)
        return out

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        import html
        return f"<pre>{html.escape(self.text())}</pre>"


def _source(site: str) -> str:
    if site == "?" or ":" not in site:
        return ""
    f, _, ln = site.rpartition(":")
    try:
        return linecache.getline(f, int(ln)).strip()
    except ValueError:
        return ""


def _components(nodes: set, infos: List[NodeInfo]) -> List[List[int]]:
    """Connected pieces of ``nodes`` along input edges."""
    adj: Dict[int, set] = {i: set() for i in nodes}
    for i in nodes:
        for j in infos[i].inputs:
            if j in nodes:
                adj[i].add(j)
                adj[j].add(i)
    seen, out = set(), []
    for i in sorted(nodes):
        if i in seen:
            continue
        comp, todo = [], [i]
        seen.add(i)
        while todo:
            k = todo.pop()
            comp.append(k)
            for j in adj[k]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        out.append(sorted(comp))
    return out


def _chain(comp: List[int], infos: List[NodeInfo], weight: Dict[int, int]) -> List[str]:
    """Node names from the piece's top (no parent inside it) down the inputs
    to the node saving the most for nothing (``weight``), the deepest among equals."""
    inside = set(comp)
    has_parent = {j for i in comp for j in infos[i].inputs if j in inside}
    top = next((i for i in comp if i not in has_parent), comp[0])
    parent: Dict[int, Optional[int]] = {top: None}
    depth, todo = {top: 0}, [top]
    while todo:
        i = todo.pop(0)
        for j in infos[i].inputs:
            if j in inside and j not in parent:
                parent[j], depth[j] = i, depth[i] + 1
                todo.append(j)
    best = max(parent, key=lambda i: (weight.get(i, 0), depth[i]))
    path: List[str] = []
    k: Optional[int] = best
    while k is not None:
        path.append(infos[k].name)
        k = parent[k]
    return path[::-1]


def _forward_order(top: Any) -> List[Any]:
    """The interior nodes behind ``top`` in the order the forward made them:
    by PyTorch's sequence number where nodes have one (2.x), else inputs
    before the nodes using them (a topological order)."""
    seen, order, stack = {id(top)}, [], [(top, iter(list(children(top))))]
    while stack:
        n, it = stack[-1]
        c = next(it, None)
        if c is None:
            stack.pop()
            if not is_accumulate(n):
                order.append(n)
        elif id(c[0]) not in seen:
            seen.add(id(c[0]))
            stack.append((c[0], iter(list(children(c[0])))))
    if order and hasattr(order[0], "_sequence_nr"):
        order.sort(key=lambda n: n._sequence_nr())
    return order


def saved_report(loss: torch.Tensor, name: str = "loss") -> SavedReport:
    """What the graph behind ``loss`` saved for backward, per op and per line
    (each storage once), read now, before backward frees it; the nodes are
    watched through backward, after which the report also names the
    subgraphs whose gradient was zero everywhere (an entropy times a
    coefficient 0), with the bytes they held for nothing and the fix. Lines
    come from ``track_saved()`` or ``inplace_guard()`` when one was active
    while the graph was built (else from anomaly mode's tracebacks, else
    "?"). PyTorch has no equivalent."""
    if loss.grad_fn is None:
        raise ValueError(f"saved_report: {name} has no graph (no grad_fn)")
    nodes = _Nodes()
    order = _forward_order(loss.grad_fn)
    for k, n in enumerate(order):
        nodes.learn(n, node_name(n), saved_of(n), k)
    for n in order:
        nodes.link(n)
    return nodes.report(f" by the graph of `{name}`")


class SavedTracker(_Nodes):
    """``track_saved()``'s context (see there): ``report()`` for the graphs
    built inside it, ``zero_grad_bytes`` for what backward found useless."""

    def __init__(self) -> None:
        super().__init__()
        self.recorder: Optional[_record.Recorder] = None
        self._order = 0
        self.max_zero_grad_bytes = 0  # the pytest fixture's limit

    def learn(self, n: Any, name: str, saved: Sequence[Any], order: int = 0,
              site: Optional[Any] = None) -> int:
        self._order += 1
        return super().learn(n, name, saved, self._order, site)

    def report(self, title: str = " by the graphs built under track_saved()") -> SavedReport:
        if self.recorder is not None:
            self.recorder.flush()
        return SavedReport(self.infos, title)

    @property
    def zero_grad_bytes(self) -> int:
        return self.report().zero_grad_bytes

    def __enter__(self) -> "SavedTracker":
        self.recorder = _record.acquire()
        self.recorder.trackers.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.recorder.flush()
        self.recorder.trackers.remove(self)
        _record.release(self.recorder)
        self.recorder = None


def track_saved() -> SavedTracker:
    """A context recording every tensor saved for backward while it is active
    (the op, the line, the bytes) and watching the saving nodes through
    backward: ``t.report()`` is a SavedReport of all of them,
    ``t.zero_grad_bytes`` the bytes saved only by nodes whose gradient was
    zero everywhere. Costs a dispatch mode and a hook per node (a diagnostic,
    not for every step). PyTorch has no equivalent."""
    return SavedTracker()
