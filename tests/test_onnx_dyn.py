"""The ONNX importer with run-time shape arguments (``dyn.*`` operators), named dynamic input
dimensions (``dim_param``), the Reduce family, ArgMax/ArgMin, and the importer bugs of issue 13
(each regression test names its bug); the last test imports every registered converter with
every attribute of its latest schema written at its default, as exporters do."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.frontend.onnx import CONVERTERS, FrontendError, from_onnx
from pyir.testing import check_pass
from pyir.transform import DynamicToStatic

onnx = pytest.importorskip("onnx")  # a test dependency: installed in CI, so this never skips there
from onnx import TensorProto, defs, helper  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def _vi(name: str, elem: int, shape: list[object] | None) -> object:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes: list[object], inputs: list[object], outputs: list[str], opset: int = 18,
           inits: list[object] | None = None) -> object:
    g = helper.make_graph(nodes, "g", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs],
                          initializer=inits or [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _one(op_type: str, ins: dict[str, np.ndarray], opset: int = 18, n_out: int = 1,
         const: dict[str, np.ndarray] | None = None, **attrs: object) -> tuple[object, list[np.ndarray]]:
    """Import a one-node model whose inputs ``ins`` are graph inputs (``const``: initializers)
    and evaluate it on them; returns the module and the outputs."""
    const = const or {}
    node = helper.make_node(op_type, list(ins) + list(const), [f"y{i}" for i in range(n_out)], **attrs)
    vis = [_vi(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for k, v in ins.items()]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in const.items()]
    mod = from_onnx(_model([node], vis, [f"y{i}" for i in range(n_out)], opset, inits))
    with np.errstate(all="ignore"):
        got = pyir.evaluate(mod, *ins.values())
    return mod, list(got) if isinstance(got, tuple) else [got]


def _out_type(mod: object) -> object:
    return mod["main"].body.checked_type  # type: ignore[index]


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5


# -- issue 13, bugs 1, 2, 3, 5, 6, 7 --------------------------------------------------------------------


def test_bug1_reduce_noop_with_empty_axes_written_explicitly() -> None:
    """Bug 1: ``noop_with_empty_axes=0`` with ``axes`` (exporters write it) imports, and
    ``ReduceSum(noop_with_empty_axes=1, axes=[])`` with ``keepdims`` is the identity."""
    _, (y,) = _one("ReduceMean", {"x": X}, opset=18, const={"axes": np.array([1], np.int64)},
                   keepdims=0, noop_with_empty_axes=0)
    np.testing.assert_allclose(y, X.mean(axis=1), rtol=1e-6)
    _, (y,) = _one("ReduceMax", {"x": X}, opset=13, axes=[2], keepdims=1)
    np.testing.assert_array_equal(y, X.max(axis=2, keepdims=True))
    _, (y,) = _one("ReduceSum", {"x": X}, opset=13, const={"axes": np.zeros((0,), np.int64)},
                   keepdims=1, noop_with_empty_axes=1)
    np.testing.assert_array_equal(y, X)
    _, (y,) = _one("ReduceSum", {"x": X}, opset=13, keepdims=0, noop_with_empty_axes=0)
    np.testing.assert_allclose(y, X.sum(), rtol=1e-6)
    assert y.shape == ()


def _conv_transpose_ref(x: np.ndarray, w: np.ndarray, strides: tuple[int, ...], out: tuple[int, ...],
                        pads_begin: tuple[int, ...]) -> np.ndarray:
    """Scatter definition of a transposed convolution (group 1, dilation 1): every input pixel
    adds ``x * w`` at ``i * stride + k - pad_begin``; positions outside ``out`` are dropped."""
    n = x.shape[0]
    m = w.shape[1]
    y = np.zeros((n, m, *out), np.float64)
    for idx in np.ndindex(*x.shape[2:]):
        for k in np.ndindex(*w.shape[2:]):
            pos = tuple(i * s + kk - p for i, s, kk, p in zip(idx, strides, k, pads_begin))
            if all(0 <= q < o for q, o in zip(pos, out)):
                contrib = np.einsum("nc,cm->nm", x[(slice(None), slice(None), *idx)],
                                    w[(slice(None), slice(None), *k)])
                y[(slice(None), slice(None), *pos)] += contrib
    return y.astype(x.dtype)


def test_bug2_conv_transpose_1d_default_pads() -> None:
    """Bug 2: 1-D ConvTranspose without attributes: pads are lifted to 2-D with 0 (not 1)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, 3)).astype(np.float32)
    w = rng.standard_normal((1, 2, 3)).astype(np.float32)
    _, (y,) = _one("ConvTranspose", {"x": x, "w": w})
    assert y.shape == (1, 2, 5)
    np.testing.assert_allclose(y, _conv_transpose_ref(x, w, (1,), (5,), (0,)), rtol=1e-5, atol=1e-6)
    _, (y,) = _one("ConvTranspose", {"x": x, "w": w}, pads=[1, 0])
    np.testing.assert_allclose(y, _conv_transpose_ref(x, w, (1,), (4,), (1,)), rtol=1e-5, atol=1e-6)


