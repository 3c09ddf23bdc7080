"""TVM's FoldConstant cases (``tests/python/relay/test_pass_fold_constant.py`` at v0.18.0),
one test per case, named after it and rebuilt with pyir's builders: the result is
alpha-equal to TVM's expected function, or the test says why pyir's answer differs.

Every case is ported.  The QNN cases use Relay's QNN operators (``pyir.op.qnn_relay``); as in
``test_fold_quantize``, ``fold_qnn=False`` is TVM's default behaviour and pyir's default folds
them (TVM's ``fold_qnn=True``)."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.testing import check_pass
from pyir.transform import FoldConstant, SimplifyInference


def _fold(f: pyir.Function, pass_: FoldConstant | None = None) -> pyir.Function:
    out = check_pass(pass_ or FoldConstant(), pyir.Module({"main": f}))
    return out["main"]


def _same(a: pyir.Function, b: pyir.Function) -> None:
    assert pyir.alpha_equal(a, b), f"{a}\n!=\n{b}"


def test_concatenate_const():
    """concatenate of two constants -> the constant (float64 data, as TVM's test builds)."""
    c = pyir.const(np.array([1.0, 2.0, 3.0]))
    f = pyir.Function([], op.concatenate([c, c], axis=0))
    _same(_fold(f), pyir.Function([], pyir.const(np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0]))))


def test_fold_const():
    """The closed part of ``x + (c + c) * 2 + c`` folds; the rest stays."""
    cd = np.array([1, 2, 3], "float32")
    c = pyir.const(cd)
    x = pyir.var("x", shape=(1, 2, 3))
    y = op.add(op.add(x, op.multiply(op.add(c, c), pyir.const(np.float32(2)))), c)
    expected = pyir.Function([x], op.add(op.add(x, pyir.const((cd + cd) * 2)), c))
    _same(_fold(pyir.Function([x], y)), expected)


def test_fold_let():
    """A let bound to a constant is substituted, the let it feeds folds, the rest stays."""
    cd = np.array(1, "float32")
    x = pyir.var("x", shape=(1,))
    t1, t2, t3 = pyir.var("t1"), pyir.var("t2"), pyir.var("t3")
    body = pyir.Let(t1, pyir.const(cd), pyir.Let(t2, op.add(t1, t1), pyir.Let(t3, op.add(t2, x), t3)))
    expected = pyir.Function([x], pyir.Let(t3, op.add(pyir.const(cd + cd), x), t3))
    _same(_fold(pyir.Function([x], body)), expected)


def test_fold_tuple():
    """``(x, c).1 + c + (x, c).0`` -> ``(c + c) + x``: projections of a tuple are its fields."""
    c = pyir.const(np.array(1, "float32"))
    x = pyir.var("x", shape=(1,))
    y = pyir.Tuple([x, c])
    z = op.add(op.add(pyir.TupleGetItem(y, 1), c), pyir.TupleGetItem(y, 0))
    _same(_fold(pyir.Function([x], z)), pyir.Function([x], op.add(pyir.const(np.array(2, "float32")), x)))


def test_fold_concat():
    """concatenate of two constant rows -> the (2, 3) constant."""
    cd = np.array([[1, 2, 3]], "float32")
    f = pyir.Function([], op.concatenate((pyir.const(cd), pyir.const(cd)), axis=0))
    _same(_fold(f), pyir.Function([], pyir.const(np.concatenate((cd, cd), axis=0))))


def test_fold_if():
    """An if with a constant condition is the branch it takes, folded (both conditions)."""
    xd = np.array([[1, 2, 3]], "float32")
    x, y = pyir.const(xd), pyir.const(xd)
    for cond, value in ((True, xd + xd), (False, xd - xd)):
        iff = pyir.If(pyir.const(np.array(cond)), op.add(x, y), op.subtract(x, y))
        _same(_fold(pyir.Function([], iff)), pyir.Function([], pyir.const(value)))


def test_fold_shape_of():
    """shape_of of a statically shaped expression -> the constant shape, in its dtype (TVM's
    second dtype, float32, is one pyir's shape_of rejects: a shape is integers; int64 here)."""
    for dtype in ("int32", "int64"):
        x, y = pyir.var("x", shape=(8, 9, 10)), pyir.var("y", shape=(8, 9, 10))
        f = pyir.Function([x, y], op.shape_of(op.add(x, y), dtype=dtype))
        _same(_fold(f), pyir.Function([x, y], pyir.const(np.array([8, 9, 10], dtype))))


