"""Type inference: results, caching, context-dependent types and clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.typecheck import TypeContext
from pyir.ir.node import cached_type
from pyir.testing import programs


def test_types_of_every_construct():
    """Calls, tuples, get-items, lets, ifs and functions get the expected types."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.const(np.zeros((4, 3, 3, 3), "float32"))
    conv = op.nn.conv2d(x, w, padding=(1, 1), strides=(2, 2))
    assert conv.checked_type is pyir.TensorType((1, 4, 4, 4))
    t = pyir.Tuple([conv, x])
    assert t.checked_type is pyir.TupleType([conv.checked_type, x.type_annotation])
    assert pyir.TupleGetItem(t, 1).checked_type is x.type_annotation
    v = pyir.var("v")
    let = pyir.Let(v, conv, op.nn.relu(v))
    assert pyir.infer_type(let) is conv.checked_type
    cond = op.greater(op.sum(x), pyir.const(0.0))
    assert pyir.If(cond, x, op.negative(x)).checked_type is x.type_annotation
    f = pyir.Function([x], conv)
    assert f.checked_type is pyir.FuncType([x.type_annotation], conv.checked_type)


def test_structural_types_are_cached_on_nodes_and_context_types_are_not():
    """A node's type is cached on it unless it depends on an unannotated let var or a global."""
    x = pyir.var("x", shape=(2,))
    e = op.exp(x)
    assert e.checked_type is pyir.TensorType((2,))
    assert cached_type(e) is pyir.TensorType((2,))
    v = pyir.var("v")
    use = op.exp(v)
    pyir.infer_type(pyir.Let(v, x, use))
    assert cached_type(use) is None
    with pytest.raises(pyir.TypeCheckError, match="%v"):
        use.checked_type


def test_global_function_types_come_from_the_module():
    """Calls of global functions are typed through their module, recursion needs a ret type."""
    x = pyir.var("x", shape=(3,))
    helper = pyir.Function([x], op.tanh(x))
    y = pyir.var("y", shape=(3,))
    main = pyir.Function([y], pyir.Call(pyir.GlobalVar("helper"), [y]))
    mod = pyir.Module({"main": main, "helper": helper})
    assert mod.type_of(main.body) is pyir.TensorType((3,))
    with pytest.raises(pyir.TypeCheckError, match="module"):
        pyir.infer_type(main.body)
    z = pyir.var("z", shape=(3,))
    rec = pyir.Function([z], pyir.Call(pyir.GlobalVar("rec"), [z]))
    with pytest.raises(pyir.TypeCheckError, match="recursive"):
        pyir.Module({"main": rec, "rec": rec}).type_of(rec)
    rec_annotated = pyir.Function([z], pyir.Call(pyir.GlobalVar("rec"), [z]), pyir.TensorType((3,)))
    m2 = pyir.Module({"main": rec_annotated, "rec": rec_annotated})
    assert m2.type_of(rec_annotated.body) is pyir.TensorType((3,))


