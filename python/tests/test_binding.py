"""The binding as C code: what a call makes for itself lives through the
call, Python integers are range-checked and bools are bools, read-only and
foreign-byte-order memory is never written or misread, owners of lent memory
are let go without deadlock, bad arguments raise the Python exception
PyTorch raises, and Python's protocols (truth, ==, len, repr) mean what they
mean for a PyTorch tensor. Each case once crashed, hung or silently gave a
wrong answer."""
import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tapegrad as tg

np = pytest.importorskip("numpy")


def run_python(code: str, timeout: float = 60, cwd=None) -> subprocess.CompletedProcess:
    """code in a fresh interpreter with this package (a hang or a crash is
    the failure, not the test run's)."""
    env = dict(os.environ)
    root = Path(tg.__file__).resolve().parent.parent
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


# ---- temporaries made for a call ----------------------------------------------------------

def test_in_place_operators_with_numbers_and_lists():
    t = tg.tensor([1.0, 2.0])
    t += 1.0
    assert t.tolist() == [2.0, 3.0]
    t -= [1.0, 2.0]
    assert t.tolist() == [1.0, 1.0]
    t *= [[2.0], [3.0]][0]
    assert t.tolist() == [2.0, 2.0]
    i = tg.tensor([5, 7])
    i += 1
    assert i.tolist() == [6, 8] and i.dtype == "i64"


def test_every_operator_takes_numbers_and_lists_on_either_side():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype="f64")
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    for op in ("__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__radd__",
               "__rsub__", "__rmul__", "__rtruediv__", "__rpow__"):
        for other in (2.0, 3, [1.5, 2.5]):
            got = getattr(x, op)(other)
            want = getattr(a, op)(np.asarray(other, dtype=np.float64))
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-15, err_msg=f"{op} {other}")
            assert got.dtype == "f64"
    np.testing.assert_allclose((x @ [[1.0], [2.0]]).numpy(), a @ [[1.0], [2.0]])
    np.testing.assert_allclose(([[1.0, 2.0]] @ x).numpy(), [[1.0, 2.0]] @ a)


def test_python_numbers_take_the_tensors_dtype_as_in_pytorch():
    f64 = tg.tensor([1.0], dtype="f64")
    assert (f64 + 0.1).tolist() == [1.1]  # 0.1 in f64, never rounded to f32 first
    assert (f64 + [0.1]).tolist() == [1.1]
    assert (tg.tensor([1]) + 1.5).dtype == "f32"  # PyTorch's default dtype
    assert (tg.tensor([True]) + 1).dtype == "i64"
    assert (tg.tensor([1.0]) + 2).dtype == "f32"


def test_divide_and_power_assignments_write_the_tensor_itself():
    t = tg.tensor([2.0, 4.0])
    alias, view = t, t.numpy()
    t /= 2.0
    assert alias is t and view.tolist() == [1.0, 2.0]
    t **= 2
    assert alias is t and view.tolist() == [1.0, 4.0]
    u = tg.tensor([7.0, 9.0])
    v = u.numpy()
    u //= 2
    u %= 3
    assert v.tolist() == [0.0, 1.0]


# ---- integers, bools, None --------------------------------------------------------------------

def test_integers_out_of_range_raise_as_pytorch():
    x = tg.zeros("f32", [2, 3])
    with pytest.raises(IndexError, match="dim 4294967296 is out of range"):
        x.sum_dim(2**32, False)          # once: reduced dim 0
    with pytest.raises(IndexError):
        x.sum_dim(2**70, False)
    with pytest.raises(OverflowError):
        x.reshape([2**64 + 6])           # once: shape (6,)
    with pytest.raises(OverflowError):
        tg.tensor([2**63])               # once: wrapped negative
    assert tg.tensor([-2**63]).tolist() == [-2**63]
    with pytest.raises(OverflowError):
        x + 2**64                        # once: added 0
    with pytest.raises(OverflowError):
        tg.randn("f32", [2], -1, 0.0, 1.0)   # a negative seed for a uint64
    with pytest.raises(ValueError, match="cannot convert"):
        tg.tensor([float("nan")], dtype="i64")


def test_bools_are_bools():
    x = tg.tensor([[1.0, 2.0]])
    for bad in ("False", 1, None, 0.0):
        with pytest.raises(TypeError, match="'keepdim' must be a bool"):
            x.sum_dim(1, bad)            # "False" once counted as true
    with pytest.raises(TypeError):
        x.sum_dim(True, False)           # a bool is not a dim
    assert tg.tensor([0.5, 256, 0.0, float("nan")], dtype="bool").tolist() == [True, True,
                                                                              False, True]


