"""Relay's pattern API beside pyir's rules: ``partition``, ``DFPatternCallback`` and ``rewrite``.

:func:`partition` wraps each match of a pattern into a function called in its place (the
function has the ``PartitionedFromPattern`` attribute naming the operators it holds, plus any
``attrs`` given), as ``relay.dataflow_pattern.partition`` does; :func:`rewrite` applies
:class:`DFPatternCallback` objects (a pattern and ``callback(pre, post, node_map)``) until the
expression stops changing, as ``relay.dataflow_pattern.rewrite`` does.  Both use the grouping
Relay uses: matches are searched from the root down (a match at an output takes the nodes it
covers), a match whose inner nodes another match already took is dropped, and so is one whose
inner nodes are used outside it unless that use flows back into its root (the root
post-dominates it).  Everything is iterative; lineage is recorded by the rewrite layer's
mutator (a partitioned call, or a callback's result, derives from the nodes its match covered).

pyir's own driver, :func:`pyir.rewrite.pattern_rewrite.rewrite_rules`, differs: it rewrites
bottom-up with ``callback(match)`` and skips subgraphs by their operator summaries.

>>> import pyir
>>> from pyir.rewrite.pattern import is_op, wildcard
>>> x, w = pyir.var("x", shape=(1, 2, 4, 4)), pyir.var("w", shape=(2, 2, 3, 3))
>>> pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))
>>> out = partition(pat, pyir.op.nn.relu(pyir.op.nn.conv2d(x, w)))
>>> out.op.attrs["PartitionedFromPattern"], out.args == (x, w)
('nn.conv2d_nn.relu_', True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..analysis.equality import alpha_equal
from ..analysis.typecheck import TypeContext
from ..errors import PatternError, RewriteLoopError, WellFormedError
from ..ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.node import Node, gc_paused
from ..ir.types import Type
from . import pattern as _p
from .functor import _KINDS, Derivations, ExprMutator, RoundLineage, rebuild
from .pattern import (
    CallPattern,
    ConstantPattern,
    DFPatternCallback,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    Match,
    Pattern,
    TuplePattern,
    Universe,
    _State,
)

__all__ = ["partition", "DFPatternCallback", "rewrite", "PARTITIONED_FROM_PATTERN"]

#: The attribute naming what a partitioned function was made from (Relay's name).
PARTITIONED_FROM_PATTERN = "PartitionedFromPattern"

_LEAF_PATTERNS = (_p.WildcardPattern, _p.VarPattern, ConstantPattern, ExprPattern, _p.OpPattern)


def _pattern_order(root: Pattern) -> list[Pattern]:
    """The patterns inside ``root`` in post-order (sub-patterns first, left to right), as Relay's
    indexed pattern graph lists them: the order a partitioned function's parameters follow."""
    out: list[Pattern] = []
    seen: set[Pattern] = set()
    stack: list[tuple[Pattern, bool]] = [(root, False)]
    while stack:
        p, done = stack.pop()
        if done:
            out.append(p)
            continue
        if p in seen:
            continue
        seen.add(p)
        stack.append((p, True))
        for k in reversed(_kids(p)):
            if k not in seen:
                stack.append((k, False))
    return out


def _kids(p: Pattern) -> tuple[Pattern, ...]:
    t = type(p)
    if t is CallPattern:
        return (p.op, *(p.args or ()))  # type: ignore[attr-defined]
    if t is TuplePattern:
        return tuple(p.fields or ())  # type: ignore[attr-defined]
    if t is _p.TupleGetItemPattern:
        return (p.tuple_value,)  # type: ignore[attr-defined]
    if t is _p.AltPattern:
        return (p.left, p.right)  # type: ignore[attr-defined]
    if t is _p.AttrPattern or t is _p.TypePattern:
        return (p.inner,)  # type: ignore[attr-defined]
    if t is FunctionPattern:
        return (*(p.params or ()), p.body)  # type: ignore[attr-defined]
    if t is _p.IfPattern:
        return (p.cond, p.true_branch, p.false_branch)  # type: ignore[attr-defined]
    if t is _p.LetPattern:
        return (p.var, p.value, p.body)  # type: ignore[attr-defined]
    if t is DominatorPattern:
        return (p.parent, p.path, p.child)  # type: ignore[attr-defined]
    return ()


