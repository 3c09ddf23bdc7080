"""TVM's EliminateCommonSubexpr and SimplifyInference cases
(``test_pass_eliminate_common_subexpr.py``, ``test_pass_simplify_inference.py`` at
v0.18.0), one test per case, named after it and rebuilt with pyir's builders.

CSE: in graph form pyir's hash-consing already merges equal subexpressions when they are
built, so TVM's ``before()`` programs ARE their ``expected()`` programs in pyir (the very
same object), and the pass returns the module unchanged.  TVM's ``fskip`` callback (keep
some duplicates) cannot be expressed: two equal calls are one node.
"""

from __future__ import annotations

import numpy as np

import pyir
from pyir import op
from pyir.testing import check_pass
from pyir.transform import EliminateCommonSubexpr, SimplifyInference


def _cse_is_construction(before: pyir.Function, expected: pyir.Function) -> None:
    assert before is expected  # hash-consing merged the duplicates when they were built
    mod = pyir.Module({"main": before})
    assert EliminateCommonSubexpr()(mod) is mod


def _relu_add_twice(x: pyir.Var) -> tuple[pyir.Expr, pyir.Expr]:
    y1 = op.add(op.nn.relu(x), pyir.const(np.float32(1)))
    y2 = op.add(op.nn.relu(x), pyir.const(np.float32(1)))
    return y1, y2


def test_simple():
    """Two relu + 1 chains are one."""
    x = pyir.var("x", shape=(1, 16))
    y1, y2 = _relu_add_twice(x)
    y = op.add(op.nn.relu(x), pyir.const(np.float32(1)))
    _cse_is_construction(pyir.Function([x], op.add(y1, y2)), pyir.Function([x], op.add(y, y)))


def test_callback():
    """TVM keeps the duplicate adds (``fskip``); in pyir they are one node from the start,
    which is what TVM's pass computes without the callback."""
    x = pyir.var("x", shape=(1, 16))
    y1, y2 = _relu_add_twice(x)
    assert y1 is y2
    _cse_is_construction(pyir.Function([x], op.add(y1, y2)), pyir.Function([x], op.add(y1, y1)))


def test_tuple_get_time():
    """Two ``bn.0`` projections are one."""
    x = pyir.var("x", shape=(1, 16, 1, 1))
    v, mean, beta, gamma = (pyir.var(n, shape=(16,)) for n in ("var", "mean", "beta", "gamma"))
    bn = op.nn.batch_norm(x, gamma, beta, mean, v, epsilon=1e-5)
    t1, t2 = pyir.TupleGetItem(bn, 0), pyir.TupleGetItem(bn, 0)
    _cse_is_construction(pyir.Function([x, v, mean, beta, gamma], op.add(t1, t2)),
                         pyir.Function([x, v, mean, beta, gamma], op.add(t1, t1)))


def test_tuple_arg():
    """Two concatenates of equal tuples are one."""
    x = pyir.var("x", shape=(1, 16))
    y1, y2 = _relu_add_twice(x)
    c0 = pyir.const(np.ones((1, 16), "float32"))
    a, b = op.concatenate([y1, c0], axis=0), op.concatenate([y2, c0], axis=0)
    _cse_is_construction(pyir.Function([x], op.add(a, b)), pyir.Function([x], op.add(a, a)))


def test_cse_in_a_normal_form():
    """Where pyir's CSE works (let bindings of one value), it drops the second binding."""
    x = pyir.var("x", shape=(1, 16))
    a, b = pyir.var("a"), pyir.var("b")
    v = op.nn.relu(x)
    f = pyir.Function([x], pyir.Let(a, v, pyir.Let(b, v, op.add(a, b))))
    out = check_pass(EliminateCommonSubexpr(), pyir.Module({"main": f}))
    assert out["main"].body is pyir.Let(a, v, op.add(a, a))


def _tvm_bn(x, gamma, beta, mean, var, axis, eps, ndim):  # type: ignore[no-untyped-def]
    """TVM's expected lowering: ``x * scale + shift`` with ``scale = 1 / sqrt(var + eps) *
    gamma`` and ``shift = -mean * scale + beta``."""
    one = pyir.const(np.float32(1))
    scale = op.multiply(op.divide(one, op.sqrt(op.add(var, pyir.const(np.float32(eps))))), gamma)
    shift = op.add(op.multiply(op.negative(mean), scale), beta)
    k = ndim - (axis + 1)
    if k:
        scale = op.expand_dims(scale, axis=1, num_newaxis=k)
        shift = op.expand_dims(shift, axis=1, num_newaxis=k)
    return op.add(op.multiply(x, scale), shift)


def test_simplify_batchnorm():
    """batch_norm (+ dropout) chains lower to a per-channel multiply-add.

    pyir's lowering is ``scale = gamma / sqrt(var + eps)``, ``shift = beta - mean * scale``
    where TVM writes ``1 / sqrt(var + eps) * gamma`` and ``-mean * scale + beta``: the same
    value with two operators fewer and one rounding fewer in the scale.  The
    test asserts the operator counts and that both compute the same (within float32 rounding).
    """
    eps = 0.01
    for dim, axis, nstep in ((2, 1, 1), (4, 1, 1), (4, 0, 3)):
        x = pyir.var("x", shape=(10,) * dim)
        names = ("beta", "gamma", "moving_var", "moving_mean")
        beta, gamma, mv, mm = (pyir.var(n, shape=(10,)) for n in names)
        y1 = y2 = x
        for _ in range(nstep):
            one = pyir.const(np.float32(1))
            bn = op.nn.batch_norm(op.add(y1, one), gamma, beta, mm, mv, epsilon=eps, axis=axis)
            y1 = op.nn.dropout(pyir.TupleGetItem(bn, 0))
            y2 = _tvm_bn(op.add(y2, pyir.const(np.float32(1))), gamma, beta, mm, mv, axis, eps, dim)
        params = [x, beta, gamma, mv, mm]
        out = check_pass(SimplifyInference(), pyir.Module({"main": pyir.Function(params, y1)}))
        ours = out["main"].body
        tvm_mod = pyir.Module({"main": pyir.Function(params, y2)})
        calls = lambda e: sum(type(n) is pyir.Call for n in pyir.post_order(e))  # noqa: E731
        assert calls(ours) == calls(y2) - 2  # the steps share one scale and shift (same parameters)
        rng = np.random.default_rng(0)
        args = [rng.standard_normal((10,) * dim).astype("float32")]
        args += [rng.standard_normal(10).astype("float32") for _ in range(3)]
        args.insert(3, rng.uniform(0.5, 2.0, 10).astype("float32"))  # a variance is positive
        np.testing.assert_allclose(pyir.evaluate(out, *args), pyir.evaluate(tvm_mod, *args),
                                   rtol=1e-5, atol=1e-5)
