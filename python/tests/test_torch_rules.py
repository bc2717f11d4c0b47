"""tapegrad.torch's adapters obey PyTorch's rules as a PyTorch op does, side
by side with PyTorch's own composition (log_softmax + gather + entropy):
nothing of (N, V) is held after a backward, a kept output holds its own bytes
only, no graph under no_grad, in-place edits of a saved input are refused
(naming the op, the input and the call), a second backward is refused and
works with retain_graph, a second-order gradient is refused, empty batches.
Byte counts are exact: the library's accounting (``tg.mem_stats``,
``tg.live_counts``) and, on PyTorch's side, the storages still reachable."""
import gc
import json
import os
import subprocess
import sys
import weakref

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
tt = pytest.importorskip("tapegrad.torch")

N, D, V = 48, 8, 600


class _Watched(torch.autograd.Function):
    """``x`` as it is (gradient too), in memory whose life a test can see: a
    NumPy array's, which torch.from_numpy keeps alive exactly as long as the
    storage. The gradient arriving in backward is watched as well."""

    @staticmethod
    def forward(ctx, x, watch):
        arr = x.detach().numpy().copy()
        watch.append(weakref.ref(arr))
        ctx.watch = watch
        return torch.from_numpy(arr)

    @staticmethod
    def backward(ctx, g):
        ctx.watch.append(weakref.ref(g))
        return g, None


def _alive(watch):
    gc.collect()
    return [w for w in watch if w() is not None]


