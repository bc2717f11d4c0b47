"""The pictures of the audit reports: Graphviz DOT in the style of the C
library's ``tg_graph_dot`` (roots as notes, red when retained; nodes as
boxes with their saved tensors; leaves as ellipses; edges the way gradients
flow, drawn bottom to top), and an SVG of the retained paths that needs no
Graphviz."""
from __future__ import annotations

import html
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._graph import children, is_accumulate, leaf_of, node_name, saved_of
from ._util import fmt_bytes, storage_bytes, tensor_desc


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def leak_dot(roots: Sequence[Any], step: Optional[int], max_nodes: int = 400) -> str:
    """The retained graphs: each root (its holder's expression) and the nodes
    and leaves it reaches (at most ``max_nodes`` in all)."""
    ids: Dict[int, str] = {}
    lines = ["digraph tapegrad {",
             '  graph [rankdir=BT, fontname="Helvetica", fontsize=11, labelloc=t, '
             f'label="PyTorch graphs kept alive{"" if step is None else f" after step {step}"}"];',
             '  node [fontname="Helvetica", fontsize=10];',
             '  edge [color="#555555", arrowsize=0.7, fontname="Helvetica", fontsize=9];']
    edges: List[str] = []
    for i, r in enumerate(roots):
        kept = fmt_bytes(sum(r.storages.values()))
        what = tensor_desc(r.obj) if hasattr(r.obj, "grad_fn") else "graph node"
        lines.append(f'  r{i} [shape=note, style="filled,bold", fillcolor="#ffb3b3", '
                     f'color="#d00000", penwidth=3, fontcolor="#a00000", label="'
                     f'{_esc(r.ref.expr)}\\n{_esc(what)}\\n{_esc(r.ref.scope)}\\nRETAINED: keeps '
                     f'{kept}"];')
        for n in [*r.nodes, *r.leaves]:
            if id(n) in ids or len(ids) >= max_nodes:
                continue
            ids[id(n)] = name = f"n{len(ids)}"
            lines.append(_node_line(name, n))
        if r.top is not None and id(r.top) in ids:
            edges.append(f'  r{i} -> {ids[id(r.top)]} [color="#d00000", penwidth=2.5];')
        for n in r.nodes:
            for c, k in children(n):
                if id(n) in ids and id(c) in ids:
                    edges.append(f"  {ids[id(n)]} -> {ids[id(c)]};")
    return "\n".join(lines + sorted(set(edges), key=edges.index) + ["}"]) + "\n"


def _node_line(name: str, n: Any) -> str:
    if is_accumulate(n):
        v = leaf_of(n)
        desc = "leaf (gone)" if v is None else \
            f"leaf\\n{_esc(tensor_desc(v))} {fmt_bytes(storage_bytes(v))}" + \
            (f"\\n.grad {fmt_bytes(storage_bytes(v.grad))}" if v.grad is not None else "")
        return f'  {name} [shape=ellipse, style=filled, fillcolor="#d8f0d8", label="{desc}"];'
    saved = saved_of(n)
    label = _esc(node_name(n))
    for s in saved:
        label += f"\\nsaved: {_esc(s.slot)} {_esc(tensor_desc(s.tensor))}"
    label += ("\\nsaved total: " + fmt_bytes(sum(storage_bytes(s.tensor) for s in saved))
              if saved else "\\nsaved tensors freed or none")
    return (f'  {name} [shape=box, style="rounded,filled", fillcolor="#f8d0d0", '
            f'label="{label}"];')


def draw(dot: str, rows: Sequence[Tuple[str, List[str], int]]) -> str:
    """SVG: ``dot -Tsvg`` of ``dot`` where Graphviz is installed, else each row
    (holder, node names, bytes) as a chain of boxes."""
    exe = shutil.which("dot")
    if exe and dot:
        try:
            return subprocess.run([exe, "-Tsvg"], input=dot, capture_output=True, text=True,
                                  check=True, timeout=30).stdout
        except (subprocess.SubprocessError, OSError):
            pass
    return chains_svg(rows)


def chains_svg(rows: Sequence[Tuple[str, List[str], int]]) -> str:
    """Each row as ``[holder, bytes] -> [node] -> ... -> [leaf]`` boxes."""
    cw, h, gap, pad = 7, 28, 22, 10
    y, parts, width = pad, [], 0
    for holder, chain, nbytes in rows:
        x = pad
        for j, label in enumerate([f"{holder}: {fmt_bytes(nbytes)}", *chain]):
            w = cw * len(label) + 16
            fill = "#ffb3b3" if j == 0 else ("#d8f0d8" if label == "leaf" else "#f8d0d0")
            parts.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="5" '
                         f'fill="{fill}" stroke="#800000"/>'
                         f'<text x="{x + 8}" y="{y + 18}" font-family="Helvetica" '
                         f'font-size="12">{html.escape(label)}</text>')
            if j:
                parts.append(f'<line x1="{x - gap}" y1="{y + h / 2}" x2="{x - 3}" '
                             f'y2="{y + h / 2}" stroke="#555" marker-end="url(#a)"/>')
            x += w + gap
        width = max(width, x)
        y += h + pad
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}">'
            '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="7" refY="4" '
            'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>'
            + "".join(parts) + "</svg>")
