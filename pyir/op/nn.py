"""Neural-network operators (``pyir.op.nn.*``), with Relay's names and attributes.

Every operator here is declared with :func:`~pyir.op.registry.register_op`: its
type relation, fusion pattern kind and a numpy reference ``compute``.  Only the
``NCHW`` data layout (``OIHW`` for convolution weights) is the default; ``nn.conv2d``, its
packed variant ``nn.contrib_conv2d_NCHWc`` and the pools accept every layout TVM's relations
accept (any permutation of the axes, split sub-axes such as ``NCHW4c``: see :mod:`._layout`).

Deviations from Relay, kept deliberately simple:

* ``nn.dropout`` returns its input tensor (inference semantics), not a tuple.
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
from ..ir.expr import Call as _Call
from ..ir.expr import Expr as _Expr
from ..ir.expr import Op as _Op
from ..ir.expr import as_expr as _as_expr
from ..ir.expr import const as _const
from ..ir.node import Attrs
from ..ir.types import TensorType, TupleType, Type, dtype_kind, normalize_dtype
from ._layout import array_to_layout, check_layout, layout_rank, to_layout
from ._rel import fail, normalize_axis, provably_less, same_dtype, shape_str, tensor, unify_dims
from .registry import REQUIRED, AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from collections.abc import Sequence

    from ..ir.expr import Call, Expr
    from . import _signatures as _sig
    from ._signatures import DType, ExprLike

__all__ = [
    "avg_pool2d", "batch_flatten", "batch_norm", "bias_add", "contrib_conv2d_NCHWc", "conv2d", "dense",
    "dropout",
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


def _conv2d_canon_of(op: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        return _conv2d_canon(op, a)

    return canon


def _conv2d_canon(op: str, a: dict[str, Any]) -> dict[str, Any]:
    a["strides"] = _pair(op, "strides", a["strides"])
    a["dilation"] = _pair(op, "dilation", a["dilation"])
    a["padding"] = _pad4(op, "padding", a["padding"])
    if a["groups"] < 1:
        raise _attr_error(op, "groups", f"must be >= 1, got {a['groups']}")
    if a["channels"] is not None and a["channels"] < 1:
        raise _attr_error(op, "channels", f"must be >= 1, got {a['channels']}")
    if a["kernel_size"] is not None:
        a["kernel_size"] = _pair(op, "kernel_size", a["kernel_size"])
    check_layout(op, "data_layout", a["data_layout"], "NCHW", split="*")
    check_layout(op, "kernel_layout", a["kernel_layout"], "OIHW", split="*")
    if a["out_layout"]:
        check_layout(op, "out_layout", a["out_layout"], "NCHW", split="*")
    a["out_dtype"] = _out_dtype(op, a["out_dtype"])
    return a


def _conv2d_rel(types: tuple[Type, ...], attrs: Attrs, name: str = "conv2d") -> Type:
    """conv2d's relation in any layout: the shapes in NCHW / OIHW, the NCHW relation, the
    result in ``out_layout`` (``""``: the data layout)."""
    d, w = tensor(types[0], "data"), tensor(types[1], "weight")
    dl, kl = attrs["data_layout"], attrs["kernel_layout"]
    if dl == "NCHW" and kl == "OIHW" and not attrs["out_layout"]:
        return _conv2d_rel_nchw(d, w, attrs, f"(data {d.shape}, weight {w.shape})", name)
    where = f"(data {d.shape} in {dl}, weight {w.shape} in {kl})"
    if d.ndim != layout_rank(dl):
        raise fail(f"{name}: data must be {layout_rank(dl)}-D {dl} {where}")
    if w.ndim != layout_rank(kl):
        raise fail(f"{name}: weight must be {layout_rank(kl)}-D {kl} {where}")
    out = _conv2d_rel_nchw(to_layout(name, "data", d, dl, "NCHW"),
                           to_layout(name, "weight", w, kl, "OIHW"), attrs, where, name)
    return to_layout(name, "result", out, "NCHW", attrs["out_layout"] or dl)


def _conv2d_rel_nchw(d: TensorType, w: TensorType, attrs: Attrs, where: str, name: str) -> TensorType:
    if d.ndim != 4:
        raise fail(f"{name}: data must be 4-D NCHW {where}")
    if w.ndim != 4:
        raise fail(f"{name}: weight must be 4-D OIHW {where}")
    if d.dtype != w.dtype and attrs["out_dtype"] is None:  # mixed (int8 x uint8 -> int32) with out_dtype
        raise fail(f"{name}: data dtype {d.dtype} != weight dtype {w.dtype} (give out_dtype to mix dtypes) "
                   f"{where}")
    n, c, h, wd = d.shape
    o, i, kh, kw = w.shape
    if not (type(c) is int and type(h) is int and type(wd) is int and type(o) is int and type(i) is int
            and type(kh) is int and type(kw) is int):  # the batch dimension n passes through
        return _conv2d_rel_dims(d, w, attrs, where, name)
    g = attrs["groups"]
    if c != i * g:
        raise fail(f"{name}: input channels {c} != weight in-channels {i} x groups {g} {where}")
    if o % g:
        raise fail(f"{name}: weight out-channels {o} not divisible by groups {g} {where}")
    if attrs["channels"] is not None and attrs["channels"] != o:
        raise fail(f"{name}: channels={attrs['channels']} != weight out-channels {o} {where}")
    if attrs["kernel_size"] is not None and attrs["kernel_size"] != (kh, kw):
        raise fail(f"{name}: kernel_size={attrs['kernel_size']} != weight kernel {(kh, kw)} {where}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    oh, ow = _window_out(h, kh, sh, dh, pt, pb), _window_out(wd, kw, sw, dw, pl, pr)
    if oh < 1 or ow < 1:
        raise fail(f"{name}: dilated kernel {(dh * (kh - 1) + 1, dw * (kw - 1) + 1)} larger than "
                   f"padded input {(h + pt + pb, wd + pl + pr)} {where}")
    return TensorType((n, o, oh, ow), attrs["out_dtype"] or d.dtype)


def _conv2d_rel_dims(d: TensorType, w: TensorType, attrs: Attrs, where: str, name: str) -> TensorType:
    """conv2d's relation over symbolic or unknown dimensions: every check fails only where it
    provably must, the attributes ``channels`` and ``kernel_size`` stand in for unknown weight
    dimensions, and the output size goes through :func:`_window_out_dim`."""
    n, c, h, wd = d.shape
    o, i, kh, kw = w.shape
    g = attrs["groups"]
    if unify_dims(c, dim_mul(i, g)) is None:
        raise fail(f"{name}: input channels {dim_str(c, 40)} != weight in-channels {dim_str(i, 40)} x "
                   f"groups {g} {where}")
    rem = dim_mod(o, g)
    if rem != 0 and rem is not ANY_DIM and (type(rem) is int or dims_equal(rem, 0) is False):
        raise fail(f"{name}: weight out-channels {dim_str(o, 40)} not divisible by groups {g} {where}")
    ch = attrs["channels"]
    if ch is not None:
        u = unify_dims(o, ch)
        if u is None:
            raise fail(f"{name}: channels={ch} != weight out-channels {dim_str(o, 40)} {where}")
        o = u
    ks = attrs["kernel_size"]
    if ks is not None:
        uh, uw = unify_dims(kh, ks[0]), unify_dims(kw, ks[1])
        if uh is None or uw is None:
            raise fail(f"{name}: kernel_size={ks} != weight kernel {shape_str((kh, kw))} {where}")
        kh, kw = uh, uw
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    oh, ow = _window_out_dim(h, kh, sh, dh, pt, pb), _window_out_dim(wd, kw, sw, dw, pl, pr)
    if provably_less(oh, 1) or provably_less(ow, 1):
        raise fail(f"{name}: the dilated kernel {shape_str((kh, kw))} (dilation {(dh, dw)}) is larger than "
                   f"the padded input {shape_str((h, wd))} + padding {(pt, pl, pb, pr)} {where}")
    return TensorType((n, o, oh, ow), attrs["out_dtype"] or d.dtype)


def _window_slices(x: np.ndarray, i: int, j: int, oh: int, ow: int, strides: tuple[int, int],
                   dilation: tuple[int, int]) -> np.ndarray:
    """The (N, C, OH, OW) view of padded ``x`` seen by kernel tap (i, j)."""
    (sh, sw), (dh, dw) = strides, dilation
    return x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]


def _conv2d(attrs: Attrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """conv2d in any layout: the arrays in NCHW / OIHW, the NCHW computation, the result in
    ``out_layout`` (``""``: the data layout)."""
    dl, kl = attrs["data_layout"], attrs["kernel_layout"]
    y = _conv2d_nchw(attrs, array_to_layout(x, dl, "NCHW"), array_to_layout(w, kl, "OIHW"))
    return array_to_layout(y, "NCHW", attrs["out_layout"] or dl)


def _conv2d_nchw(attrs: Attrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    out_dtype = np.dtype(attrs["out_dtype"] or x.dtype)
    if x.dtype != out_dtype:
        x = x.astype(out_dtype)
    if w.dtype != out_dtype:
        w = w.astype(out_dtype)
    x, w = _wide(x), _wide(w)  # float16 / bfloat16 accumulate in float32
    cdt = x.dtype
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    g = attrs["groups"]
    st, dil, (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    if pt or pl or pb or pr:
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (x.shape[2] - dil[0] * (kh - 1) - 1) // st[0] + 1
    ow = (x.shape[3] - dil[1] * (kw - 1) - 1) // st[1] + 1
    og, k, p = o // g, cg * kh * kw, oh * ow
    if g == c == o and g > 1:
        # depthwise: one multiply-add of the whole (N, C, OH, OW) tap view per kernel position
        acc = np.zeros((n, c, oh, ow), cdt)
        tmp = np.empty_like(acc)
        wd = w.reshape(1, c, kh, kw)
        for i in range(kh):
            for j in range(kw):
                np.multiply(_window_slices(x, i, j, oh, ow, st, dil), wd[:, :, i:i + 1, j:j + 1], out=tmp)
                acc += tmp
        return acc.astype(out_dtype, copy=False)
    if kh == kw == 1:
        cols = _window_slices(x, 0, 0, oh, ow, st, dil).reshape(n, g, k, p)  # a view when stride 1
    else:
        # im2col as kh * kw block copies of tap views into (N, C, KH, KW, OH, OW): rows ordered
        # like the weight's (C/G, KH, KW), so the product needs no transpose afterwards
        buf = np.empty((n, c, kh, kw, oh, ow), cdt)
        for i in range(kh):
            for j in range(kw):
                buf[:, :, i, j] = _window_slices(x, i, j, oh, ow, st, dil)
        cols = buf.reshape(n, g, k, p)
    wm = w.reshape(g, og, k)
    if g == 1:
        out = np.matmul(wm[0], cols[:, 0])  # (O, K) @ (N, K, P) -> (N, O, P): BLAS, no copy after
    else:
        out = np.matmul(wm, cols)  # (G, O/G, K) @ (N, G, K, P) -> (N, G, O/G, P)
    return np.ascontiguousarray(out.reshape(n, o, oh, ow), dtype=out_dtype)


_CONV2D_ATTRS = (
    AttrSpec("strides", "ints", (1, 1)),
    AttrSpec("padding", "ints", (0, 0, 0, 0), "1, 2 (h, w) or 4 (top, left, bottom, right)"),
    AttrSpec("dilation", "ints", (1, 1)),
    AttrSpec("groups", "int", 1),
    AttrSpec("channels", "int?", None),
    AttrSpec("kernel_size", "ints?", None),
    AttrSpec("data_layout", "str", "NCHW", "any permutation of NCHW, sub-axes split off (NHWC, NCHW4c)"),
    AttrSpec("kernel_layout", "str", "OIHW", "any permutation of OIHW, sub-axes split off (HWIO, OIHW4i4o)"),
    AttrSpec("out_layout", "str", "", "layout of the result (empty: data_layout)"),
    AttrSpec("out_dtype", "any", None, "dtype of the result (None: the input dtype)"),
)

conv2d: _sig.NnConv2d = register_op(
    "nn.conv2d", num_inputs=2, type_rel=_conv2d_rel, compute=_conv2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D convolution (NCHW data, OIHW weight by default) with strides, padding, dilation and groups.",
    attrs=_CONV2D_ATTRS, canonicalize=_conv2d_canon_of("nn.conv2d"))


def _nchwc_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    name = "contrib_conv2d_NCHWc"
    if attrs["channels"] is None or attrs["kernel_size"] is None:
        raise fail(f"{name}: needs the attributes channels and kernel_size "
                   f"(got channels={attrs['channels']}, kernel_size={attrs['kernel_size']})")
    return _conv2d_rel(types, attrs, name)


contrib_conv2d_NCHWc: _sig.NnContribConv2dNCHWc = register_op(
    "nn.contrib_conv2d_NCHWc", num_inputs=2, type_rel=_nchwc_rel, compute=_conv2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="conv2d on packed layouts (NCHW4c data, OIHW4i4o kernel); channels and kernel_size required.",
    attrs=_CONV2D_ATTRS, canonicalize=_conv2d_canon_of("nn.contrib_conv2d_NCHWc"))


# -- pooling -------------------------------------------------------------------------------------


def _pool_canon(op: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        a["pool_size"] = _pair(op, "pool_size", a["pool_size"])
        a["strides"] = _pair(op, "strides", a["strides"])
        a["dilation"] = _pair(op, "dilation", a["dilation"])
        a["padding"] = _pad4(op, "padding", a["padding"])
        check_layout(op, "layout", a["layout"], "NCHW", split="NC")
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
        d, layout = tensor(types[0], "data"), attrs["layout"]
        if layout == "NCHW":
            return nchw(d, attrs)
        # another layout: the NCHW relation on the data seen in NCHW, the result back in the layout
        return to_layout(name, "result", nchw(to_layout(name, "data", d, layout, "NCHW"), attrs), "NCHW",
                         layout)

    def nchw(d: TensorType, attrs: Attrs) -> TensorType:
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


def _pool_padded(attrs: Attrs, x: np.ndarray,
                 fill: Any) -> tuple[np.ndarray, int, int, tuple[int, int, int, int]]:
    """``x`` padded with ``fill``, the output height and width, and the full padding used."""
    h, w = x.shape[2:]
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    oh, ow = _pool_out_hw(attrs, h, w)
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    # ceil_mode may need windows that reach past the declared bottom/right padding.
    xb = max(pb, (oh - 1) * sh + eh - h - pt)
    xr = max(pr, (ow - 1) * sw + ew - w - pl)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, xb), (pl, xr)), constant_values=fill) if pt or xb or pl or xr else x
    return xp, oh, ow, (pt, pl, xb, xr)


def _lowest(dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return False


def _max_pool2d(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    xp, oh, ow, _ = _pool_padded(attrs, x, _lowest(x.dtype))
    (kh, kw), st, dil = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    out = np.array(_window_slices(xp, 0, 0, oh, ow, st, dil))
    for i in range(kh):  # one vectorized maximum per window position (NaN propagates, as max does)
        for j in range(kw):
            if i or j:
                np.maximum(out, _window_slices(xp, i, j, oh, ow, st, dil), out=out)
    return out


def _avg_pool2d(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    xp, oh, ow, (pt, pl, pb, pr) = _pool_padded(attrs, x, 0)
    h, w = x.shape[2:]
    # The divisor of each window: a 0/1 mask of the counted positions, pooled like the data.
    mask = np.zeros((1, 1, pt + h + pb, pl + w + pr), dtype=np.int64)
    if attrs["count_include_pad"]:
        dpb, dpr = attrs["padding"][2:]  # declared padding counts, ceil_mode's extra does not
        mask[..., :pt + h + dpb, :pl + w + dpr] = 1
    else:
        mask[..., pt:pt + h, pl:pl + w] = 1
    (kh, kw), st, dil = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    acc = np.float64 if x.dtype.kind != "f" else x.dtype
    total = np.zeros(x.shape[:2] + (oh, ow), acc)
    count = np.zeros((1, 1, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            total += _window_slices(xp, i, j, oh, ow, st, dil)
            count += _window_slices(mask, i, j, oh, ow, st, dil)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(count > 0, total / np.maximum(count, 1).astype(acc), 0)
    return np.ascontiguousarray(out, dtype=x.dtype)


def _in_nchw(fn: Callable[[Attrs, np.ndarray], np.ndarray]) -> Callable[[Attrs, np.ndarray], np.ndarray]:
    """A pool's compute in any ``layout``: the data in NCHW, ``fn``, the result back."""
    def compute(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        layout = attrs["layout"]
        if layout == "NCHW":
            return fn(attrs, x)
        return array_to_layout(fn(attrs, array_to_layout(x, layout, "NCHW")), "NCHW", layout)

    return compute


_POOL_LAYOUT_DOC = "any permutation of NCHW; C and N may be split (NCHW16c), H and W may not (as in TVM)"

_POOL_ATTRS = (
    AttrSpec("pool_size", "ints", REQUIRED, "1 or 2 ints (kh, kw)"),
    AttrSpec("strides", "ints", (1, 1)),
    AttrSpec("padding", "ints", (0, 0, 0, 0), "1, 2 (h, w) or 4 (top, left, bottom, right)"),
    AttrSpec("dilation", "ints", (1, 1)),
    AttrSpec("ceil_mode", "bool", False),
    AttrSpec("layout", "str", "NCHW", _POOL_LAYOUT_DOC),
)

max_pool2d: _sig.NnMaxPool2d = register_op(
    "nn.max_pool2d", num_inputs=1, type_rel=_pool_rel("max_pool2d"), compute=_in_nchw(_max_pool2d),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D max pooling over NCHW data (padding never wins the max).",
    attrs=_POOL_ATTRS, canonicalize=_pool_canon("nn.max_pool2d"))

avg_pool2d: _sig.NnAvgPool2d = register_op(
    "nn.avg_pool2d", num_inputs=1, type_rel=_pool_rel("avg_pool2d"), compute=_in_nchw(_avg_pool2d),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D average pooling over NCHW data (padding counted only with ``count_include_pad``).",
    attrs=(*_POOL_ATTRS, AttrSpec("count_include_pad", "bool", False)),
    canonicalize=_pool_canon("nn.avg_pool2d"))


def _global_pool_rel(name: str) -> _Rel:
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        d, layout = tensor(types[0], "data"), attrs["layout"]
        if layout != "NCHW":  # the NCHW relation on the data seen in NCHW, the result back in the layout
            out = TensorType(to_layout(name, "data", d, layout, "NCHW").shape[:2] + (1, 1), d.dtype)
            return to_layout(name, "result", out, "NCHW", layout)
        if d.ndim != 4:
            raise fail(f"{name}: data must be 4-D NCHW, got shape {d.shape}")
        return TensorType(d.shape[:2] + (1, 1), d.dtype)

    return rel


def _global_canon(op: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        check_layout(op, "layout", a["layout"], "NCHW", split="NC")
        return a

    return canon


global_avg_pool2d: _sig.NnGlobalAvgPool2d = register_op(
    "nn.global_avg_pool2d", num_inputs=1, type_rel=_global_pool_rel("global_avg_pool2d"),
    compute=_in_nchw(lambda attrs, x: np.mean(x, axis=(2, 3), keepdims=True).astype(x.dtype, copy=False)),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Mean over H and W: (N, C, H, W) -> (N, C, 1, 1).",
    attrs=(AttrSpec("layout", "str", "NCHW", _POOL_LAYOUT_DOC),),
    canonicalize=_global_canon("nn.global_avg_pool2d"))

global_max_pool2d: _sig.NnGlobalMaxPool2d = register_op(
    "nn.global_max_pool2d", num_inputs=1, type_rel=_global_pool_rel("global_max_pool2d"),
    compute=_in_nchw(lambda attrs, x: np.max(x, axis=(2, 3), keepdims=True)),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Maximum over H and W: (N, C, H, W) -> (N, C, 1, 1).",
    attrs=(AttrSpec("layout", "str", "NCHW", _POOL_LAYOUT_DOC),),
    canonicalize=_global_canon("nn.global_max_pool2d"))


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
    # x * scale + shift, the per-channel vectors computed in float64: two passes over the data
    scale = 1 / np.sqrt(var.astype(np.float64) + attrs["epsilon"])
    if attrs["scale"]:
        scale = scale * gamma
    shift = -mean.astype(np.float64) * scale
    if attrs["center"]:
        shift = shift + beta
    xw = _wide(x)
    out = xw * _along(scale.astype(xw.dtype), x.ndim, ax)
    out += _along(shift.astype(xw.dtype), x.ndim, ax)
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
    if attrs["out_dtype"] is None:  # mixed input dtypes need out_dtype (as conv2d)
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
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="Numerically stable softmax along ``axis``.",
    attrs=(AttrSpec("axis", "int", -1),))

log_softmax: _sig.NnLogSoftmax = register_op(
    "nn.log_softmax", num_inputs=1, type_rel=_softmax_rel("log_softmax"), compute=_log_softmax,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="Numerically stable log of softmax along ``axis``.",
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


def pad_pairs(op: str, value: Any) -> tuple[tuple[int, int], ...]:
    """``pad_width`` in its canonical form, one ``(before, after)`` pair per axis (Relay's
    ``((before_0, after_0), ...)``; a flat ``(before_0, after_0, before_1, ...)`` is accepted)."""
    try:
        items = tuple(value)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            if len(items) % 2:
                raise TypeError
            pairs = tuple((int(items[i]), int(items[i + 1])) for i in range(0, len(items), 2))
        else:
            def is_int(v: Any) -> bool:
                return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
            pairs = tuple((int(b), int(e)) for b, e in (tuple(p) for p in items) if is_int(b) and is_int(e))
            if len(pairs) != len(items):
                raise TypeError
    except (TypeError, ValueError):
        raise _attr_error(op, "pad_width", f"expected (before, after) int pairs, one per axis, got "
                          f"{value!r:.80}") from None
    if any(b < 0 or e < 0 for b, e in pairs):
        raise _attr_error(op, "pad_width", f"must be non-negative, got {pairs}")
    return pairs


def _pad_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["pad_mode"] not in _PAD_MODES:
        raise _attr_error("nn.pad", "pad_mode", f"must be one of {_PAD_MODES}, got {a['pad_mode']!r}")
    return {**a, "pad_width": pad_pairs("nn.pad", a["pad_width"])}


def _pad_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    v = tensor(types[1], "pad_value")
    if v.ndim != 0:
        raise fail(f"pad: pad_value must be a scalar, got shape {shape_str(v.shape)}")
    pairs = attrs["pad_width"]
    if len(pairs) != d.ndim:
        raise fail(f"pad: pad_width {pairs} must hold a (before, after) pair per axis of data {d.shape}")
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


def pad_compute(x: np.ndarray, pairs: Any, value: Any, mode: str) -> np.ndarray:
    """``nn.pad`` on an array (``value``, a scalar, is cast to ``x``'s dtype)."""
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, pairs, mode=mode)  # type: ignore[call-overload]


_pad_op: _sig.NnPad = register_op(
    "nn.pad", num_inputs=2,
    type_rel=_pad_rel, compute=lambda attrs, x, v: pad_compute(x, attrs["pad_width"], v, attrs["pad_mode"]),
    pattern=OpPattern.INJECTIVE,
    doc="Pad each axis by its (before, after) width with pad_value (cast), the edge or a reflection.",
    attrs=(AttrSpec("pad_width", "any", REQUIRED, "((before_0, after_0), (before_1, after_1), ...)"),
           AttrSpec("pad_mode", "str", "constant", "constant, edge or reflect")),
    canonicalize=_pad_canon)


def pad(data: ExprLike, pad_width: Expr | Sequence[Sequence[int]] | Sequence[int],
        pad_value: ExprLike = 0, pad_mode: str = "constant") -> Call:
    """``nn.pad`` with Relay's signature: ``pad_width`` a (before, after) pair per axis (an
    expression, an integer tensor of shape (rank, 2), gives ``dyn.nn.pad``), ``pad_value`` a
    scalar expression or a Python number (a constant: ``0`` is an int32, ``0.0`` a float32, as
    ``relay.const`` makes them; the value is cast to data's dtype).

    >>> import pyir
    >>> x = pyir.var("x", shape=(2, 3))
    >>> pad(x, ((0, 0), (1, 1))).checked_type
    TensorType((2, 5), 'float32')
    """
    value: Expr = pad_value if isinstance(pad_value, _Expr) else _const(pad_value)
    if isinstance(pad_width, _Expr):  # dyn.nn.pad (pyir.op.dyn imports this module: no import back)
        return _Call(_Op("dyn.nn.pad"), [_as_expr(data), pad_width, value], {"pad_mode": pad_mode})
    return _pad_op(data, value, pad_width=pad_width, pad_mode=pad_mode)


pad.op = _pad_op.op  # type: ignore[attr-defined]
pad.relay_signature = True  # type: ignore[attr-defined]


# == ONNX neural-network operators (issue 13): activations, normalizations, losses, attention ======
#
# Each follows the ONNX operator of the same name (opsets 13-25); computes keep the input dtype
# (float16 data is computed in float32 and cast back, ONNX's ``stash_type=1``).

__all__ += [  # extended here so that the sections above stay untouched
    "attention", "celu", "gelu", "group_norm", "hard_sigmoid", "hard_swish", "hardmax", "lp_normalize",
    "mish", "nll_loss", "rms_norm", "rotary_embedding", "shrink", "softmax_cross_entropy", "softplus",
    "swiglu", "thresholded_relu",
]


def _is_float_like(dtype: str) -> bool:
    """A floating-point dtype: numpy's, or ml_dtypes' bfloat16 and float8 types (kind "V")."""
    return np.dtype(dtype).kind == "f" or dtype.startswith(("bfloat", "float8", "float4"))


def _float_like(op: str, t: Type, what: str = "data") -> TensorType:
    tt = tensor(t, what)
    if not _is_float_like(tt.dtype):
        raise fail(f"{op}: {what} must be floating-point, got {tt.dtype} (shape {shape_str(tt.shape)})")
    return tt


def _wide(x: np.ndarray) -> np.ndarray:
    """``x`` in a dtype of at least float32 precision (float16 and bfloat16 data are computed in
    float32, ONNX's ``stash_type=1``)."""
    if x.dtype.itemsize < 4 and (x.dtype.kind == "f" or _is_float_like(x.dtype.name)):
        return x.astype(np.float32)
    return x


def _float_unary_rel(name: str) -> _Rel:
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        return _float_like(name, types[0])

    return rel


def _erfc_abs(z: np.ndarray) -> np.ndarray:
    """erfc(z) for z >= 0 in float64 (W. J. Cody's rational approximations; relative error below
    1e-13): 1 - erf(z) below 0.5, erfc directly above, so the upper tail keeps its digits."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    small = z < 0.5
    xs = z[small]
    x2 = xs * xs
    a = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
         1.85777706184603153e-1)
    b = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
    num = a[4] * x2
    den = x2
    for i in range(3):
        num = (num + a[i]) * x2
        den = (den + b[i]) * x2
    out[small] = 1.0 - xs * (num + a[3]) / (den + b[3])
    mid = (~small) & (z < 4.0)
    y = z[mid]
    c = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
         8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
         2.15311535474403846e-8)
    d = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
         3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
    num = c[8] * y
    den = y
    for i in range(7):
        num = (num + c[i]) * y
        den = (den + d[i]) * y
    out[mid] = (num + c[7]) / (den + d[7]) * np.exp(-y * y)
    big = z >= 4.0
    y = z[big]
    p = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
         6.58749161529837803e-4, 1.63153871373020978e-2)
    q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
         2.33520497626869185e-3)
    with np.errstate(all="ignore"):
        w = 1.0 / (y * y)
        num = p[5] * w
        den = w
        for i in range(4):
            num = (num + p[i]) * w
            den = (den + q[i]) * w
        r = w * (num + p[4]) / (den + q[4])
        r = (1.0 / np.sqrt(np.pi) - r) / y
        # exp(-y^2) as exp(-ys^2) exp(-(y - ys)(y + ys)) with ys = y rounded to 1/16 (Cody's trick)
        ys = np.trunc(y * 16.0) / 16.0
        out[big] = np.where(y < 27.3, r * np.exp(-ys * ys) * np.exp(-(y - ys) * (y + ys)), 0.0)
    return out


def _elemwise(name: str, fn: Callable[[Attrs, np.ndarray], np.ndarray], doc: str,
              attrs: tuple[AttrSpec, ...] = (), canonicalize: Callable[[dict[str, Any]], dict[str, Any]]
              | None = None) -> Any:
    def compute(a: Attrs, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(fn(a, _wide(x))).astype(x.dtype, copy=False)

    return register_op(f"nn.{name}", num_inputs=1, type_rel=_float_unary_rel(name), compute=compute,
                       pattern=OpPattern.ELEMWISE, doc=doc, attrs=attrs, canonicalize=canonicalize)


def _gelu_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["approximate"] not in ("none", "tanh"):
        raise _attr_error("nn.gelu", "approximate", f"must be 'none' or 'tanh', got {a['approximate']!r}")
    return a


# erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), z >= 0: relative error below 1.2e-7 for every z
# (Numerical Recipes' erfcc, a Chebyshev fit); P's coefficients, constant term first.
_ERFC_P = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
           1.48851587, -0.82215223, 0.17087277)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) = erfc(-x / sqrt 2) / 2 in x's dtype, through the complementary function so that the
    relative error stays small in the lower tail too (where GELU's value is tiny)."""
    dt = x.dtype.type
    z = np.abs(x) * dt(1 / np.sqrt(2.0))
    t = dt(1) / (dt(1) + dt(0.5) * z)
    p = np.full_like(t, _ERFC_P[-1])
    for c in _ERFC_P[-2::-1]:
        p = p * t + dt(c)
    half = dt(0.5) * t * np.exp(p - z * z)
    return np.where(x < 0, half, dt(1) - half)


def _gelu(a: Attrs, x: np.ndarray) -> np.ndarray:
    if a["approximate"] == "tanh":
        c = np.sqrt(2.0 / np.pi)
        return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x * x * x)))
    if x.dtype.itemsize <= 4:  # float32 (float16 is widened): erfcc's 1.2e-7 is below float32's precision
        return x * _normal_cdf(x)
    half = 0.5 * _erfc_abs(np.abs(x) * (1.0 / np.sqrt(2.0)))
    return (x * np.where(x < 0, half, 1.0 - half)).astype(x.dtype)


