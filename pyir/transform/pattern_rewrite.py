"""PatternRewrite: apply rewrite rules (:mod:`pyir.rewrite.pattern_rewrite`) to the body of every
    function.

The rules and their driver live in the rewrite layer (:mod:`pyir.rewrite.pattern_rewrite`);
this is the pass that runs them on a module.  Lineage is recorded by the driver:
a rewritten node derives from the node it replaces, across rounds.  Relay's
:class:`~pyir.rewrite.pattern.DFPatternCallback` objects are accepted too: they run after the rules,
through :func:`pyir.rewrite.partition.rewrite` (Relay's grouping and fixpoint).

>>> import pyir
>>> from pyir import op
>>> from pyir.rewrite.pattern import is_op, wildcard
>>> x = wildcard()
>>> a = pyir.var("a", shape=(2,))
>>> mod = pyir.Module.from_expr(op.nn.relu(a))
>>> out = PatternRewrite([(is_op("nn.relu")(x), lambda m: op.tanh(m[x]))])(mod)
>>> out["main"].body is op.tanh(a), [r.name for r in out.pass_records]
(True, ['PatternRewrite'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..ir.expr import Function
from ..ir.lineage import derive
from ..ir.module import Module
from ..rewrite.partition import rewrite
from ..rewrite.pattern import DFPatternCallback
from ..rewrite.pattern_rewrite import Rule, as_rule, rewrite_function
from .base import FunctionPass

__all__ = ["PatternRewrite"]


@dataclasses.dataclass(frozen=True)
class PatternRewrite(FunctionPass):
    """Apply rewrite rules (see :func:`pyir.rewrite.pattern_rewrite.rewrite_rules`), then Relay-style
    callbacks (:class:`~pyir.rewrite.pattern.DFPatternCallback`), to the body of every function."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    rules: tuple[Rule, ...] = ()
    max_steps: int = 1000
    callbacks: tuple[DFPatternCallback, ...] = ()

    def __init__(self, rules: Iterable[Any] = (), max_steps: int = 1000) -> None:
        rs: list[Rule] = []
        cbs: list[DFPatternCallback] = []
        for r in rules:
            if isinstance(r, DFPatternCallback):
                cbs.append(r)
            else:
                rs.append(as_rule(r))
        object.__setattr__(self, "rules", tuple(rs))
        object.__setattr__(self, "max_steps", max_steps)
        object.__setattr__(self, "callbacks", tuple(cbs))

    def options(self) -> str:
        names = [r.name for r in self.rules] + [type(c).__name__ for c in self.callbacks]
        return f"rules=[{', '.join(names)}], max_steps={self.max_steps}"

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        out = rewrite_function(func, self.rules, mod, max_steps=self.max_steps) if self.rules else func
        if self.callbacks:
            body = rewrite(self.callbacks, out.body, mod)
            if body is not out.body:
                out = derive(out.with_body(body), out)  # type: ignore[assignment]
        return out
