"""Relay's ``_like`` operators and two more of its tensor operators: ``reshape_like``,
``cast_like``, ``broadcast_to_like``, ``ndarray_size`` and ``argsort``.

* ``reshape_like(data, shape_like, lhs_begin=0, lhs_end=None, rhs_begin=0, rhs_end=None)``:
  ``data`` reshaped, the axes ``[lhs_begin, lhs_end)`` of its shape replaced by the axes
  ``[rhs_begin, rhs_end)`` of ``shape_like``'s (None: to the end; negative: from the end).
* ``cast_like(data, dtype_like)``: ``data`` cast to ``dtype_like``'s dtype.
* ``broadcast_to_like(data, broadcast_type)``: ``data`` broadcast to ``broadcast_type``'s shape.
* ``ndarray_size(data, dtype="int32")``: the number of elements of ``data``, a scalar.
* ``argsort(data, axis=-1, is_ascend=True, dtype="int32")``: the indices that sort ``data``
  along ``axis`` (stable: equal values keep their order, in both directions).

SimplifyExpr turns the ``_like`` forms into ``reshape`` / ``cast`` / ``broadcast_to`` once the
shape (the dtype for ``cast_like``) is known; FoldConstant folds ``ndarray_size`` of a static
shape.  Every type relation accepts symbolic and unknown dimensions (:mod:`pyir.ir.dims`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.dims import DimLike
from ..ir.node import Attrs
from ..ir.types import TensorType, Type
from ._rel import broadcast_shapes, fail, normalize_axis, shape_str, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["reshape_like", "cast_like", "broadcast_to_like", "ndarray_size", "argsort"]


def _span(begin: int, end: int | None, ndim: int, what: str) -> tuple[int, int]:
    b = begin + ndim if begin < 0 else begin
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise fail(f"reshape_like: {what} axes [{begin}, {end}) out of range for rank {ndim}")
    return b, e


def reshape_like_shape(data: tuple[DimLike, ...], like: tuple[DimLike, ...],
                       attrs: Attrs) -> tuple[DimLike, ...]:
    """The shape ``reshape_like`` gives ``data`` (see the module docstring)."""
    lb, le = _span(attrs["lhs_begin"], attrs["lhs_end"], len(data), "lhs")
    rb, re_ = _span(attrs["rhs_begin"], attrs["rhs_end"], len(like), "rhs")
    return (*data[:lb], *like[rb:re_], *data[le:])


def _reshape_like_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, like = tensor(types[0], "data"), tensor(types[1], "shape_like")
    shape = reshape_like_shape(d.shape, like.shape, attrs)
    static = all(type(s) is int for s in (*d.shape, *shape))
    if static and math.prod(d.shape) != math.prod(shape):
        raise fail(f"reshape_like: cannot reshape {shape_str(d.shape)} to {shape_str(shape)}")
    return TensorType(shape, d.dtype)


reshape_like: _sig.ReshapeLike = register_op(
    "reshape_like", num_inputs=2, type_rel=_reshape_like_rel,
    compute=lambda attrs, x, like: x.reshape(reshape_like_shape(x.shape, like.shape, attrs)),
    pattern=OpPattern.INJECTIVE,
    doc="Reshape ``data`` to (part of) ``shape_like``'s shape.",
    attrs=(AttrSpec("lhs_begin", "int", 0, "first axis of data's shape replaced"),
           AttrSpec("lhs_end", "int?", None, "end of data's replaced axes (None: the rank)"),
           AttrSpec("rhs_begin", "int", 0, "first axis of shape_like's shape taken"),
           AttrSpec("rhs_end", "int?", None, "end of shape_like's axes taken (None: the rank)")))


def _cast_like_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, like = tensor(types[0], "data"), tensor(types[1], "dtype_like")
    return TensorType(d.shape, like.dtype)


cast_like: _sig.CastLike = register_op(
    "cast_like", num_inputs=2, type_rel=_cast_like_rel,
    compute=lambda attrs, x, like: x.astype(like.dtype), pattern=OpPattern.ELEMWISE,
    doc="Cast ``data`` to the dtype of ``dtype_like``.")


def _broadcast_to_like_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, like = tensor(types[0], "data"), tensor(types[1], "broadcast_type")
    broadcast_shapes(d.shape, like.shape)
    if d.ndim > like.ndim:
        raise fail(f"broadcast_to_like: cannot broadcast {shape_str(d.shape)} to {shape_str(like.shape)}")
    return TensorType(like.shape, d.dtype)


broadcast_to_like: _sig.BroadcastToLike = register_op(
    "broadcast_to_like", num_inputs=2, type_rel=_broadcast_to_like_rel,
    compute=lambda attrs, x, like: np.broadcast_to(x, like.shape).copy(), pattern=OpPattern.BROADCAST,
    doc="Broadcast ``data`` to the shape of ``broadcast_type``.")


def _ndarray_size_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    tensor(types[0], "data")
    return TensorType((), attrs["dtype"])


ndarray_size: _sig.NdarraySize = register_op(
    "ndarray_size", num_inputs=1, type_rel=_ndarray_size_rel,
    compute=lambda attrs, x: np.asarray(np.size(x), attrs["dtype"]), pattern=OpPattern.OPAQUE,
    doc="The number of elements of ``data``, a scalar of ``dtype``.",
    attrs=(AttrSpec("dtype", "dtype", "int32", "the dtype of the result"),))


def _argsort_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    if d.ndim == 0:
        raise fail("argsort needs at least one axis, got a scalar")
    normalize_axis(attrs["axis"], d.ndim)
    return TensorType(d.shape, attrs["dtype"])


def _argsort(attrs: Attrs, x: np.ndarray) -> Any:
    if attrs["is_ascend"]:
        key = x
    elif x.dtype.kind in "biu":
        key = ~x  # reverses the order of every integer (and bool) without overflow
    else:
        key = -x
    return np.argsort(key, axis=attrs["axis"], kind="stable").astype(attrs["dtype"])


argsort: _sig.Argsort = register_op(
    "argsort", num_inputs=1, type_rel=_argsort_rel, compute=_argsort, pattern=OpPattern.OPAQUE,
    doc="The indices that sort ``data`` along ``axis`` (stable), ascending or not.",
    attrs=(AttrSpec("axis", "int", -1, "the axis sorted"),
           AttrSpec("is_ascend", "bool", True, "ascending (True) or descending order"),
           AttrSpec("dtype", "dtype", "int32", "the dtype of the indices")))
