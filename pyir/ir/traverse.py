"""Iterative walks over expression DAGs (no recursion, each distinct node once)."""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import Any

from ..errors import InternalError
from .expr import Call, Expr, Function, GlobalVar, Let, Op, Var
from .kinds import KINDS, KindInfo, info
from .node import Node

__all__ = ["expr_children", "post_order", "pre_order", "count_nodes", "free_vars", "bound_vars",
           "binders_of", "scope_info", "check_binders", "global_vars", "iter_calls", "ScopeTree"]


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
        if n is _DONE:  # the node below the marker has all its children emitted
            emit(pop())
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
        push(n)
        push(_DONE)
        for c in reversed(tuple(kids)):
            if c not in seen:
                push(c)
    return out


#: Stack marker of the walks: the node just below it is emitted when it is popped (a marker
#: object per node would cost ~50 bytes per level of a deep chain).
_DONE: Any = object()


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
    var over the Let body (and over its value when that is a function: a
    let-bound function may call itself, as in the text form).  A Var is free if
    some use of it is not inside a binder for it.  The order is that of each variable's first use (left to
    right, depth first).  Linear in the number of nodes (see :func:`scope_info`).
    """
    return scope_info(expr).free


class _ScopeInfo:
    """What one scope walk found: free vars (first-use order) and a var bound twice, if any."""

    __slots__ = ("free", "twice")

    def __init__(self, free: list[Var], twice: tuple[Var, Node, Node] | None) -> None:
        self.free = free
        self.twice = twice


def scope_info(expr: Expr) -> _ScopeInfo:
    """Free variables and binders of ``expr`` in two linear passes, without per-node sets.

    Every binder body (a Function's, or a Let's with its value if that is a
    function) opens a scope, a child of the scope of its binder node.  The scope
    of a node is the lowest common ancestor of the scopes of all its uses
    (parents first, in reverse post-order), so its ancestors are exactly the
    binder bodies that every path from the root to it goes through.  A var with
    one binder is free iff its binder's scope is not an ancestor of the var's
    scope.  Scopes form a tree with skew-binary jump pointers, so each ancestor
    query costs O(log depth).  A var bound by several binders (ill-formed)
    falls back to the per-node set computation.
    """
    from .node import gc_paused

    with gc_paused():
        return _scope_walk(expr)


# -- binders, from the kinds' declarations (fields declared with ``binds=True``) --------------


def _getter(fields: tuple[Any, ...]) -> Callable[[Node], tuple[Node, ...]]:
    """A function returning the nodes of ``fields`` (single or tuple fields), in order."""
    if len(fields) == 1 and fields[0].many:
        return attrgetter(fields[0].name)
    names = [(f.name, f.many) for f in fields]

    def get(n: Node) -> tuple[Node, ...]:
        out: list[Node] = []
        for name, many in names:
            v = getattr(n, name)
            if many:
                out.extend(v)
            elif v is not None:
                out.append(v)
        return tuple(out)

    return get


def _binder_kinds() -> dict[type, KindInfo]:
    return {cls: info(cls) for cls in KINDS.values() if info(cls).binders}


#: binder kind -> the variables a node of it binds (a Function's params, a Let's var)
BOUND: dict[type, Callable[[Node], tuple[Any, ...]]] = {
    cls: _getter(ki.binders) for cls, ki in _binder_kinds().items()}
#: binder kind -> its children in use position (the children that are not bound variables)
_USES: dict[type, Callable[[Node], tuple[Node, ...]]] = {
    cls: _getter(tuple(f for f in ki.children if not f.binds)) for cls, ki in _binder_kinds().items()}
#: the summary bits of the binder kinds: a subgraph without them binds nothing
BINDER_BITS = 0
for _ki in _binder_kinds().values():
    BINDER_BITS |= _ki.bit
if set(BOUND) != {Function, Let} or not BINDER_BITS:  # pragma: no cover - a new binder kind
    raise InternalError("a binder kind other than Function and Let needs a summary bit and its scoping "
                        "rule in traverse._scope_walk and the alpha walks of pyir.analysis.equality")


def _use_children(n: Node) -> tuple[Node, ...]:
    """Children in use position: the variables a binder binds (a Let's var, a Function's
    params) are not uses."""
    uses = _USES.get(type(n))
    return n.children() if uses is None else uses(n)


def _scope_walk(expr: Expr) -> _ScopeInfo:
    from .node import F_VAR

    # 1. Post-order of the non-var nodes with variables below, over use edges (a Let's
    #    var and a Function's params are not uses); vars in first-use order.
    seen: set[Node] = set()
    add = seen.add
    order: list[Node] = []
    emit = order.append
    uses_in_order: list[Var] = []
    stack: list[Any] = [expr]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            emit(pop())
            continue
        if n in seen:
            continue
        add(n)
        k = type(n)
        if k is Var:
            uses_in_order.append(n)
            continue
        push(n)
        push(_DONE)
        if k is Let:
            c = n.body
            if c._mask & F_VAR and c not in seen:
                push(c)
            c = n.value
            if c._mask & F_VAR and c not in seen:
                push(c)
        elif k is Function:
            c = n.body
            if c._mask & F_VAR and c not in seen:
                push(c)
        else:
            for c in reversed(n.children()):
                if c._mask & F_VAR and c not in seen:
                    push(c)
    del seen, stack
    # 2. Scopes, parents first (scope tables as machine ints: 8 bytes per scope, not an int object).
    parent = array("q", [0])
    depth = array("q", [0])
    jump = array("q", [0])

    def new_scope(p: int) -> int:
        jp = jump[p]
        jump.append(jump[jp] if depth[p] - depth[jp] == depth[jp] - depth[jump[jp]] else p)
        parent.append(p)
        depth.append(depth[p] + 1)
        return len(parent) - 1

    def lift(a: int, d: int) -> int:
        while depth[a] > d:
            j = jump[a]
            a = j if depth[j] >= d else parent[a]
        return a

    def lca(a: int, b: int) -> int:
        if depth[a] < depth[b]:
            a, b = b, a
        a = lift(a, depth[b])
        while a != b:
            ja, jb = jump[a], jump[b]
            if ja != jb:
                a, b = ja, jb
            else:
                a, b = parent[a], parent[b]
        return a

    # A node's scope is final once its parents are done (reverse post-order), and nothing
    # reads it after the node itself is done, so non-var entries are popped as we go: the
    # table holds the frontier of the walk, not every node.
    scope: dict[Node, int] = {expr: 0}
    get = scope.get
    take = scope.pop
    var_scope: dict[Var, int] = {}  # each bound var -> the scope its binder opens
    twice: Var | None = None  # a var bound by two binder nodes (found again below, rarely)
    for i in range(len(order) - 1, -1, -1):
        n = order[i]
        s = take(n)
        k = type(n)
        if k is Let:
            v = n.var  # type: ignore[attr-defined]
            if v in var_scope and twice is None:  # every let opens its own scope: two binders
                twice = v
            jp = jump[s]  # a new scope below s (new_scope, inlined: one per let)
            jump.append(jump[jp] if depth[s] - depth[jp] == depth[jp] - depth[jump[jp]] else s)
            parent.append(s)
            depth.append(depth[s] + 1)
            bs = var_scope[v] = len(parent) - 1
            c = n.value  # type: ignore[attr-defined]
            if c._mask & F_VAR:
                cs = bs if type(c) is Function else s  # a let-bound function may call itself
                old = get(c)
                if old is None:
                    scope[c] = cs
                elif old != cs:
                    scope[c] = lca(old, cs)
            c = n.body  # type: ignore[attr-defined]
            if c._mask & F_VAR:
                old = get(c)
                if old is None:
                    scope[c] = bs
                elif old != bs:
                    scope[c] = lca(old, bs)
            continue
        elif k is Function:
            s = new_scope(s)
            for v in n.params:  # type: ignore[attr-defined]
                if v in var_scope and var_scope[v] != s and twice is None:  # bound by another binder
                    twice = v
                var_scope[v] = s
            kids: tuple[Node, ...] = (n.body,)  # type: ignore[attr-defined]
        else:
            kids = n.children()
        for c in kids:
            if c._mask & F_VAR:
                old = get(c)
                if old is None:
                    scope[c] = s
                elif old != s:
                    scope[c] = lca(old, s)
    if twice is not None:
        return _ScopeInfo(_free_vars_by_sets(expr, order), _two_binders(expr, twice))
    # 3. A var is free unless its binder's scope is an ancestor of the scope of its uses.
    free: list[Var] = []
    mixed = False  # a free var that also has a binder here (some of its uses are bound)
    for v in uses_in_order:
        su = scope[v]
        b = var_scope.get(v)
        if b is None:
            free.append(v)
        elif depth[su] < depth[b] or lift(su, depth[b]) != b:
            free.append(v)
            mixed = True
    if mixed:
        free = _first_free_use_order(expr, free)
    return _ScopeInfo(free, None)


def _two_binders(expr: Expr, v: Var) -> tuple[Var, Node, Node]:
    """``(v, first binder, second binder)`` for a var known to have two binder nodes."""
    found: list[Node] = []
    for w, binder in binders_of(expr):
        if w is v and binder not in found:
            found.append(binder)
            if len(found) == 2:
                return (v, found[0], found[1])
    raise InternalError(f"%{v.name_hint} was seen bound twice, but has {len(found)} binder node(s)")


def _first_free_use_order(expr: Expr, free: list[Var]) -> list[Var]:
    """``free`` ordered by first *free* use (left to right, depth first), as the per-node
    set definition orders them.  Only needed when a free var also has bound uses (rare).

    One walk tracking which of those vars are bound on the current path; a shared node
    is walked again only under a context binding fewer of them (a handful of contexts).
    """
    from .node import F_VAR

    want = set(free)
    count: dict[Var, int] = {}
    cur: frozenset[Var] = frozenset()  # the wanted vars bound on the current path
    seen: dict[Node, list[frozenset[Var]]] = {}
    out: list[Var] = []
    got: set[Var] = set()
    stack: list[Any] = [expr]
    push = stack.append
    while stack:
        n = stack.pop()
        if type(n) is tuple:  # (delta, vars): enter or leave a scope
            d, vs = n
            for v in vs:
                if v in want:
                    c = count[v] = count.get(v, 0) + d
                    cur = cur | {v} if c else cur - {v}
            continue
        k = type(n)
        if k is Var:
            if n in want and n not in cur and n not in got:
                got.add(n)
                out.append(n)
            continue
        if not (n._mask & F_VAR):
            continue
        ctxs = seen.get(n)
        if ctxs is None:
            seen[n] = [cur]
        elif any(c <= cur for c in ctxs):
            continue  # walked before with no more of them free than now
        else:
            ctxs.append(cur)
        if k is Let:
            vs = (n.var,)
            push((-1, vs))
            push(n.body)
            if type(n.value) is Function:
                push(n.value)
                push((1, vs))
            else:
                push((1, vs))
                push(n.value)
        elif k is Function:
            vs = n.params
            push((-1, vs))
            push(n.body)
            push((1, vs))
        else:
            for c in reversed(n.children()):
                push(c)
    return out + [v for v in free if v not in got]


def _free_vars_by_sets(expr: Expr, order: list[Node]) -> list[Var]:
    """Free vars as per-node sets, bottom-up (only for vars bound by several binders)."""
    from .node import F_VAR

    fv: dict[Node, tuple[Var, ...]] = {}
    empty: tuple[Var, ...] = ()
    get = fv.get
    for n in order:
        k = type(n)
        if not (n._mask & F_VAR):
            fv[n] = empty
        elif k is Var:
            fv[n] = (n,)  # type: ignore[assignment]
        elif k is Function:
            bound = set(n.params)  # type: ignore[attr-defined]
            fv[n] = tuple(v for v in _fv(n.body, get) if v not in bound)  # type: ignore[attr-defined]
        elif k is Let:
            body = tuple(v for v in _fv(n.body, get) if v is not n.var)  # type: ignore[attr-defined]
            value = _fv(n.value, get)  # type: ignore[attr-defined]
            if type(n.value) is Function:  # type: ignore[attr-defined]
                value = tuple(v for v in value if v is not n.var)  # type: ignore[attr-defined]
            fv[n] = _union(value, body)
        else:
            acc: tuple[Var, ...] = empty
            for c in n.children():
                acc = _union(acc, _fv(c, get))
            fv[n] = acc
    return list(_fv(expr, get))


def _fv(n: Node, get: Callable[[Node], tuple[Var, ...] | None]) -> tuple[Var, ...]:
    """Free vars of ``n`` from the table; a Var and a variable-free node are not in it."""
    t = get(n)
    if t is not None:
        return t
    return (n,) if type(n) is Var else ()


def _union(a: tuple[Var, ...], b: tuple[Var, ...]) -> tuple[Var, ...]:
    if not b:
        return a
    if not a:
        return b
    s = set(a)
    return a + tuple(v for v in b if v not in s)


def binders_of(expr: Expr) -> Iterator[tuple[Var, Node]]:
    """``(var, binder node)`` for every variable bound in ``expr`` (params and let vars);
    skips every subgraph without a binder (a function or a let)."""
    bound = BOUND.get
    for n in post_order(expr, stop=lambda n: not (n._mask & BINDER_BITS)):
        b = bound(type(n))
        if b is not None:
            for v in b(n):
                yield v, n


def bound_vars(expr: Expr) -> list[Var]:
    """Variables bound (as params or let vars) anywhere in ``expr``."""
    return [v for v, _ in binders_of(expr)]


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
                yield n
        return
    bit = Op(op_name)._mask
    for n in post_order(expr, stop=lambda n: not (n._mask & bit)):
        if type(n) is Call and type(n.op) is Op and n.op.name == op_name:
            yield n



class ScopeTree:
    """Nested scopes (numbered from 0, the root) as parent pointers, with lowest common
    ancestors: where to place a node used from several scopes.

    Each scope also keeps a skew-binary jump pointer (Myers 1983), so an ancestor
    query or a lowest common ancestor takes O(log depth) steps with O(1) memory per
    scope: 10^5 nested scopes each used from the innermost one stay linear.
    """

    def __init__(self) -> None:
        self.parent: list[int] = [0]
        self.depth: list[int] = [0]
        self.jump: list[int] = [0]

    def new(self, parent: int) -> int:
        """A new scope nested in ``parent``."""
        depth, jump = self.depth, self.jump
        j = jump[parent]
        jj = jump[j]
        self.parent.append(parent)
        depth.append(depth[parent] + 1)
        # jump twice as far when the parent's two jumps have equal lengths
        jump.append(jj if depth[parent] - depth[j] == depth[j] - depth[jj] else parent)
        return len(depth) - 1

    def lca(self, a: int, b: int) -> int:
        """The innermost scope containing both ``a`` and ``b``."""
        parent, depth, jump = self.parent, self.depth, self.jump
        if depth[a] < depth[b]:
            a, b = b, a
        d = depth[b]
        while depth[a] > d:  # climb to b's depth
            j = jump[a]
            a = j if depth[j] >= d else parent[a]
        while a != b:  # equal depths have equal jump depths: climb in step
            ja, jb = jump[a], jump[b]
            if ja != jb:
                a, b = ja, jb
            else:
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
    from ..errors import WellFormedError

    if not (expr._mask & BINDER_BITS) or expr in _binders_checked:
        return
    binder_of: dict[Var, Node] = {}
    for v, n in binders_of(expr):
        other = binder_of.setdefault(v, n)
        if other is not n:
            raise WellFormedError(f"variable %{v.name_hint} is bound twice (by {type(other).__name__} "
                                  f"#{other.id.hex()[:8]} and {type(n).__name__} #{n.id.hex()[:8]}); "
                                  "use a fresh pyir.var for each binding")
    _binders_checked.add(expr)


# Roots already checked (nodes are immutable, so the answer never changes).
_binders_checked: weakref.WeakSet[Node] = weakref.WeakSet()
