"""A dataflow pattern language (in the style of Relay's) and a rewrite-rule driver.

Patterns are small immutable objects matched against one expression node::

    x = wildcard()
    c = is_constant()
    pat = is_op("add")(x, c)
    m = pat.match(expr)          # a Match, or None
    m[x], m[c]                   # the captured nodes

Every pattern object is also a capture: after a match, ``m[p]`` is the node ``p``
matched.  A pattern object used twice must match the very same node both times
(``is_op("add")(x, x)`` matches ``add(a, a)``, not ``add(a, b)``).  Alternatives
``p1 | p2`` backtrack: a later sub-pattern failing makes the matcher try the
other alternative.  Matching one pattern against one node costs time bounded by
the size of the pattern; it recurses over the pattern, never over the graph.

Relay's vocabulary is here too: ``p + q`` (and ``-``, ``*``, ``/``) builds call patterns;
calls of :data:`COMMUTATIVE` operators match with their two arguments swapped, and a
divide/multiply pattern matches its re-associated form (``a * (b / c)`` for ``(a * b) / c``);
``p(None)`` and ``is_tuple(None)`` match any arguments and any tuple; ``is_var(name)``,
``is_if``, ``is_let``, ``is_function`` (:class:`FunctionPattern`), ``p.optional(f)``,
:func:`dominates`, ``has_attr`` on calls, functions and operators (:data:`OP_ATTRS`),
``has_type``/``has_dtype``/``has_shape``; :class:`DFPatternCallback`, :func:`rewrite` and
:func:`partition` (implemented in :mod:`pyir.rewrite.partition`).  Hash-consing makes
``is_expr(e)`` an identity test that is also Relay's structural one.

Each pattern has ``op_mask``: the summary bits (see ``Node._mask``) of the
operators every match needs, so a driver can skip subgraphs lacking them.
:func:`rewrite_rules` does so: rewriting the one ``nn.softmax`` of a large
network walks only the few nodes whose summary contains ``nn.softmax``.

>>> import pyir
>>> a = pyir.var("a", shape=(2,))
>>> x = wildcard()
>>> m = is_op("multiply")(x, is_constant()).match(pyir.op.multiply(a, pyir.const(1.0)))
>>> m[x] is a
True
>>> is_op("add")(x, x).match(pyir.op.add(a, pyir.var("b", shape=(2,)))) is None
True
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from ..errors import ImmutableError, PatternError, PyIRError
from ..ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.node import (
    F_CONST,
    F_FUNC,
    F_GETITEM,
    F_IF,
    F_LET,
    F_TUPLE,
    F_VAR,
    OP_BIT0,
    Node,
    normalize_attr_value,
)
from ..ir.types import TensorType, Type, normalize_dtype

# ``rewrite`` and ``partition`` are implemented in pyir.rewrite.partition (which imports this module).
__all__ = ["Pattern", "PatternError", "Match", "wildcard", "is_op", "is_expr", "is_constant", "is_var",
           "is_tuple", "is_tuple_get_item", "is_if", "is_let", "is_function", "dominates", "has_attr",
           "has_type", "has_dtype", "has_shape", "COMMUTATIVE", "OP_ATTRS",
           "WildcardPattern", "ExprPattern", "OpPattern", "ConstantPattern", "VarPattern", "CallPattern",
           "TuplePattern", "TupleGetItemPattern", "AltPattern", "AttrPattern", "TypePattern",
           "FunctionPattern", "IfPattern", "LetPattern", "DominatorPattern",
           "DFPatternCallback", "rewrite", "partition"]

#: Operators whose two arguments a call pattern also matches swapped (``is_op("add")(x, c)`` matches
#: ``add(c, y)``), as Relay's matcher does for add and multiply.
COMMUTATIVE: frozenset[str] = frozenset({
    "add", "multiply", "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "not_equal"})

#: The operator attributes ``has_attr`` can query on an operator (``is_op("nn.conv2d").has_attr(
#: {"TOpPattern": 4})`` or ``wildcard().has_attr({"TOpPattern": 0})(wildcard())``): name -> the
#: attribute of an :class:`~pyir.ir.opdef.OpDef`.  ``TOpPattern`` is the fusion pattern kind as an
#: int (TVM's numbering: 0 elementwise, 1 broadcast, 2 injective, 3 reduction, 4 out-elementwise-
#: fusable, 7 tuple, 8 opaque); ``num_inputs`` the arity (None: variadic); ``name`` the name.
OP_ATTRS: Mapping[str, Callable[[Any], Any]] = types.MappingProxyType({
    "TOpPattern": lambda d: int(d.pattern),
    "num_inputs": lambda d: d.num_inputs,
    "name": lambda d: d.name,
})

_LATE: dict[str, Any] = {}  # filled by pyir.rewrite.partition when it is imported (import pyir does)


def _late(name: str) -> Any:
    fn = _LATE.get(name)
    if fn is None:
        raise PatternError(f"{name} lives in pyir.rewrite.partition: import it (or pyir) first")
    return fn


def partition(pattern: Pattern, expr: Expr, attrs: Mapping[str, Any] | None = None,
              check: Callable[[Expr], bool] | None = None, *, mod: Any = None) -> Expr:
    """Wrap every match of ``pattern`` in ``expr`` into a function: see
    :func:`pyir.rewrite.partition.partition`."""
    return _late("partition")(pattern, expr, attrs, check, mod=mod)


def rewrite(callbacks: Any, expr: Expr, mod: Any = None) -> Expr:
    """Apply :class:`DFPatternCallback` objects until ``expr`` stops changing: see
    :func:`pyir.rewrite.partition.rewrite`."""
    return _late("rewrite")(callbacks, expr, mod)


_MAX_TERMS = 16
_OP_BITS = ~((1 << OP_BIT0) - 1)


class _UnboundError(PatternError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


# -- summary-bit requirements ---------------------------------------------------------------
# A pattern's requirement is a small disjunction of bit sets ("terms"): it can match
# inside a subgraph only if the subgraph's mask contains every bit of some term.


def _simplify_terms(terms: Iterable[int]) -> tuple[int, ...]:
    ts = sorted(set(terms), key=lambda t: bin(t).count("1"))
    out: list[int] = []
    for t in ts:
        if not any(o & t == o for o in out):  # a smaller term already covers t
            out.append(t)
    if len(out) > _MAX_TERMS:  # keep it small: require only the bits common to all
        common = out[0]
        for t in out[1:]:
            common &= t
        out = [common]
    return tuple(out)


def _and_terms(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return _simplify_terms(x | y for x in a for y in b)


# -- the matcher state ------------------------------------------------------------------------


def _default_type_of(e: Expr) -> Type | None:
    try:
        return e.checked_type
    except PyIRError:
        return None


class _State:
    """Bindings of one match attempt (``b``: pattern -> node, undone along ``trail`` when
    backtracking), extra matches (``extra``: pattern -> more nodes, from dominator paths), the
    type oracle, and the graph matches are made in (``universe``: a :class:`Universe`, built
    on first use by dominator patterns)."""

    __slots__ = ("b", "trail", "type_of", "universe", "extra")

    def __init__(self, type_of: Callable[[Expr], Type | None], universe: Universe | None = None) -> None:
        self.b: dict[Pattern, Expr] = {}
        self.trail: list[Any] = []
        self.type_of = type_of
        self.universe = universe
        self.extra: dict[Pattern, list[Expr]] = {}

    def undo(self, mark: int) -> None:
        trail = self.trail
        b = self.b
        while len(trail) > mark:
            t = trail.pop()
            if type(t) is tuple:  # an extra match
                self.extra[t[0]].pop()
            else:
                del b[t]

    def add_extra(self, p: Pattern, e: Expr) -> None:
        self.extra.setdefault(p, []).append(e)
        self.trail.append((p,))


_NO_DOM = frozenset({Var, Constant, Op})
_DONE: Any = object()  # stack marker: the node below it has all its inputs emitted


class Universe:
    """The whole expression matches are made in, with the graph facts dominator patterns and
    partitioning need: each node's users and immediate post-dominator (a node ``d``
    post-dominates ``n`` when every path from ``n`` to the root goes through ``d``), computed on
    first use without recursion.  Edges are the data edges: a call's arguments (and its callee
    when that is not an operator), a tuple's fields, a function's body, ..."""

    __slots__ = ("root", "_order", "_users", "_idom", "_depth")

    def __init__(self, root: Expr) -> None:
        self.root = root
        self._order: list[Expr] | None = None
        self._users: dict[Expr, list[Expr]] | None = None
        self._idom: dict[Expr, Expr | None] | None = None
        self._depth: dict[Expr, int] | None = None

    @staticmethod
    def inputs(n: Expr) -> tuple[Expr, ...]:
        """The data inputs of ``n``."""
        if type(n) is Call:
            return n.args if type(n.op) is Op else (n.op, *n.args)
        if type(n) is Var or type(n) is Op or type(n) is Constant:
            return ()
        return tuple(c for c in n.children() if isinstance(c, Expr) and type(c) is not Op)

    def order(self) -> list[Expr]:
        """Every node below the root, children before parents (the root last)."""
        if self._order is None:
            order: list[Expr] = []
            emit = order.append
            seen: set[Expr] = set()
            add = seen.add
            stack: list[Any] = [self.root]
            push, pop = stack.append, stack.pop
            inputs = Universe.inputs
            done = _DONE
            while stack:
                n = pop()
                if n is done:
                    emit(pop())
                    continue
                if n in seen:
                    continue
                add(n)
                ins = (n.args if type(n.op) is Op else (n.op, *n.args)) if type(n) is Call else inputs(n)
                if not ins:
                    emit(n)
                    continue
                push(n)
                push(done)
                for c in reversed(ins):
                    if c not in seen:
                        push(c)
            users: dict[Expr, list[Expr]] = {n: [] for n in order}
            for n in order:
                ins = (n.args if type(n.op) is Op else (n.op, *n.args)) if type(n) is Call else inputs(n)
                for c in ins:
                    users[c].append(n)
            self._order = order
            self._users = users
        return self._order

    def users(self, n: Expr) -> list[Expr]:
        """The nodes that use ``n`` (one entry per use)."""
        self.order()
        assert self._users is not None
        return self._users.get(n, [])

    def _tree(self) -> None:
        order = self.order()
        users = self._users
        assert users is not None
        idom: dict[Expr, Expr | None] = {}
        depth: dict[Expr, int] = {}
        for n in reversed(order):  # every user before the nodes it uses
            us = users[n]
            if not us or type(n) in _NO_DOM:  # variables and constants: never on a path, often shared
                idom[n] = None
                depth[n] = 0
                continue
            d: Expr | None = us[0]
            for u in us[1:]:
                a: Expr | None = d
                b: Expr | None = u
                while a is not b:
                    if a is None or b is None:
                        break
                    if depth[a] >= depth[b]:
                        a = idom[a]
                    else:
                        b = idom[b]
                d = a if a is b else None
                if d is None:
                    break
            idom[n] = d
            depth[n] = 0 if d is None else depth[d] + 1
        self._idom = idom
        self._depth = depth

    def post_dominates(self, d: Expr, n: Expr) -> bool:
        """Whether every path from ``n`` to the root goes through ``d`` (``n`` itself counts; false
        for variables and constants, which the tree leaves out)."""
        if self._idom is None:
            self._tree()
        idom, depth = self._idom, self._depth
        assert idom is not None and depth is not None
        if d not in depth or n not in depth:
            return False
        x: Expr | None = n
        dd = depth[d]
        while x is not None and depth[x] > dd:
            x = idom[x]
        return x is d


# -- patterns -------------------------------------------------------------------------------------


def _key(n: Node) -> Any:
    """Dispatch key of a node: its operator for operator calls, else its class."""
    if type(n) is Call and type(n.op) is Op:
        return n.op
    return type(n)


def _pat(x: Any) -> Pattern:
    if isinstance(x, Pattern):
        return x
    if isinstance(x, Expr):
        return ExprPattern(x)
    raise PatternError(f"expected a pattern or an expression, got {x!r}")


def _first(p: Pattern, e: Expr, st: _State) -> bool:
    """The first way ``p`` matches ``e`` (its bindings stay in ``st``; on failure the caller undoes)."""
    if p._det:
        return p._m(e, st)
    for _ in p._gen(e, st):
        return True  # the abandoned generator leaves its bindings in place
    return False


class Pattern:
    """Base of all patterns.  Immutable; each pattern object is also a capture."""

    __slots__ = ("_terms", "_det", "_comm", "_subs", "__weakref__")
    _terms: tuple[int, ...]
    _det: bool  # a single way to match: no alternative inside, no commutative choice that matters
    _comm: bool  # a commutative call pattern inside (its two orders are two ways to match)
    _subs: frozenset[Pattern]  # every pattern object inside, this one included

    def _init(self, terms: tuple[int, ...], det: bool, kids: Sequence[Pattern] = (), comm: bool = False,
              **fields: Any) -> None:
        subs: set[Pattern] = {self}
        n = 1
        for k in kids:
            subs |= k._subs
            n += len(k._subs)
            comm = comm or k._comm
        # A commutative choice matters only when a capture is shared between the parts (the order
        # chosen below decides what a sibling may bind): then every way must be tried.
        if comm and n != len(subs):
            det = False
        object.__setattr__(self, "_terms", terms)
        object.__setattr__(self, "_det", det)
        object.__setattr__(self, "_comm", comm)
        object.__setattr__(self, "_subs", frozenset(subs))
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"patterns are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"patterns are immutable (cannot delete {name!r})")

    def __copy__(self) -> Pattern:
        return self

    def __deepcopy__(self, memo: Any) -> Pattern:
        return self

    # -- combinators ------------------------------------------------------------------------
    def __call__(self, *args: Any) -> CallPattern:
        """A call pattern with this pattern as the callee: ``is_op("nn.relu")(wildcard())``;
        ``p(None)`` matches a call with any arguments."""
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        return CallPattern(self, [_pat(a) for a in args])

    def __or__(self, other: Any) -> AltPattern:
        return AltPattern(self, _pat(other))

    def __ror__(self, other: Any) -> AltPattern:
        return AltPattern(_pat(other), self)

    # ``p + q`` is ``is_op("add")(p, q)``, and so on, as for expressions
    def __add__(self, other: Any) -> CallPattern:
        return OpPattern("add")(self, other)

    def __radd__(self, other: Any) -> CallPattern:
        return OpPattern("add")(other, self)

    def __sub__(self, other: Any) -> CallPattern:
        return OpPattern("subtract")(self, other)

    def __rsub__(self, other: Any) -> CallPattern:
        return OpPattern("subtract")(other, self)

    def __mul__(self, other: Any) -> CallPattern:
        return OpPattern("multiply")(self, other)

    def __rmul__(self, other: Any) -> CallPattern:
        return OpPattern("multiply")(other, self)

    def __truediv__(self, other: Any) -> CallPattern:
        return OpPattern("divide")(self, other)

    def __rtruediv__(self, other: Any) -> CallPattern:
        return OpPattern("divide")(other, self)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        """This pattern, and the matched call's (or function's) attributes include ``attrs``;
        on an operator (``is_op("add").has_attr({"TOpPattern": 1})``), the operator's attributes
        (:data:`OP_ATTRS`)."""
        return AttrPattern(self, attrs)

    def has_dtype(self, dtype: Any) -> TypePattern:
        """This pattern, and the matched expression is a tensor of ``dtype``."""
        return TypePattern(self, dtype=normalize_dtype(dtype))

    def has_shape(self, shape: Sequence[Any]) -> TypePattern:
        """This pattern, and the matched expression is a tensor of ``shape``."""
        try:
            dims = TensorType(tuple(shape)).shape
        except (PyIRError, TypeError) as e:
            raise PatternError(f"has_shape needs a shape, got {shape!r}: {e}") from None
        return TypePattern(self, shape=dims)

    def has_type(self, ty: Type) -> TypePattern:
        """This pattern, and the matched expression has type ``ty``."""
        if not isinstance(ty, Type):
            raise PatternError(f"has_type needs a Type, got {ty!r}")
        return TypePattern(self, ty=ty)

    def optional(self, option: Any) -> AltPattern:
        """This pattern, or ``option`` applied to it: ``conv.optional(lambda x: is_op("nn.bias_add")(x,
        wildcard()))`` matches a conv with or without a bias_add after it; a pattern as ``option``
        is used as a callee (``p.optional(is_op("nn.relu"))`` is ``p | is_op("nn.relu")(p)``)."""
        if isinstance(option, Pattern):
            return AltPattern(self, option(self))
        if callable(option):
            return AltPattern(self, _pat(option(self)))
        raise PatternError(f"optional needs a pattern or a function building one, got {option!r}")

    def dominates(self, parent: Any, path: Any = None) -> DominatorPattern:
        """This pattern (the child) dominating ``parent`` through ``path``: see :func:`dominates`."""
        return DominatorPattern(parent, path if path is not None else WildcardPattern(), self)

    def partition(self, expr: Expr, attrs: Mapping[str, Any] | None = None,
                  check: Callable[[Expr], bool] | None = None) -> Expr:
        """Wrap every match in ``expr`` into a function (see :func:`pyir.rewrite.partition.partition`)."""
        return partition(self, expr, attrs, check)

    # -- requirements ---------------------------------------------------------------------------
    @property
    def op_mask(self) -> int:
        """OR of the summary bits of the operators every match requires."""
        common = self._terms[0]
        for t in self._terms[1:]:
            common &= t
        return common & _OP_BITS

    def may_match_in(self, mask: int) -> bool:
        """False if no node of a subgraph with summary ``mask`` can match."""
        return any(mask & t == t for t in self._terms)

    def _roots(self) -> frozenset[Any] | None:
        """Dispatch keys of the nodes this pattern can match at its root (None: any)."""
        return None

    def _op_keys(self) -> frozenset[Op] | None:
        """The operators this pattern can match in callee position (None: not only ops)."""
        return None

    # -- matching ---------------------------------------------------------------------------------
    def match(self, expr: Expr, *, type_of: Callable[[Expr], Type | None] | None = None) -> Match | None:
        """Match this pattern against ``expr``; a :class:`Match` or None.

        ``type_of`` gives types for type constraints (default: ``expr.checked_type``).  Dominator
        patterns look at the graph of ``expr`` itself (its users and post-dominators).
        """
        if not isinstance(expr, Expr):
            raise PatternError(f"match needs an expression, got {expr!r:.80}")
        return self._match_root(expr, _State(type_of or _default_type_of, Universe(expr)))

    def _match_root(self, expr: Expr, st: _State) -> Match | None:
        if self._det:
            if self._m(expr, st):
                return Match(self, expr, dict(st.b), st.type_of, st.extra)
            return None
        for _ in self._gen(expr, st):
            return Match(self, expr, dict(st.b), st.type_of, st.extra)
        return None

    def _test(self, e: Expr, st: _State) -> bool:  # deterministic structural test
        raise NotImplementedError

    def _m(self, e: Expr, st: _State) -> bool:
        """Deterministic match (only when ``_det``); on failure the caller undoes the trail."""
        prev = st.b.get(self)
        if prev is not None:
            return prev is e
        if not self._test(e, st):
            return False
        st.b[self] = e
        st.trail.append(self)
        return True

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        """Every way to match: yields once per way, with the bindings in ``st``."""
        mark = len(st.trail)
        if self._m(e, st):
            yield
        st.undo(mark)

    def _bind_gen(self, e: Expr, st: _State, inner: Iterator[None]) -> Iterator[None]:
        prev = st.b.get(self)
        if prev is not None:
            if prev is e:
                yield
            return
        for _ in inner:
            st.b[self] = e
            st.trail.append(self)
            yield
            st.trail.pop()
            del st.b[self]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class WildcardPattern(Pattern):
    """Matches any expression."""

    __slots__ = ()

    def __init__(self) -> None:
        self._init((0,), True)

    def _test(self, e: Expr, st: _State) -> bool:
        return True

    def __repr__(self) -> str:
        return "wildcard()"


class ExprPattern(Pattern):
    """Matches exactly one expression (by identity)."""

    __slots__ = ("expr",)
    expr: Expr

    def __init__(self, expr: Expr) -> None:
        if not isinstance(expr, Expr):
            raise PatternError(f"is_expr needs an expression, got {expr!r}")
        self._init((expr._mask,), True, expr=expr)

    def _test(self, e: Expr, st: _State) -> bool:
        return e is self.expr

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([_key(self.expr)])

    def _op_keys(self) -> frozenset[Op] | None:
        return frozenset([self.expr]) if type(self.expr) is Op else None

    def __repr__(self) -> str:
        return f"is_expr({self.expr!r})"


class OpPattern(Pattern):
    """Matches one operator (use it as a callee: ``is_op("add")(x, y)``)."""

    __slots__ = ("op",)
    op: Op

    def __init__(self, name: str) -> None:
        op = Op(name)
        self._init((op._mask,), True, op=op)

    def _test(self, e: Expr, st: _State) -> bool:
        return e is self.op

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([Op])

    def _op_keys(self) -> frozenset[Op] | None:
        return frozenset([self.op])

    def __repr__(self) -> str:
        return f"is_op({self.op.name!r})"


class _KindPattern(Pattern):
    __slots__ = ()
    kind: ClassVar[type]
    bit: ClassVar[int]
    label: ClassVar[str]

    def __init__(self) -> None:
        self._init((self.bit,), True)

    def _test(self, e: Expr, st: _State) -> bool:
        return type(e) is self.kind

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([self.kind])

    def __repr__(self) -> str:
        return self.label


class ConstantPattern(_KindPattern):
    """Matches any constant."""

    __slots__ = ()
    kind = Constant
    bit = F_CONST
    label = "is_constant()"


class VarPattern(_KindPattern):
    """Matches any (local) variable, or only those named ``name``."""

    __slots__ = ("name",)
    kind = Var
    bit = F_VAR
    label = "is_var()"
    name: str

    def __init__(self, name: str = "") -> None:
        if not isinstance(name, str):
            raise PatternError(f"is_var needs a name (a str), got {name!r}")
        self._init((self.bit,), True, name=name)

    def _test(self, e: Expr, st: _State) -> bool:
        return type(e) is Var and (not self.name or e.name_hint == self.name)

    def __repr__(self) -> str:
        return f"is_var({self.name!r})" if self.name else "is_var()"


_DIV_MUL = frozenset({"divide", "multiply"})


class CallPattern(Pattern):
    """Matches a call whose callee and arguments match the given patterns (``args`` None: any
    arguments).

    A call of a :data:`COMMUTATIVE` operator with two arguments also matches with them swapped;
    ``divide(multiply(a, b), c)`` also matches ``multiply(b, divide(a, c))`` (and ``a * (b / c)``),
    and ``multiply(a, divide(b, c))`` matches ``divide(multiply(b, a), c)``, as in Relay."""

    __slots__ = ("op", "args", "_swap", "_assoc")
    op: Pattern
    args: tuple[Pattern, ...] | None
    _swap: bool
    _assoc: Any  # None: no re-association; else a dict (built on first use) of operator -> alternatives

    def __init__(self, op: Pattern, args: Sequence[Pattern] | None) -> None:
        op = _pat(op)
        terms = op._terms
        if args is None:
            self._init(terms, op._det, (op,), op=op, args=None, _swap=False, _assoc=None)
            return
        args = tuple(_pat(a) for a in args)
        for a in args:
            terms = _and_terms(terms, a._terms)
        swap = type(op) is OpPattern and op.op.name in COMMUTATIVE and len(args) == 2
        assoc: Any = None
        if type(op) is OpPattern and op.op.name in _DIV_MUL and len(args) == 2 and any(
                type(a) is CallPattern and type(a.op) is OpPattern and a.op.op.name in _DIV_MUL
                and a.op.op is not op.op and a.args is not None and len(a.args) == 2 for a in args):
            assoc = False  # computed on first use (the alternatives have alternatives of their own)
        self._init(terms, op._det and all(a._det for a in args), (op, *args), comm=swap, op=op, args=args,
                   _swap=swap, _assoc=assoc)

    def _alternatives(self, e: Call) -> tuple[CallPattern, ...]:
        """The re-associated patterns to try on ``e`` (whose operator is not this pattern's)."""
        if self._assoc is None or type(e.op) is not Op:
            return ()
        if self._assoc is False:
            object.__setattr__(self, "_assoc", self._build_alternatives())
        want = self._assoc.get(e.op.name)
        if not want:
            return ()
        other = "multiply" if e.op.name == "divide" else "divide"
        if not any(type(a) is Call and type(a.op) is Op and a.op.name == other for a in e.args):
            return ()
        return want

    def _build_alternatives(self) -> dict[str, tuple[CallPattern, ...]]:
        me = self.op.op  # type: ignore[attr-defined]
        args = self.args
        assert args is not None
        if me.name == "divide":  # (a * b) / c -> b * (a / c), a * (b / c)
            inner = args[0]
            if not (type(inner) is CallPattern and type(inner.op) is OpPattern
                    and inner.op.op.name == "multiply" and inner.args is not None):
                return {}
            a, b = inner.args
            return {"multiply": (CallPattern(inner.op, [b, CallPattern(self.op, [a, args[1]])]),
                                 CallPattern(inner.op, [a, CallPattern(self.op, [b, args[1]])]))}
        for i in (0, 1):  # a * (b / c) -> (b * a) / c
            inner = args[i]
            if type(inner) is CallPattern and type(inner.op) is OpPattern and inner.op.op.name == "divide" \
                    and inner.args is not None:
                mul = CallPattern(self.op, [inner.args[0], args[1 - i]])
                return {"divide": (CallPattern(inner.op, [mul, inner.args[1]]),)}
        return {}

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not Call:
            return False
        op = self.op
        if type(op) is OpPattern:  # the common case, inlined
            if e.op is not op.op:
                if self._assoc is not None:
                    for alt in self._alternatives(e):
                        mark = len(st.trail)
                        if alt._test(e, st):
                            return True
                        st.undo(mark)
                return False
            if op not in st.b:
                st.b[op] = e.op
                st.trail.append(op)
        elif not op._m(e.op, st):
            return False
        pats = self.args
        if pats is None:
            return True
        args = e.args
        if len(args) != len(pats):
            return False
        if self._swap:
            mark = len(st.trail)
            if pats[0]._m(args[0], st) and pats[1]._m(args[1], st):
                return True
            st.undo(mark)
            return pats[1]._m(args[0], st) and pats[0]._m(args[1], st)
        return all(p._m(a, st) for p, a in zip(pats, args))

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det and not self._comm:
            yield from Pattern._gen(self, e, st)
            return
        if type(e) is not Call:
            return
        op = self.op
        if type(op) is OpPattern and e.op is not op.op:
            for alt in self._alternatives(e):
                yield from self._bind_gen(e, st, alt._gen(e, st))
            return
        pats = self.args
        if pats is None:
            yield from self._bind_gen(e, st, op._gen(e.op, st))
            return
        if len(e.args) != len(pats):
            return
        yield from self._bind_gen(e, st, _chain([(op, e.op), *zip(pats, e.args)], 0, st))
        if self._swap and e.args[0] is not e.args[1]:
            yield from self._bind_gen(e, st, _chain([(op, e.op), (pats[1], e.args[0]), (pats[0], e.args[1])],
                                                    0, st))

    def _roots(self) -> frozenset[Any] | None:
        ops = self.op._op_keys()
        if ops is not None and self._assoc is not None:
            ops = ops | {Op("multiply"), Op("divide")}
        return ops

    def __repr__(self) -> str:
        if self.args is None:
            return f"{self.op!r}(None)"
        return f"{self.op!r}({', '.join(map(repr, self.args))})"


def _chain(parts: list[tuple[Pattern, Expr]], i: int, st: _State) -> Iterator[None]:
    """Match ``parts[i:]`` in order, backtracking (recursion bounded by the pattern's arity)."""
    if i == len(parts):
        yield
        return
    p, x = parts[i]
    for _ in p._gen(x, st):
        yield from _chain(parts, i + 1, st)


class TuplePattern(Pattern):
    """Matches a tuple whose fields match the given patterns (``fields`` None: any tuple)."""

    __slots__ = ("fields",)
    fields: tuple[Pattern, ...] | None

    def __init__(self, fields: Sequence[Any] | None) -> None:
        if fields is None:
            self._init((F_TUPLE,), True, fields=None)
            return
        fs = tuple(_pat(f) for f in fields)
        terms: tuple[int, ...] = (F_TUPLE,)
        for f in fs:
            terms = _and_terms(terms, f._terms)
        self._init(terms, all(f._det for f in fs), fs, fields=fs)

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not Tuple:
            return False
        if self.fields is None:
            return True
        if len(e.fields) != len(self.fields):
            return False
        return all(p._m(f, st) for p, f in zip(self.fields, e.fields))

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det and not self._comm:
            yield from Pattern._gen(self, e, st)
            return
        if type(e) is not Tuple or self.fields is None or len(e.fields) != len(self.fields):
            return
        yield from self._bind_gen(e, st, _chain(list(zip(self.fields, e.fields)), 0, st))

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([Tuple])

    def __repr__(self) -> str:
        if self.fields is None:
            return "is_tuple(None)"
        return f"is_tuple([{', '.join(map(repr, self.fields))}])"


class TupleGetItemPattern(Pattern):
    """Matches ``t[index]`` (any index when ``index`` is None) with ``t`` matching a pattern."""

    __slots__ = ("tuple_value", "index")
    tuple_value: Pattern
    index: int | None

    def __init__(self, tuple_value: Any, index: int | None = None) -> None:
        tv = _pat(tuple_value)
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise PatternError(f"is_tuple_get_item index must be an int or None, got {index!r}")
        if index == -1:  # Relay's spelling of "any index"
            index = None
        self._init(_and_terms((F_GETITEM,), tv._terms), tv._det, (tv,), tuple_value=tv, index=index)

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not TupleGetItem or (self.index is not None and e.index != self.index):
            return False
        return self.tuple_value._m(e.tuple_value, st)

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det and not self._comm:
            yield from Pattern._gen(self, e, st)
            return
        if type(e) is not TupleGetItem or (self.index is not None and e.index != self.index):
            return
        yield from self._bind_gen(e, st, self.tuple_value._gen(e.tuple_value, st))

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([TupleGetItem])

    def __repr__(self) -> str:
        return f"is_tuple_get_item({self.tuple_value!r}, {self.index!r})"


class AltPattern(Pattern):
    """``left | right``: matches what either matches (left first, with backtracking)."""

    __slots__ = ("left", "right")
    left: Pattern
    right: Pattern

    def __init__(self, left: Pattern, right: Pattern) -> None:
        self._init(_simplify_terms(left._terms + right._terms), False, (left, right), left=left, right=right)

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        def both() -> Iterator[None]:
            yield from self.left._gen(e, st)
            yield from self.right._gen(e, st)

        yield from self._bind_gen(e, st, both())

    def _roots(self) -> frozenset[Any] | None:
        a, b = self.left._roots(), self.right._roots()
        return None if a is None or b is None else a | b

    def _op_keys(self) -> frozenset[Op] | None:
        a, b = self.left._op_keys(), self.right._op_keys()
        return None if a is None or b is None else a | b

    def __repr__(self) -> str:
        return f"({self.left!r} | {self.right!r})"


class _Wrapper(Pattern):
    """A pattern plus an extra check on the matched node."""

    __slots__ = ("inner",)
    inner: Pattern

    def _check(self, e: Expr, st: _State) -> bool:
        raise NotImplementedError

    def _test(self, e: Expr, st: _State) -> bool:
        return self._check(e, st) and self.inner._m(e, st)

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det and not self._comm:
            yield from Pattern._gen(self, e, st)
            return
        if not self._check(e, st):
            return
        yield from self._bind_gen(e, st, self.inner._gen(e, st))

    def _roots(self) -> frozenset[Any] | None:
        return self.inner._roots()

    def _op_keys(self) -> frozenset[Op] | None:
        return self.inner._op_keys()


def _attr_equal(a: Any, b: Any) -> bool:
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_attr_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Node) or isinstance(b, Node):
        return a is b
    if (type(a) is bool) != (type(b) is bool):
        return False
    return bool(a == b)


