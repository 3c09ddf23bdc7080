"""Graph pictures: DOT text and SVG, with no dependency.

* :func:`to_dot` draws each distinct node once (sharing is visible as fan-out),
  dataflow edges child -> parent, every Function as a ``subgraph cluster_*``
  (module functions labelled ``@name``, fused ``Primitive`` functions nested
  inside their caller's cluster), and fills the highlighted nodes.  A call is
  labelled with its operator, its attributes that differ from their defaults and
  its type; a variable with its type; the tooltip holds the full type, the
  attributes and the node's id.
* ``around=nodes, radius=k`` draws the neighbourhood of chosen nodes (everything
  within ``k`` dataflow edges of them, up or down; a shared leaf -- a weight, a
  constant -- is drawn but not followed to its other users); a node with edges
  leaving the picture says how many inputs and users are not drawn.  ``around`` takes nodes,
  ids, or what ``mod.find(x)`` returned, so ``viz(mod, around=mod.find(conv))``
  shows where the conv went.
* Large graphs are summarized by default: when a graph has more than
  ``max_nodes`` nodes (default 2000), each call of a fused ``Primitive`` function is
  drawn as one node (``fused: nn.conv2d+add+nn.relu``) instead of its body
  (``collapse="auto"``; ``True`` / ``False`` force it), and what is still too large is
  truncated breadth-first from the roots, a dashed note marking where edges were cut;
  the cost is O(max_nodes) however large the graph, except with ``around``.
* :func:`to_svg` / :class:`Graph` (``_repr_svg_`` for notebooks) render with
  Graphviz when its ``dot`` binary and Python package are installed
  (``engine="graphviz"``), else with pyir's own layered layout (``engine="pyir"``,
  no dependency: ranks by longest path, order by barycenters), so a picture shows
  inline in any notebook.  In the SVG, every node is a ``<g class="node">`` with
  ``data-id`` (its id in hex), highlighted ones also have class ``hl``.
"""

from __future__ import annotations

import functools
import html
import json
import shutil
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from .errors import GraphvizNotFoundError, PyIRError, WellFormedError
from .ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from .ir.kinds import info
from .ir.module import Module
from .ir.node import Node
from .text.printer import _inline_const, _op_attr_text, type_str

__all__ = ["to_dot", "to_svg", "Graph", "viz", "GraphvizNotFoundError", "MAX_NODES"]

MAX_NODES = 2000
_FILL = "#ffd54f"
_TYPE_LABEL = 80  # characters of a type in a label (a long symbolic shape is cut)
_ATTR_LABEL = 3   # attribute lines in a call's label (the tooltip has all of them)


def _q(s: str) -> str:
    """A DOT double-quoted string."""
    return json.dumps(s, ensure_ascii=False)


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def _fused_ops(f: Function) -> list[str]:
    """The operator names inside a fused function, in first-use order from the inputs."""
    names: list[str] = []
    seen: set[Node] = set()
    stack: list[tuple[Node, bool]] = [(f.body, False)]
    while stack:
        n, done = stack.pop()
        if done:
            if type(n) is Call and type(n.op) is Op and n.op.name not in names:
                names.append(n.op.name)
            continue
        if n in seen:
            continue
        seen.add(n)
        stack.append((n, True))
        for c in reversed(n.children()):
            if type(c) is not Function:
                stack.append((c, False))
    return names


def _is_fused_call(n: Node) -> bool:
    return type(n) is Call and type(n.op) is Function and bool(n.op.attrs.get("Primitive"))


def _call_label(n: Any, collapsed: bool = False) -> str:
    if type(n.op) is Op:
        return str(n.op.name)
    if collapsed and _is_fused_call(n):
        ops = _fused_ops(n.op)
        shown = "+".join(ops[:4]) + (f"+{len(ops) - 4} more" if len(ops) > 4 else "")
        return "fused: " + shown
    return "call"


def _var_label(n: Any) -> str:
    return "%" + n.name_hint


def _const_label(n: Any) -> str:
    s = _inline_const(n, 4)
    return s if s is not None else f"const {n.data.dtype.name}{list(n.data.shape)}"


#: node kind -> its label (a kind not listed: its name and its scalar fields)
_LABELS: dict[type, Callable[[Any], str]] = {
    Call: _call_label,
    Var: _var_label,
    GlobalVar: lambda n: "@" + n.name_hint,
    Constant: _const_label,
    Tuple: lambda n: "tuple",
    TupleGetItem: lambda n: f".{n.index}",
    Function: lambda n: "fn Primitive" if n.attrs.get("Primitive") else "fn",
    Let: lambda n: "let %" + n.var.name_hint,
    If: lambda n: "if",
}

