"""tapegrad.torch.leak_check / watch_steps on PyTorch's own graphs: the
retained-loss story (Fast-LLM #486, examples/python/torch_retained_loss.py)
named by its holder with its path and bytes (the storages summed here, and
the C allocator's growth), its growth per step, every kind of holder, the
fixes reporting nothing, and a correct training loop reporting nothing over
100 steps."""
import ctypes
import gc
import json
import os
import subprocess
import sys
import weakref

import pytest

torch = pytest.importorskip("torch")
import tapegrad.torch as tt  # noqa: E402

from audit_stories import example, storage_bytes  # noqa: E402

story = example("torch_retained_loss")
N, V = 64, 500
PER = 2 * N * V * 4 + 4  # the leaf logits, their .grad, the loss itself
CHAIN = ["NegBackward0", "MeanBackward0", "SqueezeBackward1", "GatherBackward0",
         "LogSoftmaxBackward0", "leaf"]


def scope_of(fn):
    code = fn.__code__
    p, cwd = code.co_filename, os.getcwd()
    if p.startswith(cwd + os.sep):
        p = os.path.relpath(p, cwd)
    return f"local of {code.co_name}() at {p}:{code.co_firstlineno}"


def kept_storages(loss):
    """What a kept loss holds, counted from PyTorch's own objects: its own
    storage, and the leaf behind its graph with its gradient."""
    node = loss.grad_fn
    while node.name() != "torch::autograd::AccumulateGrad":
        node = node.next_functions[0][0]
    leaf = node.variable
    return storage_bytes(loss) + storage_bytes(leaf) + storage_bytes(leaf.grad)


def microbatches(losses, keep="loss", micro=3, n=N, v=V):
    for k in range(micro):
        loss = story.microbatch(k, n, v)
        losses.append({"loss": loss, "detach": loss.detach(), "item": loss.item()}[keep])


def test_kept_losses_are_named_with_their_path_and_bytes():
    losses = []
    microbatches(losses)
    report = tt.leak_check()
    assert bool(report) and report.roots == 3
    assert [e["holder"] for e in report.entries] == ["losses[0]", "losses[1]", "losses[2]"]
    for k, e in enumerate(report.entries):
        assert e["container"] == "losses" and e["kind"] == "list"
        assert e["scope"] == scope_of(test_kept_losses_are_named_with_their_path_and_bytes)
        assert e["chain"] == CHAIN
        assert e["path"] == (f'root "losses[{k}]" (f32 []) -> ' + " -> ".join(CHAIN[:-1])
                             + " -> leaf f32 [64, 500] (125.0 KiB, .grad 125.0 KiB)")
        assert e["bytes"] == kept_storages(losses[k]) == PER
        assert e["nodes"] == 5 and e["nodes_with_saved"] == 0 and e["saved_bytes"] == 0
    assert report.kept_bytes == 3 * PER
    assert report.holders == [{
        "holder": f"the list `losses` ({e['scope']})", "container": "losses",
        "scope": e["scope"], "graphs": 3, "bytes": 3 * PER,
        "roots": ["losses[0]", "losses[1]", "losses[2]"]}]
    text = report.text()
    assert text.startswith("15 graph nodes alive, keeping 750.0 KiB, held by 3 roots:")
    assert f"the list `losses` ({e['scope']}) keeps 3 graphs, 750.0 KiB" in text
    assert "fix: keep a detached copy for logging (loss.detach(), or loss.item()" in text


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks",
                                                "keepcost")]