def _softplus(a: Attrs, x: np.ndarray) -> np.ndarray:
    return np.logaddexp(x.dtype.type(0), x)


gelu: _sig.NnGelu = _elemwise(
    "gelu", _gelu, "GELU ``0.5 x (1 + erf(x / sqrt 2))``, or its tanh approximation (ONNX Gelu).",
    attrs=(AttrSpec("approximate", "str", "none", "'none' (erf) or 'tanh'"),), canonicalize=_gelu_canon)

hard_sigmoid: _sig.NnHardSigmoid = _elemwise(
    "hard_sigmoid", lambda a, x: np.clip(x * x.dtype.type(a["alpha"]) + x.dtype.type(a["beta"]), 0, 1),
    "Hard sigmoid ``clip(alpha x + beta, 0, 1)`` (ONNX HardSigmoid).",
    attrs=(AttrSpec("alpha", "float", 0.2), AttrSpec("beta", "float", 0.5)))

hard_swish: _sig.NnHardSwish = _elemwise(
    "hard_swish", lambda a, x: x * np.clip(x / x.dtype.type(6) + x.dtype.type(0.5), 0, 1),
    "Hard swish ``x * clip(x / 6 + 1/2, 0, 1)`` (ONNX HardSwish).")

softplus: _sig.NnSoftplus = _elemwise("softplus", _softplus, "Softplus ``log(1 + exp(x))``, computed stably.")

