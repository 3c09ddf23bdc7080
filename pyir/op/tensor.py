"""Tensor operators: elementwise math, broadcasting arithmetic, comparisons,
layout transforms, reductions and matmul.

The float math functions (``exp``, ``log``, ``sqrt``, ``rsqrt``, ``tanh``, ``sigmoid``, ``erf``,
``floor``, ``ceil`` here; the trigonometric ones and ``round`` in :mod:`pyir.op.math`) type an
integer input as TVM does, with the input's type (Relay's ``IdentityRel``: ``log`` of an
``int32`` type-checks, TVM fails only when it compiles it).  Evaluating one on integers, as TVM's
TOPI would (it neither computes in float nor casts: it emits ``tir.log`` of an ``int32``, which
no target lowers), is an :class:`~pyir.errors.EvaluationError`; ``floor``, ``ceil`` and
``round`` of an integer tensor are the tensor itself (TIR's rule).  Bool is a type error."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError, EvaluationError, PyIRError, WellFormedError
from ..ir.dims import Any as ANY_DIM
from ..ir.dims import (
    DimLike,
    dim_add,
    dim_bounds,
    dim_floordiv,
    dim_mod,
    dim_prod,
    dim_str,
    dim_sub,
    dim_sum,
    dims_equal,
)
from ..ir.expr import Expr as _Expr
from ..ir.expr import Tuple as _TupleExpr
from ..ir.node import MAX_INDEX, Attrs
from ..ir.types import TensorType, Type, dtype_kind, dtype_range
from ._rel import broadcast_shapes, fail, normalize_axis, same_dtype, shape_str, tensor, tuple_of, unify_dims
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from collections.abc import Sequence

    from ..ir.expr import Call, Expr
    from . import _signatures as _sig
    from ._signatures import ExprLike

__all__ = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    "negative", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "erf", "floor", "ceil",
    "clip", "cast", "greater", "less", "equal", "not_equal", "greater_equal", "less_equal",
    "logical_and", "logical_or", "logical_not", "where",
    "reshape", "transpose", "concatenate", "expand_dims", "squeeze",
    "sum", "mean", "max", "min", "prod", "argmax", "argmin", "matmul", "split", "strided_slice", "take",
    "zeros_like", "ones_like", "copy",
]

_FLOAT_KINDS = "fc"


# -- elementwise unary ----------------------------------------------------------------


def _unary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return tensor(types[0])


def float_unary_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    """The relation of the float math functions: the input's type, for floats and integers (as
    Relay's ``IdentityRel``: TVM type-checks ``log`` of an ``int32`` and fails only when it
    compiles it); bool is an error."""
    t = tensor(types[0])
    kind = dtype_kind(t.dtype)
    if kind not in _FLOAT_KINDS and kind not in "iu":  # bfloat16, float8 (ml_dtypes) are floats
        raise fail(f"needs a floating-point (or integer) input, got {t.dtype}")
    return t


def float_kernel(name: str, fn: Callable[[np.ndarray], np.ndarray], *,
                 int_identity: bool = False) -> Callable[[Attrs, np.ndarray], np.ndarray]:
    """The compute of a float math function whose relation accepts integers (``float_unary_rel``).

    As TVM's TOPI does: ``floor``, ``ceil``, ``round`` (``int_identity``) of an integer tensor
    is the tensor itself (``tir.floor`` of an integer returns it); any other function of an
    integer tensor has no kernel (TVM emits ``tir.log`` of an ``int32``, which no target lowers,
    and neither computes it in float nor casts): an EvaluationError here, never floats."""
    def compute(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        if dtype_kind(x.dtype.name) in "iu":
            if int_identity:
                return x
            raise EvaluationError(f"{name}: no kernel for an integer input ({x.dtype}): its type is "
                                  f"the input's, as in TVM, but TVM cannot compile it either; cast "
                                  "the input to a float first")
        return fn(x)

    return compute


def _unary(name: str, fn: Callable[[np.ndarray], np.ndarray], doc: str, *,
           float_only: bool = True, int_identity: bool = False) -> Callable[..., Any]:
    if not float_only:
        return register_op(name, num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: fn(x),
                           pattern=OpPattern.ELEMWISE, doc=doc)
    return register_op(name, num_inputs=1, type_rel=float_unary_rel,
                       compute=float_kernel(name, fn, int_identity=int_identity),
                       pattern=OpPattern.ELEMWISE, doc=doc)


_SQRT_PI = float(np.sqrt(np.pi))
# erf(x) = 2/sqrt(pi) * sum_k (-1)^k x^(2k+1) / (k! (2k+1)) for |x| < 2: 34 terms reach double
# precision there (24 float32's), the alternating terms never exceed 11
_FACTORIALS = np.cumprod(np.arange(1.0, 34.0)).tolist()  # 1!, 2!, ... 33!
_ERF_TAYLOR = {n: [(-1) ** k * 2 / (([1.0] + _FACTORIALS)[k] * (2 * k + 1) * _SQRT_PI) for k in range(n)]
               for n in (24, 34)}
_ERF_BLOCK = 1 << 14  # elements per block: the Horner loop's arrays stay in the cache


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (within 1.2e-15 relative of math.erf), vectorized by cache-sized blocks: the
    Taylor series for |x| < 2, else 1 - erfc(|x|) by erfc's continued fraction
    exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))), signed."""
    a = np.asarray(x)
    f64 = a.dtype == np.float64
    coef = _ERF_TAYLOR[34 if f64 else 24]
    cf_terms = 60 if f64 else 30
    flat = a.reshape(-1).astype(np.float64)
    out = np.empty_like(flat)
    for s in range(0, flat.size, _ERF_BLOCK):
        v = flat[s:s + _ERF_BLOCK]
        ax = np.abs(v)
        small = ax < 2.0
        every = bool(small.all())
        idx = None if every else np.flatnonzero(small)
        xs = v if idx is None else v[idx]
        y = xs * xs
        acc = np.full_like(y, coef[-1])
        for c in coef[-2::-1]:
            acc *= y
            acc += c
        acc *= xs
        o = out[s:s + _ERF_BLOCK]
        if idx is None:
            o[:] = acc
            continue
        o[idx] = acc
        big = np.flatnonzero(~small)  # NaN lands here and stays NaN
        xb = ax[big]
        f = xb.copy()
        for k in range(cf_terms, 0, -1):
            f = xb + (k / 2) / f
        o[big] = np.copysign(1.0 - np.exp(-xb * xb) / (_SQRT_PI * f), v[big])
    return out.reshape(a.shape).astype(a.dtype, copy=False)


