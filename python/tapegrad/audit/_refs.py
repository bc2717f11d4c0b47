"""Who holds a tensor: a breadth-first search from the references a program
holds by name (the locals of every thread's running frames, the globals of
its modules) through containers, object attributes, closures and suspended
generators, writing each reference as the expression that reaches it
(``losses[2]``, ``self.metrics['loss']``, ``log_loss.<closure kept>[0]``).

PyTorch has no equivalent: ``gc.get_referrers`` gives the holding objects
without their names and cannot see the locals of a running frame.
"""
from __future__ import annotations

import gc
import os
import sys
import sysconfig
import types
from collections import deque
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import torch

from ._graph import is_node
from ._util import dtype_name, is_library_file, is_tensor, shape_str, short_path

_SITE_DIRS = tuple({os.path.abspath(p) + os.sep for p in (
    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
    *(p for p in sys.path if p.rstrip(os.sep).endswith(("site-packages", "dist-packages"))))})

_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None), range, slice,
          types.ModuleType, types.BuiltinFunctionType, types.CodeType, types.FrameType,
          torch.dtype, torch.device, torch.Size, memoryview)
_WEAK = (type(__import__("weakref").ref(type)),)
_GENERATORS = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_CO_OPTIMIZED = 0x0001


_USER: Dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """Code of the program itself: not PyTorch, tapegrad, the standard library
    or an installed package (pytest's frames, for one, are not searched)."""
    r = _USER.get(filename)
    if r is None:
        r = _USER[filename] = not is_library_file(filename) and \
            not os.path.abspath(filename).startswith(_SITE_DIRS)
    return r


class Ref:
    """One reference to a tensor: ``expr`` reaches it from ``scope``'s name
    (``losses[2]`` from "local of run() at story.py:30"); ``container`` is the
    expression of the object holding the reference (``losses``; None for a
    name of the scope itself) and ``kind`` that object's type name."""

    __slots__ = ("expr", "scope", "container", "kind")

    def __init__(self, expr: str, scope: str, container: Optional[str], kind: str) -> None:
        self.expr, self.scope, self.container, self.kind = expr, scope, container, kind

    def holder(self) -> str:
        """``the list `losses` (local of run() at story.py:30)``."""
        if self.container is None:
            return f"`{self.expr}` ({self.scope})"
        return f"the {self.kind} `{self.container}` ({self.scope})"


def frame_locals(f: Any) -> List[Tuple[str, Any]]:
    """The (name, value) pairs of a frame's locals. Before Python 3.13 reading
    ``f_locals`` of a function's frame leaves a snapshot dict on the frame,
    which would keep every value alive after the function dropped it: the
    snapshot is emptied again (the frame's own variables are untouched)."""
    d = f.f_locals
    items = list(d.items())
    if sys.version_info < (3, 13) and f.f_code.co_flags & _CO_OPTIMIZED and d is not f.f_globals:
        d.clear()
    return items


def _key_expr(k: Any) -> str:
    if isinstance(k, (str, int, float, bool)) or k is None:
        return repr(k)
    if is_tensor(k):
        return f"<{dtype_name(k.dtype)} {shape_str(k.shape)}>"
    if isinstance(k, tuple) and all(isinstance(x, (str, int)) for x in k):
        return repr(k)
    return f"<{type(k).__name__}>"


_modules_seen: List[Any] = [-1, []]  # len(sys.modules) when listed, [(name, globals)]


def _user_modules() -> List[Tuple[str, dict]]:
    """(name, globals) of the modules loaded from the program's own files,
    listed again when the number of loaded modules changes."""
    if _modules_seen[0] != len(sys.modules):
        got = []
        for name, m in list(sys.modules.items()):
            d = getattr(m, "__dict__", None)  # not getattr(m, "__file__"): some modules warn
            fn = d.get("__file__") if isinstance(d, dict) else None
            if fn and is_user_file(fn):
                got.append((name, d))
        _modules_seen[:] = [len(sys.modules), got]
    return _modules_seen[1]


