"""Relay's QNN operators: ``qnn.requantize``, ``qnn.add``, ``qnn.mul``, ``qnn.dense`` and
``qnn.conv2d`` (``relay.qnn.op``), with Relay's argument order (the quantization parameters are
inputs, scalars or, for ``requantize``'s and the kernel's, per-channel 1-D tensors).

* ``requantize(data, input_scale, input_zero_point, output_scale, output_zero_point)``:
  ``clip(round((data - izp) * is / os) + ozp)`` in ``out_dtype``; ``rounding`` ``UPWARD``
  (Relay's default: halves up) or ``TONEAREST`` (halves away from zero).
* ``add`` / ``mul(lhs, rhs, lhs_scale, lhs_zp, rhs_scale, rhs_zp, output_scale, output_zp)``:
  the sum / product of the real values, quantized to the output's parameters, in ``lhs``'s
  dtype (saturated).
* ``dense(data, weight, input_zp, kernel_zp, input_scale, kernel_scale)``:
  ``(data - izp) @ (weight - kzp).T`` in ``out_dtype`` (int32); the scales are not applied
  (the result's scale is ``input_scale * kernel_scale``, as in Relay).
* ``conv2d(data, kernel, input_zp, kernel_zp, input_scale, kernel_scale)``: ``nn.conv2d`` of the
  zero-point-shifted integers in ``out_dtype`` (int32), with ``nn.conv2d``'s attributes.

Every type relation accepts symbolic and unknown dimensions (:mod:`pyir.ir.dims`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.node import Attrs
from ..ir.types import TensorType, Type
from . import nn as _nn
from ._rel import broadcast_shapes, fail, normalize_axis, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["requantize", "add", "mul", "dense", "conv2d"]

_ROUNDINGS = ("UPWARD", "TONEAREST")


def _int(t: TensorType, what: str) -> TensorType:
    if np.dtype(t.dtype).kind not in "iu":
        raise fail(f"{what} must be an integer tensor, got {t.dtype}")
    return t


def _param(t: Type, what: str, kind: str) -> TensorType:
    p = tensor(t, what)
    if p.ndim > 1:
        raise fail(f"{what} must be a scalar or a 1-D tensor, got rank {p.ndim}")
    if np.dtype(p.dtype).kind not in kind:
        raise fail(f"{what} has dtype {p.dtype}")
    return p


def _round(v: np.ndarray, rounding: str) -> np.ndarray:
    if rounding == "TONEAREST":
        return np.sign(v) * np.floor(np.abs(v) + 0.5)
    return np.floor(v + 0.5)


def _saturate(v: np.ndarray, dtype: str) -> np.ndarray:
    info = np.iinfo(np.dtype(dtype))
    return np.clip(v, info.min, info.max).astype(dtype)


def _along(p: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A per-channel parameter shaped to broadcast along ``axis`` of a rank-``ndim`` tensor."""
    p = np.asarray(p, np.float64)
    if p.ndim == 0 or p.size == 1 or ndim == 0:
        return p.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = p.size
    return p.reshape(shape)


def _canon_rounding(a: dict[str, Any]) -> dict[str, Any]:
    from ..errors import AttrError

    if a["rounding"] == "None":
        a["rounding"] = "UPWARD"
    if a["rounding"] not in _ROUNDINGS:
        raise AttrError(f"operator 'qnn.requantize', attribute 'rounding': one of {_ROUNDINGS}, "
                        f"got {a['rounding']!r}")
    if a["compute_dtype"] not in ("None", "int64", "float32", "float64"):
        raise AttrError(f"operator 'qnn.requantize', attribute 'compute_dtype': got {a['compute_dtype']!r}")
    return a


def _requantize_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _int(tensor(types[0], "data"), "data")
    if d.ndim:
        normalize_axis(attrs["axis"], d.ndim)
    for t, what in zip(types[1:], ("input_scale", "input_zero_point", "output_scale", "output_zero_point")):
        _param(t, what, "f" if what.endswith("scale") else "iu")
    return TensorType(d.shape, attrs["out_dtype"])


def requantize_values(x: np.ndarray, is_: Any, izp: Any, os_: Any, ozp: Any, axis: int, rounding: str,
                      dtype: str) -> np.ndarray:
    """``clip(round((x - izp) * is / os) + ozp)`` (per-channel parameters along ``axis``)."""
    nd = np.ndim(x)
    factor = _along(is_, nd, axis) / _along(os_, nd, axis)
    real = (np.asarray(x, np.float64) - _along(izp, nd, axis)) * factor
    return _saturate(_round(real, rounding) + _along(ozp, nd, axis), dtype)


requantize: _sig.QnnRequantize = register_op(
    "qnn.requantize", num_inputs=5, type_rel=_requantize_rel,
    compute=lambda attrs, x, a, b, c, d: requantize_values(x, a, b, c, d, attrs["axis"], attrs["rounding"],
                                                           attrs["out_dtype"]),
    pattern=OpPattern.ELEMWISE,
    doc="Requantize ``data`` from (input_scale, input_zero_point) to (output_scale, output_zero_point).",
    attrs=(AttrSpec("axis", "int", -1, "the channel axis of per-channel parameters"),
           AttrSpec("rounding", "str", "None", "UPWARD (the default, 'None') or TONEAREST"),
           AttrSpec("compute_dtype", "str", "None", "the dtype of the computation (pyir computes exactly)"),
           AttrSpec("out_dtype", "dtype", "int8", "the dtype of the result")),
    canonicalize=_canon_rounding)


