"""DeadCodeElimination: drop unused ``let`` bindings and unreachable global functions.

* A ``let`` whose variable is not used is replaced by its body (values are pure).
  Liveness is reachability from the function's body, a binding's value being
  reached only through its variable, so chains of dead bindings and a recursive
  closure bound but never called (``let %f = fn (...) { ... %f(...) ... }; ()``)
  go in one run, in time linear in the function, without recursion.
* Global functions not reachable from ``main`` through ``GlobalVar`` references
  are removed (``main`` is kept; a module without ``main`` keeps every function).

Example (``tests/golden/DeadCodeElimination/docstring.txt``, run by
``tests/test_golden.py``)::

    # before
    def @main(%x: Tensor[(4), float32]) {
      let %t = exp(%x);
      nn.relu(%x)
    }

    def @unused(%a: Tensor[(4), float32]) {
      negative(%a)
    }

    # after DeadCodeElimination()
    def @main(%x: Tensor[(4), float32]) {
      nn.relu(%x)
    }

Lineage: the dropped ``let`` nodes, their variables and every node that is no
longer part of the module (the dead values, the bodies of removed functions) are
recorded as eliminated, so ``new_mod.find(dead)`` is empty and
``new_mod.history(dead)`` ends with a step of this pass whose ``after`` is None.

>>> import pyir
>>> x = pyir.var("x", shape=(2,))
>>> t = pyir.var("t")
>>> f = pyir.Function([x], pyir.Let(t, pyir.op.exp(x), pyir.op.nn.relu(x)))
>>> DeadCodeElimination()(pyir.Module({"main": f}))["main"].body is pyir.op.nn.relu(x)
True
"""

from __future__ import annotations

import dataclasses
from typing import cast

from ..ir.adt import F_REF
from ..ir.expr import Expr, Function, Let, Var
from ..ir.lineage import eliminate
from ..ir.module import Module
from ..ir.node import F_LET, F_VAR, Node
from ..ir.traverse import global_vars, post_order
from ..rewrite.functor import Rewriter
from .base import ModulePass

__all__ = ["DeadCodeElimination"]


def _dead_lets(func: Function) -> tuple[set[Let], list[Node]]:
    """The dropped lets of ``func`` and the nodes that die with them.

    Liveness is reachability from the body where a ``let`` keeps its body alive and its
    value only once its variable is reached: a binding used only by dead bindings, or only
    by its own value (a recursive closure nobody calls), is dead.  One walk over the live
    nodes, then one over what the dead values hold."""
    live: set[Node] = set(func.params)
    waiting: dict[Node, list[Let]] = {}  # let variable not reached yet -> the lets binding it
    reached: list[Let] = []
    stack: list[Node] = [func.body]
    push = stack.append
    while stack:
        n = stack.pop()
        if n in live:
            continue
        live.add(n)
        t = type(n)
        if t is Let:
            let = cast(Let, n)
            reached.append(let)
            if let.value._mask & F_REF and let.var not in live:  # a reference operation: an effect,
                live.add(let.var)  # kept even when its variable is unused
                push(let.value)
            elif let.var in live:
                push(let.value)
            else:
                waiting.setdefault(let.var, []).append(let)
            push(let.body)
        elif t is Var:
            lets = waiting.pop(n, None)
            if lets is not None:
                for let in lets:
                    push(let.value)
        else:
            stack.extend(n.children())
    dropped = {let for let in reached if let.var not in live}
    if not dropped:
        return dropped, []
    dead = [n for n in post_order([let.value for let in dropped], stop=live.__contains__) if n not in live]
    return dropped, dead


