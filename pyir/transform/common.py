"""Helpers shared by the passes: the one place a pass imports from besides the core layers.

No pass imports another pass's module; what two passes share lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import WellFormedError
from ..expr import Call, Expr, Function, Let, Var
from ..functor import rebuild
from ..lineage import current_recorder, derive
from ..node import F_VAR, Node, digest
from ..traverse import _DONE

# -- inlining and fusion helpers (FuseOps, DefuseOps, Inline) -------------------------


def replace_body(func: Function, body: Expr) -> Function:
    """``func`` with another body of the same type (return type and attributes kept);
    the new function derives from the old one."""
    if body is func.body:
        return func
    return derive(Function(func.params, body, func.ret_type, func.attrs), func)  # type: ignore[return-value]


def inline_call(func: Function, args: Sequence[Expr], site: Node) -> Expr:
    """The body of ``func`` with its parameters replaced by ``args``: ``func`` expanded at
    the call ``site``.

    Variables bound inside the body (``let`` variables, parameters of nested
    functions) are renamed to fresh variables whose uids derive from ``site``
    and the original uid, so inlining is deterministic and two copies never bind
    the same variable.  Lineage: each copied node (renamed variables included) is
    the body node it copies instantiated at ``site`` (an instance edge,
    :func:`~pyir.lineage.derive_at`), so a function FuseOps shared between groups
    gives back, at each call, the nodes of that call's group.  Nothing derives
    from ``site`` itself through an ordinary edge.  The walk is iterative.
    """
    if len(args) != len(func.params):
        raise WellFormedError(f"a function of {len(func.params)} parameter(s) is called with "
                              f"{len(args)} argument(s)")
    memo: dict[Node, Any] = dict(zip(func.params, args))
    rec = current_recorder()
    add_at = rec.edges.add_at if rec is not None else None
    sid = site.id
    salt = b"pyir.inline" + sid
    # One streaming walk, children first, with memo as the set of nodes done (no post-order
    # list, no separate seen set): its memory is the memo and a stack as deep as the body.
    # A binder (let or nested function) is met before anything in its scope, so its
    # variables are renamed there.
    stack: list[Any] = [func.body]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            n = pop()
            new = rebuild(n, memo)
            memo[n] = new
            if add_at is not None and new is not n:
                add_at(new.id, n.id, sid)
            continue
        if n in memo:
            continue
        m = n._mask
        if not m & F_VAR:
            memo[n] = n  # nothing to substitute below
            continue
        kids = n.children()
        if not kids:
            memo[n] = n  # a free variable (none in a module function)
            continue
        k = type(n)
        if k is Let or k is Function:
            for v in ((n.var,) if k is Let else n.params):
                if v not in memo:
                    nv = memo[v] = Var(v.name_hint, v.type_annotation, uid=digest(salt + v.uid))
                    if add_at is not None:
                        add_at(nv.id, v.id, sid)
        push(n)
        push(_DONE)
        for c in reversed(kids):
            if c not in memo:
                push(c)
    return memo[func.body]


def expand_calls(expr: Expr, callee: Callable[[Call, dict[Node, Any]], Function | None],
                 leaf: Callable[[Node], bool]) -> Expr:
    """``expr`` with each call for which ``callee(call, memo)`` gives a function replaced by
    that function expanded at the call (:func:`inline_call`, arguments rewritten first).

    ``callee`` sees the memo of rewritten nodes (so it may take the call's rewritten
    callee from it); ``leaf(n)`` says there is nothing to expand below ``n``.  One
    streaming walk, children first, with the memo doubling as the set of nodes done;
    each rebuilt node of the enclosing graph derives from its old version.
    """
    memo: dict[Node, Any] = {}
    rec = current_recorder()
    add = rec.edges.add if rec is not None else None
    stack: list[Any] = [expr]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            n = pop()
            fn = callee(n, memo) if type(n) is Call else None
            if fn is not None:
                new = inline_call(fn, tuple([memo[a] for a in n.args]), n)
            else:
                new = rebuild(n, memo)
                if add is not None and new is not n:
                    add(new.id, n.id)
            memo[n] = new
            continue
        if n in memo:
            continue
        if leaf(n):
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


# -- rewriting helpers (the other passes) ----------------------------------------------
