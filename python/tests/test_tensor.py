"""The Python door: values, autograd, errors, and memory shared with NumPy
and PyTorch (zero-copy both ways, with the lifetime rules)."""
import gc

import pytest

import tapegrad as tg

np = pytest.importorskip("numpy")



def test_the_installed_package_is_the_one_tested():
    import os
    from pathlib import Path
    sources = Path(__file__).resolve().parents[1] / "tapegrad"
    here = Path(tg.__file__).resolve().parent
    if os.environ.get("TAPEGRAD_TEST_INSTALLED"):  # scripts/test-python.sh: pip's copy
        assert here != sources
        assert tg._C.__file__.startswith(str(here))  # the module and library in the wheel
        assert any(p.name.startswith("libtapegrad.so") for p in here.iterdir())


def test_values_and_gradients_match_numpy():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tg.float64, requires_grad=True)
    w = tg.tensor([[0.5], [-1.0]], dtype=tg.float64, requires_grad=True)
    y = ((x @ w).tanh() * 2 + 1).sum()
    y.backward()
    xn, wn = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5], [-1.0]])
    z = xn @ wn
    assert y.item() == pytest.approx((np.tanh(z) * 2 + 1).sum(), rel=1e-13)
    dz = 2 * (1 - np.tanh(z) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), dz @ wn.T, rtol=1e-13)
    np.testing.assert_allclose(w.grad.numpy(), xn.T @ dz, rtol=1e-13)
    assert x.grad_fn is None and y.grad_fn is not None


def test_no_grad_and_detach():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        y = x * 3
    assert not y.requires_grad
    d = x.detach()
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()


def test_errors_carry_the_status_and_the_python_line():
    a, b = tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(tg.TapegradError) as e:
        a + b
    assert e.value.status_name == "TG_ERR_SHAPE"
    assert "tg_add" in str(e.value)
    # an in-place edit of a saved tensor: the message names the op and this file's line
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = (h * h).sum()
    h *= 2.0
    with pytest.raises(tg.TapegradError) as e:
        y.backward()
    assert e.value.status_name == "TG_ERR_INPLACE"
    assert "test_tensor.py:" in str(e.value) and "mul_ at" in str(e.value)


def test_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tg.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data and t.shape == (2, 3)
    t *= 2.0                     # the library writes the array
    assert a[1, 2] == 10.0
    a[0, 0] = -1.0               # NumPy writes; the tensor reads it
    assert t.tolist()[0][0] == -1.0
    v = t.numpy()                # and back: NumPy's view of the tensor
    assert v.ctypes.data == a.ctypes.data
    v[0, 1] = 7.0
    assert a[0, 1] == 7.0
    # strided: a transposed, sliced array, without a copy
    b = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2].T
    tb = tg.from_numpy(b)
    assert tb.stride() == (2, 4) and tb.tolist() == b.tolist()
    assert tg.mem_stats()["live"]["external"] >= a.nbytes


def test_numpy_lifetimes():
    # the array dies first: the tensor keeps its memory alive
    a = np.ones(1000, dtype=np.float64)
    t = tg.from_numpy(a)
    del a
    gc.collect()
    assert t.sum().item() == 1000.0
    # the tensor dies first: NumPy's view keeps the tensor alive
    u = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    view = u.numpy()
    del u
    gc.collect()
    assert view.tolist() == [1.0, 2.0, 3.0]
    del view, t


def test_a_write_from_numpy_is_refused_once_declared():
    a = np.array([1.0, 2.0], dtype=np.float64)
    t = tg.from_numpy(a).requires_grad_()
    y = (t * t).sum()
    a[0] = 5.0
    t.mark_modified("a numpy write")
    with pytest.raises(tg.TapegradError) as e:
        y.backward()
    assert "a numpy write" in str(e.value)


def test_dlpack_with_numpy():
    if not hasattr(np, "from_dlpack"):
        pytest.skip("this NumPy has no from_dlpack")
    t = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr()
    b = np.arange(4, dtype=np.int64)
    u = tg.from_dlpack(b)
    assert u.data_ptr() == b.ctypes.data and u.tolist() == [0, 1, 2, 3]
    del a, u


def test_bad_inputs_raise_cleanly():
    with pytest.raises(TypeError):
        tg.from_numpy(np.zeros(3, dtype=np.int8))
    with pytest.raises(TypeError):
        tg.from_dlpack(object())
    with pytest.raises(ValueError):
        tg.tensor([[1.0], [2.0, 3.0]])


def test_reset_peak_and_empty_cache():
    t = tg.zeros("f32", [1024, 256])
    del t
    tg.reset_peak()
    m = tg.mem_stats()
    assert m["peak_total"] == m["live_total"]
    tg.empty_cache()
    tg.empty_cache("cuda")  # without a device: nothing to give back, not an error
    # a device name that is neither: refused, not taken for the CPU
    for bad in ("gpu", "cuda:0", "CPU0"):
        for f in (tg.mem_stats, tg.reset_peak, tg.empty_cache):
            with pytest.raises(ValueError, match="is not a tg_device"):
                f(bad)


def test_item_of_integers_is_exact_and_needs_one_element():
    assert tg.tensor([2**62 + 1], dtype="i64").item() == 2**62 + 1
    assert tg.tensor(True, dtype="bool").item() is True
    with pytest.raises(tg.TapegradError):
        tg.tensor([1, 2], dtype="i64").item()