def test_bug3_conv_transpose_output_shape_with_strides() -> None:
    """Bug 3: ``ConvTranspose(strides=[3, 2], output_shape=[10, 8])`` on a 3x3 input is valid:
    the output beyond the full result (9x7) is zeros (ONNX's negative total padding)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
    w = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    _, (y,) = _one("ConvTranspose", {"x": x, "w": w}, strides=[3, 2], output_shape=[10, 8])
    assert y.shape == (1, 2, 10, 8)
    np.testing.assert_allclose(y, _conv_transpose_ref(x, w, (3, 2), (10, 8), (0, 0)), rtol=1e-5, atol=1e-6)
    _, (y,) = _one("ConvTranspose", {"x": x, "w": w}, strides=[3, 2], output_shape=[8, 6])  # cropped
    np.testing.assert_allclose(y, _conv_transpose_ref(x, w, (3, 2), (8, 6), (1, 1)), rtol=1e-5, atol=1e-6)


def test_conv_transpose_3d() -> None:
    """3-D ConvTranspose (strides, pads, output_padding) matches the scatter definition."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 2, 3, 2)).astype(np.float32)
    w = rng.standard_normal((2, 3, 2, 3, 2)).astype(np.float32)
    _, (y,) = _one("ConvTranspose", {"x": x, "w": w}, strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 0],
                   output_padding=[1, 0, 0])
    out = (2 * 1 + 2 - 1 - 0 + 1, 2 + 3 - 0 - 1, 2 * 1 + 2)
    assert y.shape == (1, 3, *out)
    np.testing.assert_allclose(y, _conv_transpose_ref(x, w, (2, 1, 2), out, (1, 0, 0)), rtol=1e-5, atol=1e-5)


def test_bug5_clip_min_above_max_gives_max() -> None:
    """Bug 5: ``Clip(min=2, max=1)`` makes every value ``max`` (attributes and inputs, float and int)."""
    lo, hi = np.array(2, np.float32), np.array(1, np.float32)
    _, (y,) = _one("Clip", {"x": X}, opset=13, const={"lo": lo, "hi": hi})
    np.testing.assert_array_equal(y, np.ones_like(X))
    _, (y,) = _one("Clip", {"x": X}, opset=6, min=2.0, max=1.0)
    np.testing.assert_array_equal(y, np.ones_like(X))
    xi = np.arange(-3, 4, dtype=np.int64)
    _, (y,) = _one("Clip", {"x": xi}, opset=13, const={"lo": np.array(2), "hi": np.array(1)})
    np.testing.assert_array_equal(y, np.ones_like(xi))


def test_clip_bounds_as_run_time_inputs() -> None:
    """Clip's min/max computed at run time become elementwise maximum/minimum (one may be absent)."""
    mod, (y,) = _one("Clip", {"x": X, "lo": np.array(-2, np.float32), "hi": np.array(3, np.float32)}, 13)
    np.testing.assert_array_equal(y, np.clip(X, -2, 3))
    calls = {c.op.name for c in pyir.post_order(mod["main"]) if isinstance(c, pyir.Call)}
    assert calls == {"maximum", "minimum"}
    node = helper.make_node("Clip", ["x", "", "hi"], ["y0"])
    mod = from_onnx(_model([node], [_vi("x", F, [2, 3, 4]), _vi("hi", F, [])], ["y0"], 13))
    np.testing.assert_array_equal(pyir.evaluate(mod, X, np.array(0.5, np.float32)), np.minimum(X, 0.5))


def test_bug6_reduce_max_min_over_a_zero_length_axis() -> None:
    """Bug 6: ReduceMax/ReduceMin over an empty axis give ONNX's result (-inf/inf, or the
    integer dtype's lowest/highest value) instead of an EvaluationError."""
    e = np.zeros((2, 0, 3), np.float32)
    _, (y,) = _one("ReduceMax", {"x": e}, opset=13, axes=[1], keepdims=0)
    assert y.shape == (2, 3) and np.all(y == -np.inf) and y.dtype == np.float32
    _, (y,) = _one("ReduceMin", {"x": e}, opset=13, axes=[1], keepdims=1)
    assert y.shape == (2, 1, 3) and np.all(y == np.inf)
    ei = np.zeros((0, 2), np.int32)
    _, (y,) = _one("ReduceMax", {"x": ei}, opset=13, axes=[0], keepdims=0)
    np.testing.assert_array_equal(y, np.full((2,), np.iinfo(np.int32).min, np.int32))
    _, (y,) = _one("ReduceMin", {"x": ei}, opset=18, const={"a": np.array([0], np.int64)}, keepdims=0)
    np.testing.assert_array_equal(y, np.full((2,), np.iinfo(np.int32).max, np.int32))
    _, (y,) = _one("ReduceLogSumExp", {"x": e}, opset=18, const={"a": np.array([1], np.int64)}, keepdims=0)
    assert y.shape == (2, 3) and np.all(y == -np.inf)


def test_bug7_reshape_allowzero() -> None:
    """Bug 7: ``Reshape(allowzero=1)`` of (0, 3, 4) to [3, 4, 0] is an empty (3, 4, 0) tensor
    (the 0 is a dimension, not "copy"); with allowzero=0 a 0 copies."""
    x = np.zeros((0, 3, 4), np.float32)
    _, (y,) = _one("Reshape", {"x": x}, opset=14, const={"s": np.array([3, 4, 0], np.int64)}, allowzero=1)
    assert y.shape == (3, 4, 0) and y.dtype == np.float32
    _, (y,) = _one("Reshape", {"x": X}, opset=14, const={"s": np.array([0, -1], np.int64)}, allowzero=0)
    assert y.shape == (2, 12)
    # a run-time shape with allowzero: dyn.reshape(allowzero=True)
    _, (y,) = _one("Reshape", {"x": x, "s": np.array([3, 4, 0], np.int64)}, opset=14, allowzero=1)
    assert y.shape == (3, 4, 0)
    _, (y,) = _one("Reshape", {"x": x, "s": np.array([0, 4, 3], np.int64)}, opset=14, allowzero=0)
    assert y.shape == (0, 4, 3)