negative: _sig.Negative = _unary("negative", np.negative, "Elementwise ``-x``.", float_only=False)
exp: _sig.Exp = _unary("exp", np.exp, "Elementwise ``e**x``.")
log: _sig.Log = _unary("log", np.log, "Elementwise natural logarithm.")
sqrt: _sig.Sqrt = _unary("sqrt", np.sqrt, "Elementwise square root.")
rsqrt: _sig.Rsqrt = _unary("rsqrt", lambda x: 1 / np.sqrt(x), "Elementwise ``1 / sqrt(x)``.")
tanh: _sig.Tanh = _unary("tanh", np.tanh, "Elementwise hyperbolic tangent.")
sigmoid: _sig.Sigmoid = _unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "Elementwise logistic function.")
abs: _sig.Abs = _unary("abs", np.abs, "Elementwise absolute value.", float_only=False)  # noqa: A001
erf: _sig.Erf = _unary("erf", _erf, "Elementwise error function.")
floor: _sig.Floor = _unary("floor", np.floor, "Elementwise floor.", int_identity=True)
ceil: _sig.Ceil = _unary("ceil", np.ceil, "Elementwise ceiling.", int_identity=True)
logical_not: _sig.LogicalNot = register_op(
    "logical_not", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: np.logical_not(x),
    pattern=OpPattern.ELEMWISE, doc="Elementwise boolean not.")
copy: _sig.Copy = register_op("copy", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: x.copy(),
                              pattern=OpPattern.ELEMWISE, doc="Identity copy of a tensor.")
zeros_like: _sig.ZerosLike = register_op(
    "zeros_like", num_inputs=1, type_rel=_unary_rel, compute=lambda attrs, x: np.zeros_like(x),
    pattern=OpPattern.ELEMWISE, doc="A tensor of zeros shaped like the input.")
ones_like: _sig.OnesLike = register_op("ones_like", num_inputs=1, type_rel=_unary_rel,
                                       compute=lambda attrs, x: np.ones_like(x), pattern=OpPattern.ELEMWISE,
                                       doc="A tensor of ones shaped like the input.")


def _clip_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    if attrs["a_min"] > attrs["a_max"]:
        raise fail(f"a_min {attrs['a_min']} > a_max {attrs['a_max']}")
    return t


clip: _sig.Clip = register_op(
    "clip", num_inputs=1, type_rel=_clip_rel,
    compute=lambda attrs, x: np.clip(x, attrs["a_min"], attrs["a_max"]).astype(x.dtype),
    pattern=OpPattern.ELEMWISE, doc="Clamp every element to ``[a_min, a_max]``.",
    attrs=(AttrSpec("a_min", "float"), AttrSpec("a_max", "float")))


def _cast_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType(tensor(types[0]).shape, attrs["dtype"])


cast: _sig.Cast = register_op(
    "cast", num_inputs=1, type_rel=_cast_rel, compute=lambda attrs, x: x.astype(attrs["dtype"]),
    pattern=OpPattern.ELEMWISE, doc="Convert to another dtype.", attrs=(AttrSpec("dtype", "dtype"),))


