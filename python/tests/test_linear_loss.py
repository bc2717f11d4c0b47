"""The loss known in forward: tapegrad.linear_loss (tg_linear_loss with a
Python loss) and tapegrad.torch.linear_loss (the loss a PyTorch function).

Values and gradients are checked in float64 to 1e-12 against the fused op
followed by the same loss (tapegrad.linear_logprob_entropy, then the loss
over all rows) and, for the PyTorch adapter, against PyTorch's own
composition (hidden @ weight.T + bias, log_softmax, the loss): PPO's clipped
surrogate with an entropy bonus and a KL penalty, GRPO with per-token
weights, cross-entropy with a z-loss, GSPO's sequence-level ratio over
packed sequences (seq_lens); ignored rows, (B, T, d) hidden states,
temperature, several chunks, vocabulary blocks (the recompute path). Then
the chunk object, the refusals (a loss using another chunk's log-probs, a
result that is not a tensor), a raising loss function (the same exception,
nothing kept), threads, and the rules the PyTorch adapters obey (exact bytes
held, no graph under no_grad, version errors, second backward,
retain_graph, create_graph, empty batches). Each test also gives back every
library object it made (conftest.py)."""
import contextlib
import gc
import io
import math
import re
import sys
import threading
import weakref
from pathlib import Path

import pytest

import tapegrad as tg

np = pytest.importorskip("numpy")

TOL = dict(rtol=1e-12, atol=1e-12)


# ---- the losses, written once for tapegrad's and PyTorch's tensors ----------------------------
#
# A loss takes (K, c, lp, H, lse, rows): K the ops of one side, c the per-token constants (whole:
# the loss slices them with the chunk's rows), lp / H / lse the rows' statistics.

class TG:
    exp = staticmethod(lambda t: t.exp())
    minimum = staticmethod(lambda a, b: tg.minimum(a, b))
    clamp = staticmethod(lambda t, lo, hi: t.clamp(lo, hi))
    rows = staticmethod(lambda c, r: c.slice(0, r.start, r.stop, 1))
    cols = staticmethod(lambda c, r: c.slice(1, r.start, r.stop, 1))
    sum = staticmethod(lambda t: t.sum())
    rowsum = staticmethod(lambda t: t.sum_dim(1, False))
    const = staticmethod(lambda a: tg.tensor(a, dtype=tg.float64))


def _torch_ops():
    import torch

    class PT:
        exp = staticmethod(torch.exp)
        minimum = staticmethod(torch.minimum)
        clamp = staticmethod(torch.clamp)
        rows = staticmethod(lambda c, r: c[r])
        cols = staticmethod(lambda c, r: c[:, r])
        sum = staticmethod(lambda t: t.sum())
        rowsum = staticmethod(lambda t: t.sum(1))
        const = staticmethod(lambda a: torch.tensor(a, dtype=torch.float64))
    return PT


def ppo(K, c, lp, H, lse, r):
    """PPO's clipped surrogate, token mean, with an entropy bonus and the k3 KL to a reference."""
    m, adv, old, ref = (K.rows(c[k], r) for k in ("mask", "adv", "old", "ref"))
    ratio = K.exp(lp - old)
    surr = -K.minimum(ratio * adv, K.clamp(ratio, 0.8, 1.2) * adv)
    d = ref - lp
    kl = K.exp(d) - d - 1.0
    return K.sum((surr + 0.04 * kl - 0.01 * H) * m) / c["n_kept"]


def grpo(K, c, lp, H, lse, r):
    """GRPO / DAPO: clip-higher surrogate and KL, per-token weights 1 / (G |o_i|)."""
    w, adv, old, ref = (K.rows(c[k], r) for k in ("weight", "adv", "old", "ref"))
    ratio = K.exp(lp - old)
    surr = -K.minimum(ratio * adv, K.clamp(ratio, 0.8, 1.28) * adv)
    d = ref - lp
    return K.sum((surr + 0.04 * (K.exp(d) - d - 1.0)) * w)


def cross_entropy(K, c, lp, H, lse, r):
    """Token-mean cross-entropy with a z-loss and an entropy bonus."""
    m = K.rows(c["mask"], r)
    return K.sum((1e-3 * lse * lse - lp - 0.01 * H) * m) / c["n_kept"]