# -- shape arguments computed at run time ---------------------------------------------------------------


def test_reshape_run_time_shape_is_dyn_reshape() -> None:
    """A Reshape whose shape is a graph input builds dyn.reshape: rank from the shape's length, ``?`` dims."""
    mod, (y,) = _one("Reshape", {"x": X, "s": np.array([4, -1, 3], np.int64)}, opset=14)
    assert _out_type(mod) == pyir.TensorType((pyir.Any,) * 3, "float32")
    np.testing.assert_array_equal(y, X.reshape(4, -1, 3))
    assert mod["main"].body.op.name == "dyn.reshape"


@pytest.mark.parametrize("op_type,opset,fn", [
    ("ReduceSum", 13, np.sum), ("ReduceMean", 18, np.mean), ("ReduceMax", 18, np.max),
    ("ReduceMin", 18, np.min), ("ReduceProd", 18, np.prod),
    ("ReduceL1", 18, lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims)),
    ("ReduceL2", 18, lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
    ("ReduceSumSquare", 18, lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims)),
    ("ReduceLogSumExp", 18,
     lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))),
])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_given_at_run_time(op_type: str, opset: int, fn: object, keepdims: int) -> None:
    """Reduce axes as a graph input build the dyn reductions (types keep the rank when keepdims,
    else lose one per axis); the values are numpy's."""
    x = (X / 10).astype(np.float32)
    axes = np.array([-1, 0], np.int64)
    mod, (y,) = _one(op_type, {"x": x, "axes": axes}, opset=opset, keepdims=keepdims)
    want = fn(x, axis=(0, 2), keepdims=bool(keepdims))  # type: ignore[operator]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    t = _out_type(mod)
    assert t.ndim == (3 if keepdims else 1) and all(d is pyir.Any for d in t.shape)
    # the same node with constant axes imports to the static reductions and gives the same values
    _, (ys,) = _one(op_type, {"x": x}, opset=opset, const={"axes": axes}, keepdims=keepdims)
    np.testing.assert_allclose(ys, y, rtol=1e-6)


@pytest.mark.parametrize("op_type,fn", [
    ("ReduceL1", np.abs), ("ReduceSumSquare", np.square), ("ReduceLogSum", np.log),
    ("ReduceLogSumExp", lambda x: x), ("ReduceL2", np.abs), ("ReduceMax", lambda x: x)])
def test_reduce_noop_with_empty_axes_keeps_the_elementwise_part(op_type: str, fn: object) -> None:
    """``noop_with_empty_axes=1`` with no axes reduces nothing; composite reductions still apply
    their elementwise steps (ONNX: ReduceLogSum is log, ReduceSumSquare is the square)."""
    x = np.abs(X) + 1
    _, (y,) = _one(op_type, {"x": x}, opset=18, noop_with_empty_axes=1)
    np.testing.assert_allclose(y, fn(x), rtol=1e-5)  # type: ignore[operator]


def test_reduce_opset13_axes_attribute_and_integer_l2() -> None:
    """Before opset 18 the axes are an attribute (ReduceSum: before 13); ReduceL2 of integers
    computes in float and casts back."""
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    _, (y,) = _one("ReduceL2", {"x": xi}, opset=13, axes=[1], keepdims=0)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.sqrt((xi.astype(np.float64) ** 2).sum(1)).astype(np.int32))
    _, (y,) = _one("ReduceSum", {"x": X}, opset=11, axes=[0, 2], keepdims=1)
    np.testing.assert_allclose(y, X.sum(axis=(0, 2), keepdims=True), rtol=1e-6)
    _, (y,) = _one("ReduceLogSum", {"x": np.abs(X) + 1}, opset=13, axes=[0])
    np.testing.assert_allclose(y, np.log((np.abs(X) + 1).sum(0, keepdims=True)), rtol=1e-6)


def test_split_squeeze_unsqueeze_with_run_time_arguments() -> None:
    """Split sizes and (Un)Squeeze axes given at run time: dyn.split / dyn.squeeze / dyn.unsqueeze."""
    mod, ys = _one("Split", {"x": X, "s": np.array([1, 3], np.int64)}, opset=13, n_out=2, axis=2)
    np.testing.assert_array_equal(ys[0], X[:, :, :1])
    np.testing.assert_array_equal(ys[1], X[:, :, 1:])
    assert mod["main"].body.checked_type.fields[0] == pyir.TensorType((2, 3, pyir.Any), "float32")
    x1 = X.reshape(2, 1, 3, 1, 4)
    mod, (y,) = _one("Squeeze", {"x": x1, "a": np.array([1, -2], np.int64)}, opset=13)
    assert _out_type(mod) == pyir.TensorType((2, 3, 4), "float32")  # the non-1 dims are the result
    np.testing.assert_array_equal(y, X)
    mod, (y,) = _one("Unsqueeze", {"x": X, "a": np.array([0, 4], np.int64)}, opset=13)
    assert _out_type(mod).ndim == 5
    assert y.shape == (1, 2, 3, 4, 1)


