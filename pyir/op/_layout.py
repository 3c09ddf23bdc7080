"""Data layouts of convolutions and pools: ``data_layout="NHWC"``, ``kernel_layout="HWIO"``,
packed ``"NCHW4c"`` / ``"OIHW4i4o"``.

A layout is a string of axes (:func:`pyir.op.relay_misc.parse_layout`): the upper-case letters
are the primal axes of a canonical layout (``NCHW`` for data, ``OIHW`` for convolution weights),
in any order; a lower-case letter with its factor is a sub-axis split off its primal axis
(``NCHW4c``: ``C`` is ``C // 4`` outer channels times an inner 4).  As in TVM's relations, an
operator accepts every layout that is convertible to its canonical layout: the relation maps
the shapes to the canonical layout (a split axis counts ``outer * factor``), applies the
canonical relation, and maps the result back to the output layout; the numpy ``compute``
transposes the arrays to the canonical layout, computes, and transposes back.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import AttrError, TypeCheckError
from ..ir.types import TensorType
from ._rel import fail, shape_str
from .relay_misc import layout_shape, layout_transform_compute, parse_layout

__all__ = ["check_layout", "layout_rank", "to_layout", "array_to_layout"]


@functools.lru_cache(maxsize=256)
def _parsed(layout: str) -> tuple[tuple[str, int], ...]:
    return parse_layout(layout)


def check_layout(op: str, name: str, value: str, canonical: str, *, split: str = "") -> str:
    """``value`` if it is a layout convertible to ``canonical`` (its primal axes are a
    permutation of ``canonical``'s; sub-axes only of the primal axes in ``split``, every axis
    when ``split`` is ``"*"``); else an AttrError naming the operator and the attribute."""
    try:
        items = parse_layout(value, op)
    except AttrError as e:
        msg = str(e).split(": ", 1)[-1]
        raise AttrError(f"operator {op!r}, attribute {name!r}: {msg}") from None
    primal = "".join(sorted(a for a, f in items if not f))
    if primal != "".join(sorted(canonical)):
        raise AttrError(f"operator {op!r}, attribute {name!r}: layout {value!r} is not convertible to "
                        f"{canonical!r} (its upper-case axes must be a permutation of {canonical!r})")
    for a, f in items:
        if f and split != "*" and a.upper() not in split:
            allowed = f"only {', '.join(split)} may be split" if split else "no axis may be split"
            raise AttrError(f"operator {op!r}, attribute {name!r}: layout {value!r} splits axis "
                            f"{a.upper()!r}: {allowed}")
    return value


def layout_rank(layout: str) -> int:
    """The number of dimensions of a tensor in ``layout`` (primal axes and sub-axes)."""
    return len(_parsed(layout))


@functools.lru_cache(maxsize=256)
def _permutation(src: str, dst: str) -> tuple[int, ...] | None:
    """The positions in ``src`` of ``dst``'s axes when both layouts only permute the same primal
    axes (no sub-axes), else None."""
    if not (src.isalpha() and src.isupper() and dst.isalpha() and dst.isupper()):
        return None
    return tuple(src.index(a) for a in dst) if sorted(src) == sorted(dst) else None


def to_layout(op: str, what: str, t: TensorType, src: str, dst: str) -> TensorType:
    """The type ``t`` (a tensor in layout ``src``) has in layout ``dst``, or a TypeCheckError
    naming the operator, the tensor and its shape."""
    if src == dst:
        return t
    n = layout_rank(src)
    if t.ndim != n:
        raise fail(f"{op}: {what} must be {n}-D in layout {src}, got shape {shape_str(t.shape)}")
    perm = _permutation(src, dst)
    if perm is not None:  # NHWC <-> NCHW and the like: a plain permutation of the dimensions
        shp = t.shape
        return TensorType(tuple([shp[i] for i in perm]), t.dtype)
    try:
        shape = layout_shape(t.shape, src, dst)
    except TypeCheckError as e:
        raise fail(f"{op}: {what} of shape {shape_str(t.shape)} in layout {src} has no {dst} form: "
                   f"{e}") from None
    return TensorType(shape, t.dtype)


def array_to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``x`` (in layout ``src``) transposed, merged and split into layout ``dst``."""
    if src == dst:
        return x
    return layout_transform_compute(x, src, dst)
