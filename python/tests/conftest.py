"""Shared by every test of the package: each test gives back every library
object it made (tensors, storages, graph nodes), checked through
``tapegrad.live_counts()`` after a garbage collection."""
import gc

import pytest

import tapegrad as tg

# tapegrad's own pytest plugin (markers and fixtures auditing PyTorch steps), as users load it
pytest_plugins = ["tapegrad.pytest"]


@pytest.fixture(autouse=True)
def no_leaks():
    gc.collect()
    before = tg.live_counts()
    yield
    gc.collect()
    assert tg.live_counts() == before