mish: _sig.NnMish = _elemwise("mish", lambda a, x: x * np.tanh(_softplus(a, x)),
                              "Mish ``x * tanh(softplus(x))``.")


swish: _sig.NnSwish = _elemwise(
    "swish", lambda a, x: x / (1 + np.exp(-a["alpha"] * x)),
    "Swish ``x * sigmoid(alpha x)`` (SiLU for alpha 1; ONNX Swish).",
    attrs=(AttrSpec("alpha", "float", 1.0),))
__all__ += ["swish"]


def _celu_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["alpha"] == 0:
        raise _attr_error("nn.celu", "alpha", "must not be 0")
    return a


celu: _sig.NnCelu = _elemwise(
    "celu", lambda a, x: np.maximum(x, 0) + np.minimum(0, a["alpha"] * np.expm1(x / a["alpha"])),
    "CELU ``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``.",
    attrs=(AttrSpec("alpha", "float", 1.0),), canonicalize=_celu_canon)

thresholded_relu: _sig.NnThresholdedRelu = _elemwise(
    "thresholded_relu", lambda a, x: np.where(x > a["alpha"], x, x.dtype.type(0)),
    "Thresholded ReLU: ``x`` where ``x > alpha``, else 0.", attrs=(AttrSpec("alpha", "float", 1.0),))


