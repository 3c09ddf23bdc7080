"""ONNX casts (float8 saturation, FLOAT8E8M0 rounding, CastLike), quantization (QuantizeLinear,
DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv)
and bit operators, imported and evaluated against onnx.reference; the qnn and bitwise operators'
type errors; the standard passes leave the results unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.frontend.onnx import FrontendError, from_onnx
from pyir.op import qnn
from pyir.testing import check_pass
from pyir.transform import FoldConstant, FuseOps, Sequential, SimplifyExpr

onnx = pytest.importorskip("onnx")  # a test dependency: installed in CI, so this never skips there
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

N = helper.make_node


def model(nodes: list, inputs: dict[str, np.ndarray], outputs: list[str], opset: int = 21,
          inits: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def run(nodes: list, inputs: dict[str, np.ndarray], opset: int = 21,
        inits: dict[str, np.ndarray] | None = None, outputs: list[str] | None = None,
        exact: bool = True) -> list[np.ndarray]:
    """pyir equals onnx.reference on the model (same dtype and shape; exactly unless ``exact`` is
    False); returns pyir's outputs."""
    outputs = outputs or [nodes[-1].output[0]]
    m = model(nodes, inputs, outputs, opset, inits)
    want = ReferenceEvaluator(m).run(None, inputs)
    got = pyir.evaluate(from_onnx(m), *inputs.values())
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact:
            np.testing.assert_array_equal(g.astype(np.float64), w.astype(np.float64))
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-4, atol=1e-5)
    return got


def rnd(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# -- Cast ------------------------------------------------------------------------------------------

BIG = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 0.1, 300.0, -0.0], np.float32)


