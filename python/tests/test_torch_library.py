"""The fused ops as torch.library custom ops (PyTorch >= 2.4): opcheck's
schema, fake-tensor, autograd and dispatch checks, and torch.compile tracing a
step through them in one graph with eager's values and gradients, and the
adapters' rules (nothing held after backward, in-place edits and a second
backward refused, no second order). Skipped on an older PyTorch (Debian
bookworm's 1.13 has no torch.library.custom_op)."""
import gc
import sys

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
import tapegrad.torch as tt  # noqa: E402

pytestmark = pytest.mark.skipif(not tt.HAS_CUSTOM_OPS,
                                reason=f"PyTorch {torch.__version__} has no custom_op")


def _logits(n=6, v=11, lead=()):
    g = torch.Generator().manual_seed(3)
    z = torch.randn(*lead, n, v, dtype=torch.float64, generator=g).requires_grad_()
    y = torch.randint(0, v, (*lead, n), generator=g)
    y.view(-1)[1] = -100
    return z, y


def test_opcheck_logprob_entropy():
    z, y = _logits(lead=(2,))
    for eg in (True, False):
        torch.library.opcheck(torch.ops.tapegrad.logprob_entropy.default,
                              (z, y, 0.7, -100, eg))


def test_opcheck_linear_logprob_entropy():
    g = torch.Generator().manual_seed(5)
    h = torch.randn(2, 5, 4, dtype=torch.float64, generator=g).requires_grad_()
    w = torch.randn(13, 4, dtype=torch.float64, generator=g).requires_grad_()
    b = torch.randn(13, dtype=torch.float64, generator=g).requires_grad_()
    y = torch.randint(0, 13, (2, 5), generator=g)
    torch.library.opcheck(torch.ops.tapegrad.linear_logprob_entropy.default,
                          (h, w, b, y, 1.3, -100, True, 3, 4))
    torch.library.opcheck(torch.ops.tapegrad.linear_logprob_entropy.default,
                          (h, w.detach(), None, y, 1.0, -100, False, 0, 0))


def _step(z, y):
    lp, ent, lse = tt.logprob_entropy(z, y, temperature=0.9, want_lse=True)
    return -(lp.mean()) - 0.01 * ent.mean() + 1e-4 * (lse ** 2).mean()


def _linear_step(h, w, b, y):
    lp, ent = tt.linear_logprob_entropy(h, w, y, b, chunk_rows=2, vocab_block=5)
    return -(lp.mean()) - 0.01 * ent.mean()


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_traces_the_logits_op_in_one_graph(dynamic):
    z, y = _logits(lead=(2,))
    eager = _step(z, y)
    (g_eager,) = torch.autograd.grad(eager, z)
    torch._dynamo.reset()
    compiled = torch.compile(_step, backend="aot_eager", fullgraph=True, dynamic=dynamic)
    loss = compiled(z, y)
    (g,) = torch.autograd.grad(loss, z)
    torch.testing.assert_close(loss, eager, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g, g_eager, rtol=1e-12, atol=1e-12)


def test_compile_traces_the_linear_op_in_one_graph():
    g = torch.Generator().manual_seed(8)
    h = torch.randn(7, 4, dtype=torch.float64, generator=g).requires_grad_()
    w = torch.randn(12, 4, dtype=torch.float64, generator=g).requires_grad_()
    b = torch.randn(12, dtype=torch.float64, generator=g).requires_grad_()
    y = torch.randint(0, 12, (7,), generator=g)
    eager = _linear_step(h, w, b, y)
    want = torch.autograd.grad(eager, (h, w, b))
    torch._dynamo.reset()
    loss = torch.compile(_linear_step, backend="aot_eager", fullgraph=True)(h, w, b, y)
    got = torch.autograd.grad(loss, (h, w, b))
    torch.testing.assert_close(loss, eager, rtol=1e-12, atol=1e-12)
    for a, e in zip(got, want):
        torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12)


# ---- the adapters' rules, for the custom ops ----------------------------------------------

def _library_bytes():
    gc.collect()
    return tg.mem_stats()["live_total"], tg.mem_stats()["saved"], tg.live_counts()["nodes"]


