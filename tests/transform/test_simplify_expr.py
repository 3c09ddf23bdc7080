"""Tests of the SimplifyExpr pass."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.interp import evaluate
from pyir.ir.traverse import iter_calls
from pyir.testing import check_pass
from pyir.transform.simplify_expr import SimplifyExpr


def _check_pass(mod: pyir.Module) -> pyir.Module:
    """Run SimplifyExpr and check the invariant bundle (input unchanged, same values, lineage, idempotent)."""
    return check_pass(SimplifyExpr(), mod, rtol=1e-5, atol=1e-6)


def _ones_multiplies(mod: pyir.Module) -> list[pyir.Call]:
    return [c for c in iter_calls(mod["main"], "multiply")
            if any(type(a) is pyir.Constant and np.all(a.data == 1) for a in c.args)]


def test_models():
    """resnet(3) and transformer_block keep their meaning and the pass is idempotent."""
    for mod in (pyir.testing.resnet(3), pyir.testing.transformer_block()):
        _check_pass(mod)


@settings(max_examples=40, deadline=None)
@given(pyir.testing.programs())
def test_random_programs(mod):
    """Random programs keep their meaning; the planted x*1 identities are all removed."""
    new = _check_pass(mod)
    assert not _ones_multiplies(new)


def test_identities():
    """x*1, 1*x, x/1, x+0, 0+x, x-0 all simplify to x, and lineage maps the call to x."""
    x = pyir.var("x", shape=(2, 3))
    one, zero = pyir.const(1.0), pyir.const(np.zeros((2, 3), "float32"))
    for e in (op.multiply(x, one), op.multiply(one, x), op.divide(x, one), op.add(x, zero),
              op.add(zero, x), op.subtract(x, zero)):
        new = SimplifyExpr()(pyir.Module.from_expr(op.exp(e)))
        assert new["main"].body is op.exp(x)
        assert new.find(e) == [x]


def test_broadcasting_identity_kept():
    """x * ones is kept when the ones broadcast x to a larger shape (or another dtype)."""
    x = pyir.var("x", shape=(3,))
    e = op.multiply(x, pyir.const(np.ones((2, 3), "float32")))
    mod = pyir.Module.from_expr(e)
    assert SimplifyExpr()(mod) is mod
    y = pyir.var("y", shape=(3,))
    f = op.add(y, pyir.const(np.array([0.0, 1.0, 0.0], "float32")))
    mod2 = pyir.Module.from_expr(f)
    assert SimplifyExpr()(mod2) is mod2


def test_layout_rules():
    """reshape/transpose/negative/cast/clip compositions fold to one op or to x."""
    x = pyir.var("x", shape=(2, 3, 4))
    cases = [
        (op.reshape(op.reshape(x, newshape=(6, 4)), newshape=(4, 6)), op.reshape(x, newshape=(4, 6))),
        (op.reshape(op.reshape(x, newshape=(6, 4)), newshape=(2, 3, 4)), x),
        (op.transpose(op.transpose(x, axes=(1, 0, 2)), axes=(1, 0, 2)), x),
        (op.transpose(op.transpose(x, axes=(1, 0, 2)), axes=(0, 2, 1)), op.transpose(x, axes=(1, 2, 0))),
        (op.transpose(op.transpose(x)), x),
        (op.negative(op.negative(x)), x),
        (op.cast(x, dtype="float32"), x),
        (op.clip(op.clip(x, a_min=-1.0, a_max=2.0), a_min=0.0, a_max=3.0), op.clip(x, a_min=0.0, a_max=2.0)),
        (op.clip(op.clip(x, a_min=-1.0, a_max=0.0), a_min=1.0, a_max=3.0), op.clip(x, a_min=1.0, a_max=1.0)),
    ]
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 3, 4)).astype("float32") * 3
    for before, after in cases:
        mod = pyir.Module.from_expr(op.exp(before))
        new = SimplifyExpr()(mod)
        assert new["main"].body is op.exp(after), before
        np.testing.assert_allclose(evaluate(new, data), evaluate(mod, data), rtol=1e-6)


def test_let_bound_values():
    """Identities on let-bound (unannotated) variables are simplified using inferred types."""
    x = pyir.var("x", shape=(2,))
    t = pyir.var("t")
    f = pyir.Function([x], pyir.Let(t, op.exp(x), op.multiply(t, pyir.const(1.0))))
    new = SimplifyExpr()(pyir.Module({"main": f}))
    assert new["main"].body is pyir.Let(t, op.exp(x), t)


def test_let_variable_bound_to_a_variable():
    """A let variable whose value is another let variable is typed by the module's typing context
    (the value's type), so ``u * 1`` simplifies there too."""
    x = pyir.var("x", shape=(2,))
    t, u = pyir.var("t"), pyir.var("u")
    body = pyir.Let(t, op.exp(x), pyir.Let(u, t, op.add(op.multiply(u, pyir.const(1.0)), t)))
    mod = pyir.Module({"main": pyir.Function([x], body)})
    new = SimplifyExpr()(mod)
    assert new["main"].body is pyir.Let(t, op.exp(x), pyir.Let(u, t, op.add(u, t)))
    mul = body.body.body.args[0]
    assert new.find(mul) == [u]


def test_deep_chain(deep_chain):
    """A 10**6-deep elementwise chain goes through without recursion; x*1 steps disappear."""
    mod = deep_chain
    new = SimplifyExpr()(mod)
    assert not _ones_multiplies(new)


def test_identity_constants_are_compared_once_and_not_kept_alive():
    """Whether a constant is all ones (zeros) is remembered per constant node, for the chain
    that asks at every call, without keeping the constant alive; the answers are per value."""
    import gc
    import weakref

    from pyir.transform.simplify_expr import _ALL_EQUAL

    x = pyir.var("x", shape=(3,))
    ones = pyir.const(np.ones(3, "float32"))
    mixed = pyir.const(np.array([1, 2, 1], "float32"))
    h: pyir.Expr = x
    for _ in range(3):
        h = op.nn.relu(op.add(op.multiply(op.multiply(h, ones), mixed), ones))
    new = SimplifyExpr()(pyir.Module.from_expr(h))
    assert not _ones_multiplies(new)
    assert len(list(iter_calls(new["main"], "multiply"))) == 3  # the x * [1, 2, 1] stay
    assert _ALL_EQUAL[ones] == {0: False, 1: True} and _ALL_EQUAL[mixed][1] is False
    gone = weakref.ref(mixed)
    del mixed, h, new
    gc.collect()
    assert gone() is None