class AttrPattern(_Wrapper):
    """A pattern whose matched call (or function) has the given attribute values; on an operator,
    the operator's attributes (:data:`OP_ATTRS`: ``TOpPattern``, ``num_inputs``, ``name``).  An
    attribute the node does not have never matches; ``has_attr({})`` matches every call, function
    and operator."""

    __slots__ = ("attrs", "_items")
    attrs: Mapping[str, Any]
    _items: tuple[tuple[str, Any], ...]

    def __init__(self, inner: Pattern, attrs: Mapping[str, Any]) -> None:
        if not isinstance(attrs, Mapping):
            raise PatternError(f"has_attr needs a mapping of attribute names to values, got {attrs!r}")
        items = tuple(sorted((str(k), normalize_attr_value(v, f"has_attr {k!r}")) for k, v in attrs.items()))
        self._init(inner._terms, inner._det, (inner,), inner=inner, attrs=types.MappingProxyType(dict(items)),
                   _items=items)

    def _check(self, e: Expr, st: _State) -> bool:
        k = type(e)
        if k is Op:
            odef = e.op_def  # type: ignore[attr-defined]
            for name, v in self._items:
                get = OP_ATTRS.get(name)
                if get is None or not _attr_equal(get(odef), v):
                    return False
            return True
        if k is not Call and k is not Function:
            return False
        have = e.attrs  # type: ignore[attr-defined]
        return all(k in have and _attr_equal(have[k], v) for k, v in self._items)

    def __repr__(self) -> str:
        return f"{self.inner!r}.has_attr({dict(self._items)!r})"