class Search:
    """One search. ``tensors``: id -> (tensor, [Ref]) for every tensor found
    (every reference to it, in the order found); ``nodes``: id -> (node,
    [Ref]) for graph nodes held directly (``fn = loss.grad_fn``);
    ``truncated``: the object budget ran out."""

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self.tensors: Dict[int, Tuple[torch.Tensor, List[Ref]]] = {}
        self.nodes: Dict[int, Tuple[Any, List[Ref]]] = {}
        self.seen: Set[int] = set()
        self.truncated = False
        self._queue: deque = deque()
        self._keep: List[Any] = []  # what the ids in `seen` stand for, alive until the end

    # -- the roots ---------------------------------------------------------------------------

    def run(self, frame: Any) -> "Search":
        """Searches from the user's frames of every thread (``frame``: where
        this thread's stack is read from) and the globals of the program's
        modules (``__main__``, those of the frames, and every module loaded
        from the program's own files)."""
        modules: Dict[str, Any] = {}
        for f in self._stacks(frame):
            code = f.f_code
            mod = f.f_globals.get("__name__", "?")
            modules.setdefault(mod, f.f_globals)
            if not code.co_flags & _CO_OPTIMIZED and f.f_locals is f.f_globals:
                continue  # a module's top level: its globals, below
            scope = f"local of {code.co_name}() at {short_path(code.co_filename)}:" \
                    f"{code.co_firstlineno}"
            for name, v in frame_locals(f):
                self._offer(v, name, scope, None, "frame")
        main = sys.modules.get("__main__")
        if main is not None:
            modules.setdefault("__main__", vars(main))
        for name, g in _user_modules():
            modules.setdefault(name, g)
        for mod, g in modules.items():
            scope = f"global of module {mod}"
            for name, v in list(g.items()):
                if not (name.startswith("__") and name.endswith("__")):
                    self._offer(v, name, scope, None, "module")
        self._drain()
        return self

    def _stacks(self, frame: Any) -> Iterator[Any]:
        stacks = [frame]
        me = sys._getframe()
        for tid, top in sys._current_frames().items():
            if not self._on_stack(top, me):
                stacks.append(top)
        for top in stacks:
            f = top
            while f is not None:
                if is_user_file(f.f_code.co_filename):
                    yield f
                f = f.f_back

    @staticmethod
    def _on_stack(top: Any, me: Any) -> bool:
        f = top
        while f is not None:
            if f is me:
                return True
            f = f.f_back
        return False

    # -- the search --------------------------------------------------------------------------

    def _offer(self, v: Any, expr: str, scope: str, container: Optional[str], kind: str) -> None:
        if is_tensor(v):
            ent = self.tensors.get(id(v))
            if ent is None:
                self.tensors[id(v)] = ent = (v, [])
            ent[1].append(Ref(expr, scope, container, kind))
            return
        if isinstance(v, _ATOMS) or isinstance(v, _WEAK) or id(v) in self.seen:
            return
        if is_node(v):
            ent = self.nodes.get(id(v))
            if ent is None:
                self.nodes[id(v)] = ent = (v, [])
            ent[1].append(Ref(expr, scope, container, kind))
            return  # what a node holds is the graph's, not the program's
        if getattr(type(v), "_tapegrad_internal", False):
            return
        if len(self.seen) >= self.limit:
            self.truncated = True
            return
        self.seen.add(id(v))
        self._keep.append(v)
        self._queue.append((v, expr, scope))

    def _drain(self) -> None:
        q = self._queue
        while q:
            v, expr, scope = q.popleft()
            kind = type(v).__name__
            for sub, sub_expr in self._members(v, expr):
                self._offer(sub, sub_expr, scope, expr, kind)

    def _members(self, v: Any, e: str) -> Iterator[Tuple[Any, str]]:
        """(value, expression) for what ``v`` holds."""
        if isinstance(v, dict):
            for k, x in list(dict.items(v)):
                yield x, f"{e}[{_key_expr(k)}]"
        elif isinstance(v, (list, tuple, deque)):
            for i, x in enumerate(list(v)):
                yield x, f"{e}[{i}]"
        elif isinstance(v, (set, frozenset)):
            for x in list(v):
                yield x, f"{e}.<element>"
        elif isinstance(v, torch.nn.Module):
            yield from self._module(v, e)
        elif isinstance(v, types.FunctionType):
            yield from self._function(v, e)
        elif isinstance(v, types.MethodType):
            yield v.__self__, f"{e}.__self__"
            yield v.__func__, f"{e}.__func__"
        elif isinstance(v, _GENERATORS):
            f = getattr(v, "gi_frame", None) or getattr(v, "cr_frame", None) or \
                getattr(v, "ag_frame", None)
            if f is not None:
                for name, x in frame_locals(f):
                    yield x, f"{e}.<local {name}>"
        elif isinstance(v, type):
            mod = getattr(v, "__module__", None) or ""
            fn = getattr(sys.modules.get(mod), "__file__", None)
            if mod == "__main__" or (fn and is_user_file(fn)):
                for k, x in list(vars(v).items()):
                    if not (k.startswith("__") and k.endswith("__")):
                        yield x, f"{e}.{k}"
        else:
            yield from self._attributes(v, e)

    @staticmethod
    def _module(m: torch.nn.Module, e: str) -> Iterator[Tuple[Any, str]]:
        d = vars(m)
        for group in ("_parameters", "_buffers", "_modules"):
            for k, x in list(d.get(group, {}).items()):
                yield x, f"{e}.{k}"
        for k, x in list(d.items()):
            if k not in ("_parameters", "_buffers", "_modules"):
                yield x, f"{e}.{k}"

    @staticmethod
    def _function(fn: types.FunctionType, e: str) -> Iterator[Tuple[Any, str]]:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                yield cell.cell_contents, f"{e}.<closure {name}>"
            except ValueError:  # an empty cell
                pass
        for i, x in enumerate(fn.__defaults__ or ()):
            yield x, f"{e}.__defaults__[{i}]"
        for k, x in (fn.__kwdefaults__ or {}).items():
            yield x, f"{e}.__kwdefaults__[{k!r}]"

    @staticmethod
    def _attributes(v: Any, e: str) -> Iterator[Tuple[Any, str]]:
        try:
            d = object.__getattribute__(v, "__dict__")
        except (AttributeError, TypeError):
            d = None
        if isinstance(d, dict):
            for k, x in list(d.items()):
                yield x, f"{e}.{k}"
        for cls in type(v).__mro__:
            for k in getattr(cls, "__dict__", {}).get("__slots__", ()) or ():
                if isinstance(k, str) and k not in ("__dict__", "__weakref__"):
                    try:
                        yield object.__getattribute__(v, k), f"{e}.{k}"
                    except AttributeError:
                        pass


