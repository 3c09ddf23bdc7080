"""Notebook display: HTML renderings (``_repr_html_``) and IPython pretty-printing.

:func:`install` attaches ``_repr_html_`` to :class:`~pyir.Expr`,
:class:`~pyir.Module`, :class:`~pyir.ir.lineage.PassRecord` and
:class:`~pyir.ir.lineage.Step` (it is idempotent).  :class:`~pyir.analysis.diff.Diff` and
:class:`~pyir.report.ReportInstrument` call into this module themselves.

The HTML is self-contained: one inline ``<style>`` per output, the IR text
syntax-highlighted with ``<span class=...>`` (keywords, operators, variables,
constants, types, attributes), each module function in a collapsible
``<details>``.  Large outputs (more than ``max_lines`` lines, default 500) are
summarized instead of flooding the notebook.  Every piece of text goes through
:func:`html.escape`.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from .ir import hooks
from .ir.expr import Call, Expr, Function, Op
from .ir.lineage import PassRecord, Step
from .ir.module import Module
from .ir.node import Node, cached_type, gc_paused
from .text.printer import _key_text, astext, format_attr_value, quote_name, short_repr, type_str

__all__ = ["install", "highlight", "expr_html", "module_html", "diff_html", "pass_record_html",
           "nodes_html", "steps_html", "LineageResult", "lineage", "table_html", "MAX_LINES", "STYLE"]

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
.pyir td.code{white-space:pre}
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
        if cls == "ty":
            out.append(f'<span class="ty" title="type">{tok}</span>')
        else:
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


def module_html(mod: Module, *, max_lines: int = MAX_LINES, first_lines: int = 12) -> str:
    """HTML for a module: one collapsible ``<details>`` per function; summarized when large."""
    from .ir.traverse import post_order

    with gc_paused():
        orders = {name: post_order(f) for name, f in mod.items()}
    counts = {name: len(o) for name, o in orders.items()}
    total = sum(counts.values())
    parts = [f"<div><b>Module</b> with {len(mod)} function(s), {total} node(s)"
             + (f", {len(mod.pass_records)} pass record(s)" if len(mod.pass_records) else "") + "</div>"]
    large = total > max_lines
    if large:
        parts.append(_note(f"more than {max_lines} nodes: showing a summary (function list, node counts, "
                           f"first {first_lines} lines); use print(mod) for the full text"))
        parts.append(table_html(["function", "nodes", "params"],
                                [(f"@{n}", counts[n], len(f.params)) for n, f in mod.items()]))
    for name, f in mod.items():
        if large and counts[name] > 4 * max_lines:
            summary = highlight(_header(name, f))
            inner = _note(f"{counts[name]} nodes; kinds: {_op_histogram(orders[name])}")
        else:
            lines = astext(Module({name: f}), show_meta_data=False).rstrip().splitlines()
            i = next(j for j, ln in enumerate(lines) if ln.startswith("def "))
            # the printer's own header (its unique parameter names) is the summary; aliases stay
            summary = highlight(lines.pop(i).removesuffix(" {"))
            more = ""
            if large and len(lines) > first_lines:
                more = _note(f"... {len(lines) - first_lines} more line(s)")
                lines = lines[:first_lines]
            inner = f"<pre>{highlight(chr(10).join(lines))}</pre>{more}"
        is_open = "" if large or f.attrs.get("Primitive") else " open"
        parts.append(f"<details{is_open}><summary>{summary}</summary>{inner}</details>")
    return _wrap("".join(parts))


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


def lineage(mod: Module, x: Any) -> dict[str, LineageResult]:
    """``find``, ``origins`` and ``history`` of ``x`` in ``mod``, each displayable."""
    return {"find": LineageResult(mod.find(x), "find"),
            "origins": LineageResult(sorted(mod.origins(x)), "origins"),
            "history": LineageResult(mod.history(x), "history")}


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


def diff_html(d: Any, *, max_nodes: int = 50) -> str:
    """HTML for a :class:`~pyir.analysis.diff.Diff`: summary, side-by-side changed
    lines, new nodes with origins."""
    parts = [f"<pre>{_esc(d.summary())}</pre>"]
    after = d.after if isinstance(d.after, Module) else None
    with_lineage = after is not None and len(after.pass_records) > 0
    for name in [*d.removed, *d.added, *d.changed]:
        fd = d.functions[name]
        a, b = d.text_pair(name)
        inner = _side_by_side(a, b)
        rows = []
        for n in fd.new[:max_nodes]:
            hx = n.id.hex()
            cell = f'<span class="id" title="{hx}">#{hx[:8]}</span>'
            origin = ""
            if with_lineage:
                origin = " ".join(_idref(o, d.before) for o in sorted(after.origins(n)))  # type: ignore[union-attr]
            rows.append((cell, _esc(short_repr(n)), origin))
        if rows:
            hdr = ["new node", "summary", "origins"] if with_lineage else ["new node", "summary", ""]
            inner += table_html(hdr, rows, raw=True)
            if len(fd.new) > max_nodes:
                inner += _note(f"... {len(fd.new) - max_nodes} more new node(s)")
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


def _module_repr_html(self: Module) -> str:
    return module_html(self)


def _record_repr_html(self: PassRecord) -> str:
    return pass_record_html(self)


def _record_repr_pretty(self: PassRecord, p: Any, cycle: bool) -> None:
    p.text(repr(self))


def _step_repr_html(self: Step) -> str:
    return steps_html([self])


def install() -> None:
    """Attach the notebook hooks to the pyir classes (idempotent)."""
    Expr._repr_html_ = _expr_repr_html  # type: ignore[attr-defined]
    Module._repr_html_ = _module_repr_html  # type: ignore[attr-defined]
    PassRecord._repr_html_ = _record_repr_html  # type: ignore[attr-defined]
    PassRecord._repr_pretty_ = _record_repr_pretty  # type: ignore[attr-defined]
    Step._repr_html_ = _step_repr_html  # type: ignore[attr-defined]


hooks.register(diff_html=diff_html)
