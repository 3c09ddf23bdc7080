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
from ..ir.dims import dim_add, dim_floordiv, dim_mul, dim_sub, dims_equal
from ..ir.expr import Constant, Expr, TupleGetItem
from ..ir.types import TensorType, dtype_kind, dtype_range
from ..op import dyn, nn
from ..op import shape as shape_ops
from .onnx import CONVERTERS, SHAPE_RULES, Ctx, FrontendError, _Attrs

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


def dims_of(e: Expr) -> tuple[Any, ...]:
    """The shape of a tensor expression, its dimensions ints, symbols or ``?``."""
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise FrontendError(f"expected a tensor, got {t}")
    return t.shape


def _reshape_like(x: Expr, dims: Sequence[Any]) -> Expr:
    """``x`` reshaped to ``dims``, where a non-int dimension is either the input's dimension
    at the same position (a reshape's 0 copies it) or the one left to infer (-1)."""
    if all(type(d) is int for d in dims):
        return _reshape(x, dims)
    src = dims_of(x)
    ns = []
    for i, d in enumerate(dims):
        if type(d) is int:
            ns.append(d)
        elif i < len(src) and src[i] is d:
            ns.append(0)
        else:
            ns.append(-1)
    if ns.count(-1) > 1:
        raise FrontendError(f"cannot reshape {dims_of(x)} to {tuple(dims)} with symbolic dimensions")
    return op.reshape(x, newshape=tuple(ns))


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
    """Clip; ``min > max`` makes every value ``max`` (ONNX); run-time bounds (and integer data)
    become elementwise ``maximum``/``minimum``."""
    x = cx.x(0)
    floating = dtype_kind(dtype_of(x)) == "f"
    if cx.opset < 11:
        lo, hi = float(a.get("min", -3.4028234663852886e38)), float(a.get("max", 3.4028234663852886e38))
        if floating:
            return op.clip(x, a_min=min(lo, hi), a_max=hi)
        bounds: list[Expr | None] = [scalar(lo, x), scalar(hi, x)]
    else:
        vals = [cx.maybe_const(i) for i in (1, 2)]
        if floating and all(v is not None or not cx.has(i) for v, i in zip(vals, (1, 2))):
            lo = float(vals[0].reshape(-1)[0]) if vals[0] is not None else -math.inf
            hi = float(vals[1].reshape(-1)[0]) if vals[1] is not None else math.inf
            return op.clip(x, a_min=min(lo, hi), a_max=hi)
        bounds = [_as_scalar(cx.x(i), x) if cx.has(i) else None for i in (1, 2)]
    y = x
    if bounds[0] is not None:
        y = op.maximum(y, bounds[0])
    if bounds[1] is not None:
        y = op.minimum(y, bounds[1])
    return y


def _as_scalar(v: Expr, like: Expr) -> Expr:
    """A one-element bound as a 0-D tensor of ``like``'s dtype."""
    t = v.checked_type
    if isinstance(t, TensorType) and t.ndim:
        v = op.reshape(v, newshape=())
    return v if dtype_of(v) == dtype_of(like) else op.cast(v, dtype=dtype_of(like))


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
    xs, ss = dims_of(x), dims_of(slope)
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
    v = a.get("value")
    v = np.zeros((1,), np.float32) if v is None else np.asarray(v).reshape(-1)
    arr = cx.maybe_const(0)
    if arr is not None:
        return Constant(np.full(tuple(int(d) for d in arr.reshape(-1)), v[0], dtype=v.dtype))
    return dyn.full(Constant(v.reshape(())), _int64(cx.x(0)), dtype=str(v.dtype))


def _int64(e: Expr) -> Expr:
    """An integer shape-like tensor as int64 (run-time shape arguments of the dyn operators)."""
    return e if dtype_of(e) == "int64" else op.cast(e, dtype="int64")


def _static_len(e: Expr, what: str) -> int:
    """The static length of a 1-D run-time argument (it sets a rank or a number of outputs)."""
    t = e.checked_type
    if not isinstance(t, TensorType) or t.ndim != 1 or type(t.shape[0]) is not int:
        raise FrontendError(f"{what} must be a 1-D tensor of static length, got {t}")
    return t.shape[0]


@_reg("Shape")
def _shape(cx: Ctx, a: _Attrs) -> Expr:
    """Shape: a constant when the shape is static, else ``shape_of`` (sliced by start/end)."""
    x = cx.x(0)
    t = x.checked_type
    start, end = a.get("start", 0), a.get("end", None)
    if isinstance(t, TensorType) and t.static:
        return Constant(np.asarray(t.shape[slice(start, end)], dtype=np.int64))
    rank = t.ndim  # type: ignore[attr-defined]
    lo, hi, _ = slice(start, end).indices(rank)
    s = op.shape_of(x)
    if (lo, hi) == (0, rank):
        return s
    return op.strided_slice(s, begin=(lo,), end=(max(hi, lo),), axes=(0,))


