"""SimplifyExpr: algebraic identities and layout-op cancellations, as pattern rules.

Rules (each only when it keeps the result's type, checked with inferred types):

* ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x``, ``x - 0`` -> ``x`` (the
  constant all ones / all zeros, and broadcasting not changing shape or dtype);
* ``reshape(reshape(x))`` -> ``reshape(x)``; a reshape to ``x``'s own shape -> ``x``;
* ``transpose(transpose(x))`` -> one transpose with composed axes, or ``x``; an
  identity transpose -> ``x``;
* ``negative(negative(x))`` -> ``x``; ``cast`` to ``x``'s own dtype -> ``x``;
* ``clip(clip(x))`` -> one ``clip`` with the composed bounds;

and the rule classes of TVM's SimplifyExpr (``src/relay/transforms/simplify_expr.cc``) for
the operators pyir has:

* ``zeros_like(y)``/``ones_like(y)`` of a static shape -> ``zeros``/``ones`` (ConcretizeLike);
* ``x + x`` -> ``x * 2`` (SimplifyAdd); ``n / sqrt(x)`` -> ``n * rsqrt(x)`` (SimplifyRSqrt);
* ``x + zeros``, ``x * ones``, ``x - zeros``, ``x / ones`` (and ``_like``) -> ``x``
  (EliminateIdentity); ``op(full(c), x)`` -> ``op(c, x)`` for a broadcasting ``op`` when
  ``x`` alone has the result's type (FullElementwise);
* ``cast(cast(x, t1), t2)`` -> ``cast(x, t2)`` when ``t1`` keeps every value of ``x``
  (SimplifyConsecutiveCast; numpy's ``safe`` casting, where TVM also drops int -> uint);
* ``(x + c1) * c2`` -> ``x * c2 + c1 * c2`` (SwitchAddMultiply); ``(x + c1) + c2``,
  ``(x * c1) * c2`` -> one constant (SimplifyAdjacentMultiplyOrAdd); every operand order;
* ``argmax``/``argmin`` of ``qnn.dequantize(x)`` with positive scales -> of ``x``
  (SimplifyDQArgMax/Min);
* ``cast(...(clip(x, lo, hi)))``: the casts whose dtype holds ``[lo, hi]`` go
  (SimplifyClipAndConsecutiveCast); ``clip`` over the whole range of its dtype -> ``x``
  (SimplifyClip).

Not ported: SimplifyBinomial, and the rules of operators pyir does not have
(``layout_transform``, ``contrib_reverse_reshape``, ``cast_like``, ``reshape_like``,
``full_like``, ``collapse_sum_like``, ``broadcast_to_like``, ``argsort``).

Rules run to a fixpoint (see :func:`pyir.rewrite.pattern_rewrite.rewrite_rules`), so the pass is
idempotent; lineage is recorded automatically (``x * 1 -> x`` derives ``x`` from
the multiply).

Example (``tests/golden/SimplifyExpr/docstring.txt``, run by
``tests/test_golden.py``)::

    # before
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = multiply(%x, 1.0f);
      %1 = transpose(%0);
      transpose(%1)
    }

    # after SimplifyExpr()
    def @main(%x: Tensor[(2, 3), float32]) {
      %x
    }

The same, built in Python:

>>> import pyir
>>> x = pyir.var("x", shape=(2, 3))
>>> y = pyir.op.transpose(pyir.op.transpose(pyir.op.multiply(x, pyir.const(1.0))))
>>> SimplifyExpr()(pyir.Module.from_expr(y))["main"].body is x
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import op
from ..analysis.interp import evaluate
from ..ir.expr import Call, Constant, Expr, Function, Op, const
from ..ir.lineage import derive
from ..ir.module import Module
from ..ir.opdef import OpPattern, get_op_def, list_ops
from ..ir.types import TensorType
from ..rewrite.pattern import CallPattern, Match, Pattern, is_constant, is_op, wildcard
from ..rewrite.pattern_rewrite import Rule, rewrite_function
from .base import FunctionPass

__all__ = ["SimplifyExpr", "SIMPLIFY_RULES"]

_x = wildcard()
_c = is_constant()


def _all_equal(c: Expr, value: float) -> bool:
    data = c.data  # type: ignore[attr-defined]
    if data.dtype.kind not in "biuf":
        return False
    if data.size == 1:
        return bool(data.item() == value)
    return bool(np.all(data == value))


def _same_type_as_x(m: Match) -> Expr | None:
    x = m[_x]
    tx = m.type_of(x)
    return x if tx is not None and tx is m.type_of(m.expr) else None


def _identity_with(value: float) -> Any:
    def cb(m: Match) -> Expr | None:
        return _same_type_as_x(m) if _all_equal(m[_c], value) else None

    return cb


def _reshape_reshape(m: Match) -> Expr | None:
    t = m.type_of(m.expr)
    if type(t) is not TensorType or not t.static:
        return None
    return op.reshape(m[_x], newshape=t.shape)  # type: ignore[arg-type]


def _reshape_same(m: Match) -> Expr | None:
    return _same_type_as_x(m)


def _perm(axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(reversed(range(ndim)))
    return tuple(a % ndim for a in axes)


def _rank(m: Match, e: Expr) -> int | None:
    t = m.type_of(e)
    return t.ndim if type(t) is TensorType else None


_inner_t = is_op("transpose")(_x)


def _transpose_transpose(m: Match) -> Expr | None:
    x = m[_x]
    nd = _rank(m, x)
    if nd is None:
        return None
    p1 = _perm(m[_inner_t].attrs["axes"], nd)  # type: ignore[attr-defined]
    p2 = _perm(m.expr.attrs["axes"], nd)  # type: ignore[attr-defined]
    composed = tuple(p1[j] for j in p2)
    if composed == tuple(range(nd)):
        return x
    return op.transpose(x, axes=composed)


def _transpose_identity(m: Match) -> Expr | None:
    nd = _rank(m, m[_x])
    if nd is None or _perm(m.expr.attrs["axes"], nd) != tuple(range(nd)):  # type: ignore[attr-defined]
        return None
    return m[_x]


def _negative_negative(m: Match) -> Expr | None:
    return m[_x]


def _cast_same(m: Match) -> Expr | None:
    t = m.type_of(m[_x])
    if type(t) is not TensorType or t.dtype != m.expr.attrs["dtype"]:  # type: ignore[attr-defined]
        return None
    return m[_x]


_inner_clip = is_op("clip")(_x)


def _clip_clip(m: Match) -> Expr | None:
    a1, b1 = m[_inner_clip].attrs["a_min"], m[_inner_clip].attrs["a_max"]  # type: ignore[attr-defined]
    a2, b2 = m.expr.attrs["a_min"], m.expr.attrs["a_max"]  # type: ignore[attr-defined]
    # clip(clip(x, a1, b1), a2, b2) is monotone in x, identity where both ranges hold,
    # and saturates at clip(a1, a2, b2) and clip(b1, a2, b2).
    lo = min(max(a1, a2), b2)
    hi = min(max(b1, a2), b2)
    return op.clip(m[_x], a_min=lo, a_max=hi)


# -- the rules TVM's SimplifyExpr has besides the above (src/relay/transforms/simplify_expr.cc) --

_HAVE = frozenset(list_ops())
_y = wildcard()
_c1 = is_constant()
_c2 = is_constant()


def _tensor(m: Match, e: Expr) -> TensorType | None:
    t = m.type_of(e)
    return t if type(t) is TensorType else None


def _fold(e: Expr) -> Expr:
    """The constant a call of constants evaluates to (the interpreter's kernels: the dtype and
    rounding the program would have)."""
    with np.errstate(all="ignore"):
        return const(np.asarray(evaluate(e)))


def _scalar(value: Any, dtype: str) -> Constant:
    return const(np.asarray(value, dtype=dtype))


# zeros(...), ones(...), zeros_like(y), ones_like(y), full(c), full_like(y, c): a tensor of one value
_ZEROS = is_op("zeros")() | is_op("zeros_like")(wildcard())
_ONES = is_op("ones")() | is_op("ones_like")(wildcard())
_fill = is_constant()
_FULL: Pattern = is_op("full")(_fill)
if "full_like" in _HAVE:
    _FULL = _FULL | is_op("full_like")(wildcard(), _fill)
_FILLED = _ZEROS | _ONES | _FULL


def _fill_value(m: Match, filled: Expr, dtype: str) -> Constant | None:
    """The scalar a zeros/ones/full call fills its tensor with, as ``dtype``."""
    name = filled.op.name  # type: ignore[attr-defined]
    if name in ("zeros", "zeros_like"):
        return _scalar(0, dtype)
    if name in ("ones", "ones_like"):
        return _scalar(1, dtype)
    fill = m[_fill]
    data = fill.data  # type: ignore[attr-defined]
    if data.size != 1:
        return None
    return _scalar(data.reshape(()), dtype)


_left_full = CallPattern(wildcard(), [_FILLED, _x])
_right_full = CallPattern(wildcard(), [_x, _FILLED])


def _full_elementwise(m: Match) -> Expr | None:
    """``op(full(c, shape), x)`` -> ``op(c, x)`` for a broadcasting operator, when ``x`` alone
    has the result's type (TVM's FullElementwise)."""
    call = m.expr
    o = call.op  # type: ignore[attr-defined]
    if type(o) is not Op or get_op_def(o.name).pattern != OpPattern.BROADCAST:
        return None
    x = m[_x]
    t = _tensor(m, call)
    if t is None or m.type_of(x) is not t:
        return None
    left = call.args[1] is x  # type: ignore[attr-defined]
    filled = call.args[0 if left else 1]  # type: ignore[attr-defined]
    value = _fill_value(m, filled, t.dtype)
    if value is None:
        return None
    args = [value, x] if left else [x, value]
    return Call(o, args, call.attrs)  # type: ignore[attr-defined]


def _identity_of_filled(value: int) -> Any:
    """``x + zeros``, ``x * ones`` (and ``zeros_like``/``ones_like``) -> ``x`` when the type holds."""
    def cb(m: Match) -> Expr | None:
        filled = m.expr.args[0] if m.expr.args[1] is m[_x] else m.expr.args[1]  # type: ignore[attr-defined]
        name = filled.op.name
        if (name in ("zeros", "zeros_like")) != (value == 0):
            return None
        return _same_type_as_x(m)
    return cb


def _concretize(make: Any) -> Any:
    """``zeros_like(y)`` -> ``zeros(shape, dtype)`` and the like, once the shape is static."""
    def cb(m: Match) -> Expr | None:
        t = _tensor(m, m.expr)
        if t is None or not t.static:
            return None
        return make(m, t)
    return cb


def _widens(src: str, dst: str) -> bool:
    """Casting ``src`` to ``dst`` keeps every value (numpy's ``safe`` casting)."""
    try:
        return bool(np.can_cast(np.dtype(src), np.dtype(dst), casting="safe"))
    except TypeError:
        return False


_inner_cast = is_op("cast")(_x)


def _cast_cast(m: Match) -> Expr | None:
    """``cast(cast(x, t1), t2)`` -> ``cast(x, t2)`` when ``t1`` holds every value of ``x``'s type."""
    tx = _tensor(m, m[_x])
    if tx is None or not _widens(tx.dtype, m[_inner_cast].attrs["dtype"]):  # type: ignore[attr-defined]
        return None
    return op.cast(m[_x], dtype=m.expr.attrs["dtype"])  # type: ignore[attr-defined]


def _dtype_range(dtype: str) -> tuple[float, float] | None:
    d = np.dtype(dtype)
    if d.kind in "iu":
        info = np.iinfo(d)
        return float(info.min), float(info.max)
    if d.kind == "f":
        finfo = np.finfo(d)
        return float(finfo.min), float(finfo.max)
    return None


def _clip_then_casts(m: Match) -> Expr | None:
    """``cast(...cast(clip(x, lo, hi))...)``: drop the casts whose dtype holds ``[lo, hi]``
    (TVM's SimplifyClipAndConsecutiveCast)."""
    chain: list[Expr] = []
    e = m.expr
    while type(e) is Call and e.op is _CAST:
        chain.append(e)
        e = e.args[0]
    if not (type(e) is Call and e.op is _CLIP):
        return None
    lo, hi = e.attrs["a_min"], e.attrs["a_max"]
    kept = []
    for c in chain:  # outermost first
        r = _dtype_range(c.attrs["dtype"])  # type: ignore[attr-defined]
        if r is None or not (r[0] <= lo and hi <= r[1]):
            kept.append(c)
    out_t = _tensor(m, m.expr)
    last = kept[0] if kept else e
    res: Expr = e
    for c in reversed(kept):
        res = op.cast(res, dtype=c.attrs["dtype"])  # type: ignore[attr-defined]
    t_last = _tensor(m, last)
    if out_t is None or t_last is None:
        return None
    if t_last.dtype != out_t.dtype:
        res = op.cast(res, dtype=out_t.dtype)
    if res is m.expr:
        return None
    # the result derives from the inner casts too (the pattern saw the outer one)
    return derive(res, *chain[1:])  # type: ignore[return-value]


def _clip_whole_range(m: Match) -> Expr | None:
    """``clip(x, lo, hi)`` -> ``x`` when ``[lo, hi]`` holds every value of ``x``'s dtype."""
    t = _tensor(m, m.expr)
    r = _dtype_range(t.dtype) if t is not None else None
    if r is None:
        return None
    if m.expr.attrs["a_min"] <= r[0] and r[1] <= m.expr.attrs["a_max"]:  # type: ignore[attr-defined]
        return m[_x]
    return None


def _not_constant(m: Match) -> bool:
    return type(m[_x]) is not Constant


def _add_then_multiply(m: Match) -> Expr | None:
    """``(x + c1) * c2`` -> ``x * c2 + (c1 * c2)`` (mul-add is what FoldScaleAxis folds)."""
    if not _not_constant(m):
        return None
    c1, c2 = m[_c1], m[_c2]
    return op.add(op.multiply(m[_x], c2), _fold(op.multiply(c1, c2)))


def _adjacent(name: str) -> Any:
    """``(x op c1) op c2`` -> ``x op (c1 op c2)`` for op add or multiply."""
    build = getattr(op, name)

    def cb(m: Match) -> Expr | None:
        if not _not_constant(m):
            return None
        return build(m[_x], _fold(build(m[_c1], m[_c2])))
    return cb


def _twice(m: Match) -> Expr | None:
    """``x + x`` -> ``x * 2`` (TVM's SimplifyAdd)."""
    t = _tensor(m, m.expr)
    if t is None or t.dtype == "bool":
        return None
    return op.multiply(m[_x], _scalar(2, t.dtype))


def _rsqrt(m: Match) -> Expr | None:
    """``n / sqrt(x)`` -> ``n * rsqrt(x)``."""
    return op.multiply(m[_y], op.rsqrt(m[_x]))


_scale = is_constant()


def _dequantize_then_arg(m: Match) -> Expr | None:
    """``argmax(dequantize(x, s, zp))`` -> ``argmax(x)`` (argmin likewise): dequantizing is
    increasing when every scale is positive (TVM's SimplifyDQArgMax assumes it; a negative
    scale reverses the order, so pyir checks)."""
    scale = m[_scale].data  # type: ignore[attr-defined]
    if scale.dtype.kind not in "iuf" or not bool(np.all(scale > 0)):
        return None
    return Call(m.expr.op, [m[_x]], m.expr.attrs)  # type: ignore[attr-defined]


_CAST = Op("cast")
_CLIP = Op("clip")


def _commuted(name: str, a: Any, b: Any) -> Pattern:
    return is_op(name)(a, b) | is_op(name)(b, a)


_ADD_C1 = _commuted("add", _x, _c1)
_MUL_C1 = _commuted("multiply", _x, _c1)

_TVM_RULES: list[Rule] = [
    Rule(is_op("zeros_like")(wildcard()), _concretize(lambda m, t: op.zeros(shape=t.shape, dtype=t.dtype)),
         "concretize zeros_like"),
    Rule(is_op("ones_like")(wildcard()), _concretize(lambda m, t: op.ones(shape=t.shape, dtype=t.dtype)),
         "concretize ones_like"),
    Rule(is_op("add")(_x, _x), _twice, "x + x"),
    Rule(is_op("divide")(_y, is_op("sqrt")(_x)), _rsqrt, "n / sqrt(x)"),
    Rule(_commuted("add", _x, _ZEROS), _identity_of_filled(0), "x + zeros"),
    Rule(_commuted("multiply", _x, _ONES), _identity_of_filled(1), "x * ones"),
    Rule(is_op("subtract")(_x, _ZEROS), _identity_of_filled(0), "x - zeros"),
    Rule(is_op("divide")(_x, _ONES), _identity_of_filled(1), "x / ones"),
    Rule(is_op("cast")(_inner_cast), _cast_cast, "cast(cast(x)) widening"),
    Rule(_left_full | _right_full, _full_elementwise, "op(full, x)"),
    Rule(_commuted("multiply", _commuted("add", _x, _c1), _c2), _add_then_multiply, "(x + c1) * c2"),
    Rule(_commuted("multiply", _MUL_C1, _c2), _adjacent("multiply"), "x * c1 * c2"),
    Rule(_commuted("add", _ADD_C1, _c2), _adjacent("add"), "x + c1 + c2"),
    Rule(is_op("argmax")(is_op("qnn.dequantize")(_x, _scale, is_constant())), _dequantize_then_arg,
         "argmax(dequantize(x))"),
    Rule(is_op("argmin")(is_op("qnn.dequantize")(_x, _scale, is_constant())), _dequantize_then_arg,
         "argmin(dequantize(x))"),
    Rule(is_op("cast")(wildcard()), _clip_then_casts, "clip then casts"),
    Rule(is_op("clip")(_x), _clip_whole_range, "clip of the whole range"),
]


SIMPLIFY_RULES: tuple[Rule, ...] = (
    Rule(is_op("multiply")(_x, _c), _identity_with(1), "x * 1"),
    Rule(is_op("multiply")(_c, _x), _identity_with(1), "1 * x"),
    Rule(is_op("divide")(_x, _c), _identity_with(1), "x / 1"),
    Rule(is_op("add")(_x, _c), _identity_with(0), "x + 0"),
    Rule(is_op("add")(_c, _x), _identity_with(0), "0 + x"),
    Rule(is_op("subtract")(_x, _c), _identity_with(0), "x - 0"),
    Rule(is_op("reshape")(is_op("reshape")(_x)), _reshape_reshape, "reshape(reshape(x))"),
    Rule(is_op("reshape")(_x), _reshape_same, "reshape to the same shape"),
    Rule(is_op("transpose")(_inner_t), _transpose_transpose, "transpose(transpose(x))"),
    Rule(is_op("transpose")(_x), _transpose_identity, "identity transpose"),
    Rule(is_op("negative")(is_op("negative")(_x)), _negative_negative, "negative(negative(x))"),
    Rule(is_op("cast")(_x), _cast_same, "cast to the same dtype"),
    Rule(is_op("clip")(_inner_clip), _clip_clip, "clip(clip(x))"),
    *_TVM_RULES,
)
"""The rules of :class:`SimplifyExpr`, in the order they are tried."""


@dataclasses.dataclass(frozen=True)
class SimplifyExpr(FunctionPass):
    """Remove algebraic identities and cancel layout operators (see the module docstring)."""

    max_steps: int = 1000

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        return rewrite_function(func, SIMPLIFY_RULES, mod, max_steps=self.max_steps)
