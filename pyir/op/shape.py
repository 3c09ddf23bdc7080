"""Shape and creation operators: ``shape_of``, ``broadcast_to``, ``zeros``, ``ones``, ``full``,
``tile``, ``arange``, ``one_hot`` and ``topk`` (their shape arguments are attributes; the
``dyn.*`` operators of :mod:`pyir.op.dyn` take them as tensors computed at run time).

Every type relation accepts symbolic and unknown dimensions (:mod:`pyir.ir.dims`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike, dim_mul, dims_equal
from ..ir.node import Attrs
from ..ir.types import TensorType, TupleType, Type, normalize_dtype
from ._rel import fail, normalize_axis, shape_str, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["shape_of", "broadcast_to", "zeros", "ones", "full", "tile", "arange", "one_hot", "topk"]


def _int_dtype(op: str, dtype: str) -> str:
    if np.dtype(dtype).kind not in "iu":
        raise AttrError(f"operator {op!r}, attribute 'dtype': must be an integer dtype, got {dtype}")
    return dtype


def _non_negative(op: str, name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A canonicalizer rejecting negative values of the int(s) attribute ``name``."""
    def check(a: dict[str, Any]) -> dict[str, Any]:
        v = a[name]
        if any(x < 0 for x in (v if isinstance(v, tuple) else (v,))):
            raise AttrError(f"operator {op!r}, attribute {name!r}: must be non-negative, got {v}")
        return a
    return check


# -- shape_of ---------------------------------------------------------------------------------


def _shape_of_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType((tensor(types[0], "data").ndim,), attrs["dtype"])


shape_of: _sig.ShapeOf = register_op(
    "shape_of", num_inputs=1, type_rel=_shape_of_rel,
    compute=lambda attrs, x: np.asarray(x.shape, dtype=attrs["dtype"]), pattern=OpPattern.OPAQUE,
    doc="The shape of ``data`` as a 1-D integer tensor (known statically when the shape is).",
    attrs=(AttrSpec("dtype", "dtype", "int64"),),
    canonicalize=lambda a: {**a, "dtype": _int_dtype("shape_of", a["dtype"])})


# -- broadcast_to -----------------------------------------------------------------------------


def broadcast_to_shape(op: str, data: TensorType, shape: tuple[DimLike, ...]) -> TensorType:
    """``data`` broadcast to ``shape`` (numpy rules, one way): each dimension of ``data``
    must be 1 or the target's; a symbolic one that could equal the target is accepted."""
    if data.ndim > len(shape):
        raise fail(f"cannot broadcast {shape_str(data.shape)} to the lower rank {shape_str(shape)}")
    for d, t in zip(data.shape[::-1], shape[::-1]):
        if d == 1 or d is t or d is AnyDim or t is AnyDim:
            continue
        if dims_equal(d, t) is False and dims_equal(d, 1) is not None:
            raise fail(f"cannot broadcast {shape_str(data.shape)} to {shape_str(shape)}")
    return TensorType(shape, data.dtype)


def _broadcast_to_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return broadcast_to_shape("broadcast_to", tensor(types[0], "data"), attrs["shape"])


def _broadcast_to(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(x, attrs["shape"]))


broadcast_to: _sig.BroadcastTo = register_op(
    "broadcast_to", num_inputs=1, type_rel=_broadcast_to_rel, compute=_broadcast_to,
    pattern=OpPattern.BROADCAST, doc="Broadcast ``data`` to ``shape`` (numpy rules).",
    attrs=(AttrSpec("shape", "ints"),),
    canonicalize=_non_negative("broadcast_to", "shape"))


# -- zeros, ones, full ------------------------------------------------------------------------


def _creation_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType(attrs["shape"], attrs["dtype"])


def _creation(name: str, value: int, doc: str) -> Any:
    return register_op(
        name, num_inputs=0, type_rel=_creation_rel,
        compute=lambda attrs: np.full(attrs["shape"], value, dtype=attrs["dtype"]),
        pattern=OpPattern.ELEMWISE, doc=doc,
        attrs=(AttrSpec("shape", "ints"), AttrSpec("dtype", "dtype", "float32")),
        canonicalize=_non_negative(name, "shape"))


