"""ToBasicBlockNormalForm: let-bind only what is shared across blocks.

Each ``if`` branch and nested function body is a basic block holding a
dataflow graph.  An expression used from a block other than the innermost
one enclosing all its uses (e.g. in both branches of an ``if``, or in a branch
and after the ``if``) is let-bound in that dominating block, so its place of
evaluation is explicit; everything else stays in graph form.  A function
without ``if`` is returned as it is (so is the module, when no function has
one), and the input module is never modified.  Existing lets are first inlined
and let variables are deterministic (as in
:class:`~pyir.transform.to_a_normal_form.ToANormalForm`), so the pass is
idempotent.

In graph form the printer already shows the shared ``nn.relu`` in the block that
dominates its uses, as ``%0``, but nothing in the graph fixes where it is
evaluated; the pass binds it there (the example is
``tests/golden/ToBasicBlockNormalForm/docstring.txt``, run by ``tests/test_golden.py``).

Before::

    def @main(%p: Tensor[(4), float32], %c: Tensor[(), bool]) {
      %0 = nn.relu(%p);
      if (%c) {
        add(%0, 1.0f)
      } else {
        negative(%0)
      }
    }

After::

    def @main(%p: Tensor[(4), float32], %c: Tensor[(), bool]) {
      let %x: Tensor[(4), float32] = nn.relu(%p);
      if (%c) {
        add(%x, 1.0f)
      } else {
        negative(%x)
      }
    }
"""

from __future__ import annotations

import dataclasses

from ..ir.expr import Function
from ..ir.module import Module
from ..ir.node import F_IF
from .base import FunctionPass
from .common import normalize_function

__all__ = ["ToBasicBlockNormalForm"]


@dataclasses.dataclass(frozen=True)
class ToBasicBlockNormalForm(FunctionPass):
    """Let-bind expressions shared across ``if`` branches at their dominating scope."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` in basic-block normal form (the same object if it has no ``if``)."""
        if not func._mask & F_IF:
            return func
        return normalize_function(func, mod, bind_all=False, name=name)