class TypePattern(_Wrapper):
    """A pattern whose matched expression has a given type, dtype and/or shape."""

    __slots__ = ("ty", "dtype", "shape")
    ty: Type | None
    dtype: str | None
    shape: tuple[Any, ...] | None

    def __init__(self, inner: Pattern, *, ty: Type | None = None, dtype: str | None = None,
                 shape: tuple[Any, ...] | None = None) -> None:
        self._init(inner._terms, inner._det, (inner,), inner=inner, ty=ty, dtype=dtype, shape=shape)

    def _check(self, e: Expr, st: _State) -> bool:
        t = st.type_of(e)
        if t is None:
            return False
        if self.ty is not None and t is not self.ty:
            return False
        if self.dtype is not None or self.shape is not None:
            if type(t) is not TensorType:
                return False
            if self.dtype is not None and t.dtype != self.dtype:
                return False
            if self.shape is not None and t.shape != self.shape:
                return False
        return True

    def __repr__(self) -> str:
        extra = [f"{k}={getattr(self, k)!r}" for k in ("ty", "dtype", "shape")
                 if getattr(self, k) is not None]
        return f"{self.inner!r}.has_type({', '.join(extra)})"


class FunctionPattern(Pattern):
    """Matches a function whose parameters (``params`` None: any number) and body match."""

    __slots__ = ("params", "body")
    params: tuple[Pattern, ...] | None
    body: Pattern

    def __init__(self, params: Sequence[Any] | None, body: Any) -> None:
        bp = _pat(body)
        ps = None if params is None else tuple(_pat(p) for p in params)
        terms = _and_terms((F_FUNC,), bp._terms)
        kids = (*(ps or ()), bp)
        self._init(terms, all(k._det for k in kids), kids, params=ps, body=bp)

    def _parts(self, e: Function) -> list[tuple[Pattern, Expr]] | None:
        if self.params is None:
            return [(self.body, e.body)]
        if len(self.params) != len(e.params):
            return None
        return [*zip(self.params, e.params), (self.body, e.body)]

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not Function:
            return False
        parts = self._parts(e)
        return parts is not None and all(p._m(x, st) for p, x in parts)

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det and not self._comm:
            yield from Pattern._gen(self, e, st)
            return
        parts = self._parts(e) if type(e) is Function else None
        if parts is not None:
            yield from self._bind_gen(e, st, _chain(parts, 0, st))

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([Function])

    def __repr__(self) -> str:
        ps = "None" if self.params is None else f"[{', '.join(map(repr, self.params))}]"
        return f"FunctionPattern({ps}, {self.body!r})"