def test_expand_tile_pad_slice_constant_of_shape_range_with_run_time_arguments() -> None:
    """The other shape arguments computed at run time build dyn.expand, dyn.tile, dyn.nn.pad,
    dyn.strided_slice, dyn.full and dyn.arange; values match numpy."""
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    mod, (y,) = _one("Expand", {"x": x, "s": np.array([2, 1, 4], np.int64)}, opset=13)
    np.testing.assert_array_equal(y, np.broadcast_to(x, (2, 3, 4)))
    assert _out_type(mod) == pyir.TensorType((pyir.Any, 3, pyir.Any), "float32")
    _, (y,) = _one("Tile", {"x": X, "r": np.array([1, 2, 1], np.int64)}, opset=13)
    np.testing.assert_array_equal(y, np.tile(X, (1, 2, 1)))
    _, (y,) = _one("Pad", {"x": X, "p": np.array([0, 1, 2, 0, 0, 1], np.int64),
                           "v": np.array(9.0, np.float32)}, opset=18)
    np.testing.assert_array_equal(y, np.pad(X, ((0, 0), (1, 0), (2, 1)), constant_values=9.0))
    _, (y,) = _one("Pad", {"x": X, "p": np.array([1, 2], np.int64)}, opset=18,
                   const={"v": np.array(0, np.float32), "axes": np.array([1], np.int64)}, mode="edge")
    np.testing.assert_array_equal(y, np.pad(X, ((0, 0), (1, 2), (0, 0)), mode="edge"))
    mod, (y,) = _one("Slice", {"x": X, "b": np.array([1, -1], np.int64), "e": np.array([3, -5], np.int64)},
                     opset=13, const={"axes": np.array([2, 1], np.int64),
                                      "steps": np.array([1, -1], np.int64)})
    np.testing.assert_array_equal(y, X[:, -1:-5:-1, 1:3])
    _, (y,) = _one("ConstantOfShape", {"s": np.array([2, 3], np.int64)}, opset=13,
                   value=helper.make_tensor("v", I64, [1], [7]))
    np.testing.assert_array_equal(y, np.full((2, 3), 7, np.int64))
    mod, (y,) = _one("Range", {"a": np.array(10, np.int32), "b": np.array(4, np.int32),
                               "c": np.array(-3, np.int32)}, opset=13)
    np.testing.assert_array_equal(y, np.array([10, 7], np.int32))
    assert _out_type(mod) == pyir.TensorType((pyir.Any,), "int32")
    _, (y,) = _one("Range", {}, opset=13, const={"a": np.array(1.0, np.float32),
                                                  "b": np.array(2.0, np.float32),
                                                  "c": np.array(0.25, np.float32)})
    np.testing.assert_array_equal(y, np.arange(1.0, 2.0, 0.25, dtype=np.float32))


def test_dropout_ratio_input_and_training_mode() -> None:
    """Dropout at inference is the identity (a run-time ratio does not matter); training mode
    with ratio 0 too; training mode with ratio > 0, or a run-time training_mode, is refused."""
    _, ys = _one("Dropout", {"x": X, "r": np.array(0.3, np.float32)}, opset=13, n_out=2)
    np.testing.assert_array_equal(ys[0], X)
    assert ys[1].dtype == np.bool_ and ys[1].all()
    _, ys = _one("Dropout", {"x": X}, opset=13, n_out=1, const={"r": np.array(0.0, np.float32),
                                                               "t": np.array(True)})
    np.testing.assert_array_equal(ys[0], X)
    with pytest.raises(FrontendError, match="training mode"):
        _one("Dropout", {"x": X}, opset=13, const={"r": np.array(0.5, np.float32), "t": np.array(True)})
    with pytest.raises(FrontendError, match="run-time training_mode"):
        _one("Dropout", {"x": X, "r": np.array(0.5, np.float32), "t": np.array(False)}, opset=13)


def test_argmax_argmin_select_last_index() -> None:
    """ArgMax/ArgMin: the first index on ties, or the last with ``select_last_index=1``."""
    x = np.array([[2, 1, 2, 0], [0, 0, 3, 3]], np.float32)
    for op_type, fn in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        for keepdims in (0, 1):
            _, (y,) = _one(op_type, {"x": x}, opset=13, axis=1, keepdims=keepdims)
            np.testing.assert_array_equal(y, fn(x, axis=1, keepdims=bool(keepdims)))
            _, (y,) = _one(op_type, {"x": x}, opset=13, axis=1, keepdims=keepdims, select_last_index=1)
            last = 3 - fn(x[:, ::-1], axis=1, keepdims=bool(keepdims))
            np.testing.assert_array_equal(y, last)
            assert y.dtype == np.int64
    assert (pyir.evaluate(pyir.Function([], op.argmin(pyir.const(x), axis=0))) == [1, 1, 0, 0]).all()


def test_type_error_names_the_node_and_shapes() -> None:
    """A bad run-time argument at import (split sizes for another number of outputs) is a
    FrontendError naming the ONNX node; a bad value at run time is an EvaluationError."""
    node = helper.make_node("Split", ["x", "s"], ["a", "b", "c"], name="sp", axis=0)
    m = _model([node], [_vi("x", F, [6]), _vi("s", I64, [2])], ["a", "b", "c"], 13)
    with pytest.raises(FrontendError, match=r"'sp'.*Split.*2 sizes for 3 outputs"):
        from_onnx(m)
    mod = from_onnx(_model([helper.make_node("Reshape", ["x", "s"], ["y"])],
                           [_vi("x", F, [2, 3, 4]), _vi("s", I64, [2])], ["y"], 14))
    with pytest.raises(pyir.EvaluationError, match=r"dyn\.reshape"):
        pyir.evaluate(mod, X, np.array([5, -1], np.int64))