def test_fold_batch_norm():
    """SimplifyInference then FoldConstant on conv2d + batch_norm with zero parameters.

    TVM's expected program also runs FoldScaleAxis, which pyir does not have (it would fold
    the scale into the conv weight): pyir's answer is the conv followed by the per-channel
    multiply-add, both constants folded, and it computes the same values."""
    data = pyir.var("data", shape=(1, 3, 8, 8))
    w = pyir.const(np.zeros((16, 3, 3, 3), "float32"))
    z = pyir.const(np.zeros(16, "float32"))
    conv = op.nn.conv2d(data, w, padding=(1, 1))
    bn = pyir.TupleGetItem(op.nn.batch_norm(conv, z, z, z, z), 0)
    mod = pyir.Module({"main": pyir.Function([data], bn)})
    out = check_pass(FoldConstant(), SimplifyInference()(mod))
    body = out["main"].body
    scale = pyir.const(np.zeros((16, 1, 1), "float32"))
    assert body is op.add(op.multiply(conv, scale), scale)


def test_fold_dropout():
    """dropout of a constant is not folded (its value is random), nor what uses it."""
    c = pyir.const(np.arange(10).astype("float32"))
    f = pyir.Function([], op.add(op.nn.dropout(c), pyir.const(1.0)))
    mod = pyir.Module({"main": f})
    assert FoldConstant()(mod) is mod


def test_fold_quantize():
    """qnn.quantize of a constant: left alone with ``fold_qnn=False`` (TVM's default), folded
    by default (TVM's ``fold_qnn=True``): pyir has no QNN lowering that needs the op kept, and
    its interpreter computes it exactly."""
    x = pyir.var("x", shape=(3,), dtype="int8")
    q = op.qnn.quantize(pyir.const(np.array([1.0, 2.0, 3.0], "float32")), pyir.const(0.5),
                        pyir.const(np.int8(0)), out_dtype="int8")
    f = pyir.Function([x], op.subtract(x, q))
    mod = pyir.Module({"main": f})
    assert FoldConstant(fold_qnn=False)(mod) is mod
    _same(_fold(f), pyir.Function([x], op.subtract(x, pyir.const(np.array([2, 4, 6], "int8")))))


def test_pass_link_params():
    """A cast of an int8 constant folds (TVM's test checks FoldConstant runs with int8)."""
    f = pyir.Function([], op.cast(pyir.const(np.int8(10)), dtype="int32"))
    _same(_fold(f), pyir.Function([], pyir.const(np.int32(10))))


def _on_cpu(e: pyir.Expr) -> pyir.Expr:
    return op.annotation.on_device(e, virtual_device="cpu", constrain_result=True)


def test_fold_const_with_on_device():
    """Devices on the parameter and the function do not get in the way.  pyir has no device on
    a variable or a function (its parser reads TVM's ``virtual_device`` there and drops it: a
    program means the same on every device), so the expected function is TVM's without them."""
    mod = pyir.parse("""
    def @main(%x {virtual_device="cpu"}: Tensor[(1, 2, 3), float32], virtual_device="cpu") {
      %0 = add(meta[relay.Constant][0], meta[relay.Constant][0]);
      %1 = multiply(%0, 2f);
      %2 = add(%x, %1);
      add(%2, meta[relay.Constant][0])
    }
    """, {"relay.Constant": [pyir.const(np.array([4, 5, 6], "float32"))]})
    x = mod["main"].params[0]
    cd = np.array([4, 5, 6], "float32")
    expected = pyir.Function([x], op.add(op.add(x, pyir.const((cd + cd) * 2)), pyir.const(cd)))
    _same(check_pass(FoldConstant(), mod)["main"], expected)