def _below(root: Expr) -> set[Expr]:
    """Every expression node under ``root`` (its data inputs, transitively), ``root`` included."""
    out: set[Expr] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n in out:
            continue
        out.add(n)
        stack.extend(c for c in Universe.inputs(n) if c not in out)
    return out


class _Group:
    __slots__ = ("root", "match", "inputs", "inner", "name", "_fn")

    def __init__(self, root: Expr, match: Match, inputs: list[Expr], inner: list[Expr], name: str) -> None:
        self.root = root
        self.match = match
        self.inputs = inputs
        self.inner = inner  # the nodes the match covers, children first (inputs excluded)
        self.name = name
        self._fn: Function | None = None

    def function(self, number: int, type_of: Callable[[Expr], Type | None]) -> Function:
        """The function computing the group from its inputs (parameters ``FunctionVar_<n>_<i>``)."""
        if self._fn is None:
            params = [Var(f"FunctionVar_{number}_{i}", type_of(a)) for i, a in enumerate(self.inputs)]
            memo: dict[Node, Any] = dict(zip(self.inputs, params))
            for n in self.inner:  # children first: rebuild each over its rebuilt children
                if n not in memo:
                    memo[n] = _rebuilt(n, memo)
            self._fn = Function(params, memo[self.root])
        return self._fn


def _rebuilt(n: Expr, memo: Mapping[Node, Any]) -> Expr:
    if type(n) is Function:  # kept whole (a function called in the group, closed)
        return n
    return rebuild(n, _Through(memo))  # type: ignore[arg-type]


class _Through:
    """``memo`` where a node without an entry stands for itself."""

    __slots__ = ("memo",)

    def __init__(self, memo: Mapping[Node, Any]) -> None:
        self.memo = memo

    def __getitem__(self, n: Node) -> Any:
        return self.memo.get(n, n)

    def get(self, n: Node, default: Any = None) -> Any:
        return self.memo.get(n, n)

    def __contains__(self, n: object) -> bool:
        return True


def _name_of(n: Expr) -> str:
    k = type(n)
    if k is Call:
        return f"{n.op.name}_" if type(n.op) is Op else "Call_"  # type: ignore[attr-defined]
    if k is Tuple:
        return "Tuple_"
    if k is Function:
        return "Function"
    if k is Let:
        return "Let_"
    if k is If:
        return "If_"
    if k is TupleGetItem:
        return f"TupleGetItem{n.index}_"  # type: ignore[attr-defined]
    return ""


def _embeds(e: Expr, p: Pattern) -> bool:
    """A constant matched by a constant pattern (or the very constant of an is_expr) stays in the
    partitioned function instead of becoming a parameter."""
    if type(e) is not Constant:
        return False
    return type(p) is ConstantPattern or (type(p) is ExprPattern and type(p.expr) is Constant)


