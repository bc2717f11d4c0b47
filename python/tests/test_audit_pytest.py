"""tapegrad's pytest plugin (``-p tapegrad.pytest``; this suite loads it in
conftest.py) on the three stories in plain PyTorch: the fixed stories pass
its markers and fixtures here; the buggy ones, run by a pytest in a child
process as a user's suite would be, fail with the holder, the op names, the
lines and the bytes in the failure."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import tapegrad.torch as tt  # noqa: E402

from audit_stories import EXAMPLES, example, line_of  # noqa: E402

retained = example("torch_retained_loss")
pair = example("torch_inplace_pair")
entropy = example("torch_entropy_at_zero")


def logits_and_targets(n=64, v=300):
    g = torch.Generator().manual_seed(7)
    return torch.randn(n, v, generator=g).requires_grad_(), torch.randint(0, v, (n,), generator=g)


# ---- the fixed stories pass ----------------------------------------------------------------

@pytest.mark.tapegrad_no_graph_leak
@pytest.mark.parametrize("keep", ["detach", "item"])
def test_kept_losses_fixed_pass_the_leak_marker(keep):
    losses = []
    for k in range(3):
        loss = retained.microbatch(k, 64, 500)
        losses.append(loss.detach() if keep == "detach" else loss.item())
        tt.step_mark()


def test_kept_losses_fixed_pass_the_leak_fixture(tapegrad_leaks):
    losses = []
    for k in range(3):
        losses.append(retained.microbatch(k, 64, 500).item())
        tapegrad_leaks.step()
    assert tapegrad_leaks.steps == 4  # start() marked one before the test


@pytest.mark.tapegrad_inplace_guard
def test_inplace_pair_fixed_passes_the_guard_marker():
    pair.Entropy.fixed = True
    try:
        pair.step(*pair.inputs(4, 6))
    finally:
        pair.Entropy.fixed = False


def test_inplace_pair_fixed_passes_the_guard_fixture(tapegrad_inplace):
    pair.Entropy.fixed = True
    try:
        pair.step(*pair.inputs(4, 6))
    finally:
        pair.Entropy.fixed = False
    assert tapegrad_inplace.recorder is not None


@pytest.mark.tapegrad_max_zero_grad_bytes(0)
def test_entropy_under_no_grad_passes_the_zero_gradient_marker():
    loss, _ = entropy.policy_loss(*logits_and_targets(), 0.0, entropy_grad=False)
    loss.backward()


def test_entropy_under_no_grad_passes_the_zero_gradient_fixture(tapegrad_saved):
    loss, _ = entropy.policy_loss(*logits_and_targets(), 0.0, entropy_grad=False)
    loss.backward()
    assert tapegrad_saved.report().backward_ran and tapegrad_saved.zero_grad_bytes == 0


# ---- the buggy stories fail ------------------------------------------------------------------

BUGGY = '''
import importlib.util
import pytest
import torch
import tapegrad.torch as tt

def example(name):
    spec = importlib.util.spec_from_file_location(name, {examples!r} + "/" + name + ".py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

retained = example("torch_retained_loss")
pair = example("torch_inplace_pair")
entropy = example("torch_entropy_at_zero")

def logits_and_targets(n=64, v=300):
    g = torch.Generator().manual_seed(7)
    return torch.randn(n, v, generator=g).requires_grad_(), torch.randint(0, v, (n,), generator=g)

@pytest.mark.tapegrad_no_graph_leak
def test_leak_marker():
    losses = []
    for k in range(3):
        losses.append(retained.microbatch(k, 64, 500))
        tt.step_mark()

KEPT = []

@pytest.mark.tapegrad_no_graph_leak
def test_leak_after_the_test():
    KEPT.append(retained.microbatch(0, 64, 500))

def test_leak_fixture(tapegrad_leaks):
    losses = []
    for k in range(3):
        losses.append(retained.microbatch(k, 64, 500))
        tapegrad_leaks.step()

@pytest.mark.tapegrad_inplace_guard
def test_inplace_marker():
    pair.step(*pair.inputs(4, 6))

def test_inplace_fixture(tapegrad_inplace):
    pair.step(*pair.inputs(4, 6))

@pytest.mark.tapegrad_max_zero_grad_bytes(1000)
def test_zero_marker():
    loss, _ = entropy.policy_loss(*logits_and_targets(), 0.0)
    loss.backward()

def test_zero_fixture(tapegrad_saved):
    loss, _ = entropy.policy_loss(*logits_and_targets(), 0.0)
    loss.backward()
'''


def sections(out):
    """pytest's failure sections: test name -> text."""
    got, name = {}, None
    for ln in out.splitlines():
        s = ln.strip("_ ")
        if ln.startswith("____") and s.startswith("test_"):
            name = s
            got[name] = []
        elif ln.startswith("===="):
            name = None
        elif name:
            got[name].append(ln)
    return {k: "\n".join(v) for k, v in got.items()}


