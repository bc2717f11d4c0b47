"""tapegrad.torch.logprob_entropy against PyTorch's own composition (skipped
without torch): values and gradients in float64 and float32, gradcheck,
ignored rows, temperature, entropy_grad off, leading dims, the z-loss."""
import gc

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
tt = pytest.importorskip("tapegrad.torch")


def reference(z, y, T=1.0, ignore=-100):
    logp = torch.log_softmax(z / T, -1)
    keep = y != ignore
    lp = logp.gather(-1, y.clamp(min=0).unsqueeze(-1)).squeeze(-1) * keep
    h = -(logp.exp() * logp).sum(-1) * keep
    lse = torch.logsumexp(z / T, -1) * keep
    return lp, h, lse


@pytest.fixture(autouse=True)
def no_leaks():
    gc.collect()
    before = tg.live_counts()
    yield
    gc.collect()
    assert tg.live_counts() == before


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("shape", [(7, 11), (2, 3, 11)])
def test_values_and_gradients_match_pytorch(dtype, tol, shape):
    g = torch.Generator().manual_seed(0)
    z = (torch.randn(*shape, generator=g, dtype=torch.float64) * 3).to(dtype).requires_grad_()
    y = torch.randint(0, shape[-1], shape[:-1], generator=g)
    y.view(-1)[1] = -100
    zr = z.detach().clone().requires_grad_()
    lp, h, lse = tt.logprob_entropy(z, y, temperature=0.7, want_lse=True)
    rlp, rh, rlse = reference(zr, y, T=0.7)
    for a, b in ((lp, rlp), (h, rh), (lse, rlse)):
        assert a.shape == b.shape and a.dtype == dtype
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)
    w = torch.randn(shape[:-1], generator=g, dtype=torch.float64).to(dtype)
    (lp * w + 0.3 * h + 0.1 * lse ** 2).sum().backward()
    (rlp * w + 0.3 * rh + 0.1 * rlse ** 2).sum().backward()
    torch.testing.assert_close(z.grad, zr.grad, rtol=tol, atol=tol)
    assert z.grad.view(-1, shape[-1])[1].abs().max() == 0, "an ignored row gets no gradient"


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 4, 2])
    assert torch.autograd.gradcheck(
        lambda x: tt.logprob_entropy(x, y, temperature=1.3, want_lse=True), (z,))


def test_entropy_grad_off_has_no_entropy_term():
    z = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1, 2, 3, 4])
    lp, h = tt.logprob_entropy(z, y, entropy_grad=False)
    assert not h.requires_grad
    lp.sum().backward()
    zr = z.detach().clone().requires_grad_()
    reference(zr, y)[0].sum().backward()
    torch.testing.assert_close(z.grad, zr.grad)


def test_bad_targets_raise_the_library_error():
    z = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(tg.TapegradError) as e:
        tt.logprob_entropy(z, torch.tensor([0, 7]))
    assert e.value.status_name == "TG_ERR_VALUE" and "target 7" in str(e.value)
