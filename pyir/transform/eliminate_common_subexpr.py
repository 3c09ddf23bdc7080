"""EliminateCommonSubexpr: drop ``let`` bindings whose value is already bound in scope.

In graph form hash-consing already shares equal subexpressions, so this pass
matters for A-normal form.  Below, two lets bind the same ``add(%x, %y)`` (one
hash-consed node, which the printer shows once, as ``%0``); the example is
``tests/golden/EliminateCommonSubexpr/docstring.txt``, run by ``tests/test_golden.py``::

    # before
    def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
      %0 = add(%x, %y);
      let %a = %0;
      let %b = %0;
      multiply(%a, %b)
    }

    # after EliminateCommonSubexpr()
    def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
      let %a = add(%x, %y);
      multiply(%a, %a)
    }

A binding is replaced by an earlier one in scope (an enclosing ``let`` of the same
value, compared after substitution, so chains of duplicates collapse in one run);
its variable is substituted by the kept variable.  Scopes are lexical: a binding
inside one ``if`` branch is not reused in the other.  The walk uses an explicit
stack, so million-deep ``let`` chains are fine.  Lineage: the removed variable,
value and ``let`` derive into the kept variable, value and the rewritten body.

>>> import pyir
>>> x = pyir.var("x", shape=(2,))
>>> a, b = pyir.var("a"), pyir.var("b")
>>> v = pyir.op.exp(x)
>>> f = pyir.Function([x], pyir.Let(a, v, pyir.Let(b, v, pyir.op.add(a, b))))
>>> out = EliminateCommonSubexpr()(pyir.Module({"main": f}))["main"]
>>> out.body is pyir.Let(a, v, pyir.op.add(a, a))
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..expr import Call, Expr, Function, Let, Op, Var
from ..functor import ExprMutator, rebuild
from ..lineage import current_recorder
from ..module import Module
from ..node import F_LET, Node
from .base import FunctionPass

__all__ = ["EliminateCommonSubexpr"]

# work-stack opcodes
_ENTER, _LET_VALUE_DONE, _LET_EXIT, _LET_DROPPED, _EXIT = range(5)


class _Subst(ExprMutator):
    """Substitution of dropped variables by kept ones, memoized across the whole function."""


def _cse(root: Expr) -> Expr:
    subst = _Subst()
    smemo = subst.memo
    rec = current_recorder()

    def derive(new: Node, old: Node) -> Node:
        if rec is not None and new is not old:
            rec.edges.append((new.id, (old.id,)))
        return new

    def substituted(n: Expr) -> Expr:
        r = smemo.get(n)
        if r is not None:
            return r
        if type(n) is Call and type(n.op) is Op:  # fast path: arguments already seen
            for a in n.args:
                if a not in smemo and type(a) is not Var:
                    break
                if smemo.get(a, a) is not a:
                    break
            else:
                smemo[n] = n
                return n
        return subst.visit(n)

    avail: dict[Expr, Var] = {}  # value -> the variable binding it in the current scope
    memo: dict[tuple[Node, int], Expr] = {}  # (node, scope) -> result, for let-containing nodes
    scope = 0  # id of the current set of available bindings
    next_scope = 1
    results: list[Any] = []
    push_res = results.append
    stack: list[tuple[Any, ...]] = [(_ENTER, root)]
    push = stack.append
    pop = stack.pop
    while stack:
        frame = pop()
        code, n = frame[0], frame[1]
        if code == _ENTER:
            if not n._mask & F_LET:
                push_res(substituted(n))
                continue
            r = memo.get((n, scope))
            if r is not None:
                push_res(r)
                continue
            if type(n) is Let:
                push((_LET_VALUE_DONE, n, scope))
                push((_ENTER, n.value))
            else:
                kids = n.children()
                push((_EXIT, n, scope, kids))
                for c in reversed(kids):
                    push((_ENTER, c))
        elif code == _LET_VALUE_DONE:
            value = results.pop()
            v = n.var
            kept = avail.get(value)
            if kept is not None and kept is not v:
                smemo[v] = kept  # later uses of v become uses of kept
                derive(kept, v)
                derive(value, n.value)
                push((_LET_DROPPED, n, frame[2]))
                push((_ENTER, n.body))
            else:
                prev_scope = scope
                prev = avail.get(value)
                avail[value] = v
                scope = next_scope
                next_scope += 1
                push((_LET_EXIT, n, prev_scope, value, prev))
                push((_ENTER, n.body))
        elif code == _LET_EXIT:
            _, _, prev_scope, value, prev = frame
            body = results.pop()
            if prev is None:
                del avail[value]
            else:
                avail[value] = prev
            scope = prev_scope
            if value is n.value and body is n.body:
                out = n
            else:
                out = derive(Let(n.var, value, body), n)
            memo[(n, scope)] = out
            push_res(out)
        elif code == _LET_DROPPED:
            body = results.pop()
            derive(body, n)
            memo[(n, frame[2])] = body
            push_res(body)
        else:  # _EXIT
            _, _, sc, kids = frame
            k = len(kids)
            new_kids = results[len(results) - k:] if k else []
            del results[len(results) - k:]
            local = dict(zip(kids, new_kids))
            out = rebuild(n, local)
            if out is not n:
                derive(out, n)
            memo[(n, sc)] = out
            push_res(out)
    return results[0]


@dataclasses.dataclass(frozen=True)
class EliminateCommonSubexpr(FunctionPass):
    """Replace ``let`` bindings of values already bound in scope by the earlier variable."""

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        if not func.body._mask & F_LET:
            return func
        body = _cse(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_type, func.attrs)
