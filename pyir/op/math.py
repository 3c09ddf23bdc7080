"""Math operators: trigonometric and hyperbolic functions, ``sign``, ``round``, ``isnan``,
``isinf``, ``mod``, the scans ``cumsum`` / ``cumprod``, ``einsum``, ``trilu``, ``eye_like``,
``det``, and the signal operators ``dft``, ``stft``, ``hann_window``, ``hamming_window``,
``blackman_window`` and ``mel_weight_matrix``.

Parameters that ONNX gives as (possibly run-time) tensor inputs:

* ``trilu`` takes ``k`` as a scalar tensor, as Relay's ``trilu`` does (the shape does not
  depend on it);
* ``cumsum``, ``cumprod`` and ``dft`` take ``axis`` as an attribute, or as an optional extra
  argument, a scalar integer tensor computed at run time (the attribute is then ignored);
  ``dft`` of a run-time axis with ``onesided`` or ``dft_length`` gives ``?`` dimensions;
* the signal generators (windows, ``mel_weight_matrix``) and ``stft`` take their sizes as
  scalar tensors, as ONNX does: their output dimensions are ``?`` (a call on constants is
  folded by ``FoldConstant`` and by the ONNX importer).

Semantics, briefly: the remainders and divisions have Relay's names and meanings: ``mod`` and
``trunc_mod`` are the truncated remainder (signed like the dividend, C's ``fmod``: Relay's
``mod``), ``floor_mod`` the floor remainder (signed like the divisor, Python's ``%``);
``floor_divide`` rounds the quotient down, ``trunc_divide`` toward zero (``divide`` of integers
truncates too, as Relay's does); an integer division by zero gives 0. ``cumsum`` / ``cumprod``
with ``exclusive`` leave ``x[i]`` out of element ``i``,
with ``reverse`` scan from the end. ``einsum`` follows numpy (explicit or implicit output,
``...`` broadcasting, a repeated label takes a diagonal, a label of size 1 broadcasts).
``trilu`` keeps the elements on and above (``upper``) or below the ``k``-th diagonal of the
last two axes. ``dft`` transforms ``[..., 1 or 2]`` data (real, or real and imaginary parts)
into ``[..., 2]`` (``[..., 1]`` for an inverse ``onesided`` one, numpy's ``irfft``).
``stft`` cuts ``signal`` ``[batch, length, 1 or 2]`` into frames of ``frame_length`` every
``frame_step`` (``frame_length`` 0: the window's length, or the signal's), weights them by
``window`` (an empty window: ones) and gives ``[batch, frames, bins, 2]``. ``bernoulli`` is a
deterministic draw: a function of its input, its ``seed`` and the shape (numpy's ``default_rng``),
so that equal calls being one node (hash-consing), ``FoldConstant`` and CSE keep their meaning.

Every type relation accepts symbolic and unknown dimensions (:mod:`pyir.ir.dims`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AttrError, EvaluationError
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike, dim_add, dim_floordiv, dim_mul, dim_sub
from ..ir.node import Attrs
from ..ir.types import TensorType, Type, normalize_dtype
from ._rel import broadcast_shapes, fail, normalize_axis, same_dtype, shape_str, tensor, unify_dims
from .registry import AttrSpec, OpPattern, register_op
from .tensor import float_kernel, float_unary_rel

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = [
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "sign", "round", "isnan", "isinf", "mod", "floor_mod", "trunc_mod", "floor_divide", "trunc_divide",
    "cumsum", "cumprod", "einsum", "trilu", "eye_like",
    "det", "dft", "stft", "hann_window", "hamming_window", "blackman_window", "mel_weight_matrix",
    "bernoulli",
]


def _is_float(dtype: str) -> bool:
    """Floating point, including the ml_dtypes floats (bfloat16, float8) where available."""
    dt = np.dtype(dtype)
    return dt.kind in "fc" or dt.name.startswith(("bfloat", "float"))


def _np_float(x: np.ndarray) -> np.ndarray:
    """``x`` as a dtype numpy's math functions accept (the ml_dtypes floats become float32)."""
    return x if x.dtype.kind in "fciub" else x.astype(np.float32)


