"""Bit operators: ``bitwise_and``, ``bitwise_or``, ``bitwise_xor``, ``bitwise_not``,
``left_shift``, ``right_shift`` (integers), ``logical_xor`` (bool) and ``bitcast``
(reinterpret the bytes as another dtype of the same width)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.node import Attrs
from ..ir.types import TensorType, Type, dtype_kind
from ._rel import broadcast_shapes, fail, same_dtype, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift",
           "logical_xor", "bitcast"]

# ml_dtypes' sub-byte integers (int4, ...) hold one value per byte with undefined high bits:
# no bit operator takes them
_SUB_BYTE = ("int4", "uint4", "int2", "uint2", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")


def _int_dtype(t: TensorType, what: str) -> str:
    if dtype_kind(t.dtype) not in "iu" or t.dtype in _SUB_BYTE:
        raise fail(f"{what} must be an integer tensor (int8-int64, uint8-uint64), got {t.dtype}")
    return t.dtype


def _int_binary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    dt = same_dtype([a, b])
    _int_dtype(a, "lhs")
    return TensorType(broadcast_shapes(a.shape, b.shape), dt)


def _bool_binary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    if a.dtype != "bool" or b.dtype != "bool":
        raise fail(f"needs bool inputs, got {a.dtype} and {b.dtype}")
    return TensorType(broadcast_shapes(a.shape, b.shape), "bool")


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str,
            rel: Callable[[tuple[Type, ...], Attrs], Type] = _int_binary_rel) -> Callable[..., Any]:
    return register_op(name, num_inputs=2, type_rel=rel, compute=lambda attrs, a, b: fn(a, b),
                       pattern=OpPattern.BROADCAST, doc=doc)


def _shift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    """Shifts by amounts outside ``[0, bits)`` give 0 (-1 for a right shift of a negative
    signed value); a left shift of a signed value shifts its bits (two's complement)."""
    a, b = np.broadcast_arrays(a, b)
    bits = a.dtype.itemsize * 8
    out_of_range = (b < 0) | (b >= bits)
    if left:
        u = a.view(np.dtype(f"u{a.dtype.itemsize}"))
        amount = np.where(out_of_range, 0, b).astype(u.dtype)
        r = np.left_shift(u, amount).view(a.dtype)
        return np.where(out_of_range, np.zeros((), a.dtype), r)
    amount = np.where(out_of_range, 0, b).astype(a.dtype)
    r = np.right_shift(a, amount)
    if dtype_kind(a.dtype.name) == "i":
        return np.where(out_of_range, np.where(a < 0, np.array(-1, a.dtype), np.zeros((), a.dtype)), r)
    return np.where(out_of_range, np.zeros((), a.dtype), r)


bitwise_and: _sig.BitwiseAnd = _binary("bitwise_and", np.bitwise_and, "Broadcasting bitwise ``a & b``.")
bitwise_or: _sig.BitwiseOr = _binary("bitwise_or", np.bitwise_or, "Broadcasting bitwise ``a | b``.")
bitwise_xor: _sig.BitwiseXor = _binary("bitwise_xor", np.bitwise_xor, "Broadcasting bitwise ``a ^ b``.")
left_shift: _sig.LeftShift = _binary(
    "left_shift", lambda a, b: _shift(a, b, True),
    "Broadcasting ``a << b``; shifts outside ``[0, bits)`` give 0.")
right_shift: _sig.RightShift = _binary(
    "right_shift", lambda a, b: _shift(a, b, False),
    "Broadcasting ``a >> b`` (arithmetic for signed dtypes).\n\n"
    "Shifts outside ``[0, bits)`` give 0 (-1 for negative signed values).")
logical_xor: _sig.LogicalXor = _binary("logical_xor", np.logical_xor, "Broadcasting boolean xor.",
                                       _bool_binary_rel)


def _not_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    _int_dtype(t, "input")
    return t


bitwise_not: _sig.BitwiseNot = register_op(
    "bitwise_not", num_inputs=1, type_rel=_not_rel, compute=lambda attrs, x: np.invert(x),
    pattern=OpPattern.ELEMWISE, doc="Elementwise bitwise ``~x``.")


def _bitcast_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    dt = attrs["dtype"]
    for d in (t.dtype, dt):
        if d in _SUB_BYTE:
            raise fail(f"bitcast of sub-byte dtype {d} is not supported")
    if np.dtype(t.dtype).itemsize != np.dtype(dt).itemsize:
        raise fail(f"bitcast needs dtypes of the same width, got {t.dtype} "
                   f"({np.dtype(t.dtype).itemsize * 8} bits) and {dt} ({np.dtype(dt).itemsize * 8} bits)")
    return TensorType(t.shape, dt)


def _bitcast(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    dt = np.dtype(attrs["dtype"])
    if dt == np.bool_:  # canonical 0/1 bytes
        return x.view(np.uint8) != 0
    return (x if x.flags.c_contiguous else x.copy()).view(dt)  # (ascontiguousarray makes 0-d 1-d)


bitcast: _sig.Bitcast = register_op(
    "bitcast", num_inputs=1, type_rel=_bitcast_rel, compute=_bitcast, pattern=OpPattern.ELEMWISE,
    doc="Reinterpret each element's bytes as ``dtype`` (of the same width; ONNX BitCast).",
    attrs=(AttrSpec("dtype", "dtype"),))
