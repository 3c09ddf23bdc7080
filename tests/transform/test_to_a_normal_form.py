"""Tests of ToANormalForm (its interplay with the other normal forms: test_normal_forms.py)."""

import pytest
from _normal_forms import MODELS, assert_anf, check_pass, if_module
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.ir.expr import Call, Function, If, Let, Tuple, TupleGetItem, Var
from pyir.testing import programs, resnet
from pyir.transform.to_a_normal_form import ToANormalForm
from pyir.transform.to_graph_normal_form import ToGraphNormalForm


@settings(max_examples=25, deadline=None)
@given(programs())
def test_anf_is_canonical(mod):
    """ANF of a program and of its graph form are the same objects (deterministic let vars)."""
    a = ToANormalForm()(mod)
    assert ToANormalForm()(mod)["main"] is a["main"]
    assert ToANormalForm()(ToGraphNormalForm()(mod))["main"] is a["main"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_anf_models_form_types_and_inverse(model):
    """ANF of the models is in A-normal form, typed, and GNF gives back the original graph."""
    mod = MODELS[model]()
    anf = ToANormalForm()(mod)
    assert_anf(anf["main"])
    lets = [n for n in pyir.post_order(anf["main"]) if type(n) is Let]
    compound = [n for n in pyir.post_order(mod["main"]) if isinstance(n, (Call, Tuple, TupleGetItem))]
    assert len(lets) == len(compound)
    for let in lets:
        assert let.var.type_annotation is anf.type_of(let.value)
    assert ToGraphNormalForm()(anf)["main"] is mod["main"]
    assert ToANormalForm()(mod)["main"] is anf["main"]


def test_anf_lineage():
    """Let-bound values and variables of ANF derive from the graph nodes they bind."""
    mod = resnet(1)
    conv = next(n for n in pyir.post_order(mod["main"]) if type(n) is Call and n.op.name == "nn.conv2d")
    anf = ToANormalForm()(mod)
    found = anf.find(conv)
    assert any(type(n) is Call and n.op is conv.op for n in found)
    assert any(type(n) is Var for n in found)
    let = next(n for n in pyir.post_order(anf["main"]) if type(n) is Let and n.value in found)
    assert conv.id in anf.origins(let.value)


def test_anf_scopes_of_if():
    """ANF binds an expression used in both branches before the if, one used in one branch inside it."""
    mod, _ = if_module()
    f = ToANormalForm()(mod)["main"]
    outer = []
    e = f.body
    while type(e) is Let:
        outer.append(e)
        e = e.body
    assert [type(le.value) for le in outer] == [Call, If]
    assert outer[0].value.op.name == "nn.conv2d"
    branch = outer[1].value.true_branch
    assert type(branch) is Let and branch.value.op.name == "tanh"
    check_pass(ToANormalForm(), mod)


def test_anf_nested_functions():
    """ANF binds nested functions, normalizes their bodies, keeps primitive bodies as they are."""
    x = pyir.var("x", shape=(4,))
    q = pyir.var("q", shape=(4,))
    prim = Function([q], op.nn.relu(op.tanh(q)), attrs={"Primitive": 1})
    r = pyir.var("r", shape=(4,))
    closure = Function([r], op.add(op.exp(r), op.exp(x)))
    mod = pyir.Module({"main": Function([x], op.multiply(Call(prim, [x]), Call(closure, [x])))})
    out = check_pass(ToANormalForm(), mod)
    assert_anf(out["main"])
    values = [n.value for n in pyir.post_order(out["main"]) if type(n) is Let]
    assert prim in values
    inner = next(v for v in values if type(v) is Function and not v.attrs.get("Primitive"))
    assert type(inner.body) is Let
    # exp(x) does not depend on r but is used only in the closure: bound inside it
    assert any(type(n) is Let and n.value is op.exp(x) for n in pyir.post_order(inner))
    assert ToGraphNormalForm()(out)["main"] is mod["main"]


def _let_depth(e):
    n = 0
    while type(e) is Let:
        n += 1
        e = e.body
    return n


def test_deep_chain_anf(deep_chain, deep_anf):
    """A 10**6-deep chain becomes a 10**6-deep let chain (no recursion), leaving the input intact."""
    assert _let_depth(deep_anf["main"].body) == 10**6
    assert deep_chain["main"].body.op.name == "subtract"


def test_anf_unchanged_records_nothing():
    """issue 10 (memory target): ANF streams its lineage edges into the recorder as it builds;
    an input already in A-normal form (its lets rebuilt to the very same objects) returns the
    input module itself, with no record."""
    mod = resnet(1)
    anf = ToANormalForm()(mod)
    assert ToANormalForm()(anf) is anf
    assert pyir.transform.ToBasicBlockNormalForm()(anf) is anf


def test_anf_lineage_through_lets_and_sharing():
    """issue 10 (memory target): with the edges streamed, each let of the ANF of a program with
    lets and shared nodes still derives from the input nodes it stands for (the let's own
    value, and every input let value that the graph form merged into it)."""
    x = pyir.var("x", shape=(4,))
    v = pyir.var("v")
    a = op.exp(x)
    shared = op.nn.relu(a)
    body = Let(v, shared, op.add(v, op.nn.relu(a)))  # the let value and the inline relu merge
    mod = pyir.Module({"main": Function([x], body)})
    out = ToANormalForm()(mod)
    lets = []
    e = out["main"].body
    while type(e) is Let:
        lets.append(e)
        e = e.body
    relu_let = next(le for le in lets if le.value.op.name == "nn.relu")
    inputs = {n.id for n in pyir.post_order(mod["main"])}
    assert out.origins(relu_let.value) and out.origins(relu_let.value) <= inputs
    assert out.origins(relu_let.var) <= inputs
    found = out.find(shared)
    assert relu_let.value in found and relu_let.var in found
    assert out.find(a) and all(type(n) in (Call, Var, Let) for n in out.find(a))


def test_anf_frees_the_graph_form_before_building_the_lets(monkeypatch):
    """Memory: the let-free graph form of the body (rebuilt from the input's lets) is released
    before the body's lets are built, so the lets reuse its memory; output and lineage as usual."""
    import weakref

    from pyir.transform import common

    x = pyir.var("x", shape=(4,))
    h = x
    for i in range(200):
        h = op.nn.relu(h) if i % 2 else op.add(h, x)
    mod = ToANormalForm()(pyir.Module({"main": Function([x], op.tanh(h))}))
    mod = pyir.transform.SimplifyExpr()(mod).with_function(  # a let chain whose graph form is new
        "main", Function([x], Let(pyir.var("t"), op.exp(x), mod["main"].body)))
    graph: list[weakref.ref] = []
    alive_when_binding: list[bool] = []
    plan_init, wrap = common._Plan.__init__, common._Bind._wrap

    def spy_plan(self, body):
        graph.append(weakref.ref(body))
        plan_init(self, body)

    def spy_wrap(self, e, lst):
        alive_when_binding.append(graph[-1]() is not None)
        return wrap(self, e, lst)

    monkeypatch.setattr(common._Plan, "__init__", spy_plan)
    monkeypatch.setattr(common._Bind, "_wrap", spy_wrap)
    out = ToANormalForm()(mod)
    monkeypatch.undo()
    assert alive_when_binding == [False]  # the body scope only, built after the graph form died
    assert_anf(out["main"])
    assert ToANormalForm()(ToGraphNormalForm()(mod))["main"] is out["main"]
    last = mod["main"].body
    while type(last.body) is Let:
        last = last.body
    assert last.value.op.name == "tanh"  # the input's last let binds tanh(...): ANF keeps its lineage
    found = [n for n in out.find(last.value) if type(n) is Call]
    assert [n.op.name for n in found] == ["tanh"]
    assert out.origins(found[0], since=len(mod.pass_records)) == {last.value.id}