class _PartsPattern(Pattern):
    """A pattern of a fixed node kind whose sub-expressions match sub-patterns (If, Let)."""

    __slots__ = ()
    kind: ClassVar[type]
    names: ClassVar[tuple[str, ...]]

    def _parts(self, e: Any) -> list[tuple[Pattern, Expr]]:
        return [(getattr(self, n), getattr(e, n)) for n in self.names]

    def _test(self, e: Expr, st: _State) -> bool:
        return type(e) is self.kind and all(p._m(x, st) for p, x in self._parts(e))

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det and not self._comm:
            yield from Pattern._gen(self, e, st)
            return
        if type(e) is self.kind:
            yield from self._bind_gen(e, st, _chain(self._parts(e), 0, st))

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([self.kind])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(getattr(self, n)) for n in self.names)})"


class IfPattern(_PartsPattern):
    """Matches ``if (cond) {true_branch} else {false_branch}``."""

    __slots__ = ("cond", "true_branch", "false_branch")
    kind = If
    names = ("cond", "true_branch", "false_branch")
    cond: Pattern
    true_branch: Pattern
    false_branch: Pattern

    def __init__(self, cond: Any, true_branch: Any, false_branch: Any) -> None:
        c, t, f = _pat(cond), _pat(true_branch), _pat(false_branch)
        terms = _and_terms(_and_terms(_and_terms((F_IF,), c._terms), t._terms), f._terms)
        self._init(terms, c._det and t._det and f._det, (c, t, f), cond=c, true_branch=t, false_branch=f)


