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

A function with references (effects) or matches keeps its lets instead, their order being
the order of the effects: along its chain of lets, the operands of each value and the final
expression are bound in evaluation order (a nested ``if``, ``match`` or function is bound as
it is); see :func:`_sequenced`.

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
from typing import Any, cast

from ..ir.adt import F_MATCH, F_REF, Constructor, RefCreate, RefRead, RefWrite
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Let, Op, Tuple, TupleGetItem, Var
from ..ir.lineage import derive
from ..ir.module import Module
from ..ir.node import Node
from .base import FunctionPass
from .common import let_var, normalize_function

__all__ = ["ToANormalForm", "let_var", "normalize_function"]

_ATOMS = (Var, Constant, GlobalVar, Op, Constructor)
#: the compound nodes whose operands are bound (the rest, ``if``, ``match``, a nested ``let``
#: or function inside a value, are bound as they are)
_OPERANDS = (Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite)


def _sequenced(func: Function) -> Function:
    """A-normal form of a function with effects (references) or matches, keeping its lets:
    their order is the order of the effects, which the graph form would lose.  Along the
    chain of lets of the body, each value's operands and the final expression are bound, in
    evaluation order (operands left to right, a callee after its arguments), each node once
    (a node met again, further down the chain, uses the variable bound first).  Iterative."""
    bound: dict[Node, Var] = {}
    lets: list[tuple[Var, Expr, Node]] = []  # (variable, value, the node it derives from)

    def atom(root: Expr) -> Expr:
        """``root`` with its compound operands bound (appended to ``lets``), itself unbound."""
        out: dict[Node, Any] = {}
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            n, done = stack.pop()
            if n in out:
                continue
            if n is not root and (type(n) in _ATOMS or n in bound):
                out[n] = bound.get(n, n)
                continue
            kids = n.children() if type(n) in _OPERANDS else ()
            if type(n) is Call and type(n.op) is not Op:
                kids = (*n.args, n.op)
            if not done and kids:
                stack.append((n, True))
                stack.extend((k, False) for k in reversed(kids))
                continue
            new = n.replace_children([out[k] for k in n.children()]) if kids else n
            if new is not n:
                derive(new, n)
            if n is root:
                out[n] = new
            else:
                v = cast(Var, derive(Var("t"), n))
                bound[n] = v
                lets.append((v, new, n))
                out[n] = v
        return cast(Expr, out[root])

    e: Expr = func.body
    while type(e) is Let:
        value = atom(e.value)
        if type(value) not in _ATOMS:
            bound.setdefault(e.value, e.var)
        lets.append((e.var, value, e))
        e = e.body
    tail = atom(e)
    if type(tail) not in _ATOMS:
        v = cast(Var, derive(Var("t"), e))
        lets.append((v, tail, e))
        tail = v
    body: Expr = tail
    for v, value, origin in reversed(lets):
        body = derive(Let(v, value, body), origin)  # type: ignore[assignment]
    if body is func.body:
        return func
    return derive(Function(func.params, body, func.ret_type, func.attrs), func)  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class ToANormalForm(FunctionPass):
    """Bind every non-atomic subexpression by a let (see the module docstring)."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` in A-normal form (the same object when it already is)."""
        if func.body._mask & (F_MATCH | F_REF) and not func.attrs.get("Primitive"):
            return _sequenced(func)
        return normalize_function(func, mod, bind_all=True, name=name)
