"""Relay's algebraic data types, pattern matching, references and type variables.

Types: :class:`TypeVar` (``A``, a type parameter), :class:`GlobalTypeVar` (the name of a type
definition, ``List``), :class:`TypeCall` (``List[A]``), :class:`RefType` (``ref(T)``), and
:class:`TypeData`, a type definition (``type List[A] { Cons(A, List[A]), Nil }``, kept by
the :class:`~pyir.ir.module.Module` beside its functions).

Expressions: :class:`Constructor` (``Cons``: a callable value, ``Cons(%x, %l)``; a nullary one
is called with no arguments, ``Nil`` in the text), :class:`Match` of :class:`Clause` s
(``match (%l) { Cons(%h, _) => { %h }, Nil => { 0 } }``, ``match?`` when not exhaustive), and
the references :class:`RefCreate` / :class:`RefRead` / :class:`RefWrite` (``ref(e)``,
``ref_read(r)``, ``ref_write(r, v)``; mutable cells only at run time, in the interpreter).

Patterns (:class:`Pattern`, their own sort): :class:`PatternWildcard` ``_``,
:class:`PatternVar` ``%x``, :class:`PatternConstructor` ``Cons(p1, p2)``,
:class:`PatternTuple` ``(p1, p2)``.

**How a clause binds its variables.**  A clause's right-hand side is a :class:`Function`
whose parameters are the clause's pattern variables, in the order of the pattern (depth
first, left to right); a :class:`PatternVar` holds no variable, it stands for the next
parameter.  So pattern variables are bound by an ordinary binder (a Function): the scope
walks, well-formedness, alpha-equality, free variables and every pass that treats function
bodies as scopes see them without a new binder kind, and renaming a parameter renames the
pattern variable.  ``Clause(pattern, rhs, params)`` builds that function;
``clause.rhs.body`` is the expression.

**Type parameters of functions** are implicit in the node: a function's type parameters
are the :class:`TypeVar` s of its parameter and return annotations (``def @id[A](%x: A) ->
A`` has ``A``), in order of first appearance; the type checker instantiates them afresh at
each call of a global function, constructor or function literal.  Unknowns of inference
are type variables named ``?N`` (printed ``_``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import WellFormedError
from .expr import Expr, Function, Var, as_expr, fresh_uid
from .kinds import Child, Children, Scalar, raw_key, sized_text_key, text_key
from .node import Node, build, check_text, digest, intern
from .types import Type

__all__ = ["TypeVar", "GlobalTypeVar", "TypeCall", "RefType", "TypeData", "Constructor", "Pattern",
           "PatternWildcard", "PatternVar", "PatternConstructor", "PatternTuple", "Clause", "Match",
           "RefCreate", "RefRead", "RefWrite", "F_MATCH", "F_REF", "F_ADT", "fresh_unknown",
           "is_unknown", "pattern_var_count", "type_vars_of", "ADT_BITS"]

# summary bits (bits 9-11 are free below the operator bits of pyir.ir.node)
F_MATCH = 1 << 9  #: a Match or Clause below
F_REF = 1 << 10  #: a reference operation below (RefCreate, RefRead, RefWrite)
F_ADT = 1 << 11  #: a Constructor below
ADT_BITS = F_MATCH | F_REF | F_ADT


def _names_key(names: tuple[str, ...]) -> bytes:
    return b"%d:" % len(names) + b"".join([sized_text_key(s) for s in names])


def _bool_key(b: bool) -> bytes:
    return b"1" if b else b"0"


def _name(s: Any, what: str) -> str:
    if type(s) is not str:
        if not isinstance(s, str):
            raise WellFormedError(f"{what} must be a non-empty str, got {s!r:.80}")
        s = str.__getitem__(s, slice(None))
    if not s:
        raise WellFormedError(f"{what} must be a non-empty str, got ''")
    return check_text(s, what)


def _types(ts: Iterable[Any], what: str) -> tuple[Type, ...]:
    try:
        out = tuple(ts)
    except TypeError:
        raise WellFormedError(f"{what} must be a sequence of types, got {ts!r:.80}") from None
    for t in out:
        if not isinstance(t, Type):
            raise WellFormedError(f"{what} must be types, got {t!r:.80}")
    return out


# -- types ---------------------------------------------------------------------------------------


class TypeVar(Type, final=True):
    """A type variable ``A`` (a type parameter of a function or of a type definition), by name."""

    __slots__ = ("name_hint",)
    _kind = b"xv"
    _code = 20
    _fields = (Scalar("name_hint", str, key=text_key),)
    name_hint: str

    def __new__(cls, name_hint: str) -> TypeVar:
        return build(cls, (_name(name_hint, "TypeVar name"),))

    def __repr__(self) -> str:
        return f"TypeVar({self.name_hint!r})"

    def __str__(self) -> str:
        return "_" if self.name_hint.startswith("?") else self.name_hint


_unknowns = itertools.count()


def fresh_unknown() -> TypeVar:
    """A new unknown of type inference (a TypeVar named ``?N``, printed ``_``)."""
    return TypeVar(f"?{next(_unknowns)}")


def is_unknown(t: Any) -> bool:
    """Whether ``t`` is an unknown of type inference (see :func:`fresh_unknown`)."""
    return type(t) is TypeVar and t.name_hint.startswith("?")


class GlobalTypeVar(Type, final=True):
    """The name of a type definition (``List``), by name."""

    __slots__ = ("name_hint",)
    _kind = b"xg"
    _code = 21
    _fields = (Scalar("name_hint", str, key=text_key),)
    name_hint: str

    def __new__(cls, name_hint: str) -> GlobalTypeVar:
        return build(cls, (_name(name_hint, "GlobalTypeVar name"),))

    def __repr__(self) -> str:
        return f"GlobalTypeVar({self.name_hint!r})"

    def __str__(self) -> str:
        return self.name_hint


class TypeCall(Type, final=True):
    """A type definition applied to type arguments: ``List[A]`` (``Nat[]`` without)."""

    __slots__ = ("args", "func")
    _kind = b"xc"
    _code = 22
    _fields = (Child("func", GlobalTypeVar), Children("args"))
    func: GlobalTypeVar
    args: tuple[Type, ...]

    def __new__(cls, func: GlobalTypeVar | str, args: Iterable[Type] = ()) -> TypeCall:
        f = GlobalTypeVar(func) if isinstance(func, str) else func
        if type(f) is not GlobalTypeVar:
            raise WellFormedError(f"TypeCall applies a GlobalTypeVar, got {f!r:.80}")
        return build(cls, (f, _types(args, "TypeCall arguments")))

    def __repr__(self) -> str:
        return f"TypeCall({self.func.name_hint!r}, {list(self.args)!r})"

    def __str__(self) -> str:
        from . import hooks

        return hooks.type_str(self)


class RefType(Type, final=True):
    """The type of a reference to a value of type ``value``: ``ref(T)``."""

    __slots__ = ("value",)
    _kind = b"xr"
    _code = 23
    _fields = (Child("value"),)
    value: Type

    def __new__(cls, value: Type) -> RefType:
        if not isinstance(value, Type):
            raise WellFormedError(f"RefType holds a type, got {value!r:.80}")
        return build(cls, (value,))

    def __repr__(self) -> str:
        return f"RefType({self.value!r})"

    def __str__(self) -> str:
        from . import hooks

        return hooks.type_str(self)


# -- constructors and type definitions ------------------------------------------------------------


class Constructor(Expr, final=True):
    """A constructor of a type definition: ``Cons`` of ``type List[A] { Cons(A, List[A]), Nil }``.

    It carries its name, the definition it belongs to, the definition's type parameters and
    its field types, so its type ``fn [A](A, List[A]) -> List[A]`` needs no module.  A
    constructor is a value (callable like a function); ``Cons(x, l)`` is a :class:`Call`.
    """

    __slots__ = ("belong_to", "inputs", "name_hint", "type_vars")
    _kind = b"xk"
    _code = 24
    _bit = F_ADT
    _fields = (Scalar("name_hint", str, key=sized_text_key), Children("inputs", Type),
               Child("belong_to", GlobalTypeVar), Scalar("type_vars", tuple, key=_names_key))
    _key_order = ("name_hint", "belong_to", "type_vars", "inputs")
    name_hint: str
    belong_to: GlobalTypeVar
    type_vars: tuple[str, ...]
    inputs: tuple[Type, ...]

    def __new__(cls, name_hint: str, inputs: Iterable[Type], belong_to: GlobalTypeVar | str,
                type_vars: Sequence[str | TypeVar] = ()) -> Constructor:
        name = _name(name_hint, "Constructor name")
        b = GlobalTypeVar(belong_to) if isinstance(belong_to, str) else belong_to
        if type(b) is not GlobalTypeVar:
            raise WellFormedError(f"Constructor {name}: belong_to must be a GlobalTypeVar, got {b!r:.80}")
        tvs = tuple([v.name_hint if type(v) is TypeVar else _name(v, "type parameter name")
                     for v in type_vars])
        if len(set(tvs)) != len(tvs):
            raise WellFormedError(f"Constructor {name}: type parameters must be distinct, got {list(tvs)}")
        return build(cls, (name, _types(inputs, f"Constructor {name} inputs"), b, tvs))

    @property
    def result_type(self) -> TypeCall:
        """``List[A]``: the type the constructor builds (its definition over its type parameters)."""
        return TypeCall(self.belong_to, [TypeVar(v) for v in self.type_vars])


class TypeData(Type, final=True):
    """A type definition: ``type List[A] { Cons(A, List[A]), Nil }`` (header, type parameters,
    constructors, in order: a constructor's tag is its index)."""

    __slots__ = ("constructors", "header", "type_vars")
    _kind = b"xd"
    _code = 34
    _fields = (Child("header", GlobalTypeVar), Scalar("type_vars", tuple, key=_names_key),
               Children("constructors", Constructor))
    header: GlobalTypeVar
    type_vars: tuple[str, ...]
    constructors: tuple[Constructor, ...]

    def __new__(cls, header: GlobalTypeVar | str, type_vars: Sequence[str | TypeVar],
                constructors: Iterable[Constructor]) -> TypeData:
        h = GlobalTypeVar(header) if isinstance(header, str) else header
        if type(h) is not GlobalTypeVar:
            raise WellFormedError(f"TypeData header must be a GlobalTypeVar, got {h!r:.80}")
        tvs = tuple([v.name_hint if type(v) is TypeVar else _name(v, "type parameter name")
                     for v in type_vars])
        cs = tuple(constructors)
        names = set()
        for c in cs:
            if type(c) is not Constructor:
                raise WellFormedError(f"type {h.name_hint}: constructors must be Constructors, got {c!r:.80}")
            if c.belong_to is not h or c.type_vars != tvs:
                raise WellFormedError(f"type {h.name_hint}: constructor {c.name_hint} belongs to "
                                      f"{c.belong_to.name_hint}{list(c.type_vars)}, not to "
                                      f"{h.name_hint}{list(tvs)}")
            if c.name_hint in names:
                raise WellFormedError(f"type {h.name_hint}: constructor {c.name_hint} is defined twice")
            names.add(c.name_hint)
            for t in c.inputs:
                for v in type_vars_of(t):
                    if v.name_hint not in tvs:
                        raise WellFormedError(f"type {h.name_hint}: constructor {c.name_hint} uses the type "
                                              f"variable {v.name_hint}, which is not a parameter of the type")
        return build(cls, (h, tvs, cs))

    @classmethod
    def define(cls, name: str, type_vars: Sequence[str], constructors: Sequence[tuple[str, Sequence[Any]]]
               ) -> TypeData:
        """Build a definition from ``(constructor name, field types)`` pairs; a field type may be
        a callable taking (the TypeCall of the definition over its parameters, the parameters
        as TypeVars) for recursive fields: ``TypeData.define("List", ["A"], [("Cons", [lambda
        self, a: a[0], lambda self, a: self]), ("Nil", [])])``."""
        h = GlobalTypeVar(name)
        tvs = [TypeVar(v) for v in type_vars]
        me = TypeCall(h, tvs)
        cs = [Constructor(cn, [f(me, tvs) if callable(f) else f for f in fields], h, list(type_vars))
              for cn, fields in constructors]
        return cls(h, list(type_vars), cs)

    def constructor(self, name: str) -> Constructor:
        """The constructor named ``name``."""
        for c in self.constructors:
            if c.name_hint == name:
                return c
        raise WellFormedError(f"type {self.header.name_hint} has no constructor {name} (it has "
                              f"{[c.name_hint for c in self.constructors]})")

    def __repr__(self) -> str:
        return f"TypeData({self.header.name_hint!r}, {list(self.type_vars)!r}, " \
               f"{[c.name_hint for c in self.constructors]!r})"


def type_vars_of(t: Type) -> list[TypeVar]:
    """The type variables in ``t`` (unknowns included), in order of first appearance; iterative."""
    out: list[TypeVar] = []
    seen: set[Node] = set()
    stack: list[Node] = [t]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if type(x) is TypeVar:
            out.append(x)
            continue
        stack.extend(reversed(x.children()))
    return out


# -- patterns ---------------------------------------------------------------------------------------


class Pattern(Node):
    """Base class of the patterns of a :class:`Match` clause."""

    __slots__ = ()
    _mask = 0  # patterns carry no summary bits (as types)

    def __str__(self) -> str:
        from . import hooks

        return hooks.astext(self)


_WILDCARD: Any = None  # the singletons, set once their classes exist
_PVAR: Any = None


class PatternWildcard(Pattern, final=True):
    """``_``: matches anything, binds nothing."""

    __slots__ = ()
    _kind = b"xw"
    _code = 25
    _fields = ()

    def __new__(cls) -> PatternWildcard:
        return _WILDCARD if _WILDCARD is not None else build(cls, ())

    def __repr__(self) -> str:
        return "PatternWildcard()"


class PatternVar(Pattern, final=True):
    """``%x``: matches anything and binds it to the clause's next parameter (see the module
    docstring: the variable itself is a parameter of the clause's function)."""

    __slots__ = ()
    _kind = b"xp"
    _code = 26
    _fields = ()

    def __new__(cls) -> PatternVar:
        return _PVAR if _PVAR is not None else build(cls, ())

    def __repr__(self) -> str:
        return "PatternVar()"


_WILDCARD = PatternWildcard()  # the one wildcard (kept alive: a singleton)
_PVAR = PatternVar()


class PatternConstructor(Pattern, final=True):
    """``Cons(p1, p2)``: a value built by ``constructor`` whose fields match ``patterns``."""

    __slots__ = ("constructor", "patterns")
    _kind = b"xq"
    _code = 27
    _fields = (Child("constructor", Constructor), Children("patterns"))
    constructor: Constructor
    patterns: tuple[Pattern, ...]

    def __new__(cls, constructor: Constructor, patterns: Iterable[Pattern] = ()) -> PatternConstructor:
        if type(constructor) is not Constructor:
            raise WellFormedError(f"PatternConstructor needs a Constructor, got {constructor!r:.80}")
        ps = tuple(patterns)
        for p in ps:
            if not isinstance(p, Pattern):
                raise WellFormedError(f"PatternConstructor {constructor.name_hint}: sub-patterns must be "
                                      f"patterns, got {p!r:.80}")
        if len(ps) != len(constructor.inputs):
            raise WellFormedError(f"pattern {constructor.name_hint}(...) has {len(ps)} sub-pattern(s); the "
                                  f"constructor has {len(constructor.inputs)} field(s)")
        return build(cls, (constructor, ps))

    def __repr__(self) -> str:
        return f"PatternConstructor({self.constructor.name_hint}, {list(self.patterns)!r})"


class PatternTuple(Pattern, final=True):
    """``(p1, p2)``: a tuple whose fields match ``patterns``."""

    __slots__ = ("patterns",)
    _kind = b"xt"
    _code = 28
    _fields = (Children("patterns"),)
    patterns: tuple[Pattern, ...]

    def __new__(cls, patterns: Iterable[Pattern]) -> PatternTuple:
        ps = tuple(patterns)
        for p in ps:
            if not isinstance(p, Pattern):
                raise WellFormedError(f"PatternTuple: sub-patterns must be patterns, got {p!r:.80}")
        return build(cls, (ps,))

    def __repr__(self) -> str:
        return f"PatternTuple({list(self.patterns)!r})"


_var_counts: dict[Pattern, int] = {}  # pattern -> its number of variables (bounded memo)


def pattern_var_count(p: Pattern) -> int:
    """The number of :class:`PatternVar` s in ``p`` (iterative)."""
    n = 0
    stack: list[Node] = [p]
    while stack:
        x = stack.pop()
        if type(x) is PatternVar:
            n += 1
        else:
            stack.extend(x.children())
    return n


def walk_pattern(p: Pattern) -> list[Pattern]:
    """The patterns of ``p`` in pre-order (depth first, left to right): PatternVars in the order
    of the clause's parameters."""
    out: list[Pattern] = []
    stack: list[Pattern] = [p]
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(reversed(x.children()))  # type: ignore[arg-type]
    return out


# -- match ------------------------------------------------------------------------------------------


class Clause(Expr, final=True):
    """One clause of a :class:`Match`: ``lhs => rhs.body`` where ``rhs`` is a Function whose
    parameters are the pattern variables (see the module docstring).  Not a value on its own."""

    __slots__ = ("lhs", "rhs")
    _kind = b"xl"
    _code = 29
    _bit = F_MATCH
    _fields = (Child("lhs", Pattern), Child("rhs", Function))
    lhs: Pattern
    rhs: Function

    def __new__(cls, lhs: Pattern, rhs: Expr, params: Sequence[Var] | None = None) -> Clause:
        """``Clause(pattern, function)``, or ``Clause(pattern, body, params)`` (the function built
        from the pattern variables ``params`` and ``body``)."""
        if not isinstance(lhs, Pattern):
            raise WellFormedError(f"Clause pattern must be a Pattern, got {lhs!r:.80}")
        if params is not None:
            rhs = Function(list(params), as_expr(rhs))
        if type(rhs) is not Function:
            raise WellFormedError("Clause rhs must be a Function over the pattern variables (or give the "
                                  f"body and params=...), got {rhs!r:.80}")
        n = _var_counts.get(lhs)
        if n is None:
            n = pattern_var_count(lhs)
            if len(_var_counts) > 4096:
                _var_counts.clear()
            _var_counts[lhs] = n
        if len(rhs.params) != n:
            raise WellFormedError(f"a clause's pattern binds {n} variable(s), its function takes "
                                  f"{len(rhs.params)}")
        # build(cls, (lhs, rhs)), inlined (the key of the declaration: tag, lhs id, rhs id)
        return intern(cls, digest(b"xl" + lhs.id + rhs.id),
                      lambda m: type(m) is Clause and m.lhs is lhs and m.rhs is rhs,
                      {"lhs": lhs, "rhs": rhs}, F_MATCH | rhs._mask)

    @property
    def body(self) -> Expr:
        """The clause's right-hand side expression."""
        return self.rhs.body

    @property
    def vars(self) -> tuple[Var, ...]:
        """The pattern variables, in pattern order."""
        return self.rhs.params


class Match(Expr, final=True):
    """``match (data) { clauses }``; ``complete=False`` is ``match?`` (a value no clause matches
    is a run-time error either way; ``complete`` only says whether the clauses claim to cover
    every value)."""

    __slots__ = ("clauses", "complete", "data")
    _kind = b"xm"
    _code = 30
    _bit = F_MATCH
    _fields = (Child("data"), Children("clauses", Clause), Scalar("complete", bool, key=_bool_key))
    _key_order = ("complete", "data", "clauses")
    data: Expr
    clauses: tuple[Clause, ...]
    complete: bool

    def __new__(cls, data: Expr, clauses: Iterable[Clause], complete: bool = True) -> Match:
        d = as_expr(data)
        cs = tuple(clauses)
        for c in cs:
            if type(c) is not Clause:
                raise WellFormedError(f"Match clauses must be Clauses, got {c!r:.80}")
        if type(complete) is not bool:
            raise WellFormedError(f"Match complete must be a bool, got {complete!r:.80}")
        mask = F_MATCH | d._mask
        for c in cs:
            mask |= c._mask
        # build(cls, (d, cs, complete)), inlined (the key of the declaration: tag, complete, data, clauses)
        return intern(cls, digest(b"".join([b"xm1" if complete else b"xm0", d.id, *[c.id for c in cs]])),
                      lambda m: (type(m) is Match and m.data is d and m.clauses == cs
                                 and m.complete is complete),
                      {"data": d, "clauses": cs, "complete": complete}, mask)


# -- references ------------------------------------------------------------------------------------


def _uid(uid: bytes | None) -> bytes:
    if uid is None:
        return fresh_uid()
    if type(uid) is not bytes or len(uid) != 16:
        raise WellFormedError("a reference operation's uid must be 16 bytes")
    return uid


class RefCreate(Expr, final=True):
    """``ref(value)``: a new mutable cell holding ``value`` (of type ``ref(T)``).

    Reference operations have effects, so each one is a node of its own: it carries a unique
    ``uid`` (drawn like a variable's; the formats keep it), and two ``ref(%x)`` are two cells,
    never one hash-consed node.  Alpha-equality ignores the uid (``_identity``)."""

    __slots__ = ("uid", "value")
    _kind = b"xR"
    _code = 31
    _bit = F_REF
    _fields = (Child("value"), Scalar("uid", bytes, key=raw_key))
    _identity = ("uid",)
    value: Expr
    uid: bytes

    def __new__(cls, value: Expr, uid: bytes | None = None) -> RefCreate:
        return build(cls, (as_expr(value), _uid(uid)))


class RefRead(Expr, final=True):
    """``ref_read(ref)``: the value in the cell (each read a node of its own, see RefCreate)."""

    __slots__ = ("ref", "uid")
    _kind = b"xD"
    _code = 32
    _bit = F_REF
    _fields = (Child("ref"), Scalar("uid", bytes, key=raw_key))
    _identity = ("uid",)
    ref: Expr
    uid: bytes

    def __new__(cls, ref: Expr, uid: bytes | None = None) -> RefRead:
        return build(cls, (as_expr(ref), _uid(uid)))


class RefWrite(Expr, final=True):
    """``ref_write(ref, value)``: store ``value`` in the cell; evaluates to ``()`` (each write a
    node of its own, see RefCreate)."""

    __slots__ = ("ref", "uid", "value")
    _kind = b"xW"
    _code = 33
    _bit = F_REF
    _fields = (Child("ref"), Child("value"), Scalar("uid", bytes, key=raw_key))
    _identity = ("uid",)
    ref: Expr
    value: Expr
    uid: bytes

    def __new__(cls, ref: Expr, value: Expr, uid: bytes | None = None) -> RefWrite:
        return build(cls, (as_expr(ref), as_expr(value), _uid(uid)))