def _shrink_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    if np.dtype(d.dtype).kind not in "fiu":
        raise fail(f"shrink: data must be numeric, got {d.dtype}")
    return d


def _shrink(a: Attrs, x: np.ndarray) -> np.ndarray:
    lam, bias = a["lambd"], a["bias"]
    xw = _wide(x) if x.dtype.kind == "f" else x.astype(np.float64)
    out = np.where(xw < -lam, xw + bias, np.where(xw > lam, xw - bias, 0))
    return out.astype(x.dtype)


shrink: _sig.NnShrink = register_op(
    "nn.shrink", num_inputs=1, type_rel=_shrink_rel, compute=_shrink, pattern=OpPattern.ELEMWISE,
    doc="Shrink: ``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, else 0 (ONNX Shrink).",
    attrs=(AttrSpec("lambd", "float", 0.5), AttrSpec("bias", "float", 0.0)))


def _swiglu_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = _float_like("swiglu", types[0], "a"), _float_like("swiglu", types[1], "b")
    if a.dtype != b.dtype:
        raise fail(f"swiglu: a dtype {a.dtype} != b dtype {b.dtype}")
    if len(a.shape) != len(b.shape):
        raise fail(f"swiglu: a {shape_str(a.shape)} and b {shape_str(b.shape)} must have one shape")
    dims = []
    for x, y in zip(a.shape, b.shape):
        u = unify_dims(x, y)
        if u is None:
            raise fail(f"swiglu: a {shape_str(a.shape)} and b {shape_str(b.shape)} must have one shape")
        dims.append(u)
    return TensorType(tuple(dims), a.dtype)