@_reg("Size")
def _size(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    t = x.checked_type
    if isinstance(t, TensorType) and t.static:
        return Constant(np.asarray(int(np.prod(shape_of(x), dtype=np.int64)), dtype=np.int64))
    return op.prod(op.shape_of(x))


# -- layout ---------------------------------------------------------------------------------------------


@_reg("Reshape")
def _reshape_op(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    a.ignore("consumed_inputs")
    allowzero = bool(a.get("allowzero", 0))
    if cx.opset < 5:
        shape = a.ints("shape")
    else:
        arr = cx.maybe_const(1)
        if arr is None:
            sv = cx.shape_value(1)
            ns = _newshape_of(x, sv[1], allowzero) if sv is not None and not sv[0] else None
            if ns is not None:
                return op.reshape(x, newshape=ns)
            return dyn.reshape(x, _int64(cx.x(1)), allowzero=allowzero)
        shape = tuple(int(d) for d in arr.reshape(-1))
    t = x.checked_type
    if not isinstance(t, TensorType) or not t.static:
        if allowzero and 0 in shape:
            raise FrontendError(f"allowzero=1 with a 0 in shape {shape} needs a static input shape")
        return _reshape(x, shape)  # 0 copies, -1 infers: the type relation handles symbolic dims
    src = shape_of(x)
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
    if 0 in out:  # allowzero=1: an empty result (a reshape's 0 would copy the input's dimension)
        if int(np.prod(src, dtype=np.int64)) != 0:
            raise FrontendError(f"cannot reshape {src} to {shape} (allowzero=1)")
        return shape_ops.zeros(shape=tuple(out), dtype=dtype_of(x))
    return _reshape(x, out)


@_reg("Flatten")
def _flatten(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    s = dims_of(x)
    ax = a.get("axis", 1)
    ax = ax + len(s) if ax < 0 else ax
    if not 0 <= ax <= len(s):
        raise FrontendError(f"axis {a.get('axis')} out of range for rank {len(s)}")
    return _flatten2d(x, ax)


def _flatten2d(x: Expr, ax: int) -> Expr:
    """``x`` as 2-D: the dimensions before ``ax``, and from ``ax`` on, multiplied (a symbolic
    side is inferred by -1: at most one side may be symbolic)."""
    s = dims_of(x)
    head, tail = s[:ax], s[ax:]
    if all(type(d) is int for d in s):
        return _reshape(x, (int(np.prod(head, dtype=np.int64)), int(np.prod(tail, dtype=np.int64))))
    if all(type(d) is int for d in tail):
        return op.reshape(x, newshape=(-1, int(np.prod(tail, dtype=np.int64))))
    if all(type(d) is int for d in head):
        return op.reshape(x, newshape=(int(np.prod(head, dtype=np.int64)), -1))
    raise FrontendError(f"cannot flatten {s} at axis {ax}: both sides have symbolic dimensions")


@_reg("Transpose")
def _transpose(cx: Ctx, a: _Attrs) -> Expr:
    return op.transpose(cx.x(0), axes=a.ints("perm"))


@_reg("Concat")
def _concat(cx: Ctx, a: _Attrs) -> Expr:
    xs = _inputs(cx)
    return op.concatenate(xs, axis=a.get("axis", 1))


def _axes_arg(cx: Ctx, a: _Attrs, input_from: int) -> tuple[int, ...] | None:
    if cx.opset >= input_from:
        return tuple(int(v) for v in cx.const(1).reshape(-1)) if cx.has(1) else None
    return a.ints("axes")


def _axes_spec(cx: Ctx, a: _Attrs, input_from: int) -> tuple[int, ...] | Expr | None:
    """Axes from the attribute (before opset ``input_from``) or input 1: a tuple when known at
    import time, an int64 expression when computed at run time (non-empty), None when absent."""
    if cx.opset < input_from:
        return a.ints("axes")
    if not cx.has(1):
        return None
    arr = cx.maybe_const(1)
    if arr is not None:
        return tuple(int(v) for v in arr.reshape(-1))
    e = cx.x(1)
    if _static_len(e, "axes") == 0:
        return ()
    return _int64(e)


@_reg("Unsqueeze")
def _unsqueeze(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    axes = _axes_spec(cx, a, 13)
    if axes is None:
        raise FrontendError("Unsqueeze needs axes")
    if isinstance(axes, Expr):
        return dyn.unsqueeze(x, axes)
    t = x.checked_type
    r = t.ndim + len(axes)  # type: ignore[attr-defined]
    ax = sorted(_axis(v, r) for v in axes)
    if len(set(ax)) != len(ax):
        raise FrontendError(f"axes {axes} repeat an axis")
    if isinstance(t, TensorType) and not t.static:  # symbolic dims: insert the axes one by one
        y = x
        for v in ax:
            y = op.expand_dims(y, axis=v)
        return y
    out = list(shape_of(x))
    for v in ax:
        out.insert(v, 1)
    return _reshape(x, out)


@_reg("Squeeze")
def _squeeze(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    axes = _axes_spec(cx, a, 13)
    if isinstance(axes, Expr):
        return dyn.squeeze(x, axes)
    return op.squeeze(x, axis=axes if axes else None)


@_reg("Gather")
def _gather(cx: Ctx, a: _Attrs) -> Expr:
    data = cx.x(0)
    ax = _axis(a.get("axis", 0), len(dims_of(data)))
    dim: Any = dims_of(data)[ax]
    idx = cx.x(1)
    if type(idx) is Constant and (type(dim) is int or not (idx.data < 0).any()):
        arr = idx.data.astype(np.int64)
        idx = Constant(np.where(arr < 0, arr + dim, arr) if type(dim) is int else arr)
    else:
        if type(dim) is not int:  # the axis length at run time
            dim = op.cast(op.take(op.shape_of(data), Constant(np.asarray(ax, np.int64)), axis=0),
                          dtype=dtype_of(idx))
            return op.take(data, op.where(op.less(idx, scalar(0, idx)), op.add(idx, dim), idx), axis=ax)
        idx = op.where(op.less(idx, scalar(0, idx)), op.add(idx, scalar(dim, idx)), idx)
    return op.take(data, idx, axis=ax)


@_reg("Split")
def _split(cx: Ctx, a: _Attrs) -> list[Expr]:
    x = cx.x(0)
    t = x.checked_type
    rank = t.ndim  # type: ignore[attr-defined]
    ax = _axis(a.get("axis", 0), rank)
    n_out = len(cx.node.output)
    num_outputs = a.get("num_outputs") if cx.opset >= 18 else None
    sizes: tuple[int, ...] | None
    if cx.opset >= 13 or (cx.opset < 2 and cx.has(1)):
        arr = cx.maybe_const(1)
        if arr is None and cx.has(1):
            e = _int64(cx.x(1))
            n = _static_len(e, "split")
            if n != n_out:
                raise FrontendError(f"split holds {n} sizes for {n_out} outputs")
            parts = dyn.split(x, e, axis=ax)
            return [TupleGetItem(parts, i) for i in range(n)]
        sizes = tuple(int(v) for v in arr.reshape(-1)) if arr is not None else None
    else:
        sizes = a.ints("split")
    dim = t.shape[ax]  # type: ignore[attr-defined]
    if sizes is None:
        n = int(num_outputs) if num_outputs is not None else n_out
        if type(dim) is not int:  # equal sections of a symbolic dimension
            parts = op.split(x, indices_or_sections=(n,), axis=ax, by_sections=True)
            return [TupleGetItem(parts, i) for i in range(n)]
        chunk = -(-dim // n)
        sizes = tuple(max(0, min(chunk, dim - i * chunk)) for i in range(n))
    if type(dim) is int and sum(sizes) != dim:
        raise FrontendError(f"split sizes {sizes} do not add up to dimension {dim}")
    cuts = tuple(int(v) for v in np.cumsum(sizes)[:-1])
    parts = op.split(x, indices_or_sections=cuts, axis=ax, by_sections=False)
    return [TupleGetItem(parts, i) for i in range(len(sizes))]


@_reg("Slice")
def _slice(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    t = x.checked_type
    rank = t.ndim  # type: ignore[attr-defined]
    if cx.opset < 10:
        starts, ends, axes, steps = a.ints("starts"), a.ints("ends"), a.ints("axes"), None
    else:
        vals = [cx.maybe_const(i) for i in (1, 2, 3, 4)]
        axes_v = vals[2]
        axes = tuple(int(v) for v in axes_v.reshape(-1)) if axes_v is not None else None
        if any(v is None and cx.has(i) for v, i in zip(vals, (1, 2, 3, 4))):
            return _dyn_slice(cx, x, rank, axes)
        starts = tuple(int(v) for v in vals[0].reshape(-1))  # type: ignore[union-attr]
        ends = tuple(int(v) for v in vals[1].reshape(-1))  # type: ignore[union-attr]
        steps = tuple(int(v) for v in vals[3].reshape(-1)) if vals[3] is not None else None
    s = dims_of(x)
    axes = axes if axes is not None else tuple(range(len(starts)))
    steps = steps if steps is not None else (1,) * len(starts)
    begin, end, nax = [], [], []
    for b, e, ax, st in zip(starts, ends, axes, steps):
        ax = _axis(ax, len(s))
        if st == 0:
            raise FrontendError("Slice step cannot be 0")
        if type(s[ax]) is not int:  # strided_slice clamps as Python (and ONNX) do
            begin.append(min(max(b, -_INT64_MAX), _INT64_MAX))
            end.append(min(max(e, -_INT64_MAX), _INT64_MAX))
            nax.append(ax)
            continue
        lo, hi, _ = slice(b, e, st).indices(s[ax])
        begin.append(lo)
        end.append(hi if hi >= 0 else -s[ax] - 1)
        nax.append(ax)
    return op.strided_slice(x, begin=tuple(begin), end=tuple(end), axes=tuple(nax),
                            strides=tuple(steps))


_INT64_MAX = np.iinfo(np.int64).max


def _dyn_slice(cx: Ctx, x: Expr, rank: int, axes: tuple[int, ...] | None) -> Expr:
    """Slice with run-time starts/ends/steps: ``dyn.strided_slice`` over the leading axes up to
    the last sliced one; the axes not sliced take the whole range (a gather places each bound)."""
    starts = _int64(cx.x(1))
    n = _static_len(starts, "starts")
    ends = _int64(cx.x(2))
    steps = _int64(cx.x(4)) if cx.has(4) else Constant(np.ones((n,), np.int64))
    if axes is None and cx.has(3):  # run-time axes: every axis gets its bounds by a scatter
        ax_e = _int64(cx.x(3))
        return dyn.strided_slice(x, _scatter_axes(ax_e, starts, rank, 0),
                                 _scatter_axes(ax_e, ends, rank, _INT64_MAX),
                                 _scatter_axes(ax_e, steps, rank, 1))
    axes = axes if axes is not None else tuple(range(n))
    if len(axes) != n:
        raise FrontendError(f"{n} starts for axes {axes}")
    ax = [_axis(v, rank) for v in axes]
    if len(set(ax)) != n:
        raise FrontendError(f"axes {axes} repeat an axis")
    m = max(ax) + 1 if ax else 0
    where = [ax.index(j) if j in ax else n for j in range(m)]  # n: the fill value appended below

    def place(v: Expr, fill: int) -> Expr:
        if where == list(range(n)):
            return v
        full = op.concatenate([v, Constant(np.asarray([fill], np.int64))], axis=0)
        return op.take(full, Constant(np.asarray(where, np.int64)), axis=0)

    return dyn.strided_slice(x, place(starts, 0), place(ends, _INT64_MAX), place(steps, 1))


def _scatter_axes(axes: Expr, values: Expr, rank: int, fill: int) -> Expr:
    """The (rank,) int64 vector holding ``values[k]`` at axis ``axes[k]`` (run-time axes,
    negative ones counted from the end) and ``fill`` elsewhere: a one-hot match matrix, a
    masked sum, and a select."""
    ax = op.where(op.less(axes, scalar(0, axes)), op.add(axes, scalar(rank, axes)), axes)
    hit = op.equal(op.reshape(ax, newshape=(-1, 1)), Constant(np.arange(rank, dtype=np.int64)[None]))
    zero = Constant(np.zeros((), np.int64))
    val = op.sum(op.where(hit, op.reshape(values, newshape=(-1, 1)), zero), axis=(0,))
    present = op.sum(op.cast(hit, dtype="int64"), axis=(0,))
    return op.where(op.greater(present, zero), val, Constant(np.full((rank,), fill, np.int64)))


def _broadcast_to(x: Expr, target: Sequence[int]) -> Expr:
    """ONNX's Expand to a static ``target``: broadcasting both ways (a 1 in ``target`` keeps
    the data's dimension)."""
    t = x.checked_type
    if isinstance(t, TensorType) and not t.static:
        return dyn.expand(x, Constant(np.asarray(target, np.int64)))
    s = shape_of(x)
    try:
        out = tuple(int(d) for d in np.broadcast_shapes(tuple(s), tuple(target)))
    except ValueError:
        raise FrontendError(f"cannot broadcast shape {tuple(s)} to {tuple(target)}") from None
    if out == tuple(s):
        return x
    return shape_ops.broadcast_to(x, shape=out)


@_reg("Expand")
def _expand(cx: Ctx, a: _Attrs) -> Expr:
    arr = cx.maybe_const(1)
    if arr is None:
        return dyn.expand(cx.x(0), _int64(cx.x(1)))
    return _broadcast_to(cx.x(0), tuple(int(v) for v in arr.reshape(-1)))


@_reg("Tile")
def _tile(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    rank = x.checked_type.ndim  # type: ignore[attr-defined]
    arr = cx.maybe_const(1)
    if arr is None:
        e = _int64(cx.x(1))
        if _static_len(e, "repeats") != rank:
            raise FrontendError(f"repeats {e.checked_type} do not match rank {rank}")
        return dyn.tile(x, e)
    reps = tuple(int(v) for v in arr.reshape(-1))
    if len(reps) != rank:
        raise FrontendError(f"repeats {reps} do not match rank {rank}")
    if any(r < 0 for r in reps):
        raise FrontendError(f"negative repeats {reps}")
    return x if all(r == 1 for r in reps) else shape_ops.tile(x, reps=reps)


@_reg("Pad")
def _pad(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    r = x.checked_type.ndim  # type: ignore[attr-defined]
    mode = a.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise FrontendError(f"pad mode {mode!r} is not supported")
    axes: Sequence[int] = range(r)
    if cx.opset < 11:
        pads = a.ints("pads") if cx.opset >= 2 else a.ints("paddings")
        value: Any = float(a.get("value", 0.0))
    else:
        if cx.has(3):
            ax_v = cx.maybe_const(3)
            if ax_v is None:
                if mode == "wrap":
                    raise FrontendError("wrap padding with run-time axes is not supported")
                return _dyn_pad(cx, x, r, None, mode)
            axes = [_axis(int(v), r) for v in ax_v.reshape(-1)]
            if len(set(axes)) != len(axes):
                raise FrontendError(f"Pad axes {tuple(axes)} repeat an axis")
        pv = cx.maybe_const(1)
        vv = cx.maybe_const(2) if cx.has(2) else np.zeros((), dtype_of(x))
        if pv is None or vv is None:
            if mode == "wrap":
                raise FrontendError("wrap padding with run-time pads is not supported")
            return _dyn_pad(cx, x, r, list(axes), mode)
        pads = tuple(int(v) for v in pv.reshape(-1))
        value = vv.reshape(-1)[0] if vv.size else 0
    n = len(axes)
    if pads is None or len(pads) != 2 * n:
        raise FrontendError(f"pads {pads} must hold 2 x {n} ints")
    if any(p < 0 for p in pads):
        raise FrontendError(f"negative pads {pads} are not supported")
    full = [0] * (2 * r)
    for i, ax in enumerate(axes):
        full[ax], full[ax + r] = pads[i], pads[i + n]
    if mode == "wrap":  # a gather per padded axis of the indices taken modulo its length
        y = x
        for ax in range(r):
            b, e = full[ax], full[ax + r]
            d = dims_of(x)[ax]
            if b or e:
                if type(d) is not int or d == 0:
                    raise FrontendError(f"wrap padding of a dimension {d} is not supported")
                y = op.take(y, Constant(np.arange(-b, d + e, dtype=np.int64) % d), axis=ax)
        return y
    flat = tuple(v for i in range(r) for v in (full[i], full[i + r]))
    return nn.pad(x, flat, scalar(value, x), pad_mode=mode)


def _dyn_pad(cx: Ctx, x: Expr, r: int, axes: list[int] | None, mode: str) -> Expr:
    """Pad with run-time pads, value or axes: ``dyn.nn.pad`` with a (rank, 2) pad_width."""
    pads = _int64(cx.x(1))
    n = len(axes) if axes is not None else _static_len(cx.x(3), "axes")
    if _static_len(pads, "pads") != 2 * n:
        raise FrontendError(f"pads {pads.checked_type} must hold 2 x {n} ints")
    pw: Expr = op.transpose(op.reshape(pads, newshape=(2, n)), axes=(1, 0))
    if axes is None:  # run-time axes
        ax_e = _int64(cx.x(3))
        halves = [op.strided_slice(pads, begin=(i * n,), end=((i + 1) * n,), axes=(0,)) for i in (0, 1)]
        cols = [_scatter_axes(ax_e, h, r, 0) for h in halves]
        pw = op.concatenate([op.reshape(c, newshape=(r, 1)) for c in cols], axis=1)
    elif axes != list(range(r)):
        where = [axes.index(j) if j in axes else n for j in range(r)]
        pw = op.concatenate([pw, Constant(np.zeros((1, 2), np.int64))], axis=0)
        pw = op.take(pw, Constant(np.asarray(where, np.int64)), axis=0)
    value = _as_scalar(cx.x(2), x) if cx.has(2) else scalar(0, x)
    return dyn.pad(x, pw, value, pad_mode=mode)


# -- reductions ------------------------------------------------------------------------------------

_REDUCE: dict[str, tuple[Callable[..., Expr], Callable[..., Expr]]] = {
    "sum": (op.sum, dyn.sum), "mean": (op.mean, dyn.mean), "max": (op.max, dyn.max),
    "min": (op.min, dyn.min), "prod": (op.prod, dyn.prod)}


class _Reduce:
    """The axes and flags of one ONNX Reduce* node: ``keepdims`` (default 1),
    ``noop_with_empty_axes`` (default 0) and the axes (attribute, or input 1 from opset 13 for
    ReduceSum and 18 for the others; a run-time input builds the ``dyn.*`` reductions)."""

    def __init__(self, cx: Ctx, a: _Attrs) -> None:
        self.keepdims = bool(a.get("keepdims", 1))
        noop = bool(a.get("noop_with_empty_axes", 0))
        axes = _axes_spec(cx, a, 13 if cx.node.op_type == "ReduceSum" else 18)
        empty = not isinstance(axes, Expr) and not axes
        self.noop = noop and empty  # empty axes: reduce nothing with noop_with_empty_axes=1, else all
        self.axes: tuple[int, ...] | Expr | None = None if empty else axes

    def __call__(self, kind: str, x: Expr, keepdims: bool | None = None) -> Expr:
        """``kind`` ("sum", "mean", "max", "min", "prod") of ``x`` over the node's axes."""
        if self.noop:
            return x
        keep = self.keepdims if keepdims is None else keepdims
        static, dynamic = _REDUCE[kind]
        if isinstance(self.axes, Expr):
            return dynamic(x, self.axes, keepdims=keep)
        return static(x, axis=self.axes, keepdims=keep)


@_reg("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")
def _reduce(cx: Ctx, a: _Attrs) -> Expr:
    return _Reduce(cx, a)(cx.node.op_type[6:].lower(), cx.x(0))


def _to_float(x: Expr) -> tuple[Expr, str]:
    dt = dtype_of(x)
    return (x, dt) if dtype_kind(dt) in "fc" else (op.cast(x, dtype="float64"), dt)


def _from_float(y: Expr, dt: str) -> Expr:
    return y if dtype_of(y) == dt else op.cast(y, dtype=dt)


@_reg("ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")
def _reduce_composite(cx: Ctx, a: _Attrs) -> Expr:
    """The composite reductions, as ONNX defines them (``noop_with_empty_axes=1`` with empty
    axes applies the elementwise part only): L1 = sum |x|, L2 = sqrt(sum x^2), SumSquare =
    sum x^2, LogSum = log(sum x), LogSumExp = log(sum exp(x - max)) + max (stable)."""
    red = _Reduce(cx, a)
    x = cx.x(0)
    kind = cx.node.op_type
    if kind == "ReduceL1":
        return red("sum", op.abs(x))
    if kind == "ReduceSumSquare":
        return red("sum", op.multiply(x, x))
    if kind == "ReduceL2":
        xf, dt = _to_float(x)
        return _from_float(op.sqrt(red("sum", op.multiply(xf, xf))), dt)
    if kind == "ReduceLogSum":
        return op.log(red("sum", x))
    if red.noop:
        return x
    m = red("max", x, keepdims=True)
    y = op.log(red("sum", op.exp(op.subtract(x, m))))
    return op.add(y, red("max", x))


@_reg("ArgMax", "ArgMin")
def _argmax(cx: Ctx, a: _Attrs) -> Expr:
    """ArgMax/ArgMin; ``select_last_index=1`` takes the index in the reversed axis."""
    x = cx.x(0)
    t = x.checked_type
    ax = _axis(a.get("axis", 0), t.ndim)  # type: ignore[attr-defined]
    keep = bool(a.get("keepdims", 1))
    fn = op.argmax if cx.node.op_type == "ArgMax" else op.argmin
    if not a.get("select_last_index", 0):
        return fn(x, axis=ax, keepdims=keep)
    n = t.shape[ax]  # type: ignore[attr-defined]
    if type(n) is not int:
        raise FrontendError(f"select_last_index=1 needs a static axis length, got {t}")
    rev = op.strided_slice(x, begin=(-1,), end=(-n - 1,), axes=(ax,), strides=(-1,))
    return op.subtract(Constant(np.asarray(n - 1, np.int64)), fn(rev, axis=ax, keepdims=keep))


@_reg("Softmax", "LogSoftmax")
def _softmax(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    s = dims_of(x)
    fn = nn.softmax if cx.node.op_type == "Softmax" else nn.log_softmax
    ax = _axis(a.get("axis", 1 if cx.opset < 13 else -1), len(s))
    if cx.opset >= 13 or ax == len(s) - 1:
        return fn(x, axis=ax)
    # opset < 13: the input is coerced to 2-D at ``axis`` and normalized over the second dimension.
    y = fn(_flatten2d(x, ax), axis=1)
    if all(type(d) is int for d in s):
        return _reshape(y, s)
    return dyn.reshape(y, op.shape_of(x))


@_reg("Dropout")
def _dropout(cx: Ctx, a: _Attrs) -> list[Expr]:
    """Dropout at inference: the identity, with an all-true mask.  Training mode (a constant
    ``training_mode`` input) is accepted only with ratio 0, where it is the identity too."""
    a.ignore("is_test", "consumed_inputs", "seed")
    x = cx.x(0)
    ratio: Any = a.get("ratio", 0.5)
    if cx.opset >= 12:
        r = cx.maybe_const(1)
        ratio = float(r.reshape(-1)[0]) if r is not None else (0.5 if not cx.has(1) else None)
        if cx.has(2):
            tm = cx.maybe_const(2)
            if tm is None:
                raise FrontendError("Dropout with a run-time training_mode is not supported")
            if bool(tm.reshape(-1)[0]) and ratio != 0.0:
                raise FrontendError("Dropout in training mode (ratio != 0) is not supported")
        if r is None and cx.has(1):
            cx.x(1)  # the run-time ratio does not matter at inference
    y = nn.dropout(x, rate=float(ratio)) if ratio is not None and 0.0 <= ratio < 1.0 else x
    return [y, op.cast(op.ones_like(x), dtype="bool")]


@_reg("Range")
def _range(cx: Ctx, a: _Attrs) -> Expr:
    """Range(start, limit, delta): a constant when the three are known, else ``dyn.arange``."""
    vals = [cx.maybe_const(i) for i in range(3)]
    xs = [cx.x(i) for i in range(3)]
    dt = dtype_of(xs[0])
    # stash_type (opset 27): float16/bfloat16 computed in float32 when 1 (the default), else in
    # the input type; other types are computed in their own type either way
    stash = int(a.get("stash_type", 1))
    if all(v is not None for v in vals):
        start, limit, delta = (np.asarray(v).reshape(()) for v in vals)
        if delta == 0:
            raise FrontendError("Range delta is 0")
        n = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
        ct = np.float32 if dtype_kind(dt) == "f" and np.dtype(dt).itemsize < 4 and stash == 1 else dt
        i = np.arange(n).astype(ct)
        return Constant((start.astype(ct) + i * delta.astype(ct)).astype(dt))
    xs = [op.reshape(e, newshape=()) if e.checked_type.ndim else e for e in xs]  # type: ignore[attr-defined]
    return dyn.arange(*xs, dtype=dt)


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
        n = dims_of(y)[1]
        y = nn.bias_add(y, c, axis=1) if dims_of(c) == (n,) else op.add(y, c)
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
        if type(n) is not int:
            raise FrontendError(f"auto_pad {auto} over a symbolic spatial dimension {n} is not supported")
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
        x = nn.pad(x, ((0, 0), (0, 0), (b[0], e[0]), (0, 0), (0, 0)), scalar(0, x))
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
    xs, ws = dims_of(x), shape_of(w)
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
        x4 = _reshape_like(x, (xs[0], xs[1], 1, xs[2]))
        w4 = _reshape(w, (ws[0], ws[1], 1, ws[2]))
        y4 = _conv2d(x4, w4, (1, s[0]), (0, b[0]), (0, e[0]), (1, d[0]), g)
        y = _reshape_like(y4, (*dims_of(y4)[:2], dims_of(y4)[3]))
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
    xs = dims_of(x)
    nd = len(xs) - 2
    if nd == 2:
        return _pool2d(kind, x, k, s, b, e, d, ceil, cip)
    if nd == 1:
        y = _pool2d(kind, _reshape_like(x, (xs[0], xs[1], 1, xs[2])), (1, k[0]), (1, s[0]), (0, b[0]),
                    (0, e[0]), (1, d[0]), ceil, cip)
        return _reshape_like(y, (xs[0], xs[1], dims_of(y)[3]))
    if nd == 3:
        n, c, depth, h, w = shape_of(x)
        y = _pool2d(kind, _reshape(x, (n, c * depth, h, w)), k[1:], s[1:], b[1:], e[1:], d[1:], ceil, cip)
        oh, ow = shape_of(y)[2:]
        y = _pool2d(kind, _reshape(y, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1), (b[0], 0), (e[0], 0),
                    (d[0], 1), ceil, cip)
        return _reshape(y, (n, c, shape_of(y)[2], oh, ow))
    raise FrontendError(f"pooling of rank-{len(xs)} data is not supported")


def pool_window(a: _Attrs, xs: Sequence[Any]) -> tuple[Any, Any, Any, bool, Any, Any]:
    """A pooling node's window over data of shape ``xs``: (kernel, strides, dilations, ceil_mode,
    pads before, pads after), the attributes read with their ONNX defaults."""
    nd = len(xs) - 2
    k = a.ints("kernel_shape")
    if k is None or len(k) != nd:
        raise FrontendError(f"kernel_shape {k} does not match data of shape {xs}")
    s = a.ints("strides", (1,) * nd)
    d = a.ints("dilations", (1,) * nd)
    ceil = bool(a.get("ceil_mode", 0))
    b, e = _pads(a, xs[2:], k, s, d)
    return k, s, d, ceil, b, e


@_reg("MaxPool", "AveragePool")
def _pool(cx: Ctx, a: _Attrs) -> Expr | list[Expr]:
    kind = "max" if cx.node.op_type == "MaxPool" else "avg"
    x = cx.x(0)
    xs = dims_of(x)
    nd = len(xs) - 2
    k, s, d, ceil, b, e = pool_window(a, xs)
    cip = bool(a.get("count_include_pad", 0))
    order = int(a.get("storage_order", 0))  # only the Indices output depends on it
    y = _pool_nd(kind, x, k, s, b, e, d, ceil, cip)
    if len(cx.node.output) > 1 and cx.node.output[1]:
        if nd != 2 or not all(type(v) is int for v in xs):
            raise FrontendError("MaxPool's Indices output is supported for static 2-D data only")
        return [y, _maxpool_indices(x, y, k, s, b, d, order)]
    return y


def _maxpool_indices(x: Expr, y: Expr, k: Sequence[int], s: Sequence[int], b: Sequence[int],
                     d: Sequence[int], order: int) -> Expr:
    """MaxPool's Indices: for each window, the flat index into ``x`` (``storage_order`` 0: row
    major, 1: column major within each (n, c) plane) of its first maximum.  The kh*kw strided
    views of the -inf-padded data are stacked and argmax picks the kernel offset."""
    n, c, h, w = shape_of(x)
    oh, ow = shape_of(y)[2:]
    need = [(o - 1) * ss + (kk - 1) * dd + 1 for o, ss, kk, dd in zip((oh, ow), s, k, d)]
    ends = [max(0, nn_ - bb - size) for nn_, bb, size in zip(need, b, (h, w))]
    low = dtype_range(dtype_of(x))[0]
    xp = nn.pad(x, ((0, 0), (0, 0), (b[0], ends[0]), (b[1], ends[1])), scalar(low, x))
    views = []
    for i in range(k[0]):
        for j in range(k[1]):
            v = op.strided_slice(xp, begin=(i * d[0], j * d[1]),
                                 end=(i * d[0] + (oh - 1) * s[0] + 1, j * d[1] + (ow - 1) * s[1] + 1),
                                 axes=(2, 3), strides=tuple(s))
            views.append(op.expand_dims(v, axis=2))
    kidx = op.argmax(op.concatenate(views, axis=2), axis=2)  # (n, c, oh, ow)
    ki = op.take(Constant(np.repeat(np.arange(k[0]) * d[0], k[1]).astype(np.int64)), kidx, axis=0)
    kj = op.take(Constant(np.tile(np.arange(k[1]) * d[1], k[0]).astype(np.int64)), kidx, axis=0)
    rows = op.add(ki, Constant((np.arange(oh) * s[0] - b[0]).astype(np.int64).reshape(oh, 1)))
    cols = op.add(kj, Constant((np.arange(ow) * s[1] - b[1]).astype(np.int64)))
    inner = (op.add(op.multiply(rows, scalar(w, rows)), cols) if order == 0
             else op.add(rows, op.multiply(cols, scalar(h, cols))))
    plane = Constant((np.arange(n * c, dtype=np.int64) * h * w).reshape(n, c, 1, 1))
    return op.add(inner, plane)


@_reg("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    r = len(dims_of(x))
    avg = cx.node.op_type == "GlobalAveragePool"
    if r == 4:
        return nn.global_avg_pool2d(x) if avg else nn.global_max_pool2d(x)
    fn = op.mean if avg else op.max
    return fn(x, axis=tuple(range(2, r)), keepdims=True)


# -- normalization ---------------------------------------------------------------------------------------


@_reg("BatchNormalization")
def _batch_norm(cx: Ctx, a: _Attrs) -> list[Expr]:
    """BatchNormalization; ``training_mode=1`` (opset 14+) normalizes with the batch's mean and
    (population) variance and also returns the running statistics updated with ``momentum``."""
    a.ignore("is_test", "consumed_inputs")
    if not a.get("spatial", 1):
        raise FrontendError("spatial=0 is not supported")
    x = cx.x(0)
    eps = float(a.get("epsilon", 1e-5))
    momentum = float(a.get("momentum", 0.9))
    if a.get("training_mode", 0):
        r = len(dims_of(x))
        axes = (0, *range(2, r))
        mean = op.mean(x, axis=axes)
        cen = op.subtract(x, op.mean(x, axis=axes, keepdims=True))
        var = op.mean(op.multiply(cen, cen), axis=axes)
        y = TupleGetItem(nn.batch_norm(x, cx.x(1), cx.x(2), mean, var, axis=1, epsilon=eps), 0)
        m, one_m = scalar(momentum, x), scalar(1 - momentum, x)
        run = [op.add(op.multiply(cx.x(i), m), op.multiply(v, one_m)) for i, v in ((3, mean), (4, var))]
        return [y, *run]
    if len([o for o in cx.node.output if o]) > 1:
        raise FrontendError("BatchNormalization in training mode (several outputs) is not supported")
    bn = nn.batch_norm(x, cx.x(1), cx.x(2), cx.x(3), cx.x(4), axis=1, epsilon=eps)
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
    """Insert ``s - 1`` zeros between neighbouring pixels of N, C, spatial... data
    (``x[.., ::s0, ::s1, ...]`` is ``x``)."""
    n, c, *sp = shape_of(x)
    if all(v == 1 for v in s):
        return x
    inter = (n, c, *(v for d in sp for v in (d, 1)))
    pw = (0, 0, 0, 0, *(v for ss in s for v in (0, 0, 0, ss - 1)))
    y: Expr = nn.pad(_reshape(x, inter), pw, scalar(0, x))
    y = _reshape(y, (n, c, *(d * ss for d, ss in zip(sp, s))))
    return op.strided_slice(y, begin=(0,) * len(sp), end=tuple((d - 1) * ss + 1 for d, ss in zip(sp, s)),
                            axes=tuple(range(2, 2 + len(sp))))


@_reg("ConvTranspose")
def _conv_transpose(cx: Ctx, a: _Attrs) -> Expr:
    """Transposed convolution (1-D, 2-D, 3-D): zero-insertion, padding, then a stride-1
    convolution with the weight flipped spatially and its in/out channels swapped within each
    group (1-D is lifted to 2-D)."""
    x, w = cx.x(0), cx.x(1)
    xs, ws = shape_of(x), shape_of(w)
    nd = len(xs) - 2
    if nd not in (1, 2, 3) or len(ws) != nd + 2:
        raise FrontendError(f"ConvTranspose of data {xs} and weight {ws}: only 1-D, 2-D and 3-D "
                            "are supported")
    if nd == 1:
        x, w = _reshape(x, (xs[0], xs[1], 1, xs[2])), _reshape(w, (ws[0], ws[1], 1, ws[2]))
    sd = max(nd, 2)  # spatial axes after lifting
    k = shape_of(w)[2:]
    ks = a.ints("kernel_shape")
    if ks is not None and tuple(ks) != tuple(ws[2:]):
        raise FrontendError(f"kernel_shape {ks} does not match the weight shape {ws}")

    def lift(v: Sequence[int], fill: int) -> tuple[int, ...]:
        if len(v) != nd:
            raise FrontendError(f"{tuple(v)} must hold {nd} ints")
        return (fill, *v) if nd == 1 else tuple(v)

    s = lift(a.ints("strides", (1,) * nd), 1)
    d = lift(a.ints("dilations", (1,) * nd), 1)
    opad = lift(a.ints("output_padding", (0,) * nd), 0)
    g = int(a.get("group", 1))
    spatial = shape_of(x)[2:]
    full = [(kk - 1) * dd + 1 for kk, dd in zip(k, d)]
    out_shape = a.ints("output_shape")
    auto = a.get("auto_pad", "NOTSET")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        a.ignore("pads")
        same = tuple(i * ss for i, ss in zip(spatial, s))
        target = lift(out_shape[-nd:], 1) if out_shape is not None else same
        # a negative total (output_shape beyond the full result) extends the end with zeros (ONNX)
        total = [ss * (i - 1) + op_ + f - t for i, ss, op_, f, t in zip(spatial, s, opad, full, target)]
        upper = auto == "SAME_UPPER"  # otherwise the start gets the larger half (ONNX spec)
        b = [t // 2 if upper else t - t // 2 for t in total]
        e = [t - bb for t, bb in zip(total, b)]
    elif auto == "VALID":
        b, e = [0] * sd, [0] * sd
    else:
        pads = a.ints("pads", (0,) * (2 * nd))
        if len(pads) != 2 * nd:
            raise FrontendError(f"pads {pads} must hold {2 * nd} ints")
        b, e = list(lift(pads[:nd], 0)), list(lift(pads[nd:], 0))
    y = _dilate_zeros(x, s)
    lo = [f - 1 - bb for f, bb in zip(full, b)]
    hi = [f - 1 - ee + op_ for f, ee, op_ in zip(full, e, opad)]
    y = nn.pad(y, ((0, 0), (0, 0), *((max(l_, 0), max(h_, 0)) for l_, h_ in zip(lo, hi))), scalar(0, y))
    if min(*lo, *hi) < 0:
        dims = shape_of(y)[2:]
        y = op.strided_slice(y, begin=tuple(max(-l_, 0) for l_ in lo),
                             end=tuple(dd - max(-h_, 0) for dd, h_ in zip(dims, hi)),
                             axes=tuple(range(2, 2 + sd)))
    cin, cog, *kk = shape_of(w)
    wt: Expr = op.transpose(_reshape(w, (g, cin // g, cog, *kk)), axes=(0, 2, 1, *range(3, 3 + sd)))
    wt = _reshape(wt, (g * cog, cin // g, *kk))
    wt = op.strided_slice(wt, begin=(-1,) * sd, end=tuple(-v - 1 for v in kk), axes=tuple(range(2, 2 + sd)),
                          strides=(-1,) * sd)
    if sd == 2:
        y = nn.conv2d(y, wt, dilation=tuple(d), groups=g)
    else:
        y = _conv3d(y, wt, (1, 1, 1), (0, 0, 0), (0, 0, 0), d, g)
    if cx.has(2):
        y = nn.bias_add(y, cx.x(2), axis=1)
    if nd == 1:
        y = _reshape(y, (*shape_of(y)[:2], shape_of(y)[3]))
    return y


# -- symbolic shape values ---------------------------------------------------------------------------
# ``Shape`` of a tensor with symbolic dimensions is computed at run time, but its value is known
# symbolically; these rules carry such values through the integer arithmetic exporters write
# around it (gathers, slices, concatenations, casts, + - * /), so that a ``Reshape`` to a shape
# built from them stays a static ``reshape`` (a symbolic entry that is the input's dimension at
# the same position is a 0, one other is the -1) and the dimensions stay symbols.

ShapeValue = tuple["bool | None", tuple[Any, ...]]  # None: 0-D or 1-D as the result's type says


def _shape_rule(*names: str) -> Callable[[Callable[[Ctx, _Attrs], ShapeValue | None]],
                                          Callable[[Ctx, _Attrs], ShapeValue | None]]:
    def deco(fn: Callable[[Ctx, _Attrs], ShapeValue | None]) -> Callable[[Ctx, _Attrs], ShapeValue | None]:
        for n in names:
            SHAPE_RULES[n] = fn
        return fn
    return deco


@_shape_rule("Shape")
def _shape_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    s = dims_of(cx.x(0))
    return False, s[slice(a.get("start", 0), a.get("end", None))]


@_shape_rule("Cast", "Identity")
def _same_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    return cx.shape_value(0)


@_shape_rule("Gather")
def _gather_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    data, idx = cx.shape_value(0), cx.maybe_const(1)
    if data is None or data[0] or idx is None or idx.ndim > 1:
        return None
    vals = data[1]
    if any(not -len(vals) <= int(i) < len(vals) for i in idx.reshape(-1)):
        return None
    return idx.ndim == 0, tuple(vals[int(i)] for i in idx.reshape(-1))


@_shape_rule("Unsqueeze", "Squeeze", "Reshape", "Flatten")
def _reshaped_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    """The same entries in another shape (0-D or 1-D: the importer takes which from the result)."""
    v = cx.shape_value(0)
    return None if v is None else (None, v[1])


@_shape_rule("Concat")
def _concat_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    vals: list[Any] = []
    for i in range(cx.n_inputs):
        if not cx.has(i):
            continue
        v = cx.shape_value(i)
        if v is None or v[0]:
            return None
        vals.extend(v[1])
    return False, tuple(vals)


@_shape_rule("Slice")
def _slice_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    v = cx.shape_value(0)
    if v is None or v[0] or cx.opset < 10:
        return None
    b, e = cx.maybe_const(1), cx.maybe_const(2)
    st = cx.maybe_const(4) if cx.has(4) else np.ones((1,), np.int64)
    if b is None or e is None or st is None or b.size != 1:
        return None
    return False, v[1][int(b.reshape(-1)[0]):int(e.reshape(-1)[0]):int(st.reshape(-1)[0])]


_DIM_ARITH = {"Add": dim_add, "Sub": dim_sub, "Mul": dim_mul, "Div": dim_floordiv}


@_shape_rule(*_DIM_ARITH)
def _arith_value(cx: Ctx, a: _Attrs) -> ShapeValue | None:
    x, y = cx.shape_value(0), cx.shape_value(1)
    if x is None or y is None:
        return None
    if len(x[1]) == 1 and len(y[1]) > 1:
        x = (x[0], x[1] * len(y[1]))
    if len(y[1]) == 1 and len(x[1]) > 1:
        y = (y[0], y[1] * len(x[1]))
    if len(x[1]) != len(y[1]):
        return None
    fn = _DIM_ARITH[cx.node.op_type]
    if fn is dim_floordiv and any(type(d) is not int or d <= 0 for d in y[1]):
        return None  # dimension division by a positive constant only
    return x[0] and y[0], tuple(fn(p, q) for p, q in zip(x[1], y[1]))


def _newshape_of(x: Expr, target: Sequence[Any], allowzero: bool) -> tuple[int, ...] | None:
    """``target`` (ints and dimensions) as a reshape's newshape for ``x``: a symbolic entry equal
    to the input's dimension at its position is 0, at most one other is -1; None if impossible."""
    src = dims_of(x)
    ns: list[int] = []
    for i, d in enumerate(target):
        if type(d) is int:
            if d == 0 and allowzero:
                return None
            ns.append(d)  # ONNX's 0 (allowzero=0) copies the input's dimension, as reshape's does
        elif i < len(src) and (src[i] is d or dims_equal(src[i], d) is True):
            ns.append(0)
        else:
            ns.append(-1)
    return tuple(ns) if ns.count(-1) <= 1 else None