def gspo(K, c, lp, H, lse, r):
    """GSPO: one ratio per sequence, exp(mean over its kept tokens of lp - old), clipped; the
    sequences of the chunk (whole, by seq_lens) are those with rows in it."""
    member, kept = K.cols(c["member"], r), K.cols(c["kept"], r)  # (S, n) 0/1
    present = K.clamp(K.rowsum(member), 0.0, 1.0)
    s = K.exp(K.rowsum(kept * (lp - K.rows(c["old"], r))) / c["lens"])
    adv = c["seq_adv"]
    return -K.sum(K.minimum(s * adv, K.clamp(s, 0.8, 1.2) * adv) * present) / c["n_seqs"]


LOSSES = {"ppo": ppo, "grpo": grpo, "cross_entropy": cross_entropy, "gspo": gspo}


# ---- the data ---------------------------------------------------------------------------------

def _case(lead=(23,), d=6, V=37, T=1.0, seed=0, seq_lens=None, bias=True):
    """Inputs as NumPy float64 arrays, about a tenth of the rows ignored, and
    the per-token constants of every loss (old log-probs near the true ones,
    so that ratios fall on both sides of the clip)."""
    rng = np.random.default_rng(seed)
    N = int(np.prod(lead))
    h = rng.standard_normal((*lead, d))
    w = rng.standard_normal((V, d)) / 2
    b = rng.standard_normal(V) / 3 if bias else None
    y = rng.integers(0, V, lead)
    ignored = rng.random(N) < 0.1
    ignored[1] = True
    y.reshape(-1)[ignored] = -100
    z = (h.reshape(N, d) @ w.T + (b if bias else 0)) / T
    lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    mask = (~ignored).astype(np.float64)
    lp = (z[np.arange(N), np.maximum(y.reshape(-1), 0)] - lse) * mask
    c = {"mask": mask, "n_kept": float(mask.sum()),
         "adv": rng.standard_normal(N) * mask,
         "old": (lp + rng.standard_normal(N) * 0.25) * mask,
         "ref": (lp + rng.standard_normal(N) * 0.1) * mask}
    G = 4  # a group of G answers of random lengths: 1 / (G |o_i|) per kept token
    owner = np.sort(rng.integers(0, G, N))
    c["weight"] = np.array([mask[i] / (G * max(mask[owner == owner[i]].sum(), 1))
                            for i in range(N)])
    lens = list(seq_lens) if seq_lens else [N]
    starts = np.cumsum([0] + lens)
    member = np.zeros((len(lens), N))
    for s, (a, e) in enumerate(zip(starts[:-1], starts[1:])):
        member[s, a:e] = 1.0
    c.update(member=member, kept=member * mask, lens=np.maximum((member * mask).sum(1), 1.0),
             seq_adv=rng.standard_normal(len(lens)), n_seqs=float(len(lens)))
    return h, w, b, y, c


def _consts(K, c):
    return {k: v if isinstance(v, float) else K.const(v) for k, v in c.items()}


def _tg_inputs(h, w, b, y):
    xs = [tg.tensor(x, dtype=tg.float64, requires_grad=True) if x is not None else None
          for x in (h, w, b)]
    return xs, tg.tensor(y, dtype=tg.int64)


def _grads(xs):
    return [np.array(x.grad.tolist()) if x is not None else None for x in xs]


def _tg_reference(loss, h, w, b, y, c, T):
    """The fused op, then the loss over all rows at once: (value, grads, lp, H)."""
    xs, yt = _tg_inputs(h, w, b, y)
    lp, H, lse = tg.linear_logprob_entropy(xs[0], xs[1], yt, xs[2], temperature=T,
                                           want_lse=True)
    N = y.size
    flat = [t.reshape([N]) for t in (lp, H, lse)]
    value = loss(TG, _consts(TG, c), *flat, slice(0, N))
    value.backward()
    return value.item(), _grads(xs), np.array(lp.tolist()), np.array(H.tolist())


# ---- values and gradients ---------------------------------------------------------------------

