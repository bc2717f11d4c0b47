"""examples/python runs at small sizes: each checks its own claims and exits
1 when one fails (the seed stories' memory figures, the swapped step's loss
and gradient)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def run(script, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this copy of the package
    out = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_swap_step_gives_pytorchs_loss():
    pytest.importorskip("torch")
    out = run("swap_step.py", "--seq", "64", "--hidden", "16", "--vocab", "500")
    assert "same loss and weight gradient" in out
    assert "pytorch" in out and "tapegrad" in out


def test_entropy_at_zero():
    pytest.importorskip("numpy")
    out = run("entropy_at_zero.py", "--seq", "64", "--vocab", "700")
    assert "Same loss, entropy and gradient in all four." in out
    assert "3.0 x the logits" in out  # the composite op's softmax, log-softmax and product


def test_chunked_logprob():
    out = run("chunked_logprob.py", "--seq", "256", "--vocab", "900", "--chunks", "0,32,128")
    assert out.count("composite") >= 3 and out.count("fused") >= 3


@pytest.mark.parametrize("detach", [False, True])
def test_retained_loss(detach):
    out = run("retained_loss.py", "--micro", "3", "--seq", "32", "--vocab", "300",
              *(["--detach"] if detach else []))
    if detach:
        assert "Nothing kept" in out
    else:
        assert 'root "losses[0]"' in out and "held by 3 roots" in out


@pytest.mark.parametrize("fix", [None, "--detach", "--item"])
def test_torch_retained_loss(fix):
    pytest.importorskip("torch")
    out = run("torch_retained_loss.py", "--micro", "5", "--seq", "32", "--vocab", "300",
              *([fix] if fix else []))
    if fix:
        assert "Nothing kept" in out
    else:
        assert 'root "losses[4]" (f32 [])' in out and "keeps 5 graphs, 375.0 KiB" in out
        assert "grew at each of the last 4 steps: +75.0 KiB per step" in out


def test_torch_inplace_pair():
    pytest.importorskip("torch")
    out = run("torch_inplace_pair.py")
    assert "saved by LogprobBackward" in out and "sub_ at" in out and "add_ at" in out
    assert "weight gradient the same as PyTorch's own ops give" in out


def test_torch_entropy_at_zero():
    pytest.importorskip("torch")
    out = run("torch_entropy_at_zero.py", "--seq", "64", "--vocab", "500")
    assert "gradient zero everywhere in 1 subgraph, holding 125.0 KiB saved for nothing" in out
    assert "Same loss, logged entropy and gradient in all three." in out


def test_peer_python_bench_runs_its_three_ways():
    pytest.importorskip("torch")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    bench = Path(__file__).resolve().parents[2] / "bench" / "peer_python.py"
    out = subprocess.run([sys.executable, str(bench), "--seq", "64", "--hidden", "16", "--vocab",
                          "300", "--chunk", "16", "--reps", "1", "--json"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    import json
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["way"] for r in rows] == ["naive", "chunked", "tapegrad"]
    assert all(r["median_s"] > 0 for r in rows)