def test_fold_let_with_on_device():
    """A let of an annotated constant is inlined with its annotation; a call on annotated
    constants folds inside the annotation around it; the rest stays (TVM's expected)."""
    cd = np.array(3, "float32")
    x = pyir.var("x", shape=(1,))
    t1, t2, t3 = pyir.var("t1"), pyir.var("t2"), pyir.var("t3")
    body = pyir.Let(t1, _on_cpu(pyir.const(cd)),
                    pyir.Let(t2, _on_cpu(op.multiply(t1, t1)), pyir.Let(t3, _on_cpu(op.add(t2, x)), t3)))
    expected = pyir.Function([x], pyir.Let(t3, _on_cpu(op.add(_on_cpu(pyir.const(cd * cd)), x)), t3))
    _same(_fold(pyir.Function([x], body)), expected)
    # an annotation alone (of a constant) is not folded away, nor is device_copy looked through
    kept = pyir.Function([], op.add(op.annotation.device_copy(pyir.const(cd), src_virtual_device="cpu",
                                                              dst_virtual_device="cuda"), pyir.const(cd)))
    mod = pyir.Module({"main": kept})
    assert FoldConstant()(mod) is mod


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_fold_ndarray_size(dtype):
    """ndarray_size of a static shape -> the constant element count (its argument need not be
    constant), in the dtype asked."""
    x, y = pyir.var("x", shape=(8, 9, 10)), pyir.var("y", shape=(8, 9, 10))
    f = pyir.Function([x, y], op.ndarray_size(op.add(x, y), dtype=dtype))
    _same(_fold(f), pyir.Function([x, y], pyir.const(np.asarray(720, dtype))))


_Q = op.qnn_relay


def _f32(v: float) -> pyir.Constant:
    return pyir.const(np.float32(v))


def _i32(v: int) -> pyir.Constant:
    return pyir.const(np.int32(v))


def _both_ways(f: pyir.Function, expected: pyir.Function) -> None:
    """Left alone with ``fold_qnn=False``; folded to ``expected`` by default."""
    mod = pyir.Module({"main": f})
    assert FoldConstant(fold_qnn=False)(mod) is mod
    _same(_fold(f), expected)


def test_fold_qnn_const():
    """A qnn.add of two constants folds (2*1 + 2*1 at output scale 1 = 4); the qnn.dense with
    one variable operand and the qnn.add of two variable operands stay."""
    def build(weight: pyir.Expr) -> pyir.Function:
        a, b = pyir.var("a", shape=(2, 3)), pyir.var("b", shape=(2,), dtype="int32")
        qa = op.qnn.quantize(a, _f32(1), pyir.const(np.uint8(0)), out_dtype="uint8")
        dense = _Q.dense(qa, weight, _i32(0), _i32(0), _f32(2), _f32(2))
        return pyir.Function([a, b], _Q.add(dense, b, _f32(2), _i32(0), _f32(2), _i32(0), _f32(1), _i32(0)))
    ones = pyir.const(np.ones((2, 3), "uint8"))
    before = build(_Q.add(ones, ones, _f32(2), _i32(0), _f32(2), _i32(0), _f32(1), _i32(0)))
    after = build(pyir.const(np.full((2, 3), 4, "uint8")))
    mod = pyir.Module({"main": before})
    assert FoldConstant(fold_qnn=False)(mod) is mod
    _same(_fold(before), after)


def test_fold_qnn_conv2d_qnn_mul():
    """qnn.conv2d of two constants (a 2x2 sum of ones: 4) then qnn.mul by 10 -> 40 (int32)."""
    ones = pyir.const(np.ones((1, 1, 2, 2), "uint8"))
    conv = _Q.conv2d(ones, ones, _i32(0), _i32(0), _f32(1), _f32(1), kernel_size=(2, 2), channels=1)
    ten = pyir.const(np.array([10], "int32"))
    mul = _Q.mul(conv, ten, _f32(1), _i32(0), _f32(1), _i32(0), _f32(1), _i32(0))
    _both_ways(pyir.Function([], mul), pyir.Function([], pyir.const(np.array([[[[40]]]], "int32"))))


def test_fold_requantize():
    """requantize of a constant: ``(q - 1) * 2 / 1 + 1`` -> [1, 3, 5] (int8); the add stays."""
    x = pyir.var("x", shape=(3,), dtype="int8")
    rq = _Q.requantize(pyir.const(np.array([1, 2, 3], "int8")), _f32(2), _i32(1), _f32(1), _i32(1))
    _both_ways(pyir.Function([x], op.add(rq, x)),
               pyir.Function([x], op.add(pyir.const(np.array([1, 3, 5], "int8")), x)))
