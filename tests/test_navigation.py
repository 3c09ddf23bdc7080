"""Programs you can navigate (issue 15 item 2): printed names looked up both ways, types in the
text and on hover, highlights, fused modules that read top-down, a tabular view."""

from __future__ import annotations

import re

import pytest
from test_lineage_answers import parse_html

import pyir
from pyir import op
from pyir.ir.answers import Listing, Table
from pyir.transform import FuseOps, InferType, SimplifyExpr, ToANormalForm


def _fused():
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    w2 = pyir.var("w2", shape=(4, 4, 3, 3))
    conv = op.nn.conv2d(x, w, padding=(1, 1))
    z = op.nn.softmax(op.nn.relu(op.nn.conv2d(op.nn.relu(conv), w2, padding=(1, 1))))
    m = InferType()(pyir.Module.from_expr(z))
    return m, FuseOps()(m), conv


def test_name_of_and_node_at_are_inverse():
    """Every printed binding, parameter and unnamed scope result has a name that finds it again."""
    _m, fused, _conv = _fused()
    text, entries = fused._printed()
    assert text == str(fused)
    labels: dict[str, list] = {}
    for n, fn, label, _line in entries:
        labels.setdefault((fn, label), []).append(n)
    checked = 0
    for (fn, label), ns in labels.items():
        n = ns[0]
        assert fused.node_at(label if fn == "main" else f"@{fn}:{label}") is n
        if len({id(k) for k in ns}) == 1 and fused._labels()[1][n] == (fn, label):
            assert fused.name_of(n) == label
            checked += 1
    assert checked >= 15
    # the names are those of print(mod): "%1 = nn.conv2d(" is a line of the text
    conv_in_body = next(n for n, *_ in entries if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.conv2d"))
    name = fused.name_of(conv_in_body)
    assert f"{name} = nn.conv2d(" in text
    body_result = fused.node_at("%0.return")
    assert isinstance(body_result, pyir.Call) and body_result.op is pyir.Op("nn.relu")
    assert fused.node_at("@main.return") is fused["main"].body
    assert fused.node_at("@main") is fused["main"]
    assert fused.node_at("%x") is fused["main"].params[0]
    assert fused.name_of(fused["main"].body.id) == "@main.return"  # by id too


def test_names_in_several_functions_and_errors():
    """Bindings of other functions are qualified ``@f:%N``; unknown names suggest close ones."""
    x = pyir.var("x", shape=(2,))
    y = pyir.var("y", shape=(2,))
    helper = pyir.Function([y], op.exp(op.nn.relu(y)))
    main = pyir.Function([x], op.tanh(pyir.Call(pyir.GlobalVar("helper"), [op.negative(x)])))
    mod = pyir.Module({"main": main, "helper": helper})
    relu = helper.body.args[0]
    assert mod.name_of(relu) == "@helper:%0"
    assert mod.node_at("@helper:%0") is relu
    assert mod.node_at("%0", function="helper") is relu
    assert mod.node_at("%0") is main.body.args[0].args[0]  # main's own %0
    assert mod.name_of(relu, function="helper") == "@helper:%0"
    with pytest.raises(pyir.WellFormedError, match="did you mean"):
        mod.node_at("%9")
    with pytest.raises(pyir.WellFormedError, match="not printed"):
        mod.name_of(op.sigmoid(x))
    with pytest.raises(pyir.WellFormedError):
        mod.node_at(3)
    let_mod = ToANormalForm()(mod)
    lets = let_mod._printed()[1]
    assert any(label.startswith("%") and isinstance(n, pyir.Var) for n, _f, label, _l in lets)


def test_show_types_prints_each_binding_type_and_parses_back():
    """astext(show_types=True) adds ``/* ty=... */`` to each binding; the text parses back."""
    _m, fused, _conv = _fused()
    t = fused.astext(show_types=True)
    assert re.search(r"= nn\.conv2d\(%p0\w*, %p1\w*, padding=\[1, 1, 1, 1\]\) "
                     r"/\* ty=Tensor\[\(1, 4, 8, 8\), float32\] \*/;", t)
    assert t.count("/* ty=") >= 7
    again = pyir.parse(t)
    assert again.astext() == pyir.parse(fused.astext()).astext()
    assert pyir.alpha_equal(again["main"], fused["main"])
    plain = fused.astext()
    assert "/* ty=" not in plain


def test_fused_module_reads_top_down():
    """print(fused) puts each primitive function just before its first call (top-down, like
    TVM); astext(order=...) gives either order, and both parse back to the same module."""
    _m, fused, _conv = _fused()
    lines = str(fused).splitlines()
    fn_lines = [i for i, ln in enumerate(lines) if "= fn (" in ln]
    call_lines = [i for i, ln in enumerate(lines) if "= %" in ln and "(%" in ln and "fn (" not in ln]
    assert len(fn_lines) == 3
    assert "nn.conv2d" in lines[fn_lines[0] + 1]  # the first function is the first group's
    assert fn_lines[0] < call_lines[0] < fn_lines[1] < call_lines[1] < fn_lines[2]
    assert "nn.softmax" in lines[fn_lines[2] + 1]
    post = fused.astext(order="post")
    assert "nn.softmax" in post.splitlines()[2]  # the old order: the last group's function on top
    top = fused.astext(order="top-down")
    assert pyir.parse(top).astext(order="top-down") == top
    assert pyir.alpha_equal(pyir.parse(top)["main"], pyir.parse(post)["main"])
    assert pyir.alpha_equal(pyir.parse(top)["main"], fused["main"])
    with pytest.raises(pyir.TypeCheckError):
        fused.astext(order="sideways")


def test_show_highlight_marks_text_and_html():
    """mod.show(highlight=mod.find(x)) marks the found nodes' lines (>> in text, class hl in HTML)."""
    _m, fused, conv = _fused()
    found = fused.find(conv)
    ls = fused.show(highlight=found)
    assert isinstance(ls, Listing)
    marked = [ln for ln in str(ls).splitlines() if ln.startswith(">>")]
    assert len(marked) == 3 and any("nn.conv2d" in ln for ln in marked)
    assert any("= fn (" in ln for ln in marked)
    h = ls._repr_html_()
    p = parse_html(h)
    assert p.classes.count("hl") == 3
    assert "nn.conv2d" in h.split('class="hl"')[2][:400] or "nn.conv2d" in h.split('class="hl"')[1][:400]
    none = fused.show()
    assert not [ln for ln in str(none).splitlines() if ln.startswith(">>")]
    typed = fused.show(highlight=found.representative, show_types=True)
    assert "/* ty=" in str(typed) and sum(ln.startswith(">>") for ln in str(typed).splitlines()) == 1
    const = fused.show(highlight=[pyir.const(1.0)])
    assert const.missing == 1 and "no line" in str(const)


def test_types_on_hover_in_html():
    """A module's HTML carries each binding's real type in a title, never the word "type"."""
    _m, fused, _conv = _fused()
    h = fused._repr_html_()
    p = parse_html(h)
    assert 'title="type"' not in h
    assert "%1: Tensor[(1, 4, 8, 8), float32]" in p.titles
    assert any(t.startswith("%0: fn (") for t in p.titles)
    e = op.nn.relu(pyir.var("q", shape=(3,)))
    assert 'title="type"' not in e._repr_html_()


def test_tabular_view():
    """mod.tabular() lists the bindings in print order: name, op, args, type, attrs, origins."""
    m, fused, _conv = _fused()
    out = SimplifyExpr()(fused)
    t = fused.tabular()
    assert isinstance(t, Table) and len(t) >= 15
    names = [r[0] for r in t.rows]
    assert names[0] == "@main" and names[1:4] == ["%x", "%w", "%w2"]
    row = next(r for r in t.rows if r[1] == "nn.conv2d")
    assert row[2] == "%p0, %p1" and row[3] == "Tensor[(1, 4, 8, 8), float32]"
    assert row[4] == "padding=[1, 1, 1, 1]"  # attributes at their default are left out
    assert row[5].startswith("#")  # origins: a module with pass records
    assert fused.node_at(row[0]) is t.nodes[t.rows.index(row)]
    assert next(r for r in t.rows if r[0] == "%x")[1] == "param"
    text = str(t)
    assert "nn.conv2d" in text and "name" in text.splitlines()[1]
    assert str(pyir.display.tabular(fused, "main")) == text
    p = parse_html(t._repr_html_())
    assert "nn.conv2d" in "".join(p.text)
    plain = m.tabular()  # no pass records beyond InferType: origins are ids of the input
    assert len(plain) > 0 and out.tabular().rows
    with pytest.raises(pyir.WellFormedError):
        fused.tabular("nope")


@pytest.mark.slow  # printing a 10^6-deep chain is checked in the default run by test_printer
def test_navigation_on_a_deep_chain(deep_chain):
    """names, lookups, show and a find's answer on a 10^6-deep chain (no recursion; the
    session's chain, ``elementwise_chain(10**6)``, not a second one)."""
    mod = deep_chain
    body = mod["main"].body
    name = mod.name_of(body)
    assert name == "@main.return" and mod.node_at(name) is body
    assert mod.node_at("%0") is not None
    ls = mod.show(highlight=[body])
    assert len(ls.marked) == 1 and len(ls._repr_html_()) < 60_000
    r = mod.find(body)
    assert r.representative is body and "1 hit(s)" in repr(r)  # (too large to be named in answers)
