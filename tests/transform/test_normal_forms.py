"""Tests of ToANormalForm, ToBasicBlockNormalForm and ToGraphNormalForm."""

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.expr import Call, Constant, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from pyir.testing import programs, resnet, shared_dag, transformer_block
from pyir.transform.infer_type import InferType
from pyir.transform.to_a_normal_form import ToANormalForm
from pyir.transform.to_basic_block_normal_form import ToBasicBlockNormalForm
from pyir.transform.to_graph_normal_form import ToGraphNormalForm

MODELS = {
    "resnet": lambda: resnet(3),
    "transformer": transformer_block,
    "shared_dag": lambda: shared_dag(200),
}
PASSES = [ToANormalForm(), ToBasicBlockNormalForm(), ToGraphNormalForm()]
ATOMS = (Var, GlobalVar, Constant, Op)


def snapshot(mod):
    """Printed text and the ids of every node of every function."""
    return pyir.testing.snapshot(mod)


def check_pass(p, mod):
    """Run ``p``: the invariant bundle (input unchanged, same meaning, lineage, idempotent)."""
    return pyir.testing.check_pass(p, mod)


def assert_anf(f):
    """Every non-atomic subexpression of ``f`` is the value of a let."""
    def ok_tail(e):
        return isinstance(e, (Let, *ATOMS))

    for n in pyir.post_order(f, stop=lambda n: type(n) is Function and bool(n.attrs.get("Primitive"))):
        k = type(n)
        if k is Call:
            assert all(isinstance(a, ATOMS) for a in (n.op, *n.args)), n
        elif k is Tuple:
            assert all(isinstance(a, ATOMS) for a in n.fields), n
        elif k is TupleGetItem:
            assert isinstance(n.tuple_value, ATOMS), n
        elif k is If:
            assert isinstance(n.cond, ATOMS) and ok_tail(n.true_branch) and ok_tail(n.false_branch), n
        elif k is Function and not n.attrs.get("Primitive"):
            assert ok_tail(n.body), n
        elif k is Let:
            assert ok_tail(n.body), n


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("p", PASSES, ids=lambda p: p.name)
def test_models_unchanged_input_same_meaning_idempotent(p, model):
    """Each pass keeps its input intact, preserves meaning and is idempotent on the models."""
    check_pass(p, MODELS[model]())


@settings(max_examples=30, deadline=None)
@given(programs())
def test_random_programs_all_passes(mod):
    """On random programs every pass keeps the input, the meaning, and is idempotent."""
    for p in PASSES:
        check_pass(p, mod)
    anf = ToANormalForm()(mod)
    assert_anf(anf["main"])
    assert ToANormalForm()(ToGraphNormalForm()(anf))["main"] is anf["main"]


@settings(max_examples=30, deadline=None)
@given(programs(allow_let=False))
def test_graph_form_inverts_anf_and_bbnf(mod):
    """GNF(ANF(m)) and GNF(BBNF(m)) rebuild the very same main function of a let-free module."""
    assert ToGraphNormalForm()(ToANormalForm()(mod))["main"] is mod["main"]
    assert ToGraphNormalForm()(ToBasicBlockNormalForm()(mod))["main"] is mod["main"]


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


def test_gnf_lineage():
    """Values substituted by GNF derive from their let bindings."""
    x = pyir.var("x", shape=(4,))
    v = pyir.Var("v")
    value = op.nn.relu(x)
    let = Let(v, value, op.add(v, v))
    mod = pyir.Module({"main": Function([x], let)})
    out = ToGraphNormalForm()(mod)
    assert out["main"].body is op.add(value, value)
    assert value in out.find(let)
    assert let.id in out.origins(value)


def _if_module():
    p = pyir.var("p", shape=(1, 2, 4, 4))
    c = pyir.var("c", shape=(), dtype="bool")
    w = pyir.const(np.ones((2, 2, 3, 3), "float32") * 0.1)
    conv = op.nn.conv2d(p, w, padding=(1, 1))
    only_then = op.tanh(conv)
    body = If(c, op.add(only_then, op.sigmoid(only_then)), op.negative(conv))
    return pyir.Module({"main": Function([p, c], body)}), conv


def test_anf_scopes_of_if():
    """ANF binds an expression used in both branches before the if, one used in one branch inside it."""
    mod, _ = _if_module()
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