# -- DynamicToStatic over the new dyn operators -----------------------------------------------------------


def _fn(body_of: object, *shapes: tuple[int, ...]) -> pyir.Module:
    xs = [pyir.var(f"x{i}", pyir.TensorType(s, "float32")) for i, s in enumerate(shapes)]
    return pyir.Module({"main": pyir.Function(xs, body_of(*xs))})  # type: ignore[operator]


def _i64(*v: int) -> pyir.Constant:
    return pyir.const(np.asarray(v, np.int64))


@pytest.mark.parametrize("name,build,static_op", [
    ("sum", lambda x: op.dyn.sum(x, _i64(0, 2), keepdims=True), "sum"),
    ("mean", lambda x: op.dyn.mean(x, _i64(1)), "mean"),
    ("max", lambda x: op.dyn.max(x, _i64(-1)), "max"),
    ("min", lambda x: op.dyn.min(x, _i64(0)), "min"),
    ("prod", lambda x: op.dyn.prod(x, _i64(2), keepdims=True), "prod"),
    ("squeeze", lambda x: op.dyn.squeeze(op.reshape(x, newshape=(2, 1, 12)), _i64(1)), "squeeze"),
    ("unsqueeze", lambda x: op.dyn.unsqueeze(x, _i64(0, -1)), "reshape"),
    ("expand", lambda x: op.dyn.expand(x, _i64(2, 1, 1, 4)), "broadcast_to"),
    ("reshape0", lambda x: op.dyn.reshape(x, _i64(0, 12)), "reshape"),
])
def test_dynamic_to_static_turns_the_new_dyn_operators_static(name: str, build: object,
                                                                 static_op: str) -> None:
    """With constant arguments, DynamicToStatic makes each new dyn operator the static one
    (values unchanged, lineage complete, idempotent: pyir.testing.check_pass)."""
    mod = _fn(build, (2, 3, 4))
    out = check_pass(DynamicToStatic(), mod)
    ops = {c.op.name for c in pyir.post_order(out["main"]) if isinstance(c, pyir.Call)}
    assert static_op in ops and not any(o.startswith("dyn.") for o in ops)
    assert out["main"].body.checked_type.static


def test_dynamic_to_static_split_and_allowzero_reshape() -> None:
    """dyn.split with constant sizes becomes split; dyn.reshape(allowzero) to an empty shape
    becomes zeros."""
    mod = _fn(lambda x: pyir.TupleGetItem(op.dyn.split(x, _i64(1, 3), axis=2), 1), (2, 3, 4))
    out = check_pass(DynamicToStatic(), mod)
    assert out["main"].body.checked_type == pyir.TensorType((2, 3, 3), "float32")
    mod = _fn(lambda x: op.dyn.reshape(x, _i64(3, 0), allowzero=True), (0, 3))
    out = DynamicToStatic()(mod)
    assert out["main"].body.checked_type == pyir.TensorType((3, 0), "float32")
    np.testing.assert_array_equal(pyir.evaluate(out, np.zeros((0, 3), np.float32)), np.zeros((3, 0)))


def test_dyn_reduce_rejects_bad_axes_at_run_time() -> None:
    """Run-time axes out of range or repeated are an EvaluationError."""
    x = pyir.var("x", pyir.TensorType((2, 3), "float32"))
    a = pyir.var("a", pyir.TensorType((2,), "int64"))
    mod = pyir.Module({"main": pyir.Function([x, a], op.dyn.sum(x, a))})
    with pytest.raises(pyir.EvaluationError, match="repeat"):
        pyir.evaluate(mod, np.ones((2, 3), np.float32), np.array([1, -1], np.int64))
    with pytest.raises(pyir.EvaluationError, match="out of range"):
        pyir.evaluate(mod, np.ones((2, 3), np.float32), np.array([0, 2], np.int64))
    with pytest.raises(pyir.TypeCheckError, match="3 axes for data of rank 2"):
        pyir.Function([x], op.dyn.sum(x, _i64(0, 1, 1))).checked_type


# -- dim_param --------------------------------------------------------------------------------------------


def _relu_add_model() -> object:
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "z"], ["y"])]
    return _model(nodes, [_vi("x", F, ["batch", "seq", 8]), _vi("z", F, ["batch", None, 8])], ["y"], 13)


def test_dim_param_becomes_a_symbol_and_unnamed_dims_any() -> None:
    """Named dynamic dimensions become ``pyir.sym(name)`` (one symbol per name across inputs);
    an unnamed one becomes ``?``; the program evaluates on any matching sizes."""
    mod = from_onnx(_relu_add_model())
    x, z = mod["main"].params
    b, s = pyir.sym("batch"), pyir.sym("seq")
    assert x.type_annotation == pyir.TensorType((b, s, 8), "float32")
    assert z.type_annotation == pyir.TensorType((b, pyir.Any, 8), "float32")
    assert mod["main"].body.checked_type.shape[0] is b
    xv = np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)
    np.testing.assert_allclose(pyir.evaluate(mod, xv, xv), np.maximum(xv, 0) + xv)


