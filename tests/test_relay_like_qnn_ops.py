"""The operators added for TVM's pass cases: ``reshape_like``, ``cast_like``,
``broadcast_to_like``, ``ndarray_size``, ``argsort`` (``pyir.op``) and Relay's QNN operators
(``pyir.op.qnn_relay``): values, type errors, and the text and JSON round trips."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op

Q = op.qnn_relay


def _run(e: pyir.Expr, *inputs: np.ndarray) -> np.ndarray:
    mod = pyir.Module.from_expr(e)
    back = pyir.parse(mod.astext())
    assert pyir.alpha_equal(back["main"], mod["main"])
    assert pyir.from_json(pyir.to_json(mod))["main"] is mod["main"]
    return np.asarray(pyir.evaluate(mod, *inputs))


def test_like_operators():
    d, like = pyir.var("d", shape=(2, 3, 4)), pyir.var("l", shape=(6, 2, 2), dtype="int8")
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    ld = np.zeros((6, 2, 2), "int8")
    assert _run(op.reshape_like(d, like, lhs_begin=2, rhs_begin=1), data, ld).shape == (2, 3, 2, 2)
    neg = op.reshape_like(d, like, lhs_begin=-1, rhs_begin=-2)
    assert _run(neg, data, ld).shape == (2, 3, 2, 2)
    got = _run(op.cast_like(d, like), data, ld)
    assert got.dtype == np.int8 and got[1, 2, 3] == 23
    v = pyir.var("v", shape=(4,))
    np.testing.assert_array_equal(_run(op.broadcast_to_like(v, d), np.arange(4, dtype="float32"), data),
                                  np.broadcast_to(np.arange(4, dtype="float32"), (2, 3, 4)))
    assert _run(op.ndarray_size(d, dtype="int64"), data) == 24
    s = pyir.var("s", shape=(5,), dtype="int8")
    vals = np.array([3, -128, 3, 127, 0], "int8")
    np.testing.assert_array_equal(_run(op.argsort(s), vals), [1, 4, 0, 2, 3])
    np.testing.assert_array_equal(_run(op.argsort(s, is_ascend=False), vals), [3, 0, 2, 4, 1])
    sym = pyir.var("x", shape=("n", 4))
    assert op.reshape_like(sym, like, lhs_begin=1, rhs_begin=1).checked_type.shape[1:] == (2, 2)
    with pytest.raises(pyir.TypeCheckError, match="cannot reshape"):
        op.reshape_like(d, pyir.var("w", shape=(5,))).checked_type
    with pytest.raises(pyir.TypeCheckError, match="out of range"):
        op.reshape_like(d, like, lhs_begin=4).checked_type
    with pytest.raises(pyir.TypeCheckError):
        op.broadcast_to_like(d, v).checked_type
    with pytest.raises(pyir.TypeCheckError, match="scalar"):
        op.argsort(pyir.var("c", shape=())).checked_type


def _f(v: float) -> pyir.Constant:
    return pyir.const(np.float32(v))


def _i(v: int) -> pyir.Constant:
    return pyir.const(np.int32(v))


def test_relay_qnn_operators():
    x = pyir.var("x", shape=(4,), dtype="int8")
    q = np.array([-128, -1, 0, 127], "int8")
    # (q - 2) * 0.5 / 0.25 + 3, saturated to int8; TONEAREST rounds halves away from zero
    rq = Q.requantize(x, _f(0.5), _i(2), _f(0.25), _i(3))
    np.testing.assert_array_equal(_run(rq, q), [-128, -3, -1, 127])
    half = Q.requantize(x, _f(1), _i(0), _f(2), _i(0), rounding="TONEAREST", out_dtype="int32")
    np.testing.assert_array_equal(_run(half, np.array([-3, -1, 1, 3], "int8")), [-2, -1, 1, 2])
    np.testing.assert_array_equal(_run(Q.requantize(x, _f(1), _i(0), _f(2), _i(0), out_dtype="int32"),
                                       np.array([-3, -1, 1, 3], "int8")), [-1, 0, 1, 2])  # UPWARD
    y = pyir.var("y", shape=(4,), dtype="int8")
    add = Q.add(x, y, _f(0.5), _i(0), _f(0.5), _i(0), _f(1), _i(0))
    np.testing.assert_array_equal(_run(add, q, q), [-128, -1, 0, 127])
    mul = Q.mul(x, y, _f(0.5), _i(0), _f(0.5), _i(0), _f(1), _i(0))
    np.testing.assert_array_equal(_run(mul, q, np.array([1, 2, 4, 8], "int8")), [-32, 0, 0, 127])
    a, w = pyir.var("a", shape=(2, 3), dtype="uint8"), pyir.var("w", shape=(4, 3), dtype="uint8")
    av, wv = np.arange(6, dtype="uint8").reshape(2, 3), np.arange(12, dtype="uint8").reshape(4, 3)
    got = _run(Q.dense(a, w, _i(1), _i(2), _f(1), _f(1), units=4), av, wv)
    np.testing.assert_array_equal(got, (av.astype(int) - 1) @ (wv.astype(int) - 2).T)
    assert got.dtype == np.int32
    c, k = pyir.var("c", shape=(1, 2, 4, 4), dtype="int8"), pyir.var("k", shape=(3, 2, 3, 3), dtype="int8")
    conv = Q.conv2d(c, k, _i(1), _i(0), _f(1), _f(1), padding=(1, 1))
    assert conv.checked_type == pyir.TensorType((1, 3, 4, 4), "int32")
    cv, kv = np.ones((1, 2, 4, 4), "int8") * 3, np.ones((3, 2, 3, 3), "int8")
    assert _run(conv, cv, kv)[0, 0, 1, 1] == 2 * 9 * 2  # (3 - 1) over a 2x3x3 window
    with pytest.raises(pyir.TypeCheckError, match="integer"):
        Q.requantize(pyir.var("f", shape=(4,)), _f(1), _i(0), _f(1), _i(0)).checked_type
    with pytest.raises(pyir.TypeCheckError, match="units"):
        Q.dense(a, w, _i(0), _i(0), _f(1), _f(1), units=5).checked_type
    with pytest.raises(pyir.AttrError, match="rounding"):
        Q.requantize(x, _f(1), _i(0), _f(1), _i(0), rounding="DOWN")
