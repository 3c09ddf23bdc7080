"""Answers a notebook user can read: what ``mod.find``, ``mod.origins``, ``mod.history``,
``mod.show`` and ``mod.tabular`` return.

Each answer keeps the plain container it always was (``find`` and ``history`` are lists,
``origins`` a set of ids), so code that iterates, indexes, compares or ``len()``s it works
unchanged, and adds a text form (``repr``/``str``: a bounded table) and an HTML form
(``_repr_html_``, filled in by :mod:`pyir.display`).  Rows name each node by what it is:
its kind and operator, its type, its name in the printed program (``print(mod)``, see
:meth:`pyir.Module.name_of`) and its function.

**The representative of a find.**  ``find(x)`` returns every node that is, or derives from,
``x``: after FuseOps the conv itself (inside the fused function), the fused function and
the call of it.  :attr:`FindResult.representative` is the hit that plays ``x``'s role: among
the hits of the same kind as ``x`` and, for an operator call, of the same operator (a call of
a fused function is a call of another callee), the one of the same type, then the innermost
(inside the most nested function), then the first printed.  When ``x`` is no longer alive
(only its id is known), a call of an operator is preferred to any other hit.  A hit of
another kind is the representative only when no hit has ``x``'s kind.

**Origins** resolve to the nodes they name while those are alive (the intern table holds
them weakly: keep the original module to see them) and to the external sources a frontend
recorded (ONNX node names: ``(name, op_type)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import PyIRError
from . import hooks
from .expr import Call, Constant, Expr, Function, GlobalVar, Op, Var
from .node import Node, _table, _typed_equal, cached_type

__all__ = ["FindResult", "Origins", "History", "Listing", "Table", "live_node", "MAX_ROWS", "NAME_LIMIT"]

MAX_ROWS = 30  #: rows shown by the text forms (the rest is counted)
NAME_LIMIT = 200_000  #: modules with more nodes are not printed just to name the hits of an answer


def live_node(node_id: bytes) -> Node | None:
    """The live node of id ``node_id`` (from the intern table, which holds nodes weakly), or None."""
    r = _table.get(node_id)
    n = None if r is None else r()
    return n if n is not None and n.id == node_id else None


def _short(n: Node | None, i: bytes | None = None, limit: int = 70) -> str:
    if n is None:
        return f"#{i.hex()[:8]} (not alive)" if i is not None else "-"
    s = hooks.short_repr(n)
    return s if len(s) <= limit else s[:limit - 4] + " ...>"


def _op_name(n: Node) -> str:
    k = type(n)
    if k is Call:
        op = n.op  # type: ignore[attr-defined]
        if type(op) is Op:
            return op.name
        if type(op) is GlobalVar:
            return "@" + op.name_hint
        if type(op) is Function:
            return "fn(primitive)" if op.attrs.get("Primitive") else "fn"
        return "call"
    if k is Var:
        return "%" + n.name_hint  # type: ignore[attr-defined]
    if k is Constant:
        return "const"
    if k is Function:
        return "fn(primitive)" if n.attrs.get("Primitive") else "fn"  # type: ignore[attr-defined]
    return k.__name__


def _type_of(n: Node) -> Any:
    t = cached_type(n)
    if t is None and type(n) is Var:
        t = n.type_annotation
    return t


def _type_text(n: Node) -> str:
    t = _type_of(n)
    return "?" if t is None else hooks.type_str(t)


def _text_table(header: Sequence[str], rows: Sequence[Sequence[str]], total: int | None = None,
                title: str = "") -> str:
    """A plain-text table of the first :data:`MAX_ROWS` rows (``total`` rows in all)."""
    shown = [list(map(str, r)) for r in rows[:MAX_ROWS]]
    widths = [len(h) for h in header]
    for r in shown:
        for j, c in enumerate(r):
            widths[j] = min(max(widths[j], len(c)), 80)
    lines = [title] if title else []

    def fmt(cells: Sequence[str]) -> str:
        cut = [(c if len(c) <= 80 else c[:77] + "...").ljust(w) for c, w in zip(cells, widths)]
        return "  ".join(cut).rstrip()

    lines.append(fmt(header))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(fmt(r) for r in shown)
    n = len(rows) if total is None else total
    if n > len(shown):
        lines.append(f"... {n - len(shown)} more row(s)")
    return "\n".join(lines)


class _Names:
    """The printed names of a module's nodes (``print(mod)``), or none for a large module."""

    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self.ok = mod is not None and mod._node_count() <= NAME_LIMIT

    def name(self, n: Node) -> str:
        if not self.ok:
            return ""
        try:
            return self.mod.name_of(n)
        except PyIRError:  # not printed in the module
            return ""

    def function(self, n: Node) -> str:
        if not self.ok:
            return ""
        f = self.mod._where(n)
        return "" if f is None else "@" + f