def _used_once(func: Function, dropped: set[Let]) -> dict[Node, Let]:
    """The kept lets of ``func`` whose variable is used exactly once, in the same function
    as the let (not inside a nested function: that would move the value's evaluation into
    it), by variable.  Uses are counted per parent edge, walking the live nodes once per
    enclosing function (a node hash-consing shares between two functions counts in each)."""
    binder: dict[Node, tuple[Let, int]] = {}
    uses: dict[Node, int] = {}
    where: dict[Node, int] = {}  # variable -> the function (id) of its use
    seen: set[tuple[Node, int]] = set()
    stack: list[tuple[Node, int]] = []

    def use(v: Node, ctx: int) -> None:
        uses[v] = uses.get(v, 0) + 1
        if where.setdefault(v, ctx) != ctx:
            uses[v] = 2  # used in two functions: keep

    def reach(c: Node, ctx: int) -> None:
        if type(c) is Var:
            use(c, ctx)
        else:
            stack.append((c, ctx))

    reach(func.body, 0)
    while stack:
        item = stack.pop()
        if item in seen:
            continue
        seen.add(item)
        n, ctx = item
        t = type(n)
        if t is Let:
            let = cast(Let, n)
            if let not in dropped:
                if binder.setdefault(let.var, (let, ctx))[1] != ctx:
                    uses[let.var] = 2
                reach(let.value, ctx)
            reach(let.body, ctx)
        elif t is Function:
            reach(cast(Function, n).body, id(n))
        else:
            for c in n.children():
                reach(c, ctx)
    return {v: let for v, (let, ctx) in binder.items() if uses.get(v) == 1 and where[v] == ctx}


class _DropLets(Rewriter):
    """Each dropped let stands for its body (no lineage edge: it is eliminated); an inlined
    let stands for its body and its variable for its value; the lets and let-containing
    nodes above them are rebuilt (and derive from their originals)."""

    def __init__(self, dropped: set[Let], inline: dict[Node, Let]) -> None:
        super().__init__()
        self.dropped = dropped
        self.inline = inline
        self.mask = F_LET | F_VAR if inline else F_LET

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & self.mask)

    def forward(self, node: Node) -> Expr | None:
        if node in self.dropped:
            return node.body  # type: ignore[attr-defined]
        if self.inline:
            if type(node) is Let and node.var in self.inline:
                return node.body
            let = self.inline.get(node)
            if let is not None:
                return let.value
        return None


def _remove_lets(func: Function, inline_once: bool) -> tuple[Function, list[Node]]:
    dropped, dead = _dead_lets(func)
    inline = _used_once(func, dropped) if inline_once else {}
    if not dropped and not inline:
        return func, []
    out = _DropLets(dropped, inline).visit(func)  # the new function derives from ``func``
    gone: list[Node] = [*dropped, *(let.var for let in dropped), *dead]
    return out, gone


@dataclasses.dataclass(frozen=True)
class DeadCodeElimination(ModulePass):
    """Remove unused ``let`` bindings and functions unreachable from ``main``.

    ``inline_once`` (default False, as in TVM) also inlines each binding whose variable is
    used exactly once, in the same function (``let %z = %y + %y; %x + %z`` ->
    ``%x + (%y + %y)``; a use inside a nested function keeps its binding)."""

    inline_once: bool = False

    def run(self, mod: Module) -> Module:
        updates: dict[str, Function | None] = {}
        gone: list[tuple[str, list[Node]]] = []  # (function it came from, nodes)
        names = mod.names()
        if "main" in mod:
            reach = {"main"}
            work = ["main"]
            while work:
                for g in global_vars(mod[work.pop()]):
                    if g.name_hint not in reach and g.name_hint in mod:
                        reach.add(g.name_hint)
                        work.append(g.name_hint)
            for name in names:
                if name not in reach:
                    updates[name] = None
                    gone.append((name, [mod[name], *post_order(mod[name].body)]))
        for name in names:
            if name in updates:
                continue
            f = mod[name]
            if f.attrs.get("Primitive") or not f.body._mask & F_LET:
                continue
            nf, removed = _remove_lets(f, self.inline_once)
            if nf is not f:
                updates[name] = nf
                gone.append((name, removed))
        if not updates:
            return mod
        new = mod.with_functions(updates)
        for name, nodes in gone:
            # Drop the nodes still used by another function of the new module (hash-consing
            # shares equal subexpressions across functions).
            others = [f for n2, f in new.items() if n2 != name]
            alive = set(post_order(others)) if others else set()
            eliminate(*[n for n in dict.fromkeys(nodes) if n not in alive])
        return new

