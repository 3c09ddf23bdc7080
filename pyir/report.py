"""A pass-run report: time, node counts, changed nodes and lineage per pass.

>>> import pyir
>>> from pyir.transform.base import PassContext
>>> rep = ReportInstrument()
>>> with PassContext(instruments=[rep]):
...     _ = pyir.transform.base.Sequential([])(pyir.testing.resnet(1))
>>> rep.rows
[]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, TextIO

from .analysis.diff import changed_nodes
from .ir.module import Module
from .ir.traverse import count_nodes
from .transform.base import Pass, PassInstrument, Sequential

__all__ = ["ReportInstrument", "PassRow"]


@dataclass(frozen=True)
class PassRow:
    """One pass run in a report."""

    name: str
    seconds: float
    nodes_before: int
    nodes_after: int
    nodes_changed: int
    lineage_edges: int
    changed: bool


class ReportInstrument(PassInstrument):
    """Collects one :class:`PassRow` per pass run (``Sequential`` wrappers are skipped).

    ``report()`` gives a text table, ``_repr_html_`` an HTML table.  With
    ``progress=True`` a line per pass is printed to ``file`` (stderr by default)
    as the pipeline runs.  Counting nodes walks each module once (the count of a
    pass's output is reused as the next pass's input count); changed nodes are
    counted with :func:`pyir.analysis.diff.changed_nodes`, proportional to the change.
    """

    def __init__(self, *, progress: bool = False, file: TextIO | None = None) -> None:
        self.rows: list[PassRow] = []
        self.progress = progress
        self.file = file
        self._last: tuple[Module, int] | None = None
        self._index = 0

    def _count(self, mod: Module) -> int:
        if self._last is not None and self._last[0] is mod:
            return self._last[1]
        n = count_nodes(list(mod.functions().values()))
        self._last = (mod, n)
        return n

    def enter_pass(self, pass_: Pass, mod: Module) -> None:
        if self.progress and not isinstance(pass_, Sequential):
            self._index += 1
            print(f"[{self._index}] {pass_.name} ...", file=self.file or sys.stderr, flush=True)

    def exit_pass(self, pass_: Pass, before: Module, after: Module, seconds: float) -> None:
        if isinstance(pass_, Sequential):
            return
        nb = self._count(before)
        if after is before:
            row = PassRow(pass_.name, seconds, nb, nb, 0, 0, False)
        else:
            changed = 0
            fb, fa = before.functions(), after.functions()
            olds = [f for k, f in fb.items() if fa.get(k) is not f]
            news = [f for k, f in fa.items() if fb.get(k) is not f]
            if news:
                changed = len(changed_nodes(olds, news)[0])
            edges = 0
            if len(after.pass_records) > len(before.pass_records):
                edges = len(after.pass_records[-1].edges)
            row = PassRow(pass_.name, seconds, nb, self._count(after), changed, edges, True)
        self.rows.append(row)
        if self.progress:
            print(f"    {row.name}: {row.seconds * 1e3:.1f} ms, nodes {row.nodes_before} -> "
                  f"{row.nodes_after}, {row.nodes_changed} new", file=self.file or sys.stderr, flush=True)

    def total_seconds(self) -> float:
        """Sum of the pass times."""
        return sum(r.seconds for r in self.rows)

    _HEADER = ("pass", "ms", "nodes before", "nodes after", "new nodes", "lineage edges")

    def _cells(self, r: PassRow) -> tuple[Any, ...]:
        return (r.name + ("" if r.changed else " (no change)"), f"{r.seconds * 1e3:.2f}", r.nodes_before,
                r.nodes_after, r.nodes_changed, r.lineage_edges)

    def report(self) -> str:
        """A text table, one line per pass run, and a total."""
        rows = [self._HEADER] + [tuple(str(c) for c in self._cells(r)) for r in self.rows]
        rows.append(("total", f"{self.total_seconds() * 1e3:.2f}", "", "", "", ""))
        widths = [max(len(r[i]) for r in rows) for i in range(len(self._HEADER))]
        out = []
        for j, r in enumerate(rows):
            cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
            out.append("  ".join(cells))
            if j == 0 or j == len(rows) - 2:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)

    def __str__(self) -> str:
        return self.report()

    def _repr_html_(self) -> str:
        from .display import _wrap, table_html

        rows = [self._cells(r) for r in self.rows]
        rows.append(("total", f"{self.total_seconds() * 1e3:.2f}", "", "", "", ""))
        return _wrap(table_html(self._HEADER, rows))
