"""InferType: type-check the whole module and fill in missing return types.

Every function is checked (errors name the offending node; the pass framework
reports them as :class:`~pyir.errors.PassError` naming the pass); every
function without a return type, top-level or nested (e.g. fused primitive
functions), gets the type of its body.  A module whose functions all have
return types is returned as it is.

Example (``tests/golden/InferType/docstring.txt``, run by ``tests/test_golden.py``).

Before::

    def @main(%p: Tensor[(4), float32]) {
      %0 = fn (%q: Tensor[(4), float32], Primitive=1) {
        nn.relu(%q)
      };
      %0(%p)
    }

After::

    def @main(%p: Tensor[(4), float32]) -> Tensor[(4), float32] {
      %0 = fn (%q: Tensor[(4), float32], Primitive=1) -> Tensor[(4), float32] {
        nn.relu(%q)
      };
      %0(%p)
    }
"""

from __future__ import annotations

import dataclasses

from ..analysis.typecheck import TypeContext
from ..ir.expr import Expr, Function
from ..ir.module import Module
from ..ir.node import F_FUNC, Node
from ..ir.traverse import post_order
from ..ir.types import FuncType
from ..rewrite.functor import Rewriter
from .base import ModulePass

__all__ = ["InferType"]


def _missing_ret_type(f: Function) -> bool:
    for n in post_order(f, stop=lambda n: not n._mask & F_FUNC):
        if type(n) is Function and n.ret_type is None:
            return True
    return False


class _FillRetTypes(Rewriter):
    """Gives each function without a return type the one inferred in the module."""

    def __init__(self, types: TypeContext) -> None:
        super().__init__()
        self.types = types

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & F_FUNC)

    def visit_Function(self, f: Function) -> Expr:
        if f.ret_type is not None or any(p.type_annotation is None for p in f.params):
            return f  # (a match clause's function: its pattern variables are typed by the match)
        # The original was typed in its context (the module's cache holds the
        # types of nodes below untyped let variables).
        ft: FuncType = self.types.type_of(self.original)  # type: ignore[assignment]
        return Function(f.params, f.body, ft.ret_type, f.attrs)


@dataclasses.dataclass(frozen=True)
class InferType(ModulePass):
    """Type-check every function and fill in missing return types (nested ones too)."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    def run(self, mod: Module) -> Module:
        """The module with all return types filled in (``mod`` itself if none was missing)."""
        types = TypeContext.of(mod)
        updates = {}
        for name, f in mod.items():
            types.check(f)
            if _missing_ret_type(f):
                updates[name] = _FillRetTypes(types).visit(f)
        return mod.with_functions(updates) if updates else mod