class LetPattern(_PartsPattern):
    """Matches ``let var = value; body``."""

    __slots__ = ("var", "value", "body")
    kind = Let
    names = ("var", "value", "body")
    var: Pattern
    value: Pattern
    body: Pattern

    def __init__(self, var: Any, value: Any, body: Any) -> None:
        v, x, b = _pat(var), _pat(value), _pat(body)
        terms = _and_terms(_and_terms(_and_terms((F_LET,), v._terms), x._terms), b._terms)
        self._init(terms, v._det and x._det and b._det, (v, x, b), var=v, value=x, body=b)


class DominatorPattern(Pattern):
    """``dominates(parent, path, child)``: ``child`` matches the node, every input path of it
    (through non-leaf inputs: variables and constants are not followed) goes through nodes
    matching ``path`` until it reaches the one node ``parent`` matches, and the node
    post-dominates that parent in the whole graph matched in (every path from the parent to the
    root goes through it), as Relay's dominator patterns.

    ``path`` matches each node afresh (its captures may take different nodes on each path; they
    are kept as extra matches, ``Match.all(path)``); ``parent`` is one capture.  The paths are
    walked with an explicit stack, never by recursion."""

    __slots__ = ("parent", "path", "child")
    parent: Pattern
    path: Pattern
    child: Pattern

    def __init__(self, parent: Any, path: Any, child: Any) -> None:
        p, q, c = _pat(parent), _pat(path), _pat(child)
        self._init(_and_terms(c._terms, p._terms), True, (p, q, c), parent=p, path=q, child=c)

    def _test(self, e: Expr, st: _State) -> bool:
        if not _first(self.child, e, st):
            return False
        parent, path = self.parent, self.path
        inputs = Universe.inputs
        stack: list[tuple[Expr, int]] = [(e, 0)]
        seen: set[Expr] = set()
        while stack:
            n, i = stack.pop()
            ins = n.args if type(n) is Call else inputs(n)
            counted = i < 0
            i = abs(i)
            while i < len(ins):
                c = ins[i]
                i += 1
                if type(c) is Var or type(c) is Constant:
                    continue
                counted = True
                mark = len(st.trail)
                if parent._m(c, st) if parent._det else _first(parent, c, st):
                    continue
                st.undo(mark)
                if c in seen:  # a path node met before: its own inputs were checked then
                    continue
                fresh = _State(st.type_of, st.universe)
                if not _first(path, c, fresh):
                    return False
                for q, x in fresh.b.items():
                    st.add_extra(q, x)
                seen.add(c)
                stack.append((n, -i))  # the rest of n's inputs after c's (counted)
                stack.append((c, 0))
                break
            else:
                if not counted:
                    return False
        pnode = st.b.get(parent)
        if pnode is None:
            return False
        uni = st.universe
        if uni is None:
            uni = st.universe = Universe(e)
        return uni.post_dominates(e, pnode)

    def _roots(self) -> frozenset[Any] | None:
        return self.child._roots()

    def __repr__(self) -> str:
        return f"dominates({self.parent!r}, {self.path!r}, {self.child!r})"


