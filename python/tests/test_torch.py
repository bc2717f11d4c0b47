"""Zero-copy with PyTorch through DLPack, both ways (skipped without torch)."""
import gc

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
tt = pytest.importorskip("tapegrad.torch")



def test_torch_reads_tapegrad_memory():
    t = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tg.float32)
    x = torch.utils.dlpack.from_dlpack(t.__dlpack__())
    assert x.data_ptr() == t.data_ptr() and x.shape == (2, 3)
    x[1, 2] = 60.0                      # torch writes; tapegrad reads it
    assert t.tolist()[1][2] == 60.0
    del t                               # torch's tensor keeps the memory
    gc.collect()
    assert x.sum().item() == 75.0
    del x


def test_tapegrad_reads_torch_memory():
    y = torch.arange(12, dtype=torch.float64).reshape(3, 4)[:, 1::2]
    t = tg.from_dlpack(torch.utils.dlpack.to_dlpack(y))
    assert t.data_ptr() == y.data_ptr() and t.stride() == (4, 2)
    assert t.tolist() == y.tolist()
    t *= 0.5                            # tapegrad writes; torch reads it
    assert y[2, 1].item() == 5.5
    del y                               # tapegrad's tensor keeps torch's memory
    gc.collect()
    assert t.sum().item() == pytest.approx(0.5 * (1 + 3 + 5 + 7 + 9 + 11))
    del t


def test_gradients_agree_with_torch():
    xs = [[0.3, -1.2, 2.0], [1.5, 0.1, -0.7]]
    x = tg.tensor(xs, dtype=tg.float64, requires_grad=True)
    (x.exp() * x).mean().backward()
    xt = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    (xt.exp() * xt).mean().backward()
    flat = [v for row in x.grad.tolist() for v in row]
    assert flat == pytest.approx(xt.grad.flatten().tolist(), rel=1e-13)


def test_torch_imported_after_tapegrad_still_multiplies():
    """Both OpenBLAS builds are libopenblas.so.0: the one loaded first serves
    the process. With the library's OpenMP build first, PyTorch's first
    threaded double GEMM waited forever; the package loads the system's
    build first (_lib._preload_system_blas)."""
    import subprocess
    import sys
    code = ("import tapegrad, torch, numpy as np\n"
            "a = torch.randn(48, 32, dtype=torch.float64)\n"
            "b = torch.randn(300, 32, dtype=torch.float64)\n"
            "c = a @ b.T\n"
            "x = np.random.rand(200, 300) @ np.random.rand(300, 100)\n"
            "print(c.shape[1] + x.shape[1])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "400", out.stderr


def test_the_library_records_the_users_line_not_pytorchs():
    """What the adapters build is called from autograd.Function.apply: call
    sites skip PyTorch's frames (a leak report names this file's line)."""
    import sys
    logits = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3])
    tg.step_mark("forward")
    lp, h = tt.logprob_entropy(logits, y); line = sys._getframe().f_lineno  # noqa: E702
    tg.step_mark("after")
    report = tg.leak_check()  # tapegrad's graph, kept until backward
    assert report.roots >= 1
    sites = {(e["file"].rsplit("/", 1)[-1], e["line"]) for e in report.entries}
    assert ("test_torch.py", line) in sites, report.text()
    (lp.sum() + h.sum()).backward()
    assert not tg.leak_check()


def test_wrong_inputs_are_a_type_error_naming_the_op_argument_and_dtypes():
    z, y = torch.zeros(2, 3), torch.zeros(2, dtype=torch.int64)
    cases = [
        (lambda: tt.logprob_entropy(z.long(), y), r"logprob_entropy: argument 'logits' must be "
                                                  r"float32, float64 or bfloat16, not torch.int64"),
        (lambda: tt.logprob_entropy(z.half(), y), r"'logits' must be float32.*not torch.float16"),
        (lambda: tt.logprob_entropy(z, y.int()), r"'targets' must be int64 \(torch.long\), not "
                                                 r"torch.int32"),
        (lambda: tt.logprob_entropy(None, y), r"'logits' must be a torch.Tensor, not NoneType"),
        (lambda: tt.logprob_entropy(z, None), r"'targets' must be a torch.Tensor, not NoneType"),
        (lambda: tt.linear_logprob_entropy(z, torch.zeros(4, 3).int(), y),
         r"linear_logprob_entropy: argument 'weight' must be float32"),
        (lambda: tt.linear_logprob_entropy(z, torch.zeros(4, 3), y, bias=torch.zeros(4).int()),
         r"argument 'bias' must be float32"),
        (lambda: tt.linear_logprob_entropy(z, torch.zeros(4, 3, dtype=torch.float64), y),
         r"hidden, weight and bias must be f32, f64 or bf16 of one dtype"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()
