"""Indexing operators: gathers and scatters by index tensors, data-dependent selections and
the block rearrangements.

``gather_nd`` (``batch_dims``), ``gather_elements``, ``scatter_nd`` and ``scatter_elements``
(``reduction`` none/add/mul/max/min), ``tensor_scatter`` (a KV-cache write), ``unique``
(sorted, axis; four outputs), ``compress``, ``reverse_sequence``, ``space_to_depth`` /
``depth_to_space`` (DCR or CRD), ``center_crop_pad``, ``col2im``, ``max_unpool``,
``vision.non_max_suppression`` and ``vision.roi_align``.

Index tensors follow ONNX's layout (``gather_nd``'s indices hold a coordinate tuple in their
last dimension) and accept negative indices, counted from the end of their axis.  Where an
output dimension depends on values (``unique``, ``compress``, the selected boxes of
``non_max_suppression``) it is ``?``; where a shape is given as a tensor computed at run time
the ``dyn_*`` variant takes it as an input (its dimensions are ``?``), the static operator as
an attribute.  Every type relation accepts symbolic and unknown dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError, EvaluationError
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike, dim_mul
from ..ir.node import Attrs
from ..ir.types import TensorType, TupleType, Type
from ._rel import fail, normalize_axis, shape_str, tensor, unify_dims
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["gather_nd", "gather_elements", "scatter_nd", "scatter_elements", "tensor_scatter", "unique",
           "compress", "reverse_sequence", "space_to_depth", "depth_to_space", "center_crop_pad",
           "dyn_center_crop_pad", "col2im", "dyn_col2im", "max_unpool", "dyn_max_unpool",
           "non_max_suppression", "roi_align"]

REDUCTIONS = ("none", "add", "mul", "max", "min")


def _ints_dtype(t: TensorType, what: str) -> TensorType:
    if np.dtype(t.dtype).kind not in "iu":
        raise fail(f"{what} must be integers, got {t.dtype}")
    return t


def _choice(op: str, name: str, allowed: tuple[str, ...]) -> Any:
    def check(a: dict[str, Any]) -> dict[str, Any]:
        if a[name] not in allowed:
            raise AttrError(f"operator {op!r}, attribute {name!r}: must be one of {allowed}, got {a[name]!r}")
        return a
    return check


def _wrap(idx: np.ndarray, n: Any) -> np.ndarray:
    """Negative indices counted from the end of an axis of ``n``; out of range: EvaluationError."""
    idx = np.asarray(idx).astype(np.int64, copy=False)
    n = np.asarray(n, dtype=np.int64)
    if idx.size and (np.any(idx < -n) or np.any(idx >= n)):
        raise EvaluationError(f"index out of range: indices span [{idx.min()}, {idx.max()}] "
                              f"for an axis of size {n.tolist()}")
    return np.where(idx < 0, idx + n, idx)


def _same_dims(a: Sequence[DimLike], b: Sequence[DimLike], what: str) -> None:
    if len(a) != len(b) or any(unify_dims(x, y) is None for x, y in zip(a, b)):
        raise fail(f"{what}: shapes {shape_str(a)} and {shape_str(b)} differ")


# -- gather_nd, gather_elements -----------------------------------------------------------------


def _gather_nd_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    data, idx = tensor(types[0], "data"), _ints_dtype(tensor(types[1], "indices"), "indices")
    b = attrs["batch_dims"]
    if idx.ndim < 1 or b >= idx.ndim or b > data.ndim:
        raise fail(f"batch_dims={b} needs indices of rank > {b} and data of rank >= {b}, got "
                   f"indices {shape_str(idx.shape)} and data {shape_str(data.shape)}")
    m = idx.shape[-1]
    if type(m) is not int:
        raise fail(f"the last dimension of indices must be static, got {shape_str(idx.shape)}")
    if b + m > data.ndim:
        raise fail(f"indices {shape_str(idx.shape)} index {m} axes past {b} batch axes of data "
                   f"{shape_str(data.shape)}")
    _same_dims(data.shape[:b], idx.shape[:b], "the batch dimensions of data and indices")
    return TensorType(idx.shape[:-1] + data.shape[b + m:], data.dtype)


def _gather_nd(attrs: Attrs, data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    b, m = attrs["batch_dims"], idx.shape[-1]
    nb = int(np.prod(data.shape[:b], dtype=np.int64))
    d = data.reshape((nb,) + data.shape[b:])
    i = idx.reshape((nb, -1, m))
    coords = tuple(_wrap(i[..., k], data.shape[b + k]) for k in range(m))
    out = d[(np.arange(nb)[:, None],) + coords]
    return out.reshape(idx.shape[:-1] + data.shape[b + m:])


gather_nd: _sig.GatherNd = register_op(
    "gather_nd", num_inputs=2, type_rel=_gather_nd_rel, compute=_gather_nd, pattern=OpPattern.INJECTIVE,
    doc="Gather slices of ``data`` at the coordinate tuples in the last dimension of ``indices``\n"
        "(ONNX GatherND), the first ``batch_dims`` dimensions shared by both.",
    attrs=(AttrSpec("batch_dims", "int", 0),),
    canonicalize=lambda a: a if a["batch_dims"] >= 0 else _raise(
        AttrError(f"operator 'gather_nd', attribute 'batch_dims': must be >= 0, got {a['batch_dims']}")))


def _raise(e: Exception) -> Any:
    raise e


def _gather_elements_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    data, idx = tensor(types[0], "data"), _ints_dtype(tensor(types[1], "indices"), "indices")
    if idx.ndim != data.ndim:
        raise fail(f"indices {shape_str(idx.shape)} and data {shape_str(data.shape)} must have the same rank")
    normalize_axis(attrs["axis"], data.ndim)
    return TensorType(idx.shape, data.dtype)


def _gather_elements(attrs: Attrs, data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % data.ndim
    return np.take_along_axis(data, _wrap(idx, data.shape[ax]), axis=ax)


gather_elements: _sig.GatherElements = register_op(
    "gather_elements", num_inputs=2, type_rel=_gather_elements_rel, compute=_gather_elements,
    pattern=OpPattern.INJECTIVE,
    doc="``out[i][j][k] = data[indices[i][j][k]][j][k]`` along ``axis`` (ONNX GatherElements,\n"
        "numpy's take_along_axis).",
    attrs=(AttrSpec("axis", "int", 0),))


# -- scatters -------------------------------------------------------------------------------------

_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_into(out: np.ndarray, where: tuple[Any, ...], upd: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        out[where] = upd
    else:
        _UFUNC[reduction].at(out, where, upd)
    return out


def _scatter_nd_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    data, idx = tensor(types[0], "data"), _ints_dtype(tensor(types[1], "indices"), "indices")
    upd = tensor(types[2], "updates")
    if upd.dtype != data.dtype:
        raise fail(f"updates ({upd.dtype}) must have the dtype of data ({data.dtype})")
    m = idx.shape[-1] if idx.ndim else None
    if type(m) is not int or m > data.ndim:
        raise fail(f"the last dimension of indices {shape_str(idx.shape)} must be static and at most "
                   f"the rank of data {shape_str(data.shape)}")
    _same_dims(upd.shape, idx.shape[:-1] + data.shape[m:], "updates and indices.shape[:-1] + data.shape[m:]")
    return data


def _scatter_nd(attrs: Attrs, data: np.ndarray, idx: np.ndarray, upd: np.ndarray) -> np.ndarray:
    m = idx.shape[-1]
    where = tuple(_wrap(idx[..., k], data.shape[k]) for k in range(m))
    return _scatter_into(data.copy(), where, upd, attrs["reduction"])


scatter_nd: _sig.ScatterNd = register_op(
    "scatter_nd", num_inputs=3, type_rel=_scatter_nd_rel, compute=_scatter_nd, pattern=OpPattern.OPAQUE,
    doc="A copy of ``data`` with the slices at the coordinate tuples of ``indices`` (last dimension)\n"
        "replaced by ``updates``, or combined with them by ``reduction`` (ONNX ScatterND).",
    attrs=(AttrSpec("reduction", "str", "none", "none, add, mul, max or min"),),
    canonicalize=_choice("scatter_nd", "reduction", REDUCTIONS))


def _scatter_elements_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    data, idx = tensor(types[0], "data"), _ints_dtype(tensor(types[1], "indices"), "indices")
    upd = tensor(types[2], "updates")
    if upd.dtype != data.dtype:
        raise fail(f"updates ({upd.dtype}) must have the dtype of data ({data.dtype})")
    if idx.ndim != data.ndim:
        raise fail(f"indices {shape_str(idx.shape)} and data {shape_str(data.shape)} must have the same rank")
    _same_dims(idx.shape, upd.shape, "indices and updates")
    normalize_axis(attrs["axis"], data.ndim)
    return data


def _scatter_elements(attrs: Attrs, data: np.ndarray, idx: np.ndarray, upd: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % data.ndim
    grid: list[Any] = list(np.indices(idx.shape, sparse=True))
    grid[ax] = _wrap(idx, data.shape[ax])
    return _scatter_into(data.copy(), tuple(grid), upd, attrs["reduction"])


scatter_elements: _sig.ScatterElements = register_op(
    "scatter_elements", num_inputs=3, type_rel=_scatter_elements_rel, compute=_scatter_elements,
    pattern=OpPattern.OPAQUE,
    doc="A copy of ``data`` with ``data[indices[i][j]][j] = updates[i][j]`` along ``axis``\n"
        "(or combined by ``reduction``; ONNX ScatterElements and the deprecated Scatter).",
    attrs=(AttrSpec("axis", "int", 0), AttrSpec("reduction", "str", "none", "none, add, mul, max or min")),
    canonicalize=_choice("scatter_elements", "reduction", REDUCTIONS))


def _tensor_scatter_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    past, upd = tensor(types[0], "past_cache"), tensor(types[1], "update")
    wi = _ints_dtype(tensor(types[2], "write_indices"), "write_indices")
    if upd.dtype != past.dtype or upd.ndim != past.ndim or past.ndim < 2:
        raise fail(f"update {upd} must have the dtype and rank (>= 2) of past_cache {past}")
    ax = normalize_axis(attrs["axis"], past.ndim, "axis")
    if ax == 0:
        raise fail("axis cannot be the batch axis 0")
    _same_dims(past.shape[:ax] + past.shape[ax + 1:], upd.shape[:ax] + upd.shape[ax + 1:],
               "past_cache and update outside the sequence axis")
    _same_dims(wi.shape, past.shape[:1], "write_indices and the batch dimension")
    return past


def _tensor_scatter(attrs: Attrs, past: np.ndarray, upd: np.ndarray, wi: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % past.ndim
    n, s = past.shape[ax], upd.shape[ax]
    pos = wi.astype(np.int64).reshape((-1,) + (1,) * ax) + np.arange(s).reshape((1,) * ax + (s,))
    if attrs["mode"] == "circular":
        pos = pos % n
    elif pos.size and (pos.min() < 0 or pos.max() >= n):
        raise EvaluationError(f"tensor_scatter: write positions up to {pos.max()} exceed the cache "
                              f"length {n}")
    grid: list[Any] = list(np.indices(upd.shape[:ax + 1], sparse=True))
    grid[ax] = np.broadcast_to(pos, upd.shape[:ax + 1])
    out = past.copy()
    out[tuple(grid)] = upd
    return out


tensor_scatter: _sig.TensorScatter = register_op(
    "tensor_scatter", num_inputs=3, type_rel=_tensor_scatter_rel, compute=_tensor_scatter,
    pattern=OpPattern.OPAQUE,
    doc="Write ``update`` into a copy of the cache ``past_cache`` along ``axis`` from position\n"
        "``write_indices[b]`` of each batch entry (``mode`` circular wraps around; ONNX TensorScatter).",
    attrs=(AttrSpec("axis", "int", -2), AttrSpec("mode", "str", "linear", "linear or circular")),
    canonicalize=_choice("tensor_scatter", "mode", ("linear", "circular")))


# -- unique, compress, reverse_sequence -----------------------------------------------------------


def _unique_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x = tensor(types[0], "data")
    ax = attrs["axis"]
    if ax is None:
        ys: tuple[DimLike, ...] = (AnyDim,)
        n: DimLike = 1
        for d in x.shape:
            n = dim_mul(n, d)
    else:
        a = normalize_axis(ax, x.ndim)
        ys = x.shape[:a] + (AnyDim,) + x.shape[a + 1:]
        n = x.shape[a]
    i64 = "int64"
    return TupleType([TensorType(ys, x.dtype), TensorType((AnyDim,), i64), TensorType((n,), i64),
                      TensorType((AnyDim,), i64)])


def _unique(attrs: Attrs, x: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = attrs["axis"]
    if ax is None:
        flat = x.reshape(-1)
        y, idx, inv, cnt = np.unique(flat, return_index=True, return_inverse=True, return_counts=True)
    else:
        ax %= x.ndim
        y, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=ax)
    inv = inv.reshape(-1)
    if not attrs["is_sorted"]:  # in the order of first occurrence
        order = np.argsort(idx, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if ax is None else ax)
        idx, cnt, inv = idx[order], cnt[order], rank[inv]
    i64 = np.int64
    return y.astype(x.dtype, copy=False), idx.astype(i64), inv.astype(i64), cnt.astype(i64)


unique: _sig.Unique = register_op(
    "unique", num_inputs=1, type_rel=_unique_rel, compute=_unique, pattern=OpPattern.OPAQUE,
    doc="The unique elements (``axis``: sub-tensors) of ``data``, the index of each one's first\n"
        "occurrence, each input's position among them and their counts: a 4-tuple whose lengths\n"
        "are ``?`` (ONNX Unique).",
    attrs=(AttrSpec("axis", "int?", None, "None flattens the input"), AttrSpec("is_sorted", "bool", True)))


def _compress_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, c = tensor(types[0], "data"), tensor(types[1], "condition")
    if c.ndim != 1:
        raise fail(f"condition must be 1-D, got {shape_str(c.shape)}")
    if attrs["axis"] is None:
        return TensorType((AnyDim,), x.dtype)
    a = normalize_axis(attrs["axis"], x.ndim)
    return TensorType(x.shape[:a] + (AnyDim,) + x.shape[a + 1:], x.dtype)


def _compress(attrs: Attrs, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.compress(c.astype(bool), x, axis=attrs["axis"])


compress: _sig.Compress = register_op(
    "compress", num_inputs=2, type_rel=_compress_rel, compute=_compress, pattern=OpPattern.OPAQUE,
    doc="The slices of ``data`` along ``axis`` (None: of the flattened data) where ``condition``\n"
        "holds; a shorter condition selects only among the first slices (ONNX Compress).",
    attrs=(AttrSpec("axis", "int?", None),))


def _reverse_sequence_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, s = tensor(types[0], "data"), _ints_dtype(tensor(types[1], "seq_lengths"), "seq_lengths")
    if x.ndim < 2:
        raise fail(f"data must have rank >= 2, got {shape_str(x.shape)}")
    t, b = normalize_axis(attrs["seq_axis"], x.ndim), normalize_axis(attrs["batch_axis"], x.ndim)
    if t == b:
        raise fail(f"seq_axis and batch_axis must differ, both are {t}")
    _same_dims(s.shape, (x.shape[b],), "seq_lengths and the batch dimension")
    return x


def _reverse_sequence(attrs: Attrs, x: np.ndarray, lens: np.ndarray) -> np.ndarray:
    t, b = attrs["seq_axis"] % x.ndim, attrs["batch_axis"] % x.ndim
    n = x.shape[t]
    shape = [1] * x.ndim
    shape[t] = n
    pos = np.arange(n).reshape(shape)
    bshape = [1] * x.ndim
    bshape[b] = -1
    ln = np.clip(lens.astype(np.int64), 0, n).reshape(bshape)
    src = np.where(pos < ln, ln - 1 - pos, pos)
    return np.take_along_axis(x, np.broadcast_to(src, np.broadcast_shapes(src.shape, x.shape)), axis=t)


reverse_sequence: _sig.ReverseSequence = register_op(
    "reverse_sequence", num_inputs=2, type_rel=_reverse_sequence_rel, compute=_reverse_sequence,
    pattern=OpPattern.INJECTIVE,
    doc="Reverse the first ``seq_lengths[i]`` elements along ``seq_axis`` of each batch entry ``i``\n"
        "along ``batch_axis`` (ONNX ReverseSequence).",
    attrs=(AttrSpec("seq_axis", "int", 0), AttrSpec("batch_axis", "int", 1)))


# -- space_to_depth, depth_to_space -----------------------------------------------------------------


def _block_canon(op: str) -> Any:
    def canon(a: dict[str, Any]) -> dict[str, Any]:
        _choice(op, "mode", ("DCR", "CRD"))(a)
        if a["block_size"] < 1:
            raise AttrError(f"operator {op!r}, attribute 'block_size': must be >= 1, got {a['block_size']}")
        return a
    return canon


def _div(d: DimLike, k: int, what: str) -> DimLike:
    if type(d) is int:
        if d % k:
            raise fail(f"{what} {d} is not a multiple of {k}")
        return d // k
    return AnyDim


def _s2d_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, k = tensor(types[0], "data"), attrs["block_size"]
    if x.ndim != 4:
        raise fail(f"data must be 4-D (NCHW), got {shape_str(x.shape)}")
    n, c, h, w = x.shape
    return TensorType((n, dim_mul(c, k * k), _div(h, k, "height"), _div(w, k, "width")), x.dtype)


def _s2d(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    k, (n, c, h, w) = attrs["block_size"], x.shape
    y = x.reshape(n, c, h // k, k, w // k, k)
    perm = (0, 3, 5, 1, 2, 4) if attrs["mode"] == "DCR" else (0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(y.transpose(perm)).reshape(n, c * k * k, h // k, w // k)


space_to_depth: _sig.SpaceToDepth = register_op(
    "space_to_depth", num_inputs=1, type_rel=_s2d_rel, compute=_s2d, pattern=OpPattern.INJECTIVE,
    doc="Move ``block_size`` x ``block_size`` spatial blocks of NCHW data into channels\n"
        "(``mode`` DCR: depth-column-row order, as ONNX; CRD: column-row-depth).",
    attrs=(AttrSpec("block_size", "int"), AttrSpec("mode", "str", "DCR", "DCR or CRD")),
    canonicalize=_block_canon("space_to_depth"))


def _d2s_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, k = tensor(types[0], "data"), attrs["block_size"]
    if x.ndim != 4:
        raise fail(f"data must be 4-D (NCHW), got {shape_str(x.shape)}")
    n, c, h, w = x.shape
    return TensorType((n, _div(c, k * k, "channels"), dim_mul(h, k), dim_mul(w, k)), x.dtype)


def _d2s(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    k, (n, c, h, w) = attrs["block_size"], x.shape
    if attrs["mode"] == "DCR":
        y = x.reshape(n, k, k, c // (k * k), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (k * k), k, k, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(y).reshape(n, c // (k * k), h * k, w * k)


depth_to_space: _sig.DepthToSpace = register_op(
    "depth_to_space", num_inputs=1, type_rel=_d2s_rel, compute=_d2s, pattern=OpPattern.INJECTIVE,
    doc="Move channels of NCHW data into ``block_size`` x ``block_size`` spatial blocks (the\n"
        "inverse of space_to_depth; ``mode`` DCR or CRD).",
    attrs=(AttrSpec("block_size", "int"), AttrSpec("mode", "str", "DCR", "DCR or CRD")),
    canonicalize=_block_canon("depth_to_space"))


# -- center_crop_pad ----------------------------------------------------------------------------------


def _axes(axes: tuple[int, ...] | None, ndim: int, n: int) -> tuple[int, ...]:
    ax = tuple(range(ndim)) if axes is None else tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(ax)) != len(ax):
        raise fail(f"axes {axes} repeat an axis")
    if len(ax) != n:
        raise fail(f"shape has {n} entries for {len(ax)} axes")
    return ax


def _crop_pad_type(x: TensorType, shape: Sequence[DimLike], axes: tuple[int, ...] | None) -> TensorType:
    out = list(x.shape)
    for a, s in zip(_axes(axes, x.ndim, len(shape)), shape):
        out[a] = s
    return TensorType(tuple(out), x.dtype)


def _crop_pad(attrs: Attrs, x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    axes = attrs["axes"]
    ax = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    crop = [slice(None)] * x.ndim
    put = [slice(None)] * x.ndim
    new = list(x.shape)
    for a, s in zip(ax, shape):
        d = x.shape[a]
        if s < 0:
            raise EvaluationError(f"center_crop_pad: negative target size {s}")
        new[a] = s
        if s < d:
            lo = (d - s) // 2
            crop[a] = slice(lo, lo + s)
        elif s > d:
            lo = (s - d) // 2
            put[a] = slice(lo, lo + d)
    out = np.zeros(new, dtype=x.dtype)
    out[tuple(put)] = x[tuple(crop)]
    return out


def _crop_pad_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return _crop_pad_type(tensor(types[0], "data"), attrs["shape"], attrs["axes"])


center_crop_pad: _sig.CenterCropPad = register_op(
    "center_crop_pad", num_inputs=1, type_rel=_crop_pad_rel,
    compute=lambda attrs, x: _crop_pad(attrs, x, attrs["shape"]), pattern=OpPattern.INJECTIVE,
    doc="Center-crop or zero-pad each of ``axes`` (default all) of ``data`` to ``shape``\n"
        "(ONNX CenterCropPad; an odd difference puts the extra element at the end).",
    attrs=(AttrSpec("shape", "ints"), AttrSpec("axes", "ints?", None)))


def _shape_tensor(t: Type, what: str) -> int:
    v = _ints_dtype(tensor(t, what), what)
    if v.ndim != 1 or type(v.shape[0]) is not int:
        raise fail(f"{what} must be a 1-D integer tensor of static length, got {v}")
    return v.shape[0]


def _dyn_crop_pad_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    n = _shape_tensor(types[1], "shape")
    return _crop_pad_type(tensor(types[0], "data"), (AnyDim,) * n, attrs["axes"])


dyn_center_crop_pad: _sig.DynCenterCropPad = register_op(
    "dyn.center_crop_pad", num_inputs=2, type_rel=_dyn_crop_pad_rel,
    compute=lambda attrs, x, s: _crop_pad(attrs, x, [int(v) for v in s.reshape(-1)]),
    pattern=OpPattern.INJECTIVE,
    doc="``center_crop_pad`` with the target ``shape`` a 1-D integer tensor computed at run time.",
    attrs=(AttrSpec("axes", "ints?", None),))


# -- col2im --------------------------------------------------------------------------------------------


def _col2im_canon(a: dict[str, Any]) -> dict[str, Any]:
    if any(v < 1 for v in a["strides"] + a["dilations"]) or any(v < 0 for v in a["pads"]):
        raise AttrError(f"operator 'col2im': strides and dilations must be >= 1 and pads >= 0, got "
                        f"{a['strides']}, {a['dilations']}, {a['pads']}")
    return a


def _col2im_type(x: TensorType, image: Sequence[DimLike], block: Sequence[DimLike] | None, nd: int,
                 attrs: Attrs) -> TensorType:
    if x.ndim != 3:
        raise fail(f"data must be 3-D (N, C * prod(block_shape), L), got {shape_str(x.shape)}")
    for name in ("strides", "dilations"):
        if attrs[name] and len(attrs[name]) != nd:
            raise fail(f"{name} {attrs[name]} must have {nd} entries")
    if attrs["pads"] and len(attrs["pads"]) != 2 * nd:
        raise fail(f"pads {attrs['pads']} must have {2 * nd} entries")
    c: DimLike = AnyDim
    if block is not None and all(type(b) is int for b in block):
        c = _div(x.shape[1], int(np.prod([int(b) for b in block], dtype=np.int64)),  # type: ignore[arg-type]
                 "dimension 1 of data")
    return TensorType((x.shape[0], c, *image), x.dtype)


def _col2im(attrs: Attrs, x: np.ndarray, image: Sequence[int], block: Sequence[int]) -> np.ndarray:
    nd = len(image)
    strides = attrs["strides"] or (1,) * nd
    dil = attrs["dilations"] or (1,) * nd
    pads = attrs["pads"] or (0,) * (2 * nd)
    kprod = int(np.prod(block, dtype=np.int64))
    n, ck, length = x.shape
    if kprod == 0 or ck % kprod:
        raise EvaluationError(f"col2im: dimension 1 of data ({ck}) is not a multiple of prod(block_shape) "
                              f"{tuple(block)}")
    c = ck // kprod
    nblocks = [(image[i] + pads[i] + pads[i + nd] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
               for i in range(nd)]
    if int(np.prod(nblocks, dtype=np.int64)) != length:
        raise EvaluationError(f"col2im: data has {length} blocks, image_shape {tuple(image)} and "
                              f"block_shape {tuple(block)} give {nblocks}")
    # the image coordinate of every (kernel offset, block position) pair, per axis
    k_grid = np.indices(block).reshape(nd, -1)  # (nd, K)
    b_grid = np.indices(nblocks).reshape(nd, -1)  # (nd, L)
    coords = [b_grid[i][None, :] * strides[i] - pads[i] + k_grid[i][:, None] * dil[i] for i in range(nd)]
    ok = np.ones(coords[0].shape, dtype=bool)
    flat = np.zeros(coords[0].shape, dtype=np.int64)
    for i in range(nd):
        ok &= (coords[i] >= 0) & (coords[i] < image[i])
        flat = flat * image[i] + coords[i]
    cols = x.reshape(n, c, kprod, length)
    out = np.zeros((n, c, int(np.prod(image, dtype=np.int64))), dtype=x.dtype)
    where: Any = (slice(None), slice(None), flat[ok])
    np.add.at(out, where, cols[:, :, ok])
    return out.reshape((n, c, *image))


_COL2IM_ATTRS = (AttrSpec("strides", "ints", ()), AttrSpec("pads", "ints", ()),
                 AttrSpec("dilations", "ints", ()))


def _col2im_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    img, blk = attrs["image_shape"], attrs["block_shape"]
    if len(img) != len(blk) or not img:
        raise fail(f"image_shape {img} and block_shape {blk} must have the same nonzero length")
    return _col2im_type(tensor(types[0], "data"), img, blk, len(img), attrs)


col2im: _sig.Col2im = register_op(
    "col2im", num_inputs=1, type_rel=_col2im_rel,
    compute=lambda attrs, x: _col2im(attrs, x, attrs["image_shape"], attrs["block_shape"]),
    pattern=OpPattern.OPAQUE,
    doc="Sum the sliding blocks of ``data`` (N, C * prod(block_shape), L) back into an image of\n"
        "``image_shape`` (ONNX Col2Im, the inverse of im2col; strides, pads, dilations default\n"
        "to 1, 0, 1).",
    attrs=(AttrSpec("image_shape", "ints"), AttrSpec("block_shape", "ints"), *_COL2IM_ATTRS),
    canonicalize=_col2im_canon)


def _dyn_col2im_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    n = _shape_tensor(types[1], "image_shape")
    if _shape_tensor(types[2], "block_shape") != n:
        raise fail("image_shape and block_shape must have the same length")
    return _col2im_type(tensor(types[0], "data"), (AnyDim,) * n, None, n, attrs)


dyn_col2im: _sig.DynCol2im = register_op(
    "dyn.col2im", num_inputs=3, type_rel=_dyn_col2im_rel,
    compute=lambda attrs, x, i, b: _col2im(attrs, x, [int(v) for v in i], [int(v) for v in b]),
    pattern=OpPattern.OPAQUE,
    doc="``col2im`` with ``image_shape`` and ``block_shape`` 1-D integer tensors computed at run time.",
    attrs=_COL2IM_ATTRS, canonicalize=_col2im_canon)


# -- max_unpool --------------------------------------------------------------------------------------


def _unpool_shape(x: TensorType, attrs: Attrs) -> tuple[DimLike, ...]:
    k = attrs["kernel_shape"]
    nd = len(k)
    if x.ndim != nd + 2:
        raise fail(f"data must have rank {nd + 2} for a {nd}-D kernel, got {shape_str(x.shape)}")
    s = attrs["strides"] or (1,) * nd
    p = attrs["pads"] or (0,) * (2 * nd)
    if len(s) != nd or len(p) != 2 * nd:
        raise fail(f"strides {s} and pads {p} must have {nd} and {2 * nd} entries")
    out: list[DimLike] = list(x.shape[:2])
    for i, d in enumerate(x.shape[2:]):
        out.append((d - 1) * s[i] + k[i] - p[i] - p[i + nd] if type(d) is int else AnyDim)
    return tuple(out)


def _unpool_check(types: tuple[Type, ...]) -> TensorType:
    x, i = tensor(types[0], "data"), _ints_dtype(tensor(types[1], "indices"), "indices")
    _same_dims(x.shape, i.shape, "data and indices")
    return x


def _max_unpool(attrs: Attrs, x: np.ndarray, idx: np.ndarray, shape: Sequence[int] | None) -> np.ndarray:
    # indices are flat positions in the (N, C, spatial...) tensor max pooling read, whose shape is
    # inferred from the kernel; an explicit output_shape holds it in its leading corner
    inferred = [int(d) for d in _unpool_shape(TensorType(x.shape, str(x.dtype)), attrs)]  # type: ignore[arg-type]
    flat = np.zeros(int(np.prod(inferred, dtype=np.int64)), dtype=x.dtype)
    flat[_wrap(idx.reshape(-1), flat.size)] = x.reshape(-1)
    y = flat.reshape(inferred)
    if shape is None or list(shape) == inferred:
        return y
    if len(shape) != len(inferred) or any(s < i for s, i in zip(shape, inferred)):
        raise EvaluationError(f"max_unpool: output_shape {tuple(shape)} is smaller than {tuple(inferred)}")
    out = np.zeros(tuple(shape), dtype=x.dtype)
    out[tuple(slice(0, i) for i in inferred)] = y
    return out


_UNPOOL_ATTRS = (AttrSpec("kernel_shape", "ints"), AttrSpec("strides", "ints", ()),
                 AttrSpec("pads", "ints", ()))


def _unpool_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x = _unpool_check(types)
    inferred = _unpool_shape(x, attrs)
    out = attrs["output_shape"]
    if out is None:
        return TensorType(inferred, x.dtype)
    if len(out) != x.ndim or any(type(i) is int and o < i for o, i in zip(out, inferred)):
        raise fail(f"output_shape {out} must have {x.ndim} entries, none below {shape_str(inferred)}")
    return TensorType(out, x.dtype)

max_unpool: _sig.MaxUnpool = register_op(
    "max_unpool", num_inputs=2,
    type_rel=_unpool_rel, compute=lambda attrs, x, i: _max_unpool(attrs, x, i, attrs["output_shape"]),
    pattern=OpPattern.OPAQUE,
    doc="The partial inverse of max pooling: zeros with each value of ``data`` put at the flat\n"
        "position ``indices`` gives (ONNX MaxUnpool), in the leading corner of ``output_shape`` if given.",
    attrs=(*_UNPOOL_ATTRS, AttrSpec("output_shape", "ints?", None)))


def _dyn_unpool_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x = _unpool_check(types)
    if _shape_tensor(types[2], "output_shape") != x.ndim:
        raise fail(f"output_shape must have {x.ndim} entries")
    return TensorType((AnyDim,) * x.ndim, x.dtype)


dyn_max_unpool: _sig.DynMaxUnpool = register_op(
    "dyn.max_unpool", num_inputs=3, type_rel=_dyn_unpool_rel,
    compute=lambda attrs, x, i, s: _max_unpool(attrs, x, i, [int(v) for v in s]),
    pattern=OpPattern.OPAQUE,
    doc="``max_unpool`` to an ``output_shape`` given as a 1-D integer tensor.",
    attrs=_UNPOOL_ATTRS)


# -- vision.non_max_suppression ------------------------------------------------------------------------


def _nms_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    boxes, scores = tensor(types[0], "boxes"), tensor(types[1], "scores")
    if boxes.ndim != 3 or scores.ndim != 3:
        raise fail(f"boxes (batch, n, 4) and scores (batch, classes, n) must be 3-D, got "
                   f"{shape_str(boxes.shape)} and {shape_str(scores.shape)}")
    if unify_dims(boxes.shape[2], 4) is None:
        raise fail(f"boxes must have 4 coordinates, got {shape_str(boxes.shape)}")
    _same_dims((boxes.shape[0], boxes.shape[1]), (scores.shape[0], scores.shape[2]),
               "boxes (batch, n) and scores (batch, n)")
    for t, what in zip(types[2:], ("max_output_boxes_per_class", "iou_threshold", "score_threshold")):
        v = tensor(t, what)
        if v.ndim > 1:
            raise fail(f"{what} must be a scalar or 1-element tensor, got {v}")
    return TensorType((AnyDim, 3), "int64")


def _corners(b: np.ndarray, center: bool) -> tuple[np.ndarray, ...]:
    if center:
        x, y, w, h = b[:, 0], b[:, 1], b[:, 2] / 2, b[:, 3] / 2
        return y - h, x - w, y + h, x + w
    y0, y1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    x0, x1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    return y0, x0, y1, x1


def _first(v: np.ndarray, default: Any) -> Any:
    v = np.asarray(v).reshape(-1)
    return v[0] if v.size else default


def _nms(attrs: Attrs, boxes: np.ndarray, scores: np.ndarray, max_out: np.ndarray, iou_thr: np.ndarray,
         score_thr: np.ndarray) -> np.ndarray:
    k = max(int(_first(max_out, 0)), 0)
    iou_t = float(_first(iou_thr, 0.0))
    s_t = _first(score_thr, None)
    out: list[np.ndarray] = []
    for b in range(boxes.shape[0]):
        y0, x0, y1, x1 = _corners(boxes[b].astype(np.float64), attrs["center_point_box"])
        area = (y1 - y0) * (x1 - x0)
        iy = np.maximum(0.0, np.minimum(y1[:, None], y1[None, :]) - np.maximum(y0[:, None], y0[None, :]))
        ix = np.maximum(0.0, np.minimum(x1[:, None], x1[None, :]) - np.maximum(x0[:, None], x0[None, :]))
        inter = iy * ix
        union = area[:, None] + area[None, :] - inter
        with np.errstate(all="ignore"):
            iou = np.where((inter > 0) & (area[:, None] > 0) & (area[None, :] > 0) & (union > 0),
                           inter / union, 0.0)
        for c in range(scores.shape[1]):
            sc = scores[b, c]
            cand = np.nonzero(sc > s_t)[0] if s_t is not None else np.arange(sc.size)
            order = cand[np.lexsort((cand, -sc[cand].astype(np.float64)))]  # score down, index up
            alive = np.ones(order.size, dtype=bool)
            picked: list[int] = []
            while len(picked) < k:  # one iteration per selected box
                live = np.nonzero(alive)[0]
                if not live.size:
                    break
                i = live[0]
                picked.append(int(order[i]))
                alive[i] = False
                alive &= iou[order[i], order] <= iou_t
            if picked:
                sel = np.empty((len(picked), 3), dtype=np.int64)
                sel[:, 0], sel[:, 1], sel[:, 2] = b, c, picked
                out.append(sel)
    return np.concatenate(out) if out else np.zeros((0, 3), dtype=np.int64)


non_max_suppression: _sig.VisionNonMaxSuppression = register_op(
    "vision.non_max_suppression", num_inputs=5, type_rel=_nms_rel, compute=_nms, pattern=OpPattern.OPAQUE,
    doc="Greedy non-maximum suppression per batch and class (ONNX NonMaxSuppression): the selected\n"
        "boxes as ``(?, 3)`` rows ``(batch, class, box)``; ``max_output_boxes_per_class``,\n"
        "``iou_threshold`` and ``score_threshold`` are scalar (or empty) tensors.",
    attrs=(AttrSpec("center_point_box", "bool", False, "boxes as (x, y, w, h) centers, else corners"),))


# -- vision.roi_align ---------------------------------------------------------------------------------


def _roi_align_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    x, rois = tensor(types[0], "data"), tensor(types[1], "rois")
    bi = _ints_dtype(tensor(types[2], "batch_indices"), "batch_indices")
    if x.ndim != 4 or rois.ndim != 2 or bi.ndim != 1:
        raise fail(f"data must be 4-D (NCHW), rois (n, 4) and batch_indices (n,), got "
                   f"{shape_str(x.shape)}, {shape_str(rois.shape)}, {shape_str(bi.shape)}")
    if unify_dims(rois.shape[1], 4) is None:
        raise fail(f"rois must have 4 coordinates, got {shape_str(rois.shape)}")
    n = unify_dims(rois.shape[0], bi.shape[0])
    if n is None:
        raise fail(f"rois {shape_str(rois.shape)} and batch_indices {shape_str(bi.shape)} differ in length")
    return TensorType((n, x.shape[1], attrs["output_height"], attrs["output_width"]), x.dtype)


def _bilinear_at(img: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``img`` (C, H, W) sampled at the points ``y``, ``x`` (any equal shapes) the RoiAlign way:
    points more than one pixel outside give 0, others are clamped to the image."""
    h, w = img.shape[1:]
    out_of = (y < -1.0) | (y > h) | (x < -1.0) | (x > w)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    ytop = y0 >= h - 1
    xtop = x0 >= w - 1
    y0 = np.where(ytop, h - 1, y0)
    x0 = np.where(xtop, w - 1, x0)
    y = np.where(ytop, y0, y)
    x = np.where(xtop, x0, x)
    y1, x1 = np.where(ytop, y0, y0 + 1), np.where(xtop, x0, x0 + 1)
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    v = (img[:, y0, x0] * (hy * hx), img[:, y0, x1] * (hy * lx), img[:, y1, x0] * (ly * hx),
         img[:, y1, x1] * (ly * lx))
    return np.where(out_of, 0.0, v[0] + v[1] + v[2] + v[3])