def _swiglu(attrs: Attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, bw = _wide(a), _wide(b)
    with np.errstate(over="ignore"):
        s = (aw / (1 + np.exp(-attrs["alpha"] * aw))).astype(a.dtype)
    return (_wide(s) * bw).astype(a.dtype)


swiglu: _sig.NnSwiglu = register_op(
    "nn.swiglu", num_inputs=2, type_rel=_swiglu_rel, compute=_swiglu, pattern=OpPattern.ELEMWISE,
    doc="SwiGLU ``a * sigmoid(alpha a) * b`` of two same-shaped tensors (ONNX SwiGLU).",
    attrs=(AttrSpec("alpha", "float", 1.0),))


def _hardmax_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = tensor(types[0], "data")
    normalize_axis(attrs["axis"], d.ndim)
    return d


def _hardmax(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % x.ndim
    out = np.zeros_like(x)
    if x.size:
        idx = np.expand_dims(np.argmax(x, axis=ax), ax)
        np.put_along_axis(out, idx, 1, axis=ax)
    return out


hardmax: _sig.NnHardmax = register_op(
    "nn.hardmax", num_inputs=1, type_rel=_hardmax_rel, compute=_hardmax, pattern=OpPattern.OPAQUE,
    doc="One-hot of the first maximum along ``axis`` (ONNX Hardmax).", attrs=(AttrSpec("axis", "int", -1),))


def _lp_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["p"] not in (1, 2):
        raise _attr_error("nn.lp_normalize", "p", f"must be 1 or 2, got {a['p']}")
    return a


def _lp_normalize(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    xw = _wide(x)
    ax = attrs["axis"] % x.ndim
    if attrs["p"] == 1:
        n = np.abs(xw).sum(axis=ax, keepdims=True)
    else:
        n = np.sqrt(np.square(xw).sum(axis=ax, keepdims=True))
    return (xw / np.where(n == 0, n.dtype.type(1), n)).astype(x.dtype)  # a zero vector stays zero


lp_normalize: _sig.NnLpNormalize = register_op(
    "nn.lp_normalize", num_inputs=1, type_rel=_softmax_rel("lp_normalize"), compute=_lp_normalize,
    pattern=OpPattern.OPAQUE, doc="Divide by the L1 or L2 norm along ``axis`` (ONNX LpNormalization).",
    attrs=(AttrSpec("axis", "int", -1), AttrSpec("p", "int", 2)), canonicalize=_lp_canon)


# -- normalizations over trailing axes ----------------------------------------------------------------


def _trailing_arg(op: str, t: Type, what: str, data: TensorType, axis: int) -> None:
    """``t`` must broadcast (unidirectionally) to ``data.shape[axis:]`` and have data's dtype."""
    v = tensor(t, what)
    tail = data.shape[axis:]
    msg = (f"{op}: {what} {shape_str(v.shape)} must broadcast to the normalized shape {shape_str(tail)} "
           f"of data {shape_str(data.shape)} (axis {axis})")
    if v.ndim > len(tail):
        raise fail(msg)
    try:
        b = _broadcast(tail, v.shape)
    except PyIRError:
        raise fail(msg) from None
    if any(unify_dims(x, y) is None for x, y in zip(b, tail)):
        raise fail(msg)
    if v.dtype != data.dtype:
        raise fail(f"{op}: {what} dtype {v.dtype} != data dtype {data.dtype}")


def _broadcast(a: tuple[DimLike, ...], b: tuple[DimLike, ...]) -> tuple[DimLike, ...]:
    from ._rel import broadcast_shapes

    return broadcast_shapes(a, b)


def _stats_type(d: TensorType, axis: int) -> TensorType:
    return TensorType(d.shape[:axis] + (1,) * (d.ndim - axis), d.dtype)


def _rms_norm_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _float_like("rms_norm", types[0])
    ax = normalize_axis(attrs["axis"], d.ndim)
    _trailing_arg("rms_norm", types[1], "scale", d, ax)
    return d


def _rms_norm(attrs: Attrs, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    xw = _wide(x)
    ax = attrs["axis"] % x.ndim
    ms = np.square(xw).mean(axis=tuple(range(ax, x.ndim)), keepdims=True)
    return (xw / np.sqrt(ms + attrs["epsilon"]) * _wide(scale)).astype(x.dtype)


rms_norm: _sig.NnRmsNorm = register_op(
    "nn.rms_norm", num_inputs=2, type_rel=_rms_norm_rel, compute=_rms_norm, pattern=OpPattern.OPAQUE,
    doc="RMS norm: divide by the root mean square over axes ``axis``.. and scale (ONNX RMSNormalization).",
    attrs=(AttrSpec("axis", "int", -1), AttrSpec("epsilon", "float", 1e-5)))


def _layer_norm_nd_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _float_like("layer_norm_nd", types[0])
    ax = normalize_axis(attrs["axis"], d.ndim)
    _trailing_arg("layer_norm_nd", types[1], "scale", d, ax)
    if len(types) == 3:
        _trailing_arg("layer_norm_nd", types[2], "bias", d, ax)
    elif len(types) != 2:
        raise fail(f"layer_norm_nd: takes data, scale and an optional bias, got {len(types)} inputs")
    s = _stats_type(d, ax)
    return TupleType([d, s, s])


def _layer_norm_nd(attrs: Attrs, x: np.ndarray, scale: np.ndarray, *bias: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xw = _wide(x)
    axes = tuple(range(attrs["axis"] % x.ndim, x.ndim))
    mean = xw.mean(axis=axes, keepdims=True)
    diff = xw - mean
    inv = 1 / np.sqrt(np.square(diff).mean(axis=axes, keepdims=True) + attrs["epsilon"])
    y = diff * inv * _wide(scale)
    if bias:
        y = y + _wide(bias[0])
    return y.astype(x.dtype), mean.astype(x.dtype), inv.astype(x.dtype)


layer_norm_nd: _sig.NnLayerNormNd = register_op(
    "nn.layer_norm_nd", num_inputs=None, type_rel=_layer_norm_nd_rel, compute=_layer_norm_nd,
    pattern=OpPattern.OPAQUE,
    doc="ONNX LayerNormalization over axes ``axis``..: -> (out, mean, inv_std_dev).",
    attrs=(AttrSpec("axis", "int", -1), AttrSpec("epsilon", "float", 1e-5)))
__all__ += ["layer_norm_nd"]


def _group_norm_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["num_groups"] < 1:
        raise _attr_error("nn.group_norm", "num_groups", f"must be >= 1, got {a['num_groups']}")
    return a


def _group_norm_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d = _float_like("group_norm", types[0])
    if d.ndim < 2:
        raise fail(f"group_norm: data must have rank >= 2 (N, C, ...), got {shape_str(d.shape)}")
    g = attrs["num_groups"]
    c = d.shape[1]
    rem = dim_mod(c, g)
    if type(rem) is int and rem != 0:
        raise fail(f"group_norm: channels {dim_str(c, 40)} not divisible by num_groups {g}")
    for t, what in zip(types[1:], ("gamma", "beta")):
        c = _vector_arg("group_norm", t, what, c, d, 1)
    return _refine(d, 1, c)


def _group_norm(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    g = attrs["num_groups"]
    xw = _wide(x).reshape(n, g, -1)
    mean = xw.mean(axis=2, keepdims=True)
    diff = xw - mean
    y = (diff / np.sqrt(np.square(diff).mean(axis=2, keepdims=True) + attrs["epsilon"])).reshape(x.shape)
    y = y * _along(_wide(gamma), x.ndim, 1) + _along(_wide(beta), x.ndim, 1)
    return y.astype(x.dtype)


group_norm: _sig.NnGroupNorm = register_op(
    "nn.group_norm", num_inputs=3, type_rel=_group_norm_rel, compute=_group_norm, pattern=OpPattern.OPAQUE,
    doc="Group norm over ``num_groups`` channel groups of (N, C, ...) data, per-channel scale and shift.",
    attrs=(AttrSpec("num_groups", "int", REQUIRED), AttrSpec("epsilon", "float", 1e-5)),
    canonicalize=_group_norm_canon)


# -- losses --------------------------------------------------------------------------------------------

_REDUCTIONS = ("none", "sum", "mean")


def _loss_canon(op: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        if a["reduction"] not in _REDUCTIONS:
            raise _attr_error(op, "reduction", f"must be one of {_REDUCTIONS}, got {a['reduction']!r}")
        return a

    return canon


def _loss_rel(name: str) -> _Rel:
    """(scores (N, C, d1, ...), labels (N, d1, ...)[, weights (C,)]) -> the loss (and for
    softmax_cross_entropy the log-probabilities of the scores' shape)."""
    def rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
        if len(types) not in (2, 3):
            raise fail(f"{name}: takes scores, labels and optional weights, got {len(types)} inputs")
        x = _float_like(name, types[0], "scores")
        t = tensor(types[1], "labels")
        if x.ndim < 2:
            raise fail(f"{name}: scores must have rank >= 2 (N, C, ...), got {shape_str(x.shape)}")
        if np.dtype(t.dtype).kind not in "iu":
            raise fail(f"{name}: labels must be integers, got {t.dtype}")
        want = (x.shape[0], *x.shape[2:])
        if t.ndim != len(want) or any(unify_dims(a, b) is None for a, b in zip(t.shape, want)):
            raise fail(f"{name}: labels {shape_str(t.shape)} must have shape {shape_str(want)} "
                       f"for scores {shape_str(x.shape)}")
        if len(types) == 3:
            _vector_arg(name, types[2], "weights", x.shape[1], x, 1)
        loss = TensorType(want if attrs["reduction"] == "none" else (), x.dtype)
        return TupleType([loss, x]) if name == "softmax_cross_entropy" else loss

    return rel


def _nll(attrs: Attrs, logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    c = logp.shape[1]
    ii = attrs["ignore_index"]
    t = target.astype(np.int64)
    keep = np.ones(t.shape, dtype=bool) if ii is None else t != ii
    safe = np.where(keep, np.clip(t, 0, max(c - 1, 0)), 0)
    picked = np.take_along_axis(logp, np.expand_dims(safe, 1), axis=1)[:, 0]
    w = np.ones(t.shape, dtype=logp.dtype) if weight is None else weight.astype(logp.dtype)[safe]
    w = np.where(keep, w, 0).astype(logp.dtype)
    loss = -picked * w
    red = attrs["reduction"]
    if red == "sum":
        return np.asarray(loss.sum(dtype=logp.dtype))
    if red == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(loss.sum(dtype=logp.dtype) / w.sum(dtype=logp.dtype))
    return loss


def _nll_loss(attrs: Attrs, x: np.ndarray, target: np.ndarray, *weight: np.ndarray) -> np.ndarray:
    return _nll(attrs, _wide(x), target, weight[0] if weight else None).astype(x.dtype)


def _softmax_cross_entropy(attrs: Attrs, x: np.ndarray, target: np.ndarray, *weight: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    xw = _wide(x)
    shifted = xw - xw.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = _nll(attrs, logp, target, weight[0] if weight else None)
    return loss.astype(x.dtype), logp.astype(x.dtype)


_LOSS_ATTRS = (AttrSpec("reduction", "str", "mean", "'none', 'sum' or 'mean' (over the kept weights)"),
               AttrSpec("ignore_index", "int?", None, "a label whose terms count 0 (weight 0)"))

nll_loss: _sig.NnNllLoss = register_op(
    "nn.nll_loss", num_inputs=None, type_rel=_loss_rel("nll_loss"), compute=_nll_loss,
    pattern=OpPattern.OPAQUE,
    doc="Negative log-likelihood loss of (log-probabilities (N, C, ...), labels (N, ...)[, weights (C,)]).",
    attrs=_LOSS_ATTRS, canonicalize=_loss_canon("nn.nll_loss"))

softmax_cross_entropy: _sig.NnSoftmaxCrossEntropy = register_op(
    "nn.softmax_cross_entropy", num_inputs=None, type_rel=_loss_rel("softmax_cross_entropy"),
    compute=_softmax_cross_entropy, pattern=OpPattern.OPAQUE,
    doc="Softmax cross-entropy of (scores (N, C, ...), labels[, weights]) -> (loss, log_prob).",
    attrs=_LOSS_ATTRS, canonicalize=_loss_canon("nn.softmax_cross_entropy"))


# -- attention and rotary embeddings -------------------------------------------------------------------


def _attn_canon(a: dict[str, Any]) -> dict[str, Any]:
    op = "nn.attention"
    if a["qk_matmul_output_mode"] not in (0, 1, 2, 3):
        raise _attr_error(op, "qk_matmul_output_mode",
                          f"must be 0, 1, 2 or 3, got {a['qk_matmul_output_mode']}")
    for name in ("q_num_heads", "kv_num_heads"):
        if a[name] is not None and a[name] < 1:
            raise _attr_error(op, name, f"must be >= 1, got {a[name]}")
    for name in ("left_window_size", "right_window_size"):
        if a[name] < -1:
            raise _attr_error(op, name, f"must be -1 (unbounded) or >= 0, got {a[name]}")
    if a["softmax_precision"]:
        a["softmax_precision"] = _out_dtype(op, a["softmax_precision"]) or ""
    return a


def _heads(op: str, total: DimLike, heads: int, what: str) -> DimLike:
    rem = dim_mod(total, heads)
    if type(rem) is int and rem != 0:
        raise fail(f"{op}: {what} hidden size {dim_str(total, 40)} is not divisible by {heads} heads")
    return dim_floordiv(total, heads)


def _same(op: str, a: DimLike, b: DimLike, what: str, where: str) -> DimLike:
    u = unify_dims(a, b)
    if u is None:
        raise fail(f"{op}: {what} differ ({dim_str(a, 40)} vs {dim_str(b, 40)}) {where}")
    return u


def _attention_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "attention"
    want = 3 + attrs["has_mask"] + 2 * attrs["has_past"] + attrs["has_nonpad"]
    if len(types) != want:
        raise fail(f"{op}: expected {want} inputs (q, k, v{', mask' * attrs['has_mask']}"
                   f"{', past_key, past_value' * attrs['has_past']}"
                   f"{', nonpad_kv_seqlen' * attrs['has_nonpad']}), got {len(types)}")
    q, k, v = (_float_like(op, t, w) for t, w in zip(types, ("q", "k", "v")))
    where = f"(q {shape_str(q.shape)}, k {shape_str(k.shape)}, v {shape_str(v.shape)})"
    if not (q.dtype == k.dtype == v.dtype):
        raise fail(f"{op}: q, k and v dtypes differ ({q.dtype}, {k.dtype}, {v.dtype})")
    if q.ndim not in (3, 4) or k.ndim != q.ndim or v.ndim != q.ndim:
        raise fail(f"{op}: q, k and v must all be 3-D (batch, seq, hidden) or 4-D (batch, heads, seq, "
                   f"head_size) {where}")
    hq_a, hkv_a = attrs["q_num_heads"], attrs["kv_num_heads"]
    if q.ndim == 3:
        if hq_a is None or hkv_a is None:
            raise fail(f"{op}: 3-D inputs need the q_num_heads and kv_num_heads attributes {where}")
        b, sq = q.shape[:2]
        hq, hkv = hq_a, hkv_a
        d = _heads(op, q.shape[2], hq, "q")
        dk = _heads(op, k.shape[2], hkv, "k")
        dv = _heads(op, v.shape[2], hkv, "v")
        skv = _same(op, k.shape[1], v.shape[1], "k and v sequence lengths", where)
        b = _same(op, b, _same(op, k.shape[0], v.shape[0], "batch sizes", where), "batch sizes", where)
    else:
        b, hq, sq, d = q.shape
        _, hkv, skv, dk = k.shape
        dv = v.shape[3]
        hkv = _same(op, hkv, v.shape[1], "k and v head counts", where)
        skv = _same(op, skv, v.shape[2], "k and v sequence lengths", where)
        b = _same(op, b, _same(op, k.shape[0], v.shape[0], "batch sizes", where), "batch sizes", where)
        if hq_a is not None:
            hq = _same(op, hq, hq_a, "q heads and q_num_heads", where)
        if hkv_a is not None:
            hkv = _same(op, hkv, hkv_a, "kv heads and kv_num_heads", where)
    d = _same(op, d, dk, "q and k head sizes", where)
    if type(hq) is int and type(hkv) is int and hq % hkv:
        raise fail(f"{op}: q heads {hq} not a multiple of kv heads {hkv} {where}")
    i = 3
    mask = None
    if attrs["has_mask"]:
        mask = tensor(types[i], "attn_mask")
        i += 1
    stot = skv
    if attrs["has_past"]:
        pk, pv = tensor(types[i], "past_key"), tensor(types[i + 1], "past_value")
        i += 2
        if pk.ndim != 4 or pv.ndim != 4 or pk.dtype != q.dtype or pv.dtype != q.dtype:
            raise fail(f"{op}: past_key {pk} and past_value {pv} must be 4-D {q.dtype} "
                       "(batch, kv_heads, past_seq, head_size)")
        pwhere = f"(past_key {shape_str(pk.shape)}, past_value {shape_str(pv.shape)}) {where}"
        b = _same(op, b, _same(op, pk.shape[0], pv.shape[0], "past batch sizes", pwhere), "batch sizes",
                  pwhere)
        hkv = _same(op, hkv, _same(op, pk.shape[1], pv.shape[1], "past head counts", pwhere), "kv heads",
                    pwhere)
        d = _same(op, d, pk.shape[3], "past_key head size", pwhere)
        dv = _same(op, dv, pv.shape[3], "past_value head size", pwhere)
        stot = dim_add(_same(op, pk.shape[2], pv.shape[2], "past sequence lengths", pwhere), skv)
    if attrs["has_nonpad"]:
        n = tensor(types[i], "nonpad_kv_seqlen")
        if n.ndim != 1 or np.dtype(n.dtype).kind not in "iu" or unify_dims(n.shape[0], b) is None:
            raise fail(f"{op}: nonpad_kv_seqlen must be a 1-D integer tensor of the batch size "
                       f"{dim_str(b, 40)}, got {n}")
    full = (b, hq, sq, stot)
    if mask is not None:
        if mask.dtype != "bool" and mask.dtype != q.dtype:
            raise fail(f"{op}: attn_mask must be bool or {q.dtype}, got {mask.dtype}")
        if mask.ndim < 1 or mask.ndim > 4:
            raise fail(f"{op}: attn_mask must have rank 1 to 4, got {shape_str(mask.shape)}")
        if type(mask.shape[-1]) is int and type(stot) is int and mask.shape[-1] > stot:
            raise fail(f"{op}: attn_mask {shape_str(mask.shape)} is longer than the {stot} keys")
        bs = _broadcast(mask.shape[:-1] + (stot,), full)
        if any(unify_dims(x, y) is None for x, y in zip(bs, full)):
            raise fail(f"{op}: attn_mask {shape_str(mask.shape)} does not broadcast to {shape_str(full)}")
    y = TensorType((b, sq, dim_mul(hq, dv)) if q.ndim == 3 else (b, hq, sq, dv), q.dtype)
    return TupleType([y, TensorType((b, hkv, stot, d), q.dtype), TensorType((b, hkv, stot, dv), q.dtype),
                      TensorType(full, q.dtype)])


def _attention(attrs: Attrs, q: np.ndarray, k: np.ndarray, v: np.ndarray, *rest: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    it = iter(rest)
    mask = next(it) if attrs["has_mask"] else None
    pk, pv = (next(it), next(it)) if attrs["has_past"] else (None, None)
    nonpad = next(it) if attrs["has_nonpad"] else None
    dt = q.dtype
    neg_inf, zero = dt.type(-np.inf), dt.type(0)
    three = q.ndim == 3
    if three:
        hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
        bsz = q.shape[0]
        q = q.reshape(bsz, q.shape[1], hq, -1).transpose(0, 2, 1, 3)
        k = k.reshape(bsz, k.shape[1], hkv, -1).transpose(0, 2, 1, 3)
        v = v.reshape(bsz, v.shape[1], hkv, -1).transpose(0, 2, 1, 3)
    scale = attrs["scale"]
    if scale is None:
        scale = 1 / np.sqrt(q.shape[3])
    s = dt.type(np.sqrt(scale))  # applied to q and k both, as ONNX's function body does
    if pk is not None and pv is not None:
        k = np.concatenate((pk, k), axis=2)
        v = np.concatenate((pv, v), axis=2)
    present_k, present_v = np.ascontiguousarray(k), np.ascontiguousarray(v)
    sq, skv = q.shape[2], k.shape[2]
    if mask is not None and mask.shape[-1] < skv:
        widths = [(0, 0)] * (mask.ndim - 1) + [(0, skv - mask.shape[-1])]
        mask = np.pad(mask, widths, constant_values=False if mask.dtype == np.bool_ else -np.inf)
    if mask is not None and mask.dtype == np.bool_:
        mask = np.where(mask, zero, neg_inf)
    bias: np.ndarray = np.zeros((sq, skv), dtype=dt) if mask is None else mask.astype(dt, copy=False)
    ii = np.arange(sq).reshape(sq, 1)
    jj = np.arange(skv).reshape(1, skv)
    if nonpad is not None and pk is None:
        offset: Any = (nonpad.astype(np.int64).reshape(-1) - sq).reshape(-1, 1, 1, 1)
    else:
        offset = pk.shape[2] if pk is not None else 0
    if attrs["is_causal"]:
        bias = bias + np.where(jj <= ii + offset, zero, neg_inf)
    lw, rw = attrs["left_window_size"], attrs["right_window_size"]
    if lw >= 0 or rw >= 0:
        diff = ii + offset - jj
        allowed = np.ones(np.shape(diff), dtype=bool)
        if lw >= 0:
            allowed &= diff <= lw
        if rw >= 0:
            allowed &= -diff <= rw
        bias = bias + np.where(allowed, zero, neg_inf)
    if nonpad is not None:
        keep = np.arange(skv) < nonpad.astype(np.int64).reshape(-1, 1)
        bias = bias + np.where(keep, zero, neg_inf).reshape(-1, 1, 1, skv)
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        k = np.repeat(k, hq // hkv, axis=1)
        v = np.repeat(v, hq // hkv, axis=1)
    qk = np.matmul(q * s, np.swapaxes(k * s, -1, -2))
    cap = attrs["softcap"]
    if cap > 0:
        qk = (np.tanh(qk / dt.type(cap)) * dt.type(cap)).astype(dt, copy=False)
    with np.errstate(invalid="ignore"):
        qkb = qk + bias
    mode = attrs["qk_matmul_output_mode"]
    qk_out = qkb if mode == 2 else qk
    sdt = np.dtype(attrs["softmax_precision"] or dt)
    x = qkb.astype(sdt, copy=False)
    m = x.max(axis=-1, keepdims=True)
    dead = np.isneginf(m)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - np.where(dead, sdt.type(0), m) if dead.any() else x - m)
        tot = e.sum(axis=-1, keepdims=True)
        p = e / np.where(tot == 0, sdt.type(1), tot)
    masked_rows = np.isneginf(bias.max(axis=-1, keepdims=True))  # no key allowed: the row is 0
    if masked_rows.any():
        p = np.where(masked_rows, sdt.type(0), p)
    if mode == 3:
        qk_out = p
    full = (q.shape[0], hq, sq, skv)
    qk_out = np.ascontiguousarray(np.broadcast_to(qk_out.astype(dt, copy=False), full))
    y = np.matmul(np.broadcast_to(p.astype(dt, copy=False), full), v)
    if three:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], sq, -1)
    return np.ascontiguousarray(y), present_k, present_v, qk_out


attention: _sig.NnAttention = register_op(
    "nn.attention", num_inputs=None, type_rel=_attention_rel, compute=_attention, pattern=OpPattern.OPAQUE,
    doc="ONNX Attention: (q, k, v[, mask][, past k, v][, nonpad_kv_seqlen]) -> (out, k, v, qk).",
    attrs=(AttrSpec("scale", "float?", None, "None: 1 / sqrt(head_size)"),
           AttrSpec("is_causal", "bool", False),
           AttrSpec("q_num_heads", "int?", None, "heads of 3-D q (required for 3-D inputs)"),
           AttrSpec("kv_num_heads", "int?", None, "heads of 3-D k and v (required for 3-D inputs)"),
           AttrSpec("softcap", "float", 0.0, "> 0: scores become softcap * tanh(scores / softcap)"),
           AttrSpec("qk_matmul_output_mode", "int", 0,
                    "the 4th output: 0 q.k, 1 after softcap, 2 after the mask, 3 after softmax"),
           AttrSpec("softmax_precision", "str", "", "dtype of the softmax ('' : the input dtype)"),
           AttrSpec("left_window_size", "int", -1), AttrSpec("right_window_size", "int", -1),
           AttrSpec("has_mask", "bool", False), AttrSpec("has_past", "bool", False),
           AttrSpec("has_nonpad", "bool", False)),
    canonicalize=_attn_canon)


def _rotary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "rotary_embedding"
    want = 3 + attrs["has_position_ids"]
    if len(types) != want:
        raise fail(f"{op}: expected {want} inputs (x, cos_cache, sin_cache"
                   f"{', position_ids' * attrs['has_position_ids']}), got {len(types)}")
    x = _float_like(op, types[0], "x")
    cos, sin = tensor(types[1], "cos_cache"), tensor(types[2], "sin_cache")
    where = f"(x {shape_str(x.shape)}, cos_cache {shape_str(cos.shape)}, sin_cache {shape_str(sin.shape)})"
    if cos.dtype != x.dtype or sin.dtype != x.dtype:
        raise fail(f"{op}: cos_cache and sin_cache must be {x.dtype} {where}")
    if x.ndim == 4:
        b, _, s, d = x.shape
    elif x.ndim == 3:
        if attrs["num_heads"] is None:
            raise fail(f"{op}: 3-D x needs the num_heads attribute {where}")
        b, s = x.shape[:2]
        d = _heads(op, x.shape[2], attrs["num_heads"], "x")
    else:
        raise fail(f"{op}: x must be 3-D (batch, seq, hidden) or 4-D (batch, heads, seq, head_size) {where}")
    rd = attrs["rotary_embedding_dim"] or d
    if type(rd) is int and type(d) is int and (rd > d or rd % 2):
        raise fail(f"{op}: rotary_embedding_dim {rd} must be even and at most the head size {d} {where}")
    half = dim_floordiv(rd, 2)
    if attrs["has_position_ids"]:
        p = tensor(types[3], "position_ids")
        if np.dtype(p.dtype).kind not in "iu" or p.ndim != 2:
            raise fail(f"{op}: position_ids must be a 2-D integer tensor (batch, seq), got {p}")
        _same(op, p.shape[0], b, "position_ids and x batch sizes", where)
        _same(op, p.shape[1], s, "position_ids and x sequence lengths", where)
        if cos.ndim != 2 or sin.ndim != 2:
            raise fail(f"{op}: with position_ids the caches must be 2-D (max_position, rotary_dim / 2) "
                       f"{where}")
    elif cos.ndim != 3 or sin.ndim != 3:
        raise fail(f"{op}: without position_ids the caches must be 3-D (batch, seq, rotary_dim / 2) {where}")
    else:
        _same(op, cos.shape[0], b, "cache and x batch sizes", where)
        _same(op, cos.shape[1], s, "cache and x sequence lengths", where)
    for c in (cos, sin):
        _same(op, c.shape[-1], half, "cache width and rotary_embedding_dim / 2", where)
    return x


def _rotary(attrs: Attrs, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, *pos: np.ndarray) -> np.ndarray:
    shape = x.shape
    xt = x.transpose(0, 2, 1, 3) if x.ndim == 4 else x.reshape(shape[0], shape[1], attrs["num_heads"], -1)
    rd = attrs["rotary_embedding_dim"] or xt.shape[3]
    if pos:
        cos, sin = cos[pos[0]], sin[pos[0]]
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    rot = xt[..., :rd]
    if attrs["interleaved"]:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., :rd // 2], rot[..., rd // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if attrs["interleaved"]:
        rot = np.stack((real, imag), axis=-1).reshape(rot.shape)
    else:
        rot = np.concatenate((real, imag), axis=-1)
    out = np.concatenate((rot, xt[..., rd:]), axis=-1).astype(x.dtype, copy=False)
    out = out.transpose(0, 2, 1, 3) if x.ndim == 4 else out.reshape(shape)
    return np.ascontiguousarray(out)


rotary_embedding: _sig.NnRotaryEmbedding = register_op(
    "nn.rotary_embedding", num_inputs=None, type_rel=_rotary_rel, compute=_rotary, pattern=OpPattern.OPAQUE,
    doc="Rotary position embedding (ONNX RotaryEmbedding): (x, cos_cache, sin_cache[, position_ids]).",
    attrs=(AttrSpec("interleaved", "bool", False),
           AttrSpec("rotary_embedding_dim", "int", 0, "0: the whole head"),
           AttrSpec("num_heads", "int?", None, "heads of 3-D x"),
           AttrSpec("has_position_ids", "bool", False)))


_UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


def _lin_attn_canon(a: dict[str, Any]) -> dict[str, Any]:
    op = "nn.linear_attention"
    if a["update_rule"] not in _UPDATE_RULES:
        raise _attr_error(op, "update_rule", f"must be one of {_UPDATE_RULES}, got {a['update_rule']!r}")
    hq, hkv = a["q_num_heads"], a["kv_num_heads"]
    if hq < 1 or hkv < 1 or hq % hkv:
        raise _attr_error(op, "q_num_heads",
                          f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    return a


def _linear_attention_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "linear_attention"
    rule = attrs["update_rule"]
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    want = 3 + attrs["has_past"] + gated + delta
    if len(types) != want:
        raise fail(f"{op}: update_rule {rule!r} takes {want} inputs "
                   f"(q, k, v{', past_state' * attrs['has_past']}"
                   f"{', decay' * gated}{', beta' * delta}), got {len(types)}")
    q, k, v = (_float_like(op, t, w) for t, w in zip(types, ("query", "key", "value")))
    where = f"(query {shape_str(q.shape)}, key {shape_str(k.shape)}, value {shape_str(v.shape)})"
    if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
        raise fail(f"{op}: query, key and value must be 3-D (batch, seq, heads * head_size) {where}")
    hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
    b = _same(op, q.shape[0], _same(op, k.shape[0], v.shape[0], "batch sizes", where), "batch sizes", where)
    t = _same(op, q.shape[1], _same(op, k.shape[1], v.shape[1], "sequence lengths", where),
              "sequence lengths", where)
    dk = _same(op, _heads(op, q.shape[2], hq, "query"), _heads(op, k.shape[2], hkv, "key"), "head sizes",
               where)
    dv = _heads(op, v.shape[2], hkv, "value")
    state = TensorType((b, hkv, dk, dv), q.dtype)
    i = 3
    if attrs["has_past"]:
        p = _float_like(op, types[i], "past_state")
        i += 1
        if p.ndim != 4 or any(unify_dims(x, y) is None for x, y in zip(p.shape, state.shape)):
            raise fail(f"{op}: past_state {shape_str(p.shape)} must have shape {shape_str(state.shape)} "
                       f"{where}")
        state = TensorType(state.shape, p.dtype)
    for flag, name, lasts in ((gated, "decay", (hkv, dim_mul(hkv, dk))), (delta, "beta", (hkv, 1))):
        if not flag:
            continue
        g = _float_like(op, types[i], name)
        i += 1
        if g.ndim != 3 or unify_dims(g.shape[0], b) is None or unify_dims(g.shape[1], t) is None or all(
                unify_dims(g.shape[2], d) is None for d in lasts):
            shown = " or ".join(dim_str(d, 40) for d in lasts)
            raise fail(f"{op}: {name} {shape_str(g.shape)} must be (batch, seq, {shown}) {where}")
    return TupleType([TensorType((b, t, dim_mul(hq, dv)), q.dtype), state])


def _linear_attention(attrs: Attrs, q: np.ndarray, k: np.ndarray, v: np.ndarray, *rest: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    rule = attrs["update_rule"]
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    it = iter(rest)
    past = next(it) if attrs["has_past"] else None
    decay = next(it) if gated else None
    beta = next(it) if delta else None
    hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
    b, t, _ = q.shape
    f32 = np.float32

    def heads(x: np.ndarray, h: int) -> np.ndarray:  # (B, T, H*D) -> (B, H, T, D)
        return x.reshape(b, t, h, -1).transpose(0, 2, 1, 3).astype(f32)

    q4, k4, v4 = heads(q, hq), heads(k, hkv), heads(v, hkv)
    dk, dv = q4.shape[3], v4.shape[3]
    g4 = None if decay is None else (decay.reshape(b, t, hkv, 1).transpose(0, 2, 1, 3).astype(f32)
                                     if decay.shape[2] == hkv else heads(decay, hkv))
    b4 = None if beta is None else beta.reshape(b, t, beta.shape[2], 1).transpose(0, 2, 1, 3).astype(f32)
    state = np.zeros((b, hkv, dk, dv), f32) if past is None else past.astype(f32)
    scale = attrs["scale"] or 1.0 / np.sqrt(dk)
    group = hq // hkv
    out = np.empty((b, hq, t, dv), f32)
    for i in range(t):  # the recurrence over time, vectorized over batch, heads and features
        kt, vt = k4[:, :, i, :], v4[:, :, i, :]
        if g4 is not None:
            state = state * np.exp(g4[:, :, i, :])[..., None]
        if b4 is not None:
            vt = b4[:, :, i, :] * (vt - np.einsum("bhdm,bhd->bhm", state, kt))
        state = state + kt[..., :, None] * vt[..., None, :]
        read = state if group == 1 else np.repeat(state, group, axis=1)
        out[:, :, i, :] = scale * np.einsum("bhd,bhdm->bhm", q4[:, :, i, :], read)
    y = out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv).astype(q.dtype)
    return y, state.astype(q.dtype if past is None else past.dtype)


linear_attention: _sig.NnLinearAttention = register_op(
    "nn.linear_attention", num_inputs=None, type_rel=_linear_attention_rel, compute=_linear_attention,
    pattern=OpPattern.OPAQUE,
    doc="ONNX LinearAttention: (q, k, v[, past_state][, decay][, beta]) -> (out, present_state).",
    attrs=(AttrSpec("q_num_heads", "int", REQUIRED), AttrSpec("kv_num_heads", "int", REQUIRED),
           AttrSpec("scale", "float", 0.0, "0: 1 / sqrt(head_size)"),
           AttrSpec("update_rule", "str", "gated_delta", "linear, gated, delta or gated_delta"),
           AttrSpec("has_past", "bool", False)),
    canonicalize=_lin_attn_canon)
__all__ += ["linear_attention"]


# -- batch_matmul -----------------------------------------------------------------------------------


def _batch_matmul_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, y = tensor(types[0], "tensor_a"), tensor(types[1], "tensor_b")
    where = f"(tensor_a {shape_str(x.shape)}, tensor_b {shape_str(y.shape)})"
    if x.ndim != 3 or y.ndim != 3:
        raise fail(f"batch_matmul: both inputs must be 3-D {where}")
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    xb, xi, xk = x.shape[0], x.shape[2 if ta else 1], x.shape[1 if ta else 2]
    yb, yk, yj = y.shape[0], y.shape[2 if tb else 1], y.shape[1 if tb else 2]
    if xk is not yk and unify_dims(xk, yk) is None:
        raise fail(f"batch_matmul: reduction dimensions differ, {dim_str(xk, 40)} != {dim_str(yk, 40)} "
                   f"{where}")
    if xb == 1:
        b = yb
    elif yb == 1:
        b = xb
    else:
        u = unify_dims(xb, yb)
        if u is None:
            raise fail(f"batch_matmul: batch dimensions {dim_str(xb, 40)} and {dim_str(yb, 40)} differ "
                       f"{where}")
        b = u
    if attrs["out_dtype"] is None and x.dtype != y.dtype:
        raise fail(f"batch_matmul: dtypes differ ({x.dtype}, {y.dtype}): give out_dtype to mix them {where}")
    return TensorType((b, xi, yj), attrs["out_dtype"] or x.dtype)


def _batch_matmul(attrs: Attrs, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    dt = np.dtype(attrs["out_dtype"] or x.dtype)
    a = x.astype(dt, copy=False)
    b = y.astype(dt, copy=False)
    if attrs["transpose_a"]:
        a = np.swapaxes(a, 1, 2)
    if attrs["transpose_b"]:
        b = np.swapaxes(b, 1, 2)
    return np.ascontiguousarray(np.matmul(a, b), dtype=dt)


def _batch_matmul_canon(a: dict[str, Any]) -> dict[str, Any]:
    a["out_dtype"] = _out_dtype("nn.batch_matmul", a["out_dtype"])
    return a


_batch_matmul_op: _sig.NnBatchMatmul = register_op(
    "nn.batch_matmul", num_inputs=2, type_rel=_batch_matmul_rel, compute=_batch_matmul,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Batched (B, M, K) x (B, K, N) -> (B, M, N) product, either side transposed; batch 1 broadcasts.",
    attrs=(AttrSpec("out_dtype", "any", None, "the output dtype (None: tensor_a's)"),
           AttrSpec("transpose_a", "bool", False), AttrSpec("transpose_b", "bool", False)),
    canonicalize=_batch_matmul_canon)


def batch_matmul(tensor_a: ExprLike, tensor_b: ExprLike, out_dtype: DType | None = "",
                 transpose_a: bool = False, transpose_b: bool = True) -> Call:
    """``nn.batch_matmul`` with Relay's Python signature and defaults: ``tensor_b`` is
    transposed unless ``transpose_b=False`` (the NT format), ``out_dtype`` ``""`` keeps
    ``tensor_a``'s dtype.  (The operator's attribute defaults are Relay's C++ ones, which its
    text uses: no transposes, so ``nn.batch_matmul(%a, %b)`` in text means transpose_b=False.)

    >>> import pyir
    >>> a, b = pyir.var("a", shape=(2, 3, 4)), pyir.var("b", shape=(2, 5, 4))
    >>> batch_matmul(a, b).checked_type
    TensorType((2, 3, 5), 'float32')
    """
    return _batch_matmul_op(tensor_a, tensor_b, out_dtype=out_dtype or None, transpose_a=transpose_a,
                            transpose_b=transpose_b)


batch_matmul.op = _batch_matmul_op.op  # type: ignore[attr-defined]
batch_matmul.relay_signature = True  # type: ignore[attr-defined]


# -- upsampling, upsampling3d ---------------------------------------------------------------------

_UPSAMPLING_METHODS = {"nearest_neighbor": "nearest", "bilinear": "linear", "bicubic": "cubic"}
_UPSAMPLING3D_METHODS = {"nearest_neighbor": "nearest", "trilinear": "linear"}


def _scaled(d: DimLike, scale: float) -> DimLike:
    """``round(d * scale)`` (Relay's output size), exact for an int, or for an integral scale."""
    if type(d) is int:
        return int(np.floor(d * scale + 0.5))
    if d is not ANY_DIM and float(scale).is_integer():
        return dim_mul(d, int(scale))
    return ANY_DIM


def _upsampling_canon(op: str, layouts: tuple[str, ...], methods: dict[str, str],
                      scales: tuple[str, ...]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        if a["layout"] not in layouts:
            raise _attr_error(op, "layout", f"must be one of {layouts}, got {a['layout']!r}")
        if a["method"] not in methods:
            raise _attr_error(op, "method", f"must be one of {tuple(methods)}, got {a['method']!r}")
        for k in scales:
            if not a[k] > 0 or not np.isfinite(a[k]):
                raise _attr_error(op, k, f"must be a positive finite float, got {a[k]}")
        return a
    return canon


def _upsampling_shape(d: TensorType, scales: tuple[float, ...], channels_first: bool) -> TensorType:
    r = len(scales) + 2
    if d.ndim != r:
        raise fail(f"data must be {r}-D, got {shape_str(d.shape)}")
    first = 2 if channels_first else 1
    shape = list(d.shape)
    for i, s in enumerate(scales):
        shape[first + i] = _scaled(shape[first + i], s)
    return TensorType(shape, d.dtype)


def _upsample(x: np.ndarray, scales: tuple[float, ...], channels_first: bool, mode: str, coord: str,
              nearest: str) -> np.ndarray:
    from .image import resize_compute

    first = 2 if channels_first else 1
    size = list(x.shape)
    for i, s in enumerate(scales):
        size[first + i] = int(np.floor(x.shape[first + i] * s + 0.5))
    ratios = [o / n if n else 1.0 for o, n in zip(size, x.shape)]
    attrs = {"mode": mode, "coordinate_transformation_mode": coord, "nearest_mode": nearest,
             "cubic_coeff_a": -0.5, "exclude_outside": False, "extrapolation_value": 0.0, "antialias": False}
    return resize_compute(attrs, x, size, ratios, ())  # type: ignore[arg-type]


def _nearest_rounding(coord: str) -> str:
    return "round_prefer_ceil" if coord == "align_corners" else "floor"  # Relay's default rounding


def _upsampling(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    coord = "align_corners" if attrs["align_corners"] else "asymmetric"
    return _upsample(x, (attrs["scale_h"], attrs["scale_w"]), attrs["layout"] == "NCHW",
                     _UPSAMPLING_METHODS[attrs["method"]], coord, _nearest_rounding(coord))


upsampling: _sig.NnUpsampling = register_op(
    "nn.upsampling", num_inputs=1,
    type_rel=lambda types, attrs: _upsampling_shape(
        tensor(types[0], "data"), (attrs["scale_h"], attrs["scale_w"]), attrs["layout"] == "NCHW"),
    compute=_upsampling, pattern=OpPattern.INJECTIVE,
    doc="Upsample a 4-D image by scale_h and scale_w (sizes rounded): nearest, bilinear or bicubic.",
    attrs=(AttrSpec("scale_h", "float", 1.0), AttrSpec("scale_w", "float", 1.0),
           AttrSpec("layout", "str", "NCHW", "NCHW or NHWC"),
           AttrSpec("method", "str", "nearest_neighbor", "nearest_neighbor, bilinear or bicubic"),
           AttrSpec("align_corners", "bool", False)),
    canonicalize=_upsampling_canon("nn.upsampling", ("NCHW", "NHWC"), _UPSAMPLING_METHODS,
                                   ("scale_h", "scale_w")))

_COORDS3D = ("half_pixel", "align_corners", "asymmetric")


def _upsampling3d_canon(a: dict[str, Any]) -> dict[str, Any]:
    a = _upsampling_canon("nn.upsampling3d", ("NCDHW", "NDHWC"), _UPSAMPLING3D_METHODS,
                          ("scale_d", "scale_h", "scale_w"))(a)
    if a["coordinate_transformation_mode"] not in _COORDS3D:
        raise _attr_error("nn.upsampling3d", "coordinate_transformation_mode",
                          f"must be one of {_COORDS3D}, got {a['coordinate_transformation_mode']!r}")
    return a


def _upsampling3d(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    coord = attrs["coordinate_transformation_mode"]
    return _upsample(x, (attrs["scale_d"], attrs["scale_h"], attrs["scale_w"]), attrs["layout"] == "NCDHW",
                     _UPSAMPLING3D_METHODS[attrs["method"]], coord, _nearest_rounding(coord))


upsampling3d: _sig.NnUpsampling3d = register_op(
    "nn.upsampling3d", num_inputs=1,
    type_rel=lambda types, attrs: _upsampling_shape(
        tensor(types[0], "data"), (attrs["scale_d"], attrs["scale_h"], attrs["scale_w"]),
        attrs["layout"] == "NCDHW"),
    compute=_upsampling3d, pattern=OpPattern.INJECTIVE,
    doc="Upsample a 5-D volume by scale_d, scale_h and scale_w (sizes rounded): nearest or trilinear.",
    attrs=(AttrSpec("scale_d", "float", 1.0), AttrSpec("scale_h", "float", 1.0),
           AttrSpec("scale_w", "float", 1.0),
           AttrSpec("layout", "str", "NCDHW", "NCDHW or NDHWC"),
           AttrSpec("method", "str", "nearest_neighbor", "nearest_neighbor or trilinear"),
           AttrSpec("coordinate_transformation_mode", "str", "half_pixel",
                    "half_pixel, align_corners or asymmetric")),
    canonicalize=_upsampling3d_canon)
__all__ += ["batch_matmul", "upsampling", "upsampling3d"]
