"""The rewrite-rule driver for :mod:`pyir.pattern`: rules, ``rewrite_rules`` and ``PatternRewrite``.

A rule is a pattern and a callback ``callback(match) -> Expr | None``.
:func:`rewrite_rules` applies rules bottom-up (through :class:`~pyir.ExprMutator`,
so lineage is recorded automatically inside passes) until none fires, skipping
every subgraph whose operator summary cannot contain a match.

>>> import pyir
>>> from pyir.pattern import is_op, wildcard
>>> x = wildcard()
>>> a = pyir.var("a", shape=(2,))
>>> rules = [(is_op("negative")(is_op("negative")(x)), lambda m: m[x])]
>>> rewrite_rules(pyir.op.exp(pyir.op.negative(pyir.op.negative(a))), rules) is pyir.op.exp(a)
True
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import ImmutableError, PyIRError, RewriteLoopError, WellFormedError
from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from .functor import ExprMutator
from .lineage import current_recorder, derive, recording
from .node import F_GLOBAL, F_LET, F_UNTYPED, Node, _set_ty, cached_type
from .pattern import Match, Pattern, PatternError, _key, _simplify_terms, _State
from .transform.base import FunctionPass
from .traverse import post_order
from .typecheck import check_call, infer_type
from .types import Type

__all__ = ["TypeOracle", "Rule", "rewrite_rules", "rewrite_function", "PatternRewrite"]


# -- types of rewritten expressions ------------------------------------------------------------


class TypeOracle:
    """Types of expressions of a function being rewritten, including new ones.

    Variables without annotation get the type of the value their ``let`` binds in
    ``func`` (rewrites keep types, so this stays valid); global calls are typed
    through ``mod``.  Returns None for expressions it cannot type.
    """

    def __init__(self, mod: Any = None, func: Function | None = None) -> None:
        self.mod = mod
        self.func = func
        self.cache: dict[Node, Type] = {}
        self.env: dict[Var, Type] | None = None

    def _var_type(self, v: Var) -> Type | None:
        if v.type_annotation is not None:
            return v.type_annotation
        if self.env is None:
            self.env = self._harvest()
        return self.env.get(v)

    def _harvest(self) -> dict[Var, Type]:
        env: dict[Var, Type] = {}
        if self.func is None:
            return env
        cache: dict[Node, Type] = self.mod._type_cache() if self.mod is not None else {}
        try:
            infer_type(self.func, self.mod, cache=cache)
        except PyIRError:
            return env
        for n in post_order(self.func, stop=lambda n: not n._mask & F_LET):
            if type(n) is Let:
                t = cached_type(n.value) or cache.get(n.value)
                if t is not None:
                    env[n.var] = t
        return env

    def __call__(self, e: Expr) -> Type | None:
        t = cached_type(e)
        if t is not None:
            return t
        k = type(e)
        if k is Var:
            return self._var_type(e)  # type: ignore[arg-type]
        if k is Op:
            return None
        try:
            if not e._mask & (F_UNTYPED | F_GLOBAL):
                if k is Call:
                    return _structural_call_type(e)  # type: ignore[arg-type]
                return infer_type(e)
            t = self.cache.get(e)
            if t is not None:
                return t
            return self._infer(e)
        except PyIRError:
            return None

    def _infer(self, e: Expr) -> Type:
        from .typecheck import _compute

        cache = self.cache
        mod = self.mod

        def known(n: Node) -> Any:
            return cached_type(n) or cache.get(n)

        def tyof(n: Node) -> Type:
            k = type(n)
            if k is Var:
                t = self._var_type(n)  # type: ignore[arg-type]
                if t is None:
                    raise WellFormedError(f"no type for %{n.name_hint}")  # type: ignore[attr-defined]
                return t
            if k is GlobalVar:
                if mod is None:
                    raise WellFormedError("global calls need a module to be typed")
                return mod.global_type(n)
            t = known(n)
            if t is None:
                raise WellFormedError("untyped child")  # pragma: no cover
            return t

        leaf = (Var, GlobalVar, Op)
        for n in post_order(e, stop=lambda n: type(n) in leaf or known(n) is not None):
            if type(n) in leaf or known(n) is not None:
                continue
            cache[n] = _compute(n, tyof)
        return tyof(e)


def _structural_call_type(e: Call) -> Type:
    """Type of a call without context (no global calls, no untyped variables), caching
    it on the nodes; a cheap explicit-stack walk down to already typed nodes."""
    stack: list[Expr] = [e]
    while stack:
        n = stack[-1]
        if cached_type(n) is not None:
            stack.pop()
            continue
        if type(n) is not Call or type(n.op) is not Op:
            infer_type(n)
            stack.pop()
            continue
        ats: list[Type] = []
        for a in n.args:
            ta = cached_type(a)
            if ta is None and type(a) is Var:
                ta = a.type_annotation
            if ta is None:
                stack.append(a)
            elif not stack or stack[-1] is n:
                ats.append(ta)
        if stack[-1] is n:
            _set_ty(n, check_call(n, tuple(ats)))
            stack.pop()
    return cached_type(e)


# -- rules and the driver --------------------------------------------------------------------------


class Rule:
    """A rewrite rule: ``callback(match)`` returns the replacement or None (no change).

    The rule remembers where it was defined (``where``, ``file:line``) for error messages.
    """

    __slots__ = ("pattern", "callback", "name", "where")
    pattern: Pattern
    callback: Callable[[Match], Expr | None]
    name: str
    where: str

    def __init__(self, pattern: Pattern, callback: Callable[[Match], Expr | None], name: str | None = None,
                 where: str | None = None) -> None:
        if not isinstance(pattern, Pattern):
            raise PatternError(f"a rule needs a pattern, got {pattern!r}")
        if not callable(callback):
            raise PatternError(f"a rule needs a callable callback, got {callback!r}")
        if where is None:
            f = sys._getframe(1)
            where = f"{f.f_code.co_filename}:{f.f_lineno}"
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "callback", callback)
        object.__setattr__(self, "name", name or getattr(callback, "__name__", "rule"))
        object.__setattr__(self, "where", where)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"rules are immutable (cannot set {name!r})")

    def __repr__(self) -> str:
        return f"Rule({self.name} at {self.where})"


def _as_rule(r: Any) -> Rule:
    if isinstance(r, Rule):
        return r
    if isinstance(r, tuple) and len(r) == 2:
        p, cb = r
        code = getattr(cb, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "<unknown>"
        return Rule(p, cb, where=where)
    raise PatternError(f"rules are Rule objects or (pattern, callback) pairs, got {r!r}")


class _RuleSet:
    """Rules indexed by the kind (or operator) of node their root can match."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self.roots = [r.pattern._roots() for r in self.rules]
        self.by_key: dict[Any, tuple[Rule, ...]] = {}
        terms: list[int] = []
        for r in self.rules:
            terms.extend(r.pattern._terms)
        self.terms = _simplify_terms(terms) if terms else ()
        self.always = 0 in self.terms
        self._seen: dict[int, bool] = {}  # mask -> may_match_in (masks repeat a lot)

    def candidates(self, key: Any) -> tuple[Rule, ...]:
        c = self.by_key.get(key)
        if c is None:
            c = tuple(r for r, ks in zip(self.rules, self.roots) if ks is None or key in ks)
            self.by_key[key] = c
        return c

    def may_match_in(self, mask: int) -> bool:
        r = self._seen.get(mask)
        if r is None:
            r = False
            for t in self.terms:
                if mask & t == t:
                    r = True
                    break
            if len(self._seen) < 4096:
                self._seen[mask] = r
        return r