def _roi_align(attrs: Attrs, x: np.ndarray, rois: np.ndarray, bidx: np.ndarray) -> np.ndarray:
    oh, ow, scale = attrs["output_height"], attrs["output_width"], attrs["spatial_scale"]
    ratio, half = attrs["sampling_ratio"], attrs["coordinate_transformation_mode"] == "half_pixel"
    out = np.zeros((rois.shape[0], x.shape[1], oh, ow), dtype=x.dtype)
    for r in range(rois.shape[0]):  # one iteration per region (each has its own sampling grid)
        x0, y0, x1, y1 = (rois[r].astype(np.float64) * scale) - (0.5 if half else 0.0)
        rw, rh = x1 - x0, y1 - y0
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        if gh < 1 or gw < 1:
            continue
        ys = y0 + np.arange(oh)[:, None] * bh + (np.arange(gh)[None, :] + 0.5) * bh / gh  # (oh, gh)
        xs = x0 + np.arange(ow)[:, None] * bw + (np.arange(gw)[None, :] + 0.5) * bw / gw  # (ow, gw)
        yy = np.broadcast_to(ys[:, :, None, None], (oh, gh, ow, gw))
        xx = np.broadcast_to(xs[None, None, :, :], (oh, gh, ow, gw))
        img = x[int(bidx[r])].astype(np.float64)
        if attrs["mode"] == "avg":
            v = _bilinear_at(img, yy, xx)  # (C, oh, gh, ow, gw)
            out[r] = v.mean(axis=(2, 4))
        else:
            out[r] = _roi_max(img, yy, xx).max(axis=(2, 4))
    return out


