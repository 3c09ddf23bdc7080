"""Tests of the SimplifyInference pass."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.interp import evaluate
from pyir.ir.traverse import iter_calls, post_order
from pyir.transform.fold_constant import FoldConstant
from pyir.transform.simplify_inference import SimplifyInference


def _snapshot(mod: pyir.Module) -> tuple[list[bytes], str]:
    return [n.id for n in post_order(list(mod.functions().values()))], mod.astext()


def _assert_close(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_close(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _check_pass(mod: pyir.Module) -> pyir.Module:
    """Run SimplifyInference and check: input unchanged, same values, idempotent, nothing left."""
    before = _snapshot(mod)
    new = SimplifyInference()(mod)
    assert _snapshot(mod) == before
    inputs = pyir.testing.random_inputs(mod)
    _assert_close(evaluate(new, *inputs), evaluate(mod, *inputs))
    assert SimplifyInference()(new) is new
    for name in ("nn.batch_norm", "nn.dropout"):
        for f in new.functions().values():
            assert not list(iter_calls(f, name)), f"{name} left"
    return new


def _vec(c: int, lo: float, hi: float, seed: int, dtype: str = "float32") -> pyir.Constant:
    return pyir.const(np.random.default_rng(seed).uniform(lo, hi, c).astype(dtype))


def _bn(x: pyir.Expr, c: int, dtype: str = "float32", **attrs) -> pyir.Call:
    return op.nn.batch_norm(x, _vec(c, 0.5, 2, 1, dtype), _vec(c, -1, 1, 2, dtype), _vec(c, -1, 1, 3, dtype),
                            _vec(c, 0.5, 1.5, 4, dtype), **attrs)


def test_resnet():
    """On resnet(3): values kept, input unchanged, idempotent, no batch_norm left."""
    _check_pass(pyir.testing.resnet(3))


def test_resnet_then_fold_leaves_one_multiply_add_per_batch_norm():
    """SimplifyInference + FoldConstant leaves exactly multiply(x, c) then add(., c) per batch_norm."""
    mod = pyir.testing.resnet(3)
    n_bn = len(list(iter_calls(mod["main"], "nn.batch_norm")))
    new = FoldConstant()(SimplifyInference()(mod))
    inputs = pyir.testing.random_inputs(mod)
    _assert_close(evaluate(new, *inputs), evaluate(mod, *inputs))
    body = new["main"]
    muls = list(iter_calls(body, "multiply"))
    assert len(muls) == n_bn
    assert all(type(m.args[1]) is pyir.Constant and type(m.args[0]) is not pyir.Constant for m in muls)
    affine_adds = [a for a in iter_calls(body, "add") if a.args[0] in muls]
    assert len(affine_adds) == n_bn
    assert all(type(a.args[1]) is pyir.Constant for a in affine_adds)
    for name in ("sqrt", "divide", "subtract", "expand_dims", "negative"):
        assert not list(iter_calls(body, name))
    items = [n for n in post_order(mod["main"]) if type(n) is pyir.TupleGetItem]
    assert len(items) == n_bn
    assert all(set(new.find(item)) & set(affine_adds) for item in items)


def test_transformer_block():
    """The transformer block (layer norms kept) is preserved in value."""
    mod = pyir.testing.transformer_block()
    new = _check_pass(mod)
    assert list(iter_calls(new["main"], "nn.layer_norm"))


@settings(max_examples=30, deadline=None)
@given(pyir.testing.programs())
def test_random_programs(mod):
    """On random programs (lets, ifs, tuples): the pass's laws hold."""
    _check_pass(mod)


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 5), 1), ((2, 3), -1), ((3, 4, 5), 0), ((2, 3, 4), 2),
                                        ((4,), 0)])
@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False), (False, False)])
def test_batch_norm_variants(shape, axis, center, scale):
    """Any axis, rank and center/scale flags give the batch_norm reference values."""
    x = pyir.var("x", shape=shape)
    c = shape[axis]
    bn = _bn(x, c, axis=axis, center=center, scale=scale, epsilon=1e-3)
    _check_pass(pyir.Module.from_expr(pyir.TupleGetItem(bn, 0)))


def test_float64():
    """A float64 batch_norm is lowered with float64 constants (types stay well-formed)."""
    x = pyir.var("x", shape=(2, 3, 4), dtype="float64")
    mod = pyir.Module.from_expr(pyir.TupleGetItem(_bn(x, 3, "float64"), 0))
    new = _check_pass(mod)
    assert new.type_of(new["main"].body) is pyir.TensorType((2, 3, 4), "float64")


def test_mean_and_var_outputs_become_the_inputs():
    """bn.1 and bn.2 become the moving mean and variance inputs; a whole-tuple use gets a tuple."""
    x = pyir.var("x", shape=(1, 3, 2, 2))
    bn = _bn(x, 3)
    mean, var = bn.args[3], bn.args[4]
    mod = pyir.Module.from_expr(pyir.Tuple([pyir.TupleGetItem(bn, 1), pyir.TupleGetItem(bn, 2), bn]))
    new = _check_pass(mod)
    body = new["main"].body
    assert body.fields[0] is mean and body.fields[1] is var
    assert type(body.fields[2]) is pyir.Tuple and body.fields[2].fields[1:] == (mean, var)


def test_batch_norm_bound_by_let():
    """A batch_norm tuple bound to a let variable is lowered too."""
    x = pyir.var("x", shape=(1, 3, 2, 2))
    t = pyir.Var("t")
    y = pyir.Var("y")
    body = pyir.Let(t, _bn(op.nn.dropout(x), 3),
                    pyir.Let(y, pyir.TupleGetItem(t, 0), pyir.Tuple([y, pyir.TupleGetItem(t, 2)])))
    _check_pass(pyir.Module({"main": pyir.Function([x], body)}))


def test_lineage_of_lowered_batch_norm():
    """find() maps the replaced bn.0 item to the new affine expression."""
    x = pyir.var("x", shape=(1, 3, 2, 2))
    item = pyir.TupleGetItem(_bn(x, 3), 0)
    mod = pyir.Module.from_expr(op.nn.relu(item))
    new = SimplifyInference()(mod)
    affine = new["main"].body.args[0]
    assert affine in new.find(item)
    assert new.find(x) == [x]


def test_dropout_is_removed():
    """dropout(x) becomes x itself."""
    x = pyir.var("x", shape=(2, 2))
    mod = pyir.Module.from_expr(op.nn.relu(op.nn.dropout(op.nn.dropout(x, rate=0.2))))
    new = _check_pass(mod)
    assert new["main"].body is op.nn.relu(x)


def test_module_without_targets_is_returned_unchanged():
    """A module with neither batch_norm nor dropout comes back as the same object."""
    mod = pyir.testing.resnet(1, batch_norm=False)
    assert SimplifyInference()(mod) is mod


def test_deep_chain_survives(deep_chain, deep_anf):
    """A 10**6-deep elementwise chain (and let chain) passes through without RecursionError."""
    assert SimplifyInference()(deep_anf) is deep_anf
    mod = deep_chain
    assert SimplifyInference()(mod) is mod


def test_deep_rewrite_without_recursion():
    """A 100,000-deep chain over a dropout is rewritten all the way up without RecursionError."""
    x = pyir.var("x", shape=(4,))
    one = pyir.const(np.ones(4, "float32"))
    h, want = op.nn.dropout(x), x
    for i in range(100_000):
        h, want = (op.add(h, one), op.add(want, one)) if i % 2 else (op.nn.relu(h), op.nn.relu(want))
    new = SimplifyInference()(pyir.Module.from_expr(h))
    assert new["main"].body is want