#: node kind -> its DOT shape (a kind not listed: a box)
_SHAPES: dict[type, str] = {Var: "ellipse", GlobalVar: "ellipse", Constant: "box, style=rounded",
                            Function: "invhouse"}


def _label(n: Node) -> str:
    lab = _LABELS.get(type(n))
    if lab is not None:
        return lab(n)
    ki = info(type(n))
    return " ".join([ki.name, *[f"{f.name}={getattr(n, f.name)!r:.40}" for f in ki.scalars]])


def _shape(n: Node) -> str:
    return _SHAPES.get(type(n), "box")


def _targets(items: Iterable[Any] | None, what: str) -> set[bytes]:
    """The ids of ``items`` (nodes, ids as bytes or hex, or nested lists such as find results)."""
    out: set[bytes] = set()
    todo = list(items or ())
    while todo:
        h = todo.pop()
        if isinstance(h, Node):
            out.add(h.id)
        elif isinstance(h, bytes):
            out.add(h)
        elif isinstance(h, str):
            try:
                out.add(bytes.fromhex(h))
            except ValueError:
                raise WellFormedError(f"{what} takes nodes or ids, got the string {h!r}") from None
        elif isinstance(h, (list, tuple, set, frozenset)) or hasattr(h, "__iter__"):
            todo.extend(h)
        else:
            raise WellFormedError(f"{what} takes nodes or ids, got {h!r}")
    return out


def _highlight_ids(highlight: Iterable[Any] | None) -> set[bytes]:
    return _targets(highlight, "highlight")


class _Typer:
    """Types for labels, asked node by node (None when a node cannot be typed)."""

    def __init__(self, obj: Expr | Module) -> None:
        from .analysis.typecheck import TypeContext

        self.ctx = TypeContext.of(obj if isinstance(obj, Module) else None)

    def __call__(self, n: Node) -> Any:
        if not isinstance(n, Expr) or type(n) in (Op, GlobalVar):
            return None
        if type(n) is Var:
            return n.type_annotation
        try:
            return self.ctx.get(n)
        except PyIRError:
            return None


class _Picture:
    """What is drawn: nodes (in order), their clusters, edges, and what was left out."""

    def __init__(self) -> None:
        self.order: list[Node] = []
        self.index: dict[Node, int] = {}
        self.where: dict[Node, int] = {}           # node -> cluster (-1: top level)
        self.clusters: dict[int, tuple[int | None, str]] = {}  # cluster -> (parent, label)
        self.cut: list[Node] = []                  # nodes whose inputs were not all drawn
        self.hidden: dict[Node, tuple[int, int]] = {}  # around: (inputs, users) not drawn
        self.collapsed = False
        self.max_nodes = MAX_NODES

    def add(self, n: Node, c: int) -> None:
        self.index[n] = len(self.order)
        self.order.append(n)
        self.where[n] = c


def _roots(obj: Expr | Module) -> list[tuple[Node, int, str | None]]:
    if isinstance(obj, Module):
        return [(f, i, "@" + name) for i, (name, f) in enumerate(obj.items())]
    if isinstance(obj, Expr):
        return [(obj, -1, None)]
    raise WellFormedError(f"to_dot draws an expression or a module, got {type(obj).__name__}")


def _kids(n: Node, collapse: bool) -> tuple[Node, ...]:
    if collapse and _is_fused_call(n):
        return n.args  # type: ignore[attr-defined]
    return n.children()


def _count_upto(obj: Expr | Module, limit: int) -> int:
    """The number of distinct nodes reachable, counted up to ``limit`` + 1."""
    seen: set[Node] = set()
    stack = [r for r, _, _ in _roots(obj)]
    while stack and len(seen) <= limit:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.children())
    return len(seen)


