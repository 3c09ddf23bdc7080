"""Tests of the InferType pass."""

import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.ir.expr import Call, Function, Let
from pyir.testing import programs, resnet, shared_dag, transformer_block
from pyir.transform.infer_type import InferType

MODELS = {
    "resnet": lambda: resnet(3),
    "transformer": transformer_block,
    "shared_dag": lambda: shared_dag(200),
}


def check_infer(mod):
    """Run InferType: the invariant bundle, plus every function's return type filled."""
    out = pyir.testing.check_pass(InferType(), mod)
    for name, f in out.items():
        assert f.ret_type is not None
        assert f.ret_type is mod.type_of(mod[name]).ret_type
        assert all(n.ret_type is not None for n in pyir.post_order(f) if type(n) is Function)
    return out


@pytest.mark.parametrize("model", sorted(MODELS))
def test_models(model):
    """InferType fills the return type of the models without touching the input, idempotently."""
    mod = MODELS[model]()
    out = check_infer(mod)
    assert out is not mod
    assert out["main"].body is mod["main"].body


@settings(max_examples=30, deadline=None)
@given(programs())
def test_random_programs(mod):
    """On random programs (with lets and ifs) InferType fills return types and keeps the meaning."""
    check_infer(mod)


def test_nested_primitive_functions_get_ret_types():
    """Nested (fused primitive) functions and the enclosing one get their return types."""
    x = pyir.var("x", shape=(2, 3))
    q = pyir.var("q", shape=(2, 3))
    prim = Function([q], op.nn.relu(op.tanh(q)), attrs={"Primitive": 1})
    mod = pyir.Module({"main": Function([x], op.sum(Call(prim, [x])))})
    out = check_infer(mod)
    funcs = [n for n in pyir.post_order(out["main"]) if type(n) is Function]
    inner = next(f for f in funcs if f.attrs.get("Primitive"))
    assert inner.ret_type is pyir.TensorType((2, 3), "float32")
    assert inner.body is prim.body
    assert out["main"].ret_type is pyir.TensorType((), "float32")


def test_closure_over_untyped_let_var():
    """A nested function using an unannotated let variable of its context gets its return type."""
    x = pyir.var("x", shape=(4,))
    t = pyir.Var("t")
    r = pyir.var("r", shape=(4,))
    closure = Function([r], op.add(r, t))
    mod = pyir.Module({"main": Function([x], Let(t, op.exp(x), Call(closure, [x])))})
    out = check_infer(mod)
    inner = next(n for n in pyir.post_order(out["main"]) if type(n) is Function and n is not out["main"])
    assert inner.ret_type is pyir.TensorType((4,), "float32")


def test_all_annotated_returns_same_module():
    """A module whose functions all have return types is returned as it is."""
    out = InferType()(transformer_block())
    assert InferType()(out) is out
    assert len(out.pass_records) == 1


def test_multiple_functions():
    """Every function of the module is checked and annotated, callees through the module."""
    a = pyir.var("a", shape=(3,))
    x = pyir.var("x", shape=(3,))
    mod = pyir.Module({
        "square": Function([a], op.multiply(a, a)),
        "main": Function([x], Call(pyir.GlobalVar("square"), [op.add(x, x)])),
    })
    out = check_infer(mod)
    assert out["square"].ret_type is pyir.TensorType((3,), "float32")
    assert out["main"].ret_type is pyir.TensorType((3,), "float32")


def test_shape_error_is_a_pass_error():
    """A shape error becomes a PassError naming the pass and carrying the TypeCheckError message."""
    x = pyir.var("x", shape=(2, 3))
    y = pyir.var("y", shape=(4, 5))
    f = Function([x, y], op.nn.relu(op.add(x, y)))
    mod = pyir.Module({"main": f})
    with pytest.raises(pyir.TypeCheckError) as direct:
        pyir.infer_type(f, mod)
    with pytest.raises(pyir.PassError) as err:
        InferType()(mod)
    assert "InferType" in str(err.value)
    assert str(direct.value) in str(err.value)
    assert isinstance(err.value.__cause__, pyir.TypeCheckError)


def test_error_in_helper_function_is_reported():
    """An ill-typed function that main does not call is still checked."""
    x = pyir.var("x", shape=(2,))
    x2 = pyir.var("x", shape=(2,))
    y = pyir.var("y", shape=(3,))
    mod = pyir.Module({
        "main": Function([x], op.nn.relu(x)),
        "bad": Function([x2, y], op.multiply(x2, y)),
    })
    with pytest.raises(pyir.PassError, match="InferType"):
        InferType()(mod)


def test_lineage_new_functions_derive_from_old():
    """The annotated function derives from the unannotated one."""
    mod = resnet(1)
    out = InferType()(mod)
    assert mod["main"].id in out.origins(out["main"])
    assert out["main"] in out.find(mod["main"])


def test_let_variables_of_two_functions_get_their_own_types():
    """issue 10 item 8: InferType annotates each function from its own lets; a module where
    one Var is bound in two functions (which gave @g the type of @main) cannot be built."""
    a = pyir.var("a", shape=(2,))
    b = pyir.var("b", shape=(3, 3))
    v, w = pyir.var("v"), pyir.var("w")
    main = Function([a], Let(v, op.exp(a), op.nn.relu(v)))
    mod = pyir.Module({"main": main, "g": Function([b], Let(w, op.exp(b), op.nn.relu(w)))})
    out = check_infer(mod)
    assert out["main"].ret_type is pyir.TensorType((2,))
    assert out["g"].ret_type is pyir.TensorType((3, 3))
    with pytest.raises(pyir.WellFormedError, match="bound in"):
        pyir.Module({"main": main, "g": Function([b], Let(v, op.exp(b), op.nn.relu(v)))})


def test_deep_chain_infer_type(deep_chain, deep_anf):
    """InferType fills the return type of a 10**6-deep chain and of its A-normal form."""
    out = InferType()(deep_chain)
    assert out["main"].ret_type is pyir.TensorType((4,), "float32")
    assert InferType()(out) is out
    anf = InferType()(deep_anf)
    assert anf["main"].ret_type is pyir.TensorType((4,), "float32")