# -- broadcasting binary -----------------------------------------------------------------


def _broadcast_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    return TensorType(broadcast_shapes(a.shape, b.shape), same_dtype([a, b]))


def _compare_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    same_dtype([a, b])
    return TensorType(broadcast_shapes(a.shape, b.shape), "bool")


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.trunc(np.true_divide(a, b))
        return q.astype(a.dtype)
    return np.true_divide(a, b)


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str,
            rel: Callable[[tuple[Type, ...], Attrs], Type] = _broadcast_rel) -> Callable[..., Any]:
    return register_op(name, num_inputs=2, type_rel=rel, compute=lambda attrs, a, b: fn(a, b),
                       pattern=OpPattern.BROADCAST, doc=doc)


add: _sig.Add = _binary("add", np.add, "Broadcasting ``a + b``.")
subtract: _sig.Subtract = _binary("subtract", np.subtract, "Broadcasting ``a - b``.")
multiply: _sig.Multiply = _binary("multiply", np.multiply, "Broadcasting ``a * b``.")
divide: _sig.Divide = _binary("divide", _divide, "Broadcasting ``a / b`` (truncating for integers).")
power: _sig.Power = _binary("power", np.power, "Broadcasting ``a ** b``.")
maximum: _sig.Maximum = _binary("maximum", np.maximum, "Broadcasting elementwise maximum.")
minimum: _sig.Minimum = _binary("minimum", np.minimum, "Broadcasting elementwise minimum.")
greater: _sig.Greater = _binary("greater", np.greater, "Broadcasting ``a > b`` (bool).", _compare_rel)
less: _sig.Less = _binary("less", np.less, "Broadcasting ``a < b`` (bool).", _compare_rel)
equal: _sig.Equal = _binary("equal", np.equal, "Broadcasting ``a == b`` (bool).", _compare_rel)
not_equal: _sig.NotEqual = _binary("not_equal", np.not_equal, "Broadcasting ``a != b`` (bool).", _compare_rel)
greater_equal: _sig.GreaterEqual = _binary("greater_equal", np.greater_equal,
                                           "Broadcasting ``a >= b`` (bool).", _compare_rel)
less_equal: _sig.LessEqual = _binary("less_equal", np.less_equal, "Broadcasting ``a <= b`` (bool).",
                                     _compare_rel)
logical_and: _sig.LogicalAnd = _binary("logical_and", np.logical_and, "Broadcasting boolean and.")
logical_or: _sig.LogicalOr = _binary("logical_or", np.logical_or, "Broadcasting boolean or.")


def _where_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    c, a, b = (tensor(t, w) for t, w in zip(types, ("condition", "lhs", "rhs")))
    if c.dtype != "bool":
        raise fail(f"condition must be bool, got {c.dtype}")
    shape = broadcast_shapes(broadcast_shapes(c.shape, a.shape), b.shape)
    return TensorType(shape, same_dtype([a, b]))


where: _sig.Where = register_op("where", num_inputs=3, type_rel=_where_rel,
                                compute=lambda attrs, c, a, b: np.where(c, a, b), pattern=OpPattern.BROADCAST,
                                doc="Select from ``a`` where ``condition`` holds, else from ``b``.")


# -- layout transforms -----------------------------------------------------------------------


def _newshape_items(src: tuple[Any, ...], newshape: tuple[int, ...]) -> tuple[list[Any], int]:
    """``newshape`` with each ``0`` replaced by the input's dimension and the ``-1`` (if any) by
    1, and the position of that ``-1`` (-1: none); a TypeCheckError for a bad ``newshape``."""
    out: list[Any] = []
    infer_at = -1
    for i, d in enumerate(newshape):
        if d == 0:
            if i >= len(src):
                raise fail(f"newshape {newshape}: 0 at position {i} but input rank is {len(src)}")
            out.append(src[i])
        elif d == -1:
            if infer_at >= 0:
                raise fail(f"newshape {newshape} has more than one -1")
            infer_at = i
            out.append(1)
        elif d > 0:
            out.append(d)
        else:
            raise fail(f"newshape {newshape}: invalid dimension {d}")
    return out, infer_at


def _infer_reshape(src: tuple[int, ...], newshape: tuple[int, ...]) -> tuple[int, ...]:
    out, infer_at = _newshape_items(src, newshape)
    total = int(np.prod(src, dtype=np.int64))
    known = int(np.prod(out, dtype=np.int64))
    if infer_at >= 0:
        if known == 0 or total % known:
            raise fail(f"cannot reshape {src} to {newshape}")
        out[infer_at] = total // known
    elif known != total:
        raise fail(f"cannot reshape {src} ({total} elements) to {tuple(out)} ({known} elements)")
    return tuple(out)