def unreached_holders(found: Set[int], limit: int = 50) -> List[Tuple[torch.Tensor, str]]:
    """Tensors with a graph that Python objects hold but that the search did
    not reach (held by an object no frame or module reaches, or in a
    reference cycle): (tensor, description of its holder), at most ``limit``.
    Tensors only PyTorch's graphs hold (a saved activation) are not listed:
    their graph is. Garbage (unreachable reference cycles) is collected first.
    One pass over the collector's objects: slow (tens of ms)."""
    gc.collect()
    cands = [o for o in gc.get_objects()
             if is_tensor(o) and id(o) not in found and o.grad_fn is not None]
    if not cands:
        return []
    ids = {id(c): c for c in cands}
    held: Dict[int, List[Any]] = {}
    mine = {id(cands), id(ids), id(held)}
    for r in gc.get_referrers(*cands):
        if id(r) in mine or isinstance(r, types.FrameType) or is_node(r) or \
                getattr(type(r), "_tapegrad_internal", False):
            continue
        for x in gc.get_referents(r):
            if id(x) in ids:
                held.setdefault(id(x), []).append(r)
    out = []
    for i, rs in held.items():
        r = rs[0]
        what = type(r).__name__
        if isinstance(r, dict) and any(getattr(o, "__dict__", None) is r
                                       for o in gc.get_referrers(r)[:8]):
            owner = next(o for o in gc.get_referrers(r)[:8] if getattr(o, "__dict__", None) is r)
            what = f"an attribute of a {type(owner).__name__} object"
        else:
            what = f"a {what}"
        out.append((ids[i], f"{what} that no frame or module of the program reaches "
                            f"(at 0x{id(r):x})"))
        if len(out) >= limit:
            break
    return out