def _walk(obj: Expr | Module, pic: _Picture, collapse: bool, limit: int | None) -> None:
    """Breadth-first from the roots, assigning clusters; at most ``limit`` nodes (None: all)."""
    queue: deque[tuple[Node, int]] = deque()
    module_roots: set[Node] = set()
    for r, c, label in _roots(obj):
        if label is not None:
            pic.clusters[c] = (None, label)
            module_roots.add(r)
        if r not in pic.index:
            pic.add(r, c)
            queue.append((r, c))
    while queue:
        n, c = queue.popleft()
        inner = c
        if type(n) is Function and n not in module_roots:
            inner = len(pic.clusters)
            label = "Primitive" if n.attrs.get("Primitive") else "fn"
            pic.clusters[inner] = (c if c != -1 else None, label)
        truncated = False
        for ch in _kids(n, collapse):
            if ch in pic.index:
                if pic.where[ch] != inner and type(ch) is Constant:
                    pic.where[ch] = -1  # shared between clusters: draw at top level
                continue
            if limit is not None and len(pic.order) >= limit:
                truncated = True
                continue
            pic.add(ch, inner)
            queue.append((ch, inner))
        if truncated:
            pic.cut.append(n)


def _neighbourhood(full: _Picture, centre: set[bytes], radius: int, collapse: bool) -> _Picture:
    """The part of ``full`` within ``radius`` edges of the nodes whose ids are ``centre``."""
    users: dict[Node, list[Node]] = {}
    for n in full.order:
        for ch in _kids(n, collapse):
            users.setdefault(ch, []).append(n)
    start = [n for n in full.order if n.id in centre]
    if not start:
        raise WellFormedError(f"around: none of the {len(centre)} node(s) given is in the picture "
                              "(pass nodes of this module, their ids, or mod.find(x))")
    dist: dict[Node, int] = dict.fromkeys(start, 0)
    queue = deque(start)
    while queue:
        n = queue.popleft()
        d = dist[n]
        if d == radius:
            continue
        # a leaf (variable, constant) shared by many is drawn, but not a way to its other
        # users -- unless it is one of the chosen nodes
        ups = users.get(n, ()) if d == 0 or _kids(n, collapse) else ()
        for m in (*_kids(n, collapse), *ups):
            if m not in dist:
                dist[m] = d + 1
                queue.append(m)
    pic = _Picture()
    used: set[int] = set()
    for n in full.order:
        if n in dist:
            pic.add(n, full.where[n])
            c: int | None = full.where[n]
            while c is not None and c != -1 and c not in used:
                used.add(c)
                c = full.clusters[c][0]
    pic.clusters = {c: v for c, v in full.clusters.items() if c in used}
    for n in pic.order:
        ins = sum(1 for ch in _kids(n, collapse) if ch not in dist)
        outs = sum(1 for u in users.get(n, ()) if u not in dist)
        if ins or outs:
            pic.hidden[n] = (ins, outs)
    return pic


def _picture(obj: Expr | Module, around: Iterable[Any] | None, radius: int, max_nodes: int,
             collapse: bool | str) -> tuple[_Picture, bool]:
    if collapse == "auto":
        collapse = _count_upto(obj, max_nodes) > max_nodes
    elif not isinstance(collapse, bool):
        raise WellFormedError(f"collapse is True, False or 'auto', got {collapse!r}")
    if around is not None:
        if radius < 0:
            raise WellFormedError(f"radius must be >= 0, got {radius}")
        full = _Picture()
        _walk(obj, full, collapse, None)
        pic = _neighbourhood(full, _targets(around, "around"), radius, collapse)
        if len(pic.order) > max_nodes:
            raise WellFormedError(f"around: the neighbourhood of radius {radius} has {len(pic.order)} "
                                  f"nodes, more than max_nodes={max_nodes}; use a smaller radius or a "
                                  "larger max_nodes")
    else:
        pic = _Picture()
        _walk(obj, pic, collapse, max_nodes)
    pic.collapsed = collapse
    pic.max_nodes = max_nodes
    return pic, collapse


def _node_text(n: Node, typer: _Typer | None, collapse: bool) -> tuple[list[str], str]:
    """The label lines and the tooltip of ``n``."""
    lines = [_call_label(n, collapse) if type(n) is Call else _label(n)]
    tip = [lines[0]]
    if type(n) is Call:
        attrs = _op_attr_text(n) if type(n.op) is Op else []
        lines += [_cut(a, 40) for a in attrs[:_ATTR_LABEL]]
        if len(attrs) > _ATTR_LABEL:
            lines.append(f"(+{len(attrs) - _ATTR_LABEL} attrs)")
        tip += attrs
    t = typer(n) if typer is not None else (n.type_annotation if type(n) is Var else None)
    if t is not None:
        ts = type_str(t)
        lines.append(_cut(ts, _TYPE_LABEL))
        tip.append(_cut(ts, 3 * _TYPE_LABEL))
    tip.append("id " + n.id.hex()[:16])
    return lines, "\n".join(tip)


