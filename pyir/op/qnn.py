"""Quantized operators (as Relay's ``qnn``): ``qnn.quantize``, ``qnn.dequantize``,
``qnn.dynamic_quantize``, ``qnn.matmul_integer``, ``qnn.qlinear_matmul``,
``qnn.conv_integer`` and ``qnn.qlinear_conv``.

Quantization follows ONNX (QuantizeLinear / DequantizeLinear, opsets 10-25): a scale and a
zero point per tensor (scalars or 1-element vectors), per axis (vectors along ``axis``) or
per block (``block_size`` > 0: the scale has the data's rank, ``ceil(d / block_size)``
along ``axis``).  Integer targets round half to even and saturate; float8 targets saturate
when ``saturate`` (out-of-range values and infinities become the largest finite value);
their zero point is zero.  Every zero point is an input (give a zero constant for none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import AttrError
from ..ir.dims import DimLike, dim_add, dim_floordiv
from ..ir.node import Attrs
from ..ir.types import TensorType, TupleType, Type, dtype_kind, dtype_range, normalize_dtype
from ._rel import broadcast_shapes, fail, normalize_axis, shape_str, tensor, unify_dims
from ._signature import INPUT_NAMES
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["quantize", "dequantize", "dynamic_quantize", "matmul_integer", "qlinear_matmul",
           "conv_integer", "qlinear_conv"]

_INT_QUANT = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2")
_FLOAT8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
_FLOAT_SMALL = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")  # no inf/NaN: casts saturate
QUANT_DTYPES = _INT_QUANT + _FLOAT8 + _FLOAT_SMALL
"""The dtypes a tensor quantizes to (those of ml_dtypes only when it is installed)."""

INPUT_NAMES.update({
    "qnn.quantize": ("data", "scale", "zero_point"),
    "qnn.dequantize": ("data", "scale", "zero_point"),
    "qnn.matmul_integer": ("a", "b", "a_zero_point", "b_zero_point"),
    "qnn.qlinear_matmul": ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
                           "y_zero_point"),
    "qnn.conv_integer": ("data", "weight", "x_zero_point", "w_zero_point"),
    "qnn.qlinear_conv": ("data", "x_scale", "x_zero_point", "weight", "w_scale", "w_zero_point",
                         "y_scale", "y_zero_point", "bias"),
})


def _float(t: TensorType, what: str) -> TensorType:
    if dtype_kind(t.dtype) != "f":
        raise fail(f"{what} must be a floating-point tensor, got {t.dtype}")
    return t


def _dims_eq(a: DimLike, b: DimLike) -> bool:
    return a is b or unify_dims(a, b) is not None


def _param_rel(data: TensorType, p: TensorType, axis: int, block_size: int, what: str) -> None:
    """Check a scale or zero point's shape against ``data`` (per tensor, axis or block)."""
    if block_size < 0:
        raise fail(f"block_size must be >= 0, got {block_size}")
    if p.ndim == 0:  # per tensor (a zero point left out of blocked quantization)
        return
    if block_size == 0:
        if p.ndim == 1 and p.shape[0] == 1:
            return
        if p.ndim != 1:
            raise fail(f"{what} must be a scalar or a 1-D tensor (per axis), got {shape_str(p.shape)}")
        ax = normalize_axis(axis, data.ndim)
        if not _dims_eq(p.shape[0], data.shape[ax]):
            raise fail(f"{what} of shape {shape_str(p.shape)} does not match axis {axis} of data "
                       f"{shape_str(data.shape)}")
        return
    if p.ndim != data.ndim:
        raise fail(f"{what} of blocked quantization must have the data's rank {data.ndim}, got "
                   f"{shape_str(p.shape)}")
    ax = normalize_axis(axis, data.ndim)
    for i, (d, s) in enumerate(zip(data.shape, p.shape)):
        if i == ax:
            if type(d) is int and type(s) is int and s != -(-d // block_size):
                raise fail(f"{what} of shape {shape_str(p.shape)} does not hold ceil({d} / {block_size}) "
                           f"blocks along axis {axis} of data {shape_str(data.shape)}")
        elif not _dims_eq(d, s):
            raise fail(f"{what} of shape {shape_str(p.shape)} does not match data {shape_str(data.shape)} "
                       f"off axis {axis}")


def _expand(p: np.ndarray, shape: tuple[int, ...], axis: int, block_size: int) -> np.ndarray:
    """A scale or zero point broadcastable against data of ``shape``."""
    if p.ndim == 0:
        return p
    if p.size == 1 and block_size == 0:
        return p.reshape(())
    ax = axis % len(shape)
    if block_size == 0:
        dims = [1] * len(shape)
        dims[ax] = p.size
        return p.reshape(dims)
    return np.repeat(p, block_size, axis=ax)[(slice(None),) * ax + (slice(0, shape[ax]),)]


def _canon_quant(a: dict[str, Any]) -> dict[str, Any]:
    dt = normalize_dtype(a["out_dtype"])
    if dt not in QUANT_DTYPES:
        raise AttrError(f"operator 'qnn.quantize', attribute 'out_dtype': must be one of "
                        f"{', '.join(d for d in QUANT_DTYPES)}, got {dt}")
    prec = a["precision"]
    return {**a, "out_dtype": dt, "precision": normalize_dtype(prec) if prec else ""}


def _quantize_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, s, z = (tensor(t, w) for t, w in zip(types, ("data", "scale", "zero_point")))
    if dtype_kind(x.dtype) not in "fi":
        raise fail(f"data must be a floating-point (or int32) tensor, got {x.dtype}")
    _float(s, "scale")
    if z.dtype != attrs["out_dtype"]:
        raise fail(f"zero_point dtype {z.dtype} differs from out_dtype {attrs['out_dtype']}")
    _param_rel(x, s, attrs["axis"], attrs["block_size"], "scale")
    _param_rel(x, z, attrs["axis"], attrs["block_size"], "zero_point")
    return TensorType(x.shape, attrs["out_dtype"])


def _quantize(attrs: Attrs, x: np.ndarray, s: np.ndarray, z: np.ndarray) -> np.ndarray:
    ax, bs, dt = attrs["axis"], attrs["block_size"], attrs["out_dtype"]
    s = _expand(s, x.shape, ax, bs)
    if attrs["precision"]:
        x, s = x.astype(attrs["precision"]), s.astype(attrs["precision"])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = x / s
        if dt in _INT_QUANT:
            lo, hi = dtype_range(dt)
            r = np.rint(q).astype(np.float64) + _expand(z, x.shape, ax, bs).astype(np.float64)
            return np.clip(r, lo, hi).astype(dt)
        if dt in _FLOAT8:
            if attrs["saturate"]:
                lo, hi = dtype_range(dt)
                q = np.clip(q, lo, hi)
            return q.astype(dt)
        return (q + _expand(z, x.shape, ax, bs).astype(q.dtype)).astype(dt)


quantize: _sig.QnnQuantize = register_op(
    "qnn.quantize", num_inputs=3, type_rel=_quantize_rel, compute=_quantize, pattern=OpPattern.BROADCAST,
    doc="Quantize: ``saturate(round(data / scale) + zero_point)`` (ONNX QuantizeLinear).",
    attrs=(AttrSpec("axis", "int", 1, "the axis of per-axis and blocked scales"),
           AttrSpec("block_size", "int", 0, "0: per tensor or axis; > 0: blocks along axis"),
           AttrSpec("out_dtype", "dtype", "uint8"),
           AttrSpec("saturate", "bool", True, "float8 targets: clamp to the finite range"),
           AttrSpec("precision", "str", "", "a float dtype to divide in; '' for numpy's promotion")),
    canonicalize=_canon_quant)


def _canon_dequant(a: dict[str, Any]) -> dict[str, Any]:
    return {**a, "out_dtype": normalize_dtype(a["out_dtype"]) if a["out_dtype"] else ""}


def _dequantize_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, s, z = (tensor(t, w) for t, w in zip(types, ("data", "scale", "zero_point")))
    if x.dtype not in QUANT_DTYPES and x.dtype != "int32":
        raise fail(f"data must be a quantized tensor ({', '.join(QUANT_DTYPES)} or int32), got {x.dtype}")
    _float(s, "scale")
    if z.dtype != x.dtype:
        raise fail(f"zero_point dtype {z.dtype} differs from data dtype {x.dtype}")
    _param_rel(x, s, attrs["axis"], attrs["block_size"], "scale")
    _param_rel(x, z, attrs["axis"], attrs["block_size"], "zero_point")
    out = attrs["out_dtype"] or s.dtype
    if dtype_kind(out) != "f":
        raise fail(f"out_dtype must be a float dtype, got {out}")
    return TensorType(x.shape, out)


def _dequantize(attrs: Attrs, x: np.ndarray, s: np.ndarray, z: np.ndarray) -> np.ndarray:
    ax, bs = attrs["axis"], attrs["block_size"]
    # exact for every integer the data holds: float32 for 8 bits and less, float64 for wider
    acc = np.float64 if x.dtype.itemsize > 1 and dtype_kind(x.dtype.name) in "iu" else np.float32
    dx = x.astype(acc)
    if x.dtype.name in _INT_QUANT or x.dtype.name == "int32":  # float zero points are zero
        dx = dx - _expand(z, x.shape, ax, bs).astype(acc)
    y = dx * _expand(s, x.shape, ax, bs)
    return y.astype(attrs["out_dtype"] or s.dtype)


dequantize: _sig.QnnDequantize = register_op(
    "qnn.dequantize", num_inputs=3, type_rel=_dequantize_rel, compute=_dequantize,
    pattern=OpPattern.BROADCAST,
    doc="Dequantize: ``(data - zero_point) * scale`` (ONNX DequantizeLinear).",
    attrs=(AttrSpec("axis", "int", 1, "the axis of per-axis and blocked scales"),
           AttrSpec("block_size", "int", 0, "0: per tensor or axis; > 0: blocks along axis"),
           AttrSpec("out_dtype", "str", "", "a float dtype; '' for the scale's")),
    canonicalize=_canon_dequant)


def _dynamic_quantize_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x = _float(tensor(types[0], "data"), "data")
    return TupleType([TensorType(x.shape, "uint8"), TensorType((), x.dtype), TensorType((), "uint8")])


def _dynamic_quantize(attrs: Attrs, x: np.ndarray) -> tuple[np.ndarray, ...]:
    f = np.float32
    hi = f(max(0.0, float(np.max(x)))) if x.size else f(0)
    lo = f(min(0.0, float(np.min(x)))) if x.size else f(0)
    scale = f(1.0) if hi == lo else f(hi - lo) / f(255)
    zp = np.rint(np.clip(f(0) - lo / scale, 0, 255))
    with np.errstate(invalid="ignore"):
        y = np.clip(np.rint(x.astype(f) / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.array(scale, dtype=x.dtype), np.array(zp, dtype=np.uint8)


dynamic_quantize: _sig.QnnDynamicQuantize = register_op(
    "qnn.dynamic_quantize", num_inputs=1, type_rel=_dynamic_quantize_rel, compute=_dynamic_quantize,
    pattern=OpPattern.OPAQUE,
    doc="Quantize to uint8 by the data's range (ONNX DynamicQuantizeLinear).\n\n"
        "Returns ``(data, scale, zero_point)``; the range includes 0.")


# -- integer matrix products ---------------------------------------------------------------------------


def _int(t: TensorType, what: str) -> TensorType:
    if dtype_kind(t.dtype) not in "iu":
        raise fail(f"{what} must be an integer tensor, got {t.dtype}")
    return t


def _matmul_shape(a: TensorType, b: TensorType) -> tuple[DimLike, ...]:
    if a.ndim == 0 or b.ndim == 0:
        raise fail("matmul needs inputs of rank >= 1")
    sa = a.shape if a.ndim > 1 else (1,) + a.shape
    sb = b.shape if b.ndim > 1 else b.shape + (1,)
    if not _dims_eq(sa[-1], sb[-2]):
        raise fail(f"matmul inner dimensions differ: {shape_str(a.shape)} @ {shape_str(b.shape)}")
    return broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2],) * (a.ndim > 1) + (sb[-1],) * (b.ndim > 1)


def _row_param(p: TensorType, x: TensorType, what: str) -> None:
    """A per-tensor (scalar, 1 element) or per-row (1-D of the rows of ``x``) parameter."""
    if p.ndim == 0 or (p.ndim == 1 and p.shape[0] == 1):
        return
    if p.ndim != 1 or x.ndim < 2 or not _dims_eq(p.shape[0], x.shape[-2]):
        raise fail(f"{what} must be a scalar or a 1-D tensor of the {shape_str(x.shape)} input's rows, "
                   f"got {shape_str(p.shape)}")


def _col_param(p: TensorType, x: TensorType, what: str) -> None:
    """A per-tensor or per-column (1-D of the columns of ``x``) parameter."""
    if p.ndim == 0 or (p.ndim == 1 and p.shape[0] == 1):
        return
    if p.ndim != 1 or not _dims_eq(p.shape[0], x.shape[-1]):
        raise fail(f"{what} must be a scalar or a 1-D tensor of the {shape_str(x.shape)} input's columns, "
                   f"got {shape_str(p.shape)}")


def _rows(p: np.ndarray) -> np.ndarray:
    return p.reshape(-1, 1) if p.ndim == 1 and p.size > 1 else p.reshape(())


def _cols(p: np.ndarray) -> np.ndarray:
    return p if p.ndim == 1 and p.size > 1 else p.reshape(())


def _imatmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An exact integer matrix product (through float64 BLAS while exact, else int64)."""
    k = a.shape[-1]
    big = max((float(np.max(np.abs(v))) if v.size else 0.0) for v in (a, b))
    if big * big * max(k, 1) < 2.0 ** 52:
        return np.rint(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


def _matmul_integer_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b, az, bz = (tensor(t, w) for t, w in zip(types, ("a", "b", "a_zero_point", "b_zero_point")))
    _int(a, "a")
    _int(b, "b")
    if az.dtype != a.dtype or bz.dtype != b.dtype:
        raise fail(f"zero points ({az.dtype}, {bz.dtype}) must have their inputs' dtypes "
                   f"({a.dtype}, {b.dtype})")
    _row_param(az, a, "a_zero_point")
    _col_param(bz, b, "b_zero_point")
    return TensorType(_matmul_shape(a, b), "int32")


def _matmul_integer(attrs: Attrs, a: np.ndarray, b: np.ndarray, az: np.ndarray, bz: np.ndarray
                    ) -> np.ndarray:
    aa = a.astype(np.int64) - _rows(az).astype(np.int64)
    bb = b.astype(np.int64) - _cols(bz).astype(np.int64)
    return _imatmul(aa, bb).astype(np.int32)


matmul_integer: _sig.QnnMatmulInteger = register_op(
    "qnn.matmul_integer", num_inputs=4, type_rel=_matmul_integer_rel, compute=_matmul_integer,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="``(a - a_zero_point) @ (b - b_zero_point)`` in int32 (ONNX MatMulInteger).\n\n"
        "Zero points per tensor, per row of ``a``, per column of ``b``.")


def _requant(acc: np.ndarray, factor: Any, yz: np.ndarray, dtype: np.dtype) -> np.ndarray:
    lo, hi = dtype_range(dtype.name)
    d = acc.astype(np.float64) * factor + yz.astype(np.float64)
    return np.clip(np.rint(d), lo, hi).astype(dtype)


def _qlinear_matmul_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    names = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")
    a, as_, az, b, bs, bz, ys, yz = (tensor(t, w) for t, w in zip(types, names))
    _int(a, "a")
    _int(b, "b")
    _int(yz, "y_zero_point")
    if az.dtype != a.dtype or bz.dtype != b.dtype:
        raise fail(f"zero points ({az.dtype}, {bz.dtype}) must have their inputs' dtypes "
                   f"({a.dtype}, {b.dtype})")
    for s, w in ((as_, "a_scale"), (bs, "b_scale"), (ys, "y_scale")):
        _float(s, w)
    _row_param(as_, a, "a_scale")
    _row_param(az, a, "a_zero_point")
    _col_param(bs, b, "b_scale")
    _col_param(bz, b, "b_zero_point")
    shape = _matmul_shape(a, b)
    out = TensorType(shape, yz.dtype)
    if len(shape) >= 2:
        _row_param(ys, out, "y_scale")
        _row_param(yz, out, "y_zero_point")
    elif ys.ndim or yz.ndim > 1:
        raise fail("y_scale and y_zero_point must be per tensor for a 1-D product")
    return out


def _qlinear_matmul(attrs: Attrs, a: np.ndarray, as_: np.ndarray, az: np.ndarray, b: np.ndarray,
                    bs: np.ndarray, bz: np.ndarray, ys: np.ndarray, yz: np.ndarray) -> np.ndarray:
    acc = _imatmul(a.astype(np.int64) - _rows(az).astype(np.int64),
                   b.astype(np.int64) - _cols(bz).astype(np.int64))
    factor = _rows(as_) * _cols(bs) / _rows(ys)  # in the scales' dtype, as ONNX's reference computes it
    return _requant(acc, factor.astype(np.float64), _rows(yz), yz.dtype)


qlinear_matmul: _sig.QnnQlinearMatmul = register_op(
    "qnn.qlinear_matmul", num_inputs=8, type_rel=_qlinear_matmul_rel, compute=_qlinear_matmul,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Quantized matrix product (ONNX QLinearMatMul).\n\n"
        "The integer product of the zero-point-shifted inputs, requantized to ``y_scale``\n"
        "and ``y_zero_point``.")


# -- integer convolutions ---------------------------------------------------------------------------------


_CONV_ATTRS = (AttrSpec("strides", "ints", (), "per spatial axis; () for all 1"),
               AttrSpec("padding", "ints", (), "begins then ends per spatial axis; () for none"),
               AttrSpec("dilation", "ints", (), "per spatial axis; () for all 1"),
               AttrSpec("groups", "int", 1))


def _conv_canon(name: str) -> Any:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        if a["groups"] < 1:
            raise AttrError(f"operator {name!r}, attribute 'groups': must be >= 1, got {a['groups']}")
        for k in ("strides", "dilation"):
            if any(v < 1 for v in a[k]):
                raise AttrError(f"operator {name!r}, attribute {k!r}: must be >= 1, got {a[k]}")
        if any(v < 0 for v in a["padding"]):
            raise AttrError(f"operator {name!r}, attribute 'padding': must be >= 0, got {a['padding']}")
        return a

    return canon


def _conv_geometry(attrs: Attrs, nd: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    s = attrs["strides"] or (1,) * nd
    p = attrs["padding"] or (0,) * (2 * nd)
    d = attrs["dilation"] or (1,) * nd
    if len(s) != nd or len(d) != nd or len(p) != 2 * nd:
        raise fail(f"strides {s}, dilation {d} and padding {p} do not fit {nd} spatial axes")
    return s, p, d


def _conv_shape(x: TensorType, w: TensorType, attrs: Attrs) -> tuple[DimLike, ...]:
    if x.ndim < 3 or w.ndim != x.ndim:
        raise fail(f"data (N, C, spatial...) and weight (M, C/groups, kernel...) must have the same rank "
                   f">= 3, got {shape_str(x.shape)} and {shape_str(w.shape)}")
    nd = x.ndim - 2
    s, p, d = _conv_geometry(attrs, nd)
    g = attrs["groups"]
    c, m, cg = x.shape[1], w.shape[0], w.shape[1]
    if type(c) is int and type(cg) is int and c != cg * g:
        raise fail(f"data has {c} channels, weight {shape_str(w.shape)} with groups={g} takes {cg * g}")
    if type(m) is int and m % g:
        raise fail(f"weight's {m} output channels are not divisible by groups={g}")
    out: list[DimLike] = [x.shape[0], m]
    for i in range(nd):
        k = w.shape[2 + i]
        if type(k) is not int:
            raise fail(f"the kernel's spatial dimensions must be static, got {shape_str(w.shape)}")
        eff = d[i] * (k - 1) + 1
        n = x.shape[2 + i]
        if type(n) is int:
            size = n + p[i] + p[nd + i] - eff
            if size < 0:
                raise fail(f"kernel {shape_str(w.shape)} (dilated {eff}) exceeds the padded input "
                           f"{n + p[i] + p[nd + i]}")
            out.append(size // s[i] + 1)
        else:
            out.append(dim_add(dim_floordiv(dim_add(n, p[i] + p[nd + i] - eff), s[i]), 1))
    return tuple(out)


def _iconv(attrs: Attrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """An exact integer N-d convolution (int64 inputs): windows by sliding_window_view, one
    tensordot per group (float64 BLAS: exact below 2**52)."""
    nd = x.ndim - 2
    s, p, d = _conv_geometry(attrs, nd)
    g = attrs["groups"]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[nd + i]) for i in range(nd)]).astype(np.float64)
    k = w.shape[2:]
    eff = tuple(d[i] * (k[i] - 1) + 1 for i in range(nd))
    v = sliding_window_view(xp, eff, axis=tuple(range(2, 2 + nd)))
    v = v[(slice(None), slice(None)) + tuple(slice(None, None, si) for si in s)
          + tuple(slice(None, None, di) for di in d)]
    m, cg = w.shape[0], w.shape[1]
    mg = m // g
    wf = w.astype(np.float64)
    outs = [np.tensordot(v[:, j * cg:(j + 1) * cg], wf[j * mg:(j + 1) * mg],
                         axes=([1] + list(range(2 + nd, 2 + 2 * nd)), list(range(1, 2 + nd))))
            for j in range(g)]
    y = np.concatenate(outs, axis=-1) if g > 1 else outs[0]
    return np.rint(np.moveaxis(y, -1, 1)).astype(np.int64)


def _channel(p: np.ndarray, nd: int) -> np.ndarray:
    """A per-tensor or per-output-channel parameter shaped against (N, M, spatial...)."""
    return p.reshape((-1,) + (1,) * nd) if p.ndim == 1 and p.size > 1 else p.reshape(())


def _channel_param(p: TensorType, m: DimLike, what: str) -> None:
    if p.ndim == 0 or (p.ndim == 1 and p.shape[0] == 1):
        return
    if p.ndim != 1 or not _dims_eq(p.shape[0], m):
        raise fail(f"{what} must be a scalar or a 1-D tensor of the {m} output channels, got "
                   f"{shape_str(p.shape)}")


def _scalar_param(p: TensorType, what: str) -> None:
    if not (p.ndim == 0 or (p.ndim == 1 and p.shape[0] == 1)):
        raise fail(f"{what} must be a scalar (per tensor), got {shape_str(p.shape)}")


def _conv_integer_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, w, xz, wz = (tensor(t, n) for t, n in zip(types, ("data", "weight", "x_zero_point", "w_zero_point")))
    _int(x, "data")
    _int(w, "weight")
    if xz.dtype != x.dtype or wz.dtype != w.dtype:
        raise fail(f"zero points ({xz.dtype}, {wz.dtype}) must have their inputs' dtypes "
                   f"({x.dtype}, {w.dtype})")
    shape = _conv_shape(x, w, attrs)
    _scalar_param(xz, "x_zero_point")
    _channel_param(wz, w.shape[0], "w_zero_point")
    return TensorType(shape, "int32")


def _shifted(x: np.ndarray, xz: np.ndarray, w: np.ndarray, wz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The data and weight less their zero points, in int64."""
    wzb = wz.reshape((-1,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wz.reshape(())
    return x.astype(np.int64) - xz.reshape(()).astype(np.int64), w.astype(np.int64) - wzb.astype(np.int64)


def _conv_integer(attrs: Attrs, x: np.ndarray, w: np.ndarray, xz: np.ndarray, wz: np.ndarray) -> np.ndarray:
    xs, ws = _shifted(x, xz, w, wz)
    return _iconv(attrs, xs, ws).astype(np.int32)


conv_integer: _sig.QnnConvInteger = register_op(
    "qnn.conv_integer", num_inputs=4, type_rel=_conv_integer_rel, compute=_conv_integer,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Integer N-d convolution in int32 (ONNX ConvInteger).\n\n"
        "Data (N, C, spatial...) and weight (M, C/groups, kernel...) less their zero points\n"
        "(the weight's per tensor or output channel).",
    attrs=_CONV_ATTRS, canonicalize=_conv_canon("qnn.conv_integer"))


def _qlinear_conv_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    names = ("data", "x_scale", "x_zero_point", "weight", "w_scale", "w_zero_point", "y_scale",
             "y_zero_point", "bias")
    x, xs, xz, w, ws, wz, ys, yz, b = (tensor(t, n) for t, n in zip(types, names))
    _int(x, "data")
    _int(w, "weight")
    _int(yz, "y_zero_point")
    if xz.dtype != x.dtype or wz.dtype != w.dtype:
        raise fail(f"zero points ({xz.dtype}, {wz.dtype}) must have their inputs' dtypes "
                   f"({x.dtype}, {w.dtype})")
    for s, n in ((xs, "x_scale"), (ws, "w_scale"), (ys, "y_scale")):
        _float(s, n)
    shape = _conv_shape(x, w, attrs)
    for p, n in ((xs, "x_scale"), (xz, "x_zero_point"), (ys, "y_scale"), (yz, "y_zero_point")):
        _scalar_param(p, n)
    _channel_param(ws, w.shape[0], "w_scale")
    _channel_param(wz, w.shape[0], "w_zero_point")
    if b.dtype != "int32" or b.ndim != 1 or not _dims_eq(b.shape[0], w.shape[0]):
        raise fail(f"bias must be a 1-D int32 tensor of the {w.shape[0]} output channels, got {b}")
    return TensorType(shape, yz.dtype)


def _qlinear_conv(attrs: Attrs, x: np.ndarray, xs: np.ndarray, xz: np.ndarray, w: np.ndarray, ws: np.ndarray,
                  wz: np.ndarray, ys: np.ndarray, yz: np.ndarray, b: np.ndarray) -> np.ndarray:
    nd = x.ndim - 2
    xi, wi = _shifted(x, xz, w, wz)
    acc = _iconv(attrs, xi, wi) + b.astype(np.int64).reshape((-1,) + (1,) * nd)
    factor = xs.reshape(()) * _channel(ws, nd) / ys.reshape(())
    return _requant(acc, factor.astype(np.float64), yz.reshape(()), yz.dtype)


qlinear_conv: _sig.QnnQlinearConv = register_op(
    "qnn.qlinear_conv", num_inputs=9, type_rel=_qlinear_conv_rel, compute=_qlinear_conv,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Quantized N-d convolution (ONNX QLinearConv).\n\n"
        "The integer convolution of the zero-point-shifted inputs plus the int32 bias,\n"
        "requantized to ``y_scale`` and ``y_zero_point``; the weight's scale and zero point\n"
        "per tensor or output channel.",
    attrs=_CONV_ATTRS, canonicalize=_conv_canon("qnn.qlinear_conv"))