zeros: _sig.Zeros = _creation("zeros", 0, "A tensor of zeros of ``shape`` and ``dtype``.")
ones: _sig.Ones = _creation("ones", 1, "A tensor of ones of ``shape`` and ``dtype``.")


def fill_dtype(fill: TensorType, dtype: str) -> str:
    """The dtype of a ``full``: ``dtype``, or the fill value's when ``dtype`` is ``""``."""
    if fill.ndim != 0:
        raise fail(f"fill_value must be a scalar, got shape {shape_str(fill.shape)}")
    return dtype or fill.dtype


def _full_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType(attrs["shape"], fill_dtype(tensor(types[0], "fill_value"), attrs["dtype"]))


def _full_canon(a: dict[str, Any]) -> dict[str, Any]:
    _non_negative("full", "shape")(a)
    return {**a, "dtype": normalize_dtype(a["dtype"]) if a["dtype"] else ""}


full: _sig.Full = register_op(
    "full", num_inputs=1, type_rel=_full_rel,
    compute=lambda attrs, v: np.full(attrs["shape"], v, dtype=attrs["dtype"] or v.dtype),
    pattern=OpPattern.ELEMWISE, doc="A tensor of ``shape`` filled with the scalar ``fill_value``.",
    attrs=(AttrSpec("shape", "ints"), AttrSpec("dtype", "str", "", "a dtype; '' for fill_value's")),
    canonicalize=_full_canon)


# -- tile -------------------------------------------------------------------------------------


def tile_shape(data: TensorType, reps: tuple[DimLike, ...]) -> tuple[DimLike, ...]:
    """The shape of ``tile(data, reps)``: both sides padded with leading 1s, then multiplied."""
    rank = max(data.ndim, len(reps))
    ds = (1,) * (rank - data.ndim) + data.shape
    rs = (1,) * (rank - len(reps)) + tuple(reps)
    return tuple(dim_mul(d, r) for d, r in zip(ds, rs))


tile: _sig.Tile = register_op(
    "tile", num_inputs=1,
    type_rel=lambda types, attrs: TensorType(tile_shape(tensor(types[0], "data"), attrs["reps"]),
                                             tensor(types[0]).dtype),
    compute=lambda attrs, x: np.tile(x, attrs["reps"]), pattern=OpPattern.INJECTIVE,
    doc="Repeat ``data`` ``reps[i]`` times along each axis (numpy's ``tile``).",
    attrs=(AttrSpec("reps", "ints"),),
    canonicalize=_non_negative("tile", "reps"))


# -- arange -----------------------------------------------------------------------------------


def arange_length(start: float, stop: float, step: float) -> int:
    """The number of elements of ``arange(start, stop, step)``."""
    return max(0, math.ceil((stop - start) / step))


def _arange_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["step"] == 0 or not all(math.isfinite(a[k]) for k in ("start", "stop", "step")):
        raise AttrError(f"operator 'arange': start, stop and step must be finite and step nonzero, "
                        f"got {a['start']}, {a['stop']}, {a['step']}")
    return a


def _arange(attrs: Attrs) -> np.ndarray:
    n = arange_length(attrs["start"], attrs["stop"], attrs["step"])
    return (attrs["start"] + attrs["step"] * np.arange(n, dtype=np.float64)).astype(attrs["dtype"])


arange: _sig.Arange = register_op(
    "arange", num_inputs=0,
    type_rel=lambda types, attrs: TensorType(
        (arange_length(attrs["start"], attrs["stop"], attrs["step"]),), attrs["dtype"]),
    compute=_arange, pattern=OpPattern.INJECTIVE,
    doc="``start, start + step, ...`` up to (excluding) ``stop``.",
    attrs=(AttrSpec("start", "float", 0.0), AttrSpec("stop", "float"), AttrSpec("step", "float", 1.0),
           AttrSpec("dtype", "dtype", "float32")),
    canonicalize=_arange_canon)


# -- one_hot ----------------------------------------------------------------------------------


def one_hot_type(indices: TensorType, on: TensorType, off: TensorType, depth: DimLike, axis: int,
                 dtype: str) -> TensorType:
    """The type of ``one_hot``: ``depth`` inserted into the indices' shape at ``axis``."""
    if np.dtype(indices.dtype).kind not in "iu":
        raise fail(f"indices must be integers, got {indices.dtype}")
    if on.ndim or off.ndim:
        raise fail(f"on_value and off_value must be scalars, got {shape_str(on.shape)} and "
                   f"{shape_str(off.shape)}")
    ax = normalize_axis(axis, indices.ndim + 1)
    return TensorType(indices.shape[:ax] + (depth,) + indices.shape[ax:], dtype)