def _infer_reshape_dims(src: tuple[DimLike, ...], newshape: tuple[int, ...]) -> tuple[DimLike, ...]:
    """:func:`_infer_reshape` over symbolic or unknown dimensions.

    ``0`` copies the input dimension; ``-1`` is the quotient of the element counts when it
    is provably exact (``(n, 3, 4)`` to ``(-1, 12)`` gives ``n``), else ``?``.  Counts that
    are provably different are an error; counts whose equality is unknown are accepted."""
    out, infer_at = _newshape_items(src, newshape)
    total = dim_prod(src)
    known = dim_prod(out)
    if infer_at >= 0:
        if known == 0:
            raise fail(f"cannot reshape {shape_str(src)} to {newshape} (the other dimensions hold 0 "
                       "elements)")
        if total is ANY_DIM or known is ANY_DIM:
            out[infer_at] = ANY_DIM
        else:
            rem = dim_mod(total, known)
            if rem == 0:
                out[infer_at] = dim_floordiv(total, known)
            elif type(rem) is int or dims_equal(rem, 0) is False:
                raise fail(f"cannot reshape {shape_str(src)} to {newshape}: {dim_str(total, 40)} elements "
                           f"are not a multiple of {dim_str(known, 40)}")
            else:
                out[infer_at] = ANY_DIM  # divisible only for some bindings: the quotient is unknown
    elif dims_equal(known, total) is False:
        raise fail(f"cannot reshape {shape_str(src)} ({dim_str(total, 40)} elements) to {shape_str(out)} "
                   f"({dim_str(known, 40)} elements)")
    return tuple(out)


def _reshape_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    if t.static:
        return TensorType(_infer_reshape(t.shape, attrs["newshape"]), t.dtype)  # type: ignore[arg-type]
    return TensorType(_infer_reshape_dims(t.shape, attrs["newshape"]), t.dtype)


reshape: _sig.Reshape = register_op(
    "reshape", num_inputs=1, type_rel=_reshape_rel,
    compute=lambda attrs, x: x.reshape(_infer_reshape(x.shape, attrs["newshape"])),
    pattern=OpPattern.INJECTIVE,
    doc="Reshape; ``0`` copies the input dimension, ``-1`` is inferred.",
    attrs=(AttrSpec("newshape", "ints"),))