@pytest.fixture(scope="module")
def buggy_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("suite")
    (d / "test_buggy.py").write_text(BUGGY.format(examples=str(EXAMPLES)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "tapegrad.pytest", "-q",
                          "-p", "no:cacheprovider", "-rf", "test_buggy.py"], cwd=d,
                         capture_output=True, text=True, env=env, timeout=300)
    return out, sections(out.stdout), d / "test_buggy.py"


def test_the_buggy_stories_fail_every_check(buggy_run):
    out, got, _ = buggy_run
    assert out.returncode == 1, out.stdout + out.stderr
    assert "7 failed" in out.stdout
    assert set(got) == {"test_leak_marker", "test_leak_after_the_test", "test_leak_fixture",
                        "test_inplace_marker", "test_inplace_fixture", "test_zero_marker",
                        "test_zero_fixture"}


def test_a_retained_graph_fails_with_its_holder_path_and_bytes(buggy_run):
    _, got, path = buggy_run
    # a decorated function's code starts at its first decorator
    first = line_of(path, "def test_leak_marker") - 1
    scope = f"local of test_leak_marker() at test_buggy.py:{first}"
    text = got["test_leak_marker"]
    assert "a step left a PyTorch graph alive (tapegrad):" in text
    assert ("10 graph nodes from earlier steps still alive (step 3), keeping 500.0 KiB, held by "
            "2 roots:") in text
    assert ('root "losses[1]" (f32 []) -> NegBackward0 -> MeanBackward0 -> SqueezeBackward1 -> '
            "GatherBackward0 -> LogSoftmaxBackward0 -> leaf f32 [64, 500] (125.0 KiB, "
            ".grad 125.0 KiB)") in text
    assert f"the list `losses` ({scope}) keeps 2 graphs, 500.0 KiB" in text
    after = got["test_leak_after_the_test"]
    assert "a PyTorch graph made by the test is still alive after it (tapegrad):" in after
    assert 'root "KEPT[0]"' in after and "global of module test_buggy" in after
    assert "the list `losses` (local of test_leak_fixture()" in got["test_leak_fixture"]


def test_an_inplace_edit_fails_with_the_saving_op_and_both_edits(buggy_run):
    _, got, _ = buggy_run
    src = EXAMPLES / "torch_inplace_pair.py"
    for name in ("test_inplace_marker", "test_inplace_fixture"):
        text = got[name].replace("\nE       ", "")  # pytest wraps long lines
        assert (f"saved by LogprobBackward (created at {src}:"
                f"{line_of(src, 'lp = Logprob.apply(logits, targets)')}) as saved_tensors[0], "
                "is at version 3; expected version 1 instead.") in text
        assert (f"sub_ at {src}:{line_of(src, 'z = logits.sub_(m)')} (version 1 -> 2); add_ at "
                f"{src}:{line_of(src, 'logits.add_(m)')} (version 2 -> 3)") in text


def test_a_zero_gradient_over_the_limit_fails_with_its_bytes(buggy_run):
    _, got, _ = buggy_run
    src = EXAMPLES / "torch_entropy_at_zero.py"
    nv = 64 * 300 * 4
    for name, limit in (("test_zero_marker", 1000), ("test_zero_fixture", 0)):
        text = got[name]
        assert (f"{nv} bytes saved for backward for a gradient that was zero everywhere "
                f"(limit {limit}) (tapegrad):") in text
        assert (f"MeanBackward0 -> NegBackward0 -> SumBackward1 -> MulBackward0 -> "
                f"SoftmaxBackward0: 75.0 KiB saved by SoftmaxBackward0, MulBackward0 (created at "
                f"{src}:{line_of(src, 'probs = torch.softmax(logits, -1)')}, "
                f"{src}:{line_of(src, 'entropy = -(probs * logp).sum(-1)')})") in text


def test_the_plugin_registers_its_markers(pytestconfig):
    markers = "\n".join(pytestconfig.getini("markers"))
    for m in ("tapegrad_no_graph_leak", "tapegrad_inplace_guard",
              "tapegrad_max_zero_grad_bytes(n)"):
        assert m in markers
