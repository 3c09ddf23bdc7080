"""Image operators: ``image.resize2d`` (nearest neighbour and bilinear, NCHW or NHWC)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError
from ..ir.dims import DimLike
from ..ir.node import Attrs
from ..ir.types import TensorType, Type
from ._rel import fail, shape_str, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["resize2d"]

METHODS = ("nearest_neighbor", "linear")
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
ROUNDING = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def _check(a: dict[str, Any], name: str, allowed: tuple[str, ...]) -> None:
    if a[name] not in allowed:
        raise AttrError(f"operator 'image.resize2d', attribute {name!r}: must be one of {allowed}, "
                        f"got {a[name]!r}")


def _canon(a: dict[str, Any]) -> dict[str, Any]:
    _check(a, "layout", ("NCHW", "NHWC"))
    _check(a, "method", METHODS)
    _check(a, "coordinate_transformation_mode", COORDINATE_MODES)
    _check(a, "rounding_method", ROUNDING)
    if len(a["size"]) != 2 or any(s < 0 for s in a["size"]):
        raise AttrError(f"operator 'image.resize2d', attribute 'size': must be two non-negative ints, "
                        f"got {a['size']}")
    return a


def resize2d_type(data: TensorType, size: tuple[DimLike, DimLike], layout: str) -> TensorType:
    """``data`` (4-D) with its spatial dimensions replaced by ``size``."""
    if data.ndim != 4:
        raise fail(f"data must be 4-D ({layout}), got {shape_str(data.shape)}")
    n, a, _, c = data.shape
    shape = (n, a, size[0], size[1]) if layout == "NCHW" else (n, size[0], size[1], c)
    return TensorType(shape, data.dtype)


def _source(out_size: int, in_size: int, mode: str) -> np.ndarray:
    """The (fractional) input coordinate of every output coordinate."""
    x = np.arange(out_size, dtype=np.float64)
    if mode == "align_corners":
        return x * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros(out_size)
    scale = in_size / out_size if out_size else 0.0
    if mode == "asymmetric":
        return x * scale
    if mode == "pytorch_half_pixel" and out_size <= 1:
        return np.zeros(out_size)
    return (x + 0.5) * scale - 0.5


def _nearest(src: np.ndarray, in_size: int, rounding: str, mode: str) -> np.ndarray:
    if not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    if rounding == "round":
        idx = np.sign(src) * np.floor(np.abs(src) + 0.5)  # half away from zero
    elif rounding == "floor":
        idx = np.floor(src)
    elif rounding == "ceil":
        idx = np.ceil(src)
    elif rounding == "round_prefer_floor":
        idx = np.ceil(src - 0.5)
    else:
        idx = np.floor(src + 0.5)
    return np.clip(idx, 0, in_size - 1).astype(np.intp)


def resize2d_compute(attrs: Attrs, x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image.resize2d`` on an array, to ``size`` (height, width)."""
    h_ax, w_ax = (2, 3) if attrs["layout"] == "NCHW" else (1, 2)
    mode, out = attrs["coordinate_transformation_mode"], x
    for ax, o in ((h_ax, size[0]), (w_ax, size[1])):
        n = out.shape[ax]
        if n == 0 or o == 0:
            shape = list(out.shape)
            shape[ax] = o
            out = np.zeros(shape, dtype=x.dtype)
            continue
        src = _source(o, n, mode)
        if attrs["method"] == "nearest_neighbor":
            out = np.take(out, _nearest(src, n, attrs["rounding_method"], mode), axis=ax)
            continue
        lo = np.floor(src)
        frac = (src - lo).reshape([-1 if i == ax else 1 for i in range(out.ndim)])
        i0 = np.clip(lo, 0, n - 1).astype(np.intp)
        i1 = np.clip(lo + 1, 0, n - 1).astype(np.intp)
        a, b = np.take(out, i0, axis=ax), np.take(out, i1, axis=ax)
        out = a + (b - a) * frac.astype(x.dtype if x.dtype.kind == "f" else np.float64)
    return np.asarray(out).astype(x.dtype, copy=False)


def _resize2d_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return resize2d_type(tensor(types[0], "data"), attrs["size"], attrs["layout"])


RESIZE_ATTRS = (AttrSpec("size", "ints"), AttrSpec("layout", "str", "NCHW"),
    AttrSpec("method", "str", "linear", "nearest_neighbor or linear"),
    AttrSpec("coordinate_transformation_mode", "str", "half_pixel",
             "half_pixel, align_corners, asymmetric or pytorch_half_pixel"),
    AttrSpec("rounding_method", "str", "", "nearest: '', round, floor, ceil, "
             "round_prefer_floor, round_prefer_ceil"))
"""The attributes of ``image.resize2d`` (``size`` first; ``dyn.image.resize2d`` takes the rest)."""

resize2d: _sig.ImageResize2d = register_op(
    "image.resize2d", num_inputs=1, type_rel=_resize2d_rel,
    compute=lambda attrs, x: resize2d_compute(attrs, x, attrs["size"]), pattern=OpPattern.INJECTIVE,
    doc="Resize the spatial dimensions of a 4-D image to ``size`` (nearest neighbour or bilinear).",
    attrs=RESIZE_ATTRS,
    canonicalize=_canon)