CASES = {  # name: (loss, _case arguments, linear_loss options)
    "ppo": ("ppo", dict(T=0.7), dict(chunk_rows=5)),
    "grpo_btd_blocks": ("grpo", dict(lead=(3, 8), V=41), dict(chunk_rows=4, vocab_block=10)),
    "cross_entropy_no_bias": ("cross_entropy", dict(bias=False, T=1.3), dict(chunk_rows=7)),
    "cross_entropy_one_chunk": ("cross_entropy", dict(), dict()),
    "gspo_seq_lens": ("gspo", dict(seq_lens=(5, 3, 7, 2, 6)),
                      dict(chunk_rows=4, seq_lens=(5, 3, 7, 2, 6))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_the_fused_op_then_the_loss(name):
    loss_name, case_args, opts = CASES[name]
    loss = LOSSES[loss_name]
    T = case_args.get("T", 1.0)
    h, w, b, y, c = _case(**case_args)
    want, want_grads, want_lp, want_H = _tg_reference(loss, h, w, b, y, c, T)

    xs, yt = _tg_inputs(h, w, b, y)
    consts = _consts(TG, c)
    chunks = []

    def loss_fn(chunk):
        chunks.append((chunk.index, chunk.rows))
        return loss(TG, consts, chunk.logprob, chunk.entropy, chunk.lse, chunk.rows)

    got, lp, H = tg.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], temperature=T, **opts)
    assert got.shape == () and got.dtype == "f64" and got.grad_fn is not None
    assert lp.shape == H.shape == y.shape and lp.grad_fn is None and H.grad_fn is None
    assert math.isclose(got.item(), want, rel_tol=1e-12, abs_tol=1e-12)
    np.testing.assert_allclose(np.array(lp.tolist()), want_lp, **TOL)
    np.testing.assert_allclose(np.array(H.tolist()), want_H, **TOL)
    # the chunks follow each other and cover every row
    assert [i for i, _ in chunks] == list(range(len(chunks)))
    assert chunks[0][1].start == 0 and chunks[-1][1].stop == y.size
    assert all(a[1].stop == b_[1].start for a, b_ in zip(chunks, chunks[1:]))
    if opts.get("chunk_rows"):
        assert len(chunks) > 2
    if opts.get("seq_lens"):  # whole sequences in each chunk
        ends = set(np.cumsum(opts["seq_lens"]).tolist()) | {0}
        assert all(r.start in ends and r.stop in ends for _, r in chunks)
    got.backward()
    for g, r in zip(_grads(xs), want_grads):
        if r is not None:
            np.testing.assert_allclose(g, r, **TOL)


def test_upstream_gradient_scales_the_gradients():
    h, w, b, y, c = _case(seed=3)
    xs, yt = _tg_inputs(h, w, b, y)
    consts = _consts(TG, c)
    loss, _, _ = tg.linear_loss(xs[0], xs[1], yt, lambda ch: ppo(TG, consts, ch.logprob,
                                                                  ch.entropy, ch.lse, ch.rows),
                                xs[2], chunk_rows=6)
    (loss * 2.5).backward()
    _, want, _, _ = _tg_reference(ppo, h, w, b, y, c, 1.0)
    for g, r in zip(_grads(xs), want):
        np.testing.assert_allclose(g, 2.5 * r, **TOL)


def test_entropy_grad_off_gives_the_entropy_without_gradient():
    h, w, b, y, c = _case(seed=4)
    xs, yt = _tg_inputs(h, w, b, y)
    consts = _consts(TG, c)
    seen = []

    def loss_fn(ch):
        seen.append((ch.logprob.requires_grad, ch.entropy.requires_grad, ch.lse.requires_grad))
        return cross_entropy(TG, consts, ch.logprob, ch.entropy, ch.lse, ch.rows)

    loss, _, _ = tg.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], entropy_grad=False,
                                chunk_rows=8)
    loss.backward()
    assert set(seen) == {(True, False, True)}
    rs, ryt = _tg_inputs(h, w, b, y)
    lp, H, lse = tg.linear_logprob_entropy(rs[0], rs[1], ryt, rs[2], want_lse=True,
                                           entropy_grad=False)
    cross_entropy(TG, _consts(TG, c), lp, H.detach(), lse, slice(0, y.size)).backward()
    for g, r in zip(_grads(xs), _grads(rs)):
        np.testing.assert_allclose(g, r, **TOL)


def test_under_no_grad_nothing_is_recorded():
    h, w, b, y, c = _case(seed=5)
    xs, yt = _tg_inputs(h, w, b, y)
    consts = _consts(TG, c)
    seen = []

    def loss_fn(ch):
        seen.append(ch.logprob.requires_grad or ch.entropy.requires_grad)
        return ppo(TG, consts, ch.logprob, ch.entropy, ch.lse, ch.rows)

    with tg.no_grad():
        loss, lp, H = tg.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], chunk_rows=6)
    assert loss.grad_fn is None and not any(seen)
    want = _tg_reference(ppo, h, w, b, y, c, 1.0)[0]
    assert math.isclose(loss.item(), want, rel_tol=1e-12)


# ---- the chunk ----------------------------------------------------------------------------------

