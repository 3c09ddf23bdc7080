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

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from ..errors import ImmutableError, PatternError, PyIRError
from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from ..ir.node import F_CONST, F_GETITEM, F_TUPLE, F_VAR, OP_BIT0, Node, normalize_attr_value
from ..ir.types import TensorType, Type, normalize_dtype

# The last line of names is loaded lazily from pyir.rewrite.pattern_rewrite (which imports this module).
__all__ = ["Pattern", "PatternError", "Match", "wildcard", "is_op", "is_expr", "is_constant", "is_var",
           "is_tuple", "is_tuple_get_item"]

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
    __slots__ = ("b", "trail", "type_of")

    def __init__(self, type_of: Callable[[Expr], Type | None]) -> None:
        self.b: dict[Pattern, Expr] = {}
        self.trail: list[Pattern] = []
        self.type_of = type_of

    def undo(self, mark: int) -> None:
        trail = self.trail
        b = self.b
        while len(trail) > mark:
            del b[trail.pop()]


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


class Pattern:
    """Base of all patterns.  Immutable; each pattern object is also a capture."""

    __slots__ = ("_terms", "_det", "__weakref__")
    _terms: tuple[int, ...]
    _det: bool  # no alternative anywhere inside: a single way to match

    def _init(self, terms: tuple[int, ...], det: bool, **fields: Any) -> None:
        object.__setattr__(self, "_terms", terms)
        object.__setattr__(self, "_det", det)
        for k, v in fields.items():
            object.__setattr__(self, k, v)

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
        """A call pattern with this pattern as the callee: ``is_op("nn.relu")(wildcard())``."""
        return CallPattern(self, [_pat(a) for a in args])

    def __or__(self, other: Any) -> AltPattern:
        return AltPattern(self, _pat(other))

    def __ror__(self, other: Any) -> AltPattern:
        return AltPattern(_pat(other), self)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        """This pattern, and the matched call's (or function's) attributes include ``attrs``."""
        return AttrPattern(self, attrs)

    def has_dtype(self, dtype: Any) -> TypePattern:
        """This pattern, and the matched expression is a tensor of ``dtype``."""
        return TypePattern(self, dtype=normalize_dtype(dtype))

    def has_shape(self, shape: Sequence[int]) -> TypePattern:
        """This pattern, and the matched expression is a tensor of ``shape``."""
        return TypePattern(self, shape=tuple(int(d) for d in shape))

    def has_type(self, ty: Type) -> TypePattern:
        """This pattern, and the matched expression has type ``ty``."""
        if not isinstance(ty, Type):
            raise PatternError(f"has_type needs a Type, got {ty!r}")
        return TypePattern(self, ty=ty)

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

        ``type_of`` gives types for type constraints (default: ``expr.checked_type``).
        """
        return self._match_root(expr, _State(type_of or _default_type_of))

    def _match_root(self, expr: Expr, st: _State) -> Match | None:
        if self._det:
            if self._m(expr, st):
                return Match(self, expr, dict(st.b), st.type_of)
            return None
        for _ in self._gen(expr, st):
            return Match(self, expr, dict(st.b), st.type_of)
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
    """Matches any (local) variable."""

    __slots__ = ()
    kind = Var
    bit = F_VAR
    label = "is_var()"


class CallPattern(Pattern):
    """Matches a call whose callee and arguments match the given patterns."""

    __slots__ = ("op", "args")
    op: Pattern
    args: tuple[Pattern, ...]

    def __init__(self, op: Pattern, args: Sequence[Pattern]) -> None:
        op = _pat(op)
        args = tuple(_pat(a) for a in args)
        terms = op._terms
        for a in args:
            terms = _and_terms(terms, a._terms)
        self._init(terms, op._det and all(a._det for a in args), op=op, args=args)

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not Call:
            return False
        args = e.args
        if len(args) != len(self.args):
            return False
        op = self.op
        if type(op) is OpPattern:  # the common case, inlined
            if e.op is not op.op:
                return False
            if op not in st.b:
                st.b[op] = e.op
                st.trail.append(op)
        elif not op._m(e.op, st):
            return False
        return all(p._m(a, st) for p, a in zip(self.args, args))

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det:
            yield from Pattern._gen(self, e, st)
            return
        if type(e) is not Call or len(e.args) != len(self.args):
            return
        parts = [(self.op, e.op), *zip(self.args, e.args)]
        yield from self._bind_gen(e, st, _chain(parts, 0, st))

    def _roots(self) -> frozenset[Any] | None:
        ops = self.op._op_keys()
        return ops if ops is not None else None

    def __repr__(self) -> str:
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
    """Matches a tuple whose fields match the given patterns."""

    __slots__ = ("fields",)
    fields: tuple[Pattern, ...]

    def __init__(self, fields: Sequence[Any]) -> None:
        fs = tuple(_pat(f) for f in fields)
        terms: tuple[int, ...] = (F_TUPLE,)
        for f in fs:
            terms = _and_terms(terms, f._terms)
        self._init(terms, all(f._det for f in fs), fields=fs)

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not Tuple or len(e.fields) != len(self.fields):
            return False
        return all(p._m(f, st) for p, f in zip(self.fields, e.fields))

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det:
            yield from Pattern._gen(self, e, st)
            return
        if type(e) is not Tuple or len(e.fields) != len(self.fields):
            return
        yield from self._bind_gen(e, st, _chain(list(zip(self.fields, e.fields)), 0, st))

    def _roots(self) -> frozenset[Any] | None:
        return frozenset([Tuple])

    def __repr__(self) -> str:
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
        self._init(_and_terms((F_GETITEM,), tv._terms), tv._det, tuple_value=tv, index=index)

    def _test(self, e: Expr, st: _State) -> bool:
        if type(e) is not TupleGetItem or (self.index is not None and e.index != self.index):
            return False
        return self.tuple_value._m(e.tuple_value, st)

    def _gen(self, e: Expr, st: _State) -> Iterator[None]:
        if self._det:
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
        self._init(_simplify_terms(left._terms + right._terms), False, left=left, right=right)

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
        if self._det:
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
    """A pattern whose matched call (or function) has the given attribute values."""

    __slots__ = ("attrs",)
    attrs: tuple[tuple[str, Any], ...]

    def __init__(self, inner: Pattern, attrs: Mapping[str, Any]) -> None:
        if not isinstance(attrs, Mapping):
            raise PatternError(f"has_attr needs a mapping of attribute names to values, got {attrs!r}")
        items = tuple(sorted((str(k), normalize_attr_value(v, f"has_attr {k!r}")) for k, v in attrs.items()))
        self._init(inner._terms, inner._det, inner=inner, attrs=items)

    def _check(self, e: Expr, st: _State) -> bool:
        if type(e) is not Call and type(e) is not Function:
            return False
        have = e.attrs
        return all(k in have and _attr_equal(have[k], v) for k, v in self.attrs)

    def __repr__(self) -> str:
        return f"{self.inner!r}.has_attr({dict(self.attrs)!r})"


class TypePattern(_Wrapper):
    """A pattern whose matched expression has a given type, dtype and/or shape."""

    __slots__ = ("ty", "dtype", "shape")
    ty: Type | None
    dtype: str | None
    shape: tuple[int, ...] | None

    def __init__(self, inner: Pattern, *, ty: Type | None = None, dtype: str | None = None,
                 shape: tuple[int, ...] | None = None) -> None:
        self._init(inner._terms, inner._det, inner=inner, ty=ty, dtype=dtype, shape=shape)

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


# -- builders --------------------------------------------------------------------------------------


def wildcard() -> WildcardPattern:
    """A pattern matching any expression (a fresh capture each call)."""
    return WildcardPattern()


def is_op(name: str) -> OpPattern:
    """The operator ``name`` as a callee pattern: ``is_op("nn.relu")(wildcard())``."""
    return OpPattern(name)


def is_expr(expr: Expr) -> ExprPattern:
    """A pattern matching exactly ``expr``."""
    return ExprPattern(expr)


def is_constant() -> ConstantPattern:
    """A pattern matching any constant."""
    return ConstantPattern()


def is_var() -> VarPattern:
    """A pattern matching any local variable."""
    return VarPattern()


def is_tuple(fields: Sequence[Any]) -> TuplePattern:
    """A pattern matching a tuple with fields matching ``fields``."""
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: Any, index: int | None = None) -> TupleGetItemPattern:
    """A pattern matching ``tuple_value[index]`` (any index when None)."""
    return TupleGetItemPattern(tuple_value, index)


# -- matches ---------------------------------------------------------------------------------------


class Match:
    """The result of a successful match: ``m[p]`` is the node pattern ``p`` matched."""

    __slots__ = ("pattern", "expr", "_b", "_type_of")
    pattern: Pattern
    expr: Expr
    _b: dict[Pattern, Expr]
    _type_of: Callable[[Expr], Type | None]

    def __init__(self, pattern: Pattern, expr: Expr, bindings: dict[Pattern, Expr],
                 type_of: Callable[[Expr], Type | None]) -> None:
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "_b", bindings)
        object.__setattr__(self, "_type_of", type_of)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"matches are immutable (cannot set {name!r})")

    def __getitem__(self, p: Pattern) -> Expr:
        try:
            return self._b[p]
        except KeyError:
            raise _UnboundError(f"{p!r} took no part in this match") from None

    def get(self, p: Pattern, default: Any = None) -> Any:
        """The node ``p`` matched, or ``default``."""
        return self._b.get(p, default)

    def __contains__(self, p: object) -> bool:
        return p in self._b

    def __len__(self) -> int:
        return len(self._b)

    def type_of(self, e: Expr) -> Type | None:
        """The type of ``e`` (None if it cannot be inferred)."""
        return self._type_of(e)

    def __repr__(self) -> str:
        return f"<Match {self.pattern!r} at {self.expr!r}>"
