"""Lineage answers are objects (issue 15 item 1): ``find`` / ``origins`` / ``history`` keep their
list / set / list behaviour and add a text table, an HTML table, the representative hit of a
find, origins resolved to nodes and ONNX node names, and the rewrite rule of each step."""

from __future__ import annotations

import json
import os
import pickle
from html.parser import HTMLParser

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.ir.answers import FindResult, History, Origins
from pyir.ir.lineage import PassRecord, Step
from pyir.transform import DefuseOps, FuseOps, InferType, SimplifyExpr, standard_pipeline

MODELS = os.path.join(os.path.dirname(__file__), "models")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []
        self.classes: list[str] = []
        self.titles: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("class"):
            self.classes.append(a["class"])
        if a.get("title"):
            self.titles.append(a["title"])
        if tag not in ("br", "hr", "img", "meta", "input"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_html(h: str) -> _Tags:
    """Parse ``h`` (balanced tags) and return what it holds."""
    p = _Tags()
    p.feed(h)
    p.close()
    assert not p.stack, p.stack
    return p


def _two_convs():
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    w2 = pyir.var("w2", shape=(4, 4, 3, 3))
    conv = op.nn.conv2d(x, w, padding=(1, 1))
    y = op.nn.relu(conv)
    z = op.nn.softmax(op.nn.relu(op.nn.conv2d(op.add(y, pyir.const(0.0)), w2, padding=(1, 1))))
    return InferType()(pyir.Module.from_expr(z)), conv


def test_find_after_fuseops_marks_the_conv_itself():
    """After FuseOps, find(conv) holds the conv, its fused function and the call of it: the
    representative is the conv inside the function (same operator, same type)."""
    m, conv = _two_convs()
    fused = FuseOps()(m)
    r = fused.find(conv)
    assert isinstance(r, FindResult) and isinstance(r, list) and len(r) == 3
    assert r == sorted(r, key=lambda n: n.id) and r[:1] == [r[0]]  # still the sorted list
    rep = r.representative
    assert isinstance(rep, pyir.Call) and rep.op is pyir.Op("nn.conv2d") and rep is not conv
    assert rep.checked_type == conv.checked_type
    kinds = {type(n).__name__ for n in r}
    assert kinds == {"Call", "Function"}
    rows = r.rows()
    assert rows[0]["representative"] and rows[0]["node"] is rep and rows[0]["op"] == "nn.conv2d"
    assert sum(row["representative"] for row in rows) == 1
    assert {row["op"] for row in rows} == {"nn.conv2d", "fn(primitive)"}
    for row in rows:  # each hit named as print(mod) names it, and found again by that name
        assert row["name"] and fused.node_at(row["name"]) is row["node"]
        assert row["function"] == "@main"
    text = repr(r)
    assert "nn.conv2d" in text and "Tensor[(1, 4, 8, 8), float32]" in text
    rep_line = next(ln for ln in text.splitlines() if ln.startswith("*"))
    assert fused.name_of(rep) in rep_line and "nn.conv2d" in rep_line
    assert str(r) == text
    h = r._repr_html_()
    p = parse_html(h)
    assert "rep" in p.classes and "nn.conv2d" in "".join(p.text)
    # defused: one hit, the very node again
    back = DefuseOps()(fused).find(conv)
    assert back == [conv] and back.representative is conv


def test_find_representative_by_kind_and_eliminated():
    """Without an operator to match (a Var), the hit of the same kind represents it; an
    eliminated node gives an empty answer whose text says so."""
    m, conv = _two_convs()
    fused = FuseOps()(m)
    x = m["main"].params[0]
    r = fused.find(x)
    assert x in r and r.representative is x
    gone = pyir.Module.from_expr(op.nn.relu(m["main"].params[0]))
    e = gone.find(conv)
    assert e == [] and e.representative is None and "0 hit(s)" in repr(e)
    parse_html(e._repr_html_())
    # an id of a node that is no longer alive: a call of an operator is preferred
    dead = FindResult(list(r), fused, b"\x01" * 16)
    assert dead.original is None and dead.representative in r


def test_onnx_model_find_and_origins():
    """On an imported ONNX model through the standard pipeline: the conv is found inside its
    fused function, and origins name the model's ONNX node."""
    import onnx
    from onnx import numpy_helper

    from pyir.frontend import from_onnx

    model = onnx.load(os.path.join(MODELS, "resnet_ish.legacy.onnx"))
    meta = json.loads(next(p.value for p in model.metadata_props if p.key == "pyir.stripped"))
    for e in meta:  # stripped weights: any values do for lineage
        t = next(x for x in model.graph.initializer if x.name == e["name"])
        t.CopyFrom(numpy_helper.from_array(np.full([int(d) for d in e["shape"]], 0.5, e["dtype"]), e["name"]))
    m0 = from_onnx(model)
    m = standard_pipeline()(m0)
    convs = [n for n in pyir.post_order(m0["main"])
             if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.conv2d")]
    assert len(convs) >= 3
    onnx_convs = {n.name for n in model.graph.node if n.op_type == "Conv"}
    for conv in convs:
        r = m.find(conv)
        rep = r.representative
        assert isinstance(rep, pyir.Call) and rep.op is pyir.Op("nn.conv2d"), repr(r)
        assert any(isinstance(n, pyir.Call) and isinstance(n.op, pyir.Function) for n in r)  # the fused call
        o = m.origins(rep)
        assert isinstance(o, Origins) and conv.id in o and conv in o.nodes()
        names = o.source_names()
        assert names and set(names) <= onnx_convs | {n.name for n in model.graph.node}
        assert any(nm in onnx_convs for nm in names)
        text = repr(o)
        assert "(Conv)" in text and names[0] in text
        assert names[0] in "".join(parse_html(o._repr_html_()).text)


def test_origins_keep_set_behaviour_and_resolve_nodes():
    """origins is still a set of ids (membership, sorted, comparison), and resolves them."""
    m, conv = _two_convs()
    fused = FuseOps()(m)
    rep = fused.find(conv).representative
    o = fused.origins(rep)
    assert o == {conv.id} and sorted(o) == [conv.id] and o.ids == {conv.id} and type(o.ids) is set
    assert o.nodes() == [conv] and o.sources() == {}
    call = fused["main"].body
    oc = fused.origins(call)
    assert len(oc) >= 1 and all(isinstance(n, pyir.Node) for n in oc.nodes())
    assert "origins of" in repr(oc) and "nn.softmax" in repr(oc)
    assert "nn.softmax" in "".join(parse_html(oc._repr_html_()).text)


def test_history_names_the_rule_that_fired():
    """SimplifyExpr's steps carry the rule that made their result; the table shows it; steps
    compare as before (the rule is not part of equality)."""
    x = pyir.var("x", shape=(2, 3))
    e = op.add(op.nn.relu(x), pyir.const(0.0))
    m = pyir.Module.from_expr(op.exp(e))
    out = SimplifyExpr()(m)
    rec = out.pass_records[-1]
    assert "x + 0" in rec.rule_names
    h = out.history(e)
    assert isinstance(h, History) and isinstance(h, list)
    # one step, add -> relu: the pass's self-edge of the kept relu is not a step (it showed as
    # "relu -> relu" with the rule of the relu)
    assert [(s.before, s.after) for s in h] == [(e.id, out["main"].body.args[0].id)]
    ruled = [s for s in h if s.rule is not None]
    assert ruled and ruled[0].rule == "x + 0" and ruled[0].pass_name == "SimplifyExpr"
    s = ruled[0]
    assert Step(s.pass_name, s.before, s.after) == s  # equality ignores the rule
    assert "[x + 0]" in repr(s)
    text = repr(h)
    assert "x + 0" in text and "SimplifyExpr" in text and "nn.relu" in text
    p = parse_html(h._repr_html_())
    assert "x + 0" in "".join(p.text)
    # the record keeps the name table compactly and survives pickling with it
    assert rec.rule_of(s.after) == "x + 0" and rec.rule_of(b"\x00" * 16) is None
    again = pickle.loads(pickle.dumps(rec))
    assert again.rule_names == rec.rule_names and again.rule_of(s.after) == "x + 0"
    # a pass without rules has an empty table
    assert FuseOps()(InferType()(m)).pass_records[-1].rule_names == ()


def test_pass_record_rules_validation():
    """Rule names given to a record are validated (pyir errors, never bare ones)."""
    i = b"\x02" * 16
    rec = PassRecord("P", "", [], [], rules={i: "r1"})
    assert rec.rule_of(i) == "r1" and rec.rules() == {i: "r1"}
    with pytest.raises(pyir.LineageError):
        PassRecord("P", "", [], [], rules={b"short": "r"})
    with pytest.raises(pyir.LineageError):
        PassRecord("P", "", [], [], rules={i: 3})
    with pytest.raises(pyir.LineageError):
        PassRecord("P", "", [], [], rules=[1, 2])


def test_answers_html_bounded_on_a_large_module():
    """The text and HTML of answers stay bounded for a 10^4-node module and 10^4 hits."""
    big = pyir.testing.elementwise_chain(10_000)
    nodes = pyir.post_order(big["main"])
    assert len(nodes) >= 10_000
    x = big["main"].params[0]
    many = FindResult(nodes, big, x.id)
    h = many._repr_html_()
    assert len(h) < 60_000 and "more row(s)" in h
    parse_html(h)
    assert len(repr(many)) < 20_000 and "more row(s)" in repr(many)
    o = Origins([n.id for n in nodes], big, x.id)
    assert len(o._repr_html_()) < 60_000 and len(repr(o)) < 20_000
    steps = History([Step("P", n.id, n.id, "r") for n in nodes], big, x.id)
    assert len(steps._repr_html_()) < 60_000 and len(repr(steps)) < 20_000
    parse_html(steps._repr_html_())
    ls = big.show(highlight=nodes[100:110])
    hl = ls._repr_html_()
    assert len(hl) < 60_000 and parse_html(hl).classes.count("hl") >= 10
    assert len(str(ls)) > 100_000  # the text form is the whole program (print(mod)), marked
    tb = big.tabular()
    assert len(tb) >= 10_000 and len(tb._repr_html_()) < 60_000 and len(str(tb)) < 20_000
    parse_html(tb._repr_html_())