def test_the_chunk_object_and_kept_chunk_tensors_stay_valid():
    """The chunk's fields; the chunk's tensors and those the loss makes, kept
    after the call, are valid tensors of their own (the loop runs the
    callback inside a scope of its own, which the binding leaves: a Tensor
    made there would hold the scope's reference and be freed under it),
    equal to the rows of the returned outputs."""
    h, w, b, y, c = _case(lead=(2, 7), seed=6)
    xs, yt = _tg_inputs(h, w, b, y)
    kept = []

    def loss_fn(ch):
        assert isinstance(ch, tg.LinearLossChunk)
        assert repr(ch) == f"LinearLossChunk(index={ch.index}, rows={ch.rows!r})"
        n = ch.rows.stop - ch.rows.start
        for t in (ch.logprob, ch.entropy, ch.lse):
            assert t.shape == (n,) and t.dtype == "f64" and t.device == "cpu"
        assert ch.targets.dtype == "i64" and ch.targets.tolist() == \
            y.reshape(-1)[ch.rows].tolist()
        with pytest.raises(AttributeError):
            ch.index = 3
        made = ch.logprob * 2.0  # a tensor the loss makes, kept for logging
        kept.append((ch, made))
        return made.sum() - ch.entropy.sum() * 0.5

    loss, lp, H = tg.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], chunk_rows=3)
    loss.backward()
    flat_lp, flat_H = lp.reshape([-1]).tolist(), H.reshape([-1]).tolist()
    for ch, made in kept:
        assert ch.logprob.tolist() == flat_lp[ch.rows]
        assert ch.entropy.tolist() == flat_H[ch.rows]
        assert made.tolist() == [2 * v for v in flat_lp[ch.rows]]
    kept.clear()  # the last references to the chunks' tensors, given back here
    gc.collect()


def test_a_loss_using_another_chunks_logprob_is_refused_naming_the_rows():
    h, w, b, y, c = _case(seed=7)
    xs, yt = _tg_inputs(h, w, b, y)
    first = []

    def loss_fn(ch):
        if not first:
            first.append(ch.logprob)
            return ch.logprob.sum()
        return ch.logprob.sum() + first[0].sum()  # the first chunk's rows: refused

    with pytest.raises(ValueError, match=r"loss of rows \[\d+, \d+\) depends on") as e:
        tg.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], chunk_rows=5)
    assert isinstance(e.value, tg.TapegradError) and e.value.status_name == "TG_ERR_VALUE"
    assert all(x.grad is None for x in xs)


def test_a_loss_of_a_parameter_is_refused():
    h, w, b, y, c = _case(seed=8)
    xs, yt = _tg_inputs(h, w, b, y)
    with pytest.raises(ValueError, match=r"rows \[0, \d+\)"):
        tg.linear_loss(xs[0], xs[1], yt, lambda ch: ch.logprob.sum() + xs[1].sum(), xs[2])


@pytest.mark.parametrize("bad,err,match", [
    (lambda ch: 1.0, TypeError, r"loss_fn must return a tapegrad Tensor \(the loss of rows "
                                r"\[0, \d+\)\), not float"),
    (lambda ch: ch.logprob, tg.TapegradError, r"rows \[0, \d+\) has shape"),
    (lambda ch: ch.targets.sum(), tg.DtypeError, r"rows \[0, \d+\) is i64"),
])
def test_a_bad_result_is_refused(bad, err, match):
    h, w, b, y, c = _case(seed=9)
    xs, yt = _tg_inputs(h, w, b, y)
    with pytest.raises(err, match=match):
        tg.linear_loss(xs[0], xs[1], yt, bad, xs[2])


class _Boom(Exception):
    pass


@pytest.mark.parametrize("at", [0, 2])
def test_an_exception_of_the_loss_comes_out_as_it_is(at):
    """The same exception object, its traceback through loss_fn, a note
    naming the call; the loss function is not called again; nothing is kept
    (conftest checks every library object made is gone) and no gradient set."""
    h, w, b, y, c = _case(seed=10)
    xs, yt = _tg_inputs(h, w, b, y)
    boom, calls = _Boom("no"), []

    def loss_fn(ch):
        calls.append(ch.index)
        if ch.index == at:
            raise boom
        return ch.logprob.sum()

    with pytest.raises(_Boom) as e:
        tg.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], chunk_rows=4)
    assert e.value is boom and calls == list(range(at + 1))
    assert e.traceback[-1].name == "loss_fn"
    if sys.version_info >= (3, 11):
        assert any(f"tapegrad.linear_loss on chunk {at}, rows [" in n for n in boom.__notes__)
    assert all(x.grad is None for x in xs)
    assert tg.mem_stats()["saved"] == 0


