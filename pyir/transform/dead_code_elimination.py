"""DeadCodeElimination: drop unused ``let`` bindings and unreachable global functions.

* A ``let`` whose variable is not used is replaced by its body, unless its value has an
  effect (a stateful operator such as ``memory.kill``, a reference read or write, or a call
  of a function that has one: see :data:`STATEFUL_OPS`).
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

from ..ir.adt import F_REF, Constructor, RefRead, RefWrite
from ..ir.expr import Call, Expr, Function, GlobalVar, Let, Op, Var
from ..ir.lineage import eliminate
from ..ir.module import Module
from ..ir.node import F_LET, F_VAR, Node
from ..ir.opdef import get_op_def, list_ops
from ..ir.traverse import global_vars, post_order
from ..rewrite.functor import Rewriter
from .base import ModulePass

__all__ = ["DeadCodeElimination", "STATEFUL_OPS"]

#: The operators with effects (TVM's ``TOpIsStateful``: ``memory.kill``, ``vm.invoke_tvm_op``;
#: and ``call_lowered``, a call of a lowered primitive, impure by TVM's rule for externals).
#: A ``let`` of a call to one, or to a function that calls one, is kept even when unused, and
#: never inlined by ``inline_once``.  ``memory.alloc_storage`` is pure, as in TVM: it stays
#: while a ``memory.kill`` uses it.
STATEFUL_OPS = frozenset({"memory.kill", "vm.invoke_tvm_op", "call_lowered"})
_STATEFUL_BITS = 0
for _name in STATEFUL_OPS & frozenset(list_ops()):
    _STATEFUL_BITS |= get_op_def(_name).mask


def _impure_lets(func: Function, impure_globals: set[str]) -> tuple[set[Let], bool, set[str]]:
    """The lets of ``func`` whose value has an effect when evaluated, whether evaluating
    ``func``'s body has one (TVM's DCE purity, ``src/relay/transforms/dead_code.cc``), and the
    global functions called that were not in ``impure_globals`` (the answer holds while none
    of them joins it).

    Effects: a stateful operator (:data:`STATEFUL_OPS`), ``ref_read`` / ``ref_write``, a call of
    a global function in ``impure_globals``, of a local function whose body has one, or of a
    callee pyir cannot see (a parameter, a projection, a branch: assumed impure, TVM's rules
    B to E).  Creating a function or a reference has none.  One walk, children first."""
    order = post_order(func.body)
    closures: dict[Node, Function] = {}
    for n in order:
        if type(n) is Let and type(n.value) is Function:
            closures[n.var] = n.value
    impure: set[Node] = set()
    lets: set[Let] = set()
    pure_callees: set[str] = set()
    for n in order:
        t = type(n)
        if t is Function or t is Var or t is GlobalVar or t is Op or t is Constructor:
            continue
        if t is RefRead or t is RefWrite or any(c in impure for c in n.children()):
            impure.add(n)
        elif t is Call:
            callee = n.op
            tc = type(callee)
            if tc is Op:
                bad = callee.name in STATEFUL_OPS
            elif tc is GlobalVar:
                bad = callee.name_hint in impure_globals
                if not bad:
                    pure_callees.add(callee.name_hint)
            elif tc is Constructor:
                bad = False
            elif tc is Function:
                bad = callee.body in impure
            elif tc is Var and callee in closures:
                bad = closures[callee].body in impure  # (a recursive call: not known yet, pure)
            else:
                bad = True
            if bad:
                impure.add(n)
        if t is Let and n.value in impure:
            lets.add(n)
    return lets, func.body in impure, pure_callees


def _impure_globals(mod: Module) -> tuple[set[str], dict[str, set[Let]]] | None:
    """The global functions whose call has an effect (a fixpoint over the module), or None
    when no function holds a stateful operator or a reference operation (then nothing has);
    with the impure lets of the functions whose last walk of the fixpoint still holds (none of
    the callees it saw pure became impure later), so that DCE does not walk them again."""
    if not any(f.body._mask & (_STATEFUL_BITS | F_REF) for f in mod.functions().values()):
        return None
    bad: set[str] = set()
    last: dict[str, tuple[set[Let], set[str]]] = {}
    changed = True
    while changed:
        changed = False
        for name, f in mod.items():
            if name not in bad:
                lets, effect, pure_callees = _impure_lets(f, bad)
                last[name] = (lets, pure_callees)
                if effect:
                    bad.add(name)
                    changed = True
    return bad, {name: lets for name, (lets, pure) in last.items() if pure.isdisjoint(bad)}


def _dead_lets(func: Function, effects: set[Let]) -> tuple[set[Let], list[Node]]:
    """The dropped lets of ``func`` and the nodes that die with them.

    Liveness is reachability from the body where a ``let`` keeps its body alive and its
    value only once its variable is reached: a binding used only by dead bindings, or only
    by its own value (a recursive closure nobody calls), is dead, unless its value has an
    effect (``effects``, or a reference operation below it).  One walk over the live
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
            if (let.value._mask & F_REF or let in effects) and let.var not in live:  # an effect:
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


def _remove_lets(func: Function, inline_once: bool, impure_globals: set[str] | None,
                 effects: set[Let] | None = None) -> tuple[Function, list[Node]]:
    if effects is None:
        effects = _impure_lets(func, impure_globals)[0] if impure_globals is not None else set()
    dropped, dead = _dead_lets(func, effects)
    inline = _used_once(func, dropped) if inline_once else {}
    if effects:  # an effect stays where it is (inlining would move or drop it)
        inline = {v: let for v, let in inline.items() if let not in effects}
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

    cache_scope = "module"  # PassCache: per whole-module content: it reads the call graph

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
        purity = _impure_globals(mod)
        impure, known = purity if purity is not None else (None, {})
        for name in names:
            if name in updates:
                continue
            f = mod[name]
            if f.attrs.get("Primitive") or not f.body._mask & F_LET:
                continue
            nf, removed = _remove_lets(f, self.inline_once, impure, known.get(name))
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

