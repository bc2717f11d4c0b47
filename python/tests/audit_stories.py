"""The three stories in plain PyTorch, as examples/python/torch_*.py tell
them, for the tests of tapegrad.torch's audit: the example scripts loaded as
modules, and the lines of their source the reports must name."""
import importlib.util
import os
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def example(name):
    """examples/python/<name>.py as a module (its main() not run)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def line_of(path, snippet):
    """The number of the one line of ``path`` containing ``snippet``."""
    lines = Path(path).read_text().splitlines()
    hits = [i for i, ln in enumerate(lines, 1)
            if (ln.rstrip().endswith(snippet) if snippet.startswith("# @") else snippet in ln)]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


def site(path, snippet):
    """``file:line`` as the reports write it: the file relative to the working
    directory when it lies under it. A snippet ``@name`` is the line ending in
    the comment ``# @name`` (in a test that also names the line)."""
    if snippet.startswith("@"):
        snippet = "# " + snippet
    p, cwd = str(path), os.getcwd()
    if p.startswith(cwd + os.sep):
        p = os.path.relpath(p, cwd)
    return f"{p}:{line_of(path, snippet)}"


def storage_bytes(t):
    """The bytes of the storage under a tensor, counted by PyTorch."""
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.nbytes()
