"""Relay's remaining tensor operators: ``collapse_sum_like``, ``collapse_sum_to``, ``full_like``
and ``layout_transform``.

* ``collapse_sum_like(data, collapse_type)`` / ``collapse_sum_to(data, shape=...)`` sum ``data``
  down to a shape it is a broadcast of (the gradient of broadcasting): leading extra axes and
  the axes where the target has 1 are summed.  Relay's ``collapse_sum_to`` takes the shape as a
  constant tensor input; pyir's takes it as an attribute, like its ``broadcast_to``.
* ``full_like(data, fill_value)``: ``data``'s shape and dtype, filled with the scalar.
* ``layout_transform(data, src_layout=, dst_layout=)``: a layout is a string of axes, an
  upper-case letter per primal axis and ``<factor><lower-case letter>`` for a sub-axis split
  off that primal axis (``NCHW4c``: C split into ``C // 4`` and an inner 4).  Both layouts must
  have the same primal axes; a split needs the primal dimension to be a multiple of its factor
  (an error when provably not).

Every type relation accepts symbolic and unknown dimensions (:mod:`pyir.ir.dims`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError
from ..ir.dims import Any as ANY_DIM
from ..ir.dims import DimLike, dim_floordiv, dim_mod, dim_mul, dim_str, dims_equal
from ..ir.node import Attrs
from ..ir.types import TensorType, Type
from ._rel import fail, shape_str, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["collapse_sum_like", "collapse_sum_to", "full_like", "layout_transform"]


# -- collapse_sum_like, collapse_sum_to --------------------------------------------------------


def collapse_axes(src: tuple[DimLike, ...], dst: tuple[DimLike, ...]) -> tuple[int, ...]:
    """The axes of ``src`` summed to collapse it to ``dst`` (``dst`` must broadcast to ``src``):
    its leading extra axes and those where ``dst`` has 1 and ``src`` may not."""
    if len(dst) > len(src):
        raise fail(f"cannot collapse {shape_str(src)} to the higher rank {shape_str(dst)}")
    lead = len(src) - len(dst)
    axes = list(range(lead))
    for i, (s, d) in enumerate(zip(src[lead:], dst)):
        if d == 1 and s != 1:
            axes.append(lead + i)
        elif s is not d and s is not ANY_DIM and d is not ANY_DIM and dims_equal(s, d) is False:
            raise fail(f"cannot collapse {shape_str(src)} to {shape_str(dst)}: dimension "
                       f"{dim_str(s, 40)} is neither {dim_str(d, 40)} nor summed to 1")
    return tuple(axes)


def _collapse(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    axes = collapse_axes(x.shape, shape)
    return np.sum(x, axis=axes).reshape(shape).astype(x.dtype, copy=False)


def _collapse_like_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, t = tensor(types[0], "data"), tensor(types[1], "collapse_type")
    collapse_axes(d.shape, t.shape)
    return TensorType(t.shape, d.dtype)


collapse_sum_like: _sig.CollapseSumLike = register_op(
    "collapse_sum_like", num_inputs=2, type_rel=_collapse_like_rel,
    compute=lambda attrs, x, like: _collapse(x, like.shape), pattern=OpPattern.COMM_REDUCE,
    doc="Sum ``data`` down to the shape of ``collapse_type`` (which broadcasts to ``data``).")


def _collapse_to_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    collapse_axes(d.shape, attrs["shape"])
    return TensorType(attrs["shape"], d.dtype)


def _non_negative_shape(a: dict[str, Any]) -> dict[str, Any]:
    if any(s < 0 for s in a["shape"]):
        raise AttrError(f"operator 'collapse_sum_to', attribute 'shape': must be non-negative, "
                        f"got {a['shape']}")
    return a


collapse_sum_to: _sig.CollapseSumTo = register_op(
    "collapse_sum_to", num_inputs=1, type_rel=_collapse_to_rel,
    compute=lambda attrs, x: _collapse(x, attrs["shape"]), pattern=OpPattern.COMM_REDUCE,
    doc="Sum ``data`` down to ``shape`` (which broadcasts to ``data``'s shape).",
    attrs=(AttrSpec("shape", "ints"),), canonicalize=_non_negative_shape)


# -- full_like ------------------------------------------------------------------------------


def _full_like_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, v = tensor(types[0], "data"), tensor(types[1], "fill_value")
    if v.ndim != 0:
        raise fail(f"fill_value must be a scalar, got shape {shape_str(v.shape)}")
    return d


full_like: _sig.FullLike = register_op(
    "full_like", num_inputs=2, type_rel=_full_like_rel,
    compute=lambda attrs, x, v: np.full(x.shape, v, dtype=x.dtype), pattern=OpPattern.ELEMWISE,
    doc="A tensor shaped and typed like ``data``, filled with the scalar ``fill_value``.")


# -- layout_transform -------------------------------------------------------------------------

_LAYOUT_ITEM = re.compile(r"([0-9]+)?([A-Za-z])")


def parse_layout(layout: str, op: str = "layout_transform") -> tuple[tuple[str, int], ...]:
    """A layout as ``(axis, factor)`` items: ``"NCHW4c"`` is ``(("N", 0), ("C", 0), ("H", 0),
    ("W", 0), ("c", 4))``; a primal (upper-case) axis has factor 0, a sub-axis its factor."""
    items: list[tuple[str, int]] = []
    pos = 0
    while pos < len(layout):
        m = _LAYOUT_ITEM.match(layout, pos)
        if m is None:
            raise AttrError(f"operator {op!r}: bad layout {layout!r} at position {pos}")
        num, ax = m.group(1), m.group(2)
        if ax.isupper():
            if num:
                raise AttrError(f"operator {op!r}: layout {layout!r}: a primal axis {ax!r} takes no factor")
            items.append((ax, 0))
        else:
            if not num or int(num) < 1:
                raise AttrError(f"operator {op!r}: layout {layout!r}: sub-axis {ax!r} needs a factor >= 1")
            items.append((ax, int(num)))
        pos = m.end()
    names = [a for a, _ in items]
    if len(set(names)) != len(names):
        raise AttrError(f"operator {op!r}: layout {layout!r} repeats an axis")
    for a, f in items:
        if f and a.upper() not in names:
            raise AttrError(f"operator {op!r}: layout {layout!r}: sub-axis {a!r} without its primal axis "
                            f"{a.upper()!r}")
    return tuple(items)


def _layout_canon(a: dict[str, Any]) -> dict[str, Any]:
    src, dst = parse_layout(a["src_layout"]), parse_layout(a["dst_layout"])
    ps = sorted(x for x, f in src if not f)
    pd = sorted(x for x, f in dst if not f)
    if ps != pd:
        raise AttrError(f"operator 'layout_transform': layouts {a['src_layout']!r} and "
                        f"{a['dst_layout']!r} have different primal axes")
    return a


def _primal_sizes(shape: tuple[DimLike, ...], layout: tuple[tuple[str, int], ...]) -> dict[str, DimLike]:
    """The size of each primal axis of a tensor of ``shape`` in ``layout``."""
    if len(shape) != len(layout):
        text = "".join(f"{f}{a}" if f else a for a, f in layout)
        raise fail(f"data of shape {shape_str(shape)} does not have the rank of its layout {text}")
    sizes: dict[str, DimLike] = {}
    for (a, f), d in zip(layout, shape):
        if not f:
            sizes[a] = d
    for (a, f), d in zip(layout, shape):
        if f:
            if d != f and d is not ANY_DIM and (type(d) is int or dims_equal(d, f) is False):
                raise fail(f"sub-axis {f}{a} of layout has size {dim_str(d, 40)} in {shape_str(shape)}")
            sizes[a.upper()] = dim_mul(sizes[a.upper()], f)
    return sizes


def layout_shape(shape: tuple[DimLike, ...], src: str, dst: str) -> tuple[DimLike, ...]:
    """The shape of ``layout_transform`` of a tensor of ``shape`` from ``src`` to ``dst``."""
    s, d = parse_layout(src), parse_layout(dst)
    sizes = _primal_sizes(shape, s)
    factors = {a.upper(): f for a, f in d if f}
    out: list[DimLike] = []
    for a, f in d:
        if f:
            out.append(f)
            continue
        n = sizes[a]
        k = factors.get(a)
        if k:
            if n is ANY_DIM:
                out.append(ANY_DIM)
                continue
            rem = dim_mod(n, k)
            if (type(rem) is int and rem != 0) or (type(rem) is not int and dims_equal(rem, 0) is False):
                raise fail(f"cannot split axis {a} of size {dim_str(n, 40)} by {k} ({src} -> {dst})")
            out.append(dim_floordiv(n, k) if rem == 0 else ANY_DIM)
        else:
            out.append(n)
    return tuple(out)


def _layout_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0], "data")
    return TensorType(layout_shape(t.shape, attrs["src_layout"], attrs["dst_layout"]), t.dtype)


def layout_transform_compute(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``x`` from layout ``src`` to ``dst``: merge the source's sub-axes into their primal axes,
    permute the primal axes, split the destination's sub-axes off."""
    s, d = parse_layout(src), parse_layout(dst)
    # 1. to the primal layout (the source's primal axes, in their order)
    names = [a for a, _ in s]
    arr = x
    for a, f in s:
        if not f:
            continue
        j = names.index(a)
        names.pop(j)
        i = names.index(a.upper())
        arr = np.moveaxis(arr, j, i + 1)  # the inner factor right after its primal axis
        names.insert(i + 1, a)
        shp = list(arr.shape)
        arr = arr.reshape(shp[:i] + [shp[i] * shp[i + 1]] + shp[i + 2:])
        del names[i + 1]
    # 2. permute to the destination's primal order, with each split primal axis as (outer, inner)
    primal = [a for a, f in d if not f]
    arr = np.transpose(arr, [names.index(a) for a in primal])
    factors = {a.upper(): f for a, f in d if f}
    shp2: list[int] = []
    order: list[str] = []
    for a, n in zip(primal, arr.shape):
        k = factors.get(a)
        if k:
            shp2 += [n // k, k]
            order += [a, a.lower()]
        else:
            shp2.append(n)
            order.append(a)
    arr = arr.reshape(shp2)
    # 3. move each inner factor to its destination position
    return np.ascontiguousarray(np.transpose(arr, [order.index(a) for a, _ in d]))


layout_transform: _sig.LayoutTransform = register_op(
    "layout_transform", num_inputs=1, type_rel=_layout_rel,
    compute=lambda attrs, x: layout_transform_compute(x, attrs["src_layout"], attrs["dst_layout"]),
    pattern=OpPattern.INJECTIVE,
    doc="Transform ``data`` from layout ``src_layout`` to ``dst_layout`` (``NCHW`` -> ``NHWC``,\n"
        "``NCHW`` -> ``NCHW4c``: a lower-case axis with a factor is split off its primal axis).",
    attrs=(AttrSpec("src_layout", "str"), AttrSpec("dst_layout", "str")),
    canonicalize=_layout_canon)