def _storage_key(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def held_by_torch(*roots):
    """Bytes of the distinct storages reachable from ``roots`` through
    PyTorch's autograd graph: the roots, the tensors nodes saved (those not
    freed yet), the leaves that AccumulateGrad nodes hold and their .grad, and
    tensors kept on a custom Function's ctx."""
    storages, seen, todo = {}, {}, []  # seen keeps the nodes' wrappers: ids stay theirs

    def add(t):
        if isinstance(t, torch.Tensor):
            ptr, nbytes = _storage_key(t)
            storages[ptr] = nbytes
            add(t.grad) if t.is_leaf and t.grad is not None else None

    for r in roots:
        add(r)
        todo.append(r.grad_fn)
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        saved = [n for n in dir(fn) if n.startswith("_saved_")] + ["saved_tensors", "variable"]
        for name in saved:
            try:
                v = getattr(fn, name)
            except (RuntimeError, AttributeError):  # freed by backward, or none
                continue
            for t in v if isinstance(v, (tuple, list)) else (v,):
                add(t)
        for v in getattr(fn, "__dict__", {}).values():
            add(v)
        todo.extend(f for f, _ in fn.next_functions)
    return sum(storages.values())


def _composition(z, y):
    logp = torch.log_softmax(z, -1)
    lp = logp.gather(-1, y[..., None])[..., 0]
    return lp, -(logp.exp() * logp).sum(-1)


def _inputs(seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(N, D, generator=g).to(dtype).requires_grad_()
    w = (torch.randn(V, D, generator=g) / 2).to(dtype).requires_grad_()
    y = torch.randint(0, V, (N,), generator=g)
    return h, w, y


def _losses(way, h, w, y, watch):
    """(loss, lp, H) of one microbatch whose (N, V) logits (or the linear
    op's hidden states) live in watched memory."""
    if way == "linear":
        hid = _Watched.apply(h * 1.0, watch)
        lp, ent = tt.linear_logprob_entropy(hid, w, y)
    else:
        z = _Watched.apply(h @ w.T, watch)
        lp, ent = (tt.logprob_entropy if way == "adapter" else _composition)(z, y)
    return -lp.mean() - 0.01 * ent.mean(), lp, ent


def _library_bytes():
    gc.collect()
    return tg.mem_stats()["live_total"], tg.mem_stats()["saved"], tg.live_counts()["nodes"]


@pytest.mark.parametrize("way", ["adapter", "linear", "torch"])
def test_kept_losses_hold_no_logits_after_backward(way):
    """Four microbatch losses kept for logging: after each backward, their
    logits (or hidden states) and the gradient of those are gone, as with
    PyTorch's composition; what the kept losses reach is the same on both
    sides: the leaves, their gradients and the scalars."""
    h, w, y = _inputs()
    kept, watch = [], []
    for _ in range(4):
        loss = _losses(way, h, w, y, watch)[0]
        loss.backward()
        kept.append(loss)
    assert len(watch) == 8 and _alive(watch) == []
    h.grad = w.grad = None  # optimizer.zero_grad(): the gradients go too
    if way != "torch":
        assert _library_bytes() == (0, 0, 0)
    leaves = (N * D + V * D) * 4
    assert held_by_torch(*kept) == leaves + 4 * 4


@pytest.mark.parametrize("way", ["adapter", "linear"])
def test_kept_outputs_hold_their_own_bytes(way):
    """lp and H kept for logging after backward reach their own memory (two
    float32 rows of N) and nothing else: no logits, no gradient, no graph."""
    h, w, y = _inputs()
    watch = []
    loss, lp, ent = _losses(way, h, w, y, watch)
    rloss, rlp, rent = _losses("torch", h, w, y, watch)
    (loss + rloss).backward()
    h.grad = w.grad = None
    del loss, rloss
    assert _alive(watch) == []
    assert _library_bytes() == (2 * N * 4, 0, 0)
    leaves = (N * D + V * D) * 4
    assert held_by_torch(lp, ent) == held_by_torch(rlp, rent) == 2 * N * 4 + leaves


@pytest.mark.parametrize("way", ["adapter", "linear"])
def test_no_graph_under_no_grad(way):
    """Outputs computed under torch.no_grad() (logged only): no tapegrad graph
    is recorded and the outputs hold their own bytes only."""
    h, w, y = _inputs()
    watch = []
    with torch.no_grad():
        _, lp, ent = _losses(way, h, w, y, watch)
    assert not lp.requires_grad and not ent.requires_grad and lp.grad_fn is None
    assert _alive(watch) == []
    assert _library_bytes() == (2 * N * 4, 0, 0)
    assert held_by_torch(lp, ent) == 2 * N * 4


def test_frozen_inputs_record_no_graph():
    """Grad on but no input requiring grad: as PyTorch, nothing is recorded."""
    z = torch.randn(5, 7)
    lp, ent = tt.logprob_entropy(z, torch.tensor([0, 1, 2, 3, 4]))
    assert lp.grad_fn is None and not ent.requires_grad
    assert _library_bytes() == (2 * 5 * 4, 0, 0)


# ---- backward once, or again with retain_graph ---------------------------------------------

def _leaf_case(way, dtype=torch.float64, seed=1):
    """(inputs, loss of an adapter, loss of PyTorch's composition on clones)
    with leaves feeding the adapter directly (its node is the only saver: the
    loss's own nodes save no tensor)."""
    g = torch.Generator().manual_seed(seed)
    n, d, v = 6, 4, 9
    y = torch.randint(0, v, (n,), generator=g)
    if way == "adapter":
        xs = [torch.randn(n, v, generator=g, dtype=dtype).requires_grad_()]
        lp, ent = tt.logprob_entropy(xs[0], y, temperature=0.8)
    else:
        xs = [torch.randn(n, d, generator=g, dtype=dtype).requires_grad_(),
              torch.randn(v, d, generator=g, dtype=dtype).requires_grad_(),
              torch.randn(v, generator=g, dtype=dtype).requires_grad_()]
        lp, ent = tt.linear_logprob_entropy(xs[0], xs[1], y, xs[2], temperature=0.8)
    refs = [x.detach().clone().requires_grad_() for x in xs]
    z = refs[0] if way == "adapter" else refs[0] @ refs[1].T + refs[2]
    rlp, rent = _composition(z / 0.8, y)
    return xs, refs, *(lp.sum() + lp[2] + ent.sum() for lp, ent in ((lp, ent), (rlp, rent)))


@pytest.mark.parametrize("way", ["adapter", "linear"])
def test_second_backward_is_refused(way):
    """As PyTorch: the saved inputs were freed by the first backward (it used
    to run tapegrad's kept graph again, doubling the gradient silently)."""
    xs, refs, loss, rloss = _leaf_case(way)
    loss.backward()
    rloss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time") as e:
        loss.backward()
    assert f"tapegrad.torch.{'logprob_entropy' if way == 'adapter' else 'linear_'}" in str(e.value)
    for x, r in zip(xs, refs):
        torch.testing.assert_close(x.grad, r.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("way", ["adapter", "linear"])
def test_retain_graph_backward_twice_then_nothing_held(way):
    """retain_graph=True: a second backward gives the same gradient again
    (tapegrad's graph rebuilt from the saved inputs), a third without
    retain_graph is refused, and nothing stays with the kept loss."""
    xs, refs, loss, rloss = _leaf_case(way)
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)
    loss.backward()
    for _ in range(3):
        rloss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    for x, r in zip(xs, refs):
        torch.testing.assert_close(x.grad, r.grad, rtol=1e-12, atol=1e-12)
        x.grad = None
    assert _library_bytes() == (0, 0, 0)


def test_gradcheck_through_retained_graphs():
    """gradcheck calls backward many times through one graph (retain_graph)."""
    xs, _, _, _ = _leaf_case("linear")
    y = torch.tensor([0, 8, 3, 3, 1, 5])
    assert torch.autograd.gradcheck(
        lambda h, w, b: tt.linear_logprob_entropy(h, w, y, b, want_lse=True), tuple(xs))


# ---- in-place edits of a saved input -------------------------------------------------------

def _raises_version_error(loss, op, name, line):
    with pytest.raises(RuntimeError) as e:
        loss.backward()
    msg = str(e.value)
    assert "modified by an inplace operation" in msg, msg
    assert f"tapegrad.torch.{op} saved its input '{name}' for backward at {__file__}:{line}" \
        in msg, msg


@pytest.mark.parametrize("name", ["logits", "targets"])
def test_inplace_edit_of_logits_or_targets_is_refused(name):
    """logits.div_(2.0) (or a target changed) between forward and backward
    used to give a silently wrong gradient: now PyTorch's version error,
    naming the op, the input and the line of the call."""
    z = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 6, 2, 2, 4])
    logits = z * 1.0
    line = sys._getframe().f_lineno + 1
    lp, ent = tt.logprob_entropy(logits, y)
    if name == "logits":
        logits.div_(2.0)
    else:
        y[1] = 3
    _raises_version_error(lp.sum() + ent.sum(), "logprob_entropy", name, line)
    assert _library_bytes() == (2 * 5 * 8, 0, 0), "the failed backward dropped tapegrad's graph"


