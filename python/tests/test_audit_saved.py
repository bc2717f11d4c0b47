"""tapegrad.torch.saved_report / track_saved on PyTorch's own graphs: the
entropy story (slime #1524, examples/python/torch_entropy_at_zero.py) gets
the bytes saved per op and per line (the storages summed here, and the C
allocator's growth), and after backward the subgraph whose gradient was zero
everywhere with the bytes it held for nothing; the fixes hold none."""
import gc

import pytest

torch = pytest.importorskip("torch")
import tapegrad.torch as tt  # noqa: E402

from audit_stories import example, site, storage_bytes  # noqa: E402
from test_audit_leaks import allocated  # noqa: E402

story = example("torch_entropy_at_zero")
SRC = story.__file__
N, V = 64, 300
NV = N * V * 4
LOGP = site(SRC, "logp = torch.log_softmax(logits, -1)")
GATHER = site(SRC, "lp = logp.gather(-1, targets[:, None]).squeeze(-1)")
PROBS = site(SRC, "probs = torch.softmax(logits, -1)")
ENTROPY = site(SRC, "entropy = -(probs * logp).sum(-1)")
LOSS = site(SRC, "loss = -lp.mean() - entropy_coef * entropy.mean()")
ZERO_CHAIN = ["MeanBackward0", "NegBackward0", "SumBackward1", "MulBackward0", "SoftmaxBackward0"]


def inputs():
    g = torch.Generator().manual_seed(7)
    return (2 * torch.randn(N, V, generator=g)).requires_grad_(), \
        torch.randint(0, V, (N,), generator=g)


def recorded_loss(coef=0.0, entropy_grad=True):
    logits, targets = inputs()
    with tt.track_saved():
        loss, _ = story.policy_loss(logits, targets, coef, entropy_grad)
    return loss


def test_the_bytes_saved_per_op_and_line_before_backward():
    loss = recorded_loss()
    rep = tt.saved_report(loss)
    # what the graph saved, counted from PyTorch's own nodes: log-probs and probabilities
    # (N V 4 each), the gather index (int64), and the coefficient 0.0 (a float64 scalar)
    sum_node = loss.grad_fn.next_functions[1][0]          # coef * entropy.mean()
    assert storage_bytes(sum_node._saved_other) == 8
    logp_node = loss.grad_fn.next_functions[0][0].next_functions[0][0]
    assert rep.total_bytes == 2 * NV + N * 8 + 8
    assert rep.ops == [
        {"op": "LogSoftmaxBackward0", "nodes": 1, "bytes": NV, "lines": [LOGP]},
        {"op": "SoftmaxBackward0", "nodes": 1, "bytes": NV, "lines": [PROBS]},
        {"op": "GatherBackward0", "nodes": 1, "bytes": N * 8, "lines": [GATHER]},
        {"op": "MulBackward0", "nodes": 2, "bytes": 8, "lines": [ENTROPY, LOSS]}]
    assert [(r["site"], r["bytes"], r["ops"]) for r in rep.lines] == [
        (LOGP, NV, ["LogSoftmaxBackward0"]), (PROBS, NV, ["SoftmaxBackward0"]),
        (GATHER, N * 8, ["GatherBackward0"]), (LOSS, 8, ["MulBackward0"]),
        (ENTROPY, 0, ["MulBackward0"])]
    assert rep.lines[1]["source"] == "probs = torch.softmax(logits, -1)"
    assert not rep.backward_ran and rep.zero == [] and rep.zero_grad_bytes == 0
    assert "backward has not run through these nodes yet" in rep.text()
    del logp_node, sum_node


