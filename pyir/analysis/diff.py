"""``diff(before, after)``: what changed between two modules or two expressions.

Because nodes are hash-consed, an unchanged subgraph is the *same object* in
both versions, so a diff is a question of reachability: the new nodes are
those reachable from ``after`` but not from ``before``, the removed nodes the
converse.

The walk is proportional to the change, not to the graph
--------------------------------------------------------
Every node gets a *height* (1 + the largest height of its children, 0 for
leaves), kept in a weak side table so it is computed once per node: the first
diff involving a module walks it fully, later diffs only walk nodes they have
never seen (in a pipeline, the new nodes of each pass).

Both graphs are then explored together from their roots in *decreasing
height* (a heap).  Each discovered node carries the set of sides it was reached
from.  A node is popped only after every parent that can reach it (parents are
higher), so when it is popped its sides are final:

* reached from ``after`` only: new;  from ``before`` only: removed;
* reached from both: shared.  Its subgraph is shared too, so it is expanded
  only while some node of one side only is still pending below it (such a
  node may also sit under the shared one); as soon as no one-sided node is
  pending, the walk stops.

For an edit of a chain (the common pass rewrite), the work is the changed
nodes plus their frontier; for a wide DAG with a change near the leaves the
walk may cover the shared region above the change (never more than both
graphs).  ``benchmarks/bench_equality.py`` measures it against a full walk.
"""

from __future__ import annotations

import difflib
import heapq
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import PyIRError, WellFormedError
from ..ir import hooks
from ..ir.dims import dim_str
from ..ir.expr import Call, Expr, Function, GlobalVar, Op, Var
from ..ir.module import Module
from ..ir.node import Node
from ..ir.types import TensorType
from ..progress import Progress
from ..text.printer import astext
from .equality import gc_paused

__all__ = ["diff", "Diff", "FunctionDiff", "height", "changed_nodes"]

_heights: weakref.WeakKeyDictionary[Node, int] = weakref.WeakKeyDictionary()


def _ensure_heights(roots: Iterable[Node]) -> dict[Node, int]:
    """Heights of everything reachable from ``roots`` that has none yet; returns a lookup dict."""
    table = _heights
    local: dict[Node, int] = {}
    stack: list[tuple[Node, bool]] = [(r, False) for r in roots]
    push = stack.append
    pop = stack.pop
    while stack:
        n, done = pop()
        if done:
            h = 0
            for c in n.children():
                hc = local[c] if c in local else table[c]
                if hc >= h:
                    h = hc + 1
            local[n] = h
            continue
        if n in local or n in table:
            continue
        kids = n.children()
        if not kids:
            local[n] = 0
            continue
        push((n, True))
        for c in kids:
            if c not in local and c not in table:
                push((c, False))
    if local:
        table.update(local)
    return local


def height(node: Node) -> int:
    """Length of the longest path from ``node`` down to a leaf (cached per node)."""
    h = _heights.get(node)
    if h is None:
        with gc_paused():
            _ensure_heights([node])
        h = _heights[node]
    return h


def changed_nodes(before: Iterable[Node], after: Iterable[Node]) -> tuple[list[Node], list[Node], list[Node]]:
    """``(new, removed, frontier)``: nodes only reachable from ``after``, only from
    ``before``, and the shared nodes where the walk stopped (see the module docstring)."""
    before = list(before)
    after = list(after)
    with gc_paused():
        _ensure_heights(before + after)
        table = _heights
        side: dict[Node, int] = {}
        heap: list[tuple[int, int, Node]] = []
        seq = 0
        pending = 0  # queued nodes reached from one side only
        for bit, roots in ((1, after), (2, before)):
            for r in roots:
                old = side.get(r, 0)
                if old == 0:
                    heapq.heappush(heap, (-table[r], seq, r))
                    seq += 1
                    pending += 1
                elif old != bit and old != 3:
                    pending -= 1
                side[r] = old | bit
        new: list[Node] = []
        removed: list[Node] = []
        frontier: list[Node] = []
        pop = heapq.heappop
        hpush = heapq.heappush
        while heap and pending:
            _, _, n = pop(heap)
            s = side[n]
            if s == 3:
                frontier.append(n)
            else:
                pending -= 1
                (new if s == 1 else removed).append(n)
            for c in n.children():
                old = side.get(c, 0)
                if old == 0:
                    hpush(heap, (-table[c], seq, c))
                    seq += 1
                    side[c] = s
                    if s != 3:
                        pending += 1
                elif old | s != old:
                    if old != 3:
                        pending -= 1  # becomes shared
                    side[c] = 3
        # frontier nodes still queued are shared and reached: count them too
        frontier.extend(n for _, _, n in heap if side[n] == 3)
    return new, removed, frontier


