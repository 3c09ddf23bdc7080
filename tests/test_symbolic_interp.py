"""The interpreter on symbolic shapes (issue 12, item 4), random symbolic programs against
their static specializations, and a 10^4-deep chain with a symbolic batch dimension."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyir
from pyir import Any, op, sym
from pyir.errors import EvaluationError, IllTypedProgramError
from pyir.ir.dims import free_syms, substitute
from pyir.rewrite.functor import substitute as substitute_vars
from pyir.testing import SYMBOLIC_BATCH, programs, random_inputs

b = sym("batch")


def ones(*shape, dtype="float32"):
    return np.ones(shape, dtype)


def _concat_mod():
    x, y = pyir.var("x", shape=(b, 3)), pyir.var("y", shape=(b, 8))
    return pyir.Module.from_expr(pyir.Function([x, y], op.concatenate([x, y], axis=1)))


def test_runs_with_the_shapes_of_its_inputs():
    mod = _concat_mod()
    for k in (1, 2, 5):
        out = pyir.evaluate(mod, ones(k, 3), np.full((k, 8), 2, "float32"))
        assert out.shape == (k, 11) and out[0, 0] == 1 and out[0, -1] == 2
    assert pyir.evaluate(mod, ones(0, 3), ones(0, 8)).shape == (0, 11)


def test_a_symbol_bound_to_two_values_names_input_dimension_and_values():
    with pytest.raises(EvaluationError) as info:
        pyir.evaluate(_concat_mod(), ones(2, 3), ones(3, 8))
    msg = str(info.value)
    assert "symbol batch is 2 (input 0 (%x), dimension 0) and 3 (input 1 (%y), dimension 0)" in msg, msg


def test_int_dimension_rank_and_dtype_mismatches():
    mod = _concat_mod()
    with pytest.raises(EvaluationError, match=r"input 0 \(%x\), dimension 1 is 4, expected 3"):
        pyir.evaluate(mod, ones(2, 4), ones(2, 8))
    with pytest.raises(EvaluationError, match=r"input 1 \(%y\)"):
        pyir.evaluate(mod, ones(2, 3), ones(2, 8, 1))
    with pytest.raises(EvaluationError, match="float32"):
        pyir.evaluate(mod, ones(2, 3, dtype="int32"), ones(2, 8))


def test_unknown_dimensions_accept_anything():
    x, y = pyir.var("x", shape=(Any, 3)), pyir.var("y", shape=(Any, 3))
    f = pyir.Function([x, y], op.concatenate([x, y], axis=0))
    assert pyir.evaluate(f, ones(2, 3), ones(5, 3)).shape == (7, 3)
    with pytest.raises(EvaluationError, match="dimension 1 is 2, expected 3"):
        pyir.evaluate(f, ones(2, 2), ones(5, 3))


def test_expression_dimensions_are_solved_and_checked():
    x = pyir.var("x", shape=(b * 2 + 1, 3))
    y = pyir.var("y", shape=(b, 3))
    f = pyir.Function([x, y], op.concatenate([x, y], axis=0))
    assert pyir.evaluate(f, ones(5, 3), ones(2, 3)).shape == (7, 3)
    with pytest.raises(EvaluationError,
                       match=r"input 0 \(%x\), dimension 0 is 5, expected batch \* 2 \+ 1 = 7"):
        pyir.evaluate(f, ones(5, 3), ones(3, 3))
    z = pyir.var("z", shape=(b * 2 + 1,))
    with pytest.raises(EvaluationError, match="cannot be for any value of batch"):
        pyir.evaluate(pyir.Function([z], op.nn.relu(z)), ones(4))


def test_tuple_inputs_bind_too():
    t = pyir.var("t", type_annotation=pyir.TupleType([pyir.TensorType((b, 2)), pyir.TensorType((b,))]))
    f = pyir.Function([t], pyir.TupleGetItem(t, 1))
    assert pyir.evaluate(f, (ones(3, 2), ones(3))).shape == (3,)
    with pytest.raises(EvaluationError, match=r"input 0 \(%t\), field 1, dimension 0"):
        pyir.evaluate(f, (ones(3, 2), ones(4)))


def test_results_are_checked_against_the_substituted_type():
    x = pyir.var("x", shape=(b, 4))
    assert pyir.evaluate(pyir.Function([x], op.reshape(x, newshape=(-1,))), ones(3, 4)).shape == (12,)
    # evaluate type-checks first (symbols are fine): a declared return type the body does not
    # have is the type checker's error, before the inputs are bound (ones(3, 5) would not bind)
    lying = pyir.Function([x], x, ret_type=pyir.TensorType((b * 2, 4)))
    for arg in (ones(3, 4), ones(3, 5)):
        with pytest.raises(IllTypedProgramError,
                           match=r"declared return type Tensor\[\(batch \* 2, 4\), float32\] but the body "
                                 r"has type Tensor\[\(batch, 4\), float32\]"):
            pyir.evaluate(lying, arg)
    unknown = pyir.Function([x], x, ret_type=pyir.TensorType((Any, 4)))
    assert pyir.evaluate(unknown, ones(3, 4)).shape == (3, 4)
    tup = pyir.Function([x], pyir.Tuple([x, x]), ret_type=pyir.TupleType([pyir.TensorType((b, 4)),
                                                                           pyir.TensorType((b, 5))]))
    with pytest.raises(IllTypedProgramError, match="declared return type"):
        pyir.evaluate(tup, ones(3, 4))
    s = pyir.var("s", shape=(3, 4))
    with pytest.raises(IllTypedProgramError, match=r"declared return type Tensor\[\(4, 4\), float32\]"):
        pyir.evaluate(pyir.Function([s], s, ret_type=pyir.TensorType((4, 4))), ones(3, 4))
    # what only the run can check: an input the type checker cannot describe (a list for an
    # unannotated parameter) is checked on the result, against the declared type
    u = pyir.var("u")
    with pytest.raises(EvaluationError, match="the result, dimension 0 is 3, expected 4") as e:
        pyir.evaluate(pyir.Function([u], u, ret_type=pyir.TensorType((4, 4), "float64")), ones(3, 4).tolist())
    assert not isinstance(e.value, IllTypedProgramError)
    # an If with a ? branch: ? accepts what either branch gives, the run checks the rest
    w = pyir.var("w", shape=(Any, 4))
    f = pyir.Function([x, w], pyir.If(op.greater(op.sum(x), op.sum(w)), x, w))
    assert f.checked_type.ret_type.shape == (Any, 4)
    assert pyir.evaluate(f, ones(2, 4), ones(7, 4)).shape == (7, 4)
    assert pyir.evaluate(f, ones(9, 4), ones(7, 4)).shape == (9, 4)


def test_calls_of_symbolic_functions_evaluate():
    x = pyir.var("x", shape=(b, 3))
    f = pyir.Function([x], op.reshape(x, newshape=(-1,)))
    p, q = pyir.var("p", shape=(2, 3)), pyir.var("q", shape=("m", 3))
    g = pyir.GlobalVar("f")
    main = pyir.Function([p, q], pyir.Tuple([pyir.Call(g, [p]), pyir.Call(g, [q])]))
    mod = pyir.Module({"f": f, "main": main})
    a, c = pyir.evaluate(mod, ones(2, 3), ones(4, 3))
    assert a.shape == (6,) and c.shape == (12,)
    with pytest.raises(EvaluationError, match=r"input 1 \(%q\), dimension 1 is 2, expected 3"):
        pyir.evaluate(mod, ones(2, 3), ones(4, 2))


def test_calls_of_symbolic_functions_bind_per_call_at_run_time():
    x, y = pyir.var("x", shape=(b, 3)), pyir.var("y", shape=(b, 8))
    f = pyir.Function([x, y], op.concatenate([x, y], axis=1))
    p, q = pyir.var("p", shape=(Any, 3)), pyir.var("q", shape=(Any, 8))
    main = pyir.Function([p, q], pyir.Call(pyir.GlobalVar("f"), [p, q]))
    mod = pyir.Module({"f": f, "main": main})
    assert mod.global_type("main").ret_type.shape == (Any, 11)  # ? binds nothing when typing
    assert pyir.evaluate(mod, ones(2, 3), ones(2, 8)).shape == (2, 11)
    with pytest.raises(EvaluationError) as info:
        pyir.evaluate(mod, ones(2, 3), ones(3, 8))
    msg = str(info.value)
    assert "symbol batch is 2 (argument 0 (%x), dimension 0) and 3 (argument 1 (%y), dimension 0)" in msg, msg
    assert "@f" in msg


# -- random symbolic programs against their static specializations ---------------------------------


def specialize(mod: pyir.Module, bindings: dict) -> pyir.Module:
    """``mod`` with its parameter types substituted (the test's stand-in for BindShapes)."""
    f = mod["main"]
    params = []
    for p in f.params:
        t = p.type_annotation
        shape = tuple(substitute(d, bindings) for d in t.shape)
        params.append(pyir.var(p.name_hint, shape=shape, dtype=t.dtype))
    body = substitute_vars(f.body, dict(zip(f.params, params)))
    return pyir.Module({"main": pyir.Function(params, body)})


def _check_type(sym_t, static_t, bindings):
    """The static program's type is the symbolic one substituted (or finer where it is ?)."""
    stack = [(sym_t, static_t)]
    while stack:
        a, s = stack.pop()
        if isinstance(a, pyir.TupleType):
            stack.extend(zip(a.fields, s.fields))
            continue
        assert a.dtype == s.dtype and a.ndim == s.ndim
        for d, k in zip(a.shape, s.shape):
            v = substitute(d, bindings)
            assert v is Any or v == k, (a, s, bindings)


@settings(max_examples=60, deadline=None)
@given(programs(symbolic=True), st.integers(1, 3), st.integers(0, 3))
def test_random_symbolic_programs_equal_their_static_specialization(mod, batch, seed):
    f = mod["main"]
    assert all(p.type_annotation.shape[0] is b for p in f.params)
    sym_type = mod.global_type("main").ret_type
    bindings = {SYMBOLIC_BATCH: batch}
    static = specialize(mod, bindings)
    _check_type(sym_type, static.global_type("main").ret_type, bindings)
    ins = random_inputs(mod, seed, shapes=bindings)
    assert all(i.shape[0] == batch for i in ins)
    pyir.testing.assert_same_values(static, mod, inputs=ins)
    # the lead's pass agrees with the test's specialization, then DynamicToStatic + FoldConstant
    from pyir.transform import BindShapes, DynamicToStatic, FoldConstant

    bound = FoldConstant()(DynamicToStatic()(BindShapes(bindings)(mod)))
    assert bound.global_type("main") is static.global_type("main")
    pyir.testing.assert_same_values(mod, bound, inputs=ins)


@settings(max_examples=20, deadline=None)
@given(programs(symbolic=True))
def test_random_symbolic_programs_keep_the_batch_symbol(mod):
    """The batch dimension survives every step exactly (no ? appears)."""
    t = mod.global_type("main").ret_type
    assert t.shape[0] is b and free_syms(t.shape[0]) == {SYMBOLIC_BATCH}
    assert t.shape[1:] == pyir.testing.PROGRAM_SHAPE[1:]


@settings(max_examples=15, deadline=None)
@given(programs(symbolic=True, max_steps=8))
def test_standard_passes_keep_meaning_and_lineage_on_symbolic_programs(mod):
    from pyir import transform as T

    passes = [T.InferType(), T.SimplifyInference(), T.FoldConstant(), T.SimplifyExpr(),
              T.EliminateCommonSubexpr(), T.DeadCodeElimination(), T.FuseOps(), T.ToANormalForm(),
              T.ToBasicBlockNormalForm(), T.ToGraphNormalForm(), T.Inline(), T.DynamicToStatic()]
    framework = {"Pass", "ModulePass", "FunctionPass", "Sequential", "PassContext", "PassInstrument",
                 "TimingInstrument", "PrintIRInstrument", "module_pass", "function_pass",
                 "standard_pipeline", "PassCache"}
    named = {type(p).__name__ for p in passes} | {"DefuseOps", "BindShapes", "PatternRewrite"}
    assert named == set(T.__all__) - framework
    for p in passes:
        out = pyir.testing.check_pass(p, mod, shapes={SYMBOLIC_BATCH: 2})
        assert out.global_type("main").ret_type is mod.global_type("main").ret_type, p.name
    fused = T.FuseOps()(mod)
    pyir.testing.check_pass(T.DefuseOps(), fused, shapes={SYMBOLIC_BATCH: 2})
    bound = pyir.testing.check_pass(T.BindShapes({SYMBOLIC_BATCH: 2}), mod, shapes={SYMBOLIC_BATCH: 2})
    assert all(p.type_annotation.static for p in bound["main"].params)


@settings(max_examples=10, deadline=None)
@given(programs(max_steps=6))
def test_the_default_strategy_stays_static(mod):
    assert all(p.type_annotation is pyir.TensorType(pyir.testing.PROGRAM_SHAPE) for p in mod["main"].params)


def test_random_inputs_need_every_symbol():
    mod = pyir.testing._build_program([(0, 0, 0, 0.5)], 1, [False], symbolic=True)
    with pytest.raises(pyir.WellFormedError, match="shapes="):
        random_inputs(mod)
    assert random_inputs(mod, shapes={"batch": 4})[0].shape == (4, 2, 4, 4)


# -- a long chain with a symbolic batch dimension ---------------------------------------------------


def test_long_symbolic_chain_infers_and_evaluates():
    """A 10^4-deep chain (over three times the recursion limit) with a symbolic batch: InferType
    types every node (batch, 4) and the interpreter runs it with batch 3.  The 10^6-deep runs of
    InferType and the interpreter are the static chain's and its let chain's
    (transform/test_infer_type.py, test_typecheck.py, test_interp.py), and symbolic InferType's is
    test_shape_ops.py's; a symbolic batch changes each node's type (the same dimension node
    throughout), not the walks."""
    depth = 10**4
    x = pyir.var("x", shape=(b, 4))
    one = pyir.const(np.ones((1, 4), "float32"))
    h = x
    with pyir.ir.node.gc_paused():
        for i in range(depth):
            k = i % 4
            h = (op.add(h, one) if k == 0 else op.multiply(h, one) if k == 1 else op.nn.relu(h) if k == 2
                 else op.subtract(h, x))
    mod = pyir.transform.InferType()(pyir.Module.from_expr(pyir.Function([x], h)))
    assert mod["main"].body.checked_type is pyir.TensorType((b, 4))
    out = pyir.evaluate(mod, np.zeros((3, 4), "float32"))
    assert out.shape == (3, 4)