def test_dims_and_shapes_bind_dynamic_dimensions_at_import() -> None:
    """``dims={"batch": 2}`` binds a dimension name everywhere; ``shapes=`` (by input name) wins
    for its input; bad bindings are FrontendErrors."""
    mod = from_onnx(_relu_add_model(), dims={"batch": 2, "seq": 5})
    x, z = mod["main"].params
    assert x.type_annotation == pyir.TensorType((2, 5, 8), "float32")
    assert z.type_annotation == pyir.TensorType((2, pyir.Any, 8), "float32")
    mod = from_onnx(_relu_add_model(), dims={"batch": 2}, shapes={"z": (2, 5, 8)})
    x, z = mod["main"].params
    assert x.type_annotation == pyir.TensorType((2, pyir.sym("seq"), 8), "float32")
    assert z.type_annotation == pyir.TensorType((2, 5, 8), "float32")
    with pytest.raises(FrontendError, match="dims"):
        from_onnx(_relu_add_model(), dims={"batch": "two"})
    with pytest.raises(FrontendError, match="dims"):
        from_onnx(_relu_add_model(), dims={"batch": True})


def test_dim_param_with_an_expression_name_and_a_pipeline() -> None:
    """An exporter's dim_param such as ``2*s0`` is a valid symbol name; a reshape of a symbolic
    batch keeps the symbol, and the standard passes leave the results unchanged."""
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    m = _model(nodes, [_vi("x", F, ["2*s0", 3, 4])], ["y"], 14,
               inits=[onnx.numpy_helper.from_array(np.array([0, -1], np.int64), "s")])
    mod = from_onnx(m)
    t = mod["main"].params[0].type_annotation
    assert isinstance(t.shape[0], pyir.Dim) and t.shape[1:] == (3, 4)
    assert mod["main"].body.checked_type.shape == (t.shape[0], 12)
    from pyir.transform import FoldConstant, SimplifyExpr

    for p in (FoldConstant(), SimplifyExpr()):
        check_pass(p, mod, shapes={t.shape[0].name: 2})


# -- every converter imports with every schema attribute at its default ---------------------------------

# inputs (name -> shape, dtype) per op where the generic 4-D float input does not fit
_X4 = ((1, 2, 4, 4), "float32")
_SPECIAL: dict[str, list[tuple[tuple[int, ...], str] | np.ndarray | None]] = {
    "Conv": [_X4, ((3, 2, 3, 3), "float32"), ((3,), "float32")],
    "ConvTranspose": [_X4, ((2, 3, 3, 3), "float32"), ((3,), "float32")],
    "BatchNormalization": [_X4] + [((2,), "float32")] * 4,
    "InstanceNormalization": [_X4, ((2,), "float32"), ((2,), "float32")],
    "Gemm": [((2, 3), "float32"), ((3, 4), "float32"), ((4,), "float32")],
    "MatMul": [((2, 3), "float32"), ((3, 4), "float32")],
    "PRelu": [_X4, ((2, 1, 1), "float32")],
    "Gather": [_X4, np.array([0, 1], np.int64)],
    "Expand": [_X4, np.array([1, 2, 4, 4], np.int64)],
    "Tile": [_X4, np.array([1, 1, 2, 1], np.int64)],
    "Reshape": [_X4, np.array([2, -1], np.int64)],
    "ConstantOfShape": [np.array([2, 3], np.int64)],
    "Pad": [_X4, np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), np.array(0, np.float32), None],
    "Range": [np.array(0, np.float32), np.array(5, np.float32), np.array(1, np.float32)],
    "Slice": [_X4, np.array([1], np.int64), np.array([3], np.int64), np.array([2], np.int64),
              np.array([1], np.int64)],
    "Unsqueeze": [_X4, np.array([0], np.int64)],
    "Squeeze": [((1, 2, 1, 4), "float32"), np.array([0], np.int64)],
    "Split": [_X4, None],
    "Dropout": [_X4, np.array(0.5, np.float32), np.array(False)],
    "Clip": [_X4, np.array(-1, np.float32), np.array(1, np.float32)],
    "Where": [((1, 2, 4, 4), "bool"), _X4, _X4],
    "Not": [((1, 2, 4, 4), "bool")], "And": [((2, 2), "bool")] * 2, "Or": [((2, 2), "bool")] * 2,
    "Constant": [],
}
_REQUIRED = {"Cast": {"to": TensorProto.FLOAT16}, "Concat": {"axis": 1}, "LRN": {"size": 3},
             "MaxPool": {"kernel_shape": [2, 2]}, "AveragePool": {"kernel_shape": [2, 2]},
             "Constant": {"value": helper.make_tensor("v", F, [2], [1.0, 2.0])}}
# attributes that have a default but make the node something else: not written
_SKIP_DEFAULTS = {("Split", "num_outputs"), ("Cast", "round_mode")}


def _schema_defaults(op_type: str, opset: int) -> dict[str, object]:
    s = defs.get_schema(op_type, opset)
    out: dict[str, object] = {}
    for name, a in s.attributes.items():
        if a.default_value.type and (op_type, name) not in _SKIP_DEFAULTS:
            out[name] = helper.get_attribute_value(a.default_value)
    out.update(_REQUIRED.get(op_type, {}))
    return out