# -- builders --------------------------------------------------------------------------------------


def wildcard() -> WildcardPattern:
    """A pattern matching any expression (a fresh capture each call)."""
    return WildcardPattern()


def is_op(name: str) -> OpPattern:
    """The operator ``name`` as a callee pattern: ``is_op("nn.relu")(wildcard())``."""
    return OpPattern(name)


def is_expr(expr: Expr) -> ExprPattern:
    """A pattern matching exactly ``expr`` (hash-consing: the structurally equal node)."""
    return ExprPattern(expr)


def is_constant() -> ConstantPattern:
    """A pattern matching any constant."""
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    """A pattern matching any local variable, or (``name``) those with that name hint."""
    return VarPattern(name)


def is_tuple(fields: Sequence[Any] | None) -> TuplePattern:
    """A pattern matching a tuple with fields matching ``fields`` (None: any tuple)."""
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: Any, index: int | None = None) -> TupleGetItemPattern:
    """A pattern matching ``tuple_value[index]`` (any index when None or -1)."""
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond: Any, true_branch: Any, false_branch: Any) -> IfPattern:
    """A pattern matching an ``if`` whose parts match."""
    return IfPattern(cond, true_branch, false_branch)


def is_let(var: Any, value: Any, body: Any) -> LetPattern:
    """A pattern matching a ``let`` whose variable, value and body match."""
    return LetPattern(var, value, body)