class FindResult(list):
    """``mod.find(x)``: the hits (a list of nodes, sorted by id as ever), their description and
    the :attr:`representative` (see the module docstring)."""

    def __init__(self, hits: Iterable[Node], module: Any = None, query: bytes | None = None) -> None:
        super().__init__(hits)
        self.module = module
        self.query = query

    @property
    def original(self) -> Node | None:
        """The node that was looked for, while it is alive."""
        return None if self.query is None else live_node(self.query)

    @property
    def representatives(self) -> list[Node]:
        """The hits that play the original's role, best first (:attr:`representative` first)."""
        hits = list(self)
        if not hits:
            return []
        orig = self.original
        if orig is not None:
            same = [n for n in hits if type(n) is type(orig) and _op_name(n) == _op_name(orig)]
            if not same and type(orig) is not Call:
                same = [n for n in hits if type(n) is type(orig)]
            if not same:
                same = [n for n in hits if type(n) is Call and type(n.op) is Op] or hits
            t = _type_of(orig)
        else:
            same = [n for n in hits if type(n) is Call and type(n.op) is Op] or hits
            t = None
        if len(same) == 1:
            return same
        depth = self.module._depths() if self.module is not None else {}
        order = {n: i for i, n in enumerate(self.module._post_order())} if self.module is not None else {}

        def key(n: Node) -> tuple[int, int, int]:
            return (0 if t is not None and _type_of(n) == t else 1, -depth.get(n, 0), order.get(n, 0))

        return sorted(same, key=key)

    @property
    def representative(self) -> Node | None:
        """The hit that plays the original's role (None when nothing was found)."""
        r = self.representatives
        return r[0] if r else None

    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """One dict per hit (the representative first, then in id order; the first ``limit``):
        ``node``, ``kind``, ``op``, ``type``, ``name`` (in ``print(mod)``), ``function`` and
        ``representative`` (bool)."""
        rep = self.representative
        names = _Names(self.module)
        if names.ok:
            self.module._typed()  # types on the hits (cached on the nodes)
        hits = ([rep] if rep is not None else []) + [n for n in self if n is not rep]
        out = []
        for n in hits[:limit]:
            out.append({"node": n, "kind": type(n).__name__, "op": _op_name(n), "type": _type_text(n),
                        "name": names.name(n), "function": names.function(n), "representative": n is rep})
        return out

    HEADER = ("", "name", "function", "kind", "op", "type")

    def _cells(self) -> tuple[list[list[str]], str]:
        q = self.query
        what = _short(self.original, q) if q is not None else "?"
        title = f"find {what}: {len(self)} hit(s)" + (" (eliminated)" if not self else "")
        rows = [["*" if r["representative"] else "", r["name"], r["function"], r["kind"], r["op"], r["type"]]
                for r in self.rows(MAX_ROWS)]
        return rows, title

    def __repr__(self) -> str:
        rows, title = self._cells()
        return _text_table(self.HEADER, rows, len(self), title) + (
            "\n(* = the representative: the hit that plays the original's role)" if self else "")

    __str__ = __repr__


