"""ToGraphNormalForm: remove every ``let`` by substituting its variable by its value.

It is the inverse of :class:`~pyir.transform.to_a_normal_form.ToANormalForm`:
hash-consing rebuilds the very same dataflow graph, so
``ToGraphNormalForm()(ToANormalForm()(m))["main"] is m["main"]`` for a module
without lets.  Values of unused lets disappear (the language is pure).

Example (``tests/golden/ToGraphNormalForm/docstring.txt``, run by ``tests/test_golden.py``).

Before::

    def @main(%p: Tensor[(4), float32]) {
      let %x: Tensor[(4), float32] = nn.relu(%p);
      let %x_1: Tensor[(4), float32] = add(%x, %x);
      %x_1
    }

After::

    def @main(%p: Tensor[(4), float32]) {
      %0 = nn.relu(%p);
      add(%0, %0)
    }
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ..ir.adt import F_REF
from ..ir.expr import Function
from ..ir.lineage import derive, eliminate
from ..ir.module import Module
from ..ir.node import Node, gc_paused
from .base import FunctionPass
from .common import graph_form, record_graph_lineage

__all__ = ["ToGraphNormalForm"]


@dataclasses.dataclass(frozen=True)
class ToGraphNormalForm(FunctionPass):
    """Substitute every let variable by its value, in every function (also primitive ones)."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    include_primitive: ClassVar[bool] = True

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` without lets (the same object when it has none)."""
        if func.body._mask & F_REF:
            return func  # references: their lets order effects, which a graph does not
        with gc_paused():
            dropped: list[Node] = []
            body, g = graph_form(func.body, dropped=dropped)
            if body is func.body:
                return func
            record_graph_lineage(g)
            if dropped:
                eliminate(*dropped)  # the nodes only unused lets held
        return derive(Function(func.params, body, func.ret_type, func.attrs), func)  # type: ignore[return-value]