def test_cast_float8_saturates_by_default() -> None:
    """Bug 4: Cast(to=FLOAT8E5M2) of 1e6 is 57344 with the default saturate=1 (it gave inf)."""
    (y,) = run([N("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E5M2)], {"x": BIG}, opset=19)
    assert y.dtype == ml_dtypes.float8_e5m2
    assert y.astype(np.float32)[:4].tolist() == [57344.0, -57344.0, 57344.0, -57344.0]
    assert np.isnan(y.astype(np.float32)[4])


@pytest.mark.parametrize("to", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
                                TensorProto.FLOAT8E5M2FNUZ])
@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("src", ["float32", "float16"])
def test_cast_float8_saturate_modes(to: int, saturate: int, src: str) -> None:
    """Each float8 target, saturating or not (then overflow is inf where the format has it, else
    NaN), from float32 and float16, as the reference computes."""
    with np.errstate(over="ignore"):  # 1e6 is inf in float16
        x = np.concatenate([BIG, rnd(20, scale=100.0)]).astype(src)
    run([N("Cast", ["x"], ["y"], to=to, saturate=saturate)], {"x": x}, opset=19)


@pytest.mark.parametrize("to", [TensorProto.BFLOAT16, TensorProto.INT4, TensorProto.UINT4,
                                TensorProto.FLOAT4E2M1, TensorProto.FLOAT16, TensorProto.INT8])
def test_cast_other_targets(to: int) -> None:
    x = rnd(16, scale=4.0)
    run([N("Cast", ["x"], ["y"], to=to)], {"x": x}, opset=23)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [0, 1])
def test_cast_to_e8m0_rounds_the_exponent(round_mode: str, saturate: int) -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.0, 1.5, 3.0, 0.75, 2.0 ** 127 * 1.5, 2.0 ** 127, 1e-40, 0.0,
                  -2.0, 1.25, 1.75], np.float32)
    (y,) = run([N("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0, saturate=saturate, round_mode=round_mode)],
               {"x": x}, opset=24)
    want = numpy_helper.to_float8e8m0(x, bool(saturate), round_mode)
    assert y.view(np.uint8).tolist() == want.view(np.uint8).tolist()


def test_cast_like_and_string_names() -> None:
    """CastLike takes the second input's dtype (and saturates); Cast-1 names its type."""
    like = np.zeros(1, ml_dtypes.float8_e4m3fn)
    (y,) = run([N("CastLike", ["x", "t"], ["y"])], {"x": BIG, "t": like}, opset=19)
    assert y.dtype == ml_dtypes.float8_e4m3fn and y.astype(np.float32)[0] == 448.0
    m = model([N("Cast", ["x"], ["y"], to="INT32")], {"x": rnd(3, scale=5.0)}, ["y"], opset=1)
    assert pyir.evaluate(from_onnx(m), rnd(3, scale=5.0)).dtype == np.int32


def test_cast_rejects_bad_attributes() -> None:
    for attrs, msg in (({"to": TensorProto.STRING}, "STRING is not supported"),
                       ({"to": 99}, "unknown ONNX element type"),
                       ({"to": TensorProto.FLOAT8E5M2, "saturate": 2}, "saturate=2"),
                       ({"to": TensorProto.FLOAT8E8M0, "round_mode": "odd"}, "round_mode='odd'")):
        m = model([N("Cast", ["x"], ["y"], **attrs)], {"x": rnd(2)}, ["y"], opset=24)
        with pytest.raises(FrontendError, match="node 'y' \\(Cast\\)") as e:
            from_onnx(m)
        assert msg in str(e.value)


# -- QuantizeLinear / DequantizeLinear -------------------------------------------------------------


@pytest.mark.parametrize("zp_dtype", [np.uint8, np.int8, np.uint16, np.int16, ml_dtypes.int4,
                                      ml_dtypes.uint4])
def test_quantize_per_tensor_and_axis(zp_dtype: type) -> None:
    x = rnd(2, 3, 4, scale=50.0)
    for axis, scale, zp in ((1, np.array(0.5, np.float32), np.array(3, zp_dtype)),
                            (1, np.array([0.5, 2.0, 7.0], np.float32), np.array([1, 0, 2], zp_dtype)),
                            (-1, np.array([0.5, 2.0, 7.0, 0.1], np.float32),
                             np.array([1, 0, 2, 3], zp_dtype))):
        (q,) = run([N("QuantizeLinear", ["x", "s", "z"], ["y"], axis=axis)], {"x": x},
                   inits={"s": scale, "z": zp})
        run([N("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)], {"q": q}, inits={"s": scale, "z": zp})


def test_quantize_blocked_and_output_dtype() -> None:
    """block_size > 0: one scale per block along axis (the last block short); no zero point:
    output_dtype (else uint8) and a zero zero point."""
    x = rnd(3, 10, scale=20.0)
    s = np.abs(rnd(3, 4, seed=1)) + 0.1
    for out in (TensorProto.INT8, TensorProto.UINT4, TensorProto.FLOAT8E4M3FN):
        (q,) = run([N("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=3, output_dtype=out)],
                   {"x": x}, inits={"s": s})
        assert q.dtype == helper.tensor_dtype_to_np_dtype(out)
        run([N("DequantizeLinear", ["q", "s"], ["y"], axis=1, block_size=3)], {"q": q}, inits={"s": s})
    (q,) = run([N("QuantizeLinear", ["x", "s"], ["y"])], {"x": x}, inits={"s": np.array(0.2, np.float32)})
    assert q.dtype == np.uint8


@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize_float8(saturate: int) -> None:
    x = np.concatenate([BIG[:4], rnd(8, scale=300.0)])
    z = np.zeros((), ml_dtypes.float8_e4m3fn)
    (q,) = run([N("QuantizeLinear", ["x", "s", "z"], ["y"], saturate=saturate)], {"x": x},
               inits={"s": np.array(0.5, np.float32), "z": z}, opset=19)
    assert q.dtype == ml_dtypes.float8_e4m3fn


def test_quantize_precision_and_float16() -> None:
    """opset 23: a float16 input with a float32 scale, and ``precision`` (the dtype to divide in);
    dequantize to output_dtype."""
    x = rnd(4, 5, scale=30.0).astype(np.float16)
    inits = {"s": np.array(0.25, np.float32), "z": np.array(2, np.int8)}
    (q,) = run([N("QuantizeLinear", ["x", "s", "z"], ["y"], precision=TensorProto.FLOAT)], {"x": x}, opset=23,
               inits=inits)
    run([N("DequantizeLinear", ["q", "s", "z"], ["y"], output_dtype=TensorProto.FLOAT16)], {"q": q}, opset=23,
        inits=inits)


def test_quantize_rejects_bad_input() -> None:
    x = rnd(2, 3)
    bad = [([N("QuantizeLinear", ["x", "s", "z"], ["y"], output_dtype=TensorProto.INT8)],
            {"s": np.array(0.5, np.float32), "z": np.array(0, np.uint8)}, "differs from the zero point"),
           ([N("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TensorProto.INT32)],
            {"s": np.array(0.5, np.float32)}, "quantizing to int32 is not supported"),
           ([N("QuantizeLinear", ["x", "s"], ["y"], axis=1)],
            {"s": np.array([0.5, 1.0], np.float32)},
            "TypeCheckError: qnn.quantize: scale of shape (2,) does not match axis 1 of data (2, 3)")]
    for nodes, inits, msg in bad:
        with pytest.raises(FrontendError, match="QuantizeLinear") as e:
            from_onnx(model(nodes, {"x": x}, ["y"], inits=inits))
        assert msg in str(e.value)


def test_qnn_type_errors_name_op_and_shapes() -> None:
    x = pyir.var("x", shape=(2, 3, 4))
    s = pyir.var("s", shape=(2, 2))
    z = pyir.const(np.zeros((), np.int8))
    with pytest.raises(pyir.TypeCheckError, match=r"qnn.quantize.*blocked quantization must have the data"):
        qnn.quantize(x, s, z, out_dtype="int8", block_size=2).checked_type
    with pytest.raises(pyir.TypeCheckError, match=r"zero_point dtype int8 differs from out_dtype uint8"):
        qnn.quantize(x, pyir.const(np.float32(1)), z).checked_type
    with pytest.raises(pyir.AttrError, match="out_dtype"):
        qnn.quantize(x, pyir.const(np.float32(1)), z, out_dtype="float32")
    a = pyir.var("a", shape=(2, 3), dtype="uint8")
    b = pyir.var("b", shape=(4, 5), dtype="uint8")
    zu = pyir.const(np.zeros((), np.uint8))
    with pytest.raises(pyir.TypeCheckError, match=r"inner dimensions differ: \(2, 3\) @ \(4, 5\)"):
        qnn.matmul_integer(a, b, zu, zu).checked_type
    w = pyir.var("w", shape=(4, 2, 3, 3), dtype="uint8")
    xi = pyir.var("xi", shape=(1, 3, 5, 5), dtype="uint8")
    with pytest.raises(pyir.TypeCheckError, match=r"data has 3 channels"):
        qnn.conv_integer(xi, w, zu, zu).checked_type


def test_symbolic_quantize_and_matmul() -> None:
    """Symbolic dimensions go through the relations."""
    x = pyir.var("x", shape=("n", 4))
    q = qnn.quantize(x, pyir.var("s", shape=(4,)), pyir.var("z", shape=(4,), dtype="int8"), axis=1,
                     out_dtype="int8")
    assert q.checked_type == pyir.TensorType(("n", 4), "int8")
    zi = pyir.const(np.zeros((), np.int8))
    mm = qnn.matmul_integer(q, pyir.var("w", shape=(4, "m"), dtype="int8"), zi, zi)
    assert mm.checked_type == pyir.TensorType(("n", "m"), "int32")


# -- integer products and convolutions ---------------------------------------------------------------


def test_dynamic_quantize_linear() -> None:
    for x in (rnd(3, 4, scale=3.0), np.abs(rnd(5)) + 1.0, -np.abs(rnd(5)) - 1.0):
        run([N("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x}, outputs=["y", "s", "z"])


def test_matmul_integer_per_row_and_column() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(-128, 127, (4, 5)).astype(np.int8)
    run([N("MatMulInteger", ["a", "b", "az", "bz"], ["y"])], {"a": a, "b": b},
        inits={"az": np.array(12, np.uint8), "bz": np.array([1, -2, 3, 0, 5], np.int8)})
    run([N("MatMulInteger", ["a", "b"], ["y"])], {"a": a, "b": b})
    # per-row a zero point (1-D of a's rows), checked by hand (the reference broadcasts it by columns)
    a2 = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    azr = np.array([1, 2, 3], np.uint8)
    m = model([N("MatMulInteger", ["a", "b", "az"], ["y"])], {"a": a2, "b": b}, ["y"], inits={"az": azr})
    want = (a2.astype(np.int32) - azr[:, None]) @ b.astype(np.int32)
    np.testing.assert_array_equal(pyir.evaluate(from_onnx(m), a2, b), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_qlinear_matmul(dtype: type) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 255, (2, 4, 3)).astype(np.uint8)
    b = rng.integers(0, 255, (3, 2)).astype(np.uint8)
    inits = {"as": np.array(0.0066, dtype), "az": np.array(113, np.uint8), "bs": np.array(0.00705, dtype),
             "bz": np.array(114, np.uint8), "ys": np.array(0.0107, dtype), "yz": np.array(118, np.uint8)}
    run([N("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])], {"a": a, "b": b},
        inits=inits)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1]}, {"strides": [2, 1], "dilations": [1, 2]},
                                   {"auto_pad": "SAME_UPPER", "group": 2}, {"kernel_shape": [3, 3]}])
def test_conv_integer(attrs: dict) -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(0, 255, (1, 4, 6, 7)).astype(np.uint8)
    w = rng.integers(0, 255, (4, 4 // attrs.get("group", 1), 3, 3)).astype(np.uint8)
    run([N("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)], {"x": x, "w": w},
        inits={"xz": np.array(100, np.uint8), "wz": np.array(7, np.uint8)})


def test_conv_integer_1d_3d_and_per_channel_zero_point() -> None:
    rng = np.random.default_rng(3)
    for xs, ws in (((2, 3, 9), (2, 3, 3)), ((1, 2, 4, 5, 6), (3, 2, 2, 2, 3))):
        x = rng.integers(0, 255, xs).astype(np.uint8)
        w = rng.integers(0, 255, ws).astype(np.uint8)
        wz = np.arange(ws[0], dtype=np.uint8)
        m = model([N("ConvInteger", ["x", "w", "xz", "wz"], ["y"])], {"x": x, "w": w}, ["y"],
                  inits={"xz": np.array(3, np.uint8), "wz": wz})
        got = pyir.evaluate(from_onnx(m), x, w)
        xf = x.astype(np.int64) - 3
        wf = w.astype(np.int64) - wz.reshape((-1,) + (1,) * (w.ndim - 1))
        nd = x.ndim - 2
        from numpy.lib.stride_tricks import sliding_window_view
        v = sliding_window_view(xf, ws[2:], axis=tuple(range(2, 2 + nd)))
        want = np.tensordot(v, wf, axes=([1] + list(range(2 + nd, 2 + 2 * nd)), list(range(1, 2 + nd))))
        np.testing.assert_array_equal(got, np.moveaxis(want, -1, 1))
        assert got.dtype == np.int32


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv(per_channel: bool) -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8)
    ws = np.array([0.01, 0.02, 0.005], np.float32) if per_channel else np.array(0.01, np.float32)
    wz = np.array([100, 120, 127], np.uint8) if per_channel else np.array(110, np.uint8)
    inits = {"xs": np.array(0.02, np.float32), "xz": np.array(120, np.uint8), "ws": ws, "wz": wz,
             "ys": np.array(0.5, np.float32), "yz": np.array(90, np.uint8),
             "b": np.array([100, -200, 300], np.int32)}
    run([N("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1])],
        {"x": x, "w": w}, inits=inits)
    del inits["b"]
    run([N("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])], {"x": x, "w": w},
        inits=inits)


# -- bit operators ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int32])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(dtype: type, direction: str) -> None:
    """Shifts by amounts in range and out of it (0, or -1 for negative right shifts)."""
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    x = np.array([1, 7, info.max, info.min, 3, 5], dtype)
    y = np.array([0, 1, 3, bits - 1, bits, bits + 3], dtype)
    run([N("BitShift", ["x", "y"], ["z"], direction=direction)], {"x": x, "y": y}, opset=11)


@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise_binary(op_type: str) -> None:
    rng = np.random.default_rng(5)
    run([N(op_type, ["a", "b"], ["y"])], {"a": rng.integers(-100, 100, (2, 3, 4)).astype(np.int16),
                                          "b": rng.integers(-100, 100, (3, 4)).astype(np.int16)}, opset=18)


def test_bitwise_not_xor_and_bitcast() -> None:
    rng = np.random.default_rng(6)
    run([N("BitwiseNot", ["a"], ["y"])], {"a": rng.integers(0, 255, (3, 4)).astype(np.uint8)}, opset=18)
    run([N("Xor", ["a", "b"], ["y"])], {"a": rng.integers(0, 2, (3, 4)).astype(bool),
                                        "b": rng.integers(0, 2, (4,)).astype(bool)}, opset=7)
    for x, to in ((rnd(2, 3), TensorProto.INT32), (np.array(-1.5, np.float32), TensorProto.UINT32),
                  (np.arange(4, dtype=np.int16), TensorProto.FLOAT16),
                  (np.arange(3, dtype=np.uint8), TensorProto.INT8)):
        run([N("BitCast", ["x"], ["y"], to=to)], {"x": x}, opset=26)
    with pytest.raises(FrontendError, match="same width"):
        from_onnx(model([N("BitCast", ["x"], ["y"], to=TensorProto.INT64)], {"x": rnd(2)}, ["y"], opset=26))


def test_bit_operator_type_errors() -> None:
    f = pyir.var("f", shape=(2,))
    i = pyir.var("i", shape=(2,), dtype="int32")
    u = pyir.var("u", shape=(3,), dtype="int32")
    with pytest.raises(pyir.TypeCheckError, match="must be an integer tensor"):
        op.bitwise_and(f, f).checked_type
    with pytest.raises(pyir.TypeCheckError, match=r"shapes \(2,\) and \(3,\) do not broadcast"):
        op.left_shift(i, u).checked_type
    with pytest.raises(pyir.TypeCheckError, match="needs bool inputs"):
        op.logical_xor(i, i).checked_type
    with pytest.raises(pyir.TypeCheckError, match="sub-byte"):
        op.bitcast(pyir.var("q", shape=(2,), dtype="int4"), dtype="uint4").checked_type


# -- passes -----------------------------------------------------------------------------------------------


def test_standard_passes_keep_quantized_results() -> None:
    """A quantize -> integer matmul -> dequantize block through FoldConstant, SimplifyExpr and
    FuseOps: same values, complete lineage."""
    x = pyir.var("x", shape=(3, 4))
    s = pyir.const(np.float32(0.05))
    z = pyir.const(np.int8(0))
    w = pyir.const(np.random.default_rng(7).integers(-20, 20, (4, 5)).astype(np.int8))
    q = qnn.quantize(x, s, z, out_dtype="int8")
    acc = qnn.matmul_integer(q, w, z, z)
    y = qnn.dequantize(acc, pyir.const(np.float32(0.0025)), pyir.const(np.int32(0)))
    sh = op.right_shift(op.bitwise_and(acc, pyir.const(np.int32(0xFF))), pyir.const(np.int32(2)))
    mod = pyir.Module({"main": pyir.Function([x], pyir.Tuple([op.nn.relu(y), sh]))})
    out = check_pass(Sequential([FoldConstant(), SimplifyExpr(), FuseOps()]), mod, idempotent=False)
    assert "qnn.matmul_integer" in out.astext()
    text = mod.astext()
    assert pyir.parse(text).astext() == text