class Origins(set):
    """``mod.origins(e)``: the root ids (a set of 16-byte ids, as ever), resolved on demand to
    the nodes they name (:meth:`nodes`) and to the sources a frontend recorded (:meth:`sources`)."""

    def __init__(self, ids: Iterable[bytes], module: Any = None, query: bytes | None = None,
                 since: int = 0) -> None:
        super().__init__(ids)
        self.module = module
        self.query = query
        self.since = since

    @property
    def ids(self) -> set[bytes]:
        """The ids, as a plain set."""
        return set(self)

    def nodes(self) -> list[Node]:
        """The origins that are alive, as nodes (of the original module, while something holds
        it), in id order."""
        out = [live_node(i) for i in sorted(self)]
        return [n for n in out if n is not None]

    def sources(self) -> dict[bytes, tuple[Any, ...]]:
        """id -> the external sources a frontend recorded for it (ONNX: ``(node name, op type)``
        pairs), for the origins that have some."""
        out: dict[bytes, tuple[Any, ...]] = {}
        if self.module is None:
            return out
        tables = [r.sources for r in self.module.pass_records if r.sources]
        for i in sorted(self):
            for t in tables:
                v = t.get(i)
                if v is not None:
                    out[i] = _pairs(v)
                    break
        return out

    def source_names(self) -> list[str]:
        """The names of the external sources (e.g. ONNX node names), sorted, each once."""
        return sorted({str(p[0]) if isinstance(p, tuple) and p else str(p)
                       for ps in self.sources().values() for p in ps})

    HEADER = ("id", "origin", "type", "source")

    def _cells(self) -> tuple[list[list[str]], str]:
        src = self.sources()
        rows = []
        for i in sorted(self)[:MAX_ROWS]:
            n = live_node(i)
            s = ", ".join(_source_text(p) for p in src.get(i, ()))
            rows.append([i.hex()[:8], _short(n, i), _type_text(n) if n is not None else "", s])
        q = self.query
        node = live_node(q) if q is not None else None
        return rows, f"origins of {_short(node, q) if q is not None else '?'}: {len(self)}"

    def __repr__(self) -> str:
        rows, title = self._cells()
        return _text_table(self.HEADER, rows, len(self), title)

    __str__ = __repr__


def _pairs(v: Any) -> tuple[Any, ...]:
    if isinstance(v, tuple) and v and isinstance(v[0], tuple):
        return v
    return (v,)


def _source_text(p: Any) -> str:
    if isinstance(p, tuple) and len(p) == 2:
        return f"{p[0]} ({p[1]})"
    return str(p)


class History(list):
    """``mod.history(x)``: the steps (a list of :class:`~pyir.ir.lineage.Step`, as ever) as a
    table: pass, the rewrite rule that fired (where one did), before -> after as short snippets."""

    def __init__(self, steps: Iterable[Any], module: Any = None, query: bytes | None = None) -> None:
        super().__init__(steps)
        self.module = module
        self.query = query

    HEADER = ("#", "pass", "rule", "before", "after")

    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """One dict per step (the first ``limit``): ``pass``, ``rule``, ``before``/``after`` (ids),
        ``before_node``/``after_node`` (the live nodes, or None)."""
        return [{"pass": s.pass_name, "rule": s.rule, "before": s.before, "after": s.after,
                 "before_node": live_node(s.before),
                 "after_node": live_node(s.after) if s.after is not None else None} for s in self[:limit]]

    def _cells(self) -> tuple[list[list[str]], str]:
        rows = []
        for k, r in enumerate(self.rows(MAX_ROWS)):
            after = "eliminated" if r["after"] is None else _short(r["after_node"], r["after"], 50)
            before = _short(r["before_node"], r["before"], 50)
            rows.append([str(k), r["pass"], r["rule"] or "", before, after])
        q = self.query
        return rows, f"history of {_short(live_node(q), q) if q is not None else '?'}: {len(self)} step(s)"

    def __repr__(self) -> str:
        rows, title = self._cells()
        return _text_table(self.HEADER, rows, len(self), title)

    __str__ = __repr__


