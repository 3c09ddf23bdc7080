"""ONNX operator converters: each maps one ONNX node onto pyir operator calls.

A converter receives the node's context (inputs, opset) and attribute reader and
returns the node's output expressions.  Attributes the converter does not read
make the importer raise, so nothing is silently ignored.  N-d convolutions and
pooling of rank 1 and 3 are composed from the 2-D operators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import op
from ..ir.expr import Constant, Expr, TupleGetItem
from ..ir.types import TensorType
from ..op import nn
from .onnx import CONVERTERS, Ctx, FrontendError, _Attrs

Converter = Callable[[Ctx, _Attrs], Any]


def _reg(*names: str, replace: bool = False) -> Callable[[Converter], Converter]:
    """Register the decorated converter for the ONNX operator types ``names`` (each once: a
    second converter for the same type is an error unless it says ``replace=True``, as a
    converter that wraps the one it replaces does)."""
    def deco(fn: Converter) -> Converter:
        for n in names:
            if n in CONVERTERS and not replace:
                raise RuntimeError(f"two ONNX converters for {n!r}: {CONVERTERS[n].__module__} "
                                   f"and {fn.__module__}")
            CONVERTERS[n] = fn
        return fn

    return deco


def shape_of(e: Expr) -> tuple[int, ...]:
    """The static shape of a tensor expression."""
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise FrontendError(f"expected a tensor, got {t}")
    if not t.static:
        raise FrontendError(f"expected a static shape, got {t}")
    return t.shape  # type: ignore[return-value]


def dtype_of(e: Expr) -> str:
    """The dtype of a tensor expression."""
    return e.checked_type.dtype  # type: ignore[attr-defined]


def scalar(value: Any, like: Expr) -> Constant:
    """A scalar constant of the dtype of ``like``."""
    return Constant(np.asarray(value, dtype=dtype_of(like)))


def _reshape(x: Expr, shape: Sequence[int]) -> Expr:
    return op.reshape(x, newshape=tuple(int(d) for d in shape))


def _axis(a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise FrontendError(f"axis {a} out of range for rank {rank}")
    return a % rank if rank else 0


def _chain(fn: Callable[[Expr, Expr], Expr], xs: Sequence[Expr]) -> Expr:
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


def _inputs(cx: Ctx) -> list[Expr]:
    return [cx.x(i) for i in range(cx.n_inputs) if cx.has(i)]


# -- elementwise --------------------------------------------------------------------------------

_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "Relu": nn.relu, "Sigmoid": op.sigmoid, "Tanh": op.tanh, "Exp": op.exp, "Log": op.log,
    "Sqrt": op.sqrt, "Neg": op.negative, "Abs": op.abs, "Erf": op.erf, "Floor": op.floor,
    "Ceil": op.ceil, "Not": op.logical_not,
}


@_reg(*_UNARY)
def _unary(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    return _UNARY[cx.node.op_type](cx.x(0))


@_reg("Identity")
def _identity(cx: Ctx, a: _Attrs) -> Expr:
    return cx.x(0)


@_reg("Reciprocal")
def _reciprocal(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    return op.divide(scalar(1, x), x)


_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "Add": op.add, "Sub": op.subtract, "Mul": op.multiply, "Div": op.divide, "Pow": op.power,
    "Equal": op.equal, "Greater": op.greater, "Less": op.less, "And": op.logical_and,
    "Or": op.logical_or, "GreaterOrEqual": op.greater_equal, "LessOrEqual": op.less_equal,
}


@_reg(*_BINARY)
def _binary(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    x, y = cx.x(0), cx.x(1)
    if a.get("broadcast", 0) and a.get("axis") is not None:  # opset < 7 explicit alignment
        xr, ys = len(shape_of(x)), shape_of(y)
        ax = _axis(a.get("axis"), xr)
        y = _reshape(y, ys + (1,) * (xr - ax - len(ys)))
    if cx.node.op_type == "Pow" and dtype_of(y) != dtype_of(x):
        y = op.cast(y, dtype=dtype_of(x))
    return _BINARY[cx.node.op_type](x, y)


_VARIADIC = {"Sum": op.add, "Max": op.maximum, "Min": op.minimum}


@_reg("Sum", "Max", "Min", "Mean")
def _variadic(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    xs = _inputs(cx)
    if cx.node.op_type == "Mean":
        return op.divide(_chain(op.add, xs), scalar(len(xs), xs[0]))
    return _chain(_VARIADIC[cx.node.op_type], xs)


@_reg("Where")
def _where(cx: Ctx, a: _Attrs) -> Expr:
    return op.where(cx.x(0), cx.x(1), cx.x(2))


@_reg("Clip")
def _clip(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    if cx.opset < 11:
        lo, hi = a.get("min", -math.inf), a.get("max", math.inf)
    else:
        lo = float(cx.const(1)) if cx.has(1) else -math.inf
        hi = float(cx.const(2)) if cx.has(2) else math.inf
    return op.clip(x, a_min=float(lo), a_max=float(hi))


def _positive(x: Expr) -> Expr:
    return op.greater(x, scalar(0, x))


def _elu_core(x: Expr, alpha: float) -> Expr:
    neg = op.multiply(scalar(alpha, x), op.subtract(op.exp(x), scalar(1, x)))
    return op.where(_positive(x), x, neg)


@_reg("Elu")
def _elu(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    return _elu_core(cx.x(0), a.get("alpha", 1.0))


@_reg("Selu")
def _selu(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    x = cx.x(0)
    alpha, gamma = a.get("alpha", 1.67326319217681884765625), a.get("gamma", 1.05070102214813232421875)
    return op.multiply(scalar(gamma, x), _elu_core(x, alpha))


@_reg("LeakyRelu")
def _leaky_relu(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    return nn.leaky_relu(cx.x(0), alpha=a.get("alpha", 0.01))


@_reg("PRelu")
def _prelu(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    x, slope = cx.x(0), cx.x(1)
    xs, ss = shape_of(x), shape_of(slope)
    if len(xs) >= 2 and ss == (xs[1],) and (cx.opset < 7 or xs[-1] != xs[1]):
        return nn.prelu(x, slope, axis=1)
    return op.where(_positive(x), x, op.multiply(x, slope))


@_reg("Softsign")
def _softsign(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    return op.divide(x, op.add(op.abs(x), scalar(1, x)))


# -- constants and shapes ---------------------------------------------------------------------------


@_reg("Constant")
def _constant(cx: Ctx, a: _Attrs) -> Expr:
    if "sparse_value" in a.values:
        a.get("sparse_value")
        raise FrontendError("sparse constants are not supported")
    for name, dt in (("value", None), ("value_float", "float32"), ("value_floats", "float32"),
                     ("value_int", "int64"), ("value_ints", "int64")):
        if name in a.values:
            return Constant(np.asarray(a.get(name), dtype=dt))
    raise FrontendError("Constant without a supported value attribute")


@_reg("ConstantOfShape")
def _constant_of_shape(cx: Ctx, a: _Attrs) -> Expr:
    shape = tuple(int(d) for d in cx.const(0).reshape(-1))
    v = a.get("value")
    v = np.zeros((1,), np.float32) if v is None else np.asarray(v).reshape(-1)
    return Constant(np.full(shape, v[0], dtype=v.dtype))


@_reg("Shape")
def _shape(cx: Ctx, a: _Attrs) -> Expr:
    s = shape_of(cx.x(0))
    start, end = a.get("start", 0), a.get("end", None)
    return Constant(np.asarray(s[slice(start, end)], dtype=np.int64))


@_reg("Size")
def _size(cx: Ctx, a: _Attrs) -> Expr:
    return Constant(np.asarray(int(np.prod(shape_of(cx.x(0)), dtype=np.int64)), dtype=np.int64))


# -- layout ---------------------------------------------------------------------------------------------


@_reg("Reshape")
def _reshape_op(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    shape = a.ints("shape") if cx.opset < 5 else tuple(int(d) for d in cx.const(1).reshape(-1))
    a.ignore("consumed_inputs")
    src = shape_of(x)
    allowzero = a.get("allowzero", 0)
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(src):
                raise FrontendError(f"shape {shape}: 0 at position {i} but input rank is {len(src)}")
            out.append(src[i])
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise FrontendError(f"shape {shape} has more than one -1")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        total = int(np.prod(src, dtype=np.int64))
        if known == 0 or total % known:
            raise FrontendError(f"cannot reshape {src} to {shape}")
        out[out.index(-1)] = total // known
    return _reshape(x, out)


@_reg("Flatten")
def _flatten(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    s = shape_of(x)
    ax = a.get("axis", 1)
    ax = ax + len(s) if ax < 0 else ax
    if not 0 <= ax <= len(s):
        raise FrontendError(f"axis {a.get('axis')} out of range for rank {len(s)}")
    return _reshape(x, (int(np.prod(s[:ax], dtype=np.int64)), int(np.prod(s[ax:], dtype=np.int64))))


@_reg("Transpose")
def _transpose(cx: Ctx, a: _Attrs) -> Expr:
    return op.transpose(cx.x(0), axes=a.ints("perm"))


@_reg("Concat")
def _concat(cx: Ctx, a: _Attrs) -> Expr:
    xs = _inputs(cx)
    return op.concatenate(*xs, axis=a.get("axis", 1))


def _axes_arg(cx: Ctx, a: _Attrs, input_from: int) -> tuple[int, ...] | None:
    if cx.opset >= input_from:
        return tuple(int(v) for v in cx.const(1).reshape(-1)) if cx.has(1) else None
    return a.ints("axes")


@_reg("Unsqueeze")
def _unsqueeze(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    axes = _axes_arg(cx, a, 13)
    if axes is None:
        raise FrontendError("Unsqueeze needs axes")
    s = shape_of(x)
    r = len(s) + len(axes)
    ax = sorted(_axis(v, r) for v in axes)
    out = list(s)
    for v in ax:
        out.insert(v, 1)
    return _reshape(x, out)


@_reg("Squeeze")
def _squeeze(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    axes = _axes_arg(cx, a, 13)
    return op.squeeze(x, axis=axes)


@_reg("Gather")
def _gather(cx: Ctx, a: _Attrs) -> Expr:
    data = cx.x(0)
    ax = _axis(a.get("axis", 0), len(shape_of(data)))
    dim = shape_of(data)[ax]
    idx = cx.x(1)
    if type(idx) is Constant:
        arr = idx.data.astype(np.int64)
        idx = Constant(np.where(arr < 0, arr + dim, arr))
    else:
        idx = op.where(op.less(idx, scalar(0, idx)), op.add(idx, scalar(dim, idx)), idx)
    return op.take(data, idx, axis=ax)


@_reg("Split")
def _split(cx: Ctx, a: _Attrs) -> list[Expr]:
    x = cx.x(0)
    s = shape_of(x)
    ax = _axis(a.get("axis", 0), len(s))
    n_out = len(cx.node.output)
    if cx.opset >= 13 or (cx.opset < 2 and cx.has(1)):
        sizes = tuple(int(v) for v in cx.const(1)) if cx.has(1) else None
    else:
        sizes = a.ints("split")
    if cx.opset >= 18:
        n_out = a.get("num_outputs", n_out)
    if sizes is None:
        chunk = -(-s[ax] // n_out)
        sizes = tuple(min(chunk, s[ax] - i * chunk) for i in range(n_out))
    if sum(sizes) != s[ax]:
        raise FrontendError(f"split sizes {sizes} do not add up to dimension {s[ax]}")
    cuts = tuple(int(v) for v in np.cumsum(sizes)[:-1])
    t = op.split(x, indices_or_sections=cuts, axis=ax, by_sections=False)
    return [TupleGetItem(t, i) for i in range(len(sizes))]


@_reg("Slice")
def _slice(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    s = shape_of(x)
    if cx.opset < 10:
        starts, ends, axes, steps = a.ints("starts"), a.ints("ends"), a.ints("axes"), None
    else:
        starts = tuple(int(v) for v in cx.const(1))
        ends = tuple(int(v) for v in cx.const(2))
        axes = tuple(int(v) for v in cx.const(3)) if cx.has(3) else None
        steps = tuple(int(v) for v in cx.const(4)) if cx.has(4) else None
    axes = axes if axes is not None else tuple(range(len(starts)))
    steps = steps if steps is not None else (1,) * len(starts)
    begin, end, nax = [], [], []
    for b, e, ax, st in zip(starts, ends, axes, steps):
        ax = _axis(ax, len(s))
        if st == 0:
            raise FrontendError("Slice step cannot be 0")
        lo, hi, _ = slice(b, e, st).indices(s[ax])
        begin.append(lo)
        end.append(hi if hi >= 0 else -s[ax] - 1)
        nax.append(ax)
    return op.strided_slice(x, begin=tuple(begin), end=tuple(end), axes=tuple(nax),
                            strides=tuple(steps))


def _broadcast_to(x: Expr, target: Sequence[int]) -> Expr:
    s = shape_of(x)
    r = max(len(s), len(target))
    s2 = (1,) * (r - len(s)) + tuple(s)
    t2 = (1,) * (r - len(target)) + tuple(target)
    if s2 != tuple(s):
        x = _reshape(x, s2)
    for i, (d, t) in enumerate(zip(s2, t2)):
        if d == 1 and t > 1:
            x = op.concatenate(*([x] * t), axis=i)
        elif d != t and t != 1:
            raise FrontendError(f"cannot broadcast shape {tuple(s)} to {tuple(target)}")
    return x


@_reg("Expand")
def _expand(cx: Ctx, a: _Attrs) -> Expr:
    return _broadcast_to(cx.x(0), tuple(int(v) for v in cx.const(1)))


@_reg("Tile")
def _tile(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    reps = tuple(int(v) for v in cx.const(1).reshape(-1))
    if len(reps) != len(shape_of(x)):
        raise FrontendError(f"repeats {reps} do not match rank {len(shape_of(x))}")
    for i, r in enumerate(reps):
        if r != 1:
            x = op.concatenate(*([x] * r), axis=i)
    return x


@_reg("Pad")
def _pad(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    r = len(shape_of(x))
    mode = a.get("mode", "constant")
    if cx.opset < 11:
        pads = a.ints("pads") if cx.opset >= 2 else a.ints("paddings")
        value = float(a.get("value", 0.0))
    else:
        pads = tuple(int(v) for v in cx.const(1))
        value = float(cx.const(2).reshape(-1)[0]) if cx.has(2) else 0.0
        if cx.has(3):
            raise FrontendError("Pad with an axes input is not supported")
    if pads is None or len(pads) != 2 * r:
        raise FrontendError(f"pads {pads} must hold 2 x rank = {2 * r} ints")
    if any(p < 0 for p in pads):
        raise FrontendError(f"negative pads {pads} are not supported")
    if mode not in ("constant", "edge", "reflect"):
        raise FrontendError(f"pad mode {mode!r} is not supported")
    flat = tuple(v for i in range(r) for v in (pads[i], pads[i + r]))
    return nn.pad(x, pad_width=flat, pad_value=value, pad_mode=mode)


# -- reductions ------------------------------------------------------------------------------------

_REDUCE = {"ReduceMean": op.mean, "ReduceSum": op.sum, "ReduceMax": op.max, "ReduceMin": op.min,
           "ReduceProd": op.prod}


@_reg(*_REDUCE)
def _reduce(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    from_input = 13 if cx.node.op_type == "ReduceSum" else 18
    axes = _axes_arg(cx, a, from_input)
    if axes is not None and len(axes) == 0:
        axes = None
    if axes is None and a.get("noop_with_empty_axes", 0):
        return x
    return _REDUCE[cx.node.op_type](x, axis=axes, keepdims=bool(a.get("keepdims", 1)))


@_reg("ArgMax")
def _argmax(cx: Ctx, a: _Attrs) -> Expr:
    if a.get("select_last_index", 0):
        raise FrontendError("select_last_index=1 is not supported")
    return op.argmax(cx.x(0), axis=a.get("axis", 0), keepdims=bool(a.get("keepdims", 1)))


@_reg("Softmax", "LogSoftmax")
def _softmax(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    s = shape_of(x)
    fn = nn.softmax if cx.node.op_type == "Softmax" else nn.log_softmax
    ax = _axis(a.get("axis", 1 if cx.opset < 13 else -1), len(s))
    if cx.opset >= 13 or ax == len(s) - 1:
        return fn(x, axis=ax)
    # opset < 13: the input is coerced to 2-D at ``axis`` and normalized over the second dimension.
    flat = _reshape(x, (int(np.prod(s[:ax], dtype=np.int64)), int(np.prod(s[ax:], dtype=np.int64))))
    return _reshape(fn(flat, axis=1), s)


@_reg("Dropout")
def _dropout(cx: Ctx, a: _Attrs) -> list[Expr]:
    a.ignore("is_test", "consumed_inputs", "seed")
    x = cx.x(0)
    ratio = a.get("ratio", 0.5)
    if cx.opset >= 12:
        ratio = float(cx.const(1)) if cx.has(1) else 0.5
        if cx.has(2) and bool(cx.const(2)):
            raise FrontendError("Dropout in training mode is not supported")
    y = nn.dropout(x, rate=float(ratio)) if 0.0 <= ratio < 1.0 else x
    return [y, op.cast(op.ones_like(x), dtype="bool")]


# -- matrix products -------------------------------------------------------------------------------


@_reg("MatMul")
def _matmul(cx: Ctx, a: _Attrs) -> Expr:
    return op.matmul(cx.x(0), cx.x(1))


@_reg("Gemm")
def _gemm(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("broadcast")
    x, w = cx.x(0), cx.x(1)
    if a.get("transA", 0):
        x = op.transpose(x, axes=(1, 0))
    y = nn.dense(x, w) if a.get("transB", 0) else op.matmul(x, w)
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if alpha != 1.0:
        y = op.multiply(y, scalar(alpha, y))
    if cx.has(2) and beta != 0.0:
        c = cx.x(2)
        if beta != 1.0:
            c = op.multiply(c, scalar(beta, c))
        n = shape_of(y)[1]
        y = nn.bias_add(y, c, axis=1) if shape_of(c) == (n,) else op.add(y, c)
    return y


# -- convolution and pooling -------------------------------------------------------------------------


def _pads(a: _Attrs, spatial: Sequence[int], k: Sequence[int], s: Sequence[int], d: Sequence[int]
          ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begins, ends) padding per spatial axis, from ``pads`` or ``auto_pad``."""
    nd = len(spatial)
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = a.ints("pads", (0,) * (2 * nd))
        if len(pads) != 2 * nd:
            raise FrontendError(f"pads {pads} must hold {2 * nd} ints")
        return pads[:nd], pads[nd:]
    a.ignore("pads")
    if auto == "VALID":
        return (0,) * nd, (0,) * nd
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise FrontendError(f"auto_pad {auto!r} is not supported")
    begins, ends = [], []
    for n, kk, ss, dd in zip(spatial, k, s, d):
        out = -(-n // ss)
        total = max(0, (out - 1) * ss + (kk - 1) * dd + 1 - n)
        small = total // 2
        begins.append(small if auto == "SAME_UPPER" else total - small)
        ends.append(total - begins[-1])
    return tuple(begins), tuple(ends)


def _conv2d(x: Expr, w: Expr, s: Sequence[int], b: Sequence[int], e: Sequence[int], d: Sequence[int],
            g: int) -> Expr:
    return nn.conv2d(x, w, strides=tuple(s), padding=(b[0], b[1], e[0], e[1]),
                     dilation=tuple(d), groups=g)


def _conv3d(x: Expr, w: Expr, s: Sequence[int], b: Sequence[int], e: Sequence[int], d: Sequence[int],
            g: int) -> Expr:
    """3-D convolution as a sum over kernel depth of 2-D convolutions on strided depth slices."""
    n, c, depth, h, wd = shape_of(x)
    o, ci, kd, kh, kw = shape_of(w)
    if b[0] or e[0]:
        x = nn.pad(x, pad_width=(0, 0, 0, 0, b[0], e[0], 0, 0, 0, 0))
        depth += b[0] + e[0]
    od = (depth - (d[0] * (kd - 1) + 1)) // s[0] + 1
    if od < 1:
        raise FrontendError(f"kernel depth {kd} larger than padded input depth {depth}")
    parts = []
    for i in range(kd):
        start = i * d[0]
        xs: Expr = op.strided_slice(x, begin=(start,), end=(start + (od - 1) * s[0] + 1,), axes=(2,),
                                    strides=(s[0],))
        xs = _reshape(op.transpose(xs, axes=(0, 2, 1, 3, 4)), (n * od, c, h, wd))
        wk = _reshape(op.strided_slice(w, begin=(i,), end=(i + 1,), axes=(2,)), (o, ci, kh, kw))
        parts.append(_conv2d(xs, wk, s[1:], b[1:], e[1:], d[1:], g))
    y = _chain(op.add, parts)
    oh, ow = shape_of(y)[2:]
    return op.transpose(_reshape(y, (n, od, o, oh, ow)), axes=(0, 2, 1, 3, 4))


@_reg("Conv")
def _conv(cx: Ctx, a: _Attrs) -> Expr:
    x, w = cx.x(0), cx.x(1)
    xs, ws = shape_of(x), shape_of(w)
    nd = len(xs) - 2
    if nd not in (1, 2, 3) or len(ws) != nd + 2:
        raise FrontendError(f"Conv of data {xs} and weight {ws}: only 1-D, 2-D and 3-D are supported")
    k = ws[2:]
    ks = a.ints("kernel_shape")
    if ks is not None and tuple(ks) != tuple(k):
        raise FrontendError(f"kernel_shape {ks} does not match the weight shape {ws}")
    s = a.ints("strides", (1,) * nd)
    d = a.ints("dilations", (1,) * nd)
    g = int(a.get("group", 1))
    b, e = _pads(a, xs[2:], k, s, d)
    if nd == 2:
        y = _conv2d(x, w, s, b, e, d, g)
    elif nd == 1:
        x4 = _reshape(x, (xs[0], xs[1], 1, xs[2]))
        w4 = _reshape(w, (ws[0], ws[1], 1, ws[2]))
        y4 = _conv2d(x4, w4, (1, s[0]), (0, b[0]), (0, e[0]), (1, d[0]), g)
        y = _reshape(y4, (*shape_of(y4)[:2], shape_of(y4)[3]))
    else:
        y = _conv3d(x, w, s, b, e, d, g)
    if cx.has(2):
        y = nn.bias_add(y, cx.x(2), axis=1)
    return y


def _pool2d(kind: str, x: Expr, k: Sequence[int], s: Sequence[int], b: Sequence[int], e: Sequence[int],
            d: Sequence[int], ceil: bool, cip: bool) -> Expr:
    kw: dict[str, Any] = {"pool_size": tuple(k), "strides": tuple(s), "padding": (b[0], b[1], e[0], e[1]),
                          "dilation": tuple(d), "ceil_mode": ceil}
    if kind == "avg":
        return nn.avg_pool2d(x, count_include_pad=cip, **kw)
    return nn.max_pool2d(x, **kw)


def _pool_nd(kind: str, x: Expr, k: Sequence[int], s: Sequence[int], b: Sequence[int], e: Sequence[int],
             d: Sequence[int], ceil: bool, cip: bool) -> Expr:
    """1-, 2- or 3-D pooling; windows are boxes, so N-d pooling is separable into 2-D poolings."""
    xs = shape_of(x)
    nd = len(xs) - 2
    if nd == 2:
        return _pool2d(kind, x, k, s, b, e, d, ceil, cip)
    if nd == 1:
        y = _pool2d(kind, _reshape(x, (xs[0], xs[1], 1, xs[2])), (1, k[0]), (1, s[0]), (0, b[0]),
                    (0, e[0]), (1, d[0]), ceil, cip)
        return _reshape(y, (xs[0], xs[1], shape_of(y)[3]))
    if nd == 3:
        n, c, depth, h, w = xs
        y = _pool2d(kind, _reshape(x, (n, c * depth, h, w)), k[1:], s[1:], b[1:], e[1:], d[1:], ceil, cip)
        oh, ow = shape_of(y)[2:]
        y = _pool2d(kind, _reshape(y, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1), (b[0], 0), (e[0], 0),
                    (d[0], 1), ceil, cip)
        return _reshape(y, (n, c, shape_of(y)[2], oh, ow))
    raise FrontendError(f"pooling of rank-{len(xs)} data is not supported")


@_reg("MaxPool", "AveragePool")
def _pool(cx: Ctx, a: _Attrs) -> Expr:
    kind = "max" if cx.node.op_type == "MaxPool" else "avg"
    x = cx.x(0)
    xs = shape_of(x)
    nd = len(xs) - 2
    k = a.ints("kernel_shape")
    if k is None or len(k) != nd:
        raise FrontendError(f"kernel_shape {k} does not match data of shape {xs}")
    s = a.ints("strides", (1,) * nd)
    d = a.ints("dilations", (1,) * nd)
    ceil = bool(a.get("ceil_mode", 0))
    cip = bool(a.get("count_include_pad", 0))
    if a.get("storage_order", 0):
        raise FrontendError("storage_order=1 is not supported")
    if len([o for o in cx.node.output if o]) > 1:
        raise FrontendError("MaxPool with an Indices output is not supported")
    b, e = _pads(a, xs[2:], k, s, d)
    return _pool_nd(kind, x, k, s, b, e, d, ceil, cip)


@_reg("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    r = len(shape_of(x))
    avg = cx.node.op_type == "GlobalAveragePool"
    if r == 4:
        return nn.global_avg_pool2d(x) if avg else nn.global_max_pool2d(x)
    fn = op.mean if avg else op.max
    return fn(x, axis=tuple(range(2, r)), keepdims=True)


# -- normalization ---------------------------------------------------------------------------------------


@_reg("BatchNormalization")
def _batch_norm(cx: Ctx, a: _Attrs) -> list[Expr]:
    a.ignore("momentum", "is_test", "consumed_inputs")
    if not a.get("spatial", 1):
        raise FrontendError("spatial=0 is not supported")
    if a.get("training_mode", 0):
        raise FrontendError("training_mode=1 is not supported")
    if len([o for o in cx.node.output if o]) > 1:
        raise FrontendError("BatchNormalization in training mode (several outputs) is not supported")
    x = cx.x(0)
    bn = nn.batch_norm(x, cx.x(1), cx.x(2), cx.x(3), cx.x(4), axis=1, epsilon=float(a.get("epsilon", 1e-5)))
    return [TupleGetItem(bn, 0)]


def _channel(v: Expr, rank: int) -> Expr:
    return _reshape(v, (shape_of(v)[0],) + (1,) * (rank - 2))


@_reg("InstanceNormalization")
def _instance_norm(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    r = len(shape_of(x))
    axes = tuple(range(2, r))
    mean = op.mean(x, axis=axes, keepdims=True)
    cen = op.subtract(x, mean)
    var = op.mean(op.multiply(cen, cen), axis=axes, keepdims=True)
    y = op.divide(cen, op.sqrt(op.add(var, scalar(a.get("epsilon", 1e-5), x))))
    return op.add(op.multiply(y, _channel(cx.x(1), r)), _channel(cx.x(2), r))


@_reg("LRN")
def _lrn(cx: Ctx, a: _Attrs) -> Expr:
    return nn.lrn(cx.x(0), size=int(a.get("size")), axis=1, bias=float(a.get("bias", 1.0)),
                  alpha=float(a.get("alpha", 1e-4)), beta=float(a.get("beta", 0.75)))


def _dilate_zeros(x: Expr, s: Sequence[int]) -> Expr:
    """Insert ``s - 1`` zeros between neighbouring pixels of NCHW data (``x[.., ::s, ::s]`` is ``x``)."""
    n, c, h, w = shape_of(x)
    if tuple(s) == (1, 1):
        return x
    y: Expr = nn.pad(_reshape(x, (n, c, h, 1, w, 1)),
                     pad_width=(0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, 0, 0, s[1] - 1))
    y = _reshape(y, (n, c, h * s[0], w * s[1]))
    return op.strided_slice(y, begin=(0, 0), end=((h - 1) * s[0] + 1, (w - 1) * s[1] + 1),
                            axes=(2, 3))


@_reg("ConvTranspose")
def _conv_transpose(cx: Ctx, a: _Attrs) -> Expr:
    """Transposed convolution: zero-insertion, padding, then a stride-1 conv2d with the weight
    flipped spatially and its in/out channels swapped within each group."""
    x, w = cx.x(0), cx.x(1)
    xs, ws = shape_of(x), shape_of(w)
    nd = len(xs) - 2
    if nd not in (1, 2) or len(ws) != nd + 2:
        raise FrontendError(f"ConvTranspose of data {xs} and weight {ws}: only 1-D and 2-D are supported")
    if nd == 1:
        x, w = _reshape(x, (xs[0], xs[1], 1, xs[2])), _reshape(w, (ws[0], ws[1], 1, ws[2]))
    k = shape_of(w)[2:]
    ks = a.ints("kernel_shape")
    if ks is not None and tuple(ks) != tuple(ws[2:]):
        raise FrontendError(f"kernel_shape {ks} does not match the weight shape {ws}")
    lift = (lambda v: (1, *v)) if nd == 1 else (lambda v: tuple(v))
    s = lift(a.ints("strides", (1,) * nd))
    d = lift(a.ints("dilations", (1,) * nd))
    opad = (0, *a.ints("output_padding", (0,) * nd)) if nd == 1 else a.ints("output_padding", (0, 0))
    g = int(a.get("group", 1))
    spatial = shape_of(x)[2:]
    full = [(kk - 1) * dd + 1 for kk, dd in zip(k, d)]
    out_shape = a.ints("output_shape")
    auto = a.get("auto_pad", "NOTSET")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        a.ignore("pads")
        same = tuple(i * ss for i, ss in zip(spatial, s))
        target = lift(out_shape[-nd:]) if out_shape is not None else same
        total = [ss * (i - 1) + op_ + f - t for i, ss, op_, f, t in zip(spatial, s, opad, full, target)]
        if any(t < 0 for t in total):
            raise FrontendError(f"output_shape {out_shape} is larger than the transposed convolution yields")
        upper = auto == "SAME_UPPER"  # otherwise the start gets the larger half (ONNX spec)
        b = [t // 2 if upper else t - t // 2 for t in total]
        e = [t - bb for t, bb in zip(total, b)]
    elif auto == "VALID":
        b, e = [0, 0], [0, 0]
    else:
        pads = a.ints("pads", (0,) * (2 * nd))
        b, e = list(lift(pads[:nd])), list(lift(pads[nd:]))
    y = _dilate_zeros(x, s)
    lo = [f - 1 - bb for f, bb in zip(full, b)]
    hi = [f - 1 - ee + op_ for f, ee, op_ in zip(full, e, opad)]
    y = nn.pad(y, pad_width=(0, 0, 0, 0, max(lo[0], 0), max(hi[0], 0), max(lo[1], 0), max(hi[1], 0)))
    if min(*lo, *hi) < 0:
        h2, w2 = shape_of(y)[2:]
        y = op.strided_slice(y, begin=(max(-lo[0], 0), max(-lo[1], 0)),
                             end=(h2 - max(-hi[0], 0), w2 - max(-hi[1], 0)), axes=(2, 3))
    cin, cog, kh, kw = shape_of(w)
    wt: Expr = op.transpose(_reshape(w, (g, cin // g, cog, kh, kw)), axes=(0, 2, 1, 3, 4))
    wt = _reshape(wt, (g * cog, cin // g, kh, kw))
    wt = op.strided_slice(wt, begin=(-1, -1), end=(-kh - 1, -kw - 1), axes=(2, 3), strides=(-1, -1))
    y = nn.conv2d(y, wt, dilation=tuple(d), groups=g)
    if cx.has(2):
        y = nn.bias_add(y, cx.x(2), axis=1)
    if nd == 1:
        y = _reshape(y, (*shape_of(y)[:2], shape_of(y)[3]))
    return y