def test_arguments_are_checked():
    h, w, b, y, c = _case(seed=11)
    xs, yt = _tg_inputs(h, w, b, y)
    with pytest.raises(TypeError, match="'loss_fn' must be callable"):
        tg.linear_loss(xs[0], xs[1], yt, 3)
    with pytest.raises(OverflowError):
        tg.linear_loss(xs[0], xs[1], yt, lambda ch: ch.logprob.sum(), chunk_rows=2**64)
    with pytest.raises(ValueError, match="workspace_bytes"):
        tg.linear_loss(xs[0], xs[1], yt, lambda ch: ch.logprob.sum(), workspace_bytes=-1)
    with pytest.raises(ValueError, match="seq_lens"):
        tg.linear_loss(xs[0], xs[1], yt, lambda ch: ch.logprob.sum(), seq_lens=[3, 4])
    with pytest.raises(TypeError, match="seq_lens"):
        tg.linear_loss(xs[0], xs[1], yt, lambda ch: ch.logprob.sum(), seq_lens="abc")


def test_threads_run_their_own_losses():
    """Two threads, each its own linear_loss with a Python loss: the GIL is
    let go around the library's work and taken back for each chunk's loss."""
    h, w, b, y, c = _case(seed=12)
    want = _tg_reference(ppo, h, w, b, y, c, 1.0)[0]
    got, errors = [], []

    def run():
        try:
            xs, yt = _tg_inputs(h, w, b, y)
            consts = _consts(TG, c)
            for _ in range(5):
                loss, _, _ = tg.linear_loss(
                    xs[0], xs[1], yt,
                    lambda ch: ppo(TG, consts, ch.logprob, ch.entropy, ch.lse, ch.rows),
                    xs[2], chunk_rows=3)
                loss.backward()
                got.append(loss.item())
        except BaseException as e:  # noqa: B036 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(got) == 10
    assert all(math.isclose(v, want, rel_tol=1e-12) for v in got)


# ---- tapegrad.torch.linear_loss ---------------------------------------------------------------

@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tt(torch):
    return pytest.importorskip("tapegrad.torch")


def _torch_inputs(torch, h, w, b, y, dtype=None):
    dtype = dtype or torch.float64
    xs = [torch.tensor(x, dtype=torch.float64).to(dtype).requires_grad_() if x is not None
          else None for x in (h, w, b)]
    return xs, torch.tensor(y)


def _torch_reference(torch, loss, xs, y, c, T=1.0):
    """PyTorch alone: the logits, log_softmax, the loss over all rows."""
    z = xs[0] @ xs[1].T + (xs[2] if xs[2] is not None else 0)
    z = z / T
    logp = torch.log_softmax(z, -1)
    keep = y != -100
    lp = logp.gather(-1, y.clamp(min=0)[..., None])[..., 0] * keep
    H = -(logp.exp() * logp).sum(-1) * keep
    lse = torch.logsumexp(z, -1) * keep
    PT = _torch_ops()
    N = y.numel()
    return loss(PT, _consts(PT, c), lp.reshape(N), H.reshape(N), lse.reshape(N),
                slice(0, N)), lp, H


def _torch_loss_fn(torch, loss, c, calls=None):
    PT = _torch_ops()
    consts = _consts(PT, c)

    def loss_fn(lp, H, lse, rows):
        if calls is not None:
            calls.append((rows, torch.is_grad_enabled(), lp.requires_grad, H.requires_grad))
        return loss(PT, consts, lp, H, lse, rows)
    return loss_fn


@pytest.mark.parametrize("name", list(CASES))
def test_torch_adapter_matches_pytorch(torch, tt, name):
    loss_name, case_args, opts = CASES[name]
    loss = LOSSES[loss_name]
    T = case_args.get("T", 1.0)
    h, w, b, y, c = _case(**case_args)
    xs, yt = _torch_inputs(torch, h, w, b, y)
    refs = [x.detach().clone().requires_grad_() if x is not None else None for x in xs]
    want, want_lp, want_H = _torch_reference(torch, loss, refs, yt, c, T)
    calls = []
    got, lp, H = tt.linear_loss(xs[0], xs[1], yt, _torch_loss_fn(torch, loss, c, calls), xs[2],
                                temperature=T, **opts)
    assert got.shape == () and got.dtype == torch.float64 and got.requires_grad
    assert not lp.requires_grad and not H.requires_grad and lp.shape == yt.shape
    torch.testing.assert_close(got, want, **TOL)
    torch.testing.assert_close(lp, want_lp.detach(), **TOL)
    torch.testing.assert_close(H, want_H.detach(), **TOL)
    assert all(g and r1 and r2 for _, g, r1, r2 in calls)
    (got * 1.5).backward()
    (want * 1.5).backward()
    for x, r in zip(xs, refs):
        if x is not None:
            torch.testing.assert_close(x.grad, r.grad, **TOL)


