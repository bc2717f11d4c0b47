"""The fused ops as torch.library custom ops (PyTorch >= 2.4): opcheck's
schema, fake-tensor, autograd and dispatch checks, and torch.compile tracing a
step through them in one graph with eager's values and gradients. Skipped on
an older PyTorch (Debian bookworm's 1.13 has no torch.library.custom_op)."""
import pytest

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
