"""Dynamic operators (``dyn.*``, after Relay's): shape-like arguments are tensors computed at
run time, so output dimensions are unknown (``?``) where they depend on those values.

``dyn.reshape(x, newshape)``, ``dyn.broadcast_to(x, shape)``, ``dyn.zeros(shape)``,
``dyn.ones(shape)``, ``dyn.full(fill_value, shape)``, ``dyn.strided_slice(x, begin, end,
strides)``, ``dyn.nn.pad(x, pad_width, pad_value)``, ``dyn.tile(x, reps)``, ``dyn.topk(x,
k)``, ``dyn.image.resize2d(x, size)``, ``dyn.one_hot(indices, on_value, off_value, depth)``
and ``dyn.arange(start, stop, step)``; for ONNX's run-time axes and sizes also the reductions
``dyn.sum/mean/max/min/prod(x, axes)``, ``dyn.split(x, sizes)``, ``dyn.squeeze(x, axes)``,
``dyn.unsqueeze(x, axes)`` and ``dyn.expand(x, shape)`` (two-way broadcasting).  A shape
argument is a 1-D integer tensor whose length (the rank it gives) is static; scalar arguments
(``k``, ``depth``, ``fill_value``, ``pad_value``, arange's bounds) are 0-D tensors.
The interpreter computes everything.

:data:`TO_STATIC` maps each operator to the function that rewrites a call whose shape
arguments are constants into the static operator (used by
:class:`~pyir.transform.DynamicToStatic`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EvaluationError, TypeCheckError
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike
from ..ir.expr import Call, Constant, Expr, Op
from ..ir.node import Attrs
from ..ir.types import TensorType, Type, dtype_kind, normalize_dtype
from . import image, nn, shape, tensor
from ._rel import fail, normalize_axis, shape_str
from ._rel import tensor as as_tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["reshape", "broadcast_to", "zeros", "ones", "full", "strided_slice", "pad", "tile", "topk",
           "resize2d", "one_hot", "arange",
           "sum", "mean", "max", "min", "prod", "split", "squeeze", "unsqueeze", "expand"]


def _int_tensor(t: Type, what: str, ndim: int) -> TensorType:
    v = as_tensor(t, what)
    if dtype_kind(v.dtype) not in "iu" or v.ndim != ndim:
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
    if v.ndim != 0 or dtype_kind(v.dtype) not in kinds:
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
    ns = _ints(newshape)
    if attrs["allowzero"] and 0 in ns:  # a 0 is a dimension of length 0 (ONNX's allowzero=1)
        if -1 in ns or int(np.prod(ns)) != x.size:
            raise EvaluationError(f"dyn.reshape: cannot reshape {x.shape} to {ns} (allowzero)")
        return x.reshape(ns)
    try:
        return x.reshape(tensor._infer_reshape(x.shape, ns))
    except TypeCheckError as e:  # at run time, a bad shape value is an evaluation error
        raise EvaluationError(f"dyn.reshape: {e}") from None


reshape: _sig.DynReshape = register_op(
    "dyn.reshape", num_inputs=2, type_rel=_reshape_rel, compute=_reshape, pattern=OpPattern.INJECTIVE,
    doc="``reshape`` to a run-time ``newshape`` (0 copies unless ``allowzero``; -1 infers).",
    attrs=(AttrSpec("allowzero", "bool", False),))


def _reshape_static(args: tuple[Expr, ...], attrs: Attrs, v: list[np.ndarray]) -> Expr:
    ns = _ints(v[0])
    if attrs["allowzero"] and 0 in ns:  # an empty result: its values do not depend on the data
        t = args[0].checked_type
        if -1 in ns or type(t) is not TensorType or not t.static or 0 not in t.shape:
            raise TypeCheckError(f"dyn.reshape: cannot reshape {t} to {ns} (allowzero)")
        return shape.zeros(shape=ns, dtype=t.dtype)
    return tensor.reshape(args[0], newshape=ns)


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
    return nn.pad_compute(x, nn.pad_pairs("dyn.nn.pad", flat), v, attrs["pad_mode"])


pad: _sig.DynNnPad = register_op(
    "dyn.nn.pad", num_inputs=3, type_rel=_pad_rel, compute=_pad, pattern=OpPattern.INJECTIVE,
    doc="``nn.pad`` with a run-time ``pad_width`` (integer tensor of shape (rank, 2)) and ``pad_value``.",
    attrs=(AttrSpec("pad_mode", "str", "constant", "constant, edge or reflect"),),
    canonicalize=lambda a: nn._pad_canon({**a, "pad_width": ()}) and a)


def _tile_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    return TensorType((AnyDim,) * builtins.max(d.ndim, _shape_len(types[1], "reps")), d.dtype)


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


# -- reductions, split, squeeze, unsqueeze, expand (ONNX's run-time axes and sizes) -----------


def _axes_value(op: str, a: np.ndarray, ndim: int) -> tuple[int, ...]:
    """Run-time axes in ``[0, ndim)``, distinct, sorted (an EvaluationError otherwise)."""
    axes = _ints(a)
    if any(not -ndim <= v < builtins.max(ndim, 1) for v in axes):
        raise EvaluationError(f"{op}: axes {axes} out of range for rank {ndim}")
    norm = sorted({v % ndim if ndim else 0 for v in axes})
    if len(norm) != len(axes):
        raise EvaluationError(f"{op}: axes {axes} repeat an axis")
    return tuple(norm)


def _reduce_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    n = _shape_len(types[1], "axes")
    if n > d.ndim:
        raise fail(f"{n} axes for data of rank {d.ndim}")
    if attrs["keepdims"]:  # a dimension of 1 stays 1 whether it is reduced or not
        return TensorType(tuple(1 if x == 1 else AnyDim for x in d.shape), d.dtype)
    return TensorType((AnyDim,) * (d.ndim - n), d.dtype)


def _dyn_reduction(name: str, fn: Callable[..., np.ndarray]) -> Any:
    def compute(attrs: Attrs, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
        return tensor.reduce_compute(fn, x, _axes_value(name, axes, x.ndim), attrs["keepdims"])

    return register_op(
        name, num_inputs=2, type_rel=_reduce_rel, compute=compute, pattern=OpPattern.COMM_REDUCE,
        doc=f"``{name[4:]}`` over run-time ``axes`` (distinct; empty reduces nothing).",
        attrs=(AttrSpec("keepdims", "bool", False),))


sum: _sig.DynSum = _dyn_reduction("dyn.sum", np.sum)  # noqa: A001
mean: _sig.DynMean = _dyn_reduction("dyn.mean", np.mean)
max: _sig.DynMax = _dyn_reduction("dyn.max", np.max)  # noqa: A001
min: _sig.DynMin = _dyn_reduction("dyn.min", np.min)  # noqa: A001
prod: _sig.DynProd = _dyn_reduction("dyn.prod", np.prod)


def _split_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    from ..ir.types import TupleType

    d = as_tensor(types[0], "data")
    n = _shape_len(types[1], "sizes")
    ax = normalize_axis(attrs["axis"], d.ndim)
    part = TensorType(d.shape[:ax] + (AnyDim,) + d.shape[ax + 1:], d.dtype)
    return TupleType([part] * n)


def _split(attrs: Attrs, x: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = attrs["axis"] % x.ndim
    sz = _ints(sizes)
    if any(v < 0 for v in sz) or builtins.sum(sz) != x.shape[ax]:
        raise EvaluationError(f"dyn.split: sizes {sz} do not add up to dimension {x.shape[ax]}")
    return tuple(np.split(x, np.cumsum(sz)[:-1], axis=ax))


split: _sig.DynSplit = register_op(
    "dyn.split", num_inputs=2, type_rel=_split_rel, compute=_split, pattern=OpPattern.INJECTIVE,
    doc="``split`` along ``axis`` into pieces of run-time ``sizes``; returns a tuple.",
    attrs=(AttrSpec("axis", "int", 0),))


def _squeeze_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    n = _shape_len(types[1], "axes")
    if n > d.ndim:
        raise fail(f"{n} axes to squeeze for data of rank {d.ndim}")
    rest = [x for x in d.shape if x != 1]
    # the dimensions that are not 1 all stay: when they are the whole result, it is known
    return TensorType(tuple(rest) if len(rest) == d.ndim - n else (AnyDim,) * (d.ndim - n), d.dtype)


def _squeeze(attrs: Attrs, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    ax = _axes_value("dyn.squeeze", axes, x.ndim)
    if any(x.shape[i] != 1 for i in ax):
        raise EvaluationError(f"dyn.squeeze: axes {ax} of shape {x.shape} are not all 1")
    return np.squeeze(x, axis=ax)


squeeze: _sig.DynSqueeze = register_op(
    "dyn.squeeze", num_inputs=2, type_rel=_squeeze_rel, compute=_squeeze, pattern=OpPattern.INJECTIVE,
    doc="``squeeze`` the run-time ``axes`` (1-D integer tensor; each must be of length 1).")


def _unsqueeze_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = as_tensor(types[0], "data")
    n = _shape_len(types[1], "axes")
    if builtins.all(x == 1 for x in d.shape):
        return TensorType((1,) * (d.ndim + n), d.dtype)
    return TensorType((AnyDim,) * (d.ndim + n), d.dtype)


def _unsqueeze_shape(op: str, shape: tuple[int, ...], axes: np.ndarray) -> tuple[int, ...]:
    ax = _axes_value(op, axes, len(shape) + len(_ints(axes)))
    out = list(shape)
    for v in ax:
        out.insert(v, 1)
    return tuple(out)


unsqueeze: _sig.DynUnsqueeze = register_op(
    "dyn.unsqueeze", num_inputs=2, type_rel=_unsqueeze_rel,
    compute=lambda attrs, x, axes: x.reshape(_unsqueeze_shape("dyn.unsqueeze", x.shape, axes)),
    pattern=OpPattern.INJECTIVE,
    doc="Insert unit axes at the run-time ``axes`` (positions in the result, as ONNX's).")


def _expand(attrs: Attrs, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    try:
        shape_ = np.broadcast_shapes(x.shape, _ints(s))
    except ValueError:
        raise EvaluationError(f"dyn.expand: shape {x.shape} does not broadcast with {_ints(s)}") from None
    return np.ascontiguousarray(np.broadcast_to(x, shape_))


expand: _sig.DynExpand = register_op(
    "dyn.expand", num_inputs=2, type_rel=_broadcast_to_rel, compute=_expand, pattern=OpPattern.BROADCAST,
    doc="Broadcast ``data`` and a run-time ``shape`` both ways (ONNX's Expand).")


def _expand_static(args: tuple[Expr, ...], attrs: Attrs, v: list[np.ndarray]) -> Expr | None:
    t = args[0].checked_type
    if type(t) is not TensorType or not t.static:
        return None
    try:
        target = np.broadcast_shapes(t.shape, _ints(v[0]))  # type: ignore[arg-type]
    except ValueError:
        return None
    return shape.broadcast_to(args[0], shape=tuple(int(d) for d in target))


def _reduce_static(fn: Callable[..., Expr]) -> Callable[[tuple[Expr, ...], Attrs, list[np.ndarray]], Expr]:
    return lambda a, at, v: fn(a[0], axis=_ints(v[0]), keepdims=at["keepdims"])


def _split_static(args: tuple[Expr, ...], attrs: Attrs, v: list[np.ndarray]) -> Expr:
    sz = _ints(v[0])
    t = tensor.split(args[0], indices_or_sections=tuple(int(c) for c in np.cumsum(sz)[:-1]),
                     axis=attrs["axis"], by_sections=False)
    return t


def _unsqueeze_static(args: tuple[Expr, ...], attrs: Attrs, v: list[np.ndarray]) -> Expr | None:
    t = args[0].checked_type
    if type(t) is not TensorType:
        return None
    n = len(_ints(v[0]))
    ax = sorted(normalize_axis(a, t.ndim + n) for a in _ints(v[0]))
    if len(set(ax)) != n:
        return None
    if not t.static:  # symbolic dimensions: insert the axes one by one
        y = args[0]
        for a in ax:
            y = tensor.expand_dims(y, axis=a)
        return y
    out: list[int] = list(t.shape)  # type: ignore[arg-type]
    for a in ax:
        out.insert(a, 1)
    return tensor.reshape(args[0], newshape=tuple(out))


# -- to static --------------------------------------------------------------------------------


def _values(args: tuple[Expr, ...], positions: tuple[int, ...]) -> list[np.ndarray] | None:
    out = []
    for i in positions:
        a = args[i]
        if type(a) is not Constant:
            return None
        out.append(a.data)
    return out


def _static(positions: tuple[int, ...],
            make: Callable[[tuple[Expr, ...], Attrs, list[np.ndarray]], Expr | None]
            ) -> Callable[[Call], Expr | None]:
    def to_static(call: Call) -> Expr | None:
        vals = _values(call.args, positions)
        return None if vals is None else make(call.args, call.attrs, vals)
    return to_static


TO_STATIC: dict[Op, Callable[[Call], Expr | None]] = {
    Op("dyn.reshape"): _static((1,), _reshape_static),
    Op("dyn.broadcast_to"): _static((1,), lambda a, at, v: shape.broadcast_to(a[0], shape=_ints(v[0]))),
    Op("dyn.zeros"): _static((0,), lambda a, at, v: shape.zeros(shape=_ints(v[0]), dtype=at["dtype"])),
    Op("dyn.ones"): _static((0,), lambda a, at, v: shape.ones(shape=_ints(v[0]), dtype=at["dtype"])),
    Op("dyn.full"): _static((1,), lambda a, at, v: shape.full(a[0], shape=_ints(v[0]), dtype=at["dtype"])),
    Op("dyn.strided_slice"): _static((1, 2, 3), lambda a, at, v: tensor.strided_slice(
        a[0], begin=_ints(v[0]), end=_ints(v[1]), strides=_ints(v[2]))),
    Op("dyn.nn.pad"): _static((1,), lambda a, at, v: nn.pad(
        a[0], _ints(v[0]), a[2], pad_mode=at["pad_mode"])),
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
    Op("dyn.sum"): _static((1,), _reduce_static(tensor.sum)),
    Op("dyn.mean"): _static((1,), _reduce_static(tensor.mean)),
    Op("dyn.max"): _static((1,), _reduce_static(tensor.max)),
    Op("dyn.min"): _static((1,), _reduce_static(tensor.min)),
    Op("dyn.prod"): _static((1,), _reduce_static(tensor.prod)),
    Op("dyn.split"): _static((1,), _split_static),
    Op("dyn.squeeze"): _static((1,), lambda a, at, v: tensor.squeeze(a[0], axis=_ints(v[0]))),
    Op("dyn.unsqueeze"): _static((1,), _unsqueeze_static),
    Op("dyn.expand"): _static((1,), _expand_static),
}
"""dyn operator -> a function of a call: the static call when its shape arguments are constants, else None."""