def test_torch_adapter_frozen_weight_and_entropy_grad_off(torch, tt):
    h, w, b, y, c = _case(seed=13)
    xs, yt = _torch_inputs(torch, h, w, b, y)
    xs[1].requires_grad_(False)
    refs = [x.detach().clone().requires_grad_(x.requires_grad) for x in xs]
    calls = []
    got, _, _ = tt.linear_loss(xs[0], xs[1], yt, _torch_loss_fn(torch, ppo, c, calls), xs[2],
                               entropy_grad=False, chunk_rows=6)
    got.backward()
    assert {(g, r1, r2) for _, g, r1, r2 in calls} == {(True, True, False)}
    PT = _torch_ops()
    z = refs[0] @ refs[1].T + refs[2]
    logp = torch.log_softmax(z, -1)
    keep = yt != -100
    lp = logp.gather(-1, yt.clamp(min=0)[:, None])[:, 0] * keep
    H = (-(logp.exp() * logp).sum(-1) * keep).detach()
    ppo(PT, _consts(PT, c), lp, H, torch.logsumexp(z, -1) * keep, slice(0, yt.numel())).backward()
    assert xs[1].grad is None
    for x, r in ((xs[0], refs[0]), (xs[2], refs[2])):
        torch.testing.assert_close(x.grad, r.grad, **TOL)


def test_torch_adapter_bfloat16(torch, tt):
    """bf16 inputs: the loss and the statistics in float32, the gradients in
    bf16, near float64's."""
    h, w, b, y, c = _case(seed=14)
    xs, yt = _torch_inputs(torch, h, w, b, y, torch.bfloat16)
    got, lp, _ = tt.linear_loss(xs[0], xs[1], yt, _torch_loss_fn(torch, cross_entropy, c),
                                xs[2], chunk_rows=8)
    assert got.dtype == lp.dtype == torch.float32
    got.backward()
    refs = [x.detach().double().requires_grad_() for x in xs]
    want = _torch_reference(torch, cross_entropy, refs, yt, c)[0]
    want.backward()
    torch.testing.assert_close(got.double(), want, rtol=1e-2, atol=1e-2)
    for x, r in zip(xs, refs):
        assert x.grad.dtype == torch.bfloat16
        torch.testing.assert_close(x.grad.double(), r.grad, rtol=5e-2, atol=5e-2)


def test_torch_loss_using_another_chunks_logprob_is_refused(torch, tt):
    h, w, b, y, c = _case(seed=15)
    xs, yt = _torch_inputs(torch, h, w, b, y)
    first = []

    def loss_fn(lp, H, lse, rows):
        if not first:
            first.append(lp)
            return lp.sum()
        return lp.sum() + first[0].sum()

    with pytest.raises(ValueError, match=r"tapegrad.torch.linear_loss: the loss of rows "
                                         r"\[\d+, \d+\) depends on a tensor of shape"):
        tt.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], chunk_rows=5)
    with pytest.raises(ValueError, match=r"rows \[0, \d+\) depends on a tensor of shape "
                                         r"\(37, 6\)"):
        tt.linear_loss(xs[0], xs[1], yt, lambda lp, H, lse, r: lp.sum() + xs[1].sum(), xs[2])
    assert all(x.grad is None for x in xs)


def test_torch_loss_that_raises(torch, tt):
    h, w, b, y, c = _case(seed=16)
    xs, yt = _torch_inputs(torch, h, w, b, y)
    boom = _Boom("torch side")

    def loss_fn(lp, H, lse, rows):
        if rows.start > 0:
            raise boom
        return lp.sum()

    with pytest.raises(_Boom) as e:
        tt.linear_loss(xs[0], xs[1], yt, loss_fn, xs[2], chunk_rows=5)
    assert e.value is boom
    with pytest.raises(TypeError, match="must return a torch.Tensor"):
        tt.linear_loss(xs[0], xs[1], yt, lambda *a: 0.5, xs[2])
    with pytest.raises(ValueError, match="one floating element"):
        tt.linear_loss(xs[0], xs[1], yt, lambda lp, H, lse, r: lp, xs[2])
    assert all(x.grad is None for x in xs)
    e = boom = None  # the traceback's frames hold the call's tensors
    assert _library_bytes() == (0, 0, 0)