def is_function(params: Sequence[Any] | None, body: Any) -> FunctionPattern:
    """A pattern matching a function (``params`` None: any parameters)."""
    return FunctionPattern(params, body)


def dominates(parent: Any, path: Any, child: Any) -> DominatorPattern:
    """``child`` dominating ``parent`` through nodes matching ``path`` (see :class:`DominatorPattern`)::

        diamond = dominates(is_op("nn.conv2d")(wildcard(), wildcard()),
                            wildcard().has_attr({"TOpPattern": 0})(wildcard()),
                            is_op("add")(wildcard(), wildcard()))
    """
    return DominatorPattern(parent, path, child)


def has_attr(attrs: Mapping[str, Any], pattern: Any = None) -> AttrPattern:
    """``pattern`` (default: any expression) with the attributes ``attrs``."""
    return (WildcardPattern() if pattern is None else _pat(pattern)).has_attr(attrs)


def has_type(ty: Type, pattern: Any = None) -> TypePattern:
    """``pattern`` (default: any expression) of type ``ty``."""
    return (WildcardPattern() if pattern is None else _pat(pattern)).has_type(ty)


def has_dtype(dtype: Any, pattern: Any = None) -> TypePattern:
    """``pattern`` (default: any expression), a tensor of ``dtype``."""
    return (WildcardPattern() if pattern is None else _pat(pattern)).has_dtype(dtype)


