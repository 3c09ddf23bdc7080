"""DefuseOps: inline every call of a primitive (``Primitive=1``) function back.

The inverse of :class:`~pyir.transform.fuse_ops.FuseOps` (the example is
``tests/golden/DefuseOps/docstring.txt``, run by ``tests/test_golden.py``)::

    # before
    def @main(%x: Tensor[(4), float32]) {
      %0 = fn (%p0: Tensor[(4), float32], Primitive=1) {
        %1 = exp(%p0);
        nn.relu(%1)
      };
      %0(%x)
    }

    # after DefuseOps()
    def @main(%x: Tensor[(4), float32]) {
      %0 = exp(%x);
      nn.relu(%0)
    }

Parameters are substituted by the arguments; because nodes are hash-consed,
``DefuseOps()(FuseOps()(mod))["main"] is mod["main"]``.  Lineage: each node of
an inlined body is the body node it copies instantiated at the call being
inlined (an instance edge, :func:`~pyir.ir.lineage.derive_at`), and each rebuilt
node of the enclosing graph derives from its old version.  So even when
FuseOps shared one function between several groups, ``find`` on an expression
of the unfused module returns that very expression after FuseOps + DefuseOps
(not its copies at the other calls), and ``origins`` of a defused node is the
node it was before fusion.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir.expr import Call, Expr, Function
from ..ir.module import Module
from ..ir.node import F_FUNC, Node, gc_paused
from .base import ModulePass
from .common import expand_calls, replace_body

__all__ = ["DefuseOps", "defuse"]


def _leaf(n: Node) -> bool:
    """Nothing to defuse below ``n``: no function at all, or a primitive function without
    nested functions."""
    if not n._mask & F_FUNC:
        return True
    return type(n) is Function and not n.body._mask & F_FUNC


def _primitive_callee(n: Call, memo: dict[Node, Any]) -> Function | None:
    """The (defused) primitive function ``n`` calls, or None."""
    f = n.op
    if type(f) is Function and f.attrs.get("Primitive"):
        fn: Function = memo[f]
        return fn
    return None


@dataclasses.dataclass(frozen=True)
class DefuseOps(ModulePass):
    """Inline every ``Call(fn, args)`` of a ``Primitive=1`` function (in every function)."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    def run(self, mod: Module) -> Module:
        updates = {}
        with gc_paused():
            for name, f in mod.items():
                if not f.body._mask & F_FUNC:
                    continue
                nf = replace_body(f, defuse(f.body))
                if nf is not f:
                    updates[name] = nf
        return mod.with_functions(updates) if updates else mod


def defuse(expr: Expr) -> Expr:
    """``expr`` with every call of a primitive function inlined (iteratively, nested ones too)."""
    return expand_calls(expr, _primitive_callee, _leaf)