# ---- the rules of a PyTorch op ------------------------------------------------------------------

def _library_bytes():
    gc.collect()
    return tg.mem_stats()["live_total"], tg.mem_stats()["saved"], tg.live_counts()["nodes"]


def _rules_case(torch, seed=20, N=24, d=5, V=300):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(N, d, generator=g, dtype=torch.float64).requires_grad_()
    w = torch.randn(V, d, generator=g, dtype=torch.float64).requires_grad_()
    b = torch.randn(V, generator=g, dtype=torch.float64).requires_grad_()
    y = torch.randint(0, V, (N,), generator=g)
    return h, w, b, y


def _mean_nll(lp, H, lse, rows):
    return -lp.sum() / 24 - 0.01 * H.sum()


def test_torch_what_is_held_before_and_after_backward(torch, tt):
    """After forward: the gradients computed in forward (the inputs' sizes),
    the inputs (PyTorch's memory, kept for the version check) and the
    outputs; nothing of (N, V), even in the workspace (a chunk of 7 rows).
    After backward: the kept loss, lp and H hold their own bytes only;
    without them, nothing."""
    N, d, V = 24, 5, 300
    h, w, b, y = _rules_case(torch)
    tg.reset_peak("cpu")
    loss, lp, H = tt.linear_loss(h, w, y, _mean_nll, b, chunk_rows=7)
    outs, inputs = (1 + 2 * N) * 8, (N * d + V * d + V) * 8
    gc.collect()
    stats = tg.mem_stats()
    assert stats["live"]["activation"] == outs + inputs  # the outputs, the gradients
    assert stats["live"]["external"] == inputs and stats["saved"] == 2 * inputs
    assert stats["peak"]["workspace"] < N * V * 8 // 3, stats
    assert tg.live_counts()["nodes"] == 1
    loss.backward()
    assert _library_bytes() == (outs + inputs, 0, 0)  # the .grads, over the library's memory
    h.grad = w.grad = b.grad = None
    assert _library_bytes() == (outs, 0, 0)
    del lp, H
    assert _library_bytes() == (8, 0, 0)
    del loss
    assert _library_bytes() == (0, 0, 0)


def test_torch_no_graph_under_no_grad(torch, tt):
    h, w, b, y = _rules_case(torch)
    calls = []

    def loss_fn(lp, H, lse, rows):
        calls.append((torch.is_grad_enabled(), lp.requires_grad))
        return _mean_nll(lp, H, lse, rows)

    with torch.no_grad():
        loss, lp, H = tt.linear_loss(h, w, y, loss_fn, b, chunk_rows=10)
    assert loss.grad_fn is None and not loss.requires_grad
    assert set(calls) == {(False, False)}
    assert _library_bytes() == ((1 + 2 * 24) * 8, 0, 0)


def _leaf_loss(torch, tt, counter=None):
    h, w, b, y = _rules_case(torch, N=9, V=13)

    def loss_fn(lp, H, lse, rows):
        if counter is not None:
            counter.append(rows)
        return (lp * lp).sum() + 0.3 * (H * lse).sum()

    refs = [x.detach().clone().requires_grad_() for x in (h, w, b)]
    z = refs[0] @ refs[1].T + refs[2]
    logp = torch.log_softmax(z, -1)
    rlp = logp.gather(-1, y[:, None])[:, 0]
    rH = -(logp.exp() * logp).sum(-1)
    rloss = loss_fn(rlp, rH, torch.logsumexp(z, -1), slice(0, 9))
    loss = tt.linear_loss(h, w, y, loss_fn, b, chunk_rows=4)[0]
    return (h, w, b), refs, loss, rloss, loss_fn


def test_torch_second_backward_is_refused(torch, tt):
    xs, refs, loss, rloss, _ = _leaf_loss(torch, tt)
    loss.backward()
    rloss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time") as e:
        loss.backward()
    assert "tapegrad.torch.linear_loss" in str(e.value)
    for x, r in zip(xs, refs):
        torch.testing.assert_close(x.grad, r.grad, **TOL)