def _versions(op_type: str) -> list[int]:
    """The opsets from 13 on at which ``op_type``'s schema changed (and 13's own)."""
    latest = defs.get_schema(op_type).since_version
    return sorted({max(13, defs.get_schema(op_type, v).since_version) for v in range(13, latest + 1)
                   if defs.has(op_type, v)})


# the converters of the core table (pyir/frontend/_onnx_ops.py); the other tables test their own
_CORE = sorted(o for o, fn in CONVERTERS.items() if fn.__module__ == "pyir.frontend._onnx_ops")


@pytest.mark.parametrize("op_type,opset", [(o, v) for o in _CORE for v in _versions(o)])
def test_every_converter_reads_every_schema_attribute_at_its_default(op_type: str, opset: int) -> None:
    """A node of each schema version since opset 13 with every attribute written at its ONNX
    default imports (exporters write defaults explicitly): no converter rejects a default."""
    s = defs.get_schema(op_type, opset)
    specs = _SPECIAL.get(op_type)
    if specs is None:
        specs = [_X4] * max(s.min_input, 1)  # the required inputs (variadic ones: one)
    names, vis, inits = [], [], []
    for i, spec in enumerate(specs):
        name = f"i{i}"
        if spec is None:
            names.append("")
            continue
        names.append(name)
        if isinstance(spec, np.ndarray):
            inits.append(onnx.numpy_helper.from_array(spec, name))
        else:
            vis.append(_vi(name, helper.np_dtype_to_tensor_dtype(np.dtype(spec[1])), list(spec[0])))
    while names and names[-1] == "":
        names.pop()
    defaults = _schema_defaults(op_type, opset)
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in defaults.items()}
    n_out = 2 if op_type == "Split" else 1
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(n_out)], **attrs)
    mod = from_onnx(_model([node], vis, [f"y{i}" for i in range(n_out)], opset, inits))
    assert isinstance(mod["main"].body.checked_type, (pyir.TensorType, pyir.TupleType))


