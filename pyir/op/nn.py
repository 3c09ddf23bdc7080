"""Neural-network operators (``pyir.op.nn.*``), with Relay's names and attributes.

Every operator here is declared with :func:`~pyir.op.registry.register_op`: its
type relation, fusion pattern kind and a numpy reference ``compute``.  Only the
``NCHW`` data layout (``OIHW`` for convolution weights) is supported.

Deviations from Relay, kept deliberately simple:

* ``nn.dropout`` returns its input tensor (inference semantics), not a tuple.
* ``nn.pad`` takes ``pad_width`` as one flat tuple of ints
  ``(before_0, after_0, before_1, after_1, ...)`` of length ``2 * ndim``, and
  ``pad_value`` as a float attribute.
* ``nn.batch_norm`` computes in inference mode and returns
  ``(out, moving_mean, moving_var)``.
* Pooling with ``ceil_mode`` follows ONNX/PyTorch: the output size is rounded up,
  but a last window that would start in the bottom/right padding is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import AttrError, PyIRError, WellFormedError
from ..ir.dims import Any as ANY_DIM
from ..ir.dims import (
    DimLike,
    dim_add,
    dim_bounds,
    dim_floordiv,
    dim_mod,
    dim_mul,
    dim_prod,
    dim_str,
    dim_sub,
    dims_equal,
)
from ..ir.node import Attrs
from ..ir.types import TensorType, TupleType, Type, dtype_kind, normalize_dtype
from ._rel import fail, normalize_axis, provably_less, same_dtype, shape_str, tensor, unify_dims
from .registry import REQUIRED, AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = [
    "avg_pool2d", "batch_flatten", "batch_norm", "bias_add", "conv2d", "dense", "dropout",
    "global_avg_pool2d", "global_max_pool2d", "layer_norm", "leaky_relu", "log_softmax", "lrn",
    "max_pool2d", "pad", "prelu", "relu", "softmax",
]

_Rel = Callable[[tuple[Type, ...], Attrs], Type]


# -- attribute canonicalization helpers ----------------------------------------------------------


def _attr_error(op: str, name: str, msg: str) -> AttrError:
    return AttrError(f"operator {op!r}, attribute {name!r}: {msg}")


def _pair(op: str, name: str, value: tuple[int, ...], minimum: int = 1) -> tuple[int, int]:
    """1 value -> (v, v); 2 values kept; each at least ``minimum``."""
    if len(value) == 1:
        value = (value[0], value[0])
    if len(value) != 2 or any(v < minimum for v in value):
        raise _attr_error(op, name, f"expected 1 or 2 ints >= {minimum}, got {value}")
    return (value[0], value[1])


def _pad4(op: str, name: str, value: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right): 1 value -> all four, 2 values (h, w) -> (h, w, h, w)."""
    if len(value) == 1:
        value = value * 4
    elif len(value) == 2:
        value = value * 2
    if len(value) != 4 or any(v < 0 for v in value):
        raise _attr_error(op, name, f"expected 1, 2 or 4 non-negative ints, got {value}")
    return (value[0], value[1], value[2], value[3])


def _layout(op: str, name: str, value: str, supported: str) -> str:
    if value != supported:
        raise _attr_error(op, name, f"only layout {supported!r} is supported, got {value!r}")
    return value


