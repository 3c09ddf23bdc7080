"""Tensor operators: elementwise math, broadcasting arithmetic, comparisons,
layout transforms, reductions and matmul."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.dims import dim_sum
from ..ir.node import Attrs
from ..ir.types import TensorType, Type
from ._rel import broadcast_shapes, fail, normalize_axis, same_dtype, static_shape, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    "negative", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "erf", "floor", "ceil",
    "clip", "cast", "greater", "less", "equal", "not_equal", "greater_equal", "less_equal",
    "logical_and", "logical_or", "logical_not", "where",
    "reshape", "transpose", "concatenate", "expand_dims", "squeeze",
    "sum", "mean", "max", "min", "prod", "argmax", "matmul", "split", "strided_slice", "take",
    "zeros_like", "ones_like", "copy",
]

_FLOAT_KINDS = "fc"


# -- elementwise unary ----------------------------------------------------------------


def _unary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return tensor(types[0])


def _float_unary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    if np.dtype(t.dtype).kind not in _FLOAT_KINDS:
        raise fail(f"needs a floating-point input, got {t.dtype}")
    return t


def _unary(name: str, fn: Callable[[np.ndarray], np.ndarray], doc: str, *,
           float_only: bool = True) -> Callable[..., Any]:
    return register_op(name, num_inputs=1, type_rel=_float_unary_rel if float_only else _unary_rel,
                       compute=lambda attrs, x: fn(x), pattern=OpPattern.ELEMWISE, doc=doc)


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz-Stegun 7.1.26 is too coarse; use the exact series via math.erf.
    import math

    return np.vectorize(math.erf, otypes=[x.dtype])(x)


negative: _sig.Negative = _unary("negative", np.negative, "Elementwise ``-x``.", float_only=False)
exp: _sig.Exp = _unary("exp", np.exp, "Elementwise ``e**x``.")
log: _sig.Log = _unary("log", np.log, "Elementwise natural logarithm.")
sqrt: _sig.Sqrt = _unary("sqrt", np.sqrt, "Elementwise square root.")
rsqrt: _sig.Rsqrt = _unary("rsqrt", lambda x: 1 / np.sqrt(x), "Elementwise ``1 / sqrt(x)``.")
tanh: _sig.Tanh = _unary("tanh", np.tanh, "Elementwise hyperbolic tangent.")
sigmoid: _sig.Sigmoid = _unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "Elementwise logistic function.")
abs: _sig.Abs = _unary("abs", np.abs, "Elementwise absolute value.", float_only=False)  # noqa: A001
erf: _sig.Erf = _unary("erf", _erf, "Elementwise error function.")
floor: _sig.Floor = _unary("floor", np.floor, "Elementwise floor.")
ceil: _sig.Ceil = _unary("ceil", np.ceil, "Elementwise ceiling.")
logical_not: _sig.LogicalNot = register_op(
    "logical_not", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: np.logical_not(x),
    pattern=OpPattern.ELEMWISE, doc="Elementwise boolean not.")
copy: _sig.Copy = register_op("copy", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: x.copy(),
                              pattern=OpPattern.ELEMWISE, doc="Identity copy of a tensor.")
zeros_like: _sig.ZerosLike = register_op(
    "zeros_like", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: np.zeros_like(x),
    pattern=OpPattern.ELEMWISE, doc="A tensor of zeros shaped like the input.")
ones_like: _sig.OnesLike = register_op("ones_like", num_inputs=1, type_rel=_unary_rel,
                                       compute=lambda attrs, x: np.ones_like(x), pattern=OpPattern.ELEMWISE,
                                       doc="A tensor of ones shaped like the input.")


def _clip_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    if attrs["a_min"] > attrs["a_max"]:
        raise fail(f"a_min {attrs['a_min']} > a_max {attrs['a_max']}")
    return t


clip: _sig.Clip = register_op(
    "clip", num_inputs=1, type_rel=_clip_rel,
    compute=lambda attrs, x: np.clip(x, attrs["a_min"], attrs["a_max"]).astype(x.dtype),
    pattern=OpPattern.ELEMWISE, doc="Clamp every element to ``[a_min, a_max]``.",
    attrs=(AttrSpec("a_min", "float"), AttrSpec("a_max", "float")))


def _cast_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType(tensor(types[0]).shape, attrs["dtype"])


cast: _sig.Cast = register_op(
    "cast", num_inputs=1, type_rel=_cast_rel, compute=lambda attrs, x: x.astype(attrs["dtype"]),
    pattern=OpPattern.ELEMWISE, doc="Convert to another dtype.", attrs=(AttrSpec("dtype", "dtype"),))


# -- broadcasting binary -----------------------------------------------------------------


def _broadcast_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    return TensorType(broadcast_shapes(a.shape, b.shape), same_dtype([a, b]))


def _compare_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    same_dtype([a, b])
    return TensorType(broadcast_shapes(a.shape, b.shape), "bool")


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.trunc(np.true_divide(a, b))
        return q.astype(a.dtype)
    return np.true_divide(a, b)


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str,
            rel: Callable[[tuple[Type, ...], Attrs], Type] = _broadcast_rel) -> Callable[..., Any]:
    return register_op(name, num_inputs=2, type_rel=rel, compute=lambda attrs, a, b: fn(a, b),
                       pattern=OpPattern.BROADCAST, doc=doc)


add: _sig.Add = _binary("add", np.add, "Broadcasting ``a + b``.")
subtract: _sig.Subtract = _binary("subtract", np.subtract, "Broadcasting ``a - b``.")
multiply: _sig.Multiply = _binary("multiply", np.multiply, "Broadcasting ``a * b``.")
divide: _sig.Divide = _binary("divide", _divide, "Broadcasting ``a / b`` (truncating for integers).")
power: _sig.Power = _binary("power", np.power, "Broadcasting ``a ** b``.")
maximum: _sig.Maximum = _binary("maximum", np.maximum, "Broadcasting elementwise maximum.")
minimum: _sig.Minimum = _binary("minimum", np.minimum, "Broadcasting elementwise minimum.")
greater: _sig.Greater = _binary("greater", np.greater, "Broadcasting ``a > b`` (bool).", _compare_rel)
less: _sig.Less = _binary("less", np.less, "Broadcasting ``a < b`` (bool).", _compare_rel)
equal: _sig.Equal = _binary("equal", np.equal, "Broadcasting ``a == b`` (bool).", _compare_rel)
not_equal: _sig.NotEqual = _binary("not_equal", np.not_equal, "Broadcasting ``a != b`` (bool).", _compare_rel)
greater_equal: _sig.GreaterEqual = _binary("greater_equal", np.greater_equal,
                                           "Broadcasting ``a >= b`` (bool).", _compare_rel)
less_equal: _sig.LessEqual = _binary("less_equal", np.less_equal, "Broadcasting ``a <= b`` (bool).",
                                     _compare_rel)
logical_and: _sig.LogicalAnd = _binary("logical_and", np.logical_and, "Broadcasting boolean and.")
logical_or: _sig.LogicalOr = _binary("logical_or", np.logical_or, "Broadcasting boolean or.")


def _where_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    c, a, b = (tensor(t, w) for t, w in zip(types, ("condition", "lhs", "rhs")))
    if c.dtype != "bool":
        raise fail(f"condition must be bool, got {c.dtype}")
    shape = broadcast_shapes(broadcast_shapes(c.shape, a.shape), b.shape)
    return TensorType(shape, same_dtype([a, b]))


where: _sig.Where = register_op("where", num_inputs=3, type_rel=_where_rel,
                                compute=lambda attrs, c, a, b: np.where(c, a, b), pattern=OpPattern.BROADCAST,
                                doc="Select from ``a`` where ``condition`` holds, else from ``b``.")


# -- layout transforms -----------------------------------------------------------------------


def _infer_reshape(src: tuple[int, ...], newshape: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    infer_at = -1
    for i, d in enumerate(newshape):
        if d == 0:
            if i >= len(src):
                raise fail(f"newshape {newshape}: 0 at position {i} but input rank is {len(src)}")
            out.append(src[i])
        elif d == -1:
            if infer_at >= 0:
                raise fail(f"newshape {newshape} has more than one -1")
            infer_at = i
            out.append(1)
        elif d > 0:
            out.append(d)
        else:
            raise fail(f"newshape {newshape}: invalid dimension {d}")
    total = int(np.prod(src, dtype=np.int64))
    known = int(np.prod(out, dtype=np.int64))
    if infer_at >= 0:
        if known == 0 or total % known:
            raise fail(f"cannot reshape {src} to {newshape}")
        out[infer_at] = total // known
    elif known != total:
        raise fail(f"cannot reshape {src} ({total} elements) to {tuple(out)} ({known} elements)")
    return tuple(out)


def _reshape_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    return TensorType(_infer_reshape(static_shape(t), attrs["newshape"]), t.dtype)


reshape: _sig.Reshape = register_op(
    "reshape", num_inputs=1, type_rel=_reshape_rel,
    compute=lambda attrs, x: x.reshape(_infer_reshape(x.shape, attrs["newshape"])),
    pattern=OpPattern.INJECTIVE,
    doc="Reshape; ``0`` copies the input dimension, ``-1`` is inferred.",
    attrs=(AttrSpec("newshape", "ints"),))


def _perm(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    axes = attrs["axes"]
    if axes is None:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise fail(f"axes {axes} do not match rank {ndim}")
    perm = tuple(normalize_axis(a, ndim) for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise fail(f"axes {axes} are not a permutation")
    return perm


def _transpose_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    perm = _perm(attrs, t.ndim)
    return TensorType(tuple(t.shape[i] for i in perm), t.dtype)


transpose: _sig.Transpose = register_op(
    "transpose", num_inputs=1, type_rel=_transpose_rel,
    compute=lambda attrs, x: np.transpose(x, _perm(attrs, x.ndim)), pattern=OpPattern.INJECTIVE,
    doc="Permute the axes (reverse them when ``axes`` is None).",
    attrs=(AttrSpec("axes", "ints?", None),))


def _concat_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    ts = [tensor(t, f"input {i}") for i, t in enumerate(types)]
    dt = same_dtype(ts)
    nd = ts[0].ndim
    ax = normalize_axis(attrs["axis"], nd)
    for t in ts[1:]:
        if t.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(t.shape, ts[0].shape)) if i != ax):
            raise fail(f"cannot concatenate shapes {[x.shape for x in ts]} on axis {attrs['axis']}")
    shape = list(ts[0].shape)
    shape[ax] = dim_sum([t.shape[ax] for t in ts])
    return TensorType(shape, dt)


concatenate: _sig.Concatenate = register_op(
    "concatenate", num_inputs=None, type_rel=_concat_rel,
    compute=lambda attrs, *xs: np.concatenate(xs, axis=attrs["axis"]), pattern=OpPattern.INJECTIVE,
    doc="Join tensors along ``axis`` (the inputs are the call's arguments).",
    attrs=(AttrSpec("axis", "int", 0),))


def _expand_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    ax, num = attrs["axis"], attrs["num_newaxis"]
    if num < 0:
        raise fail(f"num_newaxis must be >= 0, got {num}")
    if not -t.ndim - 1 <= ax <= t.ndim:
        raise fail(f"axis {ax} out of range for rank {t.ndim}")
    ax = ax % (t.ndim + 1)
    return TensorType(t.shape[:ax] + (1,) * num + t.shape[ax:], t.dtype)


def _expand(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % (x.ndim + 1)
    return x.reshape(x.shape[:ax] + (1,) * attrs["num_newaxis"] + x.shape[ax:])


expand_dims: _sig.ExpandDims = register_op(
    "expand_dims", num_inputs=1, type_rel=_expand_rel, compute=_expand, pattern=OpPattern.BROADCAST,
    doc="Insert ``num_newaxis`` unit axes at ``axis``.",
    attrs=(AttrSpec("axis", "int"), AttrSpec("num_newaxis", "int", 1)))


def _squeeze_axes(attrs: Attrs, shape: tuple[int, ...]) -> tuple[int, ...]:
    axes = attrs["axis"]
    if axes is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    out = tuple(sorted({normalize_axis(a, len(shape)) for a in axes}))
    for a in out:
        if shape[a] != 1:
            raise fail(f"cannot squeeze axis {a} of size {shape[a]} in shape {shape}")
    return out


def _squeeze_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    axes = _squeeze_axes(attrs, static_shape(t))
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in axes), t.dtype)


squeeze: _sig.Squeeze = register_op(
    "squeeze", num_inputs=1, type_rel=_squeeze_rel,
    compute=lambda attrs, x: np.squeeze(x, axis=_squeeze_axes(attrs, x.shape)),
    pattern=OpPattern.INJECTIVE, doc="Remove unit axes (all of them when ``axis`` is None).",
    attrs=(AttrSpec("axis", "ints?", None),))


def _split_sections(attrs: Attrs, dim: int) -> list[int]:
    ind = attrs["indices_or_sections"]
    if len(ind) == 1 and attrs["by_sections"]:
        n = ind[0]
        if n <= 0 or dim % n:
            raise fail(f"cannot split a dimension of {dim} into {n} equal sections")
        return [dim // n] * n
    cuts = [0, *ind, dim]
    sizes = [b - a for a, b in zip(cuts, cuts[1:])]
    if any(s < 0 for s in sizes):
        raise fail(f"split indices {ind} are not increasing within {dim}")
    return sizes


def _split_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    from ..ir.types import TupleType

    t = tensor(types[0])
    ax = normalize_axis(attrs["axis"], t.ndim)
    fields = []
    for s in _split_sections(attrs, static_shape(t)[ax]):
        shape = list(t.shape)
        shape[ax] = s
        fields.append(TensorType(shape, t.dtype))
    return TupleType(fields)


def _split(attrs: Attrs, x: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = attrs["axis"] % x.ndim
    sizes = _split_sections(attrs, x.shape[ax])
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=ax))


split: _sig.Split = register_op(
    "split", num_inputs=1, type_rel=_split_rel, compute=_split, pattern=OpPattern.INJECTIVE,
    doc="Split along ``axis`` into equal sections (``by_sections``) or at indices; returns a tuple.",
    attrs=(AttrSpec("indices_or_sections", "ints"), AttrSpec("axis", "int", 0),
           AttrSpec("by_sections", "bool", True)))


def _slices(attrs: Attrs, shape: tuple[int, ...]) -> tuple[slice, ...]:
    begin, end = attrs["begin"], attrs["end"]
    axes = attrs["axes"] if attrs["axes"] is not None else tuple(range(len(begin)))
    strides = attrs["strides"] if attrs["strides"] is not None else (1,) * len(begin)
    if not len(begin) == len(end) == len(axes) == len(strides):
        raise fail("begin, end, axes and strides must have equal lengths")
    sl = [slice(None)] * len(shape)
    for b, e, a, s in zip(begin, end, axes, strides):
        if s == 0:
            raise fail("strided_slice stride cannot be 0")
        sl[normalize_axis(a, len(shape))] = slice(b, e, s)
    return tuple(sl)


def _strided_slice_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    src = static_shape(t)
    sl = _slices(attrs, src)
    shape = tuple(len(range(*s.indices(d))) for s, d in zip(sl, src))
    return TensorType(shape, t.dtype)


strided_slice: _sig.StridedSlice = register_op(
    "strided_slice", num_inputs=1, type_rel=_strided_slice_rel,
    compute=lambda attrs, x: x[_slices(attrs, x.shape)], pattern=OpPattern.INJECTIVE,
    doc="Python-style slicing ``x[begin:end:stride]`` on ``axes``.",
    attrs=(AttrSpec("begin", "ints"), AttrSpec("end", "ints"), AttrSpec("axes", "ints?", None),
           AttrSpec("strides", "ints?", None)))


def _take_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, i = tensor(types[0], "data"), tensor(types[1], "indices")
    if np.dtype(i.dtype).kind not in "iu":
        raise fail(f"indices must be integers, got {i.dtype}")
    ax = normalize_axis(attrs["axis"], d.ndim)
    return TensorType(d.shape[:ax] + i.shape + d.shape[ax + 1:], d.dtype)


take: _sig.Take = register_op(
    "take", num_inputs=2, type_rel=_take_rel,
    compute=lambda attrs, d, i: np.take(d, i, axis=attrs["axis"], mode="clip"),
    pattern=OpPattern.INJECTIVE, doc="Gather slices of ``data`` at ``indices`` along ``axis``.",
    attrs=(AttrSpec("axis", "int", 0),))


# -- reductions ---------------------------------------------------------------------------------


def _reduce_axes(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    axis = attrs["axis"]
    axes = tuple(range(ndim)) if axis is None else tuple(sorted({normalize_axis(a, ndim) for a in axis}))
    if attrs["exclude"]:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def _reduce_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    axes = _reduce_axes(attrs, t.ndim)
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    else:
        shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return TensorType(shape, t.dtype)


_REDUCE_ATTRS = (AttrSpec("axis", "ints?", None), AttrSpec("keepdims", "bool", False),
                 AttrSpec("exclude", "bool", False))


def _reduction(name: str, fn: Callable[..., np.ndarray], doc: str) -> Callable[..., Any]:
    def compute(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        axes = _reduce_axes(attrs, x.ndim)
        return np.asarray(fn(x, axis=axes, keepdims=attrs["keepdims"])).astype(x.dtype)

    return register_op(name, num_inputs=1, type_rel=_reduce_rel, compute=compute,
                       pattern=OpPattern.COMM_REDUCE, doc=doc, attrs=_REDUCE_ATTRS)


sum: _sig.Sum = _reduction("sum", np.sum, "Sum over ``axis`` (all axes when None).")  # noqa: A001
mean: _sig.Mean = _reduction("mean", np.mean, "Mean over ``axis`` (all axes when None).")
max: _sig.Max = _reduction("max", np.max, "Maximum over ``axis`` (all axes when None).")  # noqa: A001
min: _sig.Min = _reduction("min", np.min, "Minimum over ``axis`` (all axes when None).")  # noqa: A001
prod: _sig.Prod = _reduction("prod", np.prod, "Product over ``axis`` (all axes when None).")


def _argmax_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    ax = normalize_axis(attrs["axis"], t.ndim)
    shape = tuple(1 if i == ax else d for i, d in enumerate(t.shape)) if attrs["keepdims"] else \
        tuple(d for i, d in enumerate(t.shape) if i != ax)
    return TensorType(shape, "int64")


argmax: _sig.Argmax = register_op(
    "argmax", num_inputs=1, type_rel=_argmax_rel,
    compute=lambda attrs, x: np.argmax(x, axis=attrs["axis"], keepdims=attrs["keepdims"]).astype("int64"),
    pattern=OpPattern.COMM_REDUCE, doc="Index of the maximum along ``axis`` (int64).",
    attrs=(AttrSpec("axis", "int", 0), AttrSpec("keepdims", "bool", False)))


# -- matmul --------------------------------------------------------------------------------


def _matmul_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    dt = same_dtype([a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise fail("matmul needs inputs of rank >= 1")
    sa = a.shape if a.ndim > 1 else (1,) + a.shape
    sb = b.shape if b.ndim > 1 else b.shape + (1,)
    if sa[-1] != sb[-2]:
        raise fail(f"matmul inner dimensions differ: {a.shape} @ {b.shape}")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    shape = batch + (sa[-2],) * (a.ndim > 1) + (sb[-1],) * (b.ndim > 1)
    return TensorType(shape, dt)


matmul: _sig.Matmul = register_op(
    "matmul", num_inputs=2, type_rel=_matmul_rel, compute=lambda attrs, a, b: np.matmul(a, b),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="Numpy-style (batched, broadcasting) matrix product.")
