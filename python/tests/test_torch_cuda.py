"""tapegrad.torch with CUDA tensors: values and gradients against the same
call on the CPU, work ordered on PyTorch's current stream (a side stream),
and the library's device memory taken from PyTorch's caching allocator.
Skipped where PyTorch has no GPU or the library no CUDA device; the
no-device behaviour of use_torch_allocator is checked everywhere."""
import contextlib

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
tt = pytest.importorskip("tapegrad.torch")
from tapegrad._lib import _C  # noqa: E402

HAVE_GPU = torch.cuda.is_available() and _C.cuda_device_count() > 0
gpu = pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU seen by both PyTorch and tapegrad")


@pytest.mark.skipif(HAVE_GPU, reason="a device is present")
def test_use_torch_allocator_without_a_device_says_why():
    with pytest.raises(tg.TapegradError) as e:
        tt.use_torch_allocator()
    assert e.value.status_name == "TG_ERR_DEVICE" and "tg_cuda_set_allocator" in str(e.value)


def _inputs(dev, dtype=torch.float32):
    g = torch.Generator().manual_seed(2)
    h = torch.randn(2, 64, 32, generator=g).to(dev, dtype).requires_grad_()
    w = (torch.randn(500, 32, generator=g) / 4).to(dev, dtype).requires_grad_()
    y = torch.randint(0, 500, (2, 64), generator=g)
    y[0, 3] = -100
    return h, w, y.to(dev)


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_matches_cpu_on_a_side_stream(dtype):
    outs = {}
    for dev in ("cpu", "cuda"):
        h, w, y = _inputs(dev, dtype)
        side = torch.cuda.Stream() if dev == "cuda" else None
        with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
            lp, ent = tt.linear_logprob_entropy(h, w, y, vocab_block=128)
            z = (h @ w.T).float()
            lp2, ent2 = tt.logprob_entropy(z, y)
            loss = -(lp.mean() + 0.01 * ent.mean() + lp2.mean())
            loss.backward()
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
        outs[dev] = [t.detach().float().cpu() for t in (lp, ent, lp2, h.grad, w.grad)]
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    for a, b in zip(outs["cpu"], outs["cuda"]):
        torch.testing.assert_close(b, a, rtol=tol, atol=tol)


@gpu
def test_library_memory_comes_from_pytorchs_allocator():
    h, w, y = _inputs("cuda")
    before = torch.cuda.memory_allocated()
    lp, ent = tt.linear_logprob_entropy(h, w, y)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() >= before + 2 * lp.numel() * 4
    assert tg.mem_stats("cuda")["live_total"] > 0
