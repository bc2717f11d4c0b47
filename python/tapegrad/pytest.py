"""tapegrad's pytest plugin: a test fails when its training step leaves a
PyTorch graph alive, edits a tensor saved for backward in place, or saves
more than a given number of bytes for a gradient that was zero. Load it with
``pytest -p tapegrad.pytest`` (or ``pytest_plugins = ["tapegrad.pytest"]`` in
a conftest.py); it changes nothing until a test asks.

Markers (the check wraps the test function's call):

- ``@pytest.mark.tapegrad_no_graph_leak``: the test runs under
  ``tapegrad.torch.watch_steps()``; it fails when a ``step_mark()`` inside
  found a graph that outlived a step, or when a graph the test made is still
  alive after it returned (kept by a global, a fixture, a class attribute).
- ``@pytest.mark.tapegrad_inplace_guard``: the test runs under
  ``inplace_guard()``: a backward meeting a saved tensor modified in place
  fails with the saving op and each in-place op named, with their lines.
- ``@pytest.mark.tapegrad_max_zero_grad_bytes(n)``: the test runs under
  ``track_saved()`` and fails when more than ``n`` bytes were saved by nodes
  whose gradient was zero everywhere.

Fixtures, for the same checks from inside the test: ``tapegrad_leaks`` (a
StepWatcher: call ``.step()`` at the end of each step), ``tapegrad_inplace``
(an active guard) and ``tapegrad_saved`` (an active SavedTracker; its
``max_zero_grad_bytes`` attribute is the limit, 0 unless the marker gives
one). PyTorch's own test tools have no equivalent.
"""
from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, Iterator, List, Optional

import pytest

MARKERS = {
    "tapegrad_no_graph_leak": "fail when a step of the test leaves a PyTorch graph alive",
    "tapegrad_inplace_guard": "name the in-place op that broke a saved tensor (inplace_guard)",
    "tapegrad_max_zero_grad_bytes(n)": "fail when more than n bytes are saved for a gradient "
                                       "that is zero everywhere",
}


def pytest_configure(config: Any) -> None:
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")


class _Checks:
    """The checks one test asked for (markers and fixtures), entered around
    its call; ``problems()`` after it: the reports of what failed."""

    def __init__(self, item: Any) -> None:
        self.item = item
        self.watcher: Any = None
        self.guard: Any = None
        self.tracker: Any = None
        self.limit: Optional[int] = None

    def enter(self, frame: Any) -> None:
        item = self.item
        if item.get_closest_marker("tapegrad_no_graph_leak"):
            from . import torch as tt
            self.watcher = tt.watch_steps().__enter__()
            self.watcher.start(frame)
        if item.get_closest_marker("tapegrad_inplace_guard"):
            from . import torch as tt
            self.guard = tt.inplace_guard().__enter__()
        m = item.get_closest_marker("tapegrad_max_zero_grad_bytes")
        if m is not None and "tapegrad_saved" not in item.fixturenames:
            from . import torch as tt
            self.limit = int(m.args[0]) if m.args else int(m.kwargs.get("n", 0))
            self.tracker = tt.track_saved().__enter__()

    def exit(self, frame: Any) -> List[str]:
        out: List[str] = []
        if self.tracker is not None:
            self.tracker.__exit__(None, None, None)
            out += _zero_problem(self.tracker, self.limit)
        if self.guard is not None:
            self.guard.__exit__(None, None, None)
        if self.watcher is not None:
            out += _leak_problems(self.watcher, frame, finish=True)
            self.watcher.__exit__(None, None, None)
        funcargs = getattr(self.item, "funcargs", {})
        w = funcargs.get("tapegrad_leaks")
        if w is not None:
            out += _leak_problems(w, frame, finish=False)
        t = funcargs.get("tapegrad_saved")
        if t is not None:
            out += _zero_problem(t, t.max_zero_grad_bytes)
        return out


def _leak_problems(w: Any, frame: Any, finish: bool) -> List[str]:
    out = [f"a step left a PyTorch graph alive (tapegrad):\n{r.text()}" for r in w.reports[-1:]]
    if finish and not out:
        r = w.finish(frame)
        if r:
            out.append(f"a PyTorch graph made by the test is still alive after it (tapegrad):"
                       f"\n{r.text()}")
    return out


def _zero_problem(tracker: Any, limit: Optional[int]) -> List[str]:
    rep = tracker.report()
    n = rep.zero_grad_bytes
    if n > (limit or 0):
        return [f"{n} bytes saved for backward for a gradient that was zero everywhere "
                f"(limit {limit or 0}) (tapegrad):\n{rep.text()}"]
    return []


_FIXTURES = ("tapegrad_leaks", "tapegrad_saved")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    """Runs the test function inside its checks: the function pytest calls is
    wrapped for the call (so that a failed check is the test's failure, and
    every other plugin's wrapper still runs)."""
    wanted = any(item.get_closest_marker(m.split("(")[0]) for m in MARKERS) or \
        any(f in getattr(item, "fixturenames", ()) for f in _FIXTURES)
    orig = getattr(item, "obj", None)
    if not wanted or orig is None or inspect.iscoroutinefunction(orig):
        yield
        return

    @functools.wraps(orig)
    def checked(*args: Any, **kwargs: Any) -> Any:
        checks = _Checks(item)
        frame = sys._getframe()
        checks.enter(frame)
        try:
            result = orig(*args, **kwargs)
        except BaseException:
            checks.exit(frame)
            raise
        problems = checks.exit(frame)
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)
        return result

    item.obj = checked
    try:
        yield
    finally:
        item.obj = orig


@pytest.fixture
def tapegrad_leaks() -> Iterator[Any]:
    """A ``watch_steps()`` StepWatcher, active for the test: call ``.step()``
    after each step; the test fails when one found a graph that outlived a
    step."""
    from . import torch as tt
    with tt.watch_steps() as w:
        w.start(sys._getframe())
        yield w


@pytest.fixture
def tapegrad_inplace() -> Iterator[Any]:
    """An active ``inplace_guard()``."""
    from . import torch as tt
    with tt.inplace_guard() as g:
        yield g


@pytest.fixture
def tapegrad_saved(request: Any) -> Iterator[Any]:
    """An active ``track_saved()`` SavedTracker; the test fails when more than
    ``max_zero_grad_bytes`` (the marker's n, else 0) were saved for a
    gradient that was zero everywhere."""
    from . import torch as tt
    m = request.node.get_closest_marker("tapegrad_max_zero_grad_bytes")
    with tt.track_saved() as t:
        t.max_zero_grad_bytes = int(m.args[0]) if m is not None and m.args else 0
        yield t
