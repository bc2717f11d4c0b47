"""tapegrad.torch.inplace_guard on PyTorch's own graphs: the in-place story
(SkyRL #1648, examples/python/torch_inplace_pair.py) gets PyTorch's version
error completed with the saving op, its line, and each in-place op since
with its line and versions; PyTorch's own nodes, the optimizer (foreach
too), graphs outliving the guard, and correct code left alone."""
import gc

import pytest

torch = pytest.importorskip("torch")
import tapegrad.torch as tt  # noqa: E402

from audit_stories import example, site  # noqa: E402

story = example("torch_inplace_pair")
PAIR = story.__file__
HINT = "Hint: make the modification out of place ({}), or clone the tensor before modifying it."


def backward_error(fn, *args):
    with pytest.raises(RuntimeError) as e:
        fn(*args)
    return str(e.value)


def test_pytorch_alone_names_neither_edit():
    msg = backward_error(story.step, *story.inputs(4, 6))
    assert "is at version 3; expected version 1 instead" in msg
    assert "saved by" not in msg and "sub_" not in msg


def test_the_guard_names_the_saving_op_and_both_edits_with_their_lines():
    story.Entropy.fixed = False
    with tt.inplace_guard():
        msg = backward_error(story.step, *story.inputs(4, 6))
    expected = (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.DoubleTensor [4, 6]], which is output 0 of DivBackward0, saved by "
        f"LogprobBackward (created at {site(PAIR, 'lp = Logprob.apply(logits, targets)')}) as "
        "saved_tensors[0], is at version 3; expected version 1 instead. In-place operations "
        f"since it was saved: sub_ at {site(PAIR, 'z = logits.sub_(m)')} (version 1 -> 2); "
        f"add_ at {site(PAIR, 'logits.add_(m)')} (version 2 -> 3). "
        + HINT.format("sub instead of sub_, add instead of add_"))
    assert expected in msg  # PyTorch 1.13 wraps it: "RuntimeError: <it>\n\nAt: ..."


def test_the_fix_passes_under_the_guard_with_the_reference_gradient():
    hidden, weight, targets = story.inputs(4, 6)
    story.Entropy.fixed = True
    try:
        with tt.inplace_guard():
            story.step(hidden, weight, targets)
    finally:
        story.Entropy.fixed = False
    got, weight.grad = weight.grad, None
    story.reference(hidden, weight, targets)
    torch.testing.assert_close(got, weight.grad, rtol=1e-10, atol=1e-12)


def test_a_pytorch_node_and_its_saved_output():
    x = torch.ones(3, requires_grad=True)
    with tt.inplace_guard():
        y = (x * 2).exp()                    # ExpBackward0 saves its result y  # @exp
        loss = y.sum()
        y.mul_(2)                            # y: version 0 -> 1  # @mul
        msg = backward_error(loss.backward)
    here = __file__
    assert (f"[torch.FloatTensor [3]], which is output 0 of ExpBackward0, saved by ExpBackward0 "
            f"(created at {site(here, '@exp')}) as result, is at version 1; "
            f"expected version 0 instead. In-place operations since it was saved: mul_ at "
            f"{site(here, '@mul')} (version 0 -> 1). "
            + HINT.format("mul instead of mul_")) in msg


@pytest.mark.parametrize("foreach", [False, True])
def test_an_optimizer_step_before_backward(foreach):
    """optimizer.step() between forward and backward edits the saved weight:
    the guard names the optimizer's op (_foreach_add_ with foreach) and keeps
    PyTorch's refusal (a dispatch mode would otherwise let foreach ops pass
    without moving the version)."""
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=foreach)
    here = __file__
    with tt.inplace_guard():
        out = model(torch.ones(2, 4, requires_grad=True)).tanh().sum()  # @forward
        (model(torch.ones(2, 4)) ** 2).sum().backward()
        opt.step()                            # the weight: 1 -> 2  # @step
        msg = backward_error(out.backward)
    assert (f"saved by AddmmBackward0 (created at "
            f"{site(here, '@forward')}) as mat2, is at "
            "version 2; expected version 1 instead. In-place operations since it was saved: "
            f"{'_foreach_add_' if foreach else 'add_'} at {site(here, '@step')} "
            "(version 1 -> 2).") in msg


def test_a_graph_built_under_the_guard_keeps_its_check_after_it():
    x = torch.ones(3, requires_grad=True)
    with tt.inplace_guard():
        h = x * 2
        loss = (h * h).sum()
        h.add_(1)                            # seen: the guard is active  # @add
    msg = backward_error(loss.backward)
    assert f"add_ at {site(__file__, '@add')} (version 0 -> 1)" in msg
    with tt.inplace_guard():
        h = x * 2
        loss = (h * h).sum()
    h.add_(1)                                # unseen: no guard
    msg = backward_error(loss.backward)
    assert "In-place operations since it was saved: 1 not recorded (made while no " \
           "inplace_guard() was active, or forgotten)" in msg


def test_correct_code_passes_and_the_records_go_with_the_graphs():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with tt.inplace_guard() as guard:
        for _ in range(5):
            x = torch.randn(4, 8)
            h = model[1](model[0](x))        # relu_ on a fresh activation: allowed
            loss = model[2](h).pow(2).mean()
            opt.zero_grad()
            loss.backward(retain_graph=True)
            loss.backward()                  # retain_graph on purpose
            opt.step()                       # edits weights whose graphs are done
        del x, h, loss
        gc.collect()
        assert guard.recorder.live == {} and guard.recorder.events == {}
    torch.testing.assert_close(model(torch.zeros(1, 8)).shape, torch.Size([1, 2]))


def test_fused_tapegrad_op_under_the_guard():
    """tapegrad.torch's own Function saves with save_for_backward: the guard
    names it when its saved logits are edited."""
    logits = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([0, 1, 2, 3])
    with tt.inplace_guard():
        z = logits * 1.0
        lp, _ = tt.logprob_entropy(z, targets)
        z.mul_(3)  # @mul3
        msg = backward_error(lp.sum().backward)
    assert "saved by _LogprobEntropyBackward" in msg and \
           f"mul_ at {site(__file__, '@mul3')} (version 0 -> 1)" in msg
