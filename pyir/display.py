"""Notebook display: HTML renderings (``_repr_html_``) and IPython pretty-printing.

:func:`install` attaches ``_repr_html_`` to :class:`~pyir.Expr`,
:class:`~pyir.Module`, :class:`~pyir.ir.lineage.PassRecord`,
:class:`~pyir.ir.lineage.Step` and the answers of :mod:`pyir.ir.answers` (``mod.find``,
``mod.origins``, ``mod.history``, ``mod.show``, ``mod.tabular``; it is idempotent).
:class:`~pyir.analysis.diff.Diff` and :class:`~pyir.report.ReportInstrument` call into this
module themselves.

The HTML is self-contained: one inline ``<style>`` per output, the IR text
syntax-highlighted with ``<span class=...>`` (keywords, operators, variables,
constants, types, attributes), each module function in a collapsible
``<details>``, a binding's line titled with its name and type (hover), the lines of
highlighted nodes (``mod.show(highlight=...)``) coloured.  Large outputs (more than
``max_lines`` lines, default 500) are summarized instead of flooding the notebook.  Every
piece of text goes through :func:`html.escape`.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from .ir import hooks
from .ir.answers import FindResult, History, Listing, Origins, Table, live_node
from .ir.expr import Call, Expr, Function, Op
from .ir.lineage import PassRecord, Step
from .ir.module import Module
from .ir.node import Node, cached_type, gc_paused
from .text.printer import _key_text, astext, format_attr_value, quote_name, short_repr, type_str

__all__ = ["install", "highlight", "expr_html", "module_html", "diff_html", "pass_record_html",
           "nodes_html", "steps_html", "LineageResult", "lineage", "table_html", "MAX_LINES", "STYLE",
           "find_html", "origins_html", "history_html", "listing_html", "tabular", "tabular_html", "MAX_ROWS"]

MAX_ROWS = 50  # rows of an answer's HTML table (the rest is counted)

MAX_LINES = 500
_esc = html.escape

STYLE = """<style>
.pyir{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;color:#222}
.pyir pre{margin:0 0 0 1.5em;white-space:pre;line-height:1.35}
.pyir summary{cursor:pointer;white-space:pre}
.pyir .kw{color:#7b30d0;font-weight:bold}.pyir .op{color:#0550ae}.pyir .var{color:#953800}
.pyir .gv{color:#116329;font-weight:bold}.pyir .num{color:#0a7f7f}.pyir .ty{color:#6e7781}
.pyir .at{color:#8250df}.pyir .cm{color:#8c959f;font-style:italic}.pyir .str{color:#0a3069}
.pyir table{border-collapse:collapse;margin:4px 0}.pyir td,.pyir th{border:1px solid #d0d7de;
padding:1px 6px;text-align:left;vertical-align:top}.pyir th{background:#f6f8fa}
.pyir .del{background:#ffebe9}.pyir .ins{background:#dafbe1}.pyir .chg{background:#fff8c5}
.pyir .note{color:#57606a;font-style:italic;margin:2px 0}.pyir .id{color:#6e7781}
.pyir td.code{white-space:pre}.pyir .hl{background:#ffd33d;outline:1px solid #d4a72c}
.pyir tr.rep td{background:#fff8c5;font-weight:bold}
</style>"""

_TOKEN = re.compile(r"""
 (?P<cm>/\*.*?\*/|\#\[metadata\].*$)
|(?P<ty>Tensor\[[^\]]*\])
|(?P<str>"(?:[^"\\]|\\.)*")
|(?P<kw>\b(?:def|fn|let|if|else|meta|free_var)\b)
|(?P<var>%[A-Za-z0-9_.]+)
|(?P<gv>@[A-Za-z0-9_.]+)
|(?P<op>[A-Za-z_][A-Za-z0-9_.]*(?=\())
|(?P<at>[A-Za-z_][A-Za-z0-9_]*(?==))
|(?P<num>\b(?:True|False|nan|inf)\b|-?\b\d+(?:\.\d*)?(?:[eE][-+]?\d+)?(?:f64|f16|f|i64|i16|i8|u8|u16|u32|u64)?\b)
""", re.VERBOSE)


def highlight(text: str) -> str:
    """IR text as escaped HTML with ``<span class=...>`` around tokens (line structure kept)."""
    out: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() > pos:
            out.append(_esc(text[pos:m.start()]))
        cls = m.lastgroup
        tok = _esc(m.group())
        out.append(f'<span class="{cls}">{tok}</span>')
        pos = m.end()
    out.append(_esc(text[pos:]))
    return "".join(out)


def _wrap(body: str) -> str:
    return f'<div class="pyir">{STYLE}{body}</div>'


def _note(text: str) -> str:
    return f'<div class="note">{_esc(text)}</div>'


def table_html(header: Sequence[str], rows: Iterable[Sequence[Any]], *, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw`` (then they must already be HTML)."""
    h = "".join(f"<th>{_esc(str(c))}</th>" for c in header)
    body = []
    for r in rows:
        cells = "".join(f"<td>{c if raw else _esc(str(c))}</td>" for c in r)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{h}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _op_histogram(nodes: Iterable[Node], top: int = 8) -> str:
    c: Counter[str] = Counter()
    for n in nodes:
        if type(n) is Call:
            op = n.op
            c[op.name if type(op) is Op else "<call>"] += 1
        else:
            c[type(n).__name__] += 1
    return ", ".join(f"{k}x{v}" for k, v in c.most_common(top))


# -- expressions and modules -------------------------------------------------------------------


def expr_html(e: Expr, *, max_lines: int = MAX_LINES) -> str:
    """HTML for an expression: highlighted text, or a summary when it is large."""
    from .ir.traverse import post_order

    with gc_paused():
        nodes = post_order(e)
    t = cached_type(e)
    title = f' title="{_esc(type_str(t))}"' if t is not None else ""
    if len(nodes) > max_lines:
        body = (f"<div{title}><b>{_esc(type(e).__name__)}</b> "
                f'<span class="id">#{e.id.hex()[:8]}</span> with {len(nodes)} nodes '
                f"(more than {max_lines}: summarized)</div>"
                + _note("top: " + short_repr(e)) + _note("kinds: " + _op_histogram(nodes)))
        return _wrap(body)
    return _wrap(f"<pre{title}>{highlight(astext(e, show_meta_data=False).rstrip())}</pre>")


def _header(name: str, f: Function) -> str:
    """``def @name(%x: T, key=value) -> T``, names and attributes as the printer writes them."""
    ps = []
    for p in f.params:
        s = quote_name("%", p.name_hint)
        if p.type_annotation is not None:
            s += ": " + type_str(p.type_annotation)
        ps.append(s)
    ps += [f"{_key_text(k)}={format_attr_value(v)}" for k, v in f.attrs.items()]
    ret = f" -> {type_str(f.ret_type)}" if f.ret_type is not None else ""
    return f"def {quote_name('@', name)}({', '.join(ps)}){ret}"


def _line_titles(entries: Iterable[Any]) -> dict[int, str]:
    """line -> hover text (``%3: Tensor[...]``) for the printed bindings whose type is known."""
    out: dict[int, str] = {}
    for n, _fn, label, line in entries:
        if line in out:
            continue
        t = cached_type(n)
        if t is None and type(n) is not Function:
            t = getattr(n, "type_annotation", None)
        if t is not None:
            out[line] = f"{label}: {type_str(t)}"
    return out


def _printed_html(mod: Module, text: str, entries: list[Any], marked: frozenset[int] = frozenset(),
                  open_all: bool = False) -> str:
    """A module's printed text as HTML: one ``<details>`` per function, each line highlighted,
    a binding's line with its type on hover, the ``marked`` lines coloured."""
    lines = text.rstrip("\n").split("\n")
    titles = _line_titles(entries)
    heads = sorted((line, fn) for n, fn, label, line in entries
                   if type(n) is Function and label.startswith("@") and line < len(lines)
                   and lines[line].startswith("def "))
    heads = [h for i, h in enumerate(heads) if i == 0 or h[0] != heads[i - 1][0]]

    def one(i: int) -> str:
        body = highlight(lines[i])
        cls = ' class="hl"' if i in marked else ""
        t = titles.get(i)
        if t is None and not cls:
            return body
        title = f' title="{_esc(t)}"' if t is not None else ""
        return f"<span{cls}{title}>{body}</span>"

    parts = []
    first = heads[0][0] if heads else len(lines)
    if first:  # type alias declarations
        parts.append("<pre>" + "\n".join(one(i) for i in range(first)) + "</pre>")
    for k, (h, fn) in enumerate(heads):
        end = heads[k + 1][0] - 1 if k + 1 < len(heads) else len(lines)
        while end > h + 1 and not lines[end - 1].startswith("}"):
            end -= 1  # a trailing note (elided constants) goes after the last function
        summary = one(h) if h in marked else highlight(lines[h].removesuffix(" {"))
        if h not in marked and h in titles:
            summary = f'<span title="{_esc(titles[h])}">{summary}</span>'
        inner = "\n".join(one(i) for i in range(h + 1, end))
        f = mod[fn]
        has_mark = any(h <= i < end for i in marked)
        is_open = " open" if open_all or has_mark or not f.attrs.get("Primitive") else ""
        parts.append(f"<details{is_open}><summary>{summary}</summary><pre>{inner}</pre></details>")
        if k + 1 == len(heads) and end < len(lines):
            parts.append("<pre>" + "\n".join(one(i) for i in range(end, len(lines))) + "</pre>")
    return "".join(parts)


def module_html(mod: Module, *, max_lines: int = MAX_LINES, first_lines: int = 12) -> str:
    """HTML for a module: one collapsible ``<details>`` per function (the text of ``print(mod)``,
    each binding's type on hover); summarized when large."""
    from .ir.traverse import post_order

    with gc_paused():
        orders = {name: post_order(f) for name, f in mod.items()}
    counts = {name: len(o) for name, o in orders.items()}
    total = sum(counts.values())
    if total <= max_lines:
        head = (f"<div><b>Module</b> with {len(mod)} function(s), {total} node(s)"
                + (f", {len(mod.pass_records)} pass record(s)" if len(mod.pass_records) else "") + "</div>")
        mod._typed()
        text, entries = mod._printed()
        return _wrap(head + _printed_html(mod, text, entries))
    from .summaries import summary, summary_parts

    parts = summary_parts(summary(mod))
    parts.append(_note(f"more than {max_lines} nodes: a summary, and each function's first {first_lines} "
                       f"lines (more in the folded parts); print(mod) gives the full text"))
    for name, f in mod.items():
        if counts[name] > 4 * max_lines:
            head = highlight(_header(name, f))
            inner = _note(f"{counts[name]:,} nodes (too many to print here); operators: "
                          f"{_op_histogram(orders[name])}")
        else:
            lines = astext(Module({name: f}), show_meta_data=False).rstrip().splitlines()
            i = next(j for j, ln in enumerate(lines) if ln.startswith("def "))
            # the printer's own header (its unique parameter names) is the summary; aliases stay
            head = highlight(lines.pop(i).removesuffix(" {"))
            inner = f"<pre>{highlight(chr(10).join(lines[:first_lines]))}</pre>"
            rest = lines[first_lines:first_lines + _MORE_LINES]
            if rest:
                inner += (f"<details><summary>{len(rest)} more line(s)</summary>"
                          f"<pre>{highlight(chr(10).join(rest))}</pre></details>")
            if len(lines) > first_lines + _MORE_LINES:
                inner += _note(f"... {len(lines) - first_lines - _MORE_LINES} more line(s): print(mod)")
        parts.append(f"<details><summary>{head}</summary>{inner}</details>")
    return _wrap("".join(parts))


_MORE_LINES = 300  # lines of a large module's function in its folded part


# -- lineage ------------------------------------------------------------------------------------


def _idref(i: bytes, mod: Any = None) -> str:
    hx = i.hex()
    title = hx
    if mod is not None:
        n = mod.node_by_id(i) if isinstance(mod, Module) else None
        if n is not None:
            title += " " + short_repr(n)
    return f'<a class="id" href="#pyir-{hx[:12]}" title="{_esc(title)}">#{hx[:8]}</a>'


def pass_record_html(rec: PassRecord, *, max_edges: int = 20) -> str:
    """HTML for one pass record: name, options, counts and the first derivation edges."""
    head = table_html(["pass", "options", "edges", "eliminated", "ms"],
                      [(rec.name, rec.options, len(rec.edges), len(rec.removed), f"{rec.seconds * 1e3:.2f}")])
    rows = [(_idref(new), " ".join(_idref(o) for o in olds)) for new, olds in rec.edges[:max_edges]]
    edges = table_html(["new", "derived from"], rows, raw=True) if rows else ""
    more = _note(f"... {len(rec.edges) - max_edges} more edge(s)") if len(rec.edges) > max_edges else ""
    return _wrap(head + edges + more)


def nodes_html(nodes: Iterable[Node], *, max_rows: int = 50, title: str = "nodes") -> str:
    """HTML table of nodes (id prefix and one-line summary)."""
    ns = list(nodes)
    rows = [(f'<span class="id" id="pyir-{n.id.hex()[:12]}" title="{n.id.hex()}">#{n.id.hex()[:8]}</span>',
             _esc(short_repr(n))) for n in ns[:max_rows]]
    more = _note(f"... {len(ns) - max_rows} more") if len(ns) > max_rows else ""
    return _wrap(f"<div>{_esc(title)}: {len(ns)}</div>" + table_html(["id", "node"], rows, raw=True) + more)


def steps_html(steps: Iterable[Step]) -> str:
    """HTML table of lineage steps (``mod.history(...)``)."""
    rows = [(_esc(s.pass_name), _idref(s.before),
             _idref(s.after) if s.after is not None else "<i>eliminated</i>") for s in steps]
    return _wrap(table_html(["pass", "before", "after"], rows, raw=True))


class LineageResult(list):
    """A list of lineage answers (nodes, ids or steps) that renders as a table in notebooks."""

    def __init__(self, items: Iterable[Any], title: str = "lineage") -> None:
        super().__init__(items)
        self.title = title

    def _repr_html_(self) -> str:
        if self and all(isinstance(s, Step) for s in self):
            return steps_html(self)
        if all(isinstance(n, Node) for n in self):
            return nodes_html(self, title=self.title)
        rows = [(_idref(i),) if isinstance(i, bytes) else (_esc(repr(i)),) for i in self]
        return _wrap(f"<div>{_esc(self.title)}: {len(self)}</div>" + table_html(["id"], rows, raw=True))


def lineage(mod: Module, x: Any) -> dict[str, Any]:
    """``find``, ``origins`` and ``history`` of ``x`` in ``mod`` (each displayable)."""
    return {"find": mod.find(x), "origins": mod.origins(x), "history": mod.history(x)}


def _hit_cell(n: Node | None, i: bytes | None = None) -> str:
    if n is None:
        return _idref(i) if i is not None else ""
    return f'<span title="{_esc(n.id.hex())}">{_esc(short_repr(n))}</span>'


def _what(n: Node | None, q: bytes | None) -> str:
    """What an answer is about: the node's summary, or its id."""
    if n is not None:
        return short_repr(n)
    return "#" + q.hex()[:8] if q else "?"


def _more(total: int, shown: int, what: str = "row(s)") -> str:
    return _note(f"... {total - shown} more {what}") if total > shown else ""


def find_html(r: FindResult, *, max_rows: int = MAX_ROWS) -> str:
    """HTML for ``mod.find(x)``: one row per hit (the representative first, marked)."""
    title = f"find {_what(r.original, r.query)}: {len(r)} hit(s)"
    if not r:
        return _wrap(f"<div><b>{_esc(title)}</b></div>"
                     + _note("not found: eliminated, or not derived from it"))
    body = []
    for row in r.rows(max_rows):
        n = row["node"]
        cls = ' class="rep"' if row["representative"] else ""
        mark = "\u2605" if row["representative"] else ""
        body.append(f'<tr{cls}><td title="the representative">{mark}</td><td><span class="var">'
                    f'{_esc(row["name"])}</span></td><td>{_esc(row["function"])}</td><td>{_esc(row["kind"])}</td>'
                    f'<td><span class="op">{_esc(row["op"])}</span></td>'
                    f'<td><span class="ty">{_esc(row["type"])}</span></td><td>{_hit_cell(n)}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("", "name", "function", "kind", "op", "type", "node"))
    return _wrap(f"<div><b>{_esc(title)}</b></div><table><thead><tr>{head}</tr></thead><tbody>"
                 + "".join(body) + "</tbody></table>" + _more(len(r), max_rows)
                 + _note("\u2605 the representative: the hit that plays the original's role"))


def origins_html(o: Origins, *, max_rows: int = MAX_ROWS) -> str:
    """HTML for ``mod.origins(e)``: one row per root id, resolved to its node and sources."""
    q = o.query
    title = f"origins of {_what(live_node(q) if q is not None else None, q)}: {len(o)}"
    src = o.sources()
    rows = []
    ids = sorted(o)
    for i in ids[:max_rows]:
        n = live_node(i)
        t = cached_type(n) if n is not None else None
        s = ", ".join(f"{p[0]} ({p[1]})" if isinstance(p, tuple) and len(p) == 2 else str(p)
                      for p in src.get(i, ()))
        rows.append((_idref(i), _hit_cell(n, i) if n is not None else "<i>not alive</i>",
                     _esc(type_str(t)) if t is not None else "", _esc(s)))
    return _wrap(f"<div><b>{_esc(title)}</b></div>"
                 + table_html(["id", "origin", "type", "source"], rows, raw=True) + _more(len(ids), max_rows))


def history_html(h: History, *, max_rows: int = MAX_ROWS) -> str:
    """HTML for ``mod.history(x)``: pass, rule, before -> after."""
    q = h.query
    title = f"history of {_what(live_node(q) if q is not None else None, q)}: {len(h)} step(s)"
    rows = []
    for k, r in enumerate(h.rows(max_rows)):
        after = "<i>eliminated</i>" if r["after"] is None else _hit_cell(r["after_node"], r["after"])
        before = _hit_cell(r["before_node"], r["before"])
        rows.append((str(k), _esc(r["pass"]), _esc(r["rule"] or ""), before, after))
    return _wrap(f"<div><b>{_esc(title)}</b></div>"
                 + table_html(["#", "pass", "rule", "before", "after"], rows, raw=True)
                 + _more(len(h), max_rows))


def listing_html(ls: Listing, *, max_lines: int = MAX_LINES, context: int = 2) -> str:
    """HTML for ``mod.show(...)``: the module's text with the highlighted lines coloured; a long
    text shows only the highlighted lines with ``context`` lines around them."""
    mod = ls.module
    entries = mod._printed()[1]
    marked = ls.marked
    n_lines = len(ls.lines)
    head = f"<div><b>Module</b> with {len(mod)} function(s): {len(marked)} highlighted line(s)</div>"
    miss = _note(f"{ls.missing} highlighted node(s) on no line of their own") if ls.missing else ""
    if n_lines <= max_lines:
        return _wrap(head + _printed_html(mod, ls.text, entries, marked) + miss)
    titles = _line_titles(entries) if len(entries) <= 4 * max_lines else {}
    keep = sorted({j for i in marked for j in range(max(0, i - context), min(n_lines, i + context + 1))})
    out, prev, shown = [], -2, 0
    for i in keep:
        if shown >= max_lines:
            break
        if i != prev + 1:
            out.append(f'<span class="note">... (line {i + 1})</span>')
        body = highlight(ls.lines[i])
        t = titles.get(i)
        cls = ' class="hl"' if i in marked else ""
        title = f' title="{_esc(t)}"' if t else ""
        out.append(f"<span{cls}{title}>{body}</span>" if cls or title else body)
        prev = i
        shown += 1
    more = _note(f"{n_lines} lines: showing the highlighted ones"
                 + (f" (the first {max_lines})" if shown >= max_lines else "") + "; print() shows all")
    return _wrap(head + more + "<pre>" + "\n".join(out) + "</pre>" + miss)


def tabular(mod: Module, function: str = "main") -> Table:
    """A table of ``function``'s bindings (see :meth:`pyir.Module.tabular`)."""
    return mod.tabular(function)


def tabular_html(t: Table, *, max_rows: int = 200) -> str:
    """HTML for ``mod.tabular()``."""
    rows = []
    for r in t.rows[:max_rows]:
        name, opn, args, ty, attrs, orig = r
        rows.append((f'<span class="var">{_esc(name)}</span>', f'<span class="op">{_esc(opn)}</span>',
                     _esc(args),
                     f'<span class="ty">{_esc(ty)}</span>', f'<span class="at">{_esc(attrs)}</span>',
                     f'<span class="id">{_esc(orig)}</span>'))
    return _wrap(f"<div><b>@{_esc(t.function)}</b>: {len(t.rows)} row(s)</div>"
                 + table_html(list(Table.HEADER), rows, raw=True) + _more(len(t.rows), max_rows))


# -- diffs --------------------------------------------------------------------------------------


def _side_by_side(a: list[str], b: list[str], context: int = 3) -> str:
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows = []
    groups = list(sm.get_grouped_opcodes(context))
    for gi, group in enumerate(groups):
        if gi:
            rows.append('<tr><td colspan="4" class="note">…</td></tr>')
        for tag, i1, i2, j1, j2 in group:
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                la = a[i1 + k] if i1 + k < i2 else None
                lb = b[j1 + k] if j1 + k < j2 else None
                ca = {"equal": "", "replace": "chg", "delete": "del", "insert": ""}[tag]
                cb = {"equal": "", "replace": "chg", "insert": "ins", "delete": ""}[tag]
                if la is None:
                    ca = ""
                if lb is None:
                    cb = ""
                na = str(i1 + k + 1) if la is not None else ""
                nb = str(j1 + k + 1) if lb is not None else ""
                rows.append(f'<tr><td class="id">{na}</td><td class="code {ca}">{highlight(la or "")}</td>'
                            f'<td class="id">{nb}</td><td class="code {cb}">{highlight(lb or "")}</td></tr>')
    if not rows:
        return _note("texts are identical")
    return ("<table><thead><tr><th></th><th>before</th><th></th><th>after</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


_DIFF_CLASS = {"same": "", "changed": "chg", "removed": "del", "added": "ins"}


def aligned_html(rows: list[Any], *, context: int = 2, open_hunks: int = 8, max_rows: int = 400) -> str:
    """Side-by-side HTML of :meth:`~pyir.analysis.diff.Diff.aligned` rows: only the changed
    lines are coloured, each hunk with ``context`` unchanged lines around it; the first
    ``open_hunks`` hunks are shown, the others folded in a ``<details>``; at most ``max_rows``
    rows in all (the rest counted), so a large diff stays small."""
    changed = [i for i, r in enumerate(rows) if r[0] != "same"]
    if not changed:
        return _note("no line changed (only numbering)")
    hunks: list[tuple[int, int]] = []
    for i in changed:
        lo, hi = max(0, i - context), min(len(rows), i + context + 1)
        if hunks and lo <= hunks[-1][1]:
            hunks[-1] = (hunks[-1][0], max(hunks[-1][1], hi))
        else:
            hunks.append((lo, hi))
    budget = max_rows
    shown: list[str] = []
    folded: list[str] = []
    left = 0
    for h, (lo, hi) in enumerate(hunks):
        if budget <= 0:
            left += sum(1 for i in range(lo, hi) if rows[i][0] != "same")
            continue
        body = []
        for st, na, ta, nb, tb in rows[lo:min(hi, lo + budget)]:
            c = _DIFF_CLASS[st]
            ca = c if ta is not None else ""
            cb = c if tb is not None else ""
            body.append(f'<tr><td class="id">{na or ""}</td><td class="code {ca}">{highlight(ta or "")}'
                        f'</td><td class="id">{nb or ""}</td><td class="code {cb}">{highlight(tb or "")}'
                        "</td></tr>")
        if hi > lo + budget:  # this hunk is cut: count what is not shown
            left += sum(1 for i in range(lo + budget, hi) if rows[i][0] != "same")
        budget -= hi - lo
        (shown if h < open_hunks else folded).append("".join(body))
    head = "<table><thead><tr><th></th><th>before</th><th></th><th>after</th></tr></thead><tbody>"
    sep = '<tr><td colspan="4" class="note">…</td></tr>'
    out = head + sep.join(shown) + "</tbody></table>"
    if folded:
        out += (f"<details><summary>{len(folded)} more hunk(s)</summary>{head}{sep.join(folded)}"
                "</tbody></table></details>")
    if left:
        out += _note(f"... {left} more changed line(s) not shown (max_rows={max_rows})")
    return out


def diff_html(d: Any, *, max_nodes: int = 50) -> str:
    """HTML for a :class:`~pyir.analysis.diff.Diff`: summary, the printed lines side by side
    aligned by lineage (:func:`aligned_html`: only what changed coloured, bounded), new nodes
    with origins and removed nodes (folded)."""
    parts = [f"<pre>{_esc(d.summary())}</pre>"]
    after = d.after if isinstance(d.after, Module) else None
    with_lineage = after is not None and len(after.pass_records) > 0
    for name in [*d.removed, *d.added, *d.changed]:
        fd = d.functions[name]
        inner = aligned_html(d.aligned(name))
        rows = []
        for n in fd.new[:max_nodes]:
            hx = n.id.hex()
            cell = f'<span class="id" title="{hx}">#{hx[:8]}</span>'
            origin = ""
            if with_lineage:
                os_ = sorted(after.origins(n))  # type: ignore[union-attr]
                origin = " ".join(_idref(o, d.before) for o in os_[:8])
                if len(os_) > 8:
                    origin += f" (+{len(os_) - 8} more)"
            rows.append((cell, _esc(short_repr(n)), origin))
        if rows:
            hdr = ["new node", "summary", "origins"] if with_lineage else ["new node", "summary", ""]
            more = _note(f"... {len(fd.new) - max_nodes} more new node(s)") if len(fd.new) > max_nodes else ""
            inner += (f"<details><summary>new nodes ({len(fd.new)})</summary>"
                      f"{table_html(hdr, rows, raw=True)}{more}</details>")
        if fd.removed:
            rem = [(f'<span class="id" id="pyir-{n.id.hex()[:12]}" title="{n.id.hex()}">'
                    f"#{n.id.hex()[:8]}</span>", _esc(short_repr(n))) for n in fd.removed[:max_nodes]]
            inner += "<details><summary>removed nodes (%d)</summary>%s</details>" % (
                len(fd.removed), table_html(["removed node", "summary"], rem, raw=True))
        parts.append(f"<details open><summary>@{_esc(name)}: {len(fd.new)} new, "
                     f"{len(fd.removed)} removed</summary>{inner}</details>")
    return _wrap("".join(parts))


# -- installation -------------------------------------------------------------------------------


def _expr_repr_html(self: Expr) -> str:
    return expr_html(self)


def _module_repr_pretty(self: Module, p: Any, cycle: bool) -> None:
    """The text a notebook stores beside the HTML: the program, or for a large module its
    summary (so the notebook file stays small)."""
    if self._node_count() > MAX_LINES:
        from .summaries import summary

        p.text(str(summary(self)) + "\n(print(mod) gives the full text)")
    else:
        p.text(str(self))


def _module_repr_html(self: Module) -> str:
    return module_html(self)


def _record_repr_html(self: PassRecord) -> str:
    return pass_record_html(self)


def _record_repr_pretty(self: PassRecord, p: Any, cycle: bool) -> None:
    p.text(repr(self))


def _text_pretty(self: Any, p: Any, cycle: bool) -> None:
    p.text(str(self))


def _step_repr_html(self: Step) -> str:
    return steps_html([self])


def install() -> None:
    """Attach the notebook hooks to the pyir classes (idempotent)."""
    FindResult._repr_html_ = find_html  # type: ignore[attr-defined]
    Origins._repr_html_ = origins_html  # type: ignore[attr-defined]
    History._repr_html_ = history_html  # type: ignore[attr-defined]
    Listing._repr_html_ = listing_html  # type: ignore[attr-defined]
    Table._repr_html_ = tabular_html  # type: ignore[attr-defined]
    for cls in (FindResult, Origins, History, Listing, Table):
        setattr(cls, "_repr_pretty_", _text_pretty)  # noqa: B010 (attached to several classes)
    Expr._repr_html_ = _expr_repr_html  # type: ignore[attr-defined]
    Module._repr_html_ = _module_repr_html  # type: ignore[attr-defined]
    from .summaries import Summary, summary_html

    Summary._repr_html_ = lambda self: _wrap(summary_html(self))  # type: ignore[method-assign]
    Module._repr_pretty_ = _module_repr_pretty  # type: ignore[method-assign]
    PassRecord._repr_html_ = _record_repr_html  # type: ignore[attr-defined]
    PassRecord._repr_pretty_ = _record_repr_pretty  # type: ignore[attr-defined]
    Step._repr_html_ = _step_repr_html  # type: ignore[attr-defined]


hooks.register(diff_html=diff_html)