class _RuleMutator(ExprMutator):
    def __init__(self, rs: _RuleSet, type_of: Callable[[Expr], Type | None], max_steps: int) -> None:
        super().__init__()
        self.rs = rs
        self.type_of = type_of
        self.max_steps = max_steps
        self.visited = 0
        self.dirty = False
        self.outputs: set[Node] = set()
        self.fired: dict[Rule, int] = {}

    def visit_any(self, node: Expr) -> Expr:
        self.visited += 1
        rs = self.rs
        cur = node
        steps = 0
        local: dict[Rule, int] = {}
        while True:
            for rule in rs.candidates(_key(cur)):
                m = rule.pattern._match_root(cur, _State(self.type_of))
                if m is None:
                    continue
                r = rule.callback(m)
                if r is None or r is cur:
                    continue
                if not isinstance(r, Expr):
                    raise WellFormedError(f"rule {rule.name} ({rule.where}) returned {r!r}, "
                                          "not an expression")
                steps += 1
                local[rule] = local.get(rule, 0) + 1
                self.fired[rule] = self.fired.get(rule, 0) + 1
                if steps > self.max_steps:
                    raise RewriteLoopError(_loop_message(
                        f"rewriting one node took more than {self.max_steps} steps", local))
                if not self.dirty:
                    for c in r.children():
                        if c not in self.outputs and rs.may_match_in(c._mask):
                            self.dirty = True
                            break
                cur = r
                break
            else:
                break
        self.outputs.add(cur)
        return cur


_RuleMutator._hooks = dict.fromkeys((Var, GlobalVar, Constant, Op, Call, Tuple, TupleGetItem, Function, Let,
                                     If), _RuleMutator.visit_any)


class _SkippingRuleMutator(_RuleMutator):
    def should_visit(self, node: Node) -> bool:
        return self.rs.may_match_in(node._mask)


