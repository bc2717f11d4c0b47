"""Tensors shared between Python threads, as PyTorch allows: the binding
lets go of the GIL around library calls, so these run concurrently in the
library. Reference counts, views and detached copies of shared tensors,
memory lent by NumPy and released from any thread, and backward from
several threads into one leaf (every gradient accumulated, none lost).
The values are small integers, so every sum is exact whatever the order.
Under ASan (make test-asan) a race on the library's bookkeeping is a
reported error."""
import threading

import pytest

import tapegrad as tg

np = pytest.importorskip("numpy")

THREADS = 4


def run_threads(fn, n=THREADS):
    errors = []
    barrier = threading.Barrier(n)

    def body(k):
        try:
            barrier.wait()
            fn(k)
        except BaseException as e:  # noqa: B036 - reported by the test
            errors.append(e)

    ts = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def test_backward_from_threads_into_one_leaf():
    w = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype="f64", requires_grad=True)
    steps = 200

    def step(k):
        x = tg.tensor([[1.0, float(k)]], dtype="f64")
        for _ in range(steps):
            (x @ w).sum().backward()

    run_threads(step)
    # d/dw sum(x @ w) = x^T 1: rows 1 and k, summed over every step of every thread
    want = [[THREADS * steps] * 2, [steps * sum(range(THREADS))] * 2]
    assert w.grad.tolist() == want


def test_shared_tensors_retained_viewed_and_released_from_threads():
    base = tg.tensor(np.arange(24.0).reshape(4, 6), requires_grad=True)
    shared = base * 1.0

    def churn(k):
        for i in range(300):
            v = shared.transpose(0, 1).narrow(0, k % 6, 1)
            d = shared.detach()
            s = (v * 2.0).sum() + d.sum_dim(0, False).sum()
            assert s.item() == 2 * sum(range(k % 6, 24, 6)) + sum(range(24))
            del v, d, s

    run_threads(churn)
    assert tg.live_counts()["nodes"] >= 1  # shared's graph is intact
    shared.sum().backward()
    assert base.grad.tolist() == [[1.0] * 6] * 4


def test_lent_memory_released_from_threads():
    arrays = [np.full(8, float(k)) for k in range(THREADS)]

    def lend(k):
        for _ in range(200):
            t = tg.from_numpy(arrays[k])
            u = tg.from_numpy(t.numpy())  # the owner of u's memory holds t
            assert (u + t).sum().item() == 16.0 * k
            del t, u

    run_threads(lend)
    tg._C._drain()
    import gc
    gc.collect()
    assert all(a.tolist() == [float(k)] * 8 for k, a in enumerate(arrays))


def test_grad_read_while_other_threads_accumulate():
    w = tg.tensor([1.0, 1.0], dtype="f64", requires_grad=True)

    def work(k):
        for _ in range(300):
            if k == 0:
                g = w.grad
                assert g is None or g.tolist()[0] == g.tolist()[1]  # never a torn update
            else:
                (w * 3.0).sum().backward()

    run_threads(work)
    assert w.grad.tolist() == [3.0 * 300 * (THREADS - 1)] * 2