@pytest.mark.parametrize("name", ["hidden", "weight", "bias", "targets"])
def test_inplace_edit_of_a_linear_input_is_refused(name):
    h = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(7, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 6, 2, 2, 4])
    hidden = h * 1.0
    line = sys._getframe().f_lineno + 1
    lp, ent = tt.linear_logprob_entropy(hidden, w, y, b)
    with torch.no_grad():
        {"hidden": lambda: hidden.mul_(2.0), "weight": lambda: w.add_(0.1),
         "bias": lambda: b.sub_(1.0), "targets": lambda: y.fill_(1)}[name]()
    _raises_version_error(lp.sum() + ent.sum(), "linear_logprob_entropy", name, line)


def test_optimizer_step_between_forward_and_backward_is_refused():
    """An optimizer step on the head's weight before the backward of a loss
    computed with the old weight: refused, naming 'weight'."""
    h = torch.randn(5, 3, requires_grad=True)
    w = torch.randn(7, 3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    w.grad = torch.ones_like(w)  # from an earlier microbatch
    line = sys._getframe().f_lineno + 1
    lp, _ = tt.linear_logprob_entropy(h, w, torch.tensor([1, 2, 3, 4, 5]))
    opt.step()
    _raises_version_error(-lp.mean(), "linear_logprob_entropy", "weight", line)


# ---- second-order gradients ----------------------------------------------------------------

@pytest.mark.parametrize("way", ["adapter", "linear"])
def test_second_order_gradient_is_refused(way):
    """create_graph=True: the first-order gradient is right and carries a
    graph, whose backward raises (as @once_differentiable); it used to come
    back with no graph and no error, the second-order term dropped."""
    xs, refs, loss, rloss = _leaf_case(way)
    got = torch.autograd.grad(loss, xs, create_graph=True)
    want = torch.autograd.grad(rloss, refs)
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r, rtol=1e-12, atol=1e-12)
        assert g.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice") as e:
        torch.autograd.grad(sum((g ** 2).sum() for g in got), xs)
    assert "tapegrad.torch." in str(e.value)
    del got


# ---- empty batches -------------------------------------------------------------------------
#
# The cases run in child interpreters (one, and one more after each crash), so that a crash of
# the library on one case fails that test and not the whole suite.

_CHILD = """
import ast, gc, json, sys, traceback
sys.path.insert(0, {here!r})
import test_torch_rules as m, tapegrad as tg
for key in {keys!r}:
    fn, arg = key.split(":", 1)
    before = tg.live_counts()
    try:
        getattr(m, fn)(ast.literal_eval(arg))
        gc.collect()
        assert tg.live_counts() == before, ("library objects left", tg.live_counts(), before)
        print(json.dumps([key, None]), flush=True)
    except BaseException:
        print(json.dumps([key, traceback.format_exc()]), flush=True)
"""


@pytest.fixture(scope="module")
def empty_batches():
    """{case: None (passed) or what failed} for every _EMPTY case."""
    results, env = {}, dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    while len(results) < len(_EMPTY):
        keys = [k for k in _EMPTY if k not in results]
        code = _CHILD.format(here=os.path.dirname(__file__), keys=keys)
        out = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code],
                             capture_output=True, text=True,
                             timeout=300, env=env)
        for line in out.stdout.splitlines():
            if line.startswith("["):
                key, err = json.loads(line)
                results[key] = err
        missing = [k for k in keys if k not in results]
        if missing:  # the cases run in order: the child died in the first one missing
            results[missing[0]] = f"the child died: exit status {out.returncode}\n" \
                                  f"{out.stderr[-4000:]}"
    return results


