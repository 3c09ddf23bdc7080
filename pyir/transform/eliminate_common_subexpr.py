"""EliminateCommonSubexpr: drop ``let`` bindings whose value is already bound in scope.

In graph form hash-consing already shares equal subexpressions, so this pass
matters for A-normal form.  Below, two lets bind the same ``add(%x, %y)`` (one
hash-consed node, which the printer shows once, as ``%0``); the example is
``tests/golden/EliminateCommonSubexpr/docstring.txt``, run by ``tests/test_golden.py``::

    # before
    def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
      %0 = add(%x, %y);
      let %a = %0;
      let %b = %0;
      multiply(%a, %b)
    }

    # after EliminateCommonSubexpr()
    def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
      let %a = add(%x, %y);
      multiply(%a, %a)
    }

A binding is replaced by an earlier one in scope (an enclosing ``let`` of the same
value, compared after substitution, so chains of duplicates collapse in one run);
its variable is substituted by the kept variable.  Scopes are lexical: a binding
inside one ``if`` branch is not reused in the other, and a ``let`` shared by two
scopes is decided in each (:class:`~pyir.rewrite.functor.BindingRewriter`).  The walk uses
an explicit stack, so million-deep ``let`` chains are fine.  Lineage: the removed variable,
value and ``let`` derive into the kept variable, value and the rewritten body.

>>> import pyir
>>> x = pyir.var("x", shape=(2,))
>>> a, b = pyir.var("a"), pyir.var("b")
>>> v = pyir.op.exp(x)
>>> f = pyir.Function([x], pyir.Let(a, v, pyir.Let(b, v, pyir.op.add(a, b))))
>>> out = EliminateCommonSubexpr()(pyir.Module({"main": f}))["main"]
>>> out.body is pyir.Let(a, v, pyir.op.add(a, a))
True
"""

from __future__ import annotations

import dataclasses

from ..ir.expr import Expr, Function, Let, Var
from ..ir.module import Module
from ..ir.node import F_LET
from ..rewrite.functor import BindingRewriter
from .base import FunctionPass

__all__ = ["EliminateCommonSubexpr"]


class _CSE(BindingRewriter):
    """Drops a binding whose value is already bound in scope, for the variable binding it."""

    def __init__(self) -> None:
        self.avail: dict[Expr, Var] = {}  # value -> the variable binding it in the current scope
        self.shadowed: list[Var | None] = []  # per kept binding: what it hid in ``avail``

    def bind(self, let: Let, value: Expr) -> Expr | None:
        kept = self.avail.get(value)
        if kept is not None and kept is not let.var:
            return kept
        self.shadowed.append(kept)
        self.avail[value] = let.var
        return None

    def unbind(self, let: Let, value: Expr) -> None:
        prev = self.shadowed.pop()
        if prev is None:
            del self.avail[value]
        else:
            self.avail[value] = prev


@dataclasses.dataclass(frozen=True)
class EliminateCommonSubexpr(FunctionPass):
    """Replace ``let`` bindings of values already bound in scope by the earlier variable."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        if not func.body._mask & F_LET:
            return func
        body = _CSE().visit(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_type, func.attrs)
