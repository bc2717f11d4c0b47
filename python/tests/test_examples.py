"""examples/python runs (small sizes): the step with tapegrad swapped in gives
PyTorch's loss and weight gradient. Skipped without torch."""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def test_swap_step_gives_pytorchs_loss():
    out = subprocess.run([sys.executable, str(EXAMPLES / "swap_step.py"), "--seq", "64",
                          "--hidden", "16", "--vocab", "500"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "same loss and weight gradient" in out.stdout
    assert "pytorch" in out.stdout and "tapegrad" in out.stdout