def test_torch_retain_graph_runs_the_loss_again_then_lets_it_go(torch, tt):
    """retain_graph=True: the next backward runs the forward again (loss_fn
    included) and gives the same gradient; after a backward without it,
    loss_fn (and what it holds) is let go, as PyTorch lets go of saved
    tensors, and a further backward is refused."""
    counter = []
    xs, refs, loss, rloss, loss_fn = _leaf_loss(torch, tt, counter)
    rloss.backward(retain_graph=True)
    del rloss
    alive = weakref.ref(loss_fn)
    del loss_fn
    n_chunks = len(counter) - 1  # the reference called it once
    loss.backward(retain_graph=True)
    assert len(counter) == 1 + n_chunks
    loss.backward(retain_graph=True)
    assert len(counter) == 1 + 2 * n_chunks
    assert alive() is not None
    loss.backward()
    assert len(counter) == 1 + 3 * n_chunks
    gc.collect()
    assert alive() is None
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    for x, r in zip(xs, refs):
        torch.testing.assert_close(x.grad, 3 * r.grad, **TOL)
        x.grad = None
    assert _library_bytes() == (8, 0, 0)  # the kept loss


def test_torch_loss_fn_is_let_go_after_backward(torch, tt):
    """Without retain_graph a kept loss does not keep loss_fn (nor the
    per-token constants its closure holds)."""
    h, w, b, y = _rules_case(torch)

    class Loss:
        def __call__(self, lp, H, lse, rows):
            return -lp.sum()

    fn = Loss()
    alive = weakref.ref(fn)
    loss = tt.linear_loss(h, w, y, fn, b, chunk_rows=7)[0]
    del fn
    assert alive() is not None  # a backward with retain_graph would need it
    loss.backward()
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("name", ["hidden", "weight", "bias", "targets"])
def test_torch_inplace_edit_of_an_input_is_refused(torch, tt, name):
    h = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(7, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 6, 2, 2, 4])
    hidden = h * 1.0
    line = sys._getframe().f_lineno + 1
    loss = tt.linear_loss(hidden, w, y, _mean_nll, b)[0]
    with torch.no_grad():
        {"hidden": lambda: hidden.mul_(2.0), "weight": lambda: w.add_(0.1),
         "bias": lambda: b.sub_(1.0), "targets": lambda: y.fill_(1)}[name]()
    with pytest.raises(RuntimeError) as e:
        loss.backward()
    msg = str(e.value)
    assert "modified by an inplace operation" in msg, msg
    assert f"tapegrad.torch.linear_loss saved its input '{name}' for backward at " \
           f"{__file__}:{line}" in msg, msg
    del loss, e
    assert _library_bytes() == (0, 0, 0), "the failed backward dropped tapegrad's graph"


def test_torch_second_order_gradient_is_refused(torch, tt):
    xs, refs, loss, rloss, _ = _leaf_loss(torch, tt)
    got = torch.autograd.grad(loss, xs, create_graph=True)
    want = torch.autograd.grad(rloss, refs)
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r, **TOL)
        assert g.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice") as e:
        torch.autograd.grad(sum((g ** 2).sum() for g in got), xs)
    assert "tapegrad.torch.linear_loss" in str(e.value)
    del got, e


@pytest.mark.parametrize("lead", [(0,), (0, 3), (3, 0)])
def test_torch_empty_batch(torch, tt, lead):
    """0 rows: loss 0, loss_fn never called (or on no rows), 0-row outputs,
    an empty gradient for hidden, zeros for weight and bias, as PyTorch."""
    h = torch.randn(*lead, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(lead, dtype=torch.long)
    loss, lp, H = tt.linear_loss(h, w, y, lambda lp, H, lse, r: -lp.sum(), b)
    assert loss.item() == 0.0 and lp.shape == H.shape == lead
    loss.backward()
    assert h.grad.shape == h.shape
    assert w.grad.abs().sum() == 0 and b.grad.abs().sum() == 0
    with torch.no_grad():
        assert tt.linear_loss(h, w, y, lambda *a: a[0].sum(), b)[0].item() == 0.0


def test_torch_wrong_inputs_are_a_type_error(torch, tt):
    h, w, b, y = _rules_case(torch)
    with pytest.raises(TypeError, match="linear_loss: argument 'targets' must be int64"):
        tt.linear_loss(h, w, y.double(), _mean_nll, b)
    with pytest.raises(TypeError, match="'loss_fn' must be callable"):
        tt.linear_loss(h, w, y, None, b)


def test_the_documented_example_prints_what_the_docs_say(torch, tt):
    """docs/python.md's example of the loss known in forward, run as written."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    section = doc.split("## The loss known in forward\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    said = re.search(r"prints `([^`]*)` and `([^`]*)`", section).groups()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/python.md", "exec"), {})
    assert out.getvalue().splitlines() == list(said)
