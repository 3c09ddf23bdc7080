"""Image operators: ``image.resize2d`` (nearest neighbour and bilinear, NCHW or NHWC), the N-d
``image.resize`` with every ONNX Resize mode (and ``dyn.image.resize`` with scales or sizes
computed at run time), ``image.grid_sample`` and ``image.affine_grid`` (and
``dyn.image.affine_grid``).  Interpolation is separable: each resized axis is one weighted
gather along it, float32 data stays float32."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError, EvaluationError
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike
from ..ir.node import Attrs
from ..ir.types import TensorType, Type
from ._rel import fail, shape_str, tensor, unify_dims
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["resize2d", "resize", "dyn_resize", "grid_sample", "affine_grid", "dyn_affine_grid",
           "deformable_conv2d"]

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


# -- image.resize (N-d, ONNX Resize) ---------------------------------------------------------------

RESIZE_MODES = ("nearest", "linear", "cubic")
RESIZE_COORDS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                 "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


def _resize_canon(a: dict[str, Any]) -> dict[str, Any]:
    for name, allowed in (("mode", RESIZE_MODES), ("coordinate_transformation_mode", RESIZE_COORDS),
                          ("nearest_mode", NEAREST_MODES)):
        if a[name] not in allowed:
            raise AttrError(f"operator 'image.resize', attribute {name!r}: must be one of {allowed}, "
                            f"got {a[name]!r}")
    if a["antialias"] and a["mode"] == "nearest":
        raise AttrError("operator 'image.resize': antialias needs mode linear or cubic")
    if "keep_aspect_ratio_policy" in a and a["keep_aspect_ratio_policy"] not in ASPECT_POLICIES:
        raise AttrError(f"operator 'dyn.image.resize', attribute 'keep_aspect_ratio_policy': must be one "
                        f"of {ASPECT_POLICIES}, got {a['keep_aspect_ratio_policy']!r}")
    return a


def _resize_static_canon(a: dict[str, Any]) -> dict[str, Any]:
    _resize_canon(a)
    n = len(a["size"])
    if any(s < 0 for s in a["size"]) or len(a["scales"]) != n or (a["roi"] and len(a["roi"]) != 2 * n):
        raise AttrError(f"operator 'image.resize': size (non-negative), scales and roi must have rank, rank "
                        f"and 2 x rank entries, got {a['size']}, {a['scales']}, {a['roi']}")
    return a


def resize_plan(shape: tuple[int, ...], roi: Any, scales: Any, sizes: Any, axes: Any, policy: str
                ) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """ONNX Resize's output ``size``, per-axis ``scales`` and full ``roi`` (empty when none) from
    its inputs (``scales`` or ``sizes`` over ``axes``, default all; ``keep_aspect_ratio_policy``)."""
    r = len(shape)
    ax = list(range(r)) if axes is None else [a % r for a in axes]
    scales = None if scales is None or np.size(scales) == 0 else [float(v) for v in np.reshape(scales, -1)]
    sizes = None if sizes is None or np.size(sizes) == 0 else [int(v) for v in np.reshape(sizes, -1)]
    if (scales is None) == (sizes is None):
        raise AttrError("Resize needs exactly one of scales and sizes")
    given = scales if scales is not None else sizes
    if len(given) != len(ax):
        raise AttrError(f"Resize: {len(given)} scales or sizes for {len(ax)} axes")
    sc = [1.0] * r
    size = list(shape)
    if scales is not None:
        for a, v in zip(ax, scales):
            if v <= 0:
                raise AttrError(f"Resize: scales must be positive, got {scales}")
            sc[a] = v
            size[a] = int(np.floor(v * shape[a]))
    else:
        for a, v in zip(ax, sizes):
            sc[a] = v / shape[a] if shape[a] else 1.0
            size[a] = v
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(sc[a] for a in ax)
            for a in ax:
                sc[a] = s
                size[a] = int(s * shape[a] + 0.5)
    full_roi: tuple[float, ...] = ()
    if roi is not None and np.size(roi):
        rv = [float(v) for v in np.reshape(roi, -1)]
        if len(rv) != 2 * len(ax):
            raise AttrError(f"Resize: roi has {len(rv)} values for {len(ax)} axes")
        lo, hi = [0.0] * r, [1.0] * r
        for i, a in enumerate(ax):
            lo[a], hi[a] = rv[i], rv[len(ax) + i]
        full_roi = tuple(lo + hi)
    return tuple(size), tuple(sc), full_roi


def _source_coords(mode: str, n_out: int, n_in: int, scale: float, roi: tuple[float, float] | None
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    y = np.arange(n_out, dtype=np.float64)
    out_f = scale * n_in
    if mode == "align_corners":
        return (np.zeros(n_out) if out_f == 1 else y * (n_in - 1) / (out_f - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale, None
    if mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        x = (np.full(n_out, (hi - lo) * (n_in - 1) / 2) if out_f == 1
             else y * (hi - lo) * (n_in - 1) / (out_f - 1))
        x = x + lo * (n_in - 1)
        return x, (x < 0) | (x > n_in - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(n_out, -0.5) if out_f == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / out_f)
        return offset + (y + 0.5) / scale - 0.5, None
    return (y + 0.5) / scale - 0.5, None


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def _coeffs(attrs: Attrs, ratio: np.ndarray, scale: float) -> np.ndarray:
    """The interpolation weights (n_out, taps) of each output point (ONNX's per-ratio rules)."""
    mode, r = attrs["mode"], ratio[:, None]
    if mode == "nearest":
        nm = attrs["nearest_mode"]
        whole = (ratio == 1.0)[:, None]
        if nm == "round_prefer_floor":
            c = np.concatenate([r <= 0.5, r > 0.5], axis=1)
        elif nm == "round_prefer_ceil":
            c = np.concatenate([r < 0.5, r >= 0.5], axis=1)
        elif nm == "floor":
            c = np.concatenate([np.ones_like(r), np.zeros_like(r)], axis=1)
        else:
            c = np.concatenate([np.zeros_like(r), np.ones_like(r)], axis=1)
        return np.where(whole, np.array([[0.0, 1.0]]), c.astype(np.float64))
    if not attrs["antialias"]:
        if mode == "linear":
            return np.concatenate([1 - r, r], axis=1)
        return _cubic(np.concatenate([r + 1, r, 1 - r, 2 - r], axis=1), attrs["cubic_coeff_a"])
    s = min(scale, 1.0)
    if mode == "linear":
        start = int(np.floor(-1 / s) + 1)
        taps = np.arange(start, 2 - start)
        c = np.clip(1 - np.abs((taps[None, :] - r) * s), 0, 1)
    else:
        start = int(np.floor(-2 / s) + 1)
        taps = np.arange(start, 2 - start)
        c = _cubic(s * (taps[None, :] - r), attrs["cubic_coeff_a"])
    return c / c.sum(axis=1, keepdims=True)


def _resize_axis(attrs: Attrs, x: np.ndarray, ax: int, n_out: int, scale: float,
                 roi: tuple[float, float] | None, work: Any) -> np.ndarray:
    n_in = x.shape[ax]
    if n_out == 0 or n_in == 0:
        shape = list(x.shape)
        shape[ax] = n_out
        return np.zeros(shape, dtype=x.dtype)
    src, extra = _source_coords(attrs["coordinate_transformation_mode"], n_out, n_in, scale, roi)
    base = np.floor(src)
    ratio = np.where(src == base, 1.0, src - base)
    c = _coeffs(attrs, ratio, scale)
    n = c.shape[1]
    pad = -(-n // 2)
    xp = src + pad
    p = np.floor(xp)
    frac = xp - p
    if n % 2 == 0:
        off = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        off = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    idx = (p.astype(np.int64) + off)[:, None] + np.arange(n)[None, :] - pad
    if attrs["exclude_outside"]:
        c = np.where((idx < 0) | (idx >= n_in), 0.0, c)
        tot = c.sum(axis=1, keepdims=True)
        c = c / np.where(tot == 0, 1.0, tot)
    idx = np.clip(idx, 0, n_in - 1)
    if attrs["mode"] == "nearest":  # one tap of weight 1: a plain gather
        out = np.take(x, idx[np.arange(n_out), np.argmax(c, axis=1)], axis=ax)
    else:
        g = np.take(x, idx, axis=ax)  # (..., n_out, n, ...)
        wshape = (1,) * ax + c.shape + (1,) * (x.ndim - ax - 1)
        out = (g * c.astype(work).reshape(wshape)).sum(axis=ax + 1)
    if extra is not None and extra.any():
        mask = extra.reshape((1,) * ax + (n_out,) + (1,) * (x.ndim - ax - 1))
        out = np.where(mask, np.asarray(attrs["extrapolation_value"], dtype=work), out)
    return out


def resize_compute(attrs: Attrs, x: np.ndarray, size: Sequence[int], scales: Sequence[float],
                   roi: Sequence[float]) -> np.ndarray:
    """ONNX Resize of ``x`` to ``size`` (the scales and roi of :func:`resize_plan`)."""
    r = x.ndim
    work = x.dtype if x.dtype.kind == "f" and x.dtype.itemsize >= 4 else np.dtype(np.float64)
    out = x.astype(work, copy=False)
    for ax in range(r):
        axroi = (roi[ax], roi[ax + r]) if roi else None
        if (size[ax] == out.shape[ax] and np.isclose(scales[ax], 1.0)
                and (axroi is None or (np.isclose(axroi[0], 0.0) and np.isclose(axroi[1], 1.0)))):
            continue
        out = _resize_axis(attrs, out, ax, size[ax], scales[ax], axroi, work)
    if x.dtype.kind in "iub":
        info = np.iinfo(x.dtype) if x.dtype.kind != "b" else None
        out = np.rint(out)
        if info is not None:
            out = np.clip(out, info.min, info.max)
    return np.asarray(out).astype(x.dtype, copy=False)


_RESIZE_METHOD_ATTRS = (
    AttrSpec("mode", "str", "nearest", "nearest, linear or cubic"),
    AttrSpec("coordinate_transformation_mode", "str", "half_pixel", "one of RESIZE_COORDS"),
    AttrSpec("nearest_mode", "str", "round_prefer_floor", ", ".join(NEAREST_MODES)),
    AttrSpec("cubic_coeff_a", "float", -0.75), AttrSpec("exclude_outside", "bool", False),
    AttrSpec("extrapolation_value", "float", 0.0), AttrSpec("antialias", "bool", False))


def _resize_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x = tensor(types[0], "data")
    if len(attrs["size"]) != x.ndim:
        raise fail(f"size {attrs['size']} must have an entry per dimension of {shape_str(x.shape)}")
    return TensorType(attrs["size"], x.dtype)


resize: _sig.ImageResize = register_op(
    "image.resize", num_inputs=1, type_rel=_resize_rel,
    compute=lambda attrs, x: resize_compute(attrs, x, attrs["size"], attrs["scales"], attrs["roi"]),
    pattern=OpPattern.INJECTIVE,
    doc="Resize every dimension of ``data`` to ``size`` (ONNX Resize: nearest, linear or cubic,\n"
        "``scales`` are the per-axis factors the coordinate transformation uses, ``roi`` the\n"
        "crop of tf_crop_and_resize as starts then ends, empty for none).",
    attrs=(AttrSpec("size", "ints"), AttrSpec("scales", "floats"), AttrSpec("roi", "floats", ()),
           *_RESIZE_METHOD_ATTRS),
    canonicalize=_resize_static_canon)


def _dyn_resize_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x = tensor(types[0], "data")
    for t, what in zip(types[1:], ("roi", "scales", "sizes")):
        v = tensor(t, what)
        if v.ndim != 1:
            raise fail(f"{what} must be 1-D (empty when absent), got {v}")
    axes = attrs["axes"]
    ax = range(x.ndim) if axes is None else {normalize_axis_or_fail(a, x.ndim) for a in axes}
    return TensorType(tuple(AnyDim if i in ax else d for i, d in enumerate(x.shape)), x.dtype)


def normalize_axis_or_fail(a: int, ndim: int) -> int:
    """``a`` in ``[0, ndim)`` or a TypeCheckError."""
    if not -ndim <= a < ndim:
        raise fail(f"axis {a} out of range for rank {ndim}")
    return a % ndim


def _dyn_resize(attrs: Attrs, x: np.ndarray, roi: np.ndarray, scales: np.ndarray,
                sizes: np.ndarray) -> np.ndarray:
    try:
        size, sc, r = resize_plan(x.shape, roi, scales, sizes, attrs["axes"],
                                  attrs["keep_aspect_ratio_policy"])
    except AttrError as e:
        raise EvaluationError(str(e)) from None
    return resize_compute(attrs, x, size, sc, r)


dyn_resize: _sig.DynImageResize = register_op(
    "dyn.image.resize", num_inputs=4, type_rel=_dyn_resize_rel, compute=_dyn_resize,
    pattern=OpPattern.INJECTIVE,
    doc="``image.resize`` with ONNX Resize's run-time ``roi``, ``scales`` and ``sizes`` inputs\n"
        "(1-D; exactly one of scales and sizes non-empty) over ``axes``.",
    attrs=(AttrSpec("axes", "ints?", None), AttrSpec("keep_aspect_ratio_policy", "str", "stretch"),
           *_RESIZE_METHOD_ATTRS),
    canonicalize=_resize_canon)


# -- image.grid_sample -------------------------------------------------------------------------------

GRID_MODES = ("linear", "nearest", "cubic")
PADDING_MODES = ("zeros", "border", "reflection")


def _grid_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, g = tensor(types[0], "data"), tensor(types[1], "grid")
    r = x.ndim - 2
    if r < 1 or g.ndim != x.ndim or (g.shape[-1] not in (r, AnyDim) and not (type(g.shape[-1]) is not int)):
        raise fail(f"data (N, C, spatial...) and grid (N, out..., {max(r, 1)}) must match, got "
                   f"{shape_str(x.shape)} and {shape_str(g.shape)}")
    if np.dtype(g.dtype).kind != "f":
        raise fail(f"grid must be floating-point, got {g.dtype}")
    n = unify_dims(x.shape[0], g.shape[0])
    if n is None:
        raise fail(f"batch sizes of data {shape_str(x.shape)} and grid {shape_str(g.shape)} differ")
    return TensorType((n, x.shape[1], *g.shape[1:-1]), x.dtype)


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    rng = hi - lo
    if rng <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    dx = np.where(below, lo - x, x - hi)
    n = np.trunc(dx / rng)
    rem = dx - n * rng
    even = n % 2 == 0
    inside = np.where(above, np.where(even, hi - rem, lo + rem), x)
    return np.where(below, np.where(even, lo + rem, hi - rem), inside)


def _grid_sample(attrs: Attrs, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    import itertools

    mode, pad, ac = attrs["mode"], attrs["padding_mode"], attrs["align_corners"]
    dims = x.shape[2:]
    r = len(dims)
    work = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    g = grid.astype(np.float64)
    coords, borders = [], []
    for i, d in enumerate(dims):  # grid's last axis lists (x, y, z): the spatial axes reversed
        v = g[..., r - 1 - i]
        v = (v + 1) / 2 * (d - 1) if ac else ((v + 1) * d - 1) / 2
        lo, hi = (0.0, d - 1.0) if ac else (-0.5, d - 0.5)
        if mode == "nearest":
            v = np.rint(v)
        if pad == "border":
            v = np.where((v < lo) | (v > hi), np.clip(v, 0, d - 1), v)
        elif pad == "reflection":
            v = _reflect(v, lo, hi)
        coords.append(v)
        borders.append((lo, hi))
    if mode == "nearest":
        taps = [(np.zeros(1, dtype=np.int64), lambda f: np.ones(f.shape + (1,)))]
        bases = list(coords)
    elif mode == "linear":
        taps = [(np.arange(2), lambda f: np.stack([1 - f, f], axis=-1))]
        bases = [np.floor(c) for c in coords]
    else:
        a = -0.75
        taps = [(np.arange(-1, 3), lambda f: _cubic(np.stack([f + 1, f, 1 - f, 2 - f], axis=-1), a))]
        bases = [np.floor(c) for c in coords]
    offs, wfn = taps[0]
    weights = [wfn(c - b) for c, b in zip(coords, bases)]  # each (N, out..., taps)
    xt = np.moveaxis(x, 1, -1).astype(work, copy=False)  # (N, spatial..., C)
    nidx = np.arange(x.shape[0]).reshape((-1,) + (1,) * (g.ndim - 2))
    out = np.zeros(g.shape[:-1] + (x.shape[1],), dtype=work)
    for combo in itertools.product(range(len(offs)), repeat=r):
        idx, w = [], np.ones(g.shape[:-1], dtype=np.float64)
        ok = np.ones(g.shape[:-1], dtype=bool)
        for i, k in enumerate(combo):
            j = bases[i].astype(np.int64) + offs[k]
            d = dims[i]
            if pad == "zeros":
                ok &= (j >= 0) & (j < d)
                j = np.clip(j, 0, d - 1)
            elif pad == "border":
                j = np.clip(j, 0, d - 1)
            else:
                j = np.clip(_reflect(j.astype(np.float64), *borders[i]).astype(np.int64), 0, d - 1)
            idx.append(j)
            w = w * weights[i][..., k]
        where: Any = (nidx, *idx)
        vals = xt[where]
        out += np.where(ok[..., None], vals * w[..., None].astype(work), 0)
    return np.moveaxis(out, -1, 1).astype(x.dtype, copy=False)


def _grid_canon(a: dict[str, Any]) -> dict[str, Any]:
    for name, allowed in (("mode", GRID_MODES), ("padding_mode", PADDING_MODES)):
        if a[name] not in allowed:
            raise AttrError(f"operator 'image.grid_sample', attribute {name!r}: must be one of {allowed}, "
                            f"got {a[name]!r}")
    return a


grid_sample: _sig.ImageGridSample = register_op(
    "image.grid_sample", num_inputs=2, type_rel=_grid_rel, compute=_grid_sample, pattern=OpPattern.OPAQUE,
    doc="Sample ``data`` (N, C, spatial...) at the normalized coordinates of ``grid`` (N, out..., r),\n"
        "last axis x, y[, z] in [-1, 1] (ONNX GridSample; 1-, 2- and 3-D).",
    attrs=(AttrSpec("mode", "str", "linear", "linear, nearest or cubic"),
           AttrSpec("padding_mode", "str", "zeros", "zeros, border or reflection"),
           AttrSpec("align_corners", "bool", False)),
    canonicalize=_grid_canon)


# -- image.affine_grid -------------------------------------------------------------------------------


def _affine_type(theta: TensorType, size: Sequence[DimLike]) -> TensorType:
    if theta.ndim != 3 or np.dtype(theta.dtype).kind != "f":
        raise fail(f"theta must be a float (N, 2, 3) or (N, 3, 4) tensor, got {theta}")
    r = len(size) - 2
    if r not in (2, 3) or any(unify_dims(a, b) is None for a, b in zip(theta.shape[1:], (r, r + 1))):
        raise fail(f"theta {shape_str(theta.shape)} does not match a size of {len(size)} entries")
    n = unify_dims(theta.shape[0], size[0])
    if n is None:
        raise fail(f"batch sizes of theta {shape_str(theta.shape)} and size {shape_str(size)} differ")
    return TensorType((n, *size[2:], r), theta.dtype)


def _affine_grid(attrs: Attrs, theta: np.ndarray, size: Sequence[int]) -> np.ndarray:
    spatial = [int(s) for s in size[2:]]
    axes = []
    for d in spatial:
        if attrs["align_corners"]:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.full(d, -1.0))
        else:
            axes.append((np.arange(d) * 2 + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1).reshape(-1, len(spatial) + 1)  # x, y[, z], 1
    out = np.einsum("pk,njk->npj", base.astype(theta.dtype), theta)
    return out.reshape((theta.shape[0], *spatial, len(spatial)))


affine_grid: _sig.ImageAffineGrid = register_op(
    "image.affine_grid", num_inputs=1,
    type_rel=lambda types, attrs: _affine_type(tensor(types[0], "theta"), attrs["size"]),
    compute=lambda attrs, t: _affine_grid(attrs, t, attrs["size"]), pattern=OpPattern.OPAQUE,
    doc="The sampling grid (N, spatial..., r) of the affine maps ``theta`` (N, r, r + 1) for an output\n"
        "of ``size`` (N, C, spatial...) (ONNX AffineGrid; 2-D and 3-D).",
    attrs=(AttrSpec("size", "ints"), AttrSpec("align_corners", "bool", False)))


def _dyn_affine_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    s = tensor(types[1], "size")
    if s.ndim != 1 or type(s.shape[0]) is not int or np.dtype(s.dtype).kind not in "iu":
        raise fail(f"size must be a 1-D integer tensor of static length, got {s}")
    return _affine_type(tensor(types[0], "theta"), (AnyDim,) * s.shape[0])


dyn_affine_grid: _sig.DynImageAffineGrid = register_op(
    "dyn.image.affine_grid", num_inputs=2, type_rel=_dyn_affine_rel,
    compute=lambda attrs, t, s: _affine_grid(attrs, t, [int(v) for v in s]), pattern=OpPattern.OPAQUE,
    doc="``image.affine_grid`` with ``size`` a 1-D integer tensor computed at run time.",
    attrs=(AttrSpec("align_corners", "bool", False),))


# -- nn.deformable_conv2d (ONNX DeformConv) -------------------------------------------------------------


def _deform_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, w, off = tensor(types[0], "data"), tensor(types[1], "weight"), tensor(types[2], "offset")
    b, m = tensor(types[3], "bias"), tensor(types[4], "mask")
    if x.ndim != 4 or w.ndim != 4 or off.ndim != 4:
        raise fail(f"data, weight and offset must be 4-D (NCHW), got {shape_str(x.shape)}, "
                   f"{shape_str(w.shape)}, {shape_str(off.shape)}")
    kh, kw = w.shape[2:]
    g, og = attrs["groups"], attrs["offset_groups"]
    if type(kh) is int and type(kw) is int and type(off.shape[1]) is int and off.shape[1] != og * 2 * kh * kw:
        raise fail(f"offset {shape_str(off.shape)} must have offset_groups * 2 * kh * kw = "
                   f"{og * 2 * kh * kw} channels")
    if type(x.shape[1]) is int and type(w.shape[1]) is int and x.shape[1] != w.shape[1] * g:
        raise fail(f"data {shape_str(x.shape)} has {x.shape[1]} channels, weight {shape_str(w.shape)} "
                   f"x groups={g} needs {w.shape[1] * g}")
    if b.ndim != 1 or m.ndim not in (1, 4):
        raise fail(f"bias must be 1-D and mask 4-D (or empty), got {b} and {m}")
    return TensorType((x.shape[0], w.shape[0], off.shape[2], off.shape[3]), x.dtype)


def _deform(attrs: Attrs, x: np.ndarray, w: np.ndarray, off: np.ndarray, b: np.ndarray,
            m: np.ndarray) -> np.ndarray:
    n, c, ih, iw = x.shape
    oc, cg, kh, kw = w.shape
    oh, ow = off.shape[2:]
    g, og = attrs["groups"], attrs["offset_groups"]
    (sh, sw), (dh, dw), (pt, pl) = attrs["strides"], attrs["dilation"], attrs["padding"][:2]
    work = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    o = off.reshape(n, og, kh, kw, 2, oh, ow).astype(np.float64)
    taps_h = (np.arange(kh) * dh)[None, None, :, None, None, None]
    taps_w = (np.arange(kw) * dw)[None, None, None, :, None, None]
    base_h = (np.arange(oh) * sh - pt)[None, None, None, None, :, None] + taps_h
    base_w = (np.arange(ow) * sw - pl)[None, None, None, None, None, :] + taps_w
    py, px = base_h + o[:, :, :, :, 0], base_w + o[:, :, :, :, 1]  # (n, og, kh, kw, oh, ow)
    y0, x0 = np.floor(py), np.floor(px)
    xg = x.reshape(n, og, c // og, ih * iw)
    cols = np.zeros((n, og, c // og, kh, kw, oh, ow), dtype=np.float64)
    nb = np.arange(n)[:, None, None, None, None, None]
    gb = np.arange(og)[None, :, None, None, None, None]
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            wt = (1 - np.abs(py - yy)) * (1 - np.abs(px - xx))
            ok = (yy >= 0) & (yy < ih) & (xx >= 0) & (xx < iw)
            flat = (np.clip(yy, 0, ih - 1) * iw + np.clip(xx, 0, iw - 1)).astype(np.int64)
            v = xg[nb, gb, :, flat]  # (n, og, kh, kw, oh, ow, c/og)
            cols += np.moveaxis(np.where(ok[..., None], v * wt[..., None], 0.0), -1, 2)
    if m.size:
        cols = cols * m.reshape(n, og, 1, kh, kw, oh, ow)
    cols = cols.reshape(n, g, cg, kh, kw, oh, ow)
    wg = w.reshape(g, oc // g, cg, kh, kw).astype(np.float64)
    y = np.einsum("ngckluv,gockl->ngouv", cols, wg).reshape(n, oc, oh, ow)
    if b.size:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(work).astype(x.dtype, copy=False)


deformable_conv2d: _sig.NnDeformableConv2d = register_op(
    "nn.deformable_conv2d", num_inputs=5, type_rel=_deform_rel, compute=_deform, pattern=OpPattern.OPAQUE,
    doc="Deformable 2-D convolution (ONNX DeformConv): each kernel tap reads ``data`` bilinearly at its\n"
        "position moved by ``offset`` (N, offset_groups * 2 * kh * kw, out_h, out_w), scaled by ``mask``\n"
        "(empty: 1); ``bias`` empty for none. The output size is the offset's.",
    attrs=(AttrSpec("strides", "ints", (1, 1)), AttrSpec("padding", "ints", (0, 0, 0, 0)),
           AttrSpec("dilation", "ints", (1, 1)), AttrSpec("groups", "int", 1),
           AttrSpec("offset_groups", "int", 1)))
