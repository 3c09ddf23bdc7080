"""Visitors and mutators over expression DAGs, without recursion.

Subclass :class:`ExprMutator` and define per-kind hooks (``visit_Call``,
``visit_Function``, ...).  A hook receives the node **with its children already
rewritten** (the very same node when nothing changed below it) and returns
its replacement; ``self.original`` is the node as it was in the input.  The
driver walks the DAG with an explicit stack, visits each distinct node once
(memoized by identity), and rebuilds a parent only when one of its children
changed, so a mutator that changes nothing returns its input object.

Inside a pass, every replacement is recorded in the lineage side-table
(new <- old, also for each node freshly created under the replacement).

>>> import pyir
>>> x = pyir.var("x", shape=(2,))
>>> class ReluToTanh(ExprMutator):
...     def visit_Call(self, call):
...         if call.op is pyir.Op("nn.relu"):
...             return pyir.op.tanh(call.args[0])
...         return call
>>> y = pyir.op.nn.relu(pyir.op.exp(x))
>>> ReluToTanh().visit(y) is pyir.op.tanh(pyir.op.exp(x))
True
>>> ExprMutator().visit(y) is y
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .errors import WellFormedError
from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from .lineage import current_recorder
from .node import Node
from .traverse import _DONE, post_order

__all__ = ["ExprVisitor", "ExprMutator", "rewrite", "substitute", "rebuild"]

_KINDS: tuple[type[Expr], ...] = (Var, GlobalVar, Constant, Op, Call, Tuple, TupleGetItem, Function,
                                  Let, If)


def _hooks_of(cls: type, base: type) -> dict[type, Callable[..., Any]]:
    hooks = {}
    for k in _KINDS:
        fn = getattr(cls, "visit_" + k.__name__, None)
        if fn is not None and fn is not getattr(base, "visit_" + k.__name__, None):
            hooks[k] = fn
    return hooks


class ExprVisitor:
    """Visit each distinct node once, children before parents.

    Define ``visit_Call(self, call)`` etc.; ``visit(expr)`` drives the walk.
    Hooks never recurse: the walk is iterative and memoized.
    """

    _hooks: ClassVar[dict[type, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._hooks = _hooks_of(cls, ExprVisitor)

    def __init__(self) -> None:
        self.visited: set[Node] = set()

    def visit(self, expr: Expr) -> None:
        """Walk ``expr`` (nodes already visited by this visitor are skipped)."""
        hooks = self._hooks
        visited = self.visited
        for n in post_order(expr, stop=visited.__contains__):
            if n in visited:
                continue
            visited.add(n)
            h = hooks.get(type(n))
            if h is not None:
                h(self, n)


def rebuild(n: Node, memo: dict[Node, Any]) -> Any:
    """``n`` with its children replaced through ``memo`` (``n`` itself if none changed)."""
    k = type(n)
    if k is Call:
        op = n.op  # type: ignore[attr-defined]
        args = n.args  # type: ignore[attr-defined]
        new_args = tuple([memo[a] for a in args])
        new_op = op if type(op) is Op else memo[op]
        if new_op is op and new_args == args:
            return n
        return Call(new_op, new_args, n.attrs, _checked=type(new_op) is Op)  # type: ignore[attr-defined]
    if k is Tuple:
        fs = n.fields  # type: ignore[attr-defined]
        nf = tuple([memo[f] for f in fs])
        return n if nf == fs else Tuple(nf)
    if k is TupleGetItem:
        tv = memo[n.tuple_value]  # type: ignore[attr-defined]
        return n if tv is n.tuple_value else TupleGetItem(tv, n.index)  # type: ignore[attr-defined]
    if k is Function:
        ps = n.params  # type: ignore[attr-defined]
        nps = tuple([memo[p] for p in ps])
        body = memo[n.body]  # type: ignore[attr-defined]
        if nps == ps and body is n.body:  # type: ignore[attr-defined]
            return n
        for p in nps:
            if type(p) is not Var:
                raise WellFormedError(f"a mutator replaced a function parameter by {p!r}; "
                                      "parameters can only be renamed to Vars")
        return Function(nps, body, n.ret_type, n.attrs)  # type: ignore[attr-defined]
    if k is Let:
        v = memo[n.var]  # type: ignore[attr-defined]
        val = memo[n.value]  # type: ignore[attr-defined]
        body = memo[n.body]  # type: ignore[attr-defined]
        if v is n.var and val is n.value and body is n.body:  # type: ignore[attr-defined]
            return n
        if type(v) is not Var:
            raise WellFormedError(f"a mutator replaced a let variable by {v!r}; it can only be renamed")
        return Let(v, val, body)
    if k is If:
        c = memo[n.cond]  # type: ignore[attr-defined]
        t = memo[n.true_branch]  # type: ignore[attr-defined]
        f = memo[n.false_branch]  # type: ignore[attr-defined]
        if c is n.cond and t is n.true_branch and f is n.false_branch:  # type: ignore[attr-defined]
            return n
        return If(c, t, f)
    return n




class ExprMutator:
    """Rewrite a DAG bottom-up; see the module docstring.

    ``should_visit(node)`` may return False to keep a whole subgraph as it is
    without walking it (e.g. ``not node._mask & interesting_ops``).
    """

    _hooks: ClassVar[dict[type, Callable[..., Any]]] = {}
    original: Any

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._hooks = _hooks_of(cls, ExprMutator)

    def __init__(self) -> None:
        self.memo: dict[Node, Any] = {}
        self.original = None

    def should_visit(self, node: Node) -> bool:
        """False to keep ``node`` and everything below it unchanged, unwalked."""
        return True

    def visit(self, expr: Expr) -> Any:
        """The rewritten ``expr`` (the same object when nothing changed)."""
        memo = self.memo
        r = memo.get(expr)
        if r is not None:
            return r
        hooks = self._hooks
        skip = None if type(self).should_visit is ExprMutator.should_visit else self.should_visit
        rec = current_recorder()
        stack: list[Any] = [expr]
        push = stack.append
        pop = stack.pop
        while stack:
            n = pop()
            if n is _DONE:  # children done: process the node below the marker
                n = pop()
                if n in memo:
                    continue
                updated = rebuild(n, memo)
                h = hooks.get(type(n))
                if h is not None:
                    self.original = n
                    result = h(self, updated)
                    if result is None:
                        result = updated
                    elif not isinstance(result, Expr):
                        raise WellFormedError(f"{type(self).__name__}.visit_{type(n).__name__} returned "
                                              f"{result!r}, not an expression")
                else:
                    result = updated
                memo[n] = result
                if rec is not None and result is not n:
                    self._record(rec, n, result)
                continue
            if n in memo:
                continue
            if skip is not None and not skip(n):
                memo[n] = n
                continue
            kids = n.children()
            push(n)
            push(_DONE)  # two slots per pending node, no tuple
            for c in kids:
                if c not in memo:
                    push(c)
        return memo[expr]

    def _record(self, rec: Any, old: Node, new: Node) -> None:
        memo = self.memo
        ids = [new.id]  # the new node and every node freshly created under it derive from ``old``
        produced = self.__dict__.setdefault("_produced", set())
        produced.add(new)
        stack = list(new.children())
        while stack:
            c = stack.pop()
            if c in memo or c in produced:
                continue
            produced.add(c)
            ids.append(c.id)
            stack.extend(c.children())
        rec.edges.add_one_old(ids, old.id)  # the compact buffer: one id per edge, no tuples


class _FnMutator(ExprMutator):
    def __init__(self, fn: Callable[[Expr], Expr | None]) -> None:
        super().__init__()
        self.fn = fn

    def visit_any(self, node: Expr) -> Expr:
        r = self.fn(node)
        return node if r is None else r


_FnMutator._hooks = dict.fromkeys(_KINDS, _FnMutator.visit_any)


def rewrite(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Any:
    """Functional post-order rewrite: ``fn`` sees each distinct node once, with its
    children already rewritten, and returns a replacement (or None to keep it).

    >>> import pyir
    >>> x = pyir.var("x", shape=(2,))
    >>> y = pyir.op.exp(pyir.op.exp(x))
    >>> z = rewrite(y, lambda n: pyir.op.log(n.args[0]) if isinstance(n, pyir.Call) else None)
    >>> pyir.astext(z).splitlines()[-1]
    'log(%0)'
    """
    return _FnMutator(fn).visit(expr)


class _Substitute(ExprMutator):
    def __init__(self, mapping: dict[Var, Expr]) -> None:
        super().__init__()
        self.memo.update(mapping)  # type: ignore[arg-type]


def substitute(expr: Expr, mapping: dict[Var, Expr]) -> Any:
    """Replace variables by expressions (e.g. parameters by arguments)."""
    return _Substitute(mapping).visit(expr)