def test_conv2d_channel_mismatch_names_op_node_and_shapes():
    """A shape error is a TypeCheckError (and TypeError) naming the op, the node and the shapes."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(8, 4, 3, 3))
    bad = op.nn.relu(op.nn.conv2d(x, w))
    with pytest.raises(TypeError) as info:
        bad.checked_type
    assert isinstance(info.value, pyir.TypeCheckError) and isinstance(info.value, pyir.PyIRError)
    msg = str(info.value)
    assert "nn.conv2d" in msg and "(1, 3, 8, 8)" in msg and "(8, 4, 3, 3)" in msg and "<Call" in msg


@pytest.mark.parametrize("build,needle", [
    (lambda x: op.add(x, pyir.var("y", shape=(3,))), "do not broadcast"),
    (lambda x: op.add(x, pyir.const(1)), "dtypes differ"),
    (lambda x: op.reshape(x, newshape=(7,)), "cannot reshape"),
    (lambda x: pyir.TupleGetItem(x, 0), "non-tuple"),
    (lambda x: pyir.If(x, x, x), "bool scalar"),
    (lambda x: pyir.Call(pyir.Function([pyir.var("p", shape=(5,))], x), [x]), "argument 0"),
])
def test_type_errors_are_clear(build, needle):
    """Each kind of ill-typed program raises TypeCheckError with a specific message."""
    x = pyir.var("x", shape=(2, 2))
    with pytest.raises(pyir.TypeCheckError, match=needle):
        pyir.infer_type(build(x))


def test_unannotated_parameter_is_reported():
    """A function parameter without annotation gives a clear error."""
    x = pyir.var("x")
    with pytest.raises(pyir.TypeCheckError, match="parameter %x"):
        pyir.Function([x], x).checked_type


def test_deep_chain_type_checks_without_recursion(deep_chain, deep_anf):
    """A 10^6-deep chain and its 10^6-deep let chain type-check (iteratively)."""
    assert deep_chain["main"].body.checked_type is pyir.TensorType((4,))
    assert deep_anf.type_of(deep_anf["main"].body) is pyir.TensorType((4,))


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs_are_well_typed(mod):
    """Every program the strategy draws type-checks to the parameter type."""
    f = mod["main"]
    assert mod.type_of(f.body) is f.params[0].type_annotation


def test_a_variable_bound_twice_is_rejected():
    """Two binders of one Var would give shared nodes two types: a WellFormedError instead."""
    v = pyir.Var("v")
    a = pyir.const(np.ones(2, "float32"))
    b = pyir.const(np.ones(3, "int32"))
    e = pyir.Tuple([pyir.Let(v, a, op.add(v, v)), pyir.Let(v, b, op.add(v, v))])
    with pytest.raises(pyir.WellFormedError, match="bound twice"):
        pyir.infer_type(e)
    with pytest.raises(pyir.WellFormedError, match="bound twice"):
        pyir.evaluate(e)


def test_module_cache_never_gives_a_let_variable_two_values():
    """issue 10 item 8: types cached in a module below an unannotated let variable are never
    read for another let of that variable: such an expression is a WellFormedError, and
    without the module it gets its own, correct type."""
    v = pyir.var("v")
    a = pyir.var("a", shape=(2,))
    b = pyir.var("b", shape=(3, 3))
    mod = pyir.Module({"main": pyir.Function([a], pyir.Let(v, op.exp(a), op.nn.relu(v)))})
    assert mod.global_type("main").ret_type is pyir.TensorType((2,))
    other = pyir.Let(v, op.exp(b), op.nn.relu(v))
    with pytest.raises(pyir.WellFormedError, match="bound twice"):
        mod.type_of(other)
    assert pyir.infer_type(other) is pyir.TensorType((3, 3))
    assert mod.type_of(mod["main"].body) is pyir.TensorType((2,))  # the module's own let: fine


def test_two_functions_with_their_own_let_variables_type_independently():
    """issue 10 item 8: lets of the same shape of code in two functions (distinct vars) type apart."""
    v, w = pyir.var("v"), pyir.var("w")
    a = pyir.var("a", shape=(2,))
    b = pyir.var("b", shape=(3, 3))
    mod = pyir.Module({"main": pyir.Function([a], pyir.Let(v, op.exp(a), op.nn.relu(v))),
                       "g": pyir.Function([b], pyir.Let(w, op.exp(b), op.nn.relu(w)))})
    assert mod.global_type("main").ret_type is pyir.TensorType((2,))
    assert mod.global_type("g").ret_type is pyir.TensorType((3, 3))


# -- the typing context of passes (issue 11 item 3) -----------------------------------------------


def _let_module():
    x, v = pyir.var("x", shape=(2, 3)), pyir.var("v")
    return pyir.Module({"main": pyir.Function([x], pyir.Let(v, op.exp(x), op.nn.relu(v)))}), x, v


def test_type_context_types_new_nodes_over_the_modules_let_variables():
    """A new node over an unannotated let variable of the module gets the type of the value its
    let binds; a variable no let of the module binds cannot be typed (get: None, type_of: raises)."""
    mod, x, v = _let_module()
    ctx = TypeContext.of(mod)
    new = op.transpose(op.negative(v))
    assert ctx.type_of(new) is pyir.TensorType((3, 2))
    assert ctx(new) is ctx.get(new) is pyir.TensorType((3, 2))
    assert cached_type(new) is None  # context-dependent: not cached on the node
    assert ctx.var_type(v) is pyir.TensorType((2, 3)) and ctx.var_type(x) is x.type_annotation
    w = pyir.var("w")
    assert ctx.get(op.negative(w)) is None
    with pytest.raises(pyir.TypeCheckError, match="%w"):
        ctx.type_of(op.negative(w))


def test_type_context_is_shared_per_module_and_caches():
    """Two contexts of one module share what they learnt (cached with the module's derived facts);
    structural types are cached on the nodes; another module has its own facts."""
    mod, x, v = _let_module()
    new = op.negative(v)
    assert TypeContext.of(mod).known(new) is None
    TypeContext.of(mod).type_of(new)
    assert TypeContext.of(mod).known(new) is pyir.TensorType((2, 3))
    s = op.sigmoid(op.tanh(x))
    assert TypeContext.of(mod).type_of(s) is pyir.TensorType((2, 3)) and cached_type(s) is not None
    other, _, _ = _let_module()
    assert TypeContext.of(other).known(new) is None


def test_type_context_global_calls_and_check():
    """Global calls are typed through the module; check() type-checks a function and names the
    offending node; without a module a global call cannot be typed."""
    x = pyir.var("x", shape=(3,))
    y = pyir.var("y", shape=(3,))
    mod = pyir.Module({"main": pyir.Function([y], pyir.Call(pyir.GlobalVar("helper"), [y])),
                       "helper": pyir.Function([x], op.tanh(x))})
    ctx = TypeContext.of(mod)
    call = op.exp(mod["main"].body)
    assert ctx.type_of(call) is pyir.TensorType((3,))
    assert ctx.check(mod["main"]) is pyir.FuncType([y.type_annotation], pyir.TensorType((3,)))
    assert TypeContext.of(None).get(call) is None
    z = pyir.var("z", shape=(2,))
    w = pyir.var("w", shape=(4,))
    badmod = pyir.Module({"main": pyir.Function([z, w], op.add(z, w))})
    with pytest.raises(pyir.TypeCheckError, match="add"):
        TypeContext.of(badmod).check(badmod["main"])


def test_type_context_learns_functions_outside_the_module():
    """learn(func) teaches the let variables of a function outside the module (or of a context
    without one); a function that does not type-check teaches nothing."""
    x, v = pyir.var("x", shape=(4,)), pyir.var("v")
    f = pyir.Function([x], pyir.Let(v, op.exp(x), v))
    ctx = TypeContext.of(None)
    assert ctx.get(op.negative(v)) is None
    ctx.learn(f)
    assert ctx.get(op.negative(v)) is pyir.TensorType((4,))
    y, u = pyir.var("y", shape=(4,)), pyir.var("u")
    g = pyir.Function([y], pyir.Let(u, op.add(y, pyir.var("k", shape=(5,))), u))
    ctx.learn(g)
    assert ctx.get(u) is None


def test_type_context_long_unannotated_let_chain():
    """A 3x10^4-deep chain of unannotated lets, each value using the previous variable: the context
    learns every variable's type in one iterative walk."""
    x = pyir.var("x", shape=(4,))
    vs = [pyir.var(f"t{i}") for i in range(3 * 10**4)]
    body: pyir.Expr = op.negative(vs[-1])
    for i in range(len(vs) - 1, -1, -1):
        body = pyir.Let(vs[i], op.exp(vs[i - 1] if i else x), body)
    mod = pyir.Module({"main": pyir.Function([x], body)})
    ctx = TypeContext.of(mod)
    assert ctx.type_of(op.tanh(vs[-1])) is pyir.TensorType((4,))
    assert ctx.var_type(vs[len(vs) // 2]) is pyir.TensorType((4,))