def _scalar_int(t: Type, what: str) -> TensorType:
    """A scalar (or one-element 1-D) integer tensor, or a TypeCheckError."""
    s = tensor(t, what)
    if np.dtype(s.dtype).kind not in "iu":
        raise fail(f"{what} must be an integer tensor, got {s.dtype}")
    if not (s.ndim == 0 or (s.ndim == 1 and s.shape[0] in (1, AnyDim))):
        raise fail(f"{what} must be a scalar, got shape {shape_str(s.shape)}")
    return s


def _scalar_value(x: np.ndarray) -> Any:
    return np.asarray(x).reshape(-1)[0].item()


def _run_axis(op: str, axis: int, ndim: int) -> int:
    """An axis known at run time, in ``[0, ndim)``, or an EvaluationError."""
    if not -ndim <= axis < ndim:
        raise EvaluationError(f"{op}: axis {axis} out of range for rank {ndim}")
    return axis % ndim


# -- elementwise unary -------------------------------------------------------------------------


def _float_unary(name: str, fn: Callable[[np.ndarray], np.ndarray], doc: str,
                 int_identity: bool = False) -> Any:
    """A float math function; integers as :func:`pyir.op.tensor.float_kernel` says (TVM's
    relation accepts them; ``round`` of one is itself, the others have no kernel)."""
    def on_float(x: np.ndarray) -> np.ndarray:
        return np.asarray(fn(_np_float(x))).astype(x.dtype, copy=False)

    return register_op(name, num_inputs=1, type_rel=float_unary_rel,
                       compute=float_kernel(name, on_float, int_identity=int_identity),
                       pattern=OpPattern.ELEMWISE, doc=doc)


sin: _sig.Sin = _float_unary("sin", np.sin, "Elementwise sine.")
cos: _sig.Cos = _float_unary("cos", np.cos, "Elementwise cosine.")
tan: _sig.Tan = _float_unary("tan", np.tan, "Elementwise tangent.")
asin: _sig.Asin = _float_unary("asin", np.arcsin, "Elementwise arcsine.")
acos: _sig.Acos = _float_unary("acos", np.arccos, "Elementwise arccosine.")
atan: _sig.Atan = _float_unary("atan", np.arctan, "Elementwise arctangent.")
sinh: _sig.Sinh = _float_unary("sinh", np.sinh, "Elementwise hyperbolic sine.")
cosh: _sig.Cosh = _float_unary("cosh", np.cosh, "Elementwise hyperbolic cosine.")
asinh: _sig.Asinh = _float_unary("asinh", np.arcsinh, "Elementwise inverse hyperbolic sine.")
acosh: _sig.Acosh = _float_unary("acosh", np.arccosh, "Elementwise inverse hyperbolic cosine.")
atanh: _sig.Atanh = _float_unary("atanh", np.arctanh, "Elementwise inverse hyperbolic tangent.")
round: _sig.Round = _float_unary(  # noqa: A001
    "round", np.round, "Elementwise rounding to the nearest integer, halves to even (ONNX's Round).",
    int_identity=True)


def _sign_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    if t.dtype == "bool":
        raise fail("needs a numeric input, got bool")
    return t


sign: _sig.Sign = register_op(
    "sign", num_inputs=1, type_rel=_sign_rel,
    compute=lambda attrs, x: np.sign(_np_float(x)).astype(x.dtype, copy=False),
    pattern=OpPattern.ELEMWISE, doc="Elementwise sign: -1, 0 or 1 (in the input's dtype).")


def _predicate_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0])
    if not _is_float(t.dtype):
        raise fail(f"needs a floating-point input, got {t.dtype}")
    return TensorType(t.shape, "bool")


isnan: _sig.Isnan = register_op(
    "isnan", num_inputs=1, type_rel=_predicate_rel,
    compute=lambda attrs, x: np.isnan(_np_float(x)), pattern=OpPattern.ELEMWISE,
    doc="Elementwise ``x != x`` (bool).")