def test_symbolic_batch_cnn_matches_the_reference() -> None:
    """A CNN with a named dynamic batch (Conv, BatchNormalization, pools, Flatten, Gemm, Softmax,
    Gather, Slice, Unsqueeze, Concat, Reshape) imports with the symbol in its types and matches
    onnx.reference at two batch sizes."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(0)

    def f32(n: str, a: np.ndarray) -> object:
        return numpy_helper.from_array(a.astype(np.float32), n)

    def i64(n: str, *v: int) -> object:
        return numpy_helper.from_array(np.asarray(v, np.int64), n)

    N = helper.make_node
    nodes = [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             N("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"]), N("Relu", ["bn"], ["r"]),
             N("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             N("AveragePool", ["p"], ["p2"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
             N("Slice", ["p2", "st", "en", "sa"], ["sl"]),
             N("GlobalAveragePool", ["sl"], ["g"]), N("Flatten", ["g"], ["f"]),
             N("Gemm", ["f", "gw", "gb"], ["o"], transB=1), N("Softmax", ["o"], ["sm"], axis=1),
             N("Gather", ["sm", "idx"], ["ga"], axis=1), N("Unsqueeze", ["ga", "ax"], ["u"]),
             N("Concat", ["u", "u"], ["cc"], axis=1), N("Reshape", ["cc", "rs"], ["y"])]
    inits = [f32("w", rng.standard_normal((4, 3, 3, 3))), f32("b", rng.standard_normal(4)),
             f32("s", np.ones(4) * 1.5), f32("bb", np.zeros(4) + 0.1), f32("m", np.zeros(4)),
             f32("v", np.ones(4)), f32("gw", rng.standard_normal((5, 4))), f32("gb", rng.standard_normal(5)),
             i64("st", 1), i64("en", 1 << 62), i64("sa", 3), i64("idx", 0, -1), i64("ax", 1),
             i64("rs", -1, 2)]
    m = _model(nodes, [_vi("x", F, ["N", 3, 8, 8])], ["y"], 17, inits)
    mod = from_onnx(m)
    n = pyir.sym("N")
    assert mod["main"].params[0].type_annotation.shape == (n, 3, 8, 8)
    assert mod["main"].body.checked_type.shape[1] == 2
    ref = ReferenceEvaluator(m)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        np.testing.assert_allclose(pyir.evaluate(mod, x), ref.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_symbolic_shape_arithmetic_keeps_reshapes_static() -> None:
    """A transformer-style head split over a dynamic (batch, seq): Shape, Gather, Unsqueeze,
    Concat, Mul and Div of the symbolic sizes feed Reshapes that stay static ``reshape`` with
    symbolic result types (no dyn.reshape), and the values match onnx.reference."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    def i64(n: str, *v: int) -> object:
        return numpy_helper.from_array(np.asarray(v, np.int64), n)

    N = helper.make_node
    nodes = [N("Shape", ["x"], ["sh"]), N("Gather", ["sh", "zero"], ["b"]), N("Gather", ["sh", "one"], ["s"]),
             N("Unsqueeze", ["b", "ax"], ["b1"]), N("Unsqueeze", ["s", "ax"], ["s1"]),
             N("Concat", ["b1", "s1", "heads", "hd"], ["split_shape"], axis=0),
             N("Reshape", ["x", "split_shape"], ["xh"]), N("Transpose", ["xh"], ["xt"], perm=[0, 2, 1, 3]),
             N("Softmax", ["xt"], ["p"], axis=-1), N("Transpose", ["p"], ["pt"], perm=[0, 2, 1, 3]),
             N("Mul", ["b1", "s1"], ["bs"]), N("Div", ["width", "two"], ["half"]),
             N("Concat", ["bs", "half", "two"], ["flat_shape"], axis=0),
             N("Reshape", ["pt", "flat_shape"], ["y"])]
    inits = [numpy_helper.from_array(np.asarray(0, np.int64), "zero"),  # 0-D gather indices
             numpy_helper.from_array(np.asarray(1, np.int64), "one"),
             i64("ax", 0), i64("heads", 4), i64("hd", 2), i64("width", 8), i64("two", 2)]
    m = _model(nodes, [_vi("x", F, ["batch", "seq", 8])], ["y"], 17, inits)
    mod = from_onnx(m)
    calls = {c.op.name for c in pyir.post_order(mod["main"]) if isinstance(c, pyir.Call)}
    assert "reshape" in calls and not any(c.startswith("dyn.") for c in calls)
    b, s = pyir.sym("batch"), pyir.sym("seq")
    assert mod["main"].body.checked_type == pyir.TensorType((b * s, 4, 2), "float32")
    ref = ReferenceEvaluator(m)
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    np.testing.assert_allclose(pyir.evaluate(mod, x), ref.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_bind_shapes_then_dynamic_to_static_makes_an_imported_dynamic_model_static() -> None:
    """Expand, ConstantOfShape and Tile to shapes computed from a symbolic input's Shape import as
    dyn operators; BindShapes then DynamicToStatic make the program static with the same values."""
    from onnx import numpy_helper

    from pyir.transform import BindShapes

    N = helper.make_node
    nodes = [N("Shape", ["x"], ["sh"]), N("ConstantOfShape", ["sh"], ["ones"],
                                          value=helper.make_tensor("v", F, [1], [1.0])),
             N("Add", ["x", "ones"], ["xo"]), N("Expand", ["b", "sh"], ["be"]), N("Mul", ["xo", "be"], ["m"]),
             N("Tile", ["m", "reps"], ["y"])]
    inits = [numpy_helper.from_array(np.arange(3, dtype=np.float32).reshape(1, 3), "b"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "reps")]
    mod = from_onnx(_model(nodes, [_vi("x", F, ["n", 3])], ["y"], 13, inits))
    calls = {c.op.name for c in pyir.post_order(mod["main"]) if isinstance(c, pyir.Call)}
    assert {"dyn.full", "dyn.expand"} <= calls
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    want = np.tile((x + 1) * np.arange(3, dtype=np.float32), (1, 2))
    np.testing.assert_allclose(pyir.evaluate(mod, x), want, rtol=1e-6)
    bound = BindShapes({"n": 2})(mod)
    static = check_pass(DynamicToStatic(), bound)
    calls = {c.op.name for c in pyir.post_order(static["main"]) if isinstance(c, pyir.Call)}
    assert not any(c.startswith("dyn.") or c == "shape_of" for c in calls)
    assert static["main"].body.checked_type == pyir.TensorType((2, 6), "float32")
    np.testing.assert_allclose(pyir.evaluate(static, x), want, rtol=1e-6)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    {"kernel_shape": [2, 3], "strides": [1, 2], "dilations": [2, 1], "storage_order": 1},
    {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1, "pads": [0, 1, 1, 0]},
])
def test_maxpool_indices_output_matches_the_reference(attrs: dict[str, object]) -> None:
    """MaxPool's second output (the flat indices of each window's maximum, row- or column-major)
    matches onnx.reference; storage_order alone (one output) is accepted."""
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(3).permutation(2 * 3 * 7 * 6).astype(np.float32).reshape(2, 3, 7, 6)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    m = _model([node], [_vi("x", F, [2, 3, 7, 6])], ["y", "i"], 12)
    y, i = pyir.evaluate(from_onnx(m), x)
    want_y, want_i = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(i, want_i)
    assert i.dtype == np.int64
    one = _model([helper.make_node("MaxPool", ["x"], ["y"], **attrs)], [_vi("x", F, [2, 3, 7, 6])], ["y"], 12)
    np.testing.assert_array_equal(pyir.evaluate(from_onnx(one), x), want_y)


def test_run_time_arguments_of_ml_dtypes_floats() -> None:
    """Run-time Pad values and Range bounds of an ml_dtypes float (bfloat16) are scalars of a
    float kind (pyir.ir.types.dtype_kind), not refused for numpy's "V" kind."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = np.dtype(ml_dtypes.bfloat16)
    _, (y,) = _one("Range", {"a": np.array(1, bf), "b": np.array(3, bf), "c": np.array(0.5, bf)}, opset=13)
    assert y.dtype == bf
    np.testing.assert_array_equal(y.astype(np.float32), [1.0, 1.5, 2.0, 2.5])
    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(bf)
    _, (y,) = _one("Pad", {"x": x, "p": np.array([0, 1, 0, 0], np.int64), "v": np.array(-1, bf)}, opset=18)
    np.testing.assert_array_equal(y.astype(np.float32), np.pad(x.astype(np.float32), ((0, 0), (1, 0)),
                                                                constant_values=-1))
    _, (y,) = _one("ReduceMax", {"x": np.zeros((0, 2), bf)}, opset=18, const={"a": np.array([0], np.int64)},
                   keepdims=0)
    assert y.dtype == bf and np.all(y.astype(np.float32) == -np.inf)