class Listing:
    """``mod.show(...)``: the printed module (``print(mod)``'s text) with a set of nodes
    highlighted: the text marks their lines with ``>>`` in a gutter, the HTML colours them.

    ``lines`` are the text's lines, ``marked`` the indices of the highlighted lines,
    ``missing`` the highlighted nodes printed on no line of their own (constants, or nodes
    not in the module)."""

    def __init__(self, module: Any, text: str, marked: Iterable[int], missing: int = 0) -> None:
        self.module = module
        self.text = text
        self.lines = text.rstrip("\n").split("\n")
        self.marked = frozenset(marked)
        self.missing = missing

    def __str__(self) -> str:
        m = self.marked
        out = [(">> " if i in m else "   ") + ln for i, ln in enumerate(self.lines)]
        if self.missing:
            out.append(f"   ({self.missing} highlighted node(s) on no line of their own)")
        return "\n".join(out)

    def __repr__(self) -> str:
        return str(self)


class Table:
    """``mod.tabular()``: one row per binding of a function, like ``torch.fx``'s
    ``print_tabular``: ``name``, ``op`` (what it calls, or its kind), ``args`` (their printed
    names), ``type``, ``attrs``, ``origins`` (root ids, hex prefixes)."""

    HEADER = ("name", "op", "args", "type", "attrs", "origins")

    def __init__(self, function: str, rows: Sequence[Sequence[str]], nodes: Sequence[Node]) -> None:
        self.function = function
        self.rows = [tuple(r) for r in rows]
        self.nodes = list(nodes)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        title = f"@{self.function}: {len(self.rows)} row(s)"
        return _text_table(self.HEADER, self.rows, len(self.rows), title)

    def __repr__(self) -> str:
        return str(self)


def table_rows(mod: Any, function: str) -> Table:
    """The rows of :meth:`pyir.Module.tabular` (see :class:`Table`)."""
    entries = [e for e in mod._printed()[1] if e[1] == function]
    names: dict[Node, str] = {}
    for n, _f, label, _line in entries:
        names.setdefault(n, label)
    with_lineage = len(mod.pass_records) > 0
    params = {p for n, _f, _label, _line in entries if type(n) is Function for p in n.params}
    rows, nodes = [], []
    seen: set[Node] = set()
    for n, _f, label, _line in entries:
        if n in seen or not isinstance(n, Expr):
            continue
        seen.add(n)
        k = type(n)
        if k is Call:
            args = [names.get(a) or _atom_text(a) for a in n.args]  # type: ignore[attr-defined]
            op = n.op  # type: ignore[attr-defined]
            opname = op.name if type(op) is Op else names.get(op) or _op_name(n)
            specs = op.op_def._specs if type(op) is Op else {}
            attrs = ", ".join(f"{k2}={_attr_text(v)}" for k2, v in n.attrs.items()  # type: ignore[attr-defined]
                              if k2 not in specs or not _typed_equal(specs[k2].default, v))
        elif k is Var:
            args, opname, attrs = [], "param" if n in params else "let", ""
        elif k is Function:
            args = [names.get(p) or _atom_text(p) for p in n.params]  # type: ignore[attr-defined]
            opname = _op_name(n)
            attrs = ", ".join(f"{k2}={_attr_text(v)}" for k2, v in n.attrs.items())  # type: ignore[attr-defined]
        else:
            args = [names.get(c) or _atom_text(c) for c in n.children()]
            opname, attrs = k.__name__, ""
        orig = ""
        if with_lineage:
            ids = mod.origins(n)
            orig = " ".join("#" + i.hex()[:8] for i in sorted(ids)[:4]) + (" ..." if len(ids) > 4 else "")
        rows.append((label, opname, ", ".join(args), _type_text(n), attrs, orig))
        nodes.append(n)
    return Table(function, rows, nodes)


def _atom_text(a: Node) -> str:
    k = type(a)
    if k is Constant:
        d = a.data  # type: ignore[attr-defined]
        return f"const{tuple(d.shape)}" if d.size > 1 else f"const({d.reshape(()).item()!r})"
    if k is GlobalVar:
        return "@" + a.name_hint  # type: ignore[attr-defined]
    if k is Var:
        return "%" + a.name_hint  # type: ignore[attr-defined]
    return type(a).__name__


def _attr_text(v: Any) -> str:
    s = repr(list(v)) if isinstance(v, tuple) else repr(v)
    return s if len(s) <= 40 else s[:37] + "..."
