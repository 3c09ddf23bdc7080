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
an inlined body derives from the body node it replaces (so ``find`` on an
expression of the unfused module returns that very expression after
FuseOps + DefuseOps), and each rebuilt node of the enclosing graph from its
old version.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import WellFormedError
from ..expr import Call, Expr, Function, Var
from ..functor import rebuild
from ..lineage import current_recorder, derive
from ..module import Module
from ..node import F_FUNC, F_LET, F_VAR, Node, digest
from ..traverse import _DONE, bound_vars
from .base import ModulePass
from .fuse_ops import no_gc

__all__ = ["DefuseOps", "inline_call", "replace_body"]


def replace_body(func: Function, body: Expr) -> Function:
    """``func`` with another body of the same type (return type and attributes kept);
    the new function derives from the old one."""
    if body is func.body:
        return func
    return derive(Function(func.params, body, func.ret_type, func.attrs), func)  # type: ignore[return-value]


def inline_call(func: Function, args: Sequence[Expr], site: Node) -> Expr:
    """The body of ``func`` with its parameters replaced by ``args``.

    Variables bound inside the body (``let`` variables, parameters of nested
    functions) are renamed to fresh variables whose uids derive from ``site``
    (the call being inlined) and the original uid, so inlining is deterministic
    and two copies never bind the same variable.  Each copied node derives
    from the body node it copies.  The walk is iterative.
    """
    if len(args) != len(func.params):
        raise WellFormedError(f"a function of {len(func.params)} parameter(s) is called with "
                              f"{len(args)} argument(s)")
    memo: dict[Node, Any] = dict(zip(func.params, args))
    binders = bound_vars(func.body) if func.body._mask & (F_LET | F_FUNC) else ()
    for v in binders:
        if v not in memo:
            memo[v] = Var(v.name_hint, v.type_annotation, uid=digest(b"pyir.inline" + site.id + v.uid))
    del binders
    rec = current_recorder()
    add = rec.edges.add if rec is not None else None
    # One streaming walk, children first, with memo as the set of nodes done (no post-order
    # list, no separate seen set): its memory is the memo and a stack as deep as the body.
    stack: list[Any] = [func.body]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            n = pop()
            new = rebuild(n, memo)
            memo[n] = new
            if add is not None and new is not n:
                add(new.id, n.id)
            continue
        if n in memo:
            continue
        if not n._mask & F_VAR:
            memo[n] = n  # nothing to substitute below
            continue
        kids = n.children()
        if not kids:
            memo[n] = n
            continue
        push(n)
        push(_DONE)
        for c in reversed(kids):
            if c not in memo:
                push(c)
    return memo[func.body]


def _leaf(n: Node) -> bool:
    """Nothing to defuse below ``n``: no function at all, or a primitive function without
    nested functions."""
    if not n._mask & F_FUNC:
        return True
    return type(n) is Function and not n.body._mask & F_FUNC


def _is_primitive_call(n: Node) -> bool:
    if type(n) is not Call:
        return False
    f = n.op
    return type(f) is Function and bool(f.attrs.get("Primitive"))


@dataclasses.dataclass(frozen=True)
class DefuseOps(ModulePass):
    """Inline every ``Call(fn, args)`` of a ``Primitive=1`` function (in every function)."""

    def run(self, mod: Module) -> Module:
        updates = {}
        with no_gc():
            for name, f in mod.items():
                if not f.body._mask & F_FUNC:
                    continue
                nf = replace_body(f, defuse(f.body))
                if nf is not f:
                    updates[name] = nf
        return mod.with_functions(updates) if updates else mod


def defuse(expr: Expr) -> Expr:
    """``expr`` with every call of a primitive function inlined (iteratively, nested ones too)."""
    memo: dict[Node, Any] = {}
    rec = current_recorder()
    add = rec.edges.add if rec is not None else None
    # a streaming walk, children first, memo doubling as the set of nodes done (as inline_call)
    stack: list[Any] = [expr]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            n = pop()
            if _is_primitive_call(n):
                fn = memo[n.op]
                args = tuple([memo[a] for a in n.args])
                new = inline_call(fn, args, n)
            else:
                new = rebuild(n, memo)
                if add is not None and new is not n:
                    add(new.id, n.id)
            memo[n] = new
            continue
        if n in memo:
            continue
        if _leaf(n):
            memo[n] = n
            continue
        kids = n.children()
        if not kids:
            memo[n] = n
            continue
        push(n)
        push(_DONE)
        for c in reversed(kids):
            if c not in memo:
                push(c)
    return memo[expr]