def _out_dtype(op: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    try:
        return normalize_dtype(value)
    except (WellFormedError, TypeError, ValueError):
        raise _attr_error(op, "out_dtype", f"unknown dtype {value!r}") from None


def _is_float(dtype: str) -> bool:
    return dtype_kind(dtype) == "f"  # bfloat16, float8 (ml_dtypes) are floats


def _float_tensor(op: str, t: Type, what: str = "data") -> TensorType:
    tt = tensor(t, what)
    if not _is_float(tt.dtype):
        raise fail(f"{op}: {what} must be floating-point, got {tt.dtype} (shape {tt.shape})")
    return tt


def _vector_arg(op: str, t: Type, what: str, size: DimLike, data: TensorType, axis: int) -> DimLike:
    """``t`` must be a 1-D tensor of ``size`` elements with the dtype of ``data``; returns the
    better-known of the two sizes (a size whose equality with ``size`` is unknown, such as
    ``?`` or another symbol, is accepted)."""
    v = tensor(t, what)
    u = None
    shp = v.shape
    if len(shp) == 1:
        u = size if shp[0] is size or (type(size) is int and shp[0] == size) else unify_dims(shp[0], size)
    if u is None:
        raise fail(f"{op}: {what} must have shape ({dim_str(size, 40)},) to match axis {axis} of data "
                   f"{shape_str(data.shape)}, got {shape_str(v.shape)}")
    if v.dtype != data.dtype:
        raise fail(f"{op}: {what} dtype {v.dtype} != data dtype {data.dtype}")
    return u


def _refine(d: TensorType, axis: int, size: DimLike) -> TensorType:
    """``d`` with dimension ``axis`` set to ``size`` (the better-known size a vector argument
    gave: ``?`` becomes that vector's length)."""
    if d.shape[axis] is size:
        return d
    return TensorType(d.shape[:axis] + (size,) + d.shape[axis + 1:], d.dtype)


def _along(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """Reshape a 1-D array so that it broadcasts along ``axis`` of an ``ndim``-D array."""
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def _unary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return tensor(types[0])


# -- activations ----------------------------------------------------------------------------------


def _relu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.maximum(x, x.dtype.type(0))


def _leaky_relu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, x * attrs["alpha"]).astype(x.dtype, copy=False)


relu: _sig.NnRelu = register_op("nn.relu", num_inputs=1, type_rel=_unary_rel, compute=_relu,
                                pattern=OpPattern.ELEMWISE, doc="Rectified linear unit ``max(x, 0)``.")

leaky_relu: _sig.NnLeakyRelu = register_op(
    "nn.leaky_relu", num_inputs=1, type_rel=_unary_rel, compute=_leaky_relu, pattern=OpPattern.ELEMWISE,
    doc="Leaky ReLU: ``x`` if ``x > 0`` else ``alpha * x``.",
    attrs=(AttrSpec("alpha", "float", 0.01),))


def _prelu_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    ax = normalize_axis(attrs["axis"], d.ndim)
    return _refine(d, ax, _vector_arg("prelu", types[1], "alpha", d.shape[ax], d, ax))


def _prelu(attrs: Attrs, x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    a = _along(alpha, x.ndim, attrs["axis"] % x.ndim)
    return np.where(x > 0, x, x * a).astype(x.dtype, copy=False)


prelu: _sig.NnPrelu = register_op(
    "nn.prelu", num_inputs=2, type_rel=_prelu_rel, compute=_prelu, pattern=OpPattern.BROADCAST,
    doc="Parametric ReLU with one learned slope per channel of ``axis``.",
    attrs=(AttrSpec("axis", "int", 1),))


# -- conv2d ----------------------------------------------------------------------------------------


def _window_out(n: int, k: int, s: int, d: int, p0: int, p1: int, ceil_mode: bool = False) -> int:
    """Number of windows of ``k`` taps (dilation ``d``) at stride ``s`` over ``p0 + n + p1``."""
    span = n + p0 + p1 - (d * (k - 1) + 1)
    if span < 0:
        return 0
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= n + p0:  # the last window would start in the bottom/right padding
        out -= 1
    return out


def _window_out_dim(n: DimLike, k: DimLike, s: int, d: int, p0: int, p1: int,
                    ceil_mode: bool = False) -> DimLike:
    """:func:`_window_out` over symbolic or unknown dimensions (``n`` the input size, ``k`` the
    kernel size): ``(n + p0 + p1 - d * (k - 1) - 1) // s + 1`` through dimension arithmetic.

    The expression is the count wherever the window fits (where the static relation accepts
    the shapes); a count that is provably 0 is 0.  ``ceil_mode`` rounds up and drops a last
    window that would start in the bottom/right padding: exact when that is decided for every
    binding (always with a static kernel and stride 1), else ``?``."""
    if type(n) is int and type(k) is int:
        return _window_out(n, k, s, d, p0, p1, ceil_mode)
    if n is ANY_DIM or k is ANY_DIM:
        return ANY_DIM
    eff = dim_add(dim_mul(d, dim_sub(k, 1)), 1)  # the dilated kernel extent
    try:
        span = dim_sub(dim_add(n, p0 + p1), eff)
    except PyIRError:  # provably negative: the kernel never fits
        return 0
    hi = dim_bounds(span)[1]
    if hi is not None and hi < 0:
        return 0
    if not ceil_mode:
        return dim_add(dim_floordiv(span, s), 1)
    out = dim_add(dim_floordiv(dim_add(span, s - 1), s), 1)
    if type(eff) is not int:  # (pools have static kernels; kept general)
        return ANY_DIM
    # (out - 1) * s - (n + p0) lies in [p1 - eff, p1 - eff + s - 1] (ceil(span / s) * s - span is in
    # [0, s - 1] and span - (n + p0) is p1 - eff): the last window starts in the padding when it is >= 0
    lo_gap, hi_gap = p1 - eff, p1 - eff + s - 1
    if lo_gap >= 0:
        return dim_sub(out, 1)
    if hi_gap < 0:
        return out
    return ANY_DIM


def _conv2d_canon(a: dict[str, Any]) -> dict[str, Any]:
    op = "nn.conv2d"
    a["strides"] = _pair(op, "strides", a["strides"])
    a["dilation"] = _pair(op, "dilation", a["dilation"])
    a["padding"] = _pad4(op, "padding", a["padding"])
    if a["groups"] < 1:
        raise _attr_error(op, "groups", f"must be >= 1, got {a['groups']}")
    if a["channels"] is not None and a["channels"] < 1:
        raise _attr_error(op, "channels", f"must be >= 1, got {a['channels']}")
    if a["kernel_size"] is not None:
        a["kernel_size"] = _pair(op, "kernel_size", a["kernel_size"])
    _layout(op, "data_layout", a["data_layout"], "NCHW")
    _layout(op, "kernel_layout", a["kernel_layout"], "OIHW")
    a["out_dtype"] = _out_dtype(op, a["out_dtype"])
    return a


def _conv2d_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, w = tensor(types[0], "data"), tensor(types[1], "weight")
    where = f"(data {d.shape}, weight {w.shape})"
    if d.ndim != 4:
        raise fail(f"conv2d: data must be 4-D NCHW {where}")
    if w.ndim != 4:
        raise fail(f"conv2d: weight must be 4-D OIHW {where}")
    if d.dtype != w.dtype:
        raise fail(f"conv2d: data dtype {d.dtype} != weight dtype {w.dtype} {where}")
    n, c, h, wd = d.shape
    o, i, kh, kw = w.shape
    if not (type(c) is int and type(h) is int and type(wd) is int and type(o) is int and type(i) is int
            and type(kh) is int and type(kw) is int):  # the batch dimension n passes through
        return _conv2d_rel_dims(d, w, attrs, where)
    g = attrs["groups"]
    if c != i * g:
        raise fail(f"conv2d: input channels {c} != weight in-channels {i} x groups {g} {where}")
    if o % g:
        raise fail(f"conv2d: weight out-channels {o} not divisible by groups {g} {where}")
    if attrs["channels"] is not None and attrs["channels"] != o:
        raise fail(f"conv2d: channels={attrs['channels']} != weight out-channels {o} {where}")
    if attrs["kernel_size"] is not None and attrs["kernel_size"] != (kh, kw):
        raise fail(f"conv2d: kernel_size={attrs['kernel_size']} != weight kernel {(kh, kw)} {where}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    oh, ow = _window_out(h, kh, sh, dh, pt, pb), _window_out(wd, kw, sw, dw, pl, pr)
    if oh < 1 or ow < 1:
        raise fail(f"conv2d: dilated kernel {(dh * (kh - 1) + 1, dw * (kw - 1) + 1)} larger than "
                   f"padded input {(h + pt + pb, wd + pl + pr)} {where}")
    return TensorType((n, o, oh, ow), attrs["out_dtype"] or d.dtype)


def _conv2d_rel_dims(d: TensorType, w: TensorType, attrs: Attrs, where: str) -> Type:
    """conv2d's relation over symbolic or unknown dimensions: every check fails only where it
    provably must, the attributes ``channels`` and ``kernel_size`` stand in for unknown weight
    dimensions, and the output size goes through :func:`_window_out_dim`."""
    n, c, h, wd = d.shape
    o, i, kh, kw = w.shape
    g = attrs["groups"]
    if unify_dims(c, dim_mul(i, g)) is None:
        raise fail(f"conv2d: input channels {dim_str(c, 40)} != weight in-channels {dim_str(i, 40)} x "
                   f"groups {g} {where}")
    rem = dim_mod(o, g)
    if rem != 0 and rem is not ANY_DIM and (type(rem) is int or dims_equal(rem, 0) is False):
        raise fail(f"conv2d: weight out-channels {dim_str(o, 40)} not divisible by groups {g} {where}")
    ch = attrs["channels"]
    if ch is not None:
        u = unify_dims(o, ch)
        if u is None:
            raise fail(f"conv2d: channels={ch} != weight out-channels {dim_str(o, 40)} {where}")
        o = u
    ks = attrs["kernel_size"]
    if ks is not None:
        uh, uw = unify_dims(kh, ks[0]), unify_dims(kw, ks[1])
        if uh is None or uw is None:
            raise fail(f"conv2d: kernel_size={ks} != weight kernel {shape_str((kh, kw))} {where}")
        kh, kw = uh, uw
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    oh, ow = _window_out_dim(h, kh, sh, dh, pt, pb), _window_out_dim(wd, kw, sw, dw, pl, pr)
    if provably_less(oh, 1) or provably_less(ow, 1):
        raise fail(f"conv2d: the dilated kernel {shape_str((kh, kw))} (dilation {(dh, dw)}) is larger than "
                   f"the padded input {shape_str((h, wd))} + padding {(pt, pl, pb, pr)} {where}")
    return TensorType((n, o, oh, ow), attrs["out_dtype"] or d.dtype)


def _conv2d(attrs: Attrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    out_dtype = np.dtype(attrs["out_dtype"] or x.dtype)
    if x.dtype != out_dtype:
        x = x.astype(out_dtype)
    if w.dtype != out_dtype:
        w = w.astype(out_dtype)
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    g = attrs["groups"]
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    if pt or pl or pb or pr:
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    # im2col: a (N, C, OH, OW, KH, KW) strided view of the padded input, no copy yet.
    v = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    v = v[:, :, ::sh, ::sw, ::dh, ::dw]
    oh, ow = v.shape[2:4]
    og = o // g
    k = cg * kh * kw
    v = v.reshape(n, g, cg, oh, ow, kh, kw)
    cols = v.transpose(1, 0, 3, 4, 2, 5, 6).reshape(g, n * oh * ow, k)  # copies: (G, N*OH*OW, K)
    wm = w.reshape(g, og, k).transpose(0, 2, 1)  # (G, K, O/G)
    out = np.matmul(cols, wm)  # (G, N*OH*OW, O/G)
    out = out.reshape(g, n, oh, ow, og).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)
    return np.ascontiguousarray(out, dtype=out_dtype)


conv2d: _sig.NnConv2d = register_op(
    "nn.conv2d", num_inputs=2, type_rel=_conv2d_rel, compute=_conv2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D convolution (NCHW data, OIHW weight) with strides, padding, dilation and groups.",
    attrs=(AttrSpec("strides", "ints", (1, 1)),
           AttrSpec("padding", "ints", (0, 0, 0, 0), "1, 2 (h, w) or 4 (top, left, bottom, right)"),
           AttrSpec("dilation", "ints", (1, 1)),
           AttrSpec("groups", "int", 1),
           AttrSpec("channels", "int?", None),
           AttrSpec("kernel_size", "ints?", None),
           AttrSpec("data_layout", "str", "NCHW"),
           AttrSpec("kernel_layout", "str", "OIHW"),
           AttrSpec("out_dtype", "any", None, "dtype of the result (None: the input dtype)")),
    canonicalize=_conv2d_canon)


# -- pooling -------------------------------------------------------------------------------------


def _pool_canon(op: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        a["pool_size"] = _pair(op, "pool_size", a["pool_size"])
        a["strides"] = _pair(op, "strides", a["strides"])
        a["dilation"] = _pair(op, "dilation", a["dilation"])
        a["padding"] = _pad4(op, "padding", a["padding"])
        _layout(op, "layout", a["layout"], "NCHW")
        return a

    return canon


def _pool_out_hw(attrs: Attrs, h: int, w: int) -> tuple[int, int]:
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    cm = attrs["ceil_mode"]
    return _window_out(h, kh, sh, dh, pt, pb, cm), _window_out(w, kw, sw, dw, pl, pr, cm)


def _pool_out_hw_dims(attrs: Attrs, h: DimLike, w: DimLike) -> tuple[DimLike, DimLike]:
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    cm = attrs["ceil_mode"]
    return _window_out_dim(h, kh, sh, dh, pt, pb, cm), _window_out_dim(w, kw, sw, dw, pl, pr, cm)


def _pool_rel(name: str) -> _Rel:
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        d = tensor(types[0], "data")
        if d.ndim != 4:
            raise fail(f"{name}: data must be 4-D NCHW, got shape {d.shape}")
        n, c, h, w = d.shape
        oh: DimLike
        ow: DimLike
        if type(h) is int and type(w) is int:
            oh, ow = _pool_out_hw(attrs, h, w)
        else:
            oh, ow = _pool_out_hw_dims(attrs, h, w)
        if provably_less(oh, 1) or provably_less(ow, 1):
            raise fail(f"{name}: pool_size {attrs['pool_size']} (dilation {attrs['dilation']}) does not fit "
                       f"data {d.shape} with padding {attrs['padding']}")
        return TensorType((n, c, oh, ow), d.dtype)

    return rel


def _pool_windows(attrs: Attrs, x: np.ndarray, fill: Any) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """Windows of ``x`` padded with ``fill``: a (N, C, OH, OW, KH, KW) view, and the full padding used."""
    h, w = x.shape[2:]
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    oh, ow = _pool_out_hw(attrs, h, w)
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    # ceil_mode may need windows that reach past the declared bottom/right padding.
    xb = max(pb, (oh - 1) * sh + eh - h - pt)
    xr = max(pr, (ow - 1) * sw + ew - w - pl)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, xb), (pl, xr)), constant_values=fill)
    v = sliding_window_view(xp, (eh, ew), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    return v[:, :, :oh, :ow], (pt, pl, xb, xr)


def _lowest(dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return False


def _max_pool2d(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    v, _ = _pool_windows(attrs, x, _lowest(x.dtype))
    return np.ascontiguousarray(v.max(axis=(-2, -1)))


def _avg_pool2d(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    v, (pt, pl, pb, pr) = _pool_windows(attrs, x, 0)
    h, w = x.shape[2:]
    # The divisor of each window: a 0/1 mask of the counted positions, pooled like the data.
    mask = np.zeros((1, 1, pt + h + pb, pl + w + pr), dtype=np.int64)
    if attrs["count_include_pad"]:
        dpb, dpr = attrs["padding"][2:]  # declared padding counts, ceil_mode's extra does not
        mask[..., :pt + h + dpb, :pl + w + dpr] = 1
    else:
        mask[..., pt:pt + h, pl:pl + w] = 1
    (sh, sw), (dh, dw), (kh, kw) = attrs["strides"], attrs["dilation"], attrs["pool_size"]
    mv = sliding_window_view(mask, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    count = mv[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :v.shape[2], :v.shape[3]].sum(axis=(-2, -1))
    acc = np.float64 if x.dtype.kind != "f" else x.dtype
    total = v.sum(axis=(-2, -1), dtype=acc)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(count > 0, total / np.maximum(count, 1).astype(acc), 0)
    return np.ascontiguousarray(out, dtype=x.dtype)


_POOL_ATTRS = (
    AttrSpec("pool_size", "ints", REQUIRED, "1 or 2 ints (kh, kw)"),
    AttrSpec("strides", "ints", (1, 1)),
    AttrSpec("padding", "ints", (0, 0, 0, 0), "1, 2 (h, w) or 4 (top, left, bottom, right)"),
    AttrSpec("dilation", "ints", (1, 1)),
    AttrSpec("ceil_mode", "bool", False),
    AttrSpec("layout", "str", "NCHW"),
)

max_pool2d: _sig.NnMaxPool2d = register_op(
    "nn.max_pool2d", num_inputs=1, type_rel=_pool_rel("max_pool2d"), compute=_max_pool2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D max pooling over NCHW data (padding never wins the max).",
    attrs=_POOL_ATTRS, canonicalize=_pool_canon("nn.max_pool2d"))

avg_pool2d: _sig.NnAvgPool2d = register_op(
    "nn.avg_pool2d", num_inputs=1, type_rel=_pool_rel("avg_pool2d"), compute=_avg_pool2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D average pooling over NCHW data (padding counted only with ``count_include_pad``).",
    attrs=(*_POOL_ATTRS, AttrSpec("count_include_pad", "bool", False)),
    canonicalize=_pool_canon("nn.avg_pool2d"))


def _global_pool_rel(name: str) -> _Rel:
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        d = tensor(types[0], "data")
        if d.ndim != 4:
            raise fail(f"{name}: data must be 4-D NCHW, got shape {d.shape}")
        return TensorType(d.shape[:2] + (1, 1), d.dtype)

    return rel


def _global_canon(op: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        _layout(op, "layout", a["layout"], "NCHW")
        return a

    return canon


global_avg_pool2d: _sig.NnGlobalAvgPool2d = register_op(
    "nn.global_avg_pool2d", num_inputs=1, type_rel=_global_pool_rel("global_avg_pool2d"),
    compute=lambda attrs, x: np.mean(x, axis=(2, 3), keepdims=True).astype(x.dtype, copy=False),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="Mean over H and W: (N, C, H, W) -> (N, C, 1, 1).",
    attrs=(AttrSpec("layout", "str", "NCHW"),), canonicalize=_global_canon("nn.global_avg_pool2d"))

global_max_pool2d: _sig.NnGlobalMaxPool2d = register_op(
    "nn.global_max_pool2d", num_inputs=1, type_rel=_global_pool_rel("global_max_pool2d"),
    compute=lambda attrs, x: np.max(x, axis=(2, 3), keepdims=True),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="Maximum over H and W: (N, C, H, W) -> (N, C, 1, 1).",
    attrs=(AttrSpec("layout", "str", "NCHW"),), canonicalize=_global_canon("nn.global_max_pool2d"))


# -- normalization -----------------------------------------------------------------------------------


def _batch_norm_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _float_tensor("batch_norm", types[0])
    ax = normalize_axis(attrs["axis"], d.ndim)
    c = d.shape[ax]
    for t, what in zip(types[1:], ("gamma", "beta", "moving_mean", "moving_var")):
        c = _vector_arg("batch_norm", t, what, c, d, ax)
    vec = TensorType((c,), d.dtype)
    return TupleType([_refine(d, ax, c), vec, vec])


def _batch_norm(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
                var: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ax = attrs["axis"] % x.ndim
    out = (x - _along(mean, x.ndim, ax)) / np.sqrt(_along(var, x.ndim, ax) + attrs["epsilon"])
    if attrs["scale"]:
        out = out * _along(gamma, x.ndim, ax)
    if attrs["center"]:
        out = out + _along(beta, x.ndim, ax)
    return out.astype(x.dtype, copy=False), mean, var


batch_norm: _sig.NnBatchNorm = register_op(
    "nn.batch_norm", num_inputs=5, type_rel=_batch_norm_rel, compute=_batch_norm, pattern=OpPattern.OPAQUE,
    doc="Inference batch norm on ``axis``; returns the tuple (out, moving_mean, moving_var).",
    attrs=(AttrSpec("axis", "int", 1), AttrSpec("epsilon", "float", 1e-5),
           AttrSpec("center", "bool", True), AttrSpec("scale", "bool", True)))


def _layer_norm_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _float_tensor("layer_norm", types[0])
    ax = normalize_axis(attrs["axis"], d.ndim)
    c = d.shape[ax]
    for t, what in zip(types[1:], ("gamma", "beta")):
        c = _vector_arg("layer_norm", t, what, c, d, ax)
    return _refine(d, ax, c)


def _layer_norm(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % x.ndim
    mean = x.mean(axis=ax, keepdims=True)
    var = np.square(x - mean).mean(axis=ax, keepdims=True)
    out = (x - mean) / np.sqrt(var + attrs["epsilon"])
    if attrs["scale"]:
        out = out * _along(gamma, x.ndim, ax)
    if attrs["center"]:
        out = out + _along(beta, x.ndim, ax)
    return out.astype(x.dtype, copy=False)


layer_norm: _sig.NnLayerNorm = register_op(
    "nn.layer_norm", num_inputs=3, type_rel=_layer_norm_rel, compute=_layer_norm, pattern=OpPattern.OPAQUE,
    doc="Layer norm: normalize over ``axis`` with that axis's mean and variance, then scale and shift.",
    attrs=(AttrSpec("axis", "int", -1), AttrSpec("epsilon", "float", 1e-5),
           AttrSpec("center", "bool", True), AttrSpec("scale", "bool", True)))


def _lrn_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["size"] < 1:
        raise _attr_error("nn.lrn", "size", f"must be >= 1, got {a['size']}")
    return a


def _lrn_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _float_tensor("lrn", types[0])
    normalize_axis(attrs["axis"], d.ndim)
    return d


def _lrn(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % x.ndim
    size = attrs["size"]
    lo = (size - 1) // 2  # the window is [c - floor((size-1)/2), c + ceil((size-1)/2)], clipped
    widths = [(0, 0)] * x.ndim
    widths[ax] = (lo, size - 1 - lo)
    sq = np.pad(np.square(x), widths)
    ssum = sliding_window_view(sq, size, axis=ax).sum(axis=-1)
    out = x / (attrs["bias"] + attrs["alpha"] / size * ssum) ** attrs["beta"]
    return out.astype(x.dtype, copy=False)


lrn: _sig.NnLrn = register_op(
    "nn.lrn", num_inputs=1, type_rel=_lrn_rel, compute=_lrn, pattern=OpPattern.OPAQUE,
    doc="Local response normalization across ``size`` neighbouring channels (Relay/ONNX semantics).",
    attrs=(AttrSpec("size", "int", 5), AttrSpec("axis", "int", 1), AttrSpec("bias", "float", 2.0),
           AttrSpec("alpha", "float", 1e-4), AttrSpec("beta", "float", 0.75)),
    canonicalize=_lrn_canon)


# -- dense, bias_add ----------------------------------------------------------------------------------


def _dense_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["units"] is not None and a["units"] < 1:
        raise _attr_error("nn.dense", "units", f"must be >= 1, got {a['units']}")
    a["out_dtype"] = _out_dtype("nn.dense", a["out_dtype"])
    return a


def _dense_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, w = tensor(types[0], "data"), tensor(types[1], "weight")
    where = f"(data {d.shape}, weight {w.shape})"
    if d.ndim < 1 or w.ndim != 2:
        raise fail(f"dense: needs data of rank >= 1 and a 2-D weight {where}")
    k, wk = d.shape[-1], w.shape[1]
    if k is not wk and unify_dims(k, wk) is None:
        raise fail(f"dense: data features {dim_str(k, 40)} != weight in-features {dim_str(wk, 40)} {where}")
    units = w.shape[0]
    if attrs["units"] is not None and attrs["units"] is not units:
        u = unify_dims(units, attrs["units"])
        if u is None:
            raise fail(f"dense: units={attrs['units']} != weight out-features {dim_str(units, 40)} {where}")
        units = u
    same_dtype([d, w])
    return TensorType(d.shape[:-1] + (units,), attrs["out_dtype"] or d.dtype)


def _dense(attrs: Attrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    dt = np.dtype(attrs["out_dtype"] or x.dtype)
    return np.ascontiguousarray(np.matmul(x.astype(dt, copy=False), w.astype(dt, copy=False).T), dtype=dt)


dense: _sig.NnDense = register_op(
    "nn.dense", num_inputs=2, type_rel=_dense_rel, compute=_dense, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Fully connected layer: data (..., K) times weight (N, K) transposed -> (..., N).",
    attrs=(AttrSpec("units", "int?", None),
           AttrSpec("out_dtype", "any", None, "dtype of the result (None: the input dtype)")),
    canonicalize=_dense_canon)


def _bias_add_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    if d.ndim < 1:
        raise fail(f"bias_add: data must have rank >= 1, got shape {d.shape}")
    ax = normalize_axis(attrs["axis"], d.ndim)
    return _refine(d, ax, _vector_arg("bias_add", types[1], "bias", d.shape[ax], d, ax))


def _bias_add(attrs: Attrs, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (x + _along(b, x.ndim, attrs["axis"] % x.ndim)).astype(x.dtype, copy=False)


bias_add: _sig.NnBiasAdd = register_op(
    "nn.bias_add", num_inputs=2, type_rel=_bias_add_rel, compute=_bias_add, pattern=OpPattern.BROADCAST,
    doc="Add a 1-D bias along ``axis`` of the data.", attrs=(AttrSpec("axis", "int", 1),))


# -- softmax --------------------------------------------------------------------------------------------


def _softmax_rel(name: str) -> _Rel:
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        d = _float_tensor(name, types[0])
        normalize_axis(attrs["axis"], d.ndim)
        return d

    return rel


def _softmax(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return (e / e.sum(axis=attrs["axis"], keepdims=True)).astype(x.dtype, copy=False)


def _log_softmax(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    s = x - x.max(axis=attrs["axis"], keepdims=True)
    return (s - np.log(np.exp(s).sum(axis=attrs["axis"], keepdims=True))).astype(x.dtype, copy=False)


softmax: _sig.NnSoftmax = register_op(
    "nn.softmax", num_inputs=1, type_rel=_softmax_rel("softmax"), compute=_softmax,
    pattern=OpPattern.OPAQUE, doc="Numerically stable softmax along ``axis``.",
    attrs=(AttrSpec("axis", "int", -1),))

log_softmax: _sig.NnLogSoftmax = register_op(
    "nn.log_softmax", num_inputs=1, type_rel=_softmax_rel("log_softmax"), compute=_log_softmax,
    pattern=OpPattern.OPAQUE, doc="Numerically stable log of softmax along ``axis``.",
    attrs=(AttrSpec("axis", "int", -1),))


# -- dropout, batch_flatten, pad --------------------------------------------------------------------------


def _dropout_canon(a: dict[str, Any]) -> dict[str, Any]:
    if not 0.0 <= a["rate"] < 1.0:
        raise _attr_error("nn.dropout", "rate", f"must be in [0, 1), got {a['rate']}")
    return a


dropout: _sig.NnDropout = register_op(
    "nn.dropout", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: x, pattern=OpPattern.OPAQUE,
    doc="Dropout at inference: the input itself (not Relay's (out, mask) tuple).",
    attrs=(AttrSpec("rate", "float", 0.5),), canonicalize=_dropout_canon)


def _batch_flatten_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    if d.ndim < 1:
        raise fail(f"batch_flatten: data must have rank >= 1, got shape {d.shape}")
    return TensorType((d.shape[0], dim_prod(d.shape[1:])), d.dtype)


def _batch_flatten(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64)))


batch_flatten: _sig.NnBatchFlatten = register_op(
    "nn.batch_flatten", num_inputs=1, type_rel=_batch_flatten_rel, compute=_batch_flatten,
    pattern=OpPattern.INJECTIVE, doc="Flatten all but the first axis: (N, ...) -> (N, prod(...)).")


_PAD_MODES = ("constant", "edge", "reflect")


def _pad_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["pad_mode"] not in _PAD_MODES:
        raise _attr_error("nn.pad", "pad_mode", f"must be one of {_PAD_MODES}, got {a['pad_mode']!r}")
    if any(p < 0 for p in a["pad_width"]):
        raise _attr_error("nn.pad", "pad_width", f"must be non-negative, got {a['pad_width']}")
    return a


def _pad_pairs(pad_width: tuple[int, ...]) -> list[tuple[int, int]]:
    return [(pad_width[i], pad_width[i + 1]) for i in range(0, len(pad_width), 2)]


def _pad_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    pw = attrs["pad_width"]
    if len(pw) != 2 * d.ndim:
        raise fail(f"pad: pad_width {pw} must hold 2 x rank = {2 * d.ndim} ints for data {d.shape}")
    pairs = _pad_pairs(pw)
    mode = attrs["pad_mode"]
    for i, ((b, e), s) in enumerate(zip(pairs, d.shape)):
        if mode == "reflect" and (b or e) and _provably_at_most(s, max(b, e)):
            raise fail(f"pad: reflect padding {(b, e)} on axis {i} needs it < the dimension {s} "
                       f"(data {d.shape})")
        if mode == "edge" and (b or e) and s == 0:
            raise fail(f"pad: edge padding of the empty axis {i} (data {d.shape})")
    return TensorType(tuple(s + b + e for (b, e), s in zip(pairs, d.shape)), d.dtype)


def _provably_at_most(d: DimLike, k: int) -> bool:
    """Whether ``d <= k`` for every binding of its symbols."""
    hi = dim_bounds(d)[1]
    return hi is not None and hi <= k


def _pad(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    pairs = _pad_pairs(attrs["pad_width"])
    mode = attrs["pad_mode"]
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=attrs["pad_value"])
    return np.pad(x, pairs, mode=mode)


pad: _sig.NnPad = register_op(
    "nn.pad", num_inputs=1, type_rel=_pad_rel, compute=_pad, pattern=OpPattern.INJECTIVE,
    doc="Pad every axis; ``pad_width`` is flat: (before_0, after_0, before_1, after_1, ...).",
    attrs=(AttrSpec("pad_width", "ints", REQUIRED, "flat (before_0, after_0, before_1, after_1, ...)"),
           AttrSpec("pad_value", "float", 0.0),
           AttrSpec("pad_mode", "str", "constant", "constant, edge or reflect")),
    canonicalize=_pad_canon)