_SkippingRuleMutator._hooks = _RuleMutator._hooks


def _loop_message(what: str, fired: Mapping[Rule, int]) -> str:
    top = sorted(fired.items(), key=lambda kv: -kv[1])
    names = ", ".join(f"{r.name} ({r.where}) fired {n}x" for r, n in top)
    return f"rewrite rules did not reach a fixpoint: {what}; rules that kept firing: {names}"


def rewrite_rules(expr: Expr, rules: Iterable[Rule | tuple[Pattern, Callable[[Match], Expr | None]]], *,
                  max_steps: int = 1000, type_of: Callable[[Expr], Type | None] | None = None,
                  mod: Any = None, stats: dict[str, Any] | None = None) -> Expr:
    """Apply ``rules`` bottom-up until none fires; the rewritten ``expr``.

    Each node is rewritten (its children first) by the first rule whose pattern
    matches and whose callback returns a new expression, repeatedly, until no rule
    fires on it; whole-expression rounds repeat while a callback built new nodes
    that may match.  Subgraphs whose operator summary cannot contain a match are
    not walked.  More than ``max_steps`` rewrites of one node, or ``max_steps``
    rounds, raise :class:`~pyir.RewriteLoopError` naming the rules that kept firing.

    ``stats`` (a dict) receives ``visited`` (nodes walked), ``rounds`` and ``fired``
    (rule name -> count).
    """
    rs = _RuleSet([_as_rule(r) for r in rules])
    if type_of is None:
        type_of = TypeOracle(mod)
    outer = current_recorder()
    cur = expr
    visited = rounds = 0
    fired: dict[Rule, int] = {}
    composed: dict[bytes, tuple[bytes, ...]] | None = None  # intermediate id -> original ids
    removed: list[bytes] = []
    last: dict[Rule, int] = {}
    while True:
        if rounds >= max_steps:
            raise RewriteLoopError(_loop_message(f"still changing after {max_steps} rounds", last))
        rounds += 1
        m = (_RuleMutator if rs.always else _SkippingRuleMutator)(rs, type_of, max_steps)
        if outer is None:
            new = m.visit(cur)
        else:
            with recording() as rec:
                new = m.visit(cur)
            removed.extend(rec.removed)
            if composed is None and (new is cur or not m.dirty):
                outer.edges.extend(rec.edges)  # a single round: nothing to compose
            else:
                if composed is None:
                    composed = {}
                _compose(composed, rec.edges)
        visited += m.visited
        last = m.fired
        for r, n in m.fired.items():
            fired[r] = fired.get(r, 0) + n
        if new is cur or not m.dirty:
            cur = new
            break
        cur = new
    if outer is not None:
        if composed:
            outer.edges.extend(composed.items())
        outer.removed.extend(removed)
    if stats is not None:
        stats["visited"] = visited
        stats["rounds"] = rounds
        stats["fired"] = {r.name: n for r, n in fired.items()}
    return cur


def _compose(back: dict[bytes, tuple[bytes, ...]], edges: Iterable[tuple[bytes, tuple[bytes, ...]]]) -> None:
    """Fold one round's edges into ``back`` so that every new id points to original ids."""
    for new, olds in edges:
        acc: list[bytes] = []
        for o in olds:
            src = back.get(o)
            for s in (src if src is not None else (o,)):
                if s not in acc:
                    acc.append(s)
        prev = back.get(new)
        if prev is not None:
            acc.extend(s for s in prev if s not in acc)
        back[new] = tuple(acc)


# -- the pass ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PatternRewrite(FunctionPass):
    """Apply rewrite rules (see :func:`rewrite_rules`) to the body of every function."""

    rules: tuple[Rule, ...] = ()
    max_steps: int = 1000

    def __init__(self, rules: Iterable[Any] = (), max_steps: int = 1000) -> None:
        object.__setattr__(self, "rules", tuple(_as_rule(r) for r in rules))
        object.__setattr__(self, "max_steps", max_steps)

    def options(self) -> str:
        return f"rules=[{', '.join(r.name for r in self.rules)}], max_steps={self.max_steps}"

    def transform_function(self, func: Function, mod: Any, name: str) -> Function:
        return rewrite_function(func, self.rules, mod, max_steps=self.max_steps)


def rewrite_function(func: Function, rules: Sequence[Rule], mod: Any = None, *,
                     max_steps: int = 1000) -> Function:
    """``func`` with ``rules`` applied to its body (types of let variables come from ``func``)."""
    body = rewrite_rules(func.body, rules, max_steps=max_steps, type_of=TypeOracle(mod, func), mod=mod)
    if body is func.body:
        return func
    return derive(func.with_body(body), func)  # type: ignore[return-value]
