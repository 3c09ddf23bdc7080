"""ToANormalForm: bind every non-atomic subexpression by a ``let``.

Calls, tuples, tuple projections, ``if`` and nested functions each get a let
with a variable annotated with the value's type (when the function type-checks;
types come from the module's :class:`~pyir.analysis.typecheck.TypeContext`),
in evaluation order.  A shared node is bound once, in the innermost scope that
encloses all its uses: an expression used only inside one ``if`` branch (or one
nested function body) is bound there.  Primitive (fused) functions are bound as
values but their bodies are kept as they are.

Existing lets are first inlined (as :mod:`~pyir.transform.to_graph_normal_form`
does), and each let variable is derived from the id (and type) of the graph node it
binds, so the normal form of a graph is unique: the same graph gives the very
same objects, and the pass is idempotent.

Example (``tests/golden/ToANormalForm/docstring.txt``, run by ``tests/test_golden.py``).

Before::

    def @main(%p: Tensor[(4), float32]) {
      %0 = nn.relu(%p);
      add(%0, %0)
    }

After::

    def @main(%p: Tensor[(4), float32]) {
      let %x: Tensor[(4), float32] = nn.relu(%p);
      let %x_1: Tensor[(4), float32] = add(%x, %x);
      %x_1
    }
"""

from __future__ import annotations

import dataclasses

from ..ir.expr import Function
from ..ir.module import Module
from .base import FunctionPass
from .common import let_var, normalize_function

__all__ = ["ToANormalForm", "let_var", "normalize_function"]


@dataclasses.dataclass(frozen=True)
class ToANormalForm(FunctionPass):
    """Bind every non-atomic subexpression by a let (see the module docstring)."""

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` in A-normal form (the same object when it already is)."""
        return normalize_function(func, mod, bind_all=True)