def to_dot(obj: Expr | Module, highlight: Iterable[Any] | None = None, *, max_nodes: int = MAX_NODES,
           name: str = "pyir", around: Iterable[Any] | None = None, radius: int = 2,
           collapse: bool | str = "auto", types: bool = True) -> str:
    """DOT text of an expression or module (see the module docstring)."""
    hl = _highlight_ids(highlight)
    pic, collapsed = _picture(obj, around, radius, max_nodes, collapse)
    typer = _Typer(obj) if types else None
    lines = [f"digraph {_q(name)} {{", "  rankdir=BT;",
             '  node [fontname="monospace", fontsize=10, shape=box];', '  edge [arrowsize=0.6];']
    members: dict[int, list[str]] = {}
    for n in pic.order:
        i = pic.index[n]
        text, tip = _node_text(n, typer, collapsed)
        if n in pic.hidden:
            ins, outs = pic.hidden[n]
            text.append(" ".join(s for s in (f"+{ins} in" if ins else "", f"+{outs} out" if outs else "")
                                 if s) + " not drawn")
        attrs = [f"label={_q(chr(10).join(text))}", f"shape={_shape(n)}", f"tooltip={_q(tip)}",
                 f"id={_q('n' + n.id.hex())}"]
        if n.id in hl:
            attrs.append(f'style="filled{",rounded" if type(n) is Constant else ""}"')
            attrs.append(f'fillcolor="{_FILL}"')
        members.setdefault(pic.where[n], []).append(f"n{i} [{', '.join(attrs)}];")
    # clusters, nested, emitted without recursion
    kids: dict[int | None, list[int]] = {}
    for cid, (parent, _) in pic.clusters.items():
        kids.setdefault(parent if parent in pic.clusters else None, []).append(cid)
    for stmt in members.get(-1, []):
        lines.append("  " + stmt)
    stack: list[tuple[int, int, bool]] = [(cid, 1, False) for cid in reversed(kids.get(None, []))]
    while stack:
        cid, depth, closing = stack.pop()
        pad = "  " * depth
        if closing:
            lines.append(pad + "}")
            continue
        label = pic.clusters[cid][1]
        lines.append(f"{pad}subgraph cluster_{cid} {{")
        lines.append(f"{pad}  label={_q(label)}; style=rounded; color=\"#8c959f\";")
        for stmt in members.get(cid, []):
            lines.append(f"{pad}  {stmt}")
        stack.append((cid, depth, True))
        for sub in reversed(kids.get(cid, [])):
            stack.append((sub, depth + 1, False))
    for n in pic.order:
        i = pic.index[n]
        for pos, ch in enumerate(_kids(n, collapsed)):
            j = pic.index.get(ch)
            if j is None:
                continue
            lab = ""
            if type(n) is Call and type(n.op) is not Op and pos == 0 and not collapsed:
                lab = ' [label="callee", style=dashed]'
            elif type(n) is Function and type(ch) is Var:
                lab = " [style=dotted, arrowhead=none]"
            lines.append(f"  n{j} -> n{i}{lab};")
    if pic.cut:
        note = f"… more nodes not drawn (max_nodes={pic.max_nodes}); draw a part with around="
        lines.append(f"  elided [label={_q(note)}, shape=note, style=dashed];")
        for n in pic.cut:
            lines.append(f"  elided -> n{pic.index[n]} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- pyir's own SVG layout ---------------------------------------------------------------------------

_CH_W, _LINE_H, _PAD, _GAP_X, _GAP_Y = 6.6, 13.0, 6.0, 18.0, 34.0


def _layout(pic: _Picture, collapsed: bool, lines_of: dict[Node, list[str]]
            ) -> tuple[dict[Node, tuple[float, float, float, float]], float, float]:
    """Positions ``(x, y, w, h)`` of the drawn nodes: inputs on top, ranks by longest path from
    the inputs, order within a rank by the barycentre of the inputs (two sweeps)."""
    drawn = pic.index
    ins: dict[Node, list[Node]] = {n: [c for c in _kids(n, collapsed) if c in drawn] for n in pic.order}
    # rank: the longest path from the inputs, iteratively (children before parents)
    rank: dict[Node, int] = {}
    state: dict[Node, int] = {}
    for root in pic.order:
        if root in rank:
            continue
        stack = [root]
        while stack:
            n = stack[-1]
            if n in rank:
                stack.pop()
                continue
            if state.get(n) == 1:
                stack.pop()
                rank[n] = 1 + max((rank[c] for c in ins[n]), default=-1)
                continue
            state[n] = 1
            stack.extend(c for c in ins[n] if c not in rank)
    users: dict[Node, list[Node]] = {}
    for n in pic.order:
        for c in ins[n]:
            users.setdefault(c, []).append(n)
    for n in pic.order:  # a leaf (a weight, a constant) sits just above its first user
        if not ins[n] and n in users:
            rank[n] = min(rank[u] for u in users[n]) - 1
    ranks: dict[int, list[Node]] = {}
    for n in pic.order:
        ranks.setdefault(rank[n], []).append(n)
    pos: dict[Node, float] = {}
    for r in sorted(ranks):
        for i, n in enumerate(ranks[r]):
            pos[n] = float(i)
    def bary(n: Node, down: bool) -> float:
        nb = ins[n] if down else users.get(n, [])
        return sum(pos[m] for m in nb) / len(nb) if nb else pos[n]

    for sweep in range(4):
        down = sweep % 2 == 0
        for r in (sorted(ranks) if down else sorted(ranks, reverse=True)):
            ranks[r].sort(key=functools.partial(_swap_args, bary, down))
            for i, n in enumerate(ranks[r]):
                pos[n] = float(i)
    box: dict[Node, tuple[float, float, float, float]] = {}
    y = _PAD
    sizes: dict[Node, tuple[float, float]] = {}
    for n in pic.order:
        lines = lines_of[n]
        w = max(len(s) for s in lines) * _CH_W + 2 * _PAD
        sizes[n] = (max(w, 24.0), len(lines) * _LINE_H + 2 * _PAD - 2)
    rows = [ranks[r] for r in sorted(ranks)]
    row_w = [sum(sizes[n][0] for n in row) + _GAP_X * (len(row) - 1) for row in rows]
    width = max(row_w, default=0.0) + 2 * _PAD
    for row, rw in zip(rows, row_w):
        x = (width - rw) / 2
        h = max(sizes[n][1] for n in row)
        for n in row:
            w, hn = sizes[n]
            box[n] = (x, y + (h - hn) / 2, w, hn)
            x += w + _GAP_X
        y += h + _GAP_Y
    return box, width, y - _GAP_Y + _PAD


def _swap_args(f: Callable[[Node, bool], float], down: bool, n: Node) -> float:
    return f(n, down)


def _builtin_svg(obj: Expr | Module, highlight: Iterable[Any] | None, max_nodes: int,
                 around: Iterable[Any] | None, radius: int, collapse: bool | str, types: bool) -> str:
    hl = _highlight_ids(highlight)
    pic, collapsed = _picture(obj, around, radius, max_nodes, collapse)
    typer = _Typer(obj) if types else None
    texts: dict[Node, tuple[list[str], str]] = {}
    for n in pic.order:
        text, tip = _node_text(n, typer, collapsed)
        if n in pic.hidden:
            i, o = pic.hidden[n]
            text.append(" ".join(s for s in (f"+{i} in" if i else "", f"+{o} out" if o else "") if s)
                        + " not drawn")
        if pic.where[n] in pic.clusters:
            tip += "\nin " + pic.clusters[pic.where[n]][1]
        texts[n] = (text, tip)
    box, width, height = _layout(pic, collapsed, {n: t for n, (t, _) in texts.items()})
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="pyir-graph" width="{width:.0f}" '
           f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" '
           f'font-size="11">',
           '<defs><marker id="pyir-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
           'markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
           'fill="#57606a"/></marker></defs>']
    for n in pic.order:
        x1, y1, w1, _ = box[n]
        for ch in _kids(n, collapsed):
            if ch not in box:
                continue
            x0, y0, w0, h0 = box[ch]
            sx, sy, ex, ey = x0 + w0 / 2, y0 + h0, x1 + w1 / 2, y1
            my = (sy + ey) / 2
            out.append(f'<path d="M {sx:.1f} {sy:.1f} C {sx:.1f} {my:.1f} {ex:.1f} {my:.1f} {ex:.1f} '
                       f'{ey:.1f}" fill="none" stroke="#8c959f" marker-end="url(#pyir-arrow)"/>')
    for n in pic.order:
        x, y, w, h = box[n]
        text, tip = texts[n]
        cls = "node hl" if n.id in hl else "node"
        fill = _FILL if n.id in hl else ("#f6f8fa" if type(n) in (Var, Constant, GlobalVar) else "#ffffff")
        rx = h / 2 if type(n) in (Var, GlobalVar) else 4
        out.append(f'<g class="{cls}" data-id="{n.id.hex()}"><title>{html.escape(tip)}</title>'
                   f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx:.1f}" '
                   f'fill="{fill}" stroke="#57606a"/>')
        for k, s in enumerate(text):
            weight = ' font-weight="bold"' if k == 0 else ""
            out.append(f'<text x="{x + w / 2:.1f}" y="{y + _PAD + (k + 0.8) * _LINE_H:.1f}" '
                       f'text-anchor="middle"{weight}>{html.escape(s)}</text>')
        out.append("</g>")
    if pic.cut:
        out.append(f'<text x="{_PAD}" y="{height - 2:.0f}" fill="#57606a">… more nodes not drawn '
                   f'(max_nodes={pic.max_nodes}); draw a part with around=</text>')
    out.append("</svg>")
    return "\n".join(out)


