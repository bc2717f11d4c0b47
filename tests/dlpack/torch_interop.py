#!/usr/bin/env python3
"""tests/dlpack/torch_interop.py LIBTAPEGRAD - DLPack both ways with PyTorch.

Loads the shared library with ctypes and checks that tapegrad's DLPack
structs are what PyTorch reads and writes (torch.utils.dlpack, the
"dltensor" capsule): tapegrad -> torch and torch -> tapegrad for f32, f64,
i64, bool and strided tensors share memory (a write on one side is seen on
the other), and each producer's deleter runs when the consumer is done
(tapegrad's live count returns to zero). Prints one line per check; exit 0,
1 on a failure, 77 without torch (the CTest skip code). PyTorch before 2.0
has no bool in DLPack: bool is then left out (and said so).
"""
import ctypes
import sys

try:
    import torch
    import torch.utils.dlpack as tdl
except ImportError:
    print("dlpack_torch: skipped: no torch")
    sys.exit(77)

class Site(ctypes.Structure):  # tg_site, passed by value to the *_at functions
    _fields_ = [("file", ctypes.c_char_p), ("line", ctypes.c_int)]


class Live(ctypes.Structure):  # tg_live_counts
    _fields_ = [("tensors", ctypes.c_int64), ("storages", ctypes.c_int64),
                ("nodes", ctypes.c_int64)]


HERE = Site(b"tests/dlpack/torch_interop.py", 1)
lib = ctypes.CDLL(sys.argv[1])
vp, i64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
lib.tg_from_data_at.restype = vp
lib.tg_from_data_at.argtypes = [Site, ctypes.c_int, ctypes.c_int, i64p, vp]
lib.tg_to_dlpack.restype = vp
lib.tg_to_dlpack.argtypes = [vp]
lib.tg_from_dlpack_at.restype = vp
lib.tg_from_dlpack_at.argtypes = [Site, vp]
lib.tg_release.argtypes = [vp]
lib.tg_data.restype = vp
lib.tg_data.argtypes = [vp]
lib.tg_copy_out.argtypes = [vp, ctypes.c_int, vp, ctypes.c_size_t]
lib.tg_copy_out.restype = ctypes.c_int
lib.tg_transpose_at.restype = vp
lib.tg_transpose_at.argtypes = [Site, vp, ctypes.c_int, ctypes.c_int]
lib.tg_live.restype = Live
lib.tg_last_error.restype = ctypes.c_char_p

capi = ctypes.pythonapi
capi.PyCapsule_New.restype = ctypes.py_object
capi.PyCapsule_New.argtypes = [vp, ctypes.c_char_p, vp]
capi.PyCapsule_GetPointer.restype = vp
capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

TG = {"f32": 0, "f64": 1, "i64": 2, "bool": 3}
try:  # PyTorch before 2.0 has no bool in DLPack ("Bool type is not supported")
    tdl.to_dlpack(torch.zeros(1, dtype=torch.bool))
    DTYPES = ("f32", "f64", "i64", "bool")
except RuntimeError:
    DTYPES = ("f32", "f64", "i64")
    print(f"note: PyTorch {torch.__version__} has no bool in DLPack: bool not checked")
TORCH = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "bool": torch.bool}
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def tg_tensor(values, dt, shape):
    t = torch.tensor(values, dtype=TORCH[dt]).reshape(shape).contiguous()
    arr = (ctypes.c_int64 * len(shape))(*shape)
    return lib.tg_from_data_at(HERE, TG[dt], len(shape), arr, ctypes.c_void_p(t.data_ptr()))


def tg_values(t, n):
    out = (ctypes.c_double * n)()
    assert lib.tg_copy_out(t, 1, out, ctypes.sizeof(out)) == 0, lib.tg_last_error()
    return list(out)


live0 = lib.tg_live().tensors
for dt in DTYPES:
    vals = [1, 0, 3, 0, 5, 6] if dt != "bool" else [1, 0, 1, 0, 0, 1]
    t = tg_tensor(vals, dt, (2, 3))
    tt = lib.tg_transpose_at(HERE, t, 0, 1)  # strided: (3, 2), strides (1, 3)
    cap = capi.PyCapsule_New(lib.tg_to_dlpack(tt), b"dltensor", None)
    x = tdl.from_dlpack(cap)
    want = torch.tensor(vals, dtype=TORCH[dt]).reshape(2, 3).t()
    check(x.dtype == TORCH[dt] and x.shape == (3, 2) and x.stride() == (1, 3)
          and torch.equal(x, want), f"tapegrad -> torch {dt}: dtype, shape, strides, values")
    check(x.data_ptr() == lib.tg_data(tt), f"tapegrad -> torch {dt}: same memory")
    lib.tg_release(tt)
    lib.tg_release(t)
    if dt in ("f32", "f64"):
        x[0, 1] = 42  # torch writes; tapegrad's storage (held by the export) sees it
    del x, cap  # torch calls the export's deleter: tapegrad's reference goes
check(lib.tg_live().tensors == live0, "exports released when torch is done")

for dt in DTYPES:
    y = torch.arange(12).reshape(3, 4).to(TORCH[dt])[:, 1::2]  # (3, 2), strides (4, 2)
    cap = tdl.to_dlpack(y)
    ptr = capi.PyCapsule_GetPointer(cap, b"dltensor")
    t = lib.tg_from_dlpack_at(HERE, ptr)
    if not t:
        check(False, f"torch -> tapegrad {dt}: {lib.tg_last_error().decode()}")
        continue
    capi.PyCapsule_SetName(cap, b"used_dltensor")  # tapegrad owns it now, as consumers do
    check(lib.tg_data(t) == y.data_ptr(), f"torch -> tapegrad {dt}: same memory")
    check(tg_values(t, 6) == [float(v) for v in y.flatten().tolist()],
          f"torch -> tapegrad {dt}: values through the strides")
    if dt == "f64":
        y[2, 1] = -1.0
        check(tg_values(t, 6)[5] == -1.0, "torch -> tapegrad f64: torch's write is seen")
    lib.tg_release(t)  # tapegrad calls torch's deleter
    del cap
check(lib.tg_live().tensors == live0, "imports released")
sys.exit(1 if failures else 0)