def test_none_and_objects_where_a_tensor_is_needed():
    x = tg.tensor([1.0])
    with pytest.raises(TypeError, match=r"tapegrad.add: argument 'b' must be a Tensor.*not None"):
        tg.add(x, None)
    with pytest.raises(TypeError, match=r"argument 't' must be a Tensor.*not dict"):
        tg.exp({})
    with pytest.raises(TypeError):
        x + None
    assert (x == None) is False and (x != "a") is True  # noqa: E711: Python's identity rule
    assert tg.clamp_tensor(x, None, tg.tensor([0.5])).tolist() == [0.5]  # NULL where allowed


def test_dtypes_the_library_does_not_have_say_which_it_has():
    h = np.ones(3, dtype=np.float16)
    with pytest.raises(TypeError, match="float16 .*float32, float64, int64, bool"):
        tg.from_numpy(h)
    if hasattr(np, "from_dlpack"):
        with pytest.raises(TypeError, match="dtype int32 is not supported .*float32, float64, "
                                            "bfloat16, int64 and bool"):
            tg.from_dlpack(np.ones(3, dtype=np.int32))
    assert tg.tensor(h).dtype == "f32" and tg.tensor(h).tolist() == [1.0, 1.0, 1.0]
    assert tg.tensor(np.arange(3, dtype=np.int32)).dtype == "i64"


def test_dtype_names_as_pytorch_spells_them():
    assert tg.zeros("float64", [1]).dtype == "f64"
    assert tg.tensor([1], dtype="int64").dtype == "i64"
    with pytest.raises(ValueError, match="not a tapegrad dtype"):
        tg.zeros("float16", [1])


# ---- memory from NumPy: read-only, byte order, lifetimes --------------------------------------

def test_foreign_byte_order_is_refused_when_shared_and_converted_when_copied():
    for code in (">f4", ">f8", ">i8"):
        a = np.arange(4, dtype=code)
        with pytest.raises(ValueError, match="byte order"):
            tg.from_numpy(a)
        assert tg.tensor(a).tolist() == a.tolist()  # once read as little-endian garbage