def _have_graphviz() -> bool:
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def to_svg(obj: Expr | Module | str, highlight: Iterable[Any] | None = None, *,
           max_nodes: int = MAX_NODES, around: Iterable[Any] | None = None, radius: int = 2,
           collapse: bool | str = "auto", types: bool = True, engine: str = "auto") -> str:
    """SVG text of ``obj`` (``obj`` may also be DOT text, which needs Graphviz).

    ``engine``: ``"graphviz"`` (needs the ``graphviz`` package and the ``dot`` binary),
    ``"pyir"`` (pyir's own layout, no dependency) or ``"auto"`` (Graphviz when installed)."""
    if engine not in ("auto", "graphviz", "pyir"):
        raise WellFormedError(f"engine is 'auto', 'graphviz' or 'pyir', got {engine!r}")
    if not isinstance(obj, str) and (engine == "pyir" or (engine == "auto" and not _have_graphviz())):
        return _builtin_svg(obj, highlight, max_nodes, around, radius, collapse, types)
    src = obj if isinstance(obj, str) else to_dot(obj, highlight, max_nodes=max_nodes, around=around,
                                                  radius=radius, collapse=collapse, types=types)
    try:
        import graphviz
    except ImportError:
        raise GraphvizNotFoundError("rendering DOT text needs the 'graphviz' Python package "
                                    "(pip install graphviz) and the Graphviz 'dot' binary "
                                    "(e.g. apt-get install graphviz); to_svg(module, engine='pyir') "
                                    "draws without them") from None
    try:
        out = graphviz.Source(src).pipe(format="svg")
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFoundError("the Graphviz 'dot' binary was not found on PATH: install Graphviz "
                                    "(e.g. apt-get install graphviz or brew install graphviz), or draw "
                                    "with to_svg(module, engine='pyir')") from None
    return out.decode() if isinstance(out, bytes) else str(out)