def has_shape(shape: Sequence[Any], pattern: Any = None) -> TypePattern:
    """``pattern`` (default: any expression), a tensor of ``shape``."""
    return (WildcardPattern() if pattern is None else _pat(pattern)).has_shape(shape)


# -- Relay's callback objects ---------------------------------------------------------------------


class DFPatternCallback:
    """A pattern and what to do with its matches, for :func:`rewrite` (Relay's class).

    Subclass it, set ``self.pattern`` and define ``callback(pre, post, node_map)``: ``pre`` is
    the matched node, ``post`` the same node with its inputs already rewritten, ``node_map``
    maps each pattern to the list of (rewritten) nodes it matched; return the replacement
    (None: no change).  Or pass ``pattern=`` and ``callback=`` (a function of the same three
    arguments).  ``rewrite_once``: stop applying this callback after a round in which it
    changed something; ``require_type`` is accepted for Relay compatibility (types are always
    available to type patterns here).
    """

    pattern: Pattern | None

    def __init__(self, require_type: bool = False, rewrite_once: bool = False, *,
                 pattern: Pattern | None = None,
                 callback: Callable[[Expr, Expr, dict[Pattern, list[Expr]]], Expr | None] | None = None
                 ) -> None:
        self.require_type = bool(require_type)
        self.rewrite_once = bool(rewrite_once)
        self.pattern = pattern
        if callback is not None:
            self._fn = callback

    def callback(self, pre: Expr, post: Expr, node_map: dict[Pattern, list[Expr]]) -> Expr | None:
        """The replacement of a match (override, or pass ``callback=``)."""
        fn = self.__dict__.get("_fn")
        if fn is None:
            raise PatternError(f"{type(self).__name__} defines no callback")
        return fn(pre, post, node_map)

    def rewrite(self, expr: Expr, mod: Any = None) -> Expr:
        """:func:`rewrite` with this callback alone."""
        return rewrite(self, expr, mod)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.pattern!r})"



# -- matches ---------------------------------------------------------------------------------------


class Match:
    """The result of a successful match: ``m[p]`` is the node pattern ``p`` matched.

    ``m.all(p)`` lists every node ``p`` matched: the one ``m[p]`` gives, then those a dominator
    pattern's path matched afresh on each path (Relay's node map holds such lists:
    :attr:`node_map`)."""

    __slots__ = ("pattern", "expr", "_b", "_type_of", "_extra")
    pattern: Pattern
    expr: Expr
    _b: dict[Pattern, Expr]
    _type_of: Callable[[Expr], Type | None]
    _extra: dict[Pattern, tuple[Expr, ...]]

    def __init__(self, pattern: Pattern, expr: Expr, bindings: dict[Pattern, Expr],
                 type_of: Callable[[Expr], Type | None],
                 extra: Mapping[Pattern, Sequence[Expr]] | None = None) -> None:
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "_b", bindings)
        object.__setattr__(self, "_type_of", type_of)
        object.__setattr__(self, "_extra", {p: tuple(v) for p, v in (extra or {}).items() if v})

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"matches are immutable (cannot set {name!r})")

    def __getitem__(self, p: Pattern) -> Expr:
        try:
            return self._b[p]
        except KeyError:
            ex = self._extra.get(p)
            if ex:
                return ex[0]
            raise _UnboundError(f"{p!r} took no part in this match") from None

    def get(self, p: Pattern, default: Any = None) -> Any:
        """The node ``p`` matched, or ``default``."""
        r = self._b.get(p)
        if r is None:
            ex = self._extra.get(p)
            return ex[0] if ex else default
        return r

    def all(self, p: Pattern) -> list[Expr]:
        """Every node ``p`` matched (empty if it took no part)."""
        out = [self._b[p]] if p in self._b else []
        for e in self._extra.get(p, ()):
            if e not in out:
                out.append(e)
        return out

    @property
    def node_map(self) -> dict[Pattern, list[Expr]]:
        """Pattern -> every node it matched (Relay's ``node_map``)."""
        return {p: self.all(p) for p in {**self._b, **self._extra}}

    def __contains__(self, p: object) -> bool:
        return p in self._b or p in self._extra

    def __len__(self) -> int:
        return len(self._b)

    def type_of(self, e: Expr) -> Type | None:
        """The type of ``e`` (None if it cannot be inferred)."""
        return self._type_of(e)

    def __repr__(self) -> str:
        return f"<Match {self.pattern!r} at {self.expr!r}>"
