"""ONNX converters for casts, quantization and bit operators.

Cast and CastLike follow ONNX's rules (:func:`cast_to`: float8 saturation, FLOAT8E8M0
rounding); QuantizeLinear,
DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
QLinearConv become ``qnn.*`` operators (an absent zero point becomes a zero constant);
BitShift, BitwiseAnd/Or/Xor/Not, Xor and BitCast the operators of ``pyir.op.bitwise``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import op
from ..errors import WellFormedError
from ..ir.expr import Constant, Expr, TupleGetItem
from ..ir.types import dtype_kind, dtype_range, normalize_dtype
from ..op import qnn
from ._onnx_ops import _axis, _pads, _reg, _reshape, dtype_of, shape_of
from .onnx import Ctx, FrontendError, _Attrs

_SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def onnx_dtype(to: Any) -> str:
    """The pyir dtype of an ONNX element type: a ``TensorProto`` code, or its name (Cast-1)."""
    import onnx

    try:
        code = int(to) if not isinstance(to, str) else onnx.TensorProto.DataType.Value(to.upper())
        dt = onnx.helper.tensor_dtype_to_np_dtype(code)
    except (ValueError, KeyError, TypeError):
        raise FrontendError(f"unknown ONNX element type {to!r}") from None
    try:
        return normalize_dtype(dt)
    except WellFormedError:
        name = onnx.TensorProto.DataType.Name(code)
        raise FrontendError(f"ONNX element type {name} is not supported") from None


def cast_to(x: Expr, dtype: str, saturate: Any = 1, round_mode: Any = "up") -> Expr:
    """ONNX's Cast of ``x`` to ``dtype``: float8 targets saturate (``saturate=1``, the default:
    out-of-range values and infinities become the largest finite value of their sign, as
    ``clip`` then ``cast``); FLOAT8E8M0 rounds the exponent by ``round_mode``; otherwise
    numpy's conversion (round to nearest even; NaN and inf as the target holds them; float8
    without inf gives NaN)."""
    if saturate not in (0, 1):
        raise FrontendError(f"saturate={saturate!r} (0 or 1)")
    if round_mode not in ("up", "down", "nearest"):
        raise FrontendError(f"round_mode={round_mode!r} (up, down or nearest)")
    if dtype == "float8_e8m0fnu":  # a power of two: the exponent, rounded by round_mode
        return to_e8m0(x, bool(saturate), round_mode)
    if dtype in _SATURATING and saturate and dtype_of(x) != "bool" and dtype_kind(dtype_of(x)) != "c":
        lo, hi = dtype_range(dtype)
        x = op.clip(x, a_min=lo, a_max=hi)
    return op.cast(x, dtype=dtype)


@_reg("Cast")
def _cast(cx: Ctx, a: _Attrs) -> Expr:
    return cast_to(cx.x(0), onnx_dtype(a.get("to")), a.get("saturate", 1), a.get("round_mode", "up"))


def _zero(dtype: str) -> Constant:
    return Constant(np.zeros((), dtype=dtype))


def _zp(cx: Ctx, i: int, dtype: str) -> Expr:
    """Optional zero point input ``i``, or a zero of ``dtype``."""
    return cx.x(i) if cx.has(i) else _zero(dtype)


def _flag(a: _Attrs, name: str, default: int = 1) -> int:
    v = a.get(name, default)
    if v not in (0, 1):
        raise FrontendError(f"{name}={v!r} (0 or 1)")
    return int(v)


def _u32(v: int) -> Constant:
    return Constant(np.array(v, dtype=np.uint32))


def _bits_set(bits: Expr, mask: int) -> Expr:
    return op.not_equal(op.bitwise_and(bits, _u32(mask)), _u32(0))


def to_e8m0(x: Expr, saturate: bool, round_mode: str) -> Expr:
    """ONNX's cast to FLOAT8E8M0 (an 8-bit exponent) as bit operations on the float32 bits:
    NaN and infinities give NaN (0xFF); ``round_mode`` "up" rounds any fraction up, "nearest"
    by guard/round/sticky bits, "down" truncates; ``saturate`` keeps the largest exponent
    from rounding up into NaN."""
    bits = op.bitcast(op.cast(x, dtype="float32") if dtype_of(x) != "float32" else x, dtype="uint32")
    e = op.bitwise_and(op.right_shift(bits, _u32(23)), _u32(0xFF))
    special = op.equal(e, _u32(0xFF))  # NaN and infinities give NaN
    up: Expr | None = None
    if round_mode == "up":
        up = _bits_set(bits, 0x7FFFFF)
    elif round_mode == "nearest":
        rest = op.logical_or(op.logical_or(_bits_set(bits, 0x200000), _bits_set(bits, 0x1FFFFF)),
                             op.greater(e, _u32(0)))
        up = op.logical_and(_bits_set(bits, 0x400000), rest)
    if up is not None:
        if saturate:
            up = op.logical_and(up, op.not_equal(e, _u32(0xFE)))
        e = op.add(e, op.cast(up, dtype="uint32"))
    e = op.where(special, _u32(0xFF), e)
    return op.bitcast(op.cast(e, dtype="uint8"), dtype="float8_e8m0fnu")


@_reg("CastLike")
def _cast_like(cx: Ctx, a: _Attrs) -> Expr:
    return cast_to(cx.x(0), dtype_of(cx.x(1)), a.get("saturate", 1), a.get("round_mode", "up"))


def _block_size(a: _Attrs) -> int:
    bs = int(a.get("block_size", 0))
    if bs < 0:
        raise FrontendError(f"block_size={bs} (must be >= 0)")
    return bs


@_reg("QuantizeLinear")
def _quantize_linear(cx: Ctx, a: _Attrs) -> Expr:
    x, scale = cx.x(0), cx.x(1)
    out = a.get("output_dtype", 0)
    out_dt = onnx_dtype(out) if out else ""
    if cx.has(2):
        zp = cx.x(2)
        if out_dt and dtype_of(zp) != out_dt:
            raise FrontendError(f"output_dtype {out_dt} differs from the zero point's dtype {dtype_of(zp)}")
        out_dt = dtype_of(zp)
    else:
        out_dt = out_dt or "uint8"
        zp = _zero(out_dt)
    if out_dt not in qnn.QUANT_DTYPES:
        raise FrontendError(f"quantizing to {out_dt} is not supported (one of {', '.join(qnn.QUANT_DTYPES)})")
    prec = a.get("precision", 0)
    return qnn.quantize(x, scale, zp, axis=int(a.get("axis", 1)), block_size=_block_size(a), out_dtype=out_dt,
                        saturate=bool(_flag(a, "saturate")), precision=onnx_dtype(prec) if prec else "")


@_reg("DequantizeLinear")
def _dequantize_linear(cx: Ctx, a: _Attrs) -> Expr:
    x, scale = cx.x(0), cx.x(1)
    out = a.get("output_dtype", 0)
    return qnn.dequantize(x, scale, _zp(cx, 2, dtype_of(x)), axis=int(a.get("axis", 1)),
                          block_size=_block_size(a), out_dtype=onnx_dtype(out) if out else "")


@_reg("DynamicQuantizeLinear")
def _dynamic_quantize_linear(cx: Ctx, a: _Attrs) -> list[Expr]:
    t = qnn.dynamic_quantize(cx.x(0))
    return [TupleGetItem(t, i) for i in range(3)]


@_reg("MatMulInteger")
def _matmul_integer(cx: Ctx, a: _Attrs) -> Expr:
    x, w = cx.x(0), cx.x(1)
    return qnn.matmul_integer(x, w, _zp(cx, 2, dtype_of(x)), _zp(cx, 3, dtype_of(w)))


@_reg("QLinearMatMul")
def _qlinear_matmul(cx: Ctx, a: _Attrs) -> Expr:
    return qnn.qlinear_matmul(*(cx.x(i) for i in range(8)))


def _conv_attrs(cx: Ctx, a: _Attrs, x: Expr, w: Expr) -> dict[str, Any]:
    xs, ws = shape_of(x), shape_of(w)
    if len(xs) < 3 or len(ws) != len(xs):
        raise FrontendError(f"input {xs} and weight {ws} must have the same rank >= 3")
    nd = len(xs) - 2
    k = a.ints("kernel_shape", tuple(ws[2:]))
    if tuple(k) != tuple(ws[2:]):
        raise FrontendError(f"kernel_shape {k} differs from the weight's {tuple(ws[2:])}")
    s = a.ints("strides", (1,) * nd)
    d = a.ints("dilations", (1,) * nd)
    if len(s) != nd or len(d) != nd:
        raise FrontendError(f"strides {s} and dilations {d} must hold {nd} ints")
    b, e = _pads(a, xs[2:], k, s, d)
    return {"strides": s, "padding": tuple(b) + tuple(e), "dilation": d, "groups": int(a.get("group", 1))}


@_reg("ConvInteger")
def _conv_integer(cx: Ctx, a: _Attrs) -> Expr:
    x, w = cx.x(0), cx.x(1)
    return qnn.conv_integer(x, w, _zp(cx, 2, dtype_of(x)), _zp(cx, 3, dtype_of(w)),
                            **_conv_attrs(cx, a, x, w))


@_reg("QLinearConv")
def _qlinear_conv(cx: Ctx, a: _Attrs) -> Expr:
    ins = [cx.x(i) for i in range(8)]
    w = ins[3]
    bias = cx.x(8) if cx.has(8) else Constant(np.zeros(shape_of(w)[0], dtype=np.int32))
    x, xs, xz, _, ws, wz, ys, yz = ins
    return qnn.qlinear_conv(x, xs, xz, w, ws, wz, ys, yz, bias, **_conv_attrs(cx, a, x, w))


# -- bit operators -------------------------------------------------------------------------------------

_BIT_BINARY: dict[str, Callable[..., Expr]] = {
    "BitwiseAnd": op.bitwise_and, "BitwiseOr": op.bitwise_or, "BitwiseXor": op.bitwise_xor,
}


@_reg(*_BIT_BINARY)
def _bitwise(cx: Ctx, a: _Attrs) -> Expr:
    return _BIT_BINARY[cx.node.op_type](cx.x(0), cx.x(1))


@_reg("BitwiseNot")
def _bitwise_not(cx: Ctx, a: _Attrs) -> Expr:
    return op.bitwise_not(cx.x(0))


@_reg("BitShift")
def _bitshift(cx: Ctx, a: _Attrs) -> Expr:
    direction = a.get("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise FrontendError(f"direction={direction!r} (LEFT or RIGHT)")
    fn = op.left_shift if direction == "LEFT" else op.right_shift
    return fn(cx.x(0), cx.x(1))


@_reg("Xor")
def _xor(cx: Ctx, a: _Attrs) -> Expr:
    x, y = cx.x(0), cx.x(1)
    if a.get("broadcast", 0) and a.get("axis") is not None:  # opset < 7 explicit alignment
        xr, ys = len(shape_of(x)), shape_of(y)
        ax = _axis(a.get("axis"), xr)
        y = _reshape(y, ys + (1,) * (xr - ax - len(ys)))
    return op.logical_xor(x, y)


@_reg("BitCast")
def _bitcast(cx: Ctx, a: _Attrs) -> Expr:
    return op.bitcast(cx.x(0), dtype=onnx_dtype(a.get("to")))