class Graph:
    """A picture of an expression or module: ``.source`` is DOT; notebooks show the SVG
    (Graphviz's when installed, else pyir's own layout)."""

    def __init__(self, source: str, obj: Expr | Module | None = None, options: dict[str, Any] | None = None
                 ) -> None:
        self.source = source
        self._obj = obj
        self._options = dict(options or {})

    def __repr__(self) -> str:
        return f"<Graph: {self.source.count(chr(10))} lines of DOT>"

    def svg(self, engine: str = "auto") -> str:
        """Render to SVG (see :func:`to_svg`)."""
        if self._obj is None:
            return to_svg(self.source, engine=engine)
        return to_svg(self._obj, engine=engine, **self._options)

    def _repr_svg_(self) -> str:
        return self.svg()


def viz(obj: Expr | Module, highlight: Iterable[Any] | None = None, *, max_nodes: int = MAX_NODES,
        around: Iterable[Any] | None = None, radius: int = 2, collapse: bool | str = "auto",
        types: bool = True) -> Graph:
    """A :class:`Graph` of ``obj`` with ``highlight`` (nodes or ids) filled; ``around`` draws
    only the neighbourhood of the given nodes (see the module docstring)."""
    options = {"highlight": highlight, "max_nodes": max_nodes, "around": around, "radius": radius,
               "collapse": collapse, "types": types}
    return Graph(to_dot(obj, **options), obj, options)  # type: ignore[arg-type]