def _perm(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    axes = attrs["axes"]
    if axes is None:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise fail(f"axes {axes} do not match rank {ndim}")
    perm = tuple(normalize_axis(a, ndim) for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise fail(f"axes {axes} are not a permutation")
    return perm


def _transpose_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    perm = _perm(attrs, t.ndim)
    return TensorType(tuple(t.shape[i] for i in perm), t.dtype)


transpose: _sig.Transpose = register_op(
    "transpose", num_inputs=1, type_rel=_transpose_rel,
    compute=lambda attrs, x: np.transpose(x, _perm(attrs, x.ndim)), pattern=OpPattern.INJECTIVE,
    doc="Permute the axes (reverse them when ``axes`` is None).",
    attrs=(AttrSpec("axes", "ints?", None),))


def _concat_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    fields = tuple_of(types[0]).fields
    if not fields:
        raise fail("concatenate needs at least one tensor, got an empty tuple")
    ts = [tensor(t, f"field {i}") for i, t in enumerate(fields)]
    dt = same_dtype(ts)
    nd = ts[0].ndim
    ax = normalize_axis(attrs["axis"], nd)
    shape = list(ts[0].shape)
    for t in ts[1:]:
        if t.ndim != nd:
            raise fail(f"cannot concatenate shapes {[x.shape for x in ts]} on axis {attrs['axis']}")
        for i, b in enumerate(t.shape):
            a = shape[i]
            if i != ax and a is not b:
                u = unify_dims(a, b)  # equal at run time: keep the better-known one
                if u is None:
                    raise fail(f"cannot concatenate shapes {[x.shape for x in ts]} on axis {attrs['axis']} "
                               f"(dimension {i}: {dim_str(a, 40)} != {dim_str(b, 40)})")
                shape[i] = u
    shape[ax] = dim_sum([t.shape[ax] for t in ts])
    return TensorType(shape, dt)


_concatenate_op: _sig.Concatenate = register_op(
    "concatenate", num_inputs=1, type_rel=_concat_rel,
    compute=lambda attrs, xs: np.concatenate(xs, axis=attrs["axis"]), pattern=OpPattern.INJECTIVE,
    doc="Join the tensors of the tuple ``data`` along ``axis`` (Relay's form: one tuple argument).",
    attrs=(AttrSpec("axis", "int", 0),))


def concatenate(data: Expr | Sequence[ExprLike], axis: int = 0) -> Call:
    """``concatenate`` with Relay's signature: ``data`` a list or tuple of tensors (made a
    ``Tuple``) or an expression of tuple type; the call has that one tuple argument.

    >>> import pyir
    >>> a, b = pyir.var("a", shape=(2, 3)), pyir.var("b", shape=(2, 5))
    >>> concatenate([a, b], axis=1).checked_type
    TensorType((2, 8), 'float32')
    """
    if isinstance(axis, _Expr):  # (the imports at module level: a builder runs no import statement)
        raise WellFormedError("concatenate takes the tensors as one list or tuple: "
                              "concatenate([a, b], axis=...), not concatenate(a, b)")
    if not isinstance(data, _Expr):
        try:
            items = list(data)
        except TypeError:
            raise WellFormedError(f"concatenate takes a list or tuple of tensors, got {data!r:.80}") from None
        if not items:
            raise WellFormedError("concatenate needs at least one tensor, got an empty list")
        data = _TupleExpr(items)  # which makes any non-expression item an expression (as_expr)
    return _concatenate_op(data, axis=axis)


concatenate.op = _concatenate_op.op  # type: ignore[attr-defined]
concatenate.relay_signature = True  # type: ignore[attr-defined]


def _expand_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    ax, num = attrs["axis"], attrs["num_newaxis"]
    if num < 0:
        raise fail(f"num_newaxis must be >= 0, got {num}")
    if not -t.ndim - 1 <= ax <= t.ndim:
        raise fail(f"axis {ax} out of range for rank {t.ndim}")
    ax = ax % (t.ndim + 1)
    return TensorType(t.shape[:ax] + (1,) * num + t.shape[ax:], t.dtype)


def _expand(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % (x.ndim + 1)
    return x.reshape(x.shape[:ax] + (1,) * attrs["num_newaxis"] + x.shape[ax:])


expand_dims: _sig.ExpandDims = register_op(
    "expand_dims", num_inputs=1, type_rel=_expand_rel, compute=_expand, pattern=OpPattern.BROADCAST,
    doc="Insert ``num_newaxis`` unit axes at ``axis``.",
    attrs=(AttrSpec("axis", "int"), AttrSpec("num_newaxis", "int", 1)))


def _squeeze_axes(attrs: Attrs, shape: tuple[DimLike, ...]) -> tuple[int, ...]:
    """The axes to remove.  Over symbolic shapes: with ``axis=None`` every dimension must be
    known to be 1 or not (a symbol may be 1 at run time, which would change the rank); an
    explicit axis must be 1, or ``?`` (unknown: checked when the program runs).  A symbolic
    dimension on an explicit axis is an error unless it is provably 1 (canonical dims make
    that the int 1)."""
    axes = attrs["axis"]
    if axes is None:
        for i, d in enumerate(shape):
            if type(d) is not int and dims_equal(d, 1) is not False:
                raise fail(f"cannot squeeze shape {shape_str(shape)} with axis=None: dimension {i} "
                           f"({dim_str(d, 40)}) may or may not be 1 at run time (give the axes)")
        return tuple(i for i, d in enumerate(shape) if d == 1)
    out = tuple(sorted({normalize_axis(a, len(shape)) for a in axes}))
    for a in out:
        d = shape[a]
        if d != 1 and d is not ANY_DIM:
            raise fail(f"cannot squeeze axis {a} of size {dim_str(d, 40)} in shape {shape_str(shape)}"
                       + ("" if type(d) is int else " (a symbolic dimension is squeezed only if it is "
                          "provably 1)"))
    return out


def _squeeze_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    axes = _squeeze_axes(attrs, t.shape)
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in axes), t.dtype)


squeeze: _sig.Squeeze = register_op(
    "squeeze", num_inputs=1, type_rel=_squeeze_rel,
    compute=lambda attrs, x: np.squeeze(x, axis=_squeeze_axes(attrs, x.shape)),
    pattern=OpPattern.INJECTIVE, doc="Remove unit axes (all of them when ``axis`` is None).",
    attrs=(AttrSpec("axis", "ints?", None),))


def _split_sections(attrs: Attrs, dim: int) -> list[int]:
    ind = attrs["indices_or_sections"]
    if len(ind) == 1 and attrs["by_sections"]:
        n = ind[0]
        if n <= 0 or dim % n:
            raise fail(f"cannot split a dimension of {dim} into {n} equal sections")
        return [dim // n] * n
    cuts = [0, *ind, dim]
    sizes = [b - a for a, b in zip(cuts, cuts[1:])]
    if any(s < 0 for s in sizes):
        raise fail(f"split indices {ind} are not increasing within {dim}")
    return sizes


def _split_sections_dim(attrs: Attrs, dim: DimLike) -> list[DimLike]:
    """:func:`_split_sections` of a symbolic or unknown dimension: equal sections are exact
    when the division provably is (``n * 4`` in 2 gives ``n * 2``), else ``?``; the last piece
    of a split at indices is ``dim - last index`` (an error if provably negative)."""
    ind = attrs["indices_or_sections"]
    if len(ind) == 1 and attrs["by_sections"]:
        n = ind[0]
        if n <= 0:
            raise fail(f"cannot split a dimension of {dim_str(dim, 40)} into {n} equal sections")
        if dim is ANY_DIM:
            return [ANY_DIM] * n
        rem = dim_mod(dim, n)
        if rem == 0:
            return [dim_floordiv(dim, n)] * n
        if type(rem) is int or dims_equal(rem, 0) is False:
            raise fail(f"cannot split a dimension of {dim_str(dim, 40)} into {n} equal sections")
        return [ANY_DIM] * n
    cuts = [0, *ind]
    sizes: list[DimLike] = [b - a for a, b in zip(cuts, cuts[1:])]
    if any(type(s) is int and s < 0 for s in sizes):
        raise fail(f"split indices {ind} are not increasing within {dim_str(dim, 40)}")
    try:
        sizes.append(dim_sub(dim, cuts[-1]))
    except PyIRError:
        raise fail(f"split indices {ind} exceed the dimension {dim_str(dim, 40)}") from None
    return sizes


def _split_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    from ..ir.types import TupleType

    t = tensor(types[0])
    ax = normalize_axis(attrs["axis"], t.ndim)
    fields = []
    d = t.shape[ax]
    for s in (_split_sections(attrs, d) if type(d) is int else _split_sections_dim(attrs, d)):
        shape = list(t.shape)
        shape[ax] = s
        fields.append(TensorType(shape, t.dtype))
    return TupleType(fields)


def _split(attrs: Attrs, x: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = attrs["axis"] % x.ndim
    sizes = _split_sections(attrs, x.shape[ax])
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=ax))


split: _sig.Split = register_op(
    "split", num_inputs=1, type_rel=_split_rel, compute=_split, pattern=OpPattern.INJECTIVE,
    doc="Split along ``axis`` into equal sections (``by_sections``) or at indices; returns a tuple.",
    attrs=(AttrSpec("indices_or_sections", "ints"), AttrSpec("axis", "int", 0),
           AttrSpec("by_sections", "bool", True)))


def _slices(attrs: Attrs, shape: tuple[DimLike, ...]) -> tuple[slice, ...]:
    begin, end = attrs["begin"], attrs["end"]
    axes = attrs["axes"] if attrs["axes"] is not None else tuple(range(len(begin)))
    strides = attrs["strides"] if attrs["strides"] is not None else (1,) * len(begin)
    if not len(begin) == len(end) == len(axes) == len(strides):
        raise fail("begin, end, axes and strides must have equal lengths")
    sl = [slice(None)] * len(shape)
    for b, e, a, s in zip(begin, end, axes, strides):
        if s == 0:
            raise fail("strided_slice stride cannot be 0")
        sl[normalize_axis(a, len(shape))] = slice(b, e, s)
    return tuple(sl)


def _clamp(i: int, d: DimLike) -> DimLike | None:
    """Python's clamped slice position ``i`` (begin or end, positive step) in ``[0, d]``, or
    None when it depends on the binding (``min(3, n)``)."""
    if i >= 0:
        if i == 0:
            return 0
        lo, hi = dim_bounds(d)
        if lo is not None and lo >= i:
            return i
        if i >= MAX_INDEX or (hi is not None and hi <= i):
            return d  # past the end for every binding
        return None
    lo, hi = dim_bounds(d)
    if lo is not None and lo >= -i:
        return dim_sub(d, -i)
    if hi is not None and hi <= -i:
        return 0
    return None


def _slice_len(s: slice, d: DimLike) -> DimLike:
    """The length of ``x[s]`` along an axis of symbolic or unknown size ``d``: exact where the
    clamping of begin and end is decided by the bounds of ``d``, else ``?``."""
    if s.start is None and s.stop is None and s.step is None:
        return d  # the axis is not sliced
    if d is ANY_DIM:
        return ANY_DIM
    if s.step < 0:  # only the whole axis, reversed: x[-1 or past-the-end : before-the-start : -k]
        if (s.start == -1 or s.start >= MAX_INDEX) and s.stop <= -MAX_INDEX:
            return dim_floordiv(dim_add(d, -s.step - 1), -s.step)
        return ANY_DIM
    b, e = _clamp(s.start, d), _clamp(s.stop, d)
    if b is None or e is None:
        return ANY_DIM
    if type(b) is int and type(e) is int:
        return len(range(b, e, s.step))
    try:
        span = dim_sub(e, b)
    except PyIRError:  # end provably before begin
        return 0
    lo, hi = dim_bounds(span)
    if hi is not None and hi <= 0:
        return 0
    if lo is None or lo < 0:
        return ANY_DIM  # empty for some bindings, not for others
    return dim_floordiv(dim_add(span, s.step - 1), s.step)


def _strided_slice_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    sl = _slices(attrs, t.shape)
    shape = tuple(len(range(*s.indices(d))) if type(d) is int else _slice_len(s, d)
                  for s, d in zip(sl, t.shape))
    return TensorType(shape, t.dtype)


strided_slice: _sig.StridedSlice = register_op(
    "strided_slice", num_inputs=1, type_rel=_strided_slice_rel,
    compute=lambda attrs, x: x[_slices(attrs, x.shape)], pattern=OpPattern.INJECTIVE,
    doc="Python-style slicing ``x[begin:end:stride]`` on ``axes``.",
    attrs=(AttrSpec("begin", "ints"), AttrSpec("end", "ints"), AttrSpec("axes", "ints?", None),
           AttrSpec("strides", "ints?", None)))


_TAKE_MODES = ("clip", "wrap", "fast")


def _take_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["mode"] not in _TAKE_MODES:
        raise AttrError(f"operator 'take', attribute 'mode': must be one of {_TAKE_MODES}, got {a['mode']!r}")
    return a


def _take_axes(attrs: Attrs, d_ndim: int, i_ndim: int) -> tuple[int | None, int]:
    """``take``'s axis (None: the flattened data) and batch_dims, normalized."""
    b = attrs["batch_dims"]
    if b < 0:
        b += i_ndim
    if not 0 <= b <= i_ndim:
        raise fail(f"batch_dims {attrs['batch_dims']} out of range for indices of rank {i_ndim}")
    if attrs["axis"] is None:
        if b:
            raise fail("batch_dims needs an axis")
        return None, 0
    ax = normalize_axis(attrs["axis"], d_ndim)
    if ax < b:
        raise fail(f"axis {attrs['axis']} must not be a batch axis (batch_dims {b})")
    return ax, b


def _take_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, i = tensor(types[0], "data"), tensor(types[1], "indices")
    if np.dtype(i.dtype).kind not in "iu":
        raise fail(f"indices must be integers, got {i.dtype}")
    ax, b = _take_axes(attrs, d.ndim, i.ndim)
    if ax is None:
        return TensorType(i.shape, d.dtype)
    for k in range(b):
        if unify_dims(d.shape[k], i.shape[k]) is None:
            raise fail(f"batch dimension {k} differs: data {shape_str(d.shape)}, "
                       f"indices {shape_str(i.shape)}")
    return TensorType(d.shape[:ax] + i.shape[b:] + d.shape[ax + 1:], d.dtype)


def _take(attrs: Attrs, d: np.ndarray, i: np.ndarray) -> np.ndarray:
    ax, b = _take_axes(attrs, d.ndim, i.ndim)
    mode = {"clip": "clip", "wrap": "wrap", "fast": "raise"}[attrs["mode"]]
    if ax is None:
        return np.take(d.reshape(-1), i, mode=mode)  # type: ignore[call-overload]
    if not b:
        return np.take(d, i, axis=ax, mode=mode)  # type: ignore[call-overload]
    batch = d.shape[:b]
    out = [np.take(d[k], i[k], axis=ax - b, mode=mode) for k in np.ndindex(*batch)]  # type: ignore[call-overload]
    return np.stack(out).reshape(batch + out[0].shape) if out else \
        np.zeros(d.shape[:ax] + i.shape[b:] + d.shape[ax + 1:], d.dtype)


_take_op: _sig.Take = register_op(
    "take", num_inputs=2, type_rel=_take_rel, compute=_take,
    pattern=OpPattern.INJECTIVE,
    doc="Gather the slices of ``data`` at ``indices`` along ``axis`` (the flattened data when None);\n"
        "the first ``batch_dims`` axes of both are batch axes; out-of-range indices are clipped\n"
        "(``clip``), wrapped (``wrap``) or an error (``fast``).",
    attrs=(AttrSpec("batch_dims", "int", 0), AttrSpec("axis", "int?", None),
           AttrSpec("mode", "str", "clip", "clip, wrap or fast")),
    canonicalize=_take_canon)


def take(data: ExprLike, indices: ExprLike, axis: int | None = None, batch_dims: int = 0,
         mode: str = "clip") -> Call:
    """``take`` with Relay's signature and defaults (``axis=None`` takes from the flattened data).

    >>> import pyir, numpy as np
    >>> x = pyir.var("x", shape=(4, 3))
    >>> take(x, pyir.const(np.array([0, 2])), axis=0).checked_type
    TensorType((2, 3), 'float32')
    """
    return _take_op(data, indices, batch_dims=batch_dims, axis=axis, mode=mode)


take.op = _take_op.op  # type: ignore[attr-defined]
take.relay_signature = True  # type: ignore[attr-defined]


# -- reductions ---------------------------------------------------------------------------------


def _reduce_axes(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    axis = attrs["axis"]
    axes = tuple(range(ndim)) if axis is None else tuple(sorted({normalize_axis(a, ndim) for a in axis}))
    if attrs["exclude"]:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def _reduce_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    axes = _reduce_axes(attrs, t.ndim)
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    else:
        shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return TensorType(shape, t.dtype)


_REDUCE_ATTRS = (AttrSpec("axis", "ints?", None), AttrSpec("keepdims", "bool", False),
                 AttrSpec("exclude", "bool", False))


def reduce_identity(fn: Callable[..., np.ndarray], dtype: Any) -> Any:
    """The value ``max``/``min`` give over a zero-length axis (ONNX: the dtype's lowest /
    highest value, -inf / inf for floats); None for the other reductions (numpy's)."""
    if fn is not np.max and fn is not np.min:
        return None
    low = fn is np.max
    kind = dtype_kind(np.dtype(dtype).name)
    if kind == "b":
        return not low
    if kind in "iu":
        return dtype_range(np.dtype(dtype).name)[0 if low else 1]
    return -np.inf if low else np.inf


def reduce_compute(fn: Callable[..., np.ndarray], x: np.ndarray, axes: tuple[int, ...],
                   keepdims: bool) -> np.ndarray:
    """``fn`` over ``axes``; ``max``/``min`` of an empty input give :func:`reduce_identity`."""
    if x.size == 0:
        init = reduce_identity(fn, x.dtype)
        if init is not None:
            return np.asarray(fn(x, axis=axes, keepdims=keepdims, initial=init)).astype(x.dtype)
    return np.asarray(fn(x, axis=axes, keepdims=keepdims)).astype(x.dtype)


def _reduction(name: str, fn: Callable[..., np.ndarray], doc: str) -> Callable[..., Any]:
    def compute(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        return reduce_compute(fn, x, _reduce_axes(attrs, x.ndim), attrs["keepdims"])

    return register_op(name, num_inputs=1, type_rel=_reduce_rel, compute=compute,
                       pattern=OpPattern.COMM_REDUCE, doc=doc, attrs=_REDUCE_ATTRS)


sum: _sig.Sum = _reduction("sum", np.sum, "Sum over ``axis`` (all axes when None).")  # noqa: A001
mean: _sig.Mean = _reduction("mean", np.mean, "Mean over ``axis`` (all axes when None).")
max: _sig.Max = _reduction("max", np.max, "Maximum over ``axis`` (all axes when None).")  # noqa: A001
min: _sig.Min = _reduction("min", np.min, "Minimum over ``axis`` (all axes when None).")  # noqa: A001
prod: _sig.Prod = _reduction("prod", np.prod, "Product over ``axis`` (all axes when None).")


def _argmax_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    ax = normalize_axis(attrs["axis"], t.ndim)
    shape = tuple(1 if i == ax else d for i, d in enumerate(t.shape)) if attrs["keepdims"] else \
        tuple(d for i, d in enumerate(t.shape) if i != ax)
    return TensorType(shape, "int64")


argmax: _sig.Argmax = register_op(
    "argmax", num_inputs=1, type_rel=_argmax_rel,
    compute=lambda attrs, x: np.argmax(x, axis=attrs["axis"], keepdims=attrs["keepdims"]).astype("int64"),
    pattern=OpPattern.COMM_REDUCE, doc="Index of the maximum along ``axis`` (int64).",
    attrs=(AttrSpec("axis", "int", 0), AttrSpec("keepdims", "bool", False)))


# -- matmul --------------------------------------------------------------------------------


def _matmul_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    dt = same_dtype([a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise fail("matmul needs inputs of rank >= 1")
    sa = a.shape if a.ndim > 1 else (1,) + a.shape
    sb = b.shape if b.ndim > 1 else b.shape + (1,)
    if sa[-1] is not sb[-2] and unify_dims(sa[-1], sb[-2]) is None:
        raise fail(f"matmul inner dimensions differ: {shape_str(a.shape)} @ {shape_str(b.shape)} "
                   f"({dim_str(sa[-1], 40)} != {dim_str(sb[-2], 40)})")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    shape = batch + (sa[-2],) * (a.ndim > 1) + (sb[-1],) * (b.ndim > 1)
    return TensorType(shape, dt)


matmul: _sig.Matmul = register_op(
    "matmul", num_inputs=2, type_rel=_matmul_rel, compute=lambda attrs, a, b: np.matmul(a, b),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, doc="Numpy-style (batched, broadcasting) matrix product.")


# -- argmin (after argmax) -------------------------------------------------------------------

argmin: _sig.Argmin = register_op(
    "argmin", num_inputs=1, type_rel=_argmax_rel,
    compute=lambda attrs, x: np.argmin(x, axis=attrs["axis"], keepdims=attrs["keepdims"]).astype("int64"),
    pattern=OpPattern.COMM_REDUCE, doc="Index of the minimum along ``axis`` (int64; the first one on ties).",
    attrs=(AttrSpec("axis", "int", 0), AttrSpec("keepdims", "bool", False)))
