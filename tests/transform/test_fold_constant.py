"""Tests of the FoldConstant pass."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.ir.node import F_CONST, F_TUPLE
from pyir.ir.traverse import iter_calls, post_order
from pyir.testing import check_pass
from pyir.transform.fold_constant import FoldConstant
from pyir.transform.simplify_inference import SimplifyInference


def _check_pass(mod: pyir.Module) -> pyir.Module:
    """Run FoldConstant and check the invariant bundle (input unchanged, same values, lineage, idempotent)."""
    return check_pass(FoldConstant(), mod)


def _closed_calls(mod: pyir.Module) -> list[pyir.Call]:
    """Op calls whose inputs are all constants (left unfolded)."""
    return [c for c in iter_calls(mod["main"]) if all(type(a) is pyir.Constant for a in c.args)]


def test_hand_made_folds_to_the_interned_constant():
    """add(1, multiply(2, 3)) folds to const(7.0) itself, and find() maps the old nodes to it."""
    mul = op.multiply(pyir.const(2.0), pyir.const(3.0))
    expr = op.add(pyir.const(1.0), mul)
    mod = pyir.Module.from_expr(expr)
    new = FoldConstant()(mod)
    seven = pyir.const(7.0)
    assert new["main"].body is seven
    assert new.find(mul) == [seven]
    assert new.find(expr) == [seven]
    assert pyir.const(2.0).id in new.origins(seven)


def test_partial_fold_keeps_variables():
    """Only the closed part of an expression is folded; the variable part stays."""
    x = pyir.var("x", shape=(2, 3))
    mod = pyir.Module.from_expr(op.add(x, op.multiply(pyir.const(2.0), pyir.const(3.0))))
    new = _check_pass(mod)
    assert new["main"].body is op.add(x, pyir.const(6.0))


def test_tuple_valued_subgraph_becomes_tuple_of_constants():
    """A closed split folds to a Tuple of constants; a getitem of it folds to the field."""
    x = pyir.var("x", shape=(3,))
    parts = op.split(op.multiply(pyir.const(np.arange(6, dtype="float32")), pyir.const(2.0)),
                     indices_or_sections=2)
    mod = pyir.Module.from_expr(pyir.Tuple([op.add(x, pyir.TupleGetItem(parts, 1)), parts]))
    new = _check_pass(mod)
    body = new["main"].body
    assert body.fields[0] is op.add(x, pyir.const(np.array([6.0, 8.0, 10.0], "float32")))
    folded = body.fields[1]
    assert type(folded) is pyir.Tuple
    assert all(type(f) is pyir.Constant for f in folded.fields)


def test_already_constant_module_is_returned_unchanged():
    """A module without foldable calls comes back as the very same object."""
    mod = pyir.testing.resnet(1)
    assert FoldConstant()(mod) is mod


def test_max_elements_skips_large_results_but_folds_inputs():
    """With max_elements, a too-large result is not materialized, but its small inputs are folded."""
    x = pyir.var("x", shape=(64,))
    small = op.add(pyir.const(1.0), pyir.const(2.0))
    big = op.multiply(pyir.const(np.ones(64, "float32")), small)
    mod = pyir.Module.from_expr(op.add(x, big))
    new = FoldConstant(max_elements=16)(mod)
    assert new["main"].body is op.add(x, op.multiply(pyir.const(np.ones(64, "float32")), pyir.const(3.0)))
    assert FoldConstant(max_elements=16)(new) is new
    full = FoldConstant()(mod)
    assert full["main"].body is op.add(x, pyir.const(np.full(64, 3.0, "float32")))


def test_folds_inside_if_branches_and_nested_functions():
    """Closed subgraphs under an If or inside a nested function are folded too."""
    x = pyir.var("x", shape=(2,))
    y = pyir.var("y", shape=(2,))
    inner = pyir.Function([y], op.add(y, op.exp(pyir.const(0.0))))
    cond = op.greater(op.sum(x), pyir.const(0.0))
    body = pyir.If(cond, pyir.Call(inner, [x]), op.multiply(x, op.add(pyir.const(1.0), pyir.const(1.0))))
    mod = pyir.Module.from_expr(pyir.Function([x], body))
    new = _check_pass(mod)
    assert not _closed_calls(new)
    assert op.add(y, pyir.const(1.0)) in set(post_order(new["main"]))


def test_resnet_after_simplify_inference():
    """On resnet, after SimplifyInference, folding leaves no call with only constant inputs."""
    mod = SimplifyInference()(pyir.testing.resnet(3))
    new = _check_pass(mod)
    assert not _closed_calls(new)


def test_transformer_block():
    """The transformer block is preserved in value and the pass is idempotent."""
    mod = pyir.testing.transformer_block()
    new = _check_pass(mod)
    assert not _closed_calls(new)


@settings(max_examples=30, deadline=None)
@given(pyir.testing.programs())
def test_random_programs(mod):
    """On random programs: input unchanged, same values, idempotent, nothing closed left."""
    new = _check_pass(mod)
    for n in post_order(new["main"]):
        if isinstance(n, (pyir.Call, pyir.TupleGetItem, pyir.Tuple)) and not (
                n._mask & (pyir.ir.node.F_VAR | pyir.ir.node.F_GLOBAL | pyir.ir.node.F_FUNC)):
            assert not (n._mask & ~(F_CONST | F_TUPLE)), f"unfolded closed node {n!r}"


def test_deep_chain_survives(deep_chain, deep_anf):
    """A 10**6-deep elementwise chain (and let chain) passes through without RecursionError."""
    assert FoldConstant()(deep_anf) is deep_anf
    mod = deep_chain
    assert FoldConstant()(mod) is mod


@pytest.mark.parametrize("n", [100_000])
def test_deep_closed_chain_folds(n):
    """A deep chain of constant-only calls folds to one constant without recursion."""
    one = pyir.const(np.ones(2, "float32"))
    h: pyir.Expr = pyir.const(np.zeros(2, "float32"))
    for _ in range(n):
        h = op.add(h, one)
    x = pyir.var("x", shape=(2,))
    mod = pyir.Module.from_expr(op.multiply(x, h))
    new = FoldConstant()(mod)
    assert new["main"].body is op.multiply(x, pyir.const(np.full(2, float(n), "float32")))


def _failing_op():
    from pyir.errors import UnknownOpError
    from pyir.op.registry import OpPattern, get_op_def, register_op

    try:
        get_op_def("test.fold_constant_fails")
    except UnknownOpError:
        def compute(attrs, x):
            raise ValueError("boom")

        register_op("test.fold_constant_fails", num_inputs=1, type_rel=lambda types, attrs: types[0],
                    compute=compute, pattern=OpPattern.OPAQUE)
    return lambda x: pyir.Call("test.fold_constant_fails", [x])


def test_failing_evaluation_is_left_unfolded():
    """A closed subgraph whose evaluation raises stays as it is; the others are still folded."""
    fails = _failing_op()
    x = pyir.var("x", shape=(2,))
    bad = fails(op.negative(pyir.const(np.ones(2, "float32"))))
    good = op.add(pyir.const(1.0), pyir.const(2.0))
    mod = pyir.Module.from_expr(pyir.Tuple([op.add(x, bad), op.add(x, good)]))
    new = FoldConstant()(mod)
    bad_folded = fails(pyir.const(-np.ones(2, "float32")))
    assert new["main"].body is pyir.Tuple([op.add(x, bad_folded), op.add(x, pyir.const(3.0))])
    assert FoldConstant()(new) is new
