"""``pyir.summary(mod)``: what a large module is, at a glance, in text and in HTML.

A summary lists, for the whole module and per function: the node count, an operator
histogram (most used first), the inputs and outputs of ``main`` with their types, the
parameters and the weights (constants: how many, elements, bytes), the fused functions
(how many, which operator groups), and the pass history (pass, lineage edges, time).
Its HTML puts each part in a ``<details>`` element (the histogram and history open,
the long lists closed), and its size is bounded whatever the module's (rows past a
limit are counted, not shown), so a notebook that displays a 10^5-node module stays
small.  One walk of the module (iterative), reused for every part.

    >>> import pyir
    >>> s = pyir.summary(pyir.testing.resnet(1))
    >>> s.nodes > 20 and s.ops.most_common(1)[0][0] in ("nn.conv2d", "nn.relu", "add", "nn.batch_norm")
    True
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .errors import WellFormedError
from .ir.expr import Call, Constant, Function, Op
from .ir.module import Module
from .ir.node import Node
from .ir.traverse import post_order
from .text.printer import type_str

__all__ = ["summary", "Summary", "FunctionSummary", "MAX_ROWS"]

MAX_ROWS = 12  # rows of a long list shown (the rest is counted)


def _nbytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def _short(s: str, n: int = 100) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


@dataclass
class FunctionSummary:
    """One function: nodes, operators, parameters, weights."""

    name: str
    nodes: int
    ops: Counter[str]
    params: list[tuple[str, str]]      # (name, type)
    ret: str
    constants: int
    weight_elements: int
    weight_bytes: int
    primitive: bool
    calls: int                         # calls of fused (primitive) functions inside it


@dataclass
class Summary:
    """What :func:`summary` returns; ``str()`` is a text report, ``_repr_html_`` the HTML."""

    functions: list[FunctionSummary]
    nodes: int
    ops: Counter[str]
    groups: Counter[str]               # fused functions by their operator group ("nn.conv2d+add")
    history: list[tuple[str, int, float]] = field(default_factory=list)  # (pass, edges, seconds)

    @property
    def weight_bytes(self) -> int:
        return sum(f.weight_bytes for f in self.functions)

    @property
    def main(self) -> FunctionSummary | None:
        return next((f for f in self.functions if f.name == "main"), None)

    def lines(self) -> list[str]:
        """The text report, line by line."""
        out = [f"Module: {len(self.functions)} function(s), {self.nodes:,} nodes, "
               f"{sum(f.constants for f in self.functions):,} constants ({_nbytes(self.weight_bytes)})"]
        m = self.main
        if m is not None:
            out.append(f"main: {len(m.params)} input(s) -> {_short(m.ret, 160)}")
            for name, t in m.params[:MAX_ROWS]:
                out.append(f"  %{name}: {_short(t)}")
            if len(m.params) > MAX_ROWS:
                out.append(f"  ... {len(m.params) - MAX_ROWS} more input(s)")
        out.append("operators: " + ", ".join(f"{k} x{v}" for k, v in self.ops.most_common(MAX_ROWS))
                   + (f", ... ({len(self.ops) - MAX_ROWS} more kinds)" if len(self.ops) > MAX_ROWS else ""))
        if self.groups:
            out.append(f"fused functions: {sum(self.groups.values())} in {len(self.groups)} group(s): "
                       + ", ".join(f"{k} x{v}" for k, v in self.groups.most_common(6)))
        if self.history:
            out.append("passes: " + " -> ".join(p for p, _, _ in self.history[-MAX_ROWS:]))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"<Summary {self.nodes:,} nodes, {len(self.functions)} function(s)>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        return summary_html(self)


def _function_summary(name: str, f: Function, order: list[Node]) -> FunctionSummary:
    ops: Counter[str] = Counter()
    consts = elems = nbytes = calls = 0
    for n in order:
        t = type(n)
        if t is Call:
            o = n.op  # type: ignore[attr-defined]
            if type(o) is Op:
                ops[o.name] += 1
            elif type(o) is Function and o.attrs.get("Primitive"):
                calls += 1
        elif t is Constant:
            consts += 1
            elems += int(n.data.size)  # type: ignore[attr-defined]
            nbytes += int(n.data.nbytes)  # type: ignore[attr-defined]
    params = [(p.name_hint, type_str(p.type_annotation) if p.type_annotation is not None else "?")
              for p in f.params]
    ret = type_str(f.ret_type) if f.ret_type is not None else "?"
    if f.ret_type is None:
        from .ir.node import cached_type

        ft = cached_type(f)
        if ft is not None:
            ret = type_str(ft.ret_type)
    return FunctionSummary(name, len(order), ops, params, ret, consts, elems, nbytes,
                           bool(f.attrs.get("Primitive")), calls)


def summary(mod: Module | Function) -> Summary:
    """The :class:`Summary` of a module (or of one function)."""
    if isinstance(mod, Function):
        mod = Module({"main": mod})
    if not isinstance(mod, Module):
        raise WellFormedError(f"summary takes a Module or a Function, got {type(mod).__name__}")
    funcs = []
    total: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    seen_fused: set[Node] = set()
    nodes = 0
    for name, f in mod.items():
        order = post_order(f)
        fs = _function_summary(name, f, order)
        funcs.append(fs)
        total.update(fs.ops)
        nodes += fs.nodes
        for n in order:
            if type(n) is Function and n.attrs.get("Primitive") and n not in seen_fused:
                seen_fused.add(n)
                inner = [m.op.name for m in post_order(n.body) if type(m) is Call and type(m.op) is Op]
                groups["+".join(dict.fromkeys(inner)) or "(empty)"] += 1
    history = [(r.name, len(r.edges), r.seconds) for r in mod.pass_records]
    return Summary(funcs, nodes, total, groups, history)


def _esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _table(header: list[str], rows: list[list[Any]], total: int | None = None) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows[:MAX_ROWS])
    more = ""
    n = len(rows) if total is None else total
    if n > MAX_ROWS:
        more = f'<div class="note">... {n - MAX_ROWS} more row(s) not shown</div>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def summary_html(s: Summary) -> str:
    """The HTML of a :class:`Summary` (bounded: at most ``MAX_ROWS`` rows per table); in a
    notebook ``pyir.display`` wraps it with its style sheet."""
    return '<div class="pyir pyir-summary">' + "".join(summary_parts(s)) + "</div>"


def summary_parts(s: Summary) -> list[str]:
    """The HTML parts of a summary: a heading line and one ``<details>`` per part."""
    m = s.main
    head = (f"<div><b>Module</b> with {len(s.functions)} function(s), {s.nodes:,} nodes, "
            f"{sum(f.constants for f in s.functions):,} constants ({_esc(_nbytes(s.weight_bytes))})"
            + (f", {len(s.history)} pass record(s)" if s.history else "") + "</div>")
    parts = [head]
    if m is not None:
        rows: list[list[Any]] = [[f"%{n}", _short(t)] for n, t in m.params]
        parts.append(f"<details open><summary>main: {len(m.params)} input(s) &rarr; "
                     f"<code>{_esc(_short(m.ret, 160))}</code></summary>"
                     f"{_table(['input', 'type'], rows)}</details>")
    total = sum(s.ops.values())
    rows = [[k, v, f"{100 * v / max(total, 1):.1f}%"] for k, v in s.ops.most_common()]
    parts.append(f"<details open><summary>operators: {total:,} calls of {len(s.ops)} kind(s)</summary>"
                 f"{_table(['operator', 'calls', 'share'], rows)}</details>")
    if s.groups:
        rows = [[k, v] for k, v in s.groups.most_common()]
        parts.append(f"<details><summary>fused functions: {sum(s.groups.values())} in {len(s.groups)} "
                     f"group(s)</summary>{_table(['operators', 'functions'], rows)}</details>")
    rows = [[f"@{f.name}", f"{f.nodes:,}", len(f.params), f.constants, _nbytes(f.weight_bytes),
             "yes" if f.primitive else ""] for f in s.functions]
    parts.append(f"<details><summary>functions ({len(s.functions)})</summary>"
                 f"{_table(['function', 'nodes', 'params', 'constants', 'weights', 'primitive'], rows)}"
                 "</details>")
    if s.history:
        rows = [[p, e, f"{1e3 * t:.1f}"] for p, e, t in s.history]
        parts.append(f"<details open><summary>pass history ({len(s.history)})</summary>"
                     f"{_table(['pass', 'lineage edges', 'ms'], rows)}</details>")
    return parts
