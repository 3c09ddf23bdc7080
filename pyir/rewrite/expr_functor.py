"""``ExprFunctor``: Relay's functor -- a value per expression, computed by ``visit_*`` hooks --
without recursion.

Define ``visit_call(self, call)``, ``visit_var(self, var)``, ... (Relay's hook names: ``var``,
``global_var``, ``constant``, ``op``, ``tuple``, ``tuple_getitem``, ``function``, ``call``,
``let``, ``if``; a kind pyir gains later is its class name in snake case).  Inside a hook,
``self.visit(child)`` returns the child's value, as in Relay -- but the driver has computed it
already: ``visit(expr)`` first walks ``expr`` children-first with an explicit stack, computing
each distinct node's value once (memoized by identity), so a 10^6-deep chain never recurses.
The difference from Relay: every child is visited, eagerly, even one a hook never asks for (an
``if`` branch), and a node shared by two parents is computed once.  A node without its hook
goes to ``visit_default``, which raises.

>>> import pyir
>>> class CountCalls(ExprFunctor):
...     def visit_var(self, v): return 0
...     def visit_op(self, o): return 0
...     def visit_constant(self, c): return 0
...     def visit_call(self, c): return 1 + sum(self.visit(a) for a in c.args)
>>> x = pyir.var("x", shape=(2,))
>>> CountCalls().visit(pyir.op.exp(pyir.op.add(x, x)))
2
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import WellFormedError
from ..ir.kinds import KINDS
from ..ir.node import Node
from ..ir.traverse import post_order
from ..ir.types import Type

__all__ = ["ExprFunctor", "hook_name"]

_SPECIAL = {"TupleGetItem": "tuple_getitem", "If": "if"}


def hook_name(kind: type) -> str:
    """The hook of an expression kind: ``Call`` -> ``visit_call``, ``GlobalVar`` ->
    ``visit_global_var``, ``TupleGetItem`` -> ``visit_tuple_getitem`` (Relay's names)."""
    name = kind.__name__
    snake = _SPECIAL.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return "visit_" + snake


_HOOKS = {k: hook_name(k) for k in KINDS.values()}


class ExprFunctor:
    """A value per expression, by kind: subclass and define the ``visit_<kind>`` hooks."""

    def __init__(self) -> None:
        self.memo: dict[Node, Any] = {}

    def visit(self, expr: Node) -> Any:
        """The value of ``expr`` (computed once per distinct node)."""
        memo = self.memo
        if expr in memo:
            return memo[expr]
        for n in post_order(expr):  # type: ignore[arg-type]  # children first: a hook's self.visit(child) is a lookup
            if n not in memo and not isinstance(n, Type):
                memo[n] = getattr(self, _HOOKS.get(type(n), ""), self.visit_default)(n)
        return memo[expr]

    def visit_default(self, expr: Node) -> Any:
        """The hook of a kind without one: an error naming the hook to define."""
        raise WellFormedError(f"{type(self).__name__} has no {_HOOKS.get(type(expr), 'visit_?')} for "
                              f"{type(expr).__name__} nodes")