class _Grouper:
    """Relay's PatternGrouper: the non-overlapping matches of one pattern in one expression."""

    def __init__(self, pattern: Pattern, expr: Expr, type_of: Callable[[Expr], Type | None]) -> None:
        self.pattern = pattern
        self.universe = Universe(expr)
        self.type_of = type_of
        self.order = _pattern_order(pattern)
        self.groups: dict[Expr, _Group] = {}  # root -> group
        self.taken: set[Expr] = set()
        self._run()

    def _run(self) -> None:
        pattern = self.pattern
        uni = self.universe
        roots = pattern._roots()
        pre_partitioned: set[Expr] = set()
        for n in reversed(uni.order()):  # from the root down
            if n in self.taken:
                continue
            if type(n) is Function and PARTITIONED_FROM_PATTERN in n.attrs:
                pre_partitioned |= _below(n)
            if n in pre_partitioned or not pattern.may_match_in(n._mask):
                continue
            if roots is not None and _p._key(n) not in roots:
                continue
            m = pattern._match_root(n, _State(self.type_of, uni))
            if m is not None:
                self._group(n, m)

    def _group(self, root: Expr, m: Match) -> None:
        fuzzy: set[Expr] = set()
        for q in self.order:
            if type(q) is DominatorPattern:
                for sub in (q.parent, q.path):
                    fuzzy.update(m.all(sub))
            elif type(q) is FunctionPattern:
                for f in m.all(q):
                    fuzzy |= _below(f)
        inputs: dict[Expr, None] = {}

        def make_input(e: Expr, q: Pattern) -> None:
            if e in fuzzy or type(e) is Op or type(e) is Function or _embeds(e, q):
                return
            inputs.setdefault(e)

        for q in self.order:
            t = type(q)
            if t is TuplePattern and q.fields is None:  # type: ignore[attr-defined]
                for e in m.all(q):
                    for f in e.fields:  # type: ignore[attr-defined]
                        make_input(f, q)
            elif t is CallPattern and q.args is None:  # type: ignore[attr-defined]
                for e in m.all(q):
                    for a in e.args:  # type: ignore[attr-defined]
                        make_input(a, q)
            elif t in _LEAF_PATTERNS:
                for e in m.all(q):
                    make_input(e, q)
        if root in inputs:  # a leaf pattern matching the root itself: nothing to wrap
            return
        # the covered nodes: everything from the root down to the inputs, children first
        inner: list[Expr] = []
        names: list[str] = []
        seen: set[Expr] = set(inputs)
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                inner.append(n)
                names.append(_name_of(n))
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            if type(n) is Function:
                names.extend(self._body_names(n))
                continue
            for c in reversed(Universe.inputs(n)):
                if c not in seen:
                    stack.append((c, False))
        # a free variable the match reached without a pattern making it an input becomes one too
        bound: set[Expr] = set()
        for n in inner:
            if type(n) is Let:
                bound.add(n.var)
        for n in inner:
            if type(n) is Var and n not in bound:
                inputs.setdefault(n)
        inner = [n for n in inner if n not in inputs]
        covered = set(inner)
        uni = self.universe
        for n in inner:
            k = type(n)
            if k is Op or k is Function or k is Constant or k is Var:
                continue
            if n in self.taken:
                return  # overlaps an earlier match
            if n is not root:
                for u in uni.users(n):
                    if u not in covered and not uni.post_dominates(root, u):
                        return  # used outside the match by dataflow that never comes back to its root
        name = "".join(names)
        g = _Group(root, m, list(inputs), inner, name)
        self.groups[root] = g
        for n in inner:
            k = type(n)
            if k is not Op and k is not Function and k is not Constant and k is not Var:
                self.taken.add(n)

    @staticmethod
    def _body_names(f: Function) -> list[str]:
        out: list[str] = []
        seen: set[Expr] = set()
        stack: list[tuple[Expr, bool]] = [(f.body, False)]
        while stack:
            n, done = stack.pop()
            if done:
                out.append(_name_of(n))
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            for c in reversed(Universe.inputs(n)):
                if c not in seen:
                    stack.append((c, False))
        return out


def _type_oracle(mod: Any) -> Callable[[Expr], Type | None]:
    return TypeContext.of(mod)


class _Replacer(ExprMutator):
    """Bottom-up: at each group root, ``replace(group, pre, post)`` gives the new node."""

    def __init__(self, groups: Mapping[Expr, _Group],
                 replace: Callable[[_Group, Expr, Expr], Expr | None]) -> None:
        super().__init__()
        self.groups = groups
        self.replace = replace

    def visit_any(self, post: Expr) -> Expr:
        pre = self.original
        g = self.groups.get(pre)
        if g is None:
            return post
        r = self.replace(g, pre, post)
        if r is None or r is post:
            return post
        if not isinstance(r, Expr):
            raise WellFormedError(f"a pattern callback returned {r!r:.80}, not an expression")
        d = Derivations()
        if d:
            for n in g.inner:
                if n is not pre:
                    d.derive(r, n)
        return r


_Replacer._hooks = dict.fromkeys(_KINDS, _Replacer.visit_any)


def partition(pattern: Pattern, expr: Expr, attrs: Mapping[str, Any] | None = None,
              check: Callable[[Expr], bool] | None = None, *, mod: Any = None) -> Expr:
    """``expr`` with every match of ``pattern`` wrapped into a function called in its place.

    The function's parameters are the match's inputs (what its leaf patterns matched, in the
    pattern's order; constants matched by ``is_constant()`` / ``is_expr(const)`` stay inside);
    it has the attribute ``PartitionedFromPattern`` (the covered node kinds and operators in
    order, e.g. ``"nn.conv2d_nn.bias_add_nn.relu_"``) and ``attrs``.  ``check(pre)``, if given,
    must return True for a match to be partitioned.  Nodes already inside a partitioned function
    are not matched again.  Types of the parameters (and of type patterns) come from ``mod``'s
    typing context.
    """
    if not isinstance(pattern, Pattern):
        raise PatternError(f"partition needs a pattern, got {pattern!r:.80}")
    if not isinstance(expr, Expr):
        raise PatternError(f"partition needs an expression, got {expr!r:.80}")
    if isinstance(pattern, FunctionPattern):
        return expr  # a function that is not called: nothing to partition (as Relay)
    with gc_paused():  # bulk work over the whole graph (see pyir.ir.node.gc_paused)
        return _partition(pattern, expr, dict(attrs or {}), check, mod)


