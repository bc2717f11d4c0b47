"""Diagnostics for PyTorch's own autograd graphs, re-exported by
``tapegrad.torch``: graphs kept alive and who keeps them (``leak_check``,
``watch_steps``), the in-place op that broke a saved tensor
(``inplace_guard``), and memory saved for a gradient that was zero
(``saved_report``, ``track_saved``). Importing this installs nothing: every
tool is off until asked for."""
from .inplace import InplaceGuard, inplace_guard
from .saved import SavedReport, SavedTracker, saved_report, track_saved
from .leaks import LeakReport, StepWatcher, leak_check, step_mark, watch_steps

__all__ = ["InplaceGuard", "inplace_guard", "LeakReport", "StepWatcher", "leak_check", "step_mark", "watch_steps", "SavedReport", "SavedTracker", "saved_report",
           "track_saved"]
