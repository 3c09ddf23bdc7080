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

* ``zeros_like(y)``/``ones_like(y)``/``full_like(y, v)``/``collapse_sum_like(x, y)``/
  ``reshape_like(x, y)``/``broadcast_to_like(x, y)`` of a static shape -> ``zeros``/``ones``/
  ``full``/``collapse_sum_to``/``reshape``/``broadcast_to``, and ``cast_like(x, y)`` ->
  ``cast(x, dtype)`` (ConcretizeLike);
* ``x + x`` -> ``x * 2`` (SimplifyAdd); ``n / sqrt(x)`` -> ``n * rsqrt(x)`` (SimplifyRSqrt);
* ``x + zeros``, ``x * ones``, ``x - zeros``, ``x / ones`` (and ``_like``) -> ``x``
  (EliminateIdentity); ``op(full(c), x)`` -> ``op(c, x)`` for a broadcasting ``op`` when
  ``x`` alone has the result's type (FullElementwise);
* ``cast(cast(x, t1), t2)`` -> ``cast(x, t2)`` when ``t1`` keeps every value of ``x``
  (SimplifyConsecutiveCast; numpy's ``safe`` casting, where TVM also drops int -> uint);
* ``(x + c1) * c2`` -> ``x * c2 + c1 * c2`` (SwitchAddMultiply); ``(x + c1) + c2``,
  ``(x * c1) * c2`` -> one constant (SimplifyAdjacentMultiplyOrAdd); every operand order;
* ``argmax``/``argmin``/``argsort`` of ``qnn.dequantize(x)`` with positive scales -> of ``x``
  (SimplifyDQArgMax/Min/Sort);
* ``cast(...(clip(x, lo, hi)))``: the casts whose dtype holds ``[lo, hi]`` go
  (SimplifyClipAndConsecutiveCast); ``clip`` over the whole range of its dtype -> ``x``
  (SimplifyClip).

* ``a*x*x + b*x*y + c*y*y`` -> ``a * ((x + y*p) * (x + y*q))`` (SimplifyBinomial; for
  integer dtypes only when ``p`` and ``q`` are integers, see :func:`_binomial`).

Not ported: the rules of ``contrib_reverse_reshape`` (pyir does not have the operator), and
SimplifyTranspose's ``layout_transform`` half (transposes only).
FullElementwise is applied to add, subtract, multiply and divide (TVM: every broadcasting
operator; a rule per operator would make the rule set's summary match every subgraph).

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
import weakref
from typing import Any

import numpy as np

from .. import op
from ..analysis.interp import evaluate
from ..ir.expr import Call, Constant, Expr, Function, Op, const
from ..ir.lineage import derive
from ..ir.module import Module
from ..ir.node import Node
from ..ir.opdef import OpPattern, get_op_def, list_ops
from ..ir.traverse import post_order
from ..ir.types import TensorType
from ..rewrite.pattern import CallPattern, Match, is_constant, is_op, wildcard
from ..rewrite.pattern_rewrite import Rule, rewrite_function
from .base import FunctionPass

__all__ = ["SimplifyExpr", "SIMPLIFY_RULES"]

_x = wildcard()
_c = is_constant()


#: constant -> {value: whether every element equals it}: a constant is one node wherever it is
#: used (hash-consing), and the rules ask about the same few constants at every call of a chain
#: (numpy's comparison of a 4-element array costs ~30x a lookup); weak, so that no constant is
#: kept alive by the cache
_ALL_EQUAL: weakref.WeakKeyDictionary[Expr, dict[float, bool]] = weakref.WeakKeyDictionary()


def _all_equal(c: Expr, value: float) -> bool:
    data = c.data  # type: ignore[attr-defined]
    if data.dtype.kind not in "biuf":
        return False
    if data.size == 1:
        return bool(data.item() == value)
    known = _ALL_EQUAL.get(c)
    if known is None:
        known = _ALL_EQUAL[c] = {}
    r = known.get(value)
    if r is None:
        r = known[value] = bool((data == value).all())
    return r


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


_ZEROS = ("zeros", "zeros_like")
_ONES = ("ones", "ones_like")
_FULLS = ("full", "full_like")


def _filled(e: Expr, dtype: str) -> Constant | None:
    """For a zeros/ones/full(_like) call (a constant fill), the scalar it fills its tensor
    with, as ``dtype``; None for anything else."""
    if type(e) is not Call or type(e.op) is not Op:
        return None
    name = e.op.name
    if name in _ZEROS:
        return _scalar(0, dtype)
    if name in _ONES:
        return _scalar(1, dtype)
    if name in _FULLS:
        fill = e.args[-1]
        if type(fill) is Constant and fill.data.size == 1:
            return _scalar(fill.data.reshape(()), dtype)
    return None


def _binary_step(call: Call, type_of: Any) -> tuple[Expr, tuple[Expr, ...]] | None:
    """One of TVM's rules on the binary broadcasting ``call``, in the order TVM's SimplifyExpr
    lists them (see :func:`_binary`): the result and the operands it consumed, or None.
    Structural tests come first: the types are looked up only for a call that may change."""
    a, b = call.args
    o = call.op
    name = o.name  # type: ignore[attr-defined]
    if name == "add" and a is b:
        t = type_of(call)
        if type(t) is TensorType and t.dtype != "bool":
            return op.multiply(a, _scalar(2, t.dtype)), ()
        return None
    if name == "divide" and type(b) is Call and b.op is _SQRT:
        return op.multiply(a, op.rsqrt(b.args[0])), (b,)
    commutes = name in ("add", "multiply")
    sides = ((a, b, True), (b, a, False))
    filled = [(x, other, left) for x, other, left in sides
              if type(other) is Call and type(other.op) is Op and other.op.name in _FILLING]
    scalar: list[tuple[Expr, Expr]] = [(x, other) for x, other, left in sides[:2 if commutes else 1]
              if type(other) is Constant and other.data.size == 1]
    pairs = [(inner, c2) for inner, c2, _ in sides if commutes and type(c2) is Constant
             and type(inner) is Call and (inner.op is o or (name == "multiply" and inner.op is _ADD))]
    if not (filled or scalar or pairs):
        return None
    t = type_of(call)
    if type(t) is not TensorType:
        return None
    ident = _IDENTITY.get(name)
    if ident is not None:  # EliminateIdentity
        for x, other, left in filled:
            if left or commutes:
                value = _filled(other, t.dtype)
                if value is not None and _all_equal(value, ident) and type_of(x) is t:
                    return x, (other,)
        for x, c in scalar:  # a fill value a step below put there
            if _all_equal(c, ident) and type_of(x) is t:
                return x, (c,)
    for x, other, left in filled:  # FullElementwise
        value = _filled(other, t.dtype)
        if value is not None and type_of(x) is t:
            return Call(o, [x, value] if left else [value, x], call.attrs), (other,)
    for inner, c2 in pairs:
        i0, i1 = inner.args
        for x, c1 in ((i0, i1), (i1, i0)):
            if type(c1) is not Constant or type(x) is Constant:
                continue
            if inner.op is _ADD and name == "multiply":  # SwitchAddMultiply
                return op.add(op.multiply(x, c2), _fold(op.multiply(c1, c2))), (inner, c1, c2)
            folded = _fold(Call(o, [c1, c2], call.attrs))  # SimplifyAdjacentMultiplyOrAdd
            return Call(o, [x, folded], call.attrs), (inner, c1, c2)
    return None


_FILLING = frozenset(_ZEROS + _ONES + _FULLS)
_IDENTITY = {"add": 0, "subtract": 0, "multiply": 1, "divide": 1}


def _binary(m: Match) -> Expr | None:
    """TVM's rules on a binary broadcasting call, in the order TVM's SimplifyExpr lists them:

    * SimplifyAdd: ``x + x`` -> ``x * 2``;
    * SimplifyRSqrt: ``n / sqrt(x)`` -> ``n * rsqrt(x)``;
    * EliminateIdentity: ``x + zeros``, ``x * ones``, ``x - zeros``, ``x / ones`` (and the
      ``_like`` forms, and constants) -> ``x`` when ``x`` has the result's type;
    * FullElementwise: ``op(full(c), x)`` -> ``op(c, x)`` when ``x`` has the result's type;
    * SwitchAddMultiply: ``(x + c1) * c2`` -> ``x * c2 + (c1 * c2)``;
    * SimplifyAdjacentMultiplyOrAdd: ``(x + c1) + c2`` -> ``x + (c1 + c2)``, and for ``*``;

    every operand order of ``add`` and ``multiply``.  One rule per operator with a callback
    (not a pattern per form: a rule set of many forms costs a match per form at every call).
    The callback applies them until none does, so that its result, which derives from the
    operands the steps consumed (lineage), is the one the rewrite keeps."""
    call = m.expr
    cur: Expr = call
    consumed: list[Node] = []
    for _ in range(16):
        step = _binary_step(cur, m.type_of)  # type: ignore[arg-type]
        if step is None:
            break
        new, used = step
        for u in used:  # with the constants they hold (the fill value of a full)
            consumed.append(u)
            consumed.extend(c for c in u.children() if type(c) is Constant)
        cur = new
        if type(cur) is not Call or type(cur.op) is not Op or cur.op.name not in _BROADCAST_SET:
            break
    if cur is call:
        return None
    # Only nodes of the graph being rewritten (within three levels of the call) are origins:
    # the steps' own intermediate nodes are not.
    near: set[Node] = {call}
    level: list[Node] = [call]
    for _ in range(3):
        level = [c for n in level for c in n.children()]
        near.update(level)
    return derive(cur, *[n for n in consumed if n in near])  # type: ignore[return-value]


#: the binary broadcasting operators (FullElementwise's ``TOpPattern == kBroadcast``)
_BROADCAST = sorted(n for n in _HAVE if get_op_def(n).pattern == OpPattern.BROADCAST
                    and get_op_def(n).num_inputs == 2)
_BROADCAST_SET = frozenset(_BROADCAST)


def _concretize(make: Any) -> Any:
    """``zeros_like(y)`` -> ``zeros(shape, dtype)`` and the like, once the shape is static.
    The result derives from ``y`` too (only its shape is kept; a ``y`` used nowhere else is
    consumed: its own operands are not followed)."""
    def cb(m: Match) -> Expr | None:
        call = m.expr
        t = _tensor(m, call)
        if t is None or not t.static:
            return None
        out = make(m, t)
        args = call.args  # type: ignore[attr-defined]
        like = args[0] if call.op.name == "full_like" else args[-1]  # type: ignore[attr-defined]
        return derive(out, like) if like.children() else out  # type: ignore[return-value]
    return cb


def _concretize_cast_like(m: Match) -> Expr | None:
    """``cast_like(x, y)`` -> ``cast(x, dtype of y)``: only the dtype is needed, whatever the
    shapes (TVM's ConcretizeCastLikeRewrite)."""
    t = _tensor(m, m.expr)
    if t is None:
        return None
    like = m.expr.args[1]  # type: ignore[attr-defined]
    out = op.cast(m[_x], dtype=t.dtype)
    return derive(out, like) if like.children() else out  # type: ignore[return-value]


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


_scale = is_constant()


def _dequantize_then_arg(m: Match) -> Expr | None:
    """``argmax(dequantize(x, s, zp))`` -> ``argmax(x)`` (argmin likewise): dequantizing is
    increasing when every scale is positive (TVM's SimplifyDQArgMax assumes it; a negative
    scale reverses the order, so pyir checks)."""
    if m.expr.op not in _ARG_OPS:  # type: ignore[attr-defined]
        return None
    scale = m[_scale].data  # type: ignore[attr-defined]
    if scale.dtype.kind not in "iuf" or not bool(np.all(scale > 0)):
        return None
    return Call(m.expr.op, [m[_x]], m.expr.attrs)  # type: ignore[attr-defined]


def _square_or_product(e: Expr) -> list[tuple[float, Expr, Expr]]:
    """The readings of ``e`` as ``k * u * v`` with ``k`` a scalar constant (1 when absent):
    ``multiply(u, v)`` and, with every operand order, ``multiply(k, multiply(u, v))`` /
    ``multiply(u, multiply(k, v))`` (TVM's SimplifyBinomial terms)."""
    if type(e) is not Call or e.op is not _MUL:
        return []
    a, b = e.args
    out: list[tuple[float, Expr, Expr]] = []
    for w, inner in ((a, b), (b, a)):
        if type(inner) is not Call or inner.op is not _MUL:
            continue
        u, v = inner.args
        for k, f1, f2 in ((w, u, v), (u, w, v), (v, w, u)):
            if type(k) is Constant and k.data.size == 1 and k.data.dtype.kind in "iuf":
                out.append((k.data.item(), f1, f2))
    out.append((1, a, b))
    return out


def _binomial_terms(e: Expr) -> list[tuple[Expr, Expr, Expr]]:
    """``add(add(t1, t2), t3)`` in every operand order: the three terms, each order once."""
    if type(e) is not Call or e.op is not _ADD:
        return []
    a, b = e.args
    out = []
    for inner, t3 in ((a, b), (b, a)):
        if type(inner) is Call and inner.op is _ADD:
            out.append((inner.args[0], inner.args[1], t3))
    return out


def _binomial_roots(a: float, b: float, c: float, kind: str) -> tuple[float, float] | None:
    """``p, q`` with ``a x^2 + b x y + c y^2 = a (x + p y)(x + q y)``; None when the roots are
    not real, or (integer dtypes) not integers: TVM truncates them there, a wrong answer."""
    det = b * b - 4 * a * c
    if det < 0:
        return None
    if kind in "iu":
        s = round(det ** 0.5)
        if s * s != det or (b + s) % (2 * a) or (b - s) % (2 * a):
            return None
        return (b + s) // (2 * a), (b - s) // (2 * a)
    if det < 1e-4:  # TVM's test for one repeated factor
        return b / (2 * a), b / (2 * a)
    s = det ** 0.5
    return (b + s) / (2 * a), (b - s) / (2 * a)


def _binomial(m: Match) -> Expr | None:
    """``a*x*x + b*x*y + c*y*y`` (any operand order, the constants scalars) ->
    ``a * ((x + y*p) * (x + y*q))`` with ``p, q`` the roots of ``a t^2 - b t + c`` read
    as TVM's SimplifyBinomial does (``1 * e`` and ``y * 1`` written as ``e`` and ``y``, as
    TVM's EliminateIdentity then rewrites them) (x and y swap when ``c == 1 < a``; one shared factor
    when the discriminant is 0).  pyir's differences: any integer or float dtype (TVM's reads
    the constants of int32/float32/float64 only, taking 1 for others), and for integers only
    exact integer roots (TVM truncates the roots to the dtype: ``x^2 + 3xy + 2y^2`` stays
    exact, ``2x^2 + 5xy + 2y^2`` would become ``2 * (x + 2y) * (x + 0y)``)."""
    cases = _binomial_terms(m.expr)
    if not cases:
        return None
    t = _tensor(m, m.expr)
    if t is None or np.dtype(t.dtype).kind not in "iuf":
        return None
    kind = np.dtype(t.dtype).kind
    for terms in cases:
        for i, j, k in ((0, 1, 2), (0, 2, 1), (1, 2, 0)):  # the two squares, then the product
            for a, x1, x2 in _square_or_product(terms[i]):
                if x1 is not x2:
                    continue
                for c, y1, y2 in _square_or_product(terms[j]):
                    if y1 is not y2 or y1 is x1:
                        continue
                    for b, u, v in _square_or_product(terms[k]):
                        if {u, v} == {x1, y1} and u is not v:
                            out = _factor(x1, y1, a, b, c, t.dtype, kind)
                            return None if out is None else _derive_from_terms(out, m.expr, terms, x1, y1)
    return None


def _derive_from_terms(out: Expr, call: Expr, terms: tuple[Expr, ...], x: Expr, y: Expr) -> Expr:
    """``out`` deriving from the sums and products it replaces (lineage), not ``x`` or ``y``."""
    parts = [n for n in post_order(list(terms), stop=lambda n: n is x or n is y) if n is not x and n is not y]
    inner = [e for e in call.args if e not in terms]  # type: ignore[attr-defined]
    return derive(out, *inner, *parts)  # type: ignore[return-value]


def _factor(x: Expr, y: Expr, a: Any, b: Any, c: Any, dtype: str, kind: str) -> Expr | None:
    if c == 1 and a > 1:
        x, y, a, c = y, x, c, a
    if a == 0:
        return None
    roots = _binomial_roots(a, b, c, kind)
    if roots is None:
        return None
    p, q = roots

    def factor(r: Any) -> Expr:  # with ``y * 1`` already simplified (EliminateIdentity's work)
        return op.add(x, y if r == 1 else op.multiply(y, _scalar(r, dtype)))

    first = factor(p)
    prod = op.multiply(first, first if p == q else factor(q))
    return prod if a == 1 else op.multiply(_scalar(a, dtype), prod)


_MUL = Op("multiply")
_ARG_OPS = tuple(Op(n) for n in ("argmax", "argmin", "argsort") if n in _HAVE)
_CAST = Op("cast")
_CLIP = Op("clip")
_SQRT = Op("sqrt")
_ADD = Op("add")


_TVM_RULES: list[Rule] = [
    Rule(is_op("zeros_like")(wildcard()), _concretize(lambda m, t: op.zeros(shape=t.shape, dtype=t.dtype)),
         "concretize zeros_like"),
    Rule(is_op("ones_like")(wildcard()), _concretize(lambda m, t: op.ones(shape=t.shape, dtype=t.dtype)),
         "concretize ones_like"),
    *([Rule(is_op("full_like")(wildcard(), _x),
            _concretize(lambda m, t: op.full(m[_x], shape=t.shape, dtype=t.dtype)), "concretize full_like")]
      if "full_like" in _HAVE else []),
    *([Rule(is_op("collapse_sum_like")(_x, wildcard()),
            _concretize(lambda m, t: op.collapse_sum_to(m[_x], shape=t.shape)),
            "concretize collapse_sum_like")]
      if "collapse_sum_like" in _HAVE else []),
    *([Rule(is_op("reshape_like")(_x, wildcard()),
            _concretize(lambda m, t: op.reshape(m[_x], newshape=t.shape)), "concretize reshape_like"),
       Rule(is_op("broadcast_to_like")(_x, wildcard()),
            _concretize(lambda m, t: op.broadcast_to(m[_x], shape=t.shape)), "concretize broadcast_to_like"),
       Rule(is_op("cast_like")(_x, wildcard()), _concretize_cast_like, "concretize cast_like")]
      if "reshape_like" in _HAVE else []),
    *[Rule(is_op(n)(_x, _y), _binary, f"{n}: TVM's binary rules") for n in _IDENTITY],
    Rule(is_op("cast")(_inner_cast), _cast_cast, "cast(cast(x)) widening"),
    Rule(CallPattern(wildcard(), [is_op("qnn.dequantize")(_x, _scale, is_constant())]), _dequantize_then_arg,
         "argmax/argmin(dequantize(x))"),
    Rule(is_op("cast")(wildcard()), _clip_then_casts, "clip then casts"),
    Rule(is_op("clip")(_x), _clip_whole_range, "clip of the whole range"),
    Rule(is_op("add")(_x, _y), _binomial, "binomial a*x*x + b*x*y + c*y*y"),
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

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    max_steps: int = 1000

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        return rewrite_function(func, SIMPLIFY_RULES, mod, max_steps=self.max_steps)