def _call_op(way, xs, y):
    if way == "logits":
        return torch.ops.tapegrad.logprob_entropy(xs[0], y, 0.9, -100, True)
    return torch.ops.tapegrad.linear_logprob_entropy(*xs, y, 0.9, -100, True, 2, 4)


def _op_inputs(way):
    g = torch.Generator().manual_seed(11)
    if way == "logits":
        xs = [torch.randn(5, 9, dtype=torch.float64, generator=g)]
    else:
        xs = [torch.randn(5, 3, dtype=torch.float64, generator=g),
              torch.randn(9, 3, dtype=torch.float64, generator=g),
              torch.randn(9, dtype=torch.float64, generator=g)]
    return [x.requires_grad_() for x in xs], torch.tensor([0, 8, 2, 2, 4])


@pytest.mark.parametrize("way", ["logits", "linear"])
def test_custom_op_holds_nothing_after_backward(way):
    """The kept outputs hold their own bytes only (three float64 rows of 5);
    no tapegrad graph is alive after forward, nor after backward; none under
    no_grad."""
    xs, y = _op_inputs(way)
    lp, ent, lse = _call_op(way, xs, y)
    assert _library_bytes() == (3 * 5 * 8, 0, 0)
    (lp.sum() + ent.sum() + lse.sum()).backward()
    for x in xs:
        x.grad = None
    assert _library_bytes() == (3 * 5 * 8, 0, 0)
    with torch.no_grad():
        more = _call_op(way, xs, y)
    assert not more[0].requires_grad and _library_bytes() == (6 * 5 * 8, 0, 0)


@pytest.mark.parametrize("way", ["logits", "linear"])
def test_custom_op_backward_once_or_with_retain_graph(way):
    xs, y = _op_inputs(way)
    lp, ent, _ = _call_op(way, xs, y)
    loss = lp.sum() + lp[1] + ent.sum()
    loss.backward(retain_graph=True)
    once = [x.grad.clone() for x in xs]
    loss.backward()
    for x, g in zip(xs, once):
        torch.testing.assert_close(x.grad, 2 * g, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time") as e:
        loss.backward()
    assert "torch.ops.tapegrad." in str(e.value)


@pytest.mark.parametrize("way,name", [("logits", "logits"), ("logits", "targets"),
                                      ("linear", "hidden"), ("linear", "weight"),
                                      ("linear", "bias")])
def test_custom_op_inplace_edit_is_refused_by_name(way, name):
    """PyTorch's version error, completed with the op, the input and the line
    of the call."""
    xs, y = _op_inputs(way)
    first = xs[0] * 1.0
    name_of = "logprob_entropy" if way == "logits" else "linear_logprob_entropy"
    op = getattr(torch.ops.tapegrad, name_of)
    args = (first, y, 0.9, -100, True) if way == "logits" else \
        (first, *xs[1:], y, 0.9, -100, True, 2, 4)
    line = sys._getframe().f_lineno + 1
    lp, ent, _ = op(*args)
    with torch.no_grad():
        {"logits": first, "hidden": first, "targets": y, "weight": xs[1] if xs[1:] else None,
         "bias": xs[2] if xs[2:] else None}[name].add_(1)
    with pytest.raises(RuntimeError) as e:
        (lp.sum() + ent.sum()).backward()
    assert "modified by an inplace operation" in str(e.value)
    assert f"torch.ops.tapegrad.{name_of} saved its input '{name}' for backward at {__file__}:{line}" \
        in str(e.value), str(e.value)


@pytest.mark.parametrize("way", ["logits", "linear"])
def test_custom_op_second_order_gradient_is_refused(way):
    xs, y = _op_inputs(way)
    lp, ent, _ = _call_op(way, xs, y)
    got = torch.autograd.grad(lp.sum() + ent.sum(), xs, create_graph=True)
    with pytest.raises(RuntimeError, match="no autograd formula"):
        torch.autograd.grad(sum((g ** 2).sum() for g in got), xs)


def test_compiled_step_refuses_an_inplace_edit_and_a_second_backward():
    z, y = _logits()
    torch._dynamo.reset()
    compiled = torch.compile(_step, backend="aot_eager", fullgraph=True)
    a = z * 1.0
    loss = compiled(a, y)
    with torch.no_grad():
        a.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    loss = compiled(z * 1.0, y)
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    assert _library_bytes()[1:] == (0, 0)
