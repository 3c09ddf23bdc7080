"""SimplifyExpr: algebraic identities and layout-op cancellations, as pattern rules.

Rules (each only when it keeps the result's type, checked with inferred types):

* ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x``, ``x - 0`` -> ``x`` (the
  constant all ones / all zeros, and broadcasting not changing shape or dtype);
* ``reshape(reshape(x))`` -> ``reshape(x)``; a reshape to ``x``'s own shape -> ``x``;
* ``transpose(transpose(x))`` -> one transpose with composed axes, or ``x``; an
  identity transpose -> ``x``;
* ``negative(negative(x))`` -> ``x``; ``cast`` to ``x``'s own dtype -> ``x``;
* ``clip(clip(x))`` -> one ``clip`` with the composed bounds.

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
from ..ir.expr import Expr, Function
from ..ir.module import Module
from ..ir.types import TensorType
from ..rewrite.pattern import Match, is_constant, is_op, wildcard
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
)
"""The rules of :class:`SimplifyExpr`, in the order they are tried."""


@dataclasses.dataclass(frozen=True)
class SimplifyExpr(FunctionPass):
    """Remove algebraic identities and cancel layout operators (see the module docstring)."""

    max_steps: int = 1000

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        return rewrite_function(func, SIMPLIFY_RULES, mod, max_steps=self.max_steps)