def _empty_logits(lead):
    z = torch.randn(*lead, 5, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(lead, dtype=torch.long)
    lp, ent, lse = tt.logprob_entropy(z, y, want_lse=True)
    for t in (lp, ent, lse):
        assert t.shape == lead and t.dtype == torch.float64, t
    (lp.sum() + ent.sum() + lse.sum()).backward()
    assert z.grad.shape == z.shape


def _empty_linear(lead):
    h = torch.randn(*lead, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(lead, dtype=torch.long)
    lp, ent = tt.linear_logprob_entropy(h, w, y, b)
    assert lp.shape == ent.shape == lead
    (lp.sum() + ent.sum()).backward()
    refs = [x.detach().clone().requires_grad_() for x in (h, w, b)]
    rlp, rent = _composition(refs[0] @ refs[1].T + refs[2], y)
    (rlp.sum() + rent.sum()).backward()
    for x, r in zip((h, w, b), refs):
        assert x.grad is not None and x.grad.shape == x.shape
        torch.testing.assert_close(x.grad, r.grad)


def _empty_no_grad(way):
    with torch.no_grad():
        y = torch.zeros(0, dtype=torch.long)
        if way == "adapter":
            lp, ent = tt.logprob_entropy(torch.randn(0, 5), y)
        else:
            lp, ent = tt.linear_logprob_entropy(torch.randn(0, 3), torch.randn(5, 3), y)
    assert lp.shape == ent.shape == (0,)


_EMPTY = [f"_empty_logits:{lead}" for lead in ((0,), (0, 3), (3, 0))] + \
    [f"_empty_linear:{lead}" for lead in ((0,), (0, 3), (3, 0))] + \
    [f"_empty_no_grad:{way!r}" for way in ("adapter", "linear")]


def _empty_custom_op(args):
    """torch.ops.tapegrad.* (PyTorch >= 2.4) on 0 rows, against the composition."""
    way, lead = args
    g = torch.Generator().manual_seed(5)
    y = torch.zeros(lead, dtype=torch.long)
    if way == "logits":
        xs = [torch.randn(*lead, 5, dtype=torch.float64, generator=g).requires_grad_()]
        outs = torch.ops.tapegrad.logprob_entropy(xs[0], y, 1.0, -100, True)
    else:
        xs = [torch.randn(*lead, 4, dtype=torch.float64, generator=g).requires_grad_(),
              torch.randn(6, 4, dtype=torch.float64, generator=g).requires_grad_()]
        outs = torch.ops.tapegrad.linear_logprob_entropy(xs[0], xs[1], None, y, 1.0, -100, True,
                                                         0, 0)
    assert all(t.shape == lead for t in outs)
    sum(t.sum() for t in outs).backward()
    refs = [x.detach().clone().requires_grad_() for x in xs]
    rlp, rent = _composition(refs[0] if way == "logits" else refs[0] @ refs[1].T, y)
    (rlp.sum() + rent.sum()).backward()
    for x, r in zip(xs, refs):
        torch.testing.assert_close(x.grad, r.grad)


if tt.HAS_CUSTOM_OPS:
    _EMPTY += [f"_empty_custom_op:{args!r}" for args in (("logits", (0, 3)), ("linear", (3, 0)))]


@pytest.mark.parametrize("case", _EMPTY)
def test_empty_batch(case, empty_batches):
    """0 rows, however the leading dims say it (no_grad too): 0-row outputs,
    an empty gradient for the logits or hidden states, zeros for the weight
    and the bias, as PyTorch's composition gives them."""
    assert empty_batches[case] is None, empty_batches[case]


def test_bfloat16_logits_hold_nothing_after_backward():
    """bf16 logits (float32 outputs, a bf16 gradient, which the leaf keeps in
    the library's memory): the exact bytes the library holds while the
    gradient is kept, and after it is dropped."""
    z = torch.randn(N, V, dtype=torch.bfloat16, requires_grad=True)
    y = torch.randint(0, V, (N,))
    lp, ent = tt.logprob_entropy(z, y)
    assert lp.dtype == ent.dtype == torch.float32
    (-lp.mean() - 0.01 * ent.mean()).backward()
    assert z.grad.dtype == torch.bfloat16
    assert _library_bytes() == (N * V * 2 + 2 * N * 4, 0, 0)
    z.grad = None
    assert _library_bytes() == (2 * N * 4, 0, 0)