def test_owners_released_inside_a_release_do_not_deadlock():
    out = run_python("""
        import numpy as np, tapegrad as tg
        a = np.arange(6.0)
        t = tg.from_numpy(tg.from_numpy(a).numpy())
        del t
        u = tg.from_numpy(np.from_dlpack(tg.tensor([1.0, 2.0])))
        del u
        import gc; gc.collect()
        print(tg.live_counts()["tensors"])
    """, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_an_unconsumed_capsule_in_a_cycle_at_exit():
    out = run_python("""
        import tapegrad as tg
        class Holder: pass
        h = Holder()
        h.me = h
        h.cap = tg.tensor([1.0, 2.0]).__dlpack__()
        print("ok")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ---- Python's protocols ------------------------------------------------------------------------

def test_truth_equality_length_and_conversions_as_pytorch():
    assert bool(tg.tensor(0.0)) is False and bool(tg.tensor([2.0])) is True
    for t, what in ((tg.tensor([1.0, 2.0]), "more than one value"),
                    (tg.zeros("f32", [0]), "no values")):
        with pytest.raises(RuntimeError, match=what):
            bool(t)
    eq = tg.tensor([1.0, 2.0]) == tg.tensor([1.0, 3.0])
    assert eq.dtype == "bool" and eq.tolist() == [True, False]
    assert (tg.tensor([1, 2]) < 2).tolist() == [True, False]
    assert len(tg.zeros("f32", [3, 2])) == 3
    with pytest.raises(TypeError, match="0-d"):
        len(tg.tensor(1.0))
    assert int(tg.tensor(2.7)) == 2 and float(tg.tensor([1.5])) == 1.5
    assert [10, 20, 30][tg.tensor(1)] == 20
    with pytest.raises(TypeError):
        [10][tg.tensor(0.0)]
    t = tg.tensor([1.0])
    assert {t: 1}[t] == 1  # hashable by identity, as PyTorch's


def test_empty_tensors_print_and_list():
    e = tg.zeros("f32", [2, 0])
    assert e.tolist() == [[], []]
    assert repr(e) == "tensor([[], []], dtype=f32, device=cpu)"
    assert tg.zeros("i64", [0, 3]).tolist() == []


# ---- reports ---------------------------------------------------------------------------------

def test_graph_names_must_match_the_roots():
    roots = [tg.tensor([1.0], requires_grad=True) * 2 for _ in range(40)]
    with pytest.raises(ValueError, match="6 names for 40 tensors"):
        tg.graph(*roots, names=[f"n{i}" for i in range(6)])
    dot = tg.graph(*roots[:3], names=["a", None, "c"]).dot
    assert '"a"' in dot or "a" in dot
    with pytest.raises(TypeError, match="root 1 is a float"):
        tg.graph(roots[0], 1.0)


def test_paths_with_a_nul_are_refused_not_cut(tmp_path):
    with tg.Timeline() as tl:
        tg.zeros("f32", [4])
    with pytest.raises(ValueError, match="null"):
        tl.write_trace(str(tmp_path / "a\0b.json"))
    assert not list(tmp_path.iterdir())


def test_names_that_are_not_utf8_keep_reports_readable():
    import ctypes
    lib = ctypes.CDLL("libtapegrad.so.0")  # the one the module loaded: a name set from C
    lib.tg_set_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.tg_set_name.restype = ctypes.c_void_p
    tg.step_mark("before")
    kept = tg.tensor([1.0], requires_grad=True) * 2
    lib.tg_set_name(kept._handle, b"loss\xff\xfe")
    tg.step_mark("after")
    report = tg.leak_check()
    assert report.roots == 1 and "loss\\xff\\xfe" in report.text()
    assert kept.name == "loss\\xff\\xfe" and "loss" in report.entries[0]["path"]
    del kept


def test_a_script_in_a_directory_that_is_not_utf8_can_call_ops(tmp_path):
    d = Path(os.fsdecode(bytes(tmp_path) + b"/dir\xff"))
    d.mkdir()
    script = d / "s.py"
    script.write_text("import tapegrad as tg\n"
                      "x = tg.tensor([1.0], requires_grad=True)\n"
                      "y = x * 2\n"
                      "y.mul_(3)\n"
                      "print((x + 1).tolist())\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(tg.__file__).resolve().parent.parent) + os.pathsep + \
        env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.fsencode(script)], capture_output=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == b"[2.0]"


def test_the_call_site_is_the_users_line():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    s = (h * h).sum()
    h.add_(1.0); line = sys._getframe().f_lineno  # noqa: E702
    with pytest.raises(tg.TapegradError) as e:
        s.backward()
    assert f"test_binding.py:{line}" in str(e.value)
    gc.collect()


def test_importing_tapegrad_loads_no_nccl():
    """The library looks NCCL up when a program hands it a communicator: loaded
    at import, the toolkit's copy would take the soname a PyTorch wheel's newer
    NCCL needs, and `import torch` after `import tapegrad` failed (undefined
    symbol ncclCommResume, PyTorch 2.15)."""
    out = run_python("""
        import tapegrad
        print(open("/proc/self/maps").read())
    """)
    assert out.returncode == 0, out.stderr
    assert "libnccl" not in out.stdout


# ---- hostile arguments: Python code running while a call converts its arguments -------------

def test_a_list_changed_while_its_items_convert():
    lst = [2, None, 3]

    class ClearsTheList:
        def __index__(self):
            lst.clear()  # once freed the array the binding was reading
            return 3

    lst[1] = ClearsTheList()
    assert tg.zeros("f32", lst).shape == (2, 3, 3)  # the items as they were at the call
    tensors = [tg.ones("f32", [1000]), None]

    class DropsATensor:
        def __float__(self):
            tensors[0] = 0.0  # once dropped the only reference to a handle the call held
            return 1.0

    tensors[1] = [DropsATensor()]
    r = tg.cat(tensors, 0)
    assert r.shape == (1001,) and r.sum().item() == 1001.0
    nested = [1.0, None, 3.0]

    class ClearsNested:
        def __float__(self):
            nested.clear()
            return 2.0

    nested[1] = ClearsNested()
    assert tg.tensor(nested).tolist() == [1.0, 2.0, 3.0]


def test_an_index_that_lets_go_of_itself_then_overflows():
    holder = []

    class Gone:
        def __index__(self):
            holder.clear()  # the last reference to self
            return 2**70

    holder.append(Gone())
    with pytest.raises(OverflowError, match="1180591620717411303424"):
        tg.zeros("f32", holder)


def test_a_code_filename_that_runs_code_while_the_site_is_taken():
    victims = [tg.ones("f32", [4])]

    class Name(str):
        def __hash__(self):
            victims.clear()  # ran inside the call site's lookup, after the conversion
            return str.__hash__(self)

        def __eq__(self, other):
            return str.__eq__(self, other)

    def f(lst):
        return tg.cat(lst, 0)

    f.__code__ = f.__code__.replace(co_filename=Name("/tmp/odd.py"))
    assert f(victims).tolist() == [1.0] * 4


# ---- the buffer protocol as asked ---------------------------------------------------------------

def test_buffers_are_given_only_in_the_layout_asked_for():
    expanded = tg.expand(tg.ones("f32", [1]), [64])
    with pytest.raises(TypeError):
        b"".join([expanded])  # contiguous bytes asked for: once read 256 bytes of 4
    t = tg.tensor([[1.0, 2.0], [3.0, 4.0]]).transpose(0, 1)
    with pytest.raises(TypeError):
        b"".join([t])  # once gave the memory's order, [1, 2, 3, 4]
    assert memoryview(t).tolist() == [[1.0, 3.0], [2.0, 4.0]]  # strides asked for: fine
    assert np.asarray(t).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    huge = tg.expand(tg.zeros("f64", [1, 1]), [2**30, 2**30])
    with pytest.raises(BufferError, match="overflow"):
        memoryview(huge)


def test_indirect_buffers_and_wrong_item_sizes_are_refused():
    _testbuffer = pytest.importorskip("_testbuffer")
    x = _testbuffer.ndarray([float(i) for i in range(12)], shape=[3, 4], format="d",
                            flags=_testbuffer.ND_PIL | _testbuffer.ND_WRITABLE)
    with pytest.raises(ValueError, match="indirect"):
        tg._C.from_buffer(x)  # once shared the row pointers as floats
    with pytest.raises(BufferError):
        tg.tensor(x)


def test_in_place_operators_refuse_what_pytorch_refuses_to_cast():
    for make, op in ((lambda: tg.tensor([3, 4]), lambda t: t.__itruediv__(2)),
                     (lambda: tg.tensor([3, 4]), lambda t: t.__ipow__(2.5)),
                     (lambda: tg.tensor([3, 4]), lambda t: t.__imod__(2.5)),
                     (lambda: tg.tensor([True, False]), lambda t: t.__ifloordiv__(2))):
        t = make()
        before = t.tolist()
        with pytest.raises(RuntimeError, match="can't be cast"):
            op(t)
        assert t.tolist() == before  # nothing written
    t = tg.tensor([7, 9])
    t //= 2
    assert t.tolist() == [3, 4] and t.dtype == "i64"


def test_grad_fn_of_a_stale_no_grad_view_raises_as_pytorch():
    base = tg.tensor([1.0, 2.0], requires_grad=True) * 1.0
    with tg.no_grad():
        v = base.narrow(0, 0, 1)
    base.mul_(2.0)
    with pytest.raises(tg.TapegradError):
        v.grad_fn  # once None, with the error left pending


def test_dlpack_export_of_a_tensor_that_requires_grad_is_refused():
    t = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        t.__dlpack__()
    assert t.detach().__dlpack__() is not None


def test_numbers_and_arrays_keep_their_precision():
    assert tg.tensor([np.float64(0.1)]).dtype == "f64"
    assert tg.tensor([np.float64(0.1)]).tolist() == [0.1]
    assert (tg.tensor([1.0]) + np.array([0.1])).dtype == "f64"  # an array keeps its dtype
    assert (tg.tensor([1.0]) + np.longdouble(0.5)).tolist() == [1.5]
    assert tg.tensor([tg.tensor(1.0), tg.tensor([2.0])]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="one-element"):
        tg.tensor([tg.tensor([1.0, 2.0])])


def test_enum_names_with_a_nul_are_not_names():
    x = tg.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="is not a tg_reduction"):
        tg.mse_loss(x, x, "mean\0x")


# ---- read-only memory ---------------------------------------------------------------------------

def test_read_only_memory_is_never_written(tmp_path):
    immutable = bytes(np.arange(4, dtype=np.float32).tobytes())
    t = tg.from_numpy(np.frombuffer(immutable, np.float32))
    for write in (lambda: t.fill_(9.0), lambda: t.add_(1.0), lambda: t.__iadd__(1.0),
                  lambda: t.__itruediv__(2.0), lambda: t.copy_(tg.zeros("f32", [4]))):
        with pytest.raises(tg.ReadOnlyError, match="read-only"):
            write()  # once rewrote an immutable bytes object
    assert immutable == np.arange(4, dtype=np.float32).tobytes()
    assert (t + 1).tolist() == [1.0, 2.0, 3.0, 4.0]  # read as any other
    a = np.arange(3.0)
    a.flags.writeable = False
    u = tg.from_numpy(a)
    with pytest.raises(ValueError):  # ReadOnlyError is a ValueError, as NumPy's
        u *= 2
    view = u.numpy()
    assert not view.flags.writeable  # once came back writable
    with pytest.raises(BufferError):
        u.__dlpack__()  # DLPack cannot say read-only
    path = tmp_path / "m.bin"
    np.arange(8, dtype=np.float64).tofile(path)
    mm = np.memmap(path, dtype=np.float64, mode="r")
    m = tg.from_numpy(mm)
    with pytest.raises(tg.ReadOnlyError):
        m.mul_(2.0)  # once a segfault
    assert m.sum().item() == 28.0
    del m, mm


def test_integers_to_negative_python_int_powers_are_refused_as_pytorch():
    with pytest.raises(RuntimeError, match="negative integer powers"):
        tg.tensor([3]) ** -1
    t = tg.tensor([3])
    with pytest.raises(RuntimeError, match="negative integer powers"):
        t **= -2
    assert t.tolist() == [3] and (tg.tensor([3]) ** tg.tensor(-1)).tolist() == [0]
