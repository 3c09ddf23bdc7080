"""ONNX converters for indexing, scatter/gather, image, vision, TopK/OneHot and control flow.

Each maps one node onto the operators of :mod:`pyir.op.index` and :mod:`pyir.op.image` (or the
existing ``topk``/``one_hot``).  A shape-like input that is a constant gives the static
operator; one computed at run time gives the ``dyn`` variant, whose dependent dimensions are
``?``.  Control flow (``If``, ``Loop``, ``Scan``) imports the subgraphs with
:meth:`pyir.frontend.onnx._Importer.subgraph` and becomes a pyir ``If`` and local functions
(see :func:`_loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import op
from ..ir.dims import Any as AnyDim
from ..ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..ir.types import FuncType, TensorType, TupleType
from ..op import image, index
from ._onnx_ops import _reg, dtype_of, scalar, shape_of
from .onnx import Ctx, FrontendError, _Attrs


def _str(a: _Attrs, name: str, default: str) -> str:
    v = a.get(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


def _const_or_none(cx: Ctx, i: int) -> np.ndarray | None:
    """Input ``i`` as a constant array, None when it is absent or computed at run time."""
    if not cx.has(i):
        return None
    arr = cx._imp.static(cx.node.input[i])
    return arr


def _tensor_or_empty(cx: Ctx, i: int, dtype: str) -> Expr:
    return cx.x(i) if cx.has(i) else Constant(np.zeros((0,), dtype=dtype))


def _choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise FrontendError(f"{name}={value!r} is not supported (one of {tuple(allowed)})")
    return value


# -- gathers and scatters -------------------------------------------------------------------------


@_reg("GatherND")
def _gather_nd(cx: Ctx, a: _Attrs) -> Expr:
    return index.gather_nd(cx.x(0), cx.x(1), batch_dims=int(a.get("batch_dims", 0)))


@_reg("GatherElements")
def _gather_elements(cx: Ctx, a: _Attrs) -> Expr:
    return index.gather_elements(cx.x(0), cx.x(1), axis=int(a.get("axis", 0)))


_REDUCTIONS = ("none", "add", "mul", "max", "min")


@_reg("ScatterND")
def _scatter_nd(cx: Ctx, a: _Attrs) -> Expr:
    red = _choice("reduction", _str(a, "reduction", "none"), _REDUCTIONS)
    return index.scatter_nd(cx.x(0), cx.x(1), cx.x(2), reduction=red)


@_reg("ScatterElements", "Scatter")
def _scatter_elements(cx: Ctx, a: _Attrs) -> Expr:
    red = _choice("reduction", _str(a, "reduction", "none"), _REDUCTIONS)
    return index.scatter_elements(cx.x(0), cx.x(1), cx.x(2), axis=int(a.get("axis", 0)), reduction=red)


@_reg("TensorScatter")
def _tensor_scatter(cx: Ctx, a: _Attrs) -> Expr:
    past = cx.x(0)
    mode = _choice("mode", _str(a, "mode", "linear"), ("linear", "circular"))
    wi = cx.x(2) if cx.has(2) else Constant(np.zeros((shape_of(past)[0],), dtype=np.int64))
    return index.tensor_scatter(past, cx.x(1), wi, axis=int(a.get("axis", -2)), mode=mode)


# -- unique, compress, reverse_sequence, blocks ---------------------------------------------------


@_reg("Unique")
def _unique(cx: Ctx, a: _Attrs) -> list[Expr]:
    ax = a.get("axis", None)
    u = index.unique(cx.x(0), axis=None if ax is None else int(ax), is_sorted=bool(a.get("sorted", 1)))
    return [TupleGetItem(u, i) for i in range(4)]


@_reg("Compress")
def _compress(cx: Ctx, a: _Attrs) -> Expr:
    ax = a.get("axis", None)
    return index.compress(cx.x(0), cx.x(1), axis=None if ax is None else int(ax))


@_reg("ReverseSequence")
def _reverse_sequence(cx: Ctx, a: _Attrs) -> Expr:
    return index.reverse_sequence(cx.x(0), cx.x(1), seq_axis=int(a.get("time_axis", 0)),
                                  batch_axis=int(a.get("batch_axis", 1)))


@_reg("SpaceToDepth", "DepthToSpace")
def _blocks(cx: Ctx, a: _Attrs) -> Expr:
    k = a.get("blocksize")
    if k is None:
        raise FrontendError("blocksize is required")
    mode = _choice("mode", _str(a, "mode", "DCR"), ("DCR", "CRD"))
    fn = index.space_to_depth if cx.node.op_type == "SpaceToDepth" else index.depth_to_space
    return fn(cx.x(0), block_size=int(k), mode=mode)


@_reg("CenterCropPad")
def _center_crop_pad(cx: Ctx, a: _Attrs) -> Expr:
    axes = a.ints("axes")
    shape = _const_or_none(cx, 1)
    if shape is not None:
        return index.center_crop_pad(cx.x(0), shape=tuple(int(v) for v in shape.reshape(-1)), axes=axes)
    return index.dyn_center_crop_pad(cx.x(0), cx.x(1), axes=axes)


@_reg("Col2Im")
def _col2im(cx: Ctx, a: _Attrs) -> Expr:
    kw = {"strides": a.ints("strides", ()), "pads": a.ints("pads", ()), "dilations": a.ints("dilations", ())}
    img, blk = _const_or_none(cx, 1), _const_or_none(cx, 2)
    if img is not None and blk is not None:
        return index.col2im(cx.x(0), image_shape=tuple(int(v) for v in img),
                            block_shape=tuple(int(v) for v in blk),
                            **kw)
    return index.dyn_col2im(cx.x(0), cx.x(1), cx.x(2), **kw)


@_reg("MaxUnpool")
def _max_unpool(cx: Ctx, a: _Attrs) -> Expr:
    k = a.ints("kernel_shape")
    if k is None:
        raise FrontendError("kernel_shape is required")
    kw = {"kernel_shape": k, "strides": a.ints("strides", ()), "pads": a.ints("pads", ())}
    if cx.has(2):
        out = _const_or_none(cx, 2)
        if out is None:
            return index.dyn_max_unpool(cx.x(0), cx.x(1), cx.x(2), **kw)
        return index.max_unpool(cx.x(0), cx.x(1), output_shape=tuple(int(v) for v in out.reshape(-1)), **kw)
    return index.max_unpool(cx.x(0), cx.x(1), **kw)


# -- vision ------------------------------------------------------------------------------------------


@_reg("NonMaxSuppression")
def _nms(cx: Ctx, a: _Attrs) -> Expr:
    boxes = cx.x(0)
    fl = dtype_of(boxes)
    return index.non_max_suppression(
        boxes, cx.x(1), _tensor_or_empty(cx, 2, "int64"), _tensor_or_empty(cx, 3, fl),
        _tensor_or_empty(cx, 4, fl), center_point_box=bool(a.get("center_point_box", 0)))


@_reg("RoiAlign")
def _roi_align(cx: Ctx, a: _Attrs) -> Expr:
    ctm = _str(a, "coordinate_transformation_mode", "half_pixel" if cx.opset >= 16 else "output_half_pixel")
    return index.roi_align(
        cx.x(0), cx.x(1), cx.x(2), output_height=int(a.get("output_height", 1)),
        output_width=int(a.get("output_width", 1)), sampling_ratio=int(a.get("sampling_ratio", 0)),
        spatial_scale=float(a.get("spatial_scale", 1.0)),
        mode=_choice("mode", _str(a, "mode", "avg"), ("avg", "max")),
        coordinate_transformation_mode=_choice("coordinate_transformation_mode", ctm,
                                               ("half_pixel", "output_half_pixel")))


# -- image -------------------------------------------------------------------------------------------


def _resize_method(cx: Ctx, a: _Attrs) -> dict[str, Any]:
    mode = _str(a, "mode", "nearest")
    mode = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    if cx.opset < 11 or cx.node.op_type == "Upsample":
        ctm, nearest = "asymmetric", "floor"
    else:
        ctm = _str(a, "coordinate_transformation_mode", "half_pixel")
        nearest = _str(a, "nearest_mode", "round_prefer_floor")
    return {"mode": _choice("mode", mode, image.RESIZE_MODES),
            "coordinate_transformation_mode": _choice("coordinate_transformation_mode", ctm,
                                                      image.RESIZE_COORDS),
            "nearest_mode": _choice("nearest_mode", nearest, image.NEAREST_MODES),
            "cubic_coeff_a": float(a.get("cubic_coeff_a", -0.75)),
            "exclude_outside": bool(a.get("exclude_outside", 0)),
            "extrapolation_value": float(a.get("extrapolation_value", 0.0)),
            "antialias": bool(a.get("antialias", 0))}


@_reg("Resize", "Upsample")
def _resize(cx: Ctx, a: _Attrs) -> Expr:
    """Resize (opset 10: scales only; 11+: roi, scales, sizes) and the deprecated Upsample
    (scales as an attribute before opset 9, an input after)."""
    x = cx.x(0)
    kw = _resize_method(cx, a)
    axes = a.ints("axes")
    policy = _choice("keep_aspect_ratio_policy", _str(a, "keep_aspect_ratio_policy", "stretch"),
                     image.ASPECT_POLICIES)
    f32, i64 = np.zeros((0,), np.float32), np.zeros((0,), np.int64)
    full = cx.node.op_type == "Resize" and cx.opset >= 11
    if cx.node.op_type == "Upsample" and cx.opset < 9:
        if a.get("scales") is None:
            raise FrontendError("scales is required")
        exprs: list[Expr] = [Constant(f32), Constant(np.asarray(a.get("scales"), np.float32)), Constant(i64)]
    else:
        a.ignore("scales")
        pos = (1, 2, 3) if full else (-1, 1, -1)
        exprs = [cx.x(i) if i > 0 and cx.has(i) else Constant(e) for i, e in zip(pos, (f32, f32, i64))]
    if all(type(e) is Constant for e in exprs):
        roi, scales, sizes = (e.data for e in exprs)  # type: ignore[attr-defined]
        size, sc, full_roi = image.resize_plan(shape_of(x), roi, scales, sizes, axes, policy)
        if kw["coordinate_transformation_mode"] != "tf_crop_and_resize":
            full_roi = ()
        return image.resize(x, size=size, scales=sc, roi=full_roi, **kw)
    return image.dyn_resize(x, *exprs, axes=axes, keep_aspect_ratio_policy=policy, **kw)


@_reg("GridSample")
def _grid_sample(cx: Ctx, a: _Attrs) -> Expr:
    mode = _str(a, "mode", "linear" if cx.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    return image.grid_sample(cx.x(0), cx.x(1), mode=_choice("mode", mode, image.GRID_MODES),
                             padding_mode=_choice("padding_mode", _str(a, "padding_mode", "zeros"),
                                                  image.PADDING_MODES),
                             align_corners=bool(a.get("align_corners", 0)))


@_reg("AffineGrid")
def _affine_grid(cx: Ctx, a: _Attrs) -> Expr:
    ac = bool(a.get("align_corners", 0))
    size = _const_or_none(cx, 1)
    if size is not None:
        return image.affine_grid(cx.x(0), size=tuple(int(v) for v in size.reshape(-1)), align_corners=ac)
    return image.dyn_affine_grid(cx.x(0), cx.x(1), align_corners=ac)


@_reg("DeformConv")
def _deform_conv(cx: Ctx, a: _Attrs) -> Expr:
    x, w = cx.x(0), cx.x(1)
    if len(shape_of(x)) != 4:
        raise FrontendError(f"DeformConv of data {shape_of(x)}: only 2-D is supported")
    ks = a.ints("kernel_shape")
    if ks is not None and tuple(ks) != tuple(shape_of(w)[2:]):
        raise FrontendError(f"kernel_shape {ks} does not match the weight shape {shape_of(w)}")
    fl = dtype_of(x)
    return image.deformable_conv2d(
        x, w, cx.x(2), _tensor_or_empty(cx, 3, fl), _tensor_or_empty(cx, 4, fl),
        strides=a.ints("strides", (1, 1)), padding=a.ints("pads", (0, 0, 0, 0)),
        dilation=a.ints("dilations", (1, 1)), groups=int(a.get("group", 1)),
        offset_groups=int(a.get("offset_group", 1)))


# -- TopK, OneHot ---------------------------------------------------------------------------------------


@_reg("TopK")
def _topk(cx: Ctx, a: _Attrs) -> list[Expr]:
    x = cx.x(0)
    axis = int(a.get("axis", -1))
    asc = not bool(a.get("largest", 1))
    a.ignore("sorted")  # sorted=0 allows any order: the sorted order is one
    if cx.opset < 10:
        t = op.topk(x, k=int(a.get("k")), axis=axis, is_ascend=asc, dtype="int64")
    else:
        k = _const_or_none(cx, 1)
        if k is not None:
            t = op.topk(x, k=int(k.reshape(-1)[0]), axis=axis, is_ascend=asc, dtype="int64")
            if int(k.reshape(-1)[0]) == 0:
                raise FrontendError("TopK with k=0 is not supported")
        else:
            ke = cx.x(1)
            if len(shape_of(ke)) != 0:
                ke = op.reshape(ke, newshape=())
            t = op.dyn.topk(x, ke, axis=axis, is_ascend=asc, dtype="int64")
    return [TupleGetItem(t, 0), TupleGetItem(t, 1)]


@_reg("OneHot")
def _one_hot(cx: Ctx, a: _Attrs) -> Expr:
    idx, values = cx.x(0), cx.x(2)
    axis = int(a.get("axis", -1))
    if shape_of(values) != (2,):
        raise FrontendError(f"values must hold [off, on], got shape {shape_of(values)}")
    off = op.reshape(op.strided_slice(values, begin=(0,), end=(1,)), newshape=())
    on = op.reshape(op.strided_slice(values, begin=(1,), end=(2,)), newshape=())
    if np.dtype(dtype_of(idx)).kind not in "iu":
        idx = op.cast(idx, dtype="int64")  # the spec: non-integer indices are cast to int64
    d = _const_or_none(cx, 1)
    dt = dtype_of(values)
    if d is not None:
        depth = int(np.asarray(d).reshape(-1)[0])
        idx = op.where(op.less(idx, scalar(0, idx)), op.add(idx, scalar(depth, idx)), idx)
        return op.one_hot(idx, on, off, depth=depth, axis=axis, dtype=dt)
    de = cx.x(1)
    if len(shape_of(de)) != 0:
        de = op.reshape(de, newshape=())
    de_i = op.cast(de, dtype=dtype_of(idx))
    idx = op.where(op.less(idx, scalar(0, idx)), op.add(idx, de_i), idx)
    if np.dtype(dtype_of(de)).kind not in "iu":
        de = op.cast(de, dtype="int64")
    return op.dyn.one_hot(idx, on, off, de, axis=axis, dtype=dt)


# -- control flow --------------------------------------------------------------------------------------

UNROLL_LIMIT = 16
"""A Loop with a constant trip count and condition, or a Scan, of up to this many iterations is
unrolled; longer ones, and Loops with a run-time trip count or condition, become a recursive
local function (evaluated without Python recursion)."""

# body(i, cond, states) -> (cond', states', scan elements)
Body = Callable[[Expr, Expr, list[Expr]], tuple[Expr, list[Expr], list[Expr]]]


def _graph(a: _Attrs, name: str) -> Any:
    g = a.graph(name)
    if g is None:
        raise FrontendError(f"attribute {name!r} (a graph) is required")
    return g


def _bool_scalar(e: Expr) -> Expr:
    if shape_of(e) != ():
        e = op.reshape(e, newshape=())
    return e if dtype_of(e) == "bool" else op.not_equal(e, scalar(0, e))


def _i64(v: int) -> Constant:
    return Constant(np.asarray(v, dtype=np.int64))


def _stack(parts: Sequence[Expr]) -> Expr:
    rows = [op.expand_dims(p, axis=0) for p in parts]
    return rows[0] if len(rows) == 1 else op.concatenate(rows, axis=0)


@_reg("If")
def _if(cx: Ctx, a: _Attrs) -> list[Expr]:
    cond = cx.x(0)
    then_outs = cx.subgraph(_graph(a, "then_branch"), [])
    else_outs = cx.subgraph(_graph(a, "else_branch"), [])
    if len(then_outs) != len(else_outs):
        raise FrontendError(f"the branches have {len(then_outs)} and {len(else_outs)} outputs")
    if type(cond) is Constant:  # a condition known at import: the taken branch
        return list(then_outs if bool(cond.data.reshape(-1)[0]) else else_outs)
    c = _bool_scalar(cond)
    if len(then_outs) == 1:
        return [If(c, then_outs[0], else_outs[0])]
    res = If(c, Tuple(then_outs), Tuple(else_outs))
    return [TupleGetItem(res, i) for i in range(len(then_outs))]


def _unrolled(body: Body, trip: int, states: list[Expr], cond: Expr
              ) -> tuple[list[Expr], list[list[Expr]]] | None:
    """Run ``body`` ``trip`` times at import; None when a condition is not a constant."""
    scans: list[list[Expr]] = []
    for i in range(trip):
        if type(cond) is not Constant:
            return None
        if not bool(cond.data.reshape(-1)[0]):
            break
        cond, states, elems = body(_i64(i), cond, states)
        if not scans:
            scans = [[] for _ in elems]
        for acc, e in zip(scans, elems):
            acc.append(e)
    return states, scans


def _general(a: Any, b: Any, what: str) -> TensorType:
    """The type of a loop-carried value that is ``a`` on entry and ``b`` after an iteration:
    dimensions that differ become ``?`` (ONNX lets them change between iterations)."""
    if type(a) is not TensorType or type(b) is not TensorType or (a.dtype, a.ndim) != (b.dtype, b.ndim):
        raise FrontendError(f"{what} changes from {a} to {b}: only its dimensions may change")
    if a is b:
        return a
    return TensorType(tuple(x if x is y or (type(x) is int and x == y) else AnyDim
                            for x, y in zip(a.shape, b.shape)), a.dtype)


def _empty(t: TensorType) -> Constant:
    """A zero-length stack of values of type ``t`` (its ``?`` dimensions 0)."""
    return Constant(np.zeros((0, *(d if type(d) is int else 0 for d in t.shape)), dtype=t.dtype))


def _recursive(body: Body, trip: Expr, cond0: Expr, states: list[Expr], n_scan: int
               ) -> tuple[list[Expr], list[Expr]]:
    """``let loop = fn(i, cond, v..., acc...) { if (i < trip && cond) { loop(i + 1, body(...)...,
    concatenate(acc, [elem])...) } else { (v..., acc...) } }; loop(0, cond0, v0..., empty...)``:
    the final states and the stacked scan outputs (first dimension ``?``).

    The parameters' types are those of the initial values, generalized (``?``) where an iteration
    changes a dimension.  When a scan element's type has ``?`` dimensions no empty stack of it
    can be built, so the first iteration is peeled: ``if (0 < trip && cond0) loop(1, body(0)...,
    [elem0]...) else (v0..., empty...)``."""
    i_v = Var("iter", TensorType((), "int64"))
    c_v = Var("cond", TensorType((), "bool"))
    types: list[Any] = [s.checked_type for s in states]
    for _ in range(len(states) + 2):  # each round makes at least one more dimension ?
        s_vs = [Var(f"state{k}", t) for k, t in enumerate(types)]
        cond_out, new_states, elems = body(i_v, c_v, list(s_vs))
        if len(elems) != n_scan or len(new_states) != len(states):
            raise FrontendError(f"the body gives {len(new_states)} states and {len(elems)} scan outputs, "
                                f"expected {len(states)} and {n_scan}")
        wider = [_general(t, o.checked_type, f"loop-carried value {k}")
                 for k, (t, o) in enumerate(zip(types, new_states))]
        if all(w is t for w, t in zip(wider, types)):
            break
        types = wider
    else:  # pragma: no cover - a dimension can only become ? once
        raise FrontendError("the loop-carried types do not settle")
    elem_ts = []
    for k, e in enumerate(elems):
        t = e.checked_type
        if not isinstance(t, TensorType):
            raise FrontendError(f"scan output {k} is not a tensor: {t}")
        elem_ts.append(t)
    acc_vs = [Var(f"scan{k}", TensorType((AnyDim, *t.shape), t.dtype)) for k, t in enumerate(elem_ts)]
    params = [i_v, c_v, *s_vs, *acc_vs]
    ptypes: list[Any] = [p.type_annotation for p in params]
    ret_t = TupleType(ptypes[2:])
    loop_v = Var("loop", FuncType(ptypes, ret_t))
    grown = [op.concatenate([acc, op.expand_dims(e, axis=0)], axis=0) for acc, e in zip(acc_vs, elems)]
    again = Call(loop_v, [op.add(i_v, _i64(1)), _bool_scalar(cond_out), *new_states, *grown])
    go = op.logical_and(op.less(i_v, trip), c_v)
    fn = Function(params, If(go, again, Tuple([*s_vs, *acc_vs])), ret_type=ret_t)
    if all(t.static for t in elem_ts):
        res: Expr = Let(loop_v, fn, Call(loop_v, [_i64(0), cond0, *states, *(_empty(t) for t in elem_ts)]))
    else:
        c1, s1, e1 = body(_i64(0), cond0, list(states))
        first = Call(loop_v, [_i64(1), _bool_scalar(c1), *s1, *(op.expand_dims(e, axis=0) for e in e1)])
        none = Tuple([*states, *(_empty(t) for t in elem_ts)])
        res = Let(loop_v, fn, If(op.logical_and(op.less(_i64(0), trip), cond0), first, none))
    n = len(states)
    return [TupleGetItem(res, k) for k in range(n)], [TupleGetItem(res, n + k) for k in range(n_scan)]


@_reg("Loop")
def _loop(cx: Ctx, a: _Attrs) -> list[Expr]:
    """ONNX Loop: unrolled when the trip count and the condition are constants (and stay so) and
    the count is at most UNROLL_LIMIT; otherwise a recursive local function (:func:`_recursive`)."""
    g = _graph(a, "body")
    n_state = len(cx.node.input) - 2
    states = [cx.x(2 + k) for k in range(n_state)]
    n_scan = len(g.output) - 1 - n_state
    if n_scan < 0:
        raise FrontendError(f"the body has {len(g.output)} outputs for {n_state} loop-carried values")

    def body(i: Expr, c: Expr, vs: list[Expr]) -> tuple[Expr, list[Expr], list[Expr]]:
        outs = cx.subgraph(g, [i, c, *vs])
        return outs[0], list(outs[1:1 + n_state]), list(outs[1 + n_state:])

    trip = _const_or_none(cx, 0)
    cond0: Expr = cx.x(1) if cx.has(1) else Constant(np.asarray(True))
    if trip is not None and type(cond0) is Constant and int(trip.reshape(-1)[0]) <= UNROLL_LIMIT:
        done = _unrolled(body, int(trip.reshape(-1)[0]), states, cond0)
        if done is not None and (n_scan == 0 or all(done[1])):
            return [*done[0], *(_stack(s) for s in done[1])]
        if done is not None and not done[1] and n_scan:
            raise FrontendError("a Loop that runs no iteration has scan outputs of unknown shape")
    m: Expr = cx.x(0) if cx.has(0) else _i64(np.iinfo(np.int64).max)
    if shape_of(m) != ():
        m = op.reshape(m, newshape=())
    finals, scans = _recursive(body, m, _bool_scalar(cond0), states, n_scan)
    return [*finals, *scans]


def _move_axis0(e: Expr, axis: int) -> Expr:
    """Move the stacking axis 0 of ``e`` to ``axis``."""
    r = len(shape_of(e))
    axis %= r
    if axis == 0:
        return e
    perm = list(range(1, r))
    perm.insert(axis, 0)
    return op.transpose(e, axes=tuple(perm))


def _reverse0(e: Expr) -> Expr:
    n = shape_of(e)[0]
    return op.strided_slice(e, begin=(n - 1,), end=(-n - 1,), axes=(0,), strides=(-1,))


@_reg("Scan")
def _scan(cx: Ctx, a: _Attrs) -> list[Expr]:
    """ONNX Scan (opset 9+; opset 8's batched form without sequence_lens): states carried over
    the slices of the scan inputs along their scan axes, scan outputs stacked."""
    g = _graph(a, "body")
    n_in = a.get("num_scan_inputs")
    if n_in is None:
        raise FrontendError("num_scan_inputs is required")
    n_in = int(n_in)
    first = 1 if cx.opset < 9 else 0
    if first and cx.has(0):
        raise FrontendError("Scan-8 with sequence_lens is not supported")
    xs = [cx.x(i) for i in range(first, cx.n_inputs)]
    n_state = len(xs) - n_in
    n_out = len(g.output) - n_state
    in_axes = a.ints("scan_input_axes", (0,) * n_in)
    in_dirs = a.ints("scan_input_directions", a.ints("directions", (0,) * n_in))
    out_axes = a.ints("scan_output_axes", (0,) * n_out)
    out_dirs = a.ints("scan_output_directions", (0,) * n_out)
    if n_state < 0 or len(in_axes) != n_in or len(in_dirs) != n_in or len(out_axes) != n_out \
            or len(out_dirs) != n_out:
        raise FrontendError("Scan's axes and directions must have an entry per scan input and output")
    if first:  # opset 8: a leading batch axis on every input and output; scan each batch entry
        batch = shape_of(xs[0])[0]
        per = [_scan_core(cx, g, [op.take(x, _i64(b), axis=0) for x in xs], n_state, in_axes, in_dirs,
                          out_axes, out_dirs) for b in range(batch)]
        return [_stack([p[k] for p in per]) for k in range(len(per[0]))]
    return _scan_core(cx, g, xs, n_state, in_axes, in_dirs, out_axes, out_dirs)


def _scan_core(cx: Ctx, g: Any, xs: list[Expr], n_state: int, in_axes: Sequence[int], in_dirs: Sequence[int],
               out_axes: Sequence[int], out_dirs: Sequence[int]) -> list[Expr]:
    states, seqs = xs[:n_state], xs[n_state:]
    lens = {shape_of(s)[ax % len(shape_of(s))] for s, ax in zip(seqs, in_axes)}
    if len(lens) != 1:
        raise FrontendError(f"the scan inputs have different lengths {sorted(lens)}")
    length = lens.pop()

    def body(i: Expr, c: Expr, vs: list[Expr]) -> tuple[Expr, list[Expr], list[Expr]]:
        elems = []
        for s, ax, d in zip(seqs, in_axes, in_dirs):
            j = op.subtract(_i64(length - 1), i) if d else i
            if type(j) is not Constant and type(i) is Constant:
                j = _i64(length - 1 - int(i.data))
            elems.append(op.take(s, j, axis=ax % len(shape_of(s))))
        outs = cx.subgraph(g, [*vs, *elems])
        return c, list(outs[:n_state]), list(outs[n_state:])

    done = _unrolled(body, length, states, Constant(np.asarray(True))) if length <= UNROLL_LIMIT else None
    if done is not None and length > 0:
        finals, stacked = done[0], [_stack(s) for s in done[1]]
    else:
        n_scan = len(g.output) - n_state
        finals, stacked = _recursive(body, _i64(length), Constant(np.asarray(True)), states, n_scan)
        stacked = [op.reshape(s, newshape=(length, *shape_of_t(s)[1:])) for s in stacked]
    outs = []
    for s, ax, d in zip(stacked, out_axes, out_dirs):
        outs.append(_move_axis0(_reverse0(s) if d else s, ax))
    return [*finals, *outs]


def shape_of_t(e: Expr) -> tuple[Any, ...]:
    """The shape of a tensor expression, ``?`` dimensions included."""
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise FrontendError(f"expected a tensor, got {t}")
    return t.shape