def allocated():
    """Bytes the C allocator has handed out (glibc's mallinfo2): PyTorch's CPU
    tensors come from it."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("no mallinfo2 (glibc >= 2.33)")
    libc.mallinfo2.restype = _Mallinfo2

    def in_use():
        m = libc.mallinfo2()
        return m.uordblks + m.hblkhd

    # Under AddressSanitizer malloc is ASan's and mallinfo2 reports nothing:
    # probe with a block of our own and skip when it is not seen.
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    probe_size = 4 << 20
    before = in_use()
    probe = libc.malloc(probe_size)
    seen = in_use() - before
    libc.free(probe)
    if seen < probe_size:
        pytest.skip("this process's malloc is not glibc's (a sanitizer?): "
                    "mallinfo2 does not see its blocks")
    return in_use()


def test_kept_bytes_agree_with_the_allocators_growth():
    gc.collect()
    base = allocated()
    losses = []
    microbatches(losses, n=256, v=8000)  # 16 MiB a microbatch
    gc.collect()
    grown = allocated() - base
    report = tt.leak_check()
    assert report.kept_bytes == 3 * (2 * 256 * 8000 * 4 + 4)
    assert abs(grown - report.kept_bytes) <= 0.01 * report.kept_bytes


def test_watch_steps_shows_the_growth_step_by_step():
    losses = []
    with tt.watch_steps() as w:
        reports = []
        for k in range(5):
            losses.append(story.microbatch(k, N, V))
            reports.append(w.step())
    # a graph is reported once it outlived a step: the loss of the step just ended
    # is only reported at the next one (a loop's `loss`, rebound each step, never is)
    assert [r.kept_bytes for r in reports] == [k * PER for k in range(5)]
    assert [[e["holder"] for e in r.entries] for r in reports] == \
        [[f"losses[{i}]" for i in range(k)] for k in range(5)]
    assert [e["first_step"] for e in reports[-1].entries] == [0, 1, 2, 3]
    assert w.history == [(k, k * PER, k) for k in range(5)]
    assert reports[-1].growth == w.growth == PER and reports[-1].growth_steps == 4
    assert reports[-1].text().endswith(
        "memory kept by graphs grew at each of the last 4 steps: +250.0 KiB per step")
    assert w.reports == reports[1:] and w.report is reports[-1]


def test_step_mark_ends_the_step_of_the_active_watchers():
    assert tt.step_mark() is None
    kept = []
    with tt.watch_steps() as w:
        for k in range(3):
            kept.append(story.microbatch(k, N, V))
            r = tt.step_mark()
    assert w.steps == 3 and r is w.report and [e["holder"] for e in r.entries] == \
        ["kept[0]", "kept[1]"]


@pytest.mark.parametrize("keep", ["detach", "item"])
def test_detach_or_item_reports_nothing(keep):
    losses = []
    with tt.watch_steps() as w:
        for k in range(4):
            microbatches(losses, keep, micro=1)
            assert not w.step()
    report = tt.leak_check()
    assert not report and report.entries == [] and report.kept_bytes == 0
    assert report.text() == "no autograd graph is kept alive by a reference the program holds"


def test_an_entropy_logged_with_its_graph_keeps_its_saved_tensors():
    """Stories 1 and 3 at once (torch_entropy_at_zero.py's composition): the
    entropy kept for logging with its graph, outside the loss: backward never
    runs through it, so its nodes still hold the probabilities and the
    log-probs."""
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(N, V, generator=g).requires_grad_()
    targets = torch.randint(0, V, (N,), generator=g)
    metrics = {}
    logp = torch.log_softmax(logits, -1)
    loss = -logp.gather(-1, targets[:, None]).mean()
    probs = torch.softmax(logits, -1)
    metrics["entropy"] = -(probs * logp).sum(-1).mean()  # logged, its graph kept
    loss.backward()
    del logp, probs, loss
    (e,) = tt.leak_check().entries
    assert e["holder"] == "metrics['entropy']" and e["nodes_with_saved"] == 2
    # the probabilities and the log-probs (N V 4 each), and the entropy itself; the
    # logits are a local of this test (held elsewhere)
    assert e["saved_bytes"] == 2 * N * V * 4 and e["bytes"] == 2 * N * V * 4 + 4
    assert "saved tensors still live: backward never ran through them" in tt.leak_check().text()


KEPT = []


class Trainer:
    def __init__(self):
        self.metrics = {}

    def step(self):
        x = torch.ones(10, 10, requires_grad=True)
        self.metrics["loss"] = (x * 2).sin().sum()  # a graph backward never ran through
        return tt.leak_check(thorough=False)


def test_holders_a_dict_entry_a_closure_a_global_a_generator():
    report = Trainer().step()
    (e,) = report.entries
    assert e["holder"] == "self.metrics['loss']" and e["container"] == "self.metrics"
    assert e["kind"] == "dict" and e["scope"] == scope_of(Trainer.step)
    # backward never ran: x*2 saved by SinBackward0 (400 B) and the number 2 saved by
    # MulBackward0 (a float64 scalar, 8 B) are still there; the leaf x is a local of the
    # running step() (held elsewhere: not counted); the loss itself, 4 B
    assert e["nodes_with_saved"] == 2 and e["saved_bytes"] == 408 and e["bytes"] == 412
    assert e["path"] == ('root "self.metrics[\'loss\']" (f32 []) -> SumBackward0 -> '
                         "SinBackward0 (saved: self f32 [10, 10], 400 B in all)")

    def make_logger():
        kept = []
        return lambda loss: kept.append(loss)

    log = make_logger()
    log((torch.ones(3, requires_grad=True) * 2).sum())
    KEPT.append((torch.ones(4, requires_grad=True) * 3).sum())

    def gen():
        held = (torch.ones(5, requires_grad=True) * 4).sum()
        yield 1
        del held

    g = gen()
    next(g)
    try:
        holders = {e["holder"]: e for e in tt.leak_check().entries}
        assert set(holders) == {"log.<closure kept>[0]", "KEPT[0]", "g.<local held>"}
        assert holders["KEPT[0]"]["scope"] == f"global of module {__name__}"
        assert holders["log.<closure kept>[0]"]["container"] == "log.<closure kept>"
        assert holders["g.<local held>"]["kind"] == "generator"
    finally:
        KEPT.clear()


class _Anchor:
    pass


def test_a_holder_no_frame_reaches_is_found_by_the_collector_pass():
    anchor = _Anchor()
    # the list is held by weakref.finalize's registry only (the standard library's)
    fin = weakref.finalize(anchor, lambda kept: None, [(torch.ones(6, requires_grad=True)
                                                        * 5).sum()])
    try:
        assert not tt.leak_check(thorough=False)
        (e,) = tt.leak_check().entries
        assert e["holder"] == "<unreached>"
        assert e["scope"].startswith("a list that no frame or module of the program reaches")
        assert e["chain"] == ["SumBackward0", "MulBackward0", "leaf"]
    finally:
        fin.detach()


def test_a_graph_only_a_running_functions_variable_holds_is_listed_apart():
    loss = story.microbatch(0, N, V)
    report = tt.leak_check()
    scope = scope_of(test_a_graph_only_a_running_functions_variable_holds_is_listed_apart)
    assert not report and report.in_frames == [f"`loss` ({scope})"]
    assert report.text() == (
        "no autograd graph is kept alive by a reference the program holds\n(not reported: 1 "
        "graph only variables of running functions hold, gone when they are rebound or the "
        f"function returns: `loss` ({scope}))")
    (e,) = tt.leak_check(frame_locals=True).entries
    assert e["holder"] == "loss" and e["container"] is None and e["bytes"] == PER
    del loss


def test_a_node_held_directly_and_the_report_formats():
    fn = (torch.ones(8, requires_grad=True) * 2).exp().grad_fn
    report = tt.leak_check(frame_locals=True)
    (e,) = report.entries
    assert e["holder"] == "fn" and e["shape"] == "graph node" and e["chain"][0] == "ExpBackward0"
    assert json.loads(report.json())["roots"][0]["holder"] == "fn"
    assert report.dot.startswith("digraph tapegrad {") and '"fn\\ngraph node' in report.dot
    html = report._repr_html_()
    assert "<svg" in html and "<pre>" in html and "ExpBackward0" in html
    del fn


def test_parameters_the_program_holds_are_not_counted():
    model = torch.nn.Linear(300, 200)
    kept = []
    for _ in range(2):
        loss = model(torch.ones(4, 300)).pow(2).sum()
        loss.backward()
        kept.append(loss)
    report = tt.leak_check()
    # the weight and bias (and their .grad) are the model's; each graph keeps its loss
    # and nothing else (backward freed what the nodes saved)
    assert {e["holder"]: e["bytes"] for e in report.entries} == {"kept[0]": 4, "kept[1]": 4}


def correct_loop(steps, check):
    """A correct training loop: a model, an optimizer, the loss logged with
    .item(), gradient accumulation over microbatches, retain_graph on purpose
    (two losses through one trunk); ``check()`` after every step."""
    torch.manual_seed(0)
    trunk = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(inplace=True))
    heads = torch.nn.ModuleList([torch.nn.Linear(32, 4), torch.nn.Linear(32, 1)])
    opt = torch.optim.Adam([*trunk.parameters(), *heads.parameters()], lr=1e-3)
    log = []
    for _ in range(steps):
        opt.zero_grad()
        for _micro in range(2):
            h = trunk(torch.randn(8, 16))
            loss = torch.nn.functional.cross_entropy(heads[0](h), torch.randint(0, 4, (8,)))
            aux = heads[1](h).pow(2).mean()
            loss.backward(retain_graph=True)  # the trunk's graph, once more for aux
            aux.backward()
            log.append(loss.item())
        opt.step()
        check()
    return log


def test_a_correct_loop_reports_nothing_over_100_steps():
    with tt.watch_steps() as w:
        correct_loop(100, lambda: w.step())
    assert w.steps == 100 and w.reports == [] and w.growth == 0


def test_a_correct_loop_under_every_tool_at_once():
    with tt.watch_steps(thorough=True) as w, tt.inplace_guard(), tt.track_saved() as t:
        correct_loop(10, lambda: w.step())
    assert w.reports == [] and t.zero_grad_bytes == 0
    assert t.report().backward_ran


def test_importing_installs_nothing():
    """Importing tapegrad.torch installs no hook and no mode: PyTorch's own
    version error comes out unchanged, no dispatch mode is active, no
    saved-tensor hook packs anything (checked in a fresh interpreter)."""
    code = r"""
import torch, tapegrad.torch
from torch.utils._python_dispatch import TorchDispatchMode
x = torch.ones(3, requires_grad=True)
h = x * 2
y = (h * h).sum()
h.add_(1)
try:
    y.backward()
except RuntimeError as e:
    assert "saved by" not in str(e) and "is at version 1; expected version 0" in str(e), e
seen = []
class Probe(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        seen.append(str(func))
        return func(*args, **(kwargs or {}))
with Probe():
    (torch.ones(2, requires_grad=True) * 3).sum()
assert all("detach" not in s for s in seen), seen   # no pack hook ran behind the ops
assert sys.getprofile() is None and sys.gettrace() is None
print("clean")
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.stdout.strip() == "clean", out.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_storages_are_counted_the_same_way():
    kept = []
    for k in range(2):
        logits = torch.randn(64, 500, device="cuda", requires_grad=True)
        loss = torch.log_softmax(logits, -1)[:, 0].mean()
        loss.backward()
        kept.append(loss)
    report = tt.leak_check()
    assert [e["bytes"] for e in report.entries] == [kept_storages(x) for x in kept] == [PER] * 2
    assert "cuda:0" in report.entries[0]["path"]
