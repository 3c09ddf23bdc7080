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

from ..errors import WellFormedError
from ..expr import Expr, Function, Let, Var
from ..functor import rebuild
from ..lineage import derive
from ..module import Module
from ..node import F_LET, F_VAR, Node, gc_paused
from ..traverse import post_order
from .base import FunctionPass

__all__ = ["ToGraphNormalForm", "graph_form", "gc_paused"]

_LET_OR_VAR = F_LET | F_VAR



def _children(n: Node) -> tuple[Node, ...]:
    # A let variable is reached through its uses only, i.e. after its value.
    if type(n) is Let:
        return (n.value, n.body)
    return n.children()


def _is_primitive(n: Node) -> bool:
    return type(n) is Function and bool(n.attrs.get("Primitive"))


def graph_form(expr: Expr, *, into_primitive: bool = True) -> tuple[Expr, dict[Node, Expr]]:
    """``expr`` without lets, and the map from each walked node to its let-free image.

    Each let variable is replaced by (the image of) its value.  With
    ``into_primitive=False``, primitive functions are kept as they are.  Nodes
    that cannot contain a let or a variable are not walked (they map to
    themselves, absent from the map).  Iterative; raises
    :class:`~pyir.errors.WellFormedError` for a let whose value uses its own
    variable, or a variable bound by two lets to different values.
    """
    if not expr._mask & F_LET:
        return expr, {}

    def stop(n: Node) -> bool:
        return not n._mask & _LET_OR_VAR or (not into_primitive and _is_primitive(n))

    order = post_order(expr, _children, stop=stop)
    letval: dict[Node, Expr] = {}
    for n in order:
        if type(n) is Let:
            prev = letval.setdefault(n.var, n.value)
            if prev is not n.value:
                raise WellFormedError(f"variable %{n.var.name_hint} is bound by two lets "
                                      "with different values")
    g: dict[Node, Expr] = {}
    for n in order:
        k = type(n)
        if not n._mask & _LET_OR_VAR or (k is Function and not into_primitive and _is_primitive(n)):
            g[n] = n
        elif k is Var:
            v = letval.get(n)
            if v is None:
                g[n] = n
            else:
                img = g.get(v)
                if img is None:
                    raise WellFormedError(f"let variable %{n.name_hint} is used in its own value "
                                          "(recursive lets have no graph form)")
                g[n] = img
        elif k is Let:
            g[n] = g[n.body]
        else:
            g[n] = rebuild(n, g)
    return g[expr], g


def record_graph_lineage(g: dict[Node, Expr]) -> None:
    """Record lineage for a :func:`graph_form` map: rebuilt nodes derive from
    their originals, substituted values from their let bindings."""
    for n, img in g.items():
        k = type(n)
        if k is Let:
            value: Expr = n.value  # type: ignore[attr-defined]
            derive(g.get(value, value), n)
        elif k is not Var and img is not n:
            derive(img, n)


@dataclasses.dataclass(frozen=True)
class ToGraphNormalForm(FunctionPass):
    """Substitute every let variable by its value, in every function (also primitive ones)."""

    include_primitive: ClassVar[bool] = True

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` without lets (the same object when it has none)."""
        with gc_paused():
            body, g = graph_form(func.body)
            if body is func.body:
                return func
            record_graph_lineage(g)
        return derive(Function(func.params, body, func.ret_type, func.attrs), func)  # type: ignore[return-value]
