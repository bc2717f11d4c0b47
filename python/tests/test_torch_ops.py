"""tapegrad.torch.logprob_entropy against PyTorch's own composition (skipped
without torch): values and gradients in float64 and float32, gradcheck,
ignored rows, temperature, entropy_grad off, leading dims, the z-loss."""
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


@pytest.mark.parametrize("blocks", [(0, 0), (5, 4)])
@pytest.mark.parametrize("lead", [(9,), (2, 5)])
def test_linear_op_matches_pytorch(blocks, lead):
    """hidden (..., d) @ weight.T + bias, several chunks and vocabulary blocks
    or one, gradients to all three against PyTorch float64."""
    g = torch.Generator().manual_seed(2)
    d, V = 6, 13
    hid = torch.randn(*lead, d, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(V, d, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(V, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, V, lead, generator=g)
    y.view(-1)[2] = -100
    lp, h, lse = tt.linear_logprob_entropy(hid, w, y, b, temperature=0.9, want_lse=True,
                                           chunk_rows=blocks[0], vocab_block=blocks[1])
    refs = [t.detach().clone().requires_grad_() for t in (hid, w, b)]
    rlp, rh, rlse = reference(refs[0] @ refs[1].T + refs[2], y, T=0.9)
    for a, r in ((lp, rlp), (h, rh), (lse, rlse)):
        torch.testing.assert_close(a, r, rtol=1e-12, atol=1e-12)
    c = torch.randn(lead, generator=g, dtype=torch.float64)
    (lp * c + 0.2 * h + 0.05 * lse ** 2).sum().backward()
    (rlp * c + 0.2 * rh + 0.05 * rlse ** 2).sum().backward()
    for a, r in zip((hid, w, b), refs):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-12, atol=1e-12)


def test_linear_op_gradcheck_and_frozen_weight():
    g = torch.Generator().manual_seed(3)
    hid = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(7, 3, generator=g, dtype=torch.float64)  # frozen: no gradient asked
    y = torch.tensor([1, 6, 0, 3])
    assert torch.autograd.gradcheck(
        lambda x: tt.linear_logprob_entropy(x, w, y, vocab_block=3, chunk_rows=2), (hid,))
    lp, _ = tt.linear_logprob_entropy(hid, w, y)
    lp.sum().backward()
    assert w.grad is None and hid.grad is not None


def _err(a, ref):
    return (a.double() - ref).abs().max().item()


@pytest.mark.parametrize("op", ["logits", "linear"])
def test_bfloat16_within_pytorchs_own_error(op):
    """bf16 inputs: tapegrad's values and gradients are no further from the
    float64 answer (on the same bf16 inputs) than PyTorch's own composition
    run in bfloat16 is."""
    g = torch.Generator().manual_seed(4)
    n, d, v = 48, 32, 300
    h64 = torch.randn(n, d, generator=g, dtype=torch.float64)
    w64 = torch.randn(v, d, generator=g, dtype=torch.float64) / d ** 0.5 * 2
    y = torch.randint(0, v, (n,), generator=g)
    wt = torch.randn(n, generator=g, dtype=torch.float64)
    hb, wb = h64.bfloat16(), w64.bfloat16()

    def loss(lp, ent):
        return (lp * wt.to(lp.dtype)).sum() + 0.1 * ent.sum()

    if op == "logits":
        zb = (hb.double() @ wb.double().T).bfloat16()
        exact_in = zb.double().requires_grad_()
        mine_in, torch_in = zb.clone().requires_grad_(), zb.clone().requires_grad_()
        lp, ent = tt.logprob_entropy(mine_in, y)
        loss(lp, ent).backward()
        rlp, rent, _ = reference(torch_in, y)
        loss(rlp, rent).backward()
        elp, eent, _ = reference(exact_in, y)
        loss(elp, eent).backward()
        pairs = [(lp, rlp, elp), (mine_in.grad, torch_in.grad, exact_in.grad)]
    else:
        hm, wm = hb.clone().requires_grad_(), wb.clone().requires_grad_()
        ht, wtt = hb.clone().requires_grad_(), wb.clone().requires_grad_()
        he, we = hb.double().requires_grad_(), wb.double().requires_grad_()
        lp, ent = tt.linear_logprob_entropy(hm, wm, y)
        loss(lp, ent).backward()
        rlp, rent, _ = reference(ht @ wtt.T, y)
        loss(rlp, rent).backward()
        elp, eent, _ = reference(he @ we.T, y)
        loss(elp, eent).backward()
        pairs = [(lp, rlp, elp), (hm.grad, ht.grad, he.grad), (wm.grad, wtt.grad, we.grad)]
    for mine, theirs, exact in pairs:
        assert _err(mine, exact.detach()) <= max(_err(theirs, exact.detach()), 1e-6)
