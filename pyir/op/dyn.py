"""Dynamic operators (``dyn.*``, after Relay's): shape-like arguments are tensors computed at
run time, so output dimensions are unknown (``?``) where they depend on those values.

``dyn.reshape(x, newshape)``, ``dyn.broadcast_to(x, shape)``, ``dyn.zeros(shape)``,
``dyn.ones(shape)``, ``dyn.full(fill_value, shape)``, ``dyn.strided_slice(x, begin, end,
strides)``, ``dyn.nn.pad(x, pad_width, pad_value)``, ``dyn.tile(x, reps)``, ``dyn.topk(x,
k)``, ``dyn.image.resize2d(x, size)``, ``dyn.one_hot(indices, on_value, off_value, depth)``
and ``dyn.arange(start, stop, step)``.  A shape argument is a 1-D integer tensor whose
length (the rank it gives) is static; scalar arguments (``k``, ``depth``, ``fill_value``,
``pad_value``, arange's bounds) are 0-D tensors.  The interpreter computes everything.

:data:`TO_STATIC` maps each operator to the function that rewrites a call whose shape
arguments are constants into the static operator (used by
:class:`~pyir.transform.DynamicToStatic`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EvaluationError, TypeCheckError
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike
from ..ir.expr import Call, Constant, Expr, Op
from ..ir.node import Attrs
from ..ir.types import TensorType, Type, normalize_dtype
from . import image, nn, shape, tensor
from ._rel import fail, shape_str
from ._rel import tensor as as_tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["reshape", "broadcast_to", "zeros", "ones", "full", "strided_slice", "pad", "tile", "topk",
           "resize2d", "one_hot", "arange"]


def _int_tensor(t: Type, what: str, ndim: int) -> TensorType:
    v = as_tensor(t, what)
    if np.dtype(v.dtype).kind not in "iu" or v.ndim != ndim:
        raise fail(f"{what} must be a {ndim}-D integer tensor, got {v}")
    return v


def _shape_len(t: Type, what: str = "shape") -> int:
    """The static length of a 1-D integer shape tensor."""
    v = _int_tensor(t, what, 1)
    n = v.shape[0]
    if type(n) is not int:
        raise fail(f"{what} must have a static length (it sets the rank), got {v}")
    return n


def _scalar(t: Type, what: str, kinds: str = "iu") -> TensorType:
    v = as_tensor(t, what)
    if v.ndim != 0 or np.dtype(v.dtype).kind not in kinds:
        raise fail(f"{what} must be a scalar ({'an integer' if kinds == 'iu' else 'a number'}), got {v}")
    return v


def _ints(a: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(a).reshape(-1))


def _int(a: np.ndarray) -> int:
    return int(np.asarray(a).reshape(-1)[0])


# -- reshape, broadcast_to, zeros, ones, full -------------------------------------------------


def _reshape_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    return TensorType((AnyDim,) * _shape_len(types[1], "newshape"), d.dtype)


def _reshape(attrs: Attrs, x: np.ndarray, newshape: np.ndarray) -> np.ndarray:
    try:
        return x.reshape(tensor._infer_reshape(x.shape, _ints(newshape)))
    except TypeCheckError as e:  # at run time, a bad shape value is an evaluation error
        raise EvaluationError(f"dyn.reshape: {e}") from None


reshape: _sig.DynReshape = register_op(
    "dyn.reshape", num_inputs=2, type_rel=_reshape_rel, compute=_reshape, pattern=OpPattern.INJECTIVE,
    doc="``reshape`` to a run-time ``newshape`` (1-D integer tensor; 0 copies, -1 infers a dimension).")


def _broadcast_to_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    n = _shape_len(types[1])
    if d.ndim > n:
        raise fail(f"cannot broadcast {shape_str(d.shape)} to rank {n}")
    # a data dimension that is not 1 is the result's (the target must equal it); the others are ?
    lead: tuple[DimLike, ...] = (AnyDim,) * (n - d.ndim)
    return TensorType(lead + tuple(AnyDim if x == 1 or x is AnyDim or type(x) is not int else x
                                   for x in d.shape), d.dtype)


broadcast_to: _sig.DynBroadcastTo = register_op(
    "dyn.broadcast_to", num_inputs=2, type_rel=_broadcast_to_rel,
    compute=lambda attrs, x, s: np.ascontiguousarray(np.broadcast_to(x, _ints(s))),
    pattern=OpPattern.BROADCAST, doc="``broadcast_to`` a run-time ``shape`` (1-D integer tensor).")


def _creation(name: str, value: int) -> Any:
    return register_op(
        name, num_inputs=1,
        type_rel=lambda types, attrs: TensorType((AnyDim,) * _shape_len(types[0]), attrs["dtype"]),
        compute=lambda attrs, s: np.full(_ints(s), value, dtype=attrs["dtype"]),
        pattern=OpPattern.ELEMWISE,
        doc=f"A tensor of {'zeros' if value == 0 else 'ones'} of a run-time shape.",
        attrs=(AttrSpec("dtype", "dtype", "float32"),))


zeros: _sig.DynZeros = _creation("dyn.zeros", 0)
ones: _sig.DynOnes = _creation("dyn.ones", 1)


def _full_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    dt = shape.fill_dtype(as_tensor(types[0], "fill_value"), attrs["dtype"])
    return TensorType((AnyDim,) * _shape_len(types[1]), dt)


full: _sig.DynFull = register_op(
    "dyn.full", num_inputs=2, type_rel=_full_rel,
    compute=lambda attrs, v, s: np.full(_ints(s), v, dtype=attrs["dtype"] or v.dtype),
    pattern=OpPattern.ELEMWISE, doc="A tensor of a run-time shape filled with the scalar ``fill_value``.",
    attrs=(AttrSpec("dtype", "str", "", "a dtype; '' for fill_value's"),),
    canonicalize=lambda a: {**a, "dtype": normalize_dtype(a["dtype"]) if a["dtype"] else ""})


# -- strided_slice, pad, tile -----------------------------------------------------------------


def _strided_slice_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    n = _shape_len(types[1], "begin")
    if _shape_len(types[2], "end") != n or _shape_len(types[3], "strides") != n:
        raise fail("begin, end and strides must have equal lengths")
    if n > d.ndim:
        raise fail(f"{n} slice bounds for data of rank {d.ndim}")
    return TensorType((AnyDim,) * n + d.shape[n:], d.dtype)


def _strided_slice(attrs: Attrs, x: np.ndarray, b: np.ndarray, e: np.ndarray, s: np.ndarray) -> np.ndarray:
    steps = _ints(s)
    if 0 in steps:
        raise EvaluationError("dyn.strided_slice: a stride is 0")
    return x[tuple(slice(*t) for t in zip(_ints(b), _ints(e), steps))]


strided_slice: _sig.DynStridedSlice = register_op(
    "dyn.strided_slice", num_inputs=4, type_rel=_strided_slice_rel, compute=_strided_slice,
    pattern=OpPattern.INJECTIVE,
    doc="``x[begin:end:strides]`` on the leading axes, with run-time 1-D integer bounds.")


def _pad_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    pw = _int_tensor(types[1], "pad_width", 2)
    if pw.shape[1] != 2 or (type(pw.shape[0]) is int and pw.shape[0] != d.ndim):
        raise fail(f"pad_width must have shape ({d.ndim}, 2) for data {shape_str(d.shape)}, got {pw}")
    v = _scalar(types[2], "pad_value", "iufb")
    if v.dtype != d.dtype:
        raise fail(f"pad_value dtype {v.dtype} != data dtype {d.dtype}")
    return TensorType((AnyDim,) * d.ndim, d.dtype)


def _pad(attrs: Attrs, x: np.ndarray, pw: np.ndarray, v: np.ndarray) -> np.ndarray:
    flat = _ints(pw)
    return nn._pad(Attrs(pad_width=flat, pad_value=float(v), pad_mode=attrs["pad_mode"]), x)


pad: _sig.DynNnPad = register_op(
    "dyn.nn.pad", num_inputs=3, type_rel=_pad_rel, compute=_pad, pattern=OpPattern.INJECTIVE,
    doc="``nn.pad`` with a run-time ``pad_width`` (integer tensor of shape (rank, 2)) and ``pad_value``.",
    attrs=(AttrSpec("pad_mode", "str", "constant", "constant, edge or reflect"),),
    canonicalize=lambda a: nn._pad_canon({**a, "pad_width": (), "pad_value": 0.0}) and a)


def _tile_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    return TensorType((AnyDim,) * max(d.ndim, _shape_len(types[1], "reps")), d.dtype)


tile: _sig.DynTile = register_op(
    "dyn.tile", num_inputs=2, type_rel=_tile_rel, compute=lambda attrs, x, r: np.tile(x, _ints(r)),
    pattern=OpPattern.INJECTIVE, doc="``tile`` with run-time ``reps`` (1-D integer tensor).")


# -- topk, resize2d, one_hot, arange ----------------------------------------------------------


def _topk_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _scalar(types[1], "k")
    return shape.topk_type(as_tensor(types[0], "data"), AnyDim, attrs["axis"], attrs["ret_type"],
                           attrs["dtype"])


topk: _sig.DynTopk = register_op(
    "dyn.topk", num_inputs=2, type_rel=_topk_rel,
    compute=lambda attrs, x, k: shape.topk_compute(attrs, x, _int(k)), pattern=OpPattern.OPAQUE,
    doc="``topk`` with a run-time ``k`` (integer scalar; < 1 takes the whole axis).",
    attrs=(AttrSpec("axis", "int", -1), AttrSpec("ret_type", "str", "both"),
           AttrSpec("is_ascend", "bool", False), AttrSpec("dtype", "dtype", "int32")),
    canonicalize=lambda a: shape._topk_canon(a))


def _resize2d_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    if _shape_len(types[1], "size") != 2:
        raise fail(f"size must hold 2 ints, got {types[1]}")
    return image.resize2d_type(as_tensor(types[0], "data"), (AnyDim, AnyDim), attrs["layout"])


def _resize2d(attrs: Attrs, x: np.ndarray, size: np.ndarray) -> np.ndarray:
    h, w = _ints(size)
    return image.resize2d_compute(attrs, x, (h, w))


resize2d: _sig.DynImageResize2d = register_op(
    "dyn.image.resize2d", num_inputs=2, type_rel=_resize2d_rel, compute=_resize2d,
    pattern=OpPattern.INJECTIVE, doc="``image.resize2d`` to a run-time ``size`` (2 integers).",
    attrs=image.RESIZE_ATTRS[1:],
    canonicalize=lambda a: image._canon({**a, "size": (1, 1)}) and a)


def _one_hot_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _scalar(types[3], "depth")
    return shape.one_hot_type(as_tensor(types[0], "indices"), as_tensor(types[1], "on_value"),
                              as_tensor(types[2], "off_value"), AnyDim, attrs["axis"], attrs["dtype"])


one_hot: _sig.DynOneHot = register_op(
    "dyn.one_hot", num_inputs=4, type_rel=_one_hot_rel,
    compute=lambda attrs, i, on, off, d: shape._one_hot(attrs, i, on, off, d),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="``one_hot`` with a run-time ``depth`` (integer scalar).",
    attrs=(AttrSpec("axis", "int", -1), AttrSpec("dtype", "dtype", "float32")))


def _arange_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    for t, what in zip(types, ("start", "stop", "step")):
        _scalar(t, what, "iuf")
    return TensorType((AnyDim,), attrs["dtype"])


def _arange(attrs: Attrs, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    start, stop, step = float(a), float(b), float(c)
    if step == 0:
        raise EvaluationError("dyn.arange: step is 0")
    return shape._arange(Attrs(start=start, stop=stop, step=step, dtype=attrs["dtype"]))


arange: _sig.DynArange = register_op(
    "dyn.arange", num_inputs=3, type_rel=_arange_rel, compute=_arange, pattern=OpPattern.INJECTIVE,
    doc="``arange`` with run-time ``start``, ``stop`` and ``step`` (scalars).",
    attrs=(AttrSpec("dtype", "dtype", "float32"),))


# -- to static --------------------------------------------------------------------------------


def _values(args: tuple[Expr, ...], positions: tuple[int, ...]) -> list[np.ndarray] | None:
    out = []
    for i in positions:
        a = args[i]
        if type(a) is not Constant:
            return None
        out.append(a.data)
    return out


def _static(positions: tuple[int, ...], make: Callable[[tuple[Expr, ...], Attrs, list[np.ndarray]], Expr]
            ) -> Callable[[Call], Expr | None]:
    def to_static(call: Call) -> Expr | None:
        vals = _values(call.args, positions)
        return None if vals is None else make(call.args, call.attrs, vals)
    return to_static


TO_STATIC: dict[Op, Callable[[Call], Expr | None]] = {
    Op("dyn.reshape"): _static((1,), lambda a, at, v: tensor.reshape(a[0], newshape=_ints(v[0]))),
    Op("dyn.broadcast_to"): _static((1,), lambda a, at, v: shape.broadcast_to(a[0], shape=_ints(v[0]))),
    Op("dyn.zeros"): _static((0,), lambda a, at, v: shape.zeros(shape=_ints(v[0]), dtype=at["dtype"])),
    Op("dyn.ones"): _static((0,), lambda a, at, v: shape.ones(shape=_ints(v[0]), dtype=at["dtype"])),
    Op("dyn.full"): _static((1,), lambda a, at, v: shape.full(a[0], shape=_ints(v[0]), dtype=at["dtype"])),
    Op("dyn.strided_slice"): _static((1, 2, 3), lambda a, at, v: tensor.strided_slice(
        a[0], begin=_ints(v[0]), end=_ints(v[1]), strides=_ints(v[2]))),
    Op("dyn.nn.pad"): _static((1, 2), lambda a, at, v: nn.pad(
        a[0], pad_width=_ints(v[0]), pad_value=float(v[1]), pad_mode=at["pad_mode"])),
    Op("dyn.tile"): _static((1,), lambda a, at, v: shape.tile(a[0], reps=_ints(v[0]))),
    Op("dyn.topk"): _static((1,), lambda a, at, v: shape.topk(
        a[0], k=_int(v[0]), axis=at["axis"], ret_type=at["ret_type"], is_ascend=at["is_ascend"],
        dtype=at["dtype"])),
    Op("dyn.image.resize2d"): _static((1,), lambda a, at, v: image.resize2d(
        a[0], size=_ints(v[0]), **{s.name: at[s.name] for s in image.RESIZE_ATTRS[1:]})),
    Op("dyn.one_hot"): _static((3,), lambda a, at, v: shape.one_hot(
        a[0], a[1], a[2], depth=_int(v[0]), axis=at["axis"], dtype=at["dtype"])),
    Op("dyn.arange"): _static((0, 1, 2), lambda a, at, v: shape.arange(
        start=float(v[0]), stop=float(v[1]), step=float(v[2]), dtype=at["dtype"])),
}
"""dyn operator -> a function of a call: the static call when its shape arguments are constants, else None."""

