"""Graph pictures: DOT text (no dependency) and SVG through Graphviz.

* :func:`to_dot` draws each distinct node once (sharing is visible as fan-out),
  dataflow edges child -> parent, every Function as a ``subgraph cluster_*``
  (module functions labelled ``@name``, fused ``Primitive`` functions nested
  inside their caller's cluster), and fills the highlighted nodes.
* Large graphs are truncated: nodes are taken breadth-first from the roots up
  to ``max_nodes`` (default 2000), so the cost is O(max_nodes) however large
  the graph; a dashed note node marks where edges were cut.
* :func:`to_svg` / :class:`Graph` (``_repr_svg_`` for notebooks) render with
  the ``graphviz`` Python package and the ``dot`` binary, and raise
  :class:`GraphvizNotFoundError` with install instructions when either is missing.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from .errors import GraphvizNotFoundError, WellFormedError
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
from .text.printer import _inline_const, type_str

__all__ = ["to_dot", "to_svg", "Graph", "viz", "GraphvizNotFoundError", "MAX_NODES"]

MAX_NODES = 2000
_FILL = "#ffd54f"


def _q(s: str) -> str:
    """A DOT double-quoted string."""
    return json.dumps(s, ensure_ascii=False)


def _call_label(n: Any) -> str:
    return n.op.name if type(n.op) is Op else "call"


_TYPE_LABEL = 80  # characters of a variable's type in its label (a long symbolic shape is cut)


def _var_label(n: Any) -> str:
    t = n.type_annotation
    if t is None:
        return "%" + n.name_hint
    ts = type_str(t)
    return "%" + n.name_hint + "\n" + (ts if len(ts) <= _TYPE_LABEL else ts[:_TYPE_LABEL - 3] + "...")


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


def _highlight_ids(highlight: Iterable[Any] | None) -> set[bytes]:
    out: set[bytes] = set()
    for h in highlight or ():
        if isinstance(h, Node):
            out.add(h.id)
        elif isinstance(h, bytes):
            out.add(h)
        elif isinstance(h, str):
            out.add(bytes.fromhex(h))
        else:
            raise WellFormedError(f"highlight takes nodes or ids, got {h!r}")
    return out


def to_dot(obj: Expr | Module, highlight: Iterable[Any] | None = None, *, max_nodes: int = MAX_NODES,
           name: str = "pyir") -> str:
    """DOT text of an expression or module (see the module docstring)."""
    hl = _highlight_ids(highlight)
    roots: list[tuple[Node, int]] = []
    clusters: dict[int, tuple[int | None, str]] = {}  # cluster -> (parent, label)
    if isinstance(obj, Module):
        for i, (fname, f) in enumerate(obj.items()):
            clusters[i] = (None, "@" + fname)
            roots.append((f, i))
    elif isinstance(obj, Expr):
        roots.append((obj, -1))
    else:
        raise WellFormedError(f"to_dot draws an expression or a module, got {type(obj).__name__}")
    index: dict[Node, int] = {}
    where: dict[Node, int] = {}  # node -> cluster (-1: top level)
    order: list[Node] = []
    queue: deque[tuple[Node, int]] = deque()
    for r, c in roots:
        if r not in index:
            index[r] = len(order)
            order.append(r)
            where[r] = c
            queue.append((r, c))
    module_roots = {r for r, c in roots if c != -1}
    cut: list[Node] = []
    while queue:
        n, c = queue.popleft()
        inner = c
        if type(n) is Function and n not in module_roots:
            inner = len(clusters)
            label = "Primitive" if n.attrs.get("Primitive") else "fn"
            clusters[inner] = (c if c != -1 else None, label)
        truncated = False
        for ch in n.children():
            if ch in index:
                if where[ch] != inner and type(ch) is Constant:
                    where[ch] = -1  # shared between clusters: draw at top level
                continue
            if len(order) >= max_nodes:
                truncated = True
                continue
            index[ch] = len(order)
            order.append(ch)
            where[ch] = inner
            queue.append((ch, inner))
        if truncated:
            cut.append(n)
    lines = [f"digraph {_q(name)} {{", "  rankdir=BT;",
             '  node [fontname="monospace", fontsize=10, shape=box];', '  edge [arrowsize=0.6];']
    members: dict[int, list[str]] = {}
    for n in order:
        i = index[n]
        attrs = [f"label={_q(_label(n))}", f"shape={_shape(n)}", f"tooltip={_q(n.id.hex())}"]
        if n.id in hl:
            attrs.append(f'style="filled{",rounded" if type(n) is Constant else ""}"')
            attrs.append(f'fillcolor="{_FILL}"')
        members.setdefault(where[n], []).append(f"n{i} [{', '.join(attrs)}];")
    # clusters, nested, emitted without recursion
    kids: dict[int | None, list[int]] = {}
    for cid, (parent, _) in clusters.items():
        kids.setdefault(parent, []).append(cid)
    for stmt in members.get(-1, []):
        lines.append("  " + stmt)
    stack: list[tuple[int, int, bool]] = [(cid, 1, False) for cid in reversed(kids.get(None, []))]
    while stack:
        cid, depth, closing = stack.pop()
        pad = "  " * depth
        if closing:
            lines.append(pad + "}")
            continue
        label = clusters[cid][1]
        lines.append(f"{pad}subgraph cluster_{cid} {{")
        lines.append(f"{pad}  label={_q(label)}; style=rounded; color=\"#8c959f\";")
        for stmt in members.get(cid, []):
            lines.append(f"{pad}  {stmt}")
        stack.append((cid, depth, True))
        for sub in reversed(kids.get(cid, [])):
            stack.append((sub, depth + 1, False))
    for n in order:
        i = index[n]
        for pos, ch in enumerate(n.children()):
            j = index.get(ch)
            if j is None:
                continue
            lab = ""
            if type(n) is Call and type(n.op) is not Op and pos == 0:
                lab = ' [label="callee", style=dashed]'
            elif type(n) is Function and type(ch) is Var:
                lab = " [style=dotted, arrowhead=none]"
            lines.append(f"  n{j} -> n{i}{lab};")
    if cut:
        lines.append(f'  elided [label={_q(f"… more nodes not drawn (max_nodes={max_nodes})")}, '
                     'shape=note, style=dashed];')
        for n in cut:
            lines.append(f"  elided -> n{index[n]} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(obj: Expr | Module | str, highlight: Iterable[Any] | None = None, *,
           max_nodes: int = MAX_NODES) -> str:
    """SVG text rendered by Graphviz (``obj`` may also be DOT text)."""
    src = obj if isinstance(obj, str) else to_dot(obj, highlight, max_nodes=max_nodes)
    try:
        import graphviz
    except ImportError:
        raise GraphvizNotFoundError("rendering SVG needs the 'graphviz' Python package "
                                    "(pip install graphviz) and the Graphviz 'dot' binary "
                                    "(e.g. apt-get install graphviz); to_dot() works without them") from None
    try:
        out = graphviz.Source(src).pipe(format="svg")
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFoundError("the Graphviz 'dot' binary was not found on PATH: install Graphviz "
                                    "(e.g. apt-get install graphviz or brew install graphviz)") from None
    return out.decode() if isinstance(out, bytes) else str(out)


class Graph:
    """A picture of an expression or module: ``.source`` is DOT; notebooks show the SVG."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __repr__(self) -> str:
        return f"<Graph: {self.source.count(chr(10))} lines of DOT>"

    def svg(self) -> str:
        """Render to SVG (needs Graphviz, see :func:`to_svg`)."""
        return to_svg(self.source)

    def _repr_svg_(self) -> str:
        return self.svg()


def viz(obj: Expr | Module, highlight: Iterable[Any] | None = None, *, max_nodes: int = MAX_NODES) -> Graph:
    """A :class:`Graph` of ``obj`` with ``highlight`` (nodes or ids) filled."""
    return Graph(to_dot(obj, highlight, max_nodes=max_nodes))
