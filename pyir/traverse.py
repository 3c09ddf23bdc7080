"""Iterative walks over expression DAGs (no recursion, each distinct node once)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .expr import Call, Expr, Function, GlobalVar, Let, Op, Var
from .node import Node

__all__ = ["expr_children", "post_order", "pre_order", "count_nodes", "free_vars", "bound_vars",
           "check_binders", "global_vars", "iter_calls", "ScopeTree"]


def expr_children(n: Node) -> tuple[Node, ...]:
    """The expression children of ``n`` (operators of op calls are not included)."""
    return n.children()


def post_order(roots: Expr | Iterable[Expr], children: Callable[[Node], Iterable[Node]] = expr_children,
               *, stop: Callable[[Node], bool] | None = None) -> list[Any]:
    """Distinct nodes reachable from ``roots``, children before parents.

    ``stop(n)`` true means: include ``n`` but do not descend into it.

    >>> import pyir
    >>> x = pyir.var("x")
    >>> y = pyir.op.add(x, x)
    >>> [type(n).__name__ for n in post_order(y)]
    ['Var', 'Call']
    """
    rs = [roots] if isinstance(roots, Node) else list(roots)
    seen: set[Node] = set()
    add = seen.add
    out: list[Node] = []
    emit = out.append
    stack: list[Any] = []
    push = stack.append
    pop = stack.pop
    for r in reversed(rs):
        push(r)
    while stack:
        n = pop()
        if type(n) is _Done:
            emit(n.node)
            continue
        if n in seen:
            continue
        add(n)
        if stop is not None and stop(n):
            emit(n)
            continue
        kids = children(n)
        if not kids:
            emit(n)
            continue
        push(_Done(n))
        for c in reversed(tuple(kids)):
            if c not in seen:
                push(c)
    return out


class _Done:
    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node


def pre_order(root: Expr) -> Iterator[Expr]:
    """Distinct nodes reachable from ``root``, parents before children (DFS)."""
    seen: set[Node] = set()
    stack: list[Node] = [root]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        yield n  # type: ignore[misc]
        stack.extend(reversed(n.children()))


def count_nodes(root: Expr | Iterable[Expr]) -> int:
    """Number of distinct expression nodes reachable from ``root``."""
    return len(post_order(root))


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in ``expr`` but not bound in it, in first-use order.

    Binding is lexical: Function params scope over the function body, a Let
    var over the Let body.  A Var is free if some use of it is not inside a
    binder for it.
    """
    # Iterative: compute for every node the set of free vars bottom-up.
    from .node import F_VAR

    order = post_order(expr, stop=lambda n: not (n._mask & F_VAR))
    fv: dict[Node, tuple[Var, ...]] = {}
    empty: tuple[Var, ...] = ()
    for n in order:
        k = type(n)
        if not (n._mask & F_VAR):
            fv[n] = empty
        elif k is Var:
            fv[n] = (n,)  # type: ignore[assignment]
        elif k is Function:
            bound = set(n.params)  # type: ignore[attr-defined]
            fv[n] = tuple(v for v in fv[n.body] if v not in bound)  # type: ignore[attr-defined]
        elif k is Let:
            body = tuple(v for v in fv[n.body] if v is not n.var)  # type: ignore[attr-defined]
            fv[n] = _union(fv[n.value], body)  # type: ignore[attr-defined]
        else:
            acc: tuple[Var, ...] = empty
            for c in n.children():
                acc = _union(acc, fv[c])
            fv[n] = acc
    return list(fv[expr])


def _union(a: tuple[Var, ...], b: tuple[Var, ...]) -> tuple[Var, ...]:
    if not b:
        return a
    if not a:
        return b
    s = set(a)
    return a + tuple(v for v in b if v not in s)


def bound_vars(expr: Expr) -> list[Var]:
    """Variables bound (as params or let vars) anywhere in ``expr``."""
    out: list[Var] = []
    for n in post_order(expr):
        if type(n) is Function:
            out.extend(n.params)  # type: ignore[attr-defined]
        elif type(n) is Let:
            out.append(n.var)  # type: ignore[attr-defined]
    return out


def global_vars(expr: Expr) -> list[GlobalVar]:
    """GlobalVars referenced in ``expr`` (skips every subgraph without one)."""
    from .node import F_GLOBAL

    return [n for n in post_order(expr, stop=lambda n: not (n._mask & F_GLOBAL))
            if type(n) is GlobalVar]


def iter_calls(expr: Expr, op_name: str | None = None) -> Iterator[Call]:
    """Calls in ``expr`` (of operator ``op_name`` if given), children first.

    With ``op_name``, subgraphs that cannot contain that operator are skipped
    using the per-node operator summary.
    """
    if op_name is None:
        for n in post_order(expr):
            if type(n) is Call:
                yield n  # type: ignore[misc]
        return
    bit = Op(op_name)._mask
    for n in post_order(expr, stop=lambda n: not (n._mask & bit)):
        if type(n) is Call and type(n.op) is Op and n.op.name == op_name:  # type: ignore[attr-defined]
            yield n  # type: ignore[misc]



class ScopeTree:
    """Nested scopes (numbered from 0, the root) as parent pointers, with lowest common
    ancestors: where to place a node used from several scopes."""

    def __init__(self) -> None:
        self.parent: list[int] = [0]
        self.depth: list[int] = [0]

    def new(self, parent: int) -> int:
        """A new scope nested in ``parent``."""
        self.parent.append(parent)
        self.depth.append(self.depth[parent] + 1)
        return len(self.parent) - 1

    def lca(self, a: int, b: int) -> int:
        """The innermost scope containing both ``a`` and ``b``."""
        parent, depth = self.parent, self.depth
        while depth[a] > depth[b]:
            a = parent[a]
        while depth[b] > depth[a]:
            b = parent[b]
        while a != b:
            a, b = parent[a], parent[b]
        return a


def check_binders(expr: Expr) -> None:
    """Raise WellFormedError unless every variable is bound by at most one binder node.

    A binder is a Function (its params) or a Let (its var).  Hash-consing makes a
    node shared by two scopes one node, so a variable bound by two different
    binders would give that node two meanings; pyir rejects such programs.  (One
    binder node shared by several parents is fine.)  Iterative; skips every
    subgraph without a function or a let.
    """
    from .errors import WellFormedError
    from .node import F_FUNC, F_LET

    if not (expr._mask & (F_FUNC | F_LET)) or expr in _binders_checked:
        return
    binder_of: dict[Var, Node] = {}
    for n in post_order(expr, stop=lambda n: not (n._mask & (F_FUNC | F_LET))):
        k = type(n)
        if k is Function:
            bound: tuple[Var, ...] = n.params  # type: ignore[attr-defined]
        elif k is Let:
            bound = (n.var,)  # type: ignore[attr-defined]
        else:
            continue
        for v in bound:
            other = binder_of.setdefault(v, n)
            if other is not n:
                raise WellFormedError(f"variable %{v.name_hint} is bound twice (by {type(other).__name__} "
                                      f"#{other.id.hex()[:8]} and {k.__name__} #{n.id.hex()[:8]}); "
                                      "use a fresh pyir.var for each binding")
    _binders_checked.add(expr)


# Roots already checked (nodes are immutable, so the answer never changes).
_binders_checked: weakref.WeakSet[Node] = weakref.WeakSet()