def _isinf(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    v = _np_float(x)
    neg, pos = attrs["detect_negative"], attrs["detect_positive"]
    if neg and pos:
        return np.isinf(v)
    if pos:
        return np.isposinf(v)
    if neg:
        return np.isneginf(v)
    return np.zeros(v.shape, dtype=bool)


isinf: _sig.Isinf = register_op(
    "isinf", num_inputs=1, type_rel=_predicate_rel, compute=_isinf, pattern=OpPattern.ELEMWISE,
    doc="Elementwise test for infinity (bool), of the signs ``detect_*`` select.",
    attrs=(AttrSpec("detect_negative", "bool", True), AttrSpec("detect_positive", "bool", True)))


# -- mod ---------------------------------------------------------------------------------------


def _mod_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    dt = same_dtype([a, b])
    if dt == "bool":
        raise fail("needs numeric inputs, got bool")
    return TensorType(broadcast_shapes(a.shape, b.shape), dt)


def _remainder(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def compute(attrs: Attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        x, y = _np_float(a), _np_float(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = fn(x, y)
        if a.dtype.kind in "iu":  # an integer division by zero gives 0
            out = np.where(np.broadcast_to(y, np.shape(out)) == 0, 0, out)
        return np.asarray(out).astype(a.dtype, copy=False)
    return compute


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        q = np.floor_divide(x, y)  # rounded down: one up where the exact quotient is negative and inexact
        return q + ((q < 0) & (q * y != x)).astype(q.dtype)
    return np.trunc(np.true_divide(x, y))


def _binary_numeric(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str) -> Any:
    return register_op(name, num_inputs=2, type_rel=_mod_rel, compute=_remainder(fn),
                       pattern=OpPattern.BROADCAST, doc=doc)


mod: _sig.Mod = _binary_numeric(
    "mod", np.fmod, "Broadcasting truncated remainder, signed like the dividend (Relay's ``mod``, C's "
    "``fmod``;\n``floor_mod`` is Python's ``%``).")
trunc_mod: _sig.TruncMod = _binary_numeric(
    "trunc_mod", np.fmod, "Broadcasting truncated remainder, signed like the dividend (as ``mod``).")
floor_mod: _sig.FloorMod = _binary_numeric(
    "floor_mod", np.mod, "Broadcasting floor remainder, signed like the divisor (Python's ``%``).")
floor_divide: _sig.FloorDivide = _binary_numeric(
    "floor_divide", np.floor_divide, "Broadcasting quotient rounded down (Python's ``//``).")
trunc_divide: _sig.TruncDivide = _binary_numeric(
    "trunc_divide", _trunc_div, "Broadcasting quotient rounded toward zero.")


# -- cumsum / cumprod ----------------------------------------------------------------------------


def _scan_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    if len(types) not in (1, 2):
        raise fail(f"takes data and an optional axis tensor, got {len(types)} arguments")
    t = tensor(types[0], "data")
    if t.dtype == "bool":
        raise fail("needs a numeric input, got bool")
    if len(types) == 2:
        _scalar_int(types[1], "axis")
    elif t.ndim:
        normalize_axis(attrs["axis"], t.ndim)
    return t


def _scan(name: str, fn: Callable[..., np.ndarray], identity: int, doc: str) -> Any:
    def compute(attrs: Attrs, x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
        ax = attrs["axis"] if axis is None else int(_scalar_value(axis))
        if x.ndim == 0:
            return x.copy() if not attrs["exclusive"] else np.full((), identity, dtype=x.dtype)
        ax = _run_axis(name, ax, x.ndim)
        v = _np_float(x)
        if attrs["reverse"]:
            v = np.flip(v, ax)
        out = fn(v, axis=ax, dtype=v.dtype)
        if attrs["exclusive"]:
            pad = [(0, 0)] * x.ndim
            pad[ax] = (1, 0)
            out = np.pad(np.delete(out, -1, axis=ax) if out.shape[ax] else out, pad,
                         constant_values=identity)
            if x.shape[ax] == 0:
                out = v.copy()
        if attrs["reverse"]:
            out = np.flip(out, ax)
        return np.ascontiguousarray(out).astype(x.dtype, copy=False)

    return register_op(
        name, num_inputs=None, type_rel=_scan_rel, compute=compute, pattern=OpPattern.OPAQUE, doc=doc,
        attrs=(AttrSpec("axis", "int", 0, "ignored when the axis is given as a second argument"),
               AttrSpec("exclusive", "bool", False, "element i excludes x[i]"),
               AttrSpec("reverse", "bool", False, "scan from the end")))


cumsum: _sig.Cumsum = _scan("cumsum", np.cumsum, 0,
                            "Running sum along ``axis`` (or a run-time axis tensor, a 2nd argument).")
cumprod: _sig.Cumprod = _scan("cumprod", np.cumprod, 1,
                              "Running product along ``axis`` (or a run-time axis tensor, a 2nd "
                              "argument).")


# -- einsum ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _parse_equation(eq: str) -> tuple[tuple[str, ...], str | None]:
    """The input terms and the output term (None in implicit mode) of an einsum equation,
    spaces removed; an AttrError for a malformed one."""
    def bad(why: str) -> AttrError:
        return AttrError(f"operator 'einsum', attribute 'equation': {why}, got {eq!r}")

    s = eq.replace(" ", "")
    if s.count("->") > 1:
        raise bad("more than one '->'")
    lhs, _, rhs = s.partition("->")
    terms = tuple(lhs.split(","))
    out = rhs if "->" in s else None
    for term in [*terms, *([out] if out is not None else [])]:
        if term.count("...") > 1:
            raise bad("more than one '...' in a term")
        if not all(c.isascii() and c.isalpha() for c in term.replace("...", "")):
            raise bad("terms hold letters and at most one '...'")
    if out is not None:
        letters = out.replace("...", "")
        if len(set(letters)) != len(letters):
            raise bad("an output label is repeated")
        used = set("".join(terms))
        if any(c not in used for c in letters):
            raise bad("an output label does not appear in the inputs")
        if "..." in out and not any("..." in t for t in terms):
            raise bad("'...' in the output but in no input")
    return terms, out


def _einsum_canon(a: dict[str, Any]) -> dict[str, Any]:
    eq = a["equation"]
    _parse_equation(eq)
    return {**a, "equation": eq.replace(" ", "")}


def einsum_type(types: tuple[TensorType, ...], equation: str) -> TensorType:
    """The type of ``einsum(*types, equation=...)`` (numpy's rules: a repeated label takes a
    diagonal, a label of size 1 broadcasts, the ``...`` dimensions broadcast together)."""
    terms, out = _parse_equation(equation)
    if len(terms) != len(types):
        raise fail(f"equation {equation!r} has {len(terms)} input term(s), got {len(types)} operand(s)")
    dt = same_dtype(list(types))
    sizes: dict[str, DimLike] = {}
    ell: tuple[DimLike, ...] = ()
    for i, (term, t) in enumerate(zip(terms, types)):
        letters = term.replace("...", "")
        n_ell = t.ndim - len(letters)
        if n_ell < 0 or (n_ell > 0 and "..." not in term):
            raise fail(f"operand {i} of shape {shape_str(t.shape)} does not match term {term!r} "
                       f"of {equation!r}")
        head, _, _tail = term.partition("...")
        dims = list(t.shape)
        if "..." in term:
            k = len(head)
            ell = broadcast_shapes(ell, tuple(dims[k:k + n_ell]))
            del dims[k:k + n_ell]
        own: dict[str, DimLike] = {}
        for c, d in zip(letters, dims):
            if c in own and unify_dims(own[c], d) is None:  # a diagonal: no size-1 broadcasting
                raise fail(f"label {c!r} repeated in operand {i} has sizes {own[c]} and {d} "
                           f"({shape_str(t.shape)}, {equation!r})")
            own[c] = d
            old = sizes.get(c)
            if old is None or old == 1:
                sizes[c] = d if old is None or d != 1 else old
            elif d != 1:
                u = unify_dims(old, d)
                if u is None:
                    raise fail(f"label {c!r} of {equation!r} has sizes {old} and {d}")
                sizes[c] = u
    if out is None:
        counts = "".join(terms).replace("...", "")
        out = ("..." if any("..." in t for t in terms) else "") + "".join(
            sorted(c for c in set(counts) if counts.count(c) == 1))
    if ell and "..." not in out:
        raise fail(f"equation {equation!r}: the '...' dimensions {shape_str(ell)} are missing "
                   "from the output")
    head, _, tail = out.partition("...")
    shape = [sizes[c] for c in head] + (list(ell) if "..." in out else []) + [sizes[c] for c in tail]
    return TensorType(tuple(shape), dt)


def _einsum_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    if not types:
        raise fail("needs at least one operand")
    return einsum_type(tuple(tensor(t, f"operand {i}") for i, t in enumerate(types)), attrs["equation"])


def _einsum_matmul(eq: str, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """A two-operand einsum as one batched ``matmul`` (BLAS), or None when the equation is not
    of that form (``...``, a repeated label, a size-1 label broadcast): numpy's own einsum
    loops instead, 10x slower on attention-sized products."""
    (ta, tb), out = _parse_equation(eq)
    if "..." in eq or len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return None
    if out is None:
        both = ta + tb
        out = "".join(sorted(c for c in set(both) if both.count(c) == 1))
    size = dict(zip(ta, a.shape))
    for c, d in zip(tb, b.shape):
        if size.setdefault(c, d) != d:
            return None
    ga = tuple(i for i, c in enumerate(ta) if c not in tb and c not in out)  # summed out alone
    gb = tuple(i for i, c in enumerate(tb) if c not in ta and c not in out)
    if ga:
        a, ta = a.sum(axis=ga, dtype=a.dtype), "".join(c for i, c in enumerate(ta) if i not in ga)
    if gb:
        b, tb = b.sum(axis=gb, dtype=b.dtype), "".join(c for i, c in enumerate(tb) if i not in gb)
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def prod(cs: list[str]) -> int:
        return int(np.prod([size[c] for c in cs], dtype=np.int64))

    am = a.transpose([ta.index(c) for c in batch + left + contract]).reshape(
        prod(batch), prod(left), prod(contract))
    bm = b.transpose([tb.index(c) for c in batch + contract + right]).reshape(
        prod(batch), prod(contract), prod(right))
    order = batch + left + right
    r = np.matmul(am, bm).reshape([size[c] for c in order])
    return r.transpose([order.index(c) for c in out])


def _einsum(attrs: Attrs, *xs: np.ndarray) -> np.ndarray:
    dt = xs[0].dtype
    vs = [_np_float(x) for x in xs]
    out = _einsum_matmul(attrs["equation"], vs[0], vs[1]) if len(vs) == 2 else None
    if out is None:
        out = np.einsum(attrs["equation"], *vs)
    return np.asarray(out).astype(dt, copy=False)


einsum: _sig.Einsum = register_op(
    "einsum", num_inputs=None, type_rel=_einsum_rel, compute=_einsum,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Einstein summation of the operands by ``equation`` (numpy's ``einsum`` rules).",
    attrs=(AttrSpec("equation", "str"),), canonicalize=_einsum_canon)


# -- trilu, eye_like, det ------------------------------------------------------------------------


def _trilu_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0], "data")
    _scalar_int(types[1], "k")
    if t.ndim < 2:
        raise fail(f"data must have rank >= 2, got {shape_str(t.shape)}")
    return t


def _trilu(attrs: Attrs, x: np.ndarray, k: np.ndarray) -> np.ndarray:
    kk = int(_scalar_value(k))
    n, m = x.shape[-2:]
    rows = np.arange(n).reshape(-1, 1)
    cols = np.arange(m).reshape(1, -1)
    keep = cols - rows >= kk if attrs["upper"] else cols - rows <= kk
    return np.where(keep, x, np.zeros((), dtype=x.dtype))


trilu: _sig.Trilu = register_op(
    "trilu", num_inputs=2, type_rel=_trilu_rel, compute=_trilu, pattern=OpPattern.INJECTIVE,
    doc="The upper or lower triangle of ``data`` from the ``k``-th diagonal (``k``: a scalar).",
    attrs=(AttrSpec("upper", "bool", True),))


def _eye_like_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0], "data")
    if t.ndim != 2:
        raise fail(f"data must be 2-D, got {shape_str(t.shape)}")
    return TensorType(t.shape, attrs["dtype"] or t.dtype)


eye_like: _sig.EyeLike = register_op(
    "eye_like", num_inputs=1, type_rel=_eye_like_rel,
    compute=lambda attrs, x: np.eye(x.shape[0], x.shape[1], attrs["k"], dtype=attrs["dtype"] or x.dtype),
    pattern=OpPattern.ELEMWISE,
    doc="Ones on the ``k``-th diagonal of a matrix shaped like ``data``, zeros elsewhere.",
    attrs=(AttrSpec("k", "int", 0), AttrSpec("dtype", "str", "", "a dtype; '' for the input's")),
    canonicalize=lambda a: {**a, "dtype": normalize_dtype(a["dtype"]) if a["dtype"] else ""})


def _det_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0], "data")
    if not _is_float(t.dtype):
        raise fail(f"needs a floating-point input, got {t.dtype}")
    if t.ndim < 2:
        raise fail(f"data must have rank >= 2, got {shape_str(t.shape)}")
    if unify_dims(t.shape[-1], t.shape[-2]) is None:
        raise fail(f"the matrices of {shape_str(t.shape)} are not square")
    return TensorType(t.shape[:-2], t.dtype)


def _det(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    v = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    return np.asarray(np.linalg.det(v)).astype(x.dtype, copy=False)


det: _sig.Det = register_op(
    "det", num_inputs=1, type_rel=_det_rel, compute=_det, pattern=OpPattern.OPAQUE,
    doc="The determinant of each square matrix of the last two axes.")


# -- dft ---------------------------------------------------------------------------------------


def dft_type(data: TensorType, axis: int | None, inverse: bool, onesided: bool, length: int) -> TensorType:
    """The type of ``dft``: ``data`` is ``[..., 1 or 2]`` (real, or real and imaginary parts);
    ``axis`` None means a run-time axis."""
    if not _is_float(data.dtype):
        raise fail(f"needs a floating-point input, got {data.dtype}")
    if data.ndim < 2:
        raise fail(f"data must have rank >= 2 (signal dimensions and 1 or 2 components), got "
                   f"{shape_str(data.shape)}")
    last = data.shape[-1]
    if type(last) is int and last not in (1, 2):
        raise fail(f"the last dimension must be 1 (real) or 2 (complex), got {shape_str(data.shape)}")
    out_last = 1 if inverse and onesided else 2
    if axis is None:
        if not onesided and not length:
            return TensorType(data.shape[:-1] + (out_last,), data.dtype)
        return TensorType((AnyDim,) * (data.ndim - 1) + (out_last,), data.dtype)
    ax = normalize_axis(axis, data.ndim)
    if ax == data.ndim - 1:
        raise fail(f"axis {axis} is the component axis of {shape_str(data.shape)}")
    d = data.shape[ax]
    n: DimLike = length or (dim_mul(dim_sub(d, 1), 2) if inverse and onesided and d is not AnyDim else d)
    if onesided and not inverse:
        n = dim_add(dim_floordiv(n, 2), 1) if n is not AnyDim else AnyDim
    shape = list(data.shape)
    shape[ax] = n
    shape[-1] = out_last
    return TensorType(tuple(shape), data.dtype)


def _dft_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    if len(types) not in (1, 2):
        raise fail(f"takes data and an optional axis tensor, got {len(types)} arguments")
    if len(types) == 2:
        _scalar_int(types[1], "axis")
    return dft_type(tensor(types[0], "data"), attrs["axis"] if len(types) == 1 else None,
                    attrs["inverse"], attrs["onesided"], attrs["dft_length"])


def dft_compute(x: np.ndarray, axis: int, inverse: bool, onesided: bool, length: int) -> np.ndarray:
    """``dft`` on an array (``length`` 0: the default length)."""
    ax = axis % x.ndim
    v = _np_float(x)
    sig = v[..., 0] if v.shape[-1] == 1 else v[..., 0] + 1j * v[..., 1]
    n = length or (2 * (x.shape[ax] - 1) if inverse and onesided else x.shape[ax])
    if inverse and onesided:
        out = np.fft.irfft(sig, n=n, axis=ax)[..., np.newaxis]
        return out.astype(x.dtype)
    res = np.fft.ifft(sig, n=n, axis=ax) if inverse else np.fft.fft(sig, n=n, axis=ax)
    if onesided:
        res = np.take(res, np.arange(n // 2 + 1), axis=ax)
    return np.stack([res.real, res.imag], axis=-1).astype(x.dtype)


def _dft(attrs: Attrs, x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    ax = _run_axis("dft", attrs["axis"] if axis is None else int(_scalar_value(axis)), x.ndim)
    if ax == x.ndim - 1:
        raise EvaluationError(f"dft: axis {ax} is the component axis of data of shape {x.shape}")
    return dft_compute(x, ax, attrs["inverse"], attrs["onesided"],
                       attrs["dft_length"])


def _dft_canon(a: dict[str, Any]) -> dict[str, Any]:
    if a["dft_length"] < 0:
        raise AttrError(f"operator 'dft', attribute 'dft_length': must be non-negative, "
                        f"got {a['dft_length']}")
    return a


dft: _sig.Dft = register_op(
    "dft", num_inputs=None, type_rel=_dft_rel, compute=_dft, pattern=OpPattern.OPAQUE,
    doc="Discrete Fourier transform along ``axis`` of ``[..., 1 or 2]`` (real, complex) data.",
    attrs=(AttrSpec("axis", "int", -2, "ignored when the axis is given as a second argument"),
           AttrSpec("inverse", "bool", False),
           AttrSpec("onesided", "bool", False, "only the n // 2 + 1 non-redundant frequencies"),
           AttrSpec("dft_length", "int", 0, "the transform length; 0 for the axis's")),
    canonicalize=_dft_canon)


# -- stft --------------------------------------------------------------------------------------


def _stft_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    sig, step, win, length = (tensor(t, w) for t, w in zip(
        types, ("signal", "frame_step", "window", "frame_length")))
    if not _is_float(sig.dtype):
        raise fail(f"needs a floating-point signal, got {sig.dtype}")
    if sig.ndim != 3:
        raise fail(f"signal must be [batch, length, 1 or 2], got {shape_str(sig.shape)}")
    if type(sig.shape[2]) is int and sig.shape[2] not in (1, 2):
        raise fail(f"the last dimension of signal must be 1 or 2, got {shape_str(sig.shape)}")
    _scalar_int(step, "frame_step")
    _scalar_int(length, "frame_length")
    if win.ndim != 1:
        raise fail(f"window must be 1-D, got {shape_str(win.shape)}")
    w = win.shape[0]
    bins: DimLike = AnyDim
    if type(w) is int and w > 0:
        bins = w // 2 + 1 if attrs["onesided"] else w
    return TensorType((sig.shape[0], AnyDim, bins, 2), sig.dtype)


def _stft(attrs: Attrs, x: np.ndarray, step: np.ndarray, window: np.ndarray,
          length: np.ndarray) -> np.ndarray:
    hop = int(_scalar_value(step))
    n = int(_scalar_value(length)) or (window.shape[0] if window.size else x.shape[1])
    win = _np_float(window) if window.size else np.ones(n, dtype=np.float64)
    if win.shape[0] != n:
        raise EvaluationError(f"stft: window of length {win.shape[0]} != frame_length {n}")
    if hop < 1:
        raise EvaluationError(f"stft: frame_step must be positive, got {hop}")
    v = _np_float(x)
    frames = max(0, 1 + (x.shape[1] - n) // hop)
    idx = np.arange(frames)[:, None] * hop + np.arange(n)[None, :]
    framed = v[:, idx, :] * win[None, None, :, None]  # [batch, frames, n, comps]
    sigc = framed[..., 0] if v.shape[-1] == 1 else framed[..., 0] + 1j * framed[..., 1]
    res = np.fft.fft(sigc, n=n, axis=-1)
    if attrs["onesided"]:
        res = res[..., :n // 2 + 1]
    return np.stack([res.real, res.imag], axis=-1).astype(x.dtype)


stft: _sig.Stft = register_op(
    "stft", num_inputs=4, type_rel=_stft_rel, compute=_stft, pattern=OpPattern.OPAQUE,
    doc="Short-time Fourier transform of ``signal`` ``[batch, length, 1 or 2]``.",
    attrs=(AttrSpec("onesided", "bool", True, "only the n // 2 + 1 non-redundant frequencies"),))


# -- window functions, mel_weight_matrix --------------------------------------------------------


def _generator_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _scalar_int(types[0], "size")
    return TensorType((AnyDim,), attrs["dtype"])


def _window(name: str, coeffs: tuple[float, ...], doc: str) -> Any:
    def compute(attrs: Attrs, size: np.ndarray) -> np.ndarray:
        n = int(_scalar_value(size))
        denom = n if attrs["periodic"] else n - 1
        k = np.arange(max(n, 0), dtype=np.float64)
        ang = 2.0 * np.pi * k / denom if denom > 0 else np.zeros_like(k)
        w = np.zeros_like(k)
        for j, c in enumerate(coeffs):
            w = w + (c if j % 2 == 0 else -c) * np.cos(j * ang)
        return w.astype(attrs["dtype"])

    return register_op(
        name, num_inputs=1, type_rel=_generator_rel, compute=compute, pattern=OpPattern.OPAQUE, doc=doc,
        attrs=(AttrSpec("periodic", "bool", True, "periodic (for spectral analysis), else symmetric"),
               AttrSpec("dtype", "dtype", "float32")))


hann_window: _sig.HannWindow = _window(
    "hann_window", (0.5, 0.5), "The Hann window of ``size`` (a scalar integer tensor) points.")
hamming_window: _sig.HammingWindow = _window(
    "hamming_window", (25 / 46, 21 / 46), "The Hamming window of ``size`` (a scalar integer tensor) points.")
blackman_window: _sig.BlackmanWindow = _window(
    "blackman_window", (0.42, 0.5, 0.08), "The Blackman window of ``size`` (a scalar integer tensor) points.")


def _mel_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    names = ("num_mel_bins", "dft_length", "sample_rate")
    for t, w in zip(types[:3], names):
        _scalar_int(t, w)
    for t, w in zip(types[3:], ("lower_edge_hertz", "upper_edge_hertz")):
        s = tensor(t, w)
        if not _is_float(s.dtype) or s.ndim > 1:
            raise fail(f"{w} must be a floating-point scalar, got {s}")
    return TensorType((AnyDim, AnyDim), attrs["dtype"])


def _mel(attrs: Attrs, bins: np.ndarray, length: np.ndarray, rate: np.ndarray, lo: np.ndarray,
         hi: np.ndarray) -> np.ndarray:
    nb, n, sr = (int(_scalar_value(v)) for v in (bins, length, rate))
    fl, fh = float(_scalar_value(lo)), float(_scalar_value(hi))
    if nb < 0 or n < 0 or sr <= 0:
        raise EvaluationError(f"mel_weight_matrix: needs num_mel_bins >= 0, dft_length >= 0 and "
                              f"sample_rate > 0, got {nb}, {n}, {sr}")
    spec = n // 2 + 1

    lo_mel = 2595.0 * np.log1p(fl / 700.0) / np.log(10.0)
    hi_mel = 2595.0 * np.log1p(fh / 700.0) / np.log(10.0)
    mel = np.arange(nb + 2) * ((hi_mel - lo_mel) / (nb + 2)) + lo_mel  # ONNX's step: (hi - lo) / (bins + 2)
    hz = 700.0 * np.expm1(mel / 2595.0 * np.log(10.0))
    edges = (((n + 1) * hz) // sr).astype(np.int64)
    k = np.arange(spec).reshape(-1, 1)
    low, center, high = edges[:-2], edges[1:-1], edges[2:]
    up = (k - low) / np.maximum(center - low, 1)
    down = (high - k) / np.maximum(high - center, 1)
    out = np.where((k >= low) & (k <= center) & (center > low), up, 0.0)
    out = np.where((k == center) & (center == low), 1.0, out)
    out = np.where((k >= center) & (k < high), down, out)
    return out.astype(attrs["dtype"])


mel_weight_matrix: _sig.MelWeightMatrix = register_op(
    "mel_weight_matrix", num_inputs=5, type_rel=_mel_rel, compute=_mel, pattern=OpPattern.OPAQUE,
    doc="The ``[dft_length // 2 + 1, num_mel_bins]`` mel filter bank matrix.",
    attrs=(AttrSpec("dtype", "dtype", "float32"),))


# -- bernoulli -----------------------------------------------------------------------------------


def _bernoulli_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    t = tensor(types[0], "probabilities")
    if not _is_float(t.dtype):
        raise fail(f"needs floating-point probabilities, got {t.dtype}")
    return TensorType(t.shape, attrs["dtype"] or t.dtype)


def _bernoulli(attrs: Attrs, p: np.ndarray) -> np.ndarray:
    u = np.random.default_rng(attrs["seed"]).random(p.shape)
    return (u < _np_float(p)).astype(attrs["dtype"] or p.dtype)


bernoulli: _sig.Bernoulli = register_op(
    "bernoulli", num_inputs=1, type_rel=_bernoulli_rel, compute=_bernoulli, pattern=OpPattern.OPAQUE,
    doc="1 with probability ``p``, else 0: a draw that is a function of ``p``, ``seed`` and shape.",
    attrs=(AttrSpec("seed", "int", 0, "the generator's seed (numpy's default_rng)"),
           AttrSpec("dtype", "str", "", "a dtype; '' for the input's")),
    canonicalize=lambda a: {**a, "dtype": normalize_dtype(a["dtype"]) if a["dtype"] else ""})