def _binary_rel(name: str) -> Any:
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        a, b = _int(tensor(types[0], "lhs"), "lhs"), _int(tensor(types[1], "rhs"), "rhs")
        shape = broadcast_shapes(a.shape, b.shape)
        whats = ("lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point", "output_scale",
                 "output_zero_point")
        for t, what in zip(types[2:], whats):
            _param(t, f"{name}: {what}", "f" if what.endswith("scale") else "iu")
        return TensorType(shape, a.dtype)
    return rel


def _binary(fn: Any) -> Any:
    def compute(attrs: Attrs, a: np.ndarray, b: np.ndarray, ls: Any, lz: Any, rs: Any, rz: Any, os_: Any,
                oz: Any) -> np.ndarray:
        la, ra = attrs["lhs_axis"], attrs["rhs_axis"]
        real_a = (np.asarray(a, np.float64) - _along(lz, a.ndim, la)) * _along(ls, a.ndim, la)
        real_b = (np.asarray(b, np.float64) - _along(rz, b.ndim, ra)) * _along(rs, b.ndim, ra)
        out = _round(fn(real_a, real_b) / np.float64(os_), "UPWARD") + np.float64(oz)
        return _saturate(out, a.dtype.name)
    return compute


_BINARY_ATTRS = (AttrSpec("lhs_axis", "int", -1, "the channel axis of lhs's parameters"),
                 AttrSpec("rhs_axis", "int", -1, "the channel axis of rhs's parameters"))

add: _sig.QnnAdd = register_op(
    "qnn.add", num_inputs=8, type_rel=_binary_rel("qnn.add"), compute=_binary(np.add),
    pattern=OpPattern.BROADCAST, attrs=_BINARY_ATTRS,
    doc="Quantized addition: the real sum, quantized to (output_scale, output_zero_point).")

mul: _sig.QnnMul = register_op(
    "qnn.mul", num_inputs=8, type_rel=_binary_rel("qnn.mul"), compute=_binary(np.multiply),
    pattern=OpPattern.BROADCAST, attrs=_BINARY_ATTRS,
    doc="Quantized multiplication: the real product, quantized to (output_scale, output_zero_point).")


def _zp_params(types: tuple[Type, ...], name: str) -> None:
    for t, what in zip(types[2:], ("input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")):
        _param(t, f"{name}: {what}", "f" if what.endswith("scale") else "iu")


def _dense_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, w = _int(tensor(types[0], "data"), "data"), _int(tensor(types[1], "weight"), "weight")
    _zp_params(types, "qnn.dense")
    if d.ndim < 1 or w.ndim != 2:
        raise fail(f"qnn.dense: data must have rank >= 1 and weight rank 2, got {d.ndim} and {w.ndim}")
    units = w.shape[0]
    if attrs["units"] is not None and type(units) is int and units != attrs["units"]:
        raise fail(f"qnn.dense: units={attrs['units']} but the weight has {units} rows")
    return TensorType((*d.shape[:-1], units), attrs["out_dtype"])


def _shifted(x: np.ndarray, zp: Any, axis: int | None = None) -> np.ndarray:
    z = np.asarray(zp, np.int64)
    if z.size == 1:
        z = z.reshape(())
    elif axis is not None:  # per output channel
        shape = [1] * x.ndim
        shape[axis] = z.size
        z = z.reshape(shape)
    return np.asarray(x, np.int64) - z


def _dense(attrs: Attrs, x: np.ndarray, w: np.ndarray, xz: Any, wz: Any, xs: Any, ws: Any) -> np.ndarray:
    return (_shifted(x, xz) @ _shifted(w, wz, 0).T).astype(attrs["out_dtype"])


dense: _sig.QnnDense = register_op(
    "qnn.dense", num_inputs=6, type_rel=_dense_rel, compute=_dense, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Quantized dense: ``(data - izp) @ (weight - kzp).T`` in ``out_dtype`` (the scales not applied).",
    attrs=(AttrSpec("units", "int?", None, "the number of rows of the weight"),
           AttrSpec("out_dtype", "dtype", "int32", "the dtype of the result")))


def _conv_canon(a: dict[str, Any]) -> dict[str, Any]:
    return _nn._conv2d_canon("qnn.conv2d", a)


def _conv2d_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _int(tensor(types[0], "data"), "data")
    _int(tensor(types[1], "kernel"), "kernel")
    _zp_params(types, "qnn.conv2d")
    return _nn._conv2d_rel(types[:2], attrs)


def _conv2d(attrs: Attrs, x: np.ndarray, w: np.ndarray, xz: Any, wz: Any, xs: Any, ws: Any) -> np.ndarray:
    return _nn._conv2d(attrs, _shifted(x, xz), _shifted(w, wz, 0))


_INT32_OUT = AttrSpec("out_dtype", "any", "int32", "the dtype of the result")

conv2d: _sig.QnnConv2d = register_op(
    "qnn.conv2d", num_inputs=6, type_rel=_conv2d_rel, compute=_conv2d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Quantized 2-D convolution: nn.conv2d of the zero-point-shifted integers, in ``out_dtype``.",
    attrs=tuple(_INT32_OUT if a.name == "out_dtype" else a for a in _nn._CONV2D_ATTRS),
    canonicalize=_conv_canon)