def test_bbnf_leaves_conv2d_module_untouched():
    """BBNF on a conv2d module leaves its text and ids untouched (and changes nothing without if)."""
    mod = resnet(1)
    text = mod.astext()
    ids = [n.id for n in pyir.post_order(mod["main"])]
    out = ToBasicBlockNormalForm()(mod)
    assert out is mod
    assert mod.astext() == text
    assert [n.id for n in pyir.post_order(mod["main"])] == ids

    mod2, _ = _if_module()
    text2 = mod2.astext()
    ids2 = [n.id for n in pyir.post_order(mod2["main"])]
    out2 = ToBasicBlockNormalForm()(mod2)
    assert out2 is not mod2
    assert mod2.astext() == text2
    assert [n.id for n in pyir.post_order(mod2["main"])] == ids2


def test_bbnf_binds_only_shared_across_branches():
    """BBNF let-binds the conv shared by both branches, at the dominating scope, and nothing else."""
    mod, conv = _if_module()
    out = check_pass(ToBasicBlockNormalForm(), mod)
    body = out["main"].body
    assert type(body) is Let and body.value is conv
    assert type(body.body) is If
    lets = [n for n in pyir.post_order(out["main"]) if type(n) is Let]
    assert lets == [body]
    assert body.var.type_annotation is conv.checked_type
    then = body.body.true_branch
    assert type(then) is Call and then.op.name == "add"
    assert ToGraphNormalForm()(out)["main"] is mod["main"]


def test_bbnf_no_if_returns_same_module():
    """BBNF returns the very same module object when no function has an if."""
    for model in MODELS.values():
        mod = model()
        assert ToBasicBlockNormalForm()(mod) is mod


def test_gnf_without_lets_is_identity():
    """GNF of a let-free module returns the same module object."""
    mod = transformer_block()
    assert ToGraphNormalForm()(mod) is mod


def test_gnf_recursive_let_is_an_error():
    """A let whose value uses its own variable has no graph form: a PassError naming the pass.
    (Only a let-bound function may use its own variable: in any other value it is free, and
    a module rejects it, issue 10 item 6.)"""
    x = pyir.var("x", shape=(4,))
    v = pyir.var("v", shape=(4,))
    with pytest.raises(pyir.WellFormedError, match="free"):
        pyir.Module({"main": Function([x], Let(v, op.add(v, x), v))})
    f, n = pyir.var("f"), pyir.var("n", shape=(4,))
    mod = pyir.Module({"main": Function([x], Let(f, Function([n], pyir.Call(f, [n])), pyir.Call(f, [x])))})
    with pytest.raises(pyir.PassError, match=r"ToGraphNormalForm.*own value"):
        ToGraphNormalForm()(mod)


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


# -- 10**6-deep chains ----------------------------------------------------------------------------

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


def test_deep_chain_gnf(deep_chain, deep_anf):
    """GNF turns the 10**6-deep let chain back into the very same graph."""
    assert ToGraphNormalForm()(deep_anf)["main"] is deep_chain["main"]


def test_deep_chain_infer_type(deep_chain, deep_anf):
    """InferType fills the return type of a 10**6-deep chain and of its A-normal form."""
    out = InferType()(deep_chain)
    assert out["main"].ret_type is pyir.TensorType((4,), "float32")
    assert InferType()(out) is out
    anf = InferType()(deep_anf)
    assert anf["main"].ret_type is pyir.TensorType((4,), "float32")


def test_anf_and_bbnf_linear_in_if_nesting():
    """issue 10 item 17: ANF and BBNF of 3x10^4 nested ifs sharing one node (was quadratic: 2x10^4 took 9 s).

    The shared node is bound once, at the outermost scope (lowest common ancestor of its uses).
    """
    t = pyir.TensorType((2,), "float32")
    x = pyir.var("x", t)
    c = pyir.var("c", pyir.TensorType((), "bool"))
    s = op.nn.relu(x)
    e = op.negative(x)
    n = 3 * 10**4
    for _ in range(n):
        e = If(c, op.add(e, s), op.negative(s))
    mod = pyir.Module({"main": Function([x, c], e)})
    bb = ToBasicBlockNormalForm()(mod)["main"].body
    assert type(bb) is Let and bb.value is s  # nn.relu bound once, outside every if
    anf = ToANormalForm()(mod)["main"].body
    depth = 0
    while type(anf) is Let:
        if type(anf.value) is If:
            depth += 1
            anf = anf.value.true_branch
        else:
            anf = anf.body
    assert depth == n
