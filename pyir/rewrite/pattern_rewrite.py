"""The rewrite-rule driver for :mod:`pyir.rewrite.pattern`: rules, ``rewrite_rules`` and ``rewrite_function``.

A rule is a pattern and a callback ``callback(match) -> Expr | None``.
:func:`rewrite_rules` applies rules bottom-up (through :class:`~pyir.ExprMutator`,
so lineage is recorded automatically inside passes) until none fires, skipping
every subgraph whose operator summary cannot contain a match.  Types in
patterns and callbacks (``match.type_of``) come from the module's
:class:`~pyir.analysis.typecheck.TypeContext`.  The pass that applies rules to every
function is :class:`pyir.transform.PatternRewrite`.

>>> import pyir
>>> from pyir.rewrite.pattern import is_op, wildcard
>>> x = wildcard()
>>> a = pyir.var("a", shape=(2,))
>>> rules = [(is_op("negative")(is_op("negative")(x)), lambda m: m[x])]
>>> rewrite_rules(pyir.op.exp(pyir.op.negative(pyir.op.negative(a))), rules) is pyir.op.exp(a)
True
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..analysis.typecheck import TypeContext
from ..errors import ImmutableError, RewriteLoopError, WellFormedError
from ..ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem
from ..ir.lineage import derive, rule_log
from ..ir.node import Node
from ..ir.types import Type
from .functor import _KINDS, Derivations, ExprMutator, RoundLineage
from .partition import DFPatternCallback, partition, rewrite  # also fills pyir.rewrite.pattern's late names
from .pattern import Match, Pattern, PatternError, WildcardPattern, _key, _simplify_terms, _State, _Wrapper

__all__ = ["Rule", "rewrite_rules", "rewrite_function", "as_rule", "TypeOracle", "DFPatternCallback",
           "rewrite", "partition"]


def TypeOracle(mod: Any = None, func: Function | None = None) -> TypeContext:
    """The typing context of ``mod`` that also knows the let variables of ``func``
    (kept for compatibility: use :class:`~pyir.analysis.typecheck.TypeContext`)."""
    ctx = TypeContext.of(mod)
    if func is not None:
        ctx.learn(func)
    return ctx


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


def as_rule(r: Any) -> Rule:
    """``r`` as a :class:`Rule` (rules are Rule objects or ``(pattern, callback)`` pairs)."""
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


# node kinds a match can consume (variables, functions and global names are never merged away)
_CONSUMABLE = frozenset({Call, Constant, Tuple, TupleGetItem})


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
        self.rule_fired = rule_log()  # the pass's record names the rule that made each result

    def visit_any(self, node: Expr) -> Expr:
        self.visited += 1
        rs = self.rs
        cur = node
        steps = 0
        local: dict[Rule, int] = {}
        consumed: list[Node] = []
        made_by: Rule | None = None
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
                self._consumed(m, cur, consumed)
                made_by = rule
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
        if consumed and cur is not node:
            d = Derivations()
            for n in consumed:
                d.derive(cur, n)
        if made_by is not None and cur is not node and self.rule_fired is not None:
            self.rule_fired(made_by.name, cur)
        self.outputs.add(cur)
        return cur

    def _consumed(self, m: Match, root: Expr, out: list[Node]) -> None:
        """The nodes a firing rule's match consumed besides its root: what its non-wildcard
        patterns matched (an inner call, a constant operand) among the nodes of the graph being
        rewritten. The result derives from them too, so ``find`` follows a merged
        ``reshape(reshape(x))`` from the inner reshape and ``x + 0`` from the constant."""
        memo, outputs = self.memo, self.outputs
        for p, n in m._b.items():
            if n is root or type(n) not in _CONSUMABLE:
                continue
            while isinstance(p, _Wrapper):
                p = p.inner
            if type(p) is WildcardPattern:
                continue
            if n in outputs or n in memo:
                out.append(n)


_RuleMutator._hooks = dict.fromkeys(_KINDS, _RuleMutator.visit_any)  # every expression kind


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
    rs = _RuleSet([as_rule(r) for r in rules])
    if type_of is None:
        type_of = TypeContext.of(mod)
    lineage = RoundLineage()  # every round's edges point at the ids before the first round
    cur = expr
    visited = 0
    fired: dict[Rule, int] = {}
    last: dict[Rule, int] = {}
    while True:
        if lineage.rounds >= max_steps:
            raise RewriteLoopError(_loop_message(f"still changing after {max_steps} rounds", last))
        m = (_RuleMutator if rs.always else _SkippingRuleMutator)(rs, type_of, max_steps)
        new = lineage.run(m.visit, cur)
        visited += m.visited
        last = m.fired
        for r, n in m.fired.items():
            fired[r] = fired.get(r, 0) + n
        done = new is cur or not m.dirty
        cur = new
        if done:
            break
    lineage.finish()
    if stats is not None:
        stats["visited"] = visited
        stats["rounds"] = lineage.rounds
        stats["fired"] = {r.name: n for r, n in fired.items()}
    return cur


def rewrite_function(func: Function, rules: Sequence[Rule], mod: Any = None, *,
                     max_steps: int = 1000) -> Function:
    """``func`` with ``rules`` applied to its body (types from the module's typing context, which
    learns ``func``'s let variables)."""
    ctx = TypeContext.of(mod)
    ctx.learn(func)
    body = rewrite_rules(func.body, rules, max_steps=max_steps, type_of=ctx, mod=mod)
    if body is func.body:
        return func
    return derive(func.with_body(body), func)  # type: ignore[return-value]