@dataclass
class FunctionDiff:
    """Changes of one function (or expression): new, removed and shared-frontier nodes."""

    name: str
    before: Expr | None
    after: Expr | None
    new: list[Node] = field(default_factory=list)
    removed: list[Node] = field(default_factory=list)
    frontier: list[Node] = field(default_factory=list)
    _pairs: list[tuple[Node, Node, str]] | None = field(default=None, repr=False, compare=False)

    @property
    def shared(self) -> int:
        """Number of nodes of ``after`` that were already in ``before`` (walks ``after``)."""
        if self.after is None:
            return 0
        from ..ir.traverse import count_nodes

        return count_nodes(self.after) - len(self.new)

    @property
    def type_changes(self) -> list[str]:
        """Readable changes of declared types: a function's parameters (by position) and return
        type, and variables matched by name among the removed and new nodes, each as
        ``%x: dimension 0: batch -> n`` (or the whole types when ranks differ).

        >>> import pyir
        >>> f = lambda s: pyir.Function([x := pyir.var("x", shape=(s, 3))], pyir.op.nn.relu(x))
        >>> pyir.diff(f("batch"), f("n")).functions["<expr>"].type_changes
        ['%x: dimension 0: batch -> n']
        """
        out: list[str] = []
        b, a = self.before, self.after
        pairs: list[tuple[str, Any, Any]] = []
        seen: set[tuple[int, int]] = set()
        if type(b) is Function and type(a) is Function:
            if len(b.params) == len(a.params):
                for p, q in zip(b.params, a.params):
                    pairs.append((f"%{q.name_hint}", p.type_annotation, q.type_annotation))
                    seen.add((id(p), id(q)))
            pairs.append(("return type", b.ret_type, a.ret_type))
        olds = _vars_by_name(self.removed)
        news = _vars_by_name(self.new)
        for name in sorted(set(olds) & set(news)):
            p, q = olds[name], news[name]
            if (id(p), id(q)) not in seen:
                pairs.append((f"%{name}", p.type_annotation, q.type_annotation))
        for what, t0, t1 in pairs:
            if t0 is not t1:
                out.append(f"{what}: {_type_change(t0, t1)}")
        return out