def _one_hot(attrs: Attrs, idx: np.ndarray, on: np.ndarray, off: np.ndarray, depth: Any = None) -> np.ndarray:
    d = attrs["depth"] if depth is None else int(np.asarray(depth).reshape(-1)[0])
    ax = attrs["axis"] % (idx.ndim + 1)
    shape = [1] * (idx.ndim + 1)
    shape[ax] = d
    hot = np.expand_dims(idx, ax) == np.arange(d).reshape(shape)
    return np.where(hot, on, off).astype(attrs["dtype"])


one_hot: _sig.OneHot = register_op(
    "one_hot", num_inputs=3,
    type_rel=lambda types, attrs: one_hot_type(tensor(types[0], "indices"), tensor(types[1], "on_value"),
                                               tensor(types[2], "off_value"), attrs["depth"],
                                               attrs["axis"], attrs["dtype"]),
    compute=_one_hot, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="``on_value`` where ``indices`` hits position i of a new ``depth``-long axis, else ``off_value``.",
    attrs=(AttrSpec("depth", "int"), AttrSpec("axis", "int", -1), AttrSpec("dtype", "dtype", "float32")),
    canonicalize=_non_negative("one_hot", "depth"))


# -- topk -------------------------------------------------------------------------------------

_RET_TYPES = ("both", "values", "indices")


def topk_type(data: TensorType, k: DimLike, axis: int, ret_type: str, dtype: str) -> Type:
    """The type of ``topk``: the axis becomes ``k`` (the whole axis when ``k`` is an int < 1)."""
    ax = normalize_axis(axis, data.ndim)
    size = data.shape[ax]
    if type(k) is int:
        if k < 1:
            k = size
        elif type(size) is int and k > size:
            raise fail(f"k={k} exceeds the axis size {size} of {shape_str(data.shape)}")
    shape = data.shape[:ax] + (k,) + data.shape[ax + 1:]
    values, indices = TensorType(shape, data.dtype), TensorType(shape, dtype)
    return TupleType([values, indices]) if ret_type == "both" else values if ret_type == "values" else indices


def _topk_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["ret_type"] not in _RET_TYPES:
        raise AttrError(f"operator 'topk', attribute 'ret_type': must be one of {_RET_TYPES}, "
                        f"got {a['ret_type']!r}")
    return {**a, "dtype": _int_dtype("topk", a["dtype"])}


def topk_compute(attrs: Attrs, x: np.ndarray, k: int) -> Any:
    """``topk`` on arrays: a stable sort, largest first unless ``is_ascend``."""
    ax = attrs["axis"] % x.ndim
    if k < 1:
        k = x.shape[ax]
    if attrs["is_ascend"]:
        order = np.argsort(x, axis=ax, kind="stable")
    else:  # descending with ties in index order: a stable sort of the flipped axis, reversed
        flipped = np.argsort(np.flip(x, ax), axis=ax, kind="stable")
        order = x.shape[ax] - 1 - np.flip(flipped, ax)
    idx = np.take(order, np.arange(k), axis=ax)
    vals = np.take_along_axis(x, idx, axis=ax)
    idx = idx.astype(attrs["dtype"])
    rt = attrs["ret_type"]
    return (vals, idx) if rt == "both" else vals if rt == "values" else idx


topk: _sig.Topk = register_op(
    "topk", num_inputs=1,
    type_rel=lambda types, attrs: topk_type(tensor(types[0], "data"), attrs["k"], attrs["axis"],
                                            attrs["ret_type"], attrs["dtype"]),
    compute=lambda attrs, x: topk_compute(attrs, x, attrs["k"]), pattern=OpPattern.OPAQUE,
    doc="The ``k`` largest (``is_ascend``: smallest) elements along ``axis`` and their indices.",
    attrs=(AttrSpec("k", "int", 1), AttrSpec("axis", "int", -1), AttrSpec("ret_type", "str", "both"),
           AttrSpec("is_ascend", "bool", False), AttrSpec("dtype", "dtype", "int32")),
    canonicalize=_topk_canon)