def test_after_backward_the_zero_gradient_subgraph_and_its_bytes():
    loss = recorded_loss()
    rep = tt.saved_report(loss)
    loss.backward()
    assert rep.backward_ran
    # the probabilities are saved only by nodes backward sent zeros into; the
    # log-probs are saved by LogSoftmaxBackward0 too, which the log-prob needs
    assert rep.zero == [{"chain": ZERO_CHAIN, "bytes": NV, "nodes": 5,
                         "savers": ["SoftmaxBackward0", "MulBackward0"],
                         "lines": [PROBS, ENTROPY]}]
    assert rep.zero_grad_bytes == NV
    text = rep.text()
    assert (f"gradient zero everywhere in 1 subgraph, holding 75.0 KiB saved for nothing:\n"
            f"  {' -> '.join(ZERO_CHAIN)}: 75.0 KiB saved by SoftmaxBackward0, MulBackward0 "
            f"(created at {PROBS}, {ENTROPY})\n"
            "  fix: compute what only feeds a zero coefficient under torch.no_grad() (or from "
            ".detach()ed inputs); for an entropy next to a log-prob, "
            "tapegrad.torch.logprob_entropy(..., entropy_grad=False)") in text


@pytest.mark.parametrize("how", ["no_grad", "coef", "fused"])
def test_the_fixes_and_a_nonzero_coefficient_hold_nothing_for_nothing(how):
    logits, targets = inputs()
    with tt.track_saved() as t:
        if how == "fused":
            loss, _ = story.fused_loss(logits, targets, 0.0)
        else:
            loss, _ = story.policy_loss(logits, targets, 0.01 if how == "coef" else 0.0,
                                        entropy_grad=how != "no_grad")
    rep = tt.saved_report(loss)
    loss.backward()
    assert rep.zero == [] and rep.zero_grad_bytes == 0 and t.zero_grad_bytes == 0
    assert "every node got a gradient other than zero" in rep.text()
    # no_grad: the log-probs and the index (the entropy's product by 0 records nothing);
    # fused: the logits and the targets, saved by tapegrad.torch's Function
    expected = {"no_grad": NV + N * 8, "coef": 2 * NV + N * 8 + 8, "fused": NV + N * 8}[how]
    assert rep.total_bytes == expected


def test_track_saved_alone_reports_every_graph_built_under_it():
    logits, targets = inputs()
    with tt.track_saved() as t:
        for _ in range(2):
            loss, _ = story.policy_loss(logits, targets, 0.0)
            loss.backward()
    rep = t.report()
    assert rep.total_bytes == 2 * (2 * NV + N * 8 + 8)
    assert [z["bytes"] for z in rep.zero] == [NV, NV] and t.zero_grad_bytes == 2 * NV


def test_without_a_recorder_the_lines_are_unknown():
    logits, targets = inputs()
    loss, _ = story.policy_loss(logits, targets, 0.0)
    rep = tt.saved_report(loss)
    loss.backward()
    assert {r["site"] for r in rep.lines} == {"?"} and rep.zero_grad_bytes == NV
    assert "(? : no line known: build the graph under tapegrad.torch.track_saved()" in rep.text()


def test_saved_bytes_agree_with_the_allocators_growth():
    n, v = 512, 4000                     # 7.8 MiB a (N, V) tensor
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(n, v, generator=g, requires_grad=True)
    targets = torch.randint(0, v, (n,), generator=g)
    gc.collect()
    base = allocated()
    with tt.track_saved():
        loss, _ = story.policy_loss(logits, targets, 0.0)
    gc.collect()
    grown = allocated() - base           # what the graph keeps: what it saved, and the loss
    rep = tt.saved_report(loss)
    assert rep.total_bytes == 2 * n * v * 4 + n * 8 + 8
    assert abs(grown - rep.total_bytes) <= 0.01 * rep.total_bytes


def test_a_loss_without_a_graph_is_refused():
    with pytest.raises(ValueError, match="loss has no graph"):
        tt.saved_report(torch.ones(()))


def test_anomaly_modes_tracebacks_give_the_lines_without_a_recorder():
    logits, targets = inputs()
    with torch.autograd.set_detect_anomaly(True):
        loss, _ = story.policy_loss(logits, targets, 0.0)
    rep = tt.saved_report(loss)
    assert [r["site"] for r in rep.lines] == [LOGP, PROBS, GATHER, LOSS, ENTROPY]