@dataclass
class Diff:
    """The result of :func:`diff`: function names added/removed/changed, and per changed
    function a :class:`FunctionDiff`.  ``str(d)`` is a unified text diff; in a
    notebook it renders side by side (``pyir.display``)."""

    before: Any
    after: Any
    added: list[str]
    removed: list[str]
    changed: list[str]
    functions: dict[str, FunctionDiff]

    @property
    def new_nodes(self) -> list[Node]:
        """All new nodes, over every changed or added function."""
        return [n for fd in self.functions.values() for n in fd.new]

    @property
    def removed_nodes(self) -> list[Node]:
        """All removed nodes, over every changed or removed function."""
        return [n for fd in self.functions.values() for n in fd.removed]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def summary(self) -> str:
        """One line per added/removed/changed function with node counts."""
        if not self:
            return "no changes"
        out = []
        for name in self.added:
            out.append(f"+ @{name}: added ({len(self.functions[name].new)} new nodes)")
        for name in self.removed:
            out.append(f"- @{name}: removed ({len(self.functions[name].removed)} nodes)")
        for name in self.changed:
            fd = self.functions[name]
            out.append(f"~ @{name}: {len(fd.new)} new, {len(fd.removed)} removed nodes")
            out.extend(f"    {c}" for c in fd.type_changes)
        return "\n".join(out)

    def pairs(self, name: str) -> list[tuple[Node, Node, str]]:
        """``(old, new, how)`` for the removed and new nodes of function ``name`` that are one
        another's versions: ``how`` is ``"lineage"`` when the after-module's lineage says the
        new node derives from the old one (its representative hit, see ``Module.find``), else
        ``"structure"`` (same kind and operator, in printing order) where lineage is silent."""
        fd = self.functions[name]
        cached = fd._pairs
        if cached is not None:
            return cached
        after = self.after if isinstance(self.after, Module) else None
        fd._pairs = out = _pair_nodes(fd, after)
        return out

    def aligned(self, name: str) -> list[tuple[str, int | None, str | None, int | None, str | None]]:
        """Rows ``(status, before line no, before text, after line no, after text)`` of function
        ``name``'s printed text, aligned by node rather than by text: a line printing a node
        both versions share is ``"same"`` (even when its ``%N`` numbers moved), a line of a
        paired old/new node (:meth:`pairs`) is ``"changed"`` when its text differs beyond the
        numbers (else ``"same"``: only something upstream changed), the others ``"removed"``
        or ``"added"``.  Line numbers count from 1."""
        fd = self.functions[name]
        a_text, a_nodes = _lines_with_nodes(fd.before, name)
        b_text, b_nodes = _lines_with_nodes(fd.after, name)
        pairs = self.pairs(name)
        old_pair = {o: k for k, (o, _, _) in enumerate(pairs)}
        new_pair = {n: k for k, (_, n, _) in enumerate(pairs)}
        removed, new = set(fd.removed), set(fd.new)

        def key(n: Node | None, text: str, gone: set[Node], paired: dict[Node, int], side: str) -> Any:
            if n is None:
                return ("t", _RENUMBER.sub("%_", text).strip())
            if n in gone:
                k = paired.get(n)
                return ("p", k) if k is not None else (side, id(n))
            return ("n", id(n))

        ak = [key(n, t, removed, old_pair, "r") for n, t in zip(a_nodes, a_text)]
        bk = [key(n, t, new, new_pair, "a") for n, t in zip(b_nodes, b_text)]
        rows: list[tuple[str, int | None, str | None, int | None, str | None]] = []
        sm = difflib.SequenceMatcher(None, ak, bk, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    # a new version of a node printed alike (only its inputs' numbers moved) is the
                    # same line: the change is where the text differs, not everything downstream
                    st = "changed" if ak[i][0] == "p" and _RENUMBER.sub("%_", a_text[i]) != \
                        _RENUMBER.sub("%_", b_text[j]) else "same"
                    rows.append((st, i + 1, a_text[i], j + 1, b_text[j]))
                continue
            for i in range(i1, i2):
                rows.append(("removed", i + 1, a_text[i], None, None))
            for j in range(j1, j2):
                rows.append(("added", None, None, j + 1, b_text[j]))
        return rows

    def text_pair(self, name: str) -> tuple[list[str], list[str]]:
        """The printed lines of function ``name`` before and after."""
        fd = self.functions[name]
        return (_lines(fd.before, name), _lines(fd.after, name))

    def __str__(self) -> str:
        parts = [self.summary()]
        for name in [*self.removed, *self.added, *self.changed]:
            a, b = self.text_pair(name)
            parts.extend(difflib.unified_diff(a, b, f"before @{name}", f"after @{name}", lineterm="", n=2))
        return "\n".join(parts) + "\n"

    def __repr__(self) -> str:
        return (f"<Diff +{len(self.added)} -{len(self.removed)} ~{len(self.changed)} functions, "
                f"{len(self.new_nodes)} new / {len(self.removed_nodes)} removed nodes>")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        return hooks.diff_html(self)


def _vars_by_name(nodes: list[Node]) -> dict[str, Var]:
    """The variables among ``nodes`` whose name is unique there, by name."""
    out: dict[str, Var] = {}
    dup: set[str] = set()
    for n in nodes:
        if type(n) is Var:
            if n.name_hint in out:
                dup.add(n.name_hint)
            out[n.name_hint] = n
    for d in dup:
        del out[d]
    return out


_LIMIT = 120  # characters of a dimension or type quoted in a change


def _type_change(t0: Any, t1: Any) -> str:
    """``dimension 1: n * 3 -> n * 3 + 1``, ``dtype float32 -> float16``, or both types."""
    if type(t0) is TensorType and type(t1) is TensorType and len(t0.shape) == len(t1.shape):
        parts = [f"dimension {i}: {dim_str(d0, _LIMIT)} -> {dim_str(d1, _LIMIT)}"
                 for i, (d0, d1) in enumerate(zip(t0.shape, t1.shape)) if d0 is not d1 and d0 != d1]
        if t0.dtype != t1.dtype:
            parts.append(f"dtype {t0.dtype} -> {t1.dtype}")
        if parts:
            return ", ".join(parts)
    return f"{_type_text(t0)} -> {_type_text(t1)}"


def _type_text(t: Any) -> str:
    if t is None:
        return "(none)"
    s = str(t)
    return s if len(s) <= _LIMIT else s[:_LIMIT] + "..."


_RENUMBER = re.compile(r"%\d+|meta\[[\w.]*Constant\]\[\d+\]")


def _signature(n: Node) -> tuple[Any, ...]:
    op = getattr(n, "op", None) if type(n) is Call else None
    return (type(n), op.name if type(op) is Op else None)


def _pair_nodes(fd: FunctionDiff, after: Module | None) -> list[tuple[Node, Node, str]]:
    """See :meth:`Diff.pairs`."""
    new_set = set(fd.new)
    used: set[Node] = set()
    out: list[tuple[Node, Node, str]] = []
    if after is not None and len(after.pass_records):
        for r in fd.removed:
            if not isinstance(r, Expr) or type(r) in (Op, GlobalVar):
                continue
            try:
                hits = after.find(r)
            except PyIRError:
                continue
            cands = [h for h in hits if h in new_set and h not in used]
            if not cands:
                continue
            rep = hits.representative
            pick = rep if rep is not None and rep in cands else cands[0]
            used.add(pick)
            out.append((r, pick, "lineage"))
    paired = {o for o, _, _ in out}
    buckets: dict[tuple[Any, ...], list[Node]] = {}
    for n in fd.new:
        if n not in used and isinstance(n, Expr) and type(n) not in (Op, GlobalVar):
            buckets.setdefault(_signature(n), []).append(n)
    for r in fd.removed:
        if r in paired or not isinstance(r, Expr) or type(r) in (Op, GlobalVar):
            continue
        b = buckets.get(_signature(r))
        if b:
            out.append((r, b.pop(0), "structure"))
    return out


def _lines_with_nodes(e: Expr | None, name: str) -> tuple[list[str], list[Node | None]]:
    """The printed lines of ``e`` and, per line, the node it binds (None for a line that binds
    none: a header, a brace)."""
    if e is None:
        return [], []
    entries: list[Any] = []
    obj: Any = Module({name: e}) if isinstance(e, Function) and name != "<expr>" else e
    text = astext(obj, show_meta_data=False, names_out=entries)
    lines = text.splitlines()
    nodes: list[Node | None] = [None] * len(lines)
    for n, _func, _label, line in entries:
        if 0 <= line < len(lines) and type(n) is not Var and nodes[line] is None:
            nodes[line] = n
    return lines, nodes


def _lines(e: Expr | None, name: str) -> list[str]:
    if e is None:
        return []
    if isinstance(e, Function) and name != "<expr>":
        return astext(Module({name: e}), show_meta_data=False).splitlines()
    return astext(e, show_meta_data=False).splitlines()


def diff(before: Module | Expr, after: Module | Expr) -> Diff:
    """Compare two modules (function by function) or two expressions.

    Time is proportional to the changed region (see the module docstring);
    unchanged functions (the same object) cost nothing.
    """
    if isinstance(before, Module) and isinstance(after, Module):
        fb, fa = before.functions(), after.functions()
        added = sorted(n for n in fa if n not in fb)
        removed = sorted(n for n in fb if n not in fa)
        changed = sorted(n for n in fa if n in fb and fa[n] is not fb[n])
        funcs: dict[str, FunctionDiff] = {}
        with Progress("diff", total=len(added) + len(removed) + len(changed), unit="functions") as shown:
            for n in added:
                shown.note("@" + n)
                new, _, _ = changed_nodes([], [fa[n]])
                funcs[n] = FunctionDiff(n, None, fa[n], new)
                shown.update()
            for n in removed:
                shown.note("@" + n)
                _, rem, _ = changed_nodes([fb[n]], [])
                funcs[n] = FunctionDiff(n, fb[n], None, [], rem)
                shown.update()
            for n in changed:
                shown.note("@" + n)
                new, rem, fr = changed_nodes([fb[n]], [fa[n]])
                funcs[n] = FunctionDiff(n, fb[n], fa[n], new, rem, fr)
                shown.update()
        return Diff(before, after, added, removed, changed, funcs)
    if isinstance(before, Expr) and isinstance(after, Expr):
        if before is after:
            return Diff(before, after, [], [], [], {})
        new, rem, fr = changed_nodes([before], [after])
        fd = FunctionDiff("<expr>", before, after, new, rem, fr)
        return Diff(before, after, [], [], ["<expr>"], {"<expr>": fd})
    raise WellFormedError(f"diff compares two modules or two expressions, got {type(before).__name__} "
                          f"and {type(after).__name__}")
