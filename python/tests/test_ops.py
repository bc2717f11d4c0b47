"""The op vocabulary generated from the public headers: the table is current,
every op is reachable, and arguments of every kind reach the library as the
C contract says (checked against NumPy values)."""
import subprocess
import sys
from pathlib import Path

import pytest

import tapegrad as tg
from tapegrad._ops import OPS

np = pytest.importorskip("numpy")
ROOT = Path(__file__).resolve().parents[2]


def test_the_table_matches_the_headers():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_python_ops.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_every_public_tensor_op_is_in_the_table_or_bound_by_hand():
    import re
    from_headers = set()
    for h in ("tensor.h", "ops.h"):
        src = (ROOT / "include" / "tapegrad" / h).read_text()
        from_headers |= set(re.findall(r"\b(?:tg_tensor\s*\*|tg_status)\s*tg_(\w+)_at\s*\(", src))
    by_hand = {"from_blob", "from_data", "from_dlpack", "function_apply", "mark_modified"}
    assert from_headers - by_hand == set(OPS)
    for name in OPS:
        assert callable(tg.ops[name]) and getattr(tg, name) is tg.ops[name]
        assert f"tg_{name}" in tg.ops[name].__doc__


def test_builtins_are_not_shadowed_inside_the_package():
    # all/any/abs/sum are ops; the package's own code must still see Python's
    assert tg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert tg.all(tg.tensor([True, True])).item() is True
    assert tg.any(tg.tensor([False, False])).item() is False


def test_arguments_of_every_kind():
    a = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    x = tg.tensor(a.tolist(), dtype=tg.float64)
    v, i = x.max_dim(1, True)                       # int, bool, a second output
    assert v.tolist() == [[5.0], [6.0]] and i.tolist() == [[1], [2]] and i.dtype == "i64"
    assert tg.cat([x, x], 0).shape == (4, 3)        # a sequence of tensors
    np.testing.assert_allclose(np.asarray(x.sum_dims([0, 1], keepdim=False)), a.sum())
    np.testing.assert_allclose(np.asarray(tg.roll(x, [1], [1])), np.roll(a, 1, 1))
    z = tg.zeros("f64", [2, 3])                     # an enum by name, a shape
    assert z.shape == (2, 3) and z.dtype == "f64"
    assert tg.zeros(tg.int64, (4,)).dtype == "i64"
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(x.softmax_dim(-1)), e / e.sum(1, keepdims=True))
    ce = tg.cross_entropy(x, tg.tensor([0, 2]), None, -100, 0.0, "mean")  # NULL, enum
    lse = np.log(np.exp(a).sum(1))
    assert ce.item() == pytest.approx(np.mean(lse - a[[0, 1], [0, 2]]), rel=1e-12)
    assert x.add_scalar(1).tolist() == (a + 1).tolist()
    y = x.detach()
    assert y.mul_(2.0) is y                         # in place: returns its operand
    np.testing.assert_allclose(np.asarray(x), 2 * a)  # a detached view shares memory


def test_bad_arguments_raise_before_the_library():
    x = tg.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="missing"):
        tg.clamp(x, 0.0)
    with pytest.raises(TypeError, match="unexpected"):
        tg.exp(x, dim=1)
    with pytest.raises(ValueError, match="reduction"):
        tg.mse_loss(x, x, "average")


def test_library_errors_name_the_op_and_this_line():
    x = tg.tensor([[1.0, 2.0, 3.0]])
    with pytest.raises(tg.TapegradError) as e:
        x.view([4])
    assert e.value.status_name == "TG_ERR_SHAPE"
    assert "tg_view" in str(e.value)
    y = tg.tensor([1.0, 2.0], requires_grad=True)
    h = y * 1.0
    s = (h * h).sum()
    h.scale_(2.0); line = sys._getframe().f_lineno  # noqa: E702
    with pytest.raises(tg.TapegradError) as e:
        s.backward()
    assert f"test_ops.py:{line}" in str(e.value) and "scale_" in str(e.value)


def test_tensors_made_for_the_call_live_through_it():
    # the generator's tensors have no other reference: they must outlive the C call
    a = tg.tensor([1.0, 2.0])
    out = tg.cat((x.exp() for x in [a, a]), 0)
    np.testing.assert_allclose(np.asarray(out), np.exp([1.0, 2.0, 1.0, 2.0]), rtol=1e-6)


def test_enums_by_short_or_c_name_and_docs_kept_whole():
    x = tg.tensor([1.0, 2.0])
    y = tg.tensor([2.0, 4.0])
    assert tg.mse_loss(x, y, "mean").item() == tg.mse_loss(x, y, "TG_REDUCTION_MEAN").item() == 2.5
    # another enum's C name, or a name that only ends like one, is refused
    for wrong in ("TG_GELU_NONE", "bogus_sum", "TG_REDUCTION_"):
        with pytest.raises(ValueError, match="is not a tg_reduction"):
            tg.mse_loss(x, y, wrong)
    assert "-1, 0 or 1" in tg.sign.__doc__
    # a section header's rule is not part of an op's doc
    assert "record op name and call site)\nt may be a view" in tg.add_.__doc__
    assert "----" not in tg.add_.__doc__


def test_no_method_where_pytorch_reads_the_arguments_otherwise():
    # x.where(cond, y) and x.var(dim) mean other things in PyTorch
    for name in ("where", "var", "std"):
        assert not hasattr(tg.Tensor, name) and callable(getattr(tg, name))


def test_fused_ops_refuse_an_unknown_impl():
    z = tg.tensor([[0.5, 1.0, -1.0]])
    y = tg.tensor([2])
    lp, h = tg.logprob_entropy(z, y, impl="composite")
    assert lp.item() == pytest.approx(-1.0 - np.log(np.exp([0.5, 1.0, -1.0]).sum()), rel=1e-6)
    with pytest.raises(ValueError, match="impl='chunked' is not one of fused, composite"):
        tg.logprob_entropy(z, y, impl="chunked")
    with pytest.raises(ValueError, match="impl"):
        tg.linear_logprob_entropy(z, tg.tensor([[1.0, 0.0, 0.0]]), y, impl="naive")


def test_fused_ops_take_lists_as_the_generated_ops_do():
    z, y = [[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], [2, 0]
    lp, h = tg.logprob_entropy(z, y)
    lp2, h2 = tg.logprob_entropy(tg.tensor(z), tg.tensor(y))
    assert lp.tolist() == lp2.tolist() and h.tolist() == h2.tolist()
    lpl, hl = tg.linear_logprob_entropy([[1.0, 0.0], [0.0, 1.0]], [[0.5, 2.0], [1.0, 0.0],
                                                                   [-1.0, 1.0]], y)
    assert lpl.shape == (2,) and hl.shape == (2,)
    with pytest.raises(TypeError, match="tapegrad.logprob_entropy: argument 'logits' must be a "
                                        "Tensor"):
        tg.logprob_entropy(object(), y)
    with pytest.raises(TypeError, match="linear_logprob_entropy: argument 'bias' must be a Tensor"):
        tg.linear_logprob_entropy([[1.0, 0.0]], [[0.5, 2.0]], [0], bias=object())
