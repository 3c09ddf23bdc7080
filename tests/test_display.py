"""Tests for pyir.display: every HTML rendering parses, is balanced and escaped."""

from html.parser import HTMLParser

import pyir
from pyir import display, op
from pyir.analysis.diff import diff
from pyir.report import ReportInstrument
from pyir.transform.base import PassContext, Sequential

display.install()

_VOID = {"br", "hr", "img", "meta", "input", "link", "col", "wbr"}


class _Checker(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}>, open: {self.stack[-5:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def check_html(s):
    """Parse ``s``; assert tags are balanced; return the text content."""
    assert isinstance(s, str) and s
    p = _Checker()
    p.feed(s)
    p.close()
    assert not p.stack, f"unclosed tags {p.stack}"
    return "".join(p.text)


def _pipeline():
    from pyir.transform.fold_constant import FoldConstant
    from pyir.transform.fuse_ops import FuseOps
    from pyir.transform.infer_type import InferType
    from pyir.transform.simplify_inference import SimplifyInference

    return [InferType(), SimplifyInference(), FoldConstant(), FuseOps()]


def test_install_idempotent():
    """install() attaches _repr_html_ and may be called twice."""
    display.install()
    display.install()
    assert hasattr(pyir.Expr, "_repr_html_") and hasattr(pyir.Module, "_repr_html_")


def test_expr_and_module_html():
    """Expressions and modules render highlighted, collapsible, balanced HTML."""
    m = pyir.testing.resnet(1)
    h = m._repr_html_()
    text = check_html(h)
    assert "<details" in h and "<summary>" in h and 'class="op"' in h and 'class="ty"' in h
    assert "nn.conv2d" in text
    e = m["main"].body
    assert "nn.softmax" in check_html(e._repr_html_())


def test_escaping():
    """Names with HTML characters are escaped."""
    x = pyir.Var("<b>&x", pyir.TensorType((2,), "float32"))
    m = pyir.Module({"a<script>": pyir.Function([x], op.nn.relu(x))})
    h = m._repr_html_()
    assert "<script>" not in h and "<b>&x" not in h
    text = check_html(h)
    assert "a<script>" in text


def test_large_module_summarized():
    """Modules above max_lines are summarized (function list, counts, first lines)."""
    m = pyir.testing.elementwise_chain(1000)
    h = display.module_html(m, max_lines=500)
    text = check_html(h)
    assert "summary" in text and "more line(s)" in text and len(h) < 20000
    big = pyir.testing.elementwise_chain(10**5)
    h = big._repr_html_()
    assert "kinds: " in check_html(h) and len(h) < 20000
    check_html(big["main"].body._repr_html_())


def test_diff_html_with_lineage():
    """A diff across a pass shows side-by-side changes and new nodes linked to origins."""
    m0 = pyir.testing.resnet(1)
    passes = _pipeline()
    m1 = Sequential(passes[:2])(m0)
    m2 = passes[3](m1)
    d = diff(m1, m2)
    h = d._repr_html_()
    text = check_html(h)
    assert "before" in text and "after" in text and "origins" in text
    assert 'class="code chg"' in h or 'class="code ins"' in h
    assert 'href="#pyir-' in h
    check_html(diff(m0, m0)._repr_html_())
    x = pyir.var("x", shape=(2,))
    check_html(diff(op.nn.relu(x), op.tanh(x))._repr_html_())


def test_lineage_and_records_html():
    """Pass records, steps and lineage answers render."""
    m0 = pyir.testing.resnet(1)
    m = Sequential(_pipeline())(m0)
    for rec in m.pass_records:
        check_html(rec._repr_html_())
    conv = next(n for n in pyir.post_order(m0["main"]) if isinstance(n, pyir.Call)
                and n.op is pyir.Op("nn.conv2d"))
    ans = display.lineage(m, conv)
    for v in ans.values():
        check_html(v._repr_html_())
    assert ans["find"] and ans["history"]
    steps = m.history(conv)
    check_html(steps[0]._repr_html_())


def test_report_html():
    """The report instrument renders a text table and an HTML table."""
    rep = ReportInstrument()
    with PassContext(instruments=[rep]):
        Sequential(_pipeline())(pyir.testing.resnet(1))
    assert len(rep.rows) == 4
    assert "FuseOps" in rep.report()
    assert "FuseOps" in check_html(rep._repr_html_())


def test_repr_pretty():
    """IPython pretty-printing of a diff and a pass record prints text."""
    class P:
        def __init__(self):
            self.out = []

        def text(self, s):
            self.out.append(s)

    x = pyir.var("x", shape=(2,))
    p = P()
    diff(op.nn.relu(x), op.tanh(x))._repr_pretty_(p, False)
    m = Sequential(_pipeline())(pyir.testing.resnet(1))
    m.pass_records[0]._repr_pretty_(p, False)
    assert "tanh" in p.out[0] and "PassRecord" in p.out[1]


def test_highlight_tokens():
    """highlight() wraps keywords, variables, numbers and types."""
    h = display.highlight('def @main(%x: Tensor[(2), float32]) { add(%x, 1f) }')
    for cls in ("kw", "gv", "var", "ty", "op", "num"):
        assert f'class="{cls}"' in h
    check_html(h)


def test_html_of_deeply_nested_tuples_and_functions():
    """issue 10 item 16: repr and _repr_html_ of 10^5 nested tuples / functions, typed, no recursion."""
    t = pyir.TensorType((2,), "float32")
    x = pyir.var("x", t)
    e = x
    for _ in range(10**5):
        e = pyir.Tuple([e])
    mod = pyir.transform.InferType()(pyir.Module({"main": pyir.Function([x], e)}))
    assert "Tuple" in repr(mod["main"].body)
    assert "10000" in check_html(mod._repr_html_()) and check_html(mod["main"]._repr_html_())
    f = x
    for i in range(10**5):
        f = pyir.Function([pyir.var(f"v{i}", t)], f)
    f = pyir.Function([x], f)
    assert "Function" in repr(f)
    check_html(f._repr_html_())
    check_html(pyir.Module({"main": f})._repr_html_())


def test_html_header_quotes_names_and_keys():
    """issue 10 item 5: the module HTML header writes names and attribute keys as the printer does."""
    y = pyir.var("a b", shape=(2,))
    mod = pyir.Module({"g.0": pyir.Function([y], y, None, {"k e y": float("-inf"), "ok": "s"})})
    text = check_html(mod._repr_html_())
    assert 'def @"g.0"(%"a b": Tensor[(2), float32], "k e y"=-inf, ok="s")' in text


def test_function_summary_uses_the_printers_parameter_names():
    """The collapsible header names parameters as the body does (two ``x`` params: %x, %x_1)."""
    import html
    import re

    x1, x2 = pyir.var("x", shape=(2,)), pyir.var("x", shape=(2,))
    m = pyir.Module({"main": pyir.Function([x1, x2], pyir.op.add(x1, x2))})
    text = html.unescape(re.sub("<[^>]+>", "", pyir.display.module_html(m).split("</style>")[-1]))
    assert "def @main(%x: Tensor[(2), float32], %x_1: Tensor[(2), float32])" in text
    assert "add(%x, %x_1)" in text


def test_answer_objects_render_text_html_and_pretty():
    """find / origins / history / show / tabular answers: text, balanced escaped HTML, and
    IPython pretty-printing of their text (issue 15 items 1 and 2)."""
    m0 = pyir.testing.resnet(1)
    m = Sequential(_pipeline())(m0)
    conv = next(n for n in pyir.post_order(m0["main"]) if isinstance(n, pyir.Call)
                and n.op is pyir.Op("nn.conv2d"))
    found = m.find(conv)
    answers = [found, m.origins(found.representative), m.history(conv), m.show(highlight=found), m.tabular()]
    for a in answers:
        text = check_html(a._repr_html_())
        assert text.strip()

        class P:
            def __init__(self):
                self.out = []

            def text(self, s):
                self.out.append(s)

        p = P()
        a._repr_pretty_(p, False)
        assert p.out == [str(a)] and str(a).strip()
    assert display.lineage(m, conv)["find"] == found
    assert "<script" not in answers[3]._repr_html_()
    # escaping: a variable named like markup stays text
    x = pyir.var("<b>x</b>", shape=(2,))
    mod = pyir.Module.from_expr(op.nn.relu(x))
    h = mod.show(highlight=mod["main"].body)._repr_html_()
    assert "<b>x</b>" not in h and "&lt;b&gt;x&lt;/b&gt;" in h
    check_html(mod.tabular()._repr_html_())
