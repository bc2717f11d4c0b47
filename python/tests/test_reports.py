"""The leak checker, the graph as DOT and the memory timeline from Python."""
import gc


import tapegrad as tg


def test_a_loss_kept_across_steps_is_reported_then_gone():
    # the Fast-LLM story: a loss tensor kept for logging keeps its whole graph
    kept = []
    for step in range(3):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss = (x * x).sum()
        kept.append(loss)          # retained "for logging"
        tg.step_mark(f"microbatch {step}")
    report = tg.leak_check()
    assert report and report.outlived_nodes >= 2 and report.roots >= 2
    assert "microbatch" in report.text() or "step" in report.text()
    assert '"roots"' in report.json() or "roots" in report.json()
    assert "<pre>" in report._repr_html_()
    kept.clear()
    del loss, x, report
    gc.collect()
    tg.step_mark("after")
    assert not tg.leak_check()


def test_graph_as_dot():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    g = tg.graph(y, names=["loss"])
    assert g.dot.startswith("digraph") and "loss" in g.dot and "MulBackward" in g.dot
    svg = g.svg()
    assert svg is None or "<svg" in svg


def test_timeline_as_svg():
    with tg.Timeline("one step") as tl:
        x = tg.tensor([[1.0] * 64] * 64, requires_grad=True)
        (x @ x).sum().backward()
    svg = tl.svg()
    assert svg.lstrip().startswith("<") and "one step" in svg and "<svg" in svg
    del x
