"""Inline: inline global functions marked ``Inline=1`` at every call site (the example is
``tests/golden/Inline/docstring.txt``, run by ``tests/test_golden.py``)::

    # before
    def @main(%x: Tensor[(4), float32]) {
      %0 = @square(%x);
      @square(%0)
    }

    def @square(%a: Tensor[(4), float32], Inline=1) {
      multiply(%a, %a)
    }

    # after Inline()
    def @main(%x: Tensor[(4), float32]) {
      %0 = multiply(%x, %x);
      multiply(%0, %0)
    }

Each call ``@f(args)`` of an ``Inline=1`` function becomes a copy of ``f``'s
body with the parameters replaced by the arguments (variables bound inside the
body are renamed, deterministically, per call site).  Inline functions that
call other inline functions are inlined callees first; inline functions on a
call cycle cannot be inlined and are left alone.  As in TVM, a function with a
``Compiler`` or ``Extern`` attribute (compiled by an external code generator) is
not expanded: its calls call the function literal instead (``fn (...) {...}(args)``),
and so does any other reference to an inline function (one used as a value,
``(if (%p) { @f } else { @g })()``).  Afterwards, the inline functions that were
referenced from other functions and no longer are, are removed; an inline
function no other function refers to is an entry and stays (as in TVM: inlining
never empties a module), and so do ``main`` and the functions on a call cycle.

Unlike TVM, an inline function that calls a function that is not inline is
inlined all the same (its copies call that function); TVM inlines only leaves of
the call graph.

Lineage: each copied node is the callee body node it copies instantiated at
the call (an instance edge, :func:`~pyir.ir.lineage.derive_at`): ``find`` on a node
of an ordinary callee returns every copy, ``origins`` of a copy is the node it
copies (for a callee whose body FuseOps shared between groups, the node of the
call's own group).  Rebuilt nodes of the calling functions derive from their old
versions.  A removed function that was inlined lives on in its copies, so only
the function node and its parameters (replaced by the arguments) are eliminated;
a removed function inlined nowhere is eliminated node by node (the nodes no kept
function reaches).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir.adt import F_REF
from ..ir.expr import Call, Expr, Function, GlobalVar
from ..ir.lineage import current_recorder
from ..ir.module import Module
from ..ir.node import F_GLOBAL, Node, gc_paused
from ..ir.traverse import global_vars
from ..rewrite.functor import Rewriter
from .base import ModulePass
from .common import expand_calls, replace_body

__all__ = ["Inline"]


def _no_global(n: Node) -> bool:
    return not n._mask & F_GLOBAL


def _external(f: Function) -> bool:
    """``f`` is compiled by an external code generator (``Compiler`` or ``Extern``): it is
    inlined as a function literal, not expanded."""
    return bool(f.attrs.get("Compiler") or f.attrs.get("Extern"))


class _Literals(Rewriter):
    """Each reference to a function of ``funcs`` (by name) that is left becomes the function
    itself: a call of an external function, or a function used as a value."""

    def __init__(self, funcs: dict[str, Function], used: set[str]) -> None:
        super().__init__()
        self.funcs = funcs
        self.used = used

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & F_GLOBAL)

    def visit_GlobalVar(self, gv: GlobalVar) -> Expr:
        f = self.funcs.get(gv.name_hint)
        if f is None:
            return gv
        self.used.add(gv.name_hint)
        return f


def _inline_calls(expr: Expr, ready: dict[str, Function], expanded: set[str], literal: set[str]) -> Expr:
    """``expr`` with every call of a function of ``ready`` (by name) expanded, but of an
    external one, which like every other reference left to a function of ``ready`` becomes
    the function literal.  The names of the functions expanded are added to ``expanded``,
    those placed as literals to ``literal``."""

    def callee(call: Call, memo: dict[Node, Any]) -> Function | None:
        op = call.op
        if type(op) is not GlobalVar:
            return None
        f = ready.get(op.name_hint)
        if f is None or _external(f):
            return None
        expanded.add(op.name_hint)
        return f

    out = expand_calls(expr, callee, _no_global)
    if out._mask & F_GLOBAL:
        out = _Literals(ready, literal).visit(out)
    return out


def _walk_into(seen: set[Node], roots: list[Function], ids: list[bytes] | None) -> None:
    """Add to ``seen`` every node reachable from ``roots`` not in it yet (and, if ``ids`` is
    given, append their ids to it).  Nodes already in ``seen`` are not descended into: their
    descendants are in it too."""
    stack: list[Node] = list(roots)
    add = seen.add
    out = ids.append if ids is not None else None
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        add(n)
        if out is not None:
            out(n.id)
        for c in n.children():
            if c not in seen:
                stack.append(c)


@dataclasses.dataclass(frozen=True)
class Inline(ModulePass):
    """Inline every function whose attributes mark it ``Inline=1`` (see the module docstring)."""

    cache_scope = "module"  # PassCache: per whole-module content: it reads the call graph

    def run(self, mod: Module) -> Module:
        # (a function with reference operations is not inlined: its copies at two calls with the
        # same arguments would be one hash-consed node, one effect where there were two)
        inline = {n for n, f in mod.items() if f.attrs.get("Inline") and not f.body._mask & F_REF}
        if not inline:
            return mod
        # Functions no other function refers to are entries: they stay, as in TVM.
        referenced = {g.name_hint for n, f in mod.items() for g in global_vars(f) if g.name_hint != n}
        with gc_paused():
            into: dict[str, set[str]] = {}  # inline function -> the functions it was expanded in
            literal: set[str] = set()  # inline functions placed as function literals
            ready = self._inlined_callees(mod, inline, into, literal)
            updates: dict[str, Function | None] = {}
            for name, f in mod.items():
                if name in ready:
                    nf = ready[name]
                elif f.body._mask & F_GLOBAL:
                    expanded: set[str] = set()
                    nf = replace_body(f, _inline_calls(f.body, ready, expanded, literal))
                    for e in expanded:
                        into.setdefault(e, set()).add(name)
                else:
                    nf = f
                if nf is not f:
                    updates[name] = nf
        funcs = {n: updates.get(n) or f for n, f in mod.items()}
        keep = (inline - referenced) | (inline - set(ready))  # entries, and functions on a cycle
        removed = self._unreferenced(funcs, inline - keep)
        if removed:
            for name in removed:
                updates[name] = None
            rec = current_recorder()
            if rec is not None:
                self._eliminate(mod, funcs, set(removed) - literal, into, rec.removed)
        return mod.with_functions(updates) if updates else mod

    @staticmethod
    def _eliminate(mod: Module, funcs: dict[str, Function], removed: set[str],
                   into: dict[str, set[str]], out: list[bytes]) -> None:
        """Append to ``out`` the ids the removal of the ``removed`` functions eliminates.

        A removed function expanded (directly or through other inline functions) into a kept
        function lives on in its copies: every node with a variable below is an instance
        there, every other node is shared by the copies, so only the function and its
        parameters (replaced by the arguments) are eliminated -- no walk.  A removed function
        that no kept function received is eliminated node by node: its nodes that no kept
        function reaches."""
        live: set[str] = set()
        changed = True
        while changed:  # live: expanded into a kept function or into a live one
            changed = False
            for name in removed:
                if name not in live and any(g not in removed or g in live for g in into.get(name, ())):
                    live.add(name)
                    changed = True
        for name in sorted(live):
            f = mod[name]
            out.append(f.id)
            out.extend([p.id for p in f.params])
        dead = [mod[name] for name in sorted(removed - live)]
        if dead:
            # one set: every node of the kept functions, then the dead functions' nodes not among
            # them (their ids go straight to the record; no post-order lists)
            seen: set[Node] = set()
            _walk_into(seen, [f for n, f in funcs.items() if n not in removed], None)
            _walk_into(seen, dead, out)

    @staticmethod
    def _inlined_callees(mod: Module, inline: set[str], into: dict[str, set[str]],
                         literal: set[str]) -> dict[str, Function]:
        """Inline functions (not on a call cycle) with their own inline calls inlined, callees first."""
        calls = {n: {g.name_hint for g in global_vars(mod[n].body)} & inline for n in inline}
        # Functions on a cycle of inline calls (or calling one) cannot be inlined.
        state: dict[str, int] = {}
        order: list[str] = []
        cyclic: set[str] = set()
        for start in sorted(inline):
            stack: list[tuple[str, bool]] = [(start, False)]
            while stack:
                n, done = stack.pop()
                if done:
                    state[n] = 2
                    if calls[n] & cyclic:
                        cyclic.add(n)
                    order.append(n)
                    continue
                if state.get(n):
                    continue
                state[n] = 1
                stack.append((n, True))
                for c in sorted(calls[n]):
                    st = state.get(c)
                    if st == 1:
                        cyclic.add(c)
                    elif st is None:
                        stack.append((c, False))
        # a function is cyclic if it reaches a function of a cycle (fixpoint)
        changed = True
        while changed:
            changed = False
            for n in inline:
                if n not in cyclic and calls[n] & cyclic:
                    cyclic.add(n)
                    changed = True
        ready: dict[str, Function] = {}
        for n in order:
            if n in cyclic:
                continue
            f = mod[n]
            if calls[n]:
                expanded: set[str] = set()
                f = replace_body(f, _inline_calls(f.body, ready, expanded, literal))
                for e in expanded:
                    into.setdefault(e, set()).add(n)
            ready[n] = f
        return ready

    @staticmethod
    def _unreferenced(funcs: dict[str, Function], inline: set[str]) -> list[str]:
        """The functions of ``inline`` not reachable from the other functions of the module."""
        seen = {n for n in funcs if n not in inline or n == "main"}
        stack = list(seen)
        while stack:
            for g in global_vars(funcs[stack.pop()]):
                name = g.name_hint
                if name not in seen and name in funcs:
                    seen.add(name)
                    stack.append(name)
        return sorted(n for n in funcs if n not in seen)