def _partition(pattern: Pattern, expr: Expr, extra: dict[str, Any], check: Callable[[Expr], bool] | None,
               mod: Any) -> Expr:
    type_of = _type_oracle(mod)
    grouper = _Grouper(pattern, expr, type_of)
    if not grouper.groups:
        return expr
    numbers = {g: i for i, g in enumerate(reversed(list(grouper.groups.values())))}

    def replace(g: _Group, pre: Expr, post: Expr) -> Expr | None:
        if check is not None and not check(pre):
            return None
        f = g.function(numbers[g], type_of).with_attrs(**{PARTITIONED_FROM_PATTERN: g.name, **extra})
        return Call(f, [m_memo.get(a, a) for a in g.inputs])

    rep = _Replacer(grouper.groups, replace)
    m_memo = rep.memo
    return rep.visit(expr)


_MAX_APPLICATIONS = 100  # as Relay: 100 callback applications without reaching a fixpoint is a loop


def rewrite(callbacks: DFPatternCallback | Iterable[DFPatternCallback], expr: Expr, mod: Any = None) -> Expr:
    """Apply ``callbacks`` until the expression stops changing (Relay's ``rewrite``).

    Each round applies every callback in turn to the whole expression: its pattern's matches are
    grouped as :func:`partition` groups them (from the root down, without overlaps), then the
    expression is rebuilt bottom-up, each group's root replaced by the callback's result.  More
    than 100 callback applications without reaching a fixpoint raise :class:`~pyir.RewriteLoopError`.
    """
    cbs: Sequence[DFPatternCallback] = ([callbacks] if isinstance(callbacks, DFPatternCallback)
                                        else list(callbacks))
    for cb in cbs:
        if not isinstance(cb, DFPatternCallback) or not isinstance(cb.pattern, Pattern):
            raise PatternError(f"rewrite needs DFPatternCallback objects with a pattern, got {cb!r:.80}")
    if not isinstance(expr, Expr):
        raise PatternError(f"rewrite needs an expression, got {expr!r:.80}")
    with gc_paused():  # bulk work over the whole graph (see pyir.ir.node.gc_paused)
        return _rewrite(cbs, expr, mod)


def _rewrite(cbs: Sequence[DFPatternCallback], expr: Expr, mod: Any) -> Expr:
    type_of = _type_oracle(mod)
    done: set[int] = set()
    lineage = RoundLineage()
    post = expr
    count = 0
    while True:
        last = post
        for i, cb in enumerate(cbs):
            if i in done:
                continue
            before = post
            post = lineage.run(lambda e, cb=cb: _apply(cb, e, type_of), post)  # type: ignore[misc]
            count += 1
            if cb.rewrite_once and post is not before:
                done.add(i)
        if post is last or alpha_equal(post, last):
            break
        if count >= _MAX_APPLICATIONS:
            raise RewriteLoopError(f"pattern callbacks did not reach a fixpoint after {count} applications: "
                                   + ", ".join(repr(c) for c in cbs))
    lineage.finish()
    return post


def _apply(cb: DFPatternCallback, expr: Expr, type_of: Callable[[Expr], Type | None]) -> Expr:
    assert cb.pattern is not None
    grouper = _Grouper(cb.pattern, expr, type_of)
    if not grouper.groups:
        return expr

    def replace(g: _Group, pre: Expr, post: Expr) -> Expr | None:
        node_map = {p: [memo.get(n, n) for n in ns] for p, ns in g.match.node_map.items()}
        return cb.callback(pre, post, node_map)

    rep = _Replacer(grouper.groups, replace)
    memo = rep.memo
    return rep.visit(expr)


_p._LATE.update(partition=partition, rewrite=rewrite)