def _roi_max(img: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """RoiAlign's max mode: the largest of the four weighted corner values per point."""
    h, w = img.shape[1:]
    out_of = (y < -1.0) | (y > h) | (x < -1.0) | (x > w)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    ytop, xtop = y0 >= h - 1, x0 >= w - 1
    y0, x0 = np.where(ytop, h - 1, y0), np.where(xtop, w - 1, x0)
    y, x = np.where(ytop, y0, y), np.where(xtop, x0, x)
    y1, x1 = np.where(ytop, y0, y0 + 1), np.where(xtop, x0, x0 + 1)
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    v = np.maximum.reduce([img[:, y0, x0] * (hy * hx), img[:, y0, x1] * (hy * lx),
                           img[:, y1, x0] * (ly * hx), img[:, y1, x1] * (ly * lx)])
    return np.where(out_of, 0.0, v)


def _roi_canon(a: dict[str, Any]) -> dict[str, Any]:
    _choice("vision.roi_align", "mode", ("avg", "max"))(a)
    _choice("vision.roi_align", "coordinate_transformation_mode", ("half_pixel", "output_half_pixel"))(a)
    if a["output_height"] < 1 or a["output_width"] < 1 or a["sampling_ratio"] < 0:
        raise AttrError("operator 'vision.roi_align': output_height and output_width must be >= 1 and "
                        f"sampling_ratio >= 0, got {a['output_height']}, {a['output_width']}, "
                        f"{a['sampling_ratio']}")
    return a


roi_align: _sig.VisionRoiAlign = register_op(
    "vision.roi_align", num_inputs=3, type_rel=_roi_align_rel, compute=_roi_align, pattern=OpPattern.OPAQUE,
    doc="Pool each region ``rois[i]`` (x1, y1, x2, y2) of image ``batch_indices[i]`` to\n"
        "``output_height`` x ``output_width`` by bilinear sampling (ONNX RoiAlign).",
    attrs=(AttrSpec("output_height", "int", 1), AttrSpec("output_width", "int", 1),
           AttrSpec("sampling_ratio", "int", 0), AttrSpec("spatial_scale", "float", 1.0),
           AttrSpec("mode", "str", "avg", "avg or max"),
           AttrSpec("coordinate_transformation_mode", "str", "half_pixel",
                    "half_pixel or output_half_pixel")),
    canonicalize=_roi_canon)



# -- DynamicToStatic -----------------------------------------------------------------------------------


def _register_to_static() -> None:
    """Add this module's and :mod:`pyir.op.image`'s ``dyn`` operators to :data:`pyir.op.dyn.TO_STATIC`
    (the static call when the shape arguments are constants)."""
    from ..ir.expr import Call, Constant, Expr, Op
    from . import dyn, image

    def static(positions: tuple[int, ...], make: Any) -> Any:
        def to_static(call: Call) -> Expr | None:
            vals = [call.args[i] for i in positions]
            if any(type(v) is not Constant for v in vals):
                return None
            return make(call.args, call.attrs, [v.data for v in vals])  # type: ignore[attr-defined]
        return to_static

    def ints(v: np.ndarray) -> tuple[int, ...]:
        return tuple(int(x) for x in np.asarray(v).reshape(-1))

    def resize(a: Any, at: Attrs, v: list[np.ndarray]) -> Expr:
        t = a[0].checked_type
        size, sc, roi = image.resize_plan(t.shape, v[0], v[1], v[2], at["axes"],
                                          at["keep_aspect_ratio_policy"])
        kw = {s.name: at[s.name] for s in image._RESIZE_METHOD_ATTRS}
        if kw["coordinate_transformation_mode"] != "tf_crop_and_resize":
            roi = ()
        return image.resize(a[0], size=size, scales=sc, roi=roi, **kw)

    table = {
        "dyn.center_crop_pad": static((1,), lambda a, at, v: center_crop_pad(a[0], shape=ints(v[0]),
                                                                             axes=at["axes"])),
        "dyn.col2im": static((1, 2), lambda a, at, v: col2im(
            a[0], image_shape=ints(v[0]), block_shape=ints(v[1]), strides=at["strides"], pads=at["pads"],
            dilations=at["dilations"])),
        "dyn.max_unpool": static((2,), lambda a, at, v: max_unpool(
            a[0], a[1], kernel_shape=at["kernel_shape"], strides=at["strides"], pads=at["pads"],
            output_shape=ints(v[0]))),
        "dyn.image.affine_grid": static((1,), lambda a, at, v: image.affine_grid(
            a[0], size=ints(v[0]), align_corners=at["align_corners"])),
        "dyn.image.resize": static((1, 2, 3), resize),
    }
    for name, fn in table.items():
        dyn.TO_STATIC[Op(name)] = fn


_register_to_static()
