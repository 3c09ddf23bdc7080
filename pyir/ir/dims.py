"""Symbolic dimensions: the dimension values and their canonical arithmetic.

A dimension is one of

* an ``int`` in ``[0, 2**63)`` (a static dimension, as in today's shapes);
* a named symbol, ``sym("n")`` (a :class:`Sym`);
* an expression over symbols (``n * 3 + 1``, ``(n + 1) // 2``, ``n % 4``);
* unknown, :data:`Any` (printed ``?``).

The symbolic ones are hash-consed nodes like every other pyir node, and every
expression is kept in one canonical form, so equal expressions are the same object:

>>> from pyir.ir.dims import sym, Any, dim_str
>>> n = sym("n")
>>> n * 3 is 3 * n, (n + 1) * 2 is 2 * n + 2, n + 0 is n, n - n
(True, True, True, 0)
>>> (2 * n + 4) // 2 is n + 2, n // 1 is n, (n * 4) % 2, n * 2 + Any
(True, True, 0, ?)
>>> print((n + 1) // 2, (n - 1) // 2, (n * 6 + 3) % 4, sep="  |  ")
(n + 1) // 2  |  (n + 1) // 2 - 1  |  (n * 2 + 3) % 4

Canonical form
    An expression is a :class:`DimPoly`: an integer constant plus a sum of
    integer-coefficient monomials over *atoms*.  An atom is a :class:`Sym`, a
    :class:`DimFloorDiv` ``x // k`` or a :class:`DimMod` ``x % k`` with a constant
    ``k >= 2``.  Terms are sorted (higher degree first, then by atom: symbols by
    name, other atoms by content id), coefficients are nonzero, and a result that is
    a constant is a plain ``int``, a result that is one atom is the atom itself.
    The argument ``x`` of an atom is itself reduced: every coefficient of ``x`` lies
    in ``[1, k)`` and its constant in ``[0, k)`` (the multiples of ``k`` move out:
    ``(2n + 5) // 2 = n + 2 + 1 // 2 = n + 2``), common factors with ``k`` are
    cancelled (``(2n + 2) // 4 = (n + 1) // 2``), nested divisions merge
    (``(n // 2 + 1) // 3 = (n + 2) // 6``), ``(x % a) % b = x % b`` when ``b``
    divides ``a``, and an atom whose value is provably constant (from the bounds of
    its argument) is that constant.  Every rule holds for all integers with floor
    division, so a canonical form evaluates exactly like the expression it came from.
    Polynomial identities are recognized (any two ways of writing the same
    polynomial over the same atoms give one object); identities between atoms such
    as ``(n // 2) * 2 + n % 2 == n`` are not.

Semantics
    Symbols range over dimensions (ints >= 0).  The arithmetic is integer arithmetic
    with Python's floor ``//`` and ``%``; an expression may take negative values for
    some bindings (``n - 5``), but a result that is a negative constant, or provably
    negative for every binding (``0 - n - 1``), or provably ``>= 2**63``, raises
    :class:`~pyir.errors.WellFormedError`, as does a literal ``0`` divisor.  Operands
    must be dimensions: bools, floats, negative ints and ints ``>= 2**63`` are
    rejected.  Anything combined with :data:`Any` is ``Any`` (even ``Any * 0``).
    Division or modulo by a symbolic divisor is exact where it can be (``(n * m) // m
    is n``, ``x // x == 1``, ``(n * m) % m == 0``: exact wherever the divisor is not 0,
    which is the only place the expression is defined); otherwise it is ``Any`` --
    never a wrong value.

Limits
    Coefficients and constants of an expression are in ``(-2**63, 2**63)``, a
    monomial has degree at most :data:`MAX_DEGREE` and an expression at most
    :data:`MAX_TERMS` terms (every format stores them as int64); beyond that an
    operation raises WellFormedError.  Nothing recurses in Python with the size or
    the nesting depth of an expression.  Build a large sum with :func:`dim_sum` (one
    pass), not with repeated ``+`` (each step copies the sum).

This module imports only :mod:`pyir.errors` and :mod:`pyir.ir.node`.
"""

from __future__ import annotations

import json
import operator
import typing as _t
from collections.abc import Iterable, Mapping
from math import gcd

from ..errors import TypeCheckError, WellFormedError
from .node import (
    MAX_INDEX,
    Child,
    Node,
    Scalar,
    _get,
    check_text,
    digest,
    gc_paused,
    index_key,
    intern,
    safe_repr,
    short_int,
    text_key,
)

__all__ = [
    "Dim", "Sym", "AnyDim", "DimPoly", "DimFloorDiv", "DimMod", "Any", "DimLike",
    "sym", "as_dim", "dim_add", "dim_sub", "dim_mul", "dim_floordiv", "dim_mod", "dim_sum",
    "dim_prod", "is_static", "free_syms", "substitute", "dims_equal", "dim_bounds", "broadcast",
    "dim_str", "MAX_DEGREE", "MAX_TERMS",
]

MAX_DEGREE = 63
"""Largest degree of a monomial (``n ** 64`` exceeds ``2**63`` unless ``n <= 1``)."""
MAX_TERMS = 1 << 20
"""Largest number of terms of an expression."""

_BOUND_CAP = 1 << 512  # bounds beyond this are widened to unbounded (sound, and cheap)
_MSG_LIMIT = 80  # characters of a dimension quoted in an error message
_RANGE = "dimensions are ints in [0, 2**63)"


class Dim(Node):
    """Base of the symbolic dimension kinds (:class:`Sym`, :class:`DimPoly`,
    :class:`DimFloorDiv`, :class:`DimMod`, :class:`AnyDim`).

    The operators ``+ - * // %`` take dimensions (ints, dims, :data:`Any`) on either
    side and return the canonical result (see the module docstring).
    """

    __slots__ = ()

    def __add__(self, other: DimLike) -> DimLike:
        return dim_add(self, other)

    def __radd__(self, other: DimLike) -> DimLike:
        return dim_add(other, self)

    def __sub__(self, other: DimLike) -> DimLike:
        return dim_sub(self, other)

    def __rsub__(self, other: DimLike) -> DimLike:
        return dim_sub(other, self)

    def __mul__(self, other: DimLike) -> DimLike:
        return dim_mul(self, other)

    def __rmul__(self, other: DimLike) -> DimLike:
        return dim_mul(other, self)

    def __floordiv__(self, other: DimLike) -> DimLike:
        return dim_floordiv(self, other)

    def __rfloordiv__(self, other: DimLike) -> DimLike:
        return dim_floordiv(other, self)

    def __mod__(self, other: DimLike) -> DimLike:
        return dim_mod(self, other)

    def __rmod__(self, other: DimLike) -> DimLike:
        return dim_mod(other, self)

    def __str__(self) -> str:
        return dim_str(self)

    def __repr__(self) -> str:
        return dim_str(self)


DimLike: _t.TypeAlias = int | Dim
"""A dimension: an int in ``[0, 2**63)`` or a :class:`Dim` (:data:`Any` included)."""


class Sym(Dim, final=True):
    """A named symbolic dimension; symbols are identified by name.

    >>> Sym("batch") is sym("batch"), Sym("batch").name
    (True, 'batch')
    """

    __slots__ = ("_key", "name")
    _kind = b"ds"
    _fields = (Scalar("name", str, key=text_key),)
    _derived = ("_key",)
    name: str  #: an identifier (``str.isidentifier()``), valid Unicode
    _key: tuple[int, str | bytes]  # the sort key of atoms: (0, name)

    def __new__(cls, name: str) -> Sym:
        if type(name) is not str:
            raise WellFormedError(f"a symbol's name must be a str, got {safe_repr(name)} of type "
                                  f"{type(name).__name__}")
        if not name.isascii():
            check_text(name, "symbol name")
        if not name.isidentifier():
            raise WellFormedError(f"a symbol's name must be an identifier (letters, digits and _, "
                                  f"not starting with a digit), got {name[:40]!r}")
        key = digest(b"ds" + name.encode())
        r = _get(key)
        if r is not None:
            n = r()
            if n is not None and type(n) is Sym and n.name == name:
                return n
        return intern(Sym, key, lambda n: type(n) is Sym and n.name == name,
                      {"name": name, "_key": (0, name)}, 0)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return Sym, (self.name,)


def sym(name: str) -> Sym:
    """The symbolic dimension named ``name`` (an identifier).

    >>> n = sym("n")
    >>> n is sym("n"), str(n * 3 + 1)
    (True, 'n * 3 + 1')
    """
    return Sym(name)


class AnyDim(Dim, final=True):
    """The unknown dimension; there is one instance, :data:`Any`, printed ``?``."""

    __slots__ = ()
    _kind = b"d?"
    _fields = ()

    def __new__(cls) -> AnyDim:
        return intern(AnyDim, digest(b"d?"), lambda n: type(n) is AnyDim, {}, 0)

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return AnyDim, ()


Any: AnyDim = AnyDim()
"""The unknown dimension ``?`` (held here, so it is never freed)."""
_ANY = Any


class DimFloorDiv(Dim, final=True):
    """The atom ``arg // divisor``: floor division by a constant ``divisor >= 2``.

    ``DimFloorDiv(x, k)`` is ``dim_floordiv(x, k)``: it returns the canonical result,
    which is a DimFloorDiv only when nothing simplifies.
    """

    __slots__ = ("_hi", "_lo", "arg", "divisor")
    _kind = b"dq"
    _fields = (Child("arg"), Scalar("divisor", int, key=index_key))
    _key_order = ("divisor", "arg")
    _derived = ("_hi", "_lo")
    arg: Dim  #: the canonical, reduced dividend (coefficients in [1, divisor), constant in [0, divisor))
    divisor: int  #: a constant >= 2
    _lo: int  # bounds of the value (_hi None: unbounded)
    _hi: int | None

    def __new__(cls, arg: DimLike, divisor: DimLike) -> DimLike:  # type: ignore[misc]
        return dim_floordiv(arg, divisor)

    @property
    def _key(self) -> tuple[int, str | bytes]:
        return (1, self.id)

    def __reduce__(self) -> tuple[type, tuple[Dim, int]]:
        return DimFloorDiv, (self.arg, self.divisor)


class DimMod(Dim, final=True):
    """The atom ``arg % divisor``: the (non-negative) remainder by a constant ``divisor >= 2``.

    ``DimMod(x, k)`` is ``dim_mod(x, k)``: it returns the canonical result.
    """

    __slots__ = ("_hi", "_lo", "arg", "divisor")
    _kind = b"dm"
    _fields = (Child("arg"), Scalar("divisor", int, key=index_key))
    _key_order = ("divisor", "arg")
    _derived = ("_hi", "_lo")
    arg: Dim  #: the canonical, reduced argument (as for DimFloorDiv)
    divisor: int  #: a constant >= 2
    _lo: int
    _hi: int | None

    def __new__(cls, arg: DimLike, divisor: DimLike) -> DimLike:  # type: ignore[misc]
        return dim_mod(arg, divisor)

    @property
    def _key(self) -> tuple[int, str | bytes]:
        return (1, self.id)

    def __reduce__(self) -> tuple[type, tuple[Dim, int]]:
        return DimMod, (self.arg, self.divisor)


def _terms_key(terms: _t.Any) -> bytes:
    """The key bytes of a DimPoly's terms: per term, the monomial's length, its atoms' ids and
    the coefficient (``2:<id><id>3;``)."""
    return b"".join([b"%d:%s%d;" % (len(m), b"".join([x.id for x in m]), a) for m, a in terms])


_Atom: _t.TypeAlias = Sym | DimFloorDiv | DimMod
_Mono: _t.TypeAlias = tuple[_Atom, ...]  # atoms sorted by _key, repeated for powers: n * n * m is (m, n, n)
_Terms: _t.TypeAlias = tuple[tuple[_Mono, int], ...]


class DimPoly(Dim, final=True):
    """A canonical expression: ``const + sum(coef * product(monomial))``.

    ``DimPoly(const, terms)``, with ``terms`` pairs ``(factors, coef)`` (``factors`` an
    iterable of dimensions), builds that sum in canonical form: it is the constructor
    a loader calls, and it returns an int, an atom or a DimPoly.

    >>> n, m = sym("n"), sym("m")
    >>> DimPoly(1, [((n,), 3)]) is n * 3 + 1, DimPoly(0, [((n, m), 1), ((m, n), -1)])
    (True, 0)
    """

    __slots__ = ("_hi", "_lo", "const", "terms")
    _kind = b"dp"
    _fields = (Scalar("const", int, key=lambda c: b"%d;" % c), Scalar("terms", tuple, key=_terms_key))
    _derived = ("_hi", "_lo")
    const: int  #: the constant term, in (-2**63, 2**63)
    terms: _Terms  #: (monomial, coefficient) pairs, sorted, coefficients nonzero in (-2**63, 2**63)
    _lo: int | None  # bounds of the value (None: unbounded)
    _hi: int | None

    def __new__(cls, const: int,  # type: ignore[misc]
                terms: Iterable[tuple[Iterable[DimLike], int]]) -> DimLike:
        c = _int_field(const, "DimPoly constant")
        acc_c = c
        acc: dict[_Mono, int] = {}
        anyd = False
        try:
            items = list(terms)
        except TypeError:
            raise WellFormedError(f"DimPoly terms must be an iterable of (factors, coef) pairs, "
                                  f"got {safe_repr(terms)}") from None
        for item in items:
            if type(item) not in (tuple, list) or len(item) != 2:
                raise WellFormedError(f"a DimPoly term must be a (factors, coef) pair, got {safe_repr(item)}")
            factors, coef = item
            p: _Z = _int_field(coef, "DimPoly coefficient")
            try:
                fs = list(factors)
            except TypeError:
                raise WellFormedError(f"DimPoly factors must be an iterable of dimensions, got "
                                      f"{safe_repr(factors)}") from None
            for f in fs:
                p = _mul(p, as_dim(f, "DimPoly factor"))
            if p is _ANY:
                anyd = True
            else:
                acc_c = _accumulate(acc, acc_c, p)
        if anyd:
            return _ANY
        return _result(_build(acc_c, acc), "DimPoly")

    # Hand-written: the atoms sit inside the terms (each distinct atom once).
    def children(self) -> tuple[Node, ...]:
        seen: dict[int, Node] = {}
        for m, _ in self.terms:
            for a in m:
                seen.setdefault(id(a), a)
        return tuple(seen.values())

    def replace_children(self, new: Iterable[Node]) -> _t.Any:
        """The canonical sum with each atom replaced by the new child at its position (the
        result may be an int, an atom or another DimPoly)."""
        new = tuple(new)
        old = self.children()
        if len(new) != len(old):
            raise WellFormedError(f"DimPoly.replace_children: {len(new)} children given, the node has "
                                  f"{len(old)}")
        if all(a is b for a, b in zip(new, old)):
            return self
        sub: dict[int, _t.Any] = {id(a): b for a, b in zip(old, new)}
        return DimPoly(self.const, [(tuple(sub[id(a)] for a in m), c) for m, c in self.terms])

    def __reduce__(self) -> tuple[type, tuple[int, _Terms]]:
        return DimPoly, (self.const, self.terms)


_Z: _t.TypeAlias = int | Dim  # internal values: any int (intermediate results may be negative or large)


def _int_field(v: object, where: str) -> int:
    if type(v) is not int:
        if isinstance(v, bool) or not hasattr(type(v), "__index__"):
            raise WellFormedError(f"{where} must be an int, got {safe_repr(v)} of type {type(v).__name__}")
        v = operator.index(_t.cast(_t.SupportsIndex, v))
    if not -MAX_INDEX <= v <= MAX_INDEX:
        raise WellFormedError(f"{where} out of range (|value| must be < 2**63), got {short_int(v)}")
    return v


# -- validation ------------------------------------------------------------------------


def as_dim(d: object, where: str = "dimension") -> DimLike:
    """``d`` as a dimension: an int in ``[0, 2**63)`` (numpy ints become ints) or a Dim.

    Anything else (a bool, a float, a negative int, ``2**63``, a str, ...) raises
    WellFormedError naming ``where``.
    """
    if type(d) is int:
        if 0 <= d <= MAX_INDEX:
            return d
        raise WellFormedError(f"{where}: {short_int(d)} is not a dimension ({_RANGE})")
    if isinstance(d, Dim):
        return d
    if not isinstance(d, bool) and hasattr(type(d), "__index__"):
        try:
            v = operator.index(_t.cast(_t.SupportsIndex, d))
        except TypeError:
            pass
        else:
            if not isinstance(v, bool):
                return as_dim(int(v), where)
    raise WellFormedError(f"{where}: {safe_repr(d)} of type {type(d).__name__} is not a dimension "
                          f"({_RANGE}, symbols sym('n'), expressions over them, or Any)")


def _short(d: object) -> str:
    """A dimension's text for an error message (cut to _MSG_LIMIT characters)."""
    if type(d) is int:
        return short_int(d)
    if isinstance(d, Dim):
        return dim_str(d, _MSG_LIMIT)
    return safe_repr(d)


def _result(r: _Z, what: str | tuple[object, str, object]) -> DimLike:
    """Check that the result of a public operation is a dimension (see the module docstring);
    ``what`` names the operation (a ``(a, op, b)`` triple is formatted only on error)."""
    if isinstance(r, int):
        if 0 <= r <= MAX_INDEX:
            return r
        raise WellFormedError(f"dimension arithmetic: {_what(what)} = {short_int(r)} is not a dimension "
                              f"({_RANGE})")
    if type(r) is Sym:
        return r
    lo, hi = _bounds(r)
    if hi is not None and hi < 0:
        raise WellFormedError(f"dimension arithmetic: {_what(what)} = {_short(r)} is negative for every "
                              f"value of its symbols ({_RANGE})")
    if lo is not None and lo > MAX_INDEX:
        raise WellFormedError(f"dimension arithmetic: {_what(what)} = {_short(r)} is at least 2**63 for "
                              f"every value of its symbols ({_RANGE})")
    return r


def _what(what: str | tuple[object, str, object]) -> str:
    if isinstance(what, str):
        return what
    a, op, b = what
    sa, sb = _short(a), _short(b)
    return f"{f'({sa})' if isinstance(a, DimPoly) else sa} {op} {f'({sb})' if isinstance(b, DimPoly) else sb}"


# -- canonical construction ------------------------------------------------------------------


def _akey(a: _Atom) -> tuple[int, str | bytes]:
    return a._key


def _term_key(item: tuple[_Mono, int]) -> tuple[int, tuple[tuple[int, str | bytes], ...]]:
    m = item[0]
    if len(m) == 1:
        return (-1, (m[0]._key,))
    return (-len(m), tuple(map(_akey, m)))


def _bounds(d: _Z) -> tuple[int | None, int | None]:
    """Bounds ``(lo, hi)`` of a value over every binding of its symbols to dimensions
    (None: unbounded).  Every atom is >= 0 (a symbol, a remainder, or the quotient of a
    reduced -- hence non-negative -- argument), which makes the bounds of a sum simple."""
    if isinstance(d, int):
        return d, d
    if isinstance(d, (DimPoly, DimFloorDiv, DimMod)):
        return d._lo, d._hi
    return 0, None  # a symbol (or Any)


def _poly_bounds(c: int, terms: Iterable[tuple[_Mono, int]]) -> tuple[int | None, int | None]:
    lo: int | None = c
    hi: int | None = c
    for m, a in terms:
        mlo = 1
        mhi: int | None = 1
        for atom in m:
            if type(atom) is Sym:
                mhi = None
                mlo = 0
                continue
            ahi = atom._hi  # type: ignore[union-attr]  # a DimFloorDiv or DimMod
            mlo *= atom._lo  # type: ignore[union-attr]  # atoms are >= 0: a finite int
            if mhi is not None:
                mhi = None if ahi is None else mhi * ahi
        if mlo > _BOUND_CAP:
            mlo = _BOUND_CAP
        if mhi is not None and mhi > _BOUND_CAP:
            mhi = None
        if a > 0:
            if lo is not None:
                lo += a * mlo
            if hi is not None:
                hi = None if mhi is None else hi + a * mhi
        else:
            if lo is not None:
                lo = None if mhi is None else lo + a * mhi
            if hi is not None:
                hi += a * mlo
        if lo is None and hi is None:
            break
    return lo, hi


def _poly(c: int, terms: _Terms) -> _Z:
    """The canonical node for ``c + terms`` (terms sorted, coefficients nonzero, nonempty)."""
    if len(terms) == 1 and len(terms[0][0]) == 1:  # the common case: c + a * atom
        (m, a), = terms
        if a == 1 and c == 0:
            return m[0]
        key = digest(b"dp%d;1:%s%d;" % (c, m[0].id, a))
    elif len(terms) == 2 and len(terms[0][0]) == 1 and len(terms[1][0]) == 1:  # c + a * x + b * y
        (m, a), (m1, a1) = terms
        key = digest(b"dp%d;1:%s%d;1:%s%d;" % (c, m[0].id, a, m1[0].id, a1))
    else:
        key = digest(b"dp%d;%s" % (c, b"".join([
            b"1:%s%d;" % (m[0].id, a) if len(m) == 1 else
            b"%d:%s%d;" % (len(m), b"".join([x.id for x in m]), a) for m, a in terms])))
    r = _get(key)
    if r is not None:
        n = r()
        if n is not None and type(n) is DimPoly and n.const == c and n.terms == terms:
            return n
    if not -MAX_INDEX <= c <= MAX_INDEX:
        raise WellFormedError(f"dimension expression too large: constant {short_int(c)} out of range "
                              "(|value| must be < 2**63)")
    if len(terms) > MAX_TERMS:
        raise WellFormedError(f"dimension expression too large: {len(terms)} terms (at most {MAX_TERMS})")
    for m, a in terms:
        if not -MAX_INDEX <= a <= MAX_INDEX:
            raise WellFormedError(f"dimension expression too large: coefficient {short_int(a)} out of "
                                  "range (|value| must be < 2**63)")
        if len(m) > MAX_DEGREE:
            raise WellFormedError(f"dimension expression too large: a monomial of degree {len(m)} "
                                  f"(at most {MAX_DEGREE})")
    lo, hi = _poly_bounds(c, terms)
    return intern(DimPoly, key,
                  lambda n: type(n) is DimPoly and n.const == c and n.terms == terms,
                  {"const": c, "terms": terms, "_lo": lo, "_hi": hi}, 0)


def _build(c: int, acc: dict[_Mono, int]) -> _Z:
    """The canonical value of ``c + sum(coef * monomial)`` from an unsorted dict."""
    items = [(m, a) for m, a in acc.items() if a]
    if not items:
        return c
    if len(items) > 1:
        items.sort(key=_term_key)
    return _poly(c, tuple(items))


def _lin(x: _Z) -> tuple[int, dict[_Mono, int]]:
    """``x`` (not Any) as a constant and a dict monomial -> coefficient."""
    if isinstance(x, int):
        return x, {}
    if isinstance(x, DimPoly):
        return x.const, dict(x.terms)
    return 0, {(_atom(x),): 1}


def _atom(x: Dim) -> _Atom:
    """``x`` as an atom (it is one: not a DimPoly, not Any)."""
    return x  # type: ignore[return-value]


def _accumulate(acc: dict[_Mono, int], c: int, x: _Z) -> int:
    """Add ``x`` (not Any) into ``acc``; returns the new constant."""
    if isinstance(x, int):
        return c + x
    if isinstance(x, DimPoly):
        get = acc.get
        for m, a in x.terms:
            acc[m] = get(m, 0) + a
        return c + x.const
    m1 = (_atom(x),)
    acc[m1] = acc.get(m1, 0) + 1
    return c


def _atom_mk(cls: type[DimFloorDiv] | type[DimMod], arg: Dim, k: int) -> Dim:
    """The interned atom ``arg // k`` or ``arg % k`` (arg canonical and reduced)."""
    tag = b"dq" if cls is DimFloorDiv else b"dm"
    key = digest(b"%s%d:%s" % (tag, k, arg.id))
    r = _get(key)
    if r is not None:
        n = r()
        if n is not None and type(n) is cls and n.arg is arg and n.divisor == k:
            return n
    if cls is DimFloorDiv:
        alo, ahi = _bounds(arg)
        lo = (alo or 0) // k  # arg is reduced: alo is a finite int >= 0
        hi = None if ahi is None else ahi // k
    else:
        lo, hi = 0, k - 1
    return intern(cls, key,
                  lambda n: type(n) is cls and n.arg is arg and n.divisor == k,
                  {"arg": arg, "divisor": k, "_lo": lo, "_hi": hi}, 0)


# -- the arithmetic on Z (internal: no range checks on ints) -----------------------------------


def _shift(x: Dim, k: int) -> _Z:
    """``x + k`` (x not Any)."""
    if k == 0:
        return x
    if isinstance(x, DimPoly):
        return _poly(x.const + k, x.terms)
    return _poly(k, (((_atom(x),), 1),))


def _scale(x: _Z, k: int) -> _Z:
    """``x * k`` for an int ``k`` (the order of terms does not depend on coefficients)."""
    if k == 1 or x is _ANY:
        return x
    if k == 0:
        return 0
    if isinstance(x, int):
        return x * k
    if isinstance(x, DimPoly):
        return _poly(x.const * k, tuple([(m, a * k) for m, a in x.terms]))
    return _poly(0, (((_atom(x),), k),))


def _add(a: _Z, b: _Z) -> _Z:
    if a is _ANY or b is _ANY:
        return _ANY
    if isinstance(b, int):
        return a + b if isinstance(a, int) else _shift(a, b)
    if isinstance(a, int):
        return _shift(b, a)
    if type(a) is not DimPoly and type(b) is not DimPoly:  # two atoms (the common a + n)
        if a is b:
            return _poly(0, (((_atom(a),), 2),))
        x, y = _atom(a), _atom(b)
        if y._key < x._key:
            x, y = y, x
        return _poly(0, (((x,), 1), ((y,), 1)))
    c, acc = _lin(a)
    c = _accumulate(acc, c, b)
    return _build(c, acc)


def _sub(a: _Z, b: _Z) -> _Z:
    return _add(a, _scale(b, -1))


def _mono_mul(m1: _Mono, m2: _Mono) -> _Mono:
    if len(m1) == 1 and len(m2) == 1:
        x, y = m1[0], m2[0]
        return (x, y) if x is y or _akey(x) < _akey(y) else (y, x)
    return tuple(sorted(m1 + m2, key=_akey))


def _mul(a: _Z, b: _Z) -> _Z:
    if a is _ANY or b is _ANY:
        return _ANY
    if isinstance(b, int):
        return _scale(a, b)
    if isinstance(a, int):
        return _scale(b, a)
    c1, t1 = _lin(a)
    c2, t2 = _lin(b)
    n1, n2 = len(t1) + (c1 != 0), len(t2) + (c2 != 0)
    if n1 * n2 > MAX_TERMS:
        raise WellFormedError(f"dimension expression too large: a product of {n1} by {n2} terms "
                              f"(at most {MAX_TERMS} terms)")
    acc: dict[_Mono, int] = {}
    get = acc.get
    for m1, a1 in t1.items():
        for m2, a2 in t2.items():
            m = _mono_mul(m1, m2)
            acc[m] = get(m, 0) + a1 * a2
    if c1:
        for m2, a2 in t2.items():
            acc[m2] = get(m2, 0) + c1 * a2
    if c2:
        for m1, a1 in t1.items():
            acc[m1] = get(m1, 0) + c2 * a1
    return _build(c1 * c2, acc)


def _reduce(x: _Z, k: int) -> tuple[int, dict[_Mono, int], int, dict[_Mono, int]]:
    """Split ``x = k * (qc + Q) + (rc + R)``: R's coefficients in [1, k), rc in [0, k)."""
    c, terms = _lin(x)
    q: dict[_Mono, int] = {}
    r: dict[_Mono, int] = {}
    for m, a in terms.items():
        qa, ra = divmod(a, k)
        if qa:
            q[m] = qa
        if ra:
            r[m] = ra
    qc, rc = divmod(c, k)
    return qc, q, rc, r


def _cancel(k: int, rc: int, r: dict[_Mono, int]) -> tuple[int, int, int, dict[_Mono, int]]:
    """Divide ``k``, ``rc`` and ``r`` by their common factor g; returns (g, k, rc, r)."""
    g = gcd(k, rc, *r.values())
    if g > 1:
        return g, k // g, rc // g, {m: a // g for m, a in r.items()}
    return 1, k, rc, r


def _reduced_bounds(rd: _Z) -> tuple[int, int | None]:
    """Bounds of a reduced dividend (positive coefficients over atoms >= 0: lo is finite)."""
    lo, hi = _bounds(rd)
    return lo or 0, hi


def _floordiv(x: _Z, k: int) -> _Z:
    """``x // k`` for an int ``k >= 1`` (floor division, exact over the integers)."""
    if x is _ANY:
        return _ANY
    if isinstance(x, int):
        return x // k
    if k == 1:
        return x
    if type(x) is DimPoly and 0 <= x.const < k:  # fast path: a dividend already reduced
        ts = x.terms
        coefs = [a for _, a in ts]
        if (min(coefs) > 0 and max(coefs) < k and gcd(k, x.const, *coefs) == 1
                and not (len(ts) == 1 and len(ts[0][0]) == 1 and type(ts[0][0][0]) is DimFloorDiv)):
            lo = x._lo or 0  # nothing moves out, nothing cancels, nothing merges: x // k is an atom
            hi = x._hi
            if hi is not None and lo // k == hi // k:
                return lo // k
            return _atom_mk(DimFloorDiv, x, k)
    c, terms = _lin(x)
    return _t.cast(_Z, _floordiv_lin(c, terms, k, x))  # not lazy: never a _Pending


def _floordiv_lin(c: int, terms: dict[_Mono, int], k: int, node: Dim | None = None,
                  pend: _Pending | None = None, lazy: bool = False) -> _Z | _Pending:
    """``(c + terms) // k`` for an int ``k >= 2`` and non-constant ``terms`` (``node``: that
    value's node, when there is one).

    The dividend stays a constant and a dict while nested divisions merge: only the final
    reduced dividend and its atom are interned (no node for the intermediate values).
    With ``pend``, ``terms`` holds the key ``()`` for that not yet interned atom (see
    :class:`_Pending`); with ``lazy``, the result may be a :class:`_Pending` (the final atom
    is left un-interned when nothing else could already hold it).
    """
    acc_c = 0
    acc: dict[_Mono, int] = {}
    while True:
        if pend is not None:
            merged = _merge_pending(c, terms, k, pend, acc)
            if merged is None:  # the general path, with the pending atom as a node
                a = terms.pop(())
                m1 = (pend.force(),)
                terms[m1] = terms.get(m1, 0) + a
                if not terms[m1]:
                    del terms[m1]
                    if not terms:
                        return _build(acc_c + c // k, acc)
                pend = None
            else:
                qc, done, c, terms, k = merged
                acc_c += qc
                if done:  # a constant quotient
                    return _build(acc_c + c, acc)
                pend = None
                node = None
                continue
        q: dict[_Mono, int] = {}
        r: dict[_Mono, int] = {}
        for m, a in terms.items():
            qa, ra = divmod(a, k)
            if qa:
                q[m] = qa
            if ra:
                r[m] = ra
        qc, rc = divmod(c, k)
        acc_c += qc
        if q:
            get = acc.get
            for m, a in q.items():
                acc[m] = get(m, 0) + a
        if not r:  # x = k * Q + rc with 0 <= rc < k
            return _build(acc_c, acc)
        g, k, rc, r = _cancel(k, rc, r)  # floor(g*R / (g*k)) = floor(R / k)
        if len(r) == 1:
            (m0, a0), = r.items()
            one = a0 == 1 and len(m0) == 1
        else:
            one = False
        if one and rc == 0:  # R is one atom
            lo, hi = _reduced_bounds(m0[0])
        elif node is not None and g == 1 and not q and qc == 0:  # R is x: its bounds are stored
            lo0, hi = _bounds(node)
            lo = lo0 or 0
        else:
            lo0, hi = _poly_bounds(rc, r.items())  # the bounds of _build(rc, r), without the node
            lo = lo0 or 0
        if hi is not None and lo // k == hi // k:  # a constant quotient
            return _build(acc_c + lo // k, acc)
        # (y // a + c) // k = (y + a * c) // (a * k)
        if one:
            inner = m0[0]
            if isinstance(inner, DimFloorDiv) and inner.divisor * k <= MAX_INDEX:
                c, terms = _lin(inner.arg)
                c += inner.divisor * rc
                k = inner.divisor * k
                node = None
                continue
        if lazy and (not acc or not any(len(m) == 1 and type(m[0]) is DimFloorDiv and m[0].divisor == k
                                        for m in acc)):  # no term of the quotient can be the new atom
            return _Pending(acc_c, acc, rc, r, k, lo, hi)
        if node is not None and g == 1 and not q and qc == 0:  # nothing moved out: R is x
            rd: Dim = node
        else:
            rd = _as_dim_node(_build(rc, r))
        atom = _atom_mk(DimFloorDiv, rd, k)
        if not acc and acc_c == 0:  # the quotient is the atom itself
            return atom
        acc_c = _accumulate(acc, acc_c, atom)
        return _build(acc_c, acc)


class _Pending:
    """A value of :func:`_substitute` not interned yet: ``c + acc + (rc + r) // k``, where
    ``(rc + r) // k`` is the canonical atom :func:`_floordiv_lin` would make (``r`` the
    reduced dividend's terms, ``lo``/``hi`` its bounds; the atom is not constant).  A nest of
    divisions that keeps merging (``substitute`` of a nest of ``(x + m) // 2``) passes its
    values on this way, with no node for the intermediate ones; :meth:`force` interns exactly
    the nodes the eager path builds."""

    __slots__ = ("acc", "c", "hi", "k", "lo", "node", "r", "rc")

    def __init__(self, c: int, acc: dict[_Mono, int], rc: int, r: dict[_Mono, int], k: int,
                 lo: int, hi: int | None) -> None:
        self.c, self.acc, self.rc, self.r, self.k, self.lo, self.hi = c, acc, rc, r, k, lo, hi
        self.node: DimFloorDiv | None = None

    def force(self) -> DimFloorDiv:
        """The pending atom's node (interned once)."""
        if self.node is None:
            self.node = _t.cast(DimFloorDiv,
                                _atom_mk(DimFloorDiv, _as_dim_node(_build(self.rc, self.r)), self.k))
        return self.node

    def value(self) -> _Z:
        """The whole value as a node (what _floordiv_lin returns eagerly)."""
        atom = self.force()
        if not self.acc and self.c == 0:
            return atom
        acc = dict(self.acc)
        c = _accumulate(acc, self.c, atom)
        return _build(c, acc)


def _merge_pending(c: int, terms: dict[_Mono, int], k: int, p: _Pending,
                   acc: dict[_Mono, int]) -> tuple[int, bool, int, dict[_Mono, int], int] | None:
    """One step of :func:`_floordiv_lin` for the dividend ``c + terms`` whose key ``()`` is
    the pending atom ``P`` of ``p``, in the shape that merges without a node for ``P``: every
    other coefficient a multiple of ``k``, ``P``'s coefficient ``a`` in ``[1, k)`` and
    ``gcd(k, c % k, a) == a``.  Then the multiples move into ``acc`` and the result is
    ``(qc, True, q, ...)`` for a constant quotient ``qc + q``, or ``(qc, False, c', terms', k')``
    for the merged division ``(c' + terms') // k'`` still to reduce.  None when the shape does
    not apply (nothing is changed)."""
    a = terms[()]
    if not 0 < a < k:
        return None
    pk = p.k
    for m, b in terms.items():
        if m and (b % k or (len(m) == 1 and type(m[0]) is DimFloorDiv and m[0].divisor == pk)):
            return None  # a remainder term besides P, or a term that may be P's node
    qc, rc = divmod(c, k)
    g = gcd(k, rc, a)
    if g != a:
        return None
    k2, rc2 = k // g, rc // g
    plo = p.lo // pk
    phi = None if p.hi is None else p.hi // pk
    if rc2 == 0:
        lo, hi = plo, phi
    else:
        lo = rc2 + min(plo, _BOUND_CAP)
        hi = None if phi is None or phi > _BOUND_CAP else rc2 + phi
    constant = hi is not None and lo // k2 == hi // k2
    if not constant and pk * k2 > MAX_INDEX:
        return None
    get = acc.get
    for m, b in terms.items():
        if m:
            acc[m] = get(m, 0) + b // k
    if constant:
        return qc, True, lo // k2, terms, k
    return qc, False, p.rc + pk * rc2, dict(p.r), pk * k2


def _as_dim_node(x: _Z) -> Dim:
    """``x``, known not to be an int (a non-constant reduced dividend)."""
    return x  # type: ignore[return-value]


def _mod(x: _Z, k: int) -> _Z:
    """``x % k`` for an int ``k >= 1`` (in [0, k), exact over the integers)."""
    if x is _ANY:
        return _ANY
    mult = 1
    while True:
        if isinstance(x, int):
            return mult * (x % k)
        if k == 1:
            return 0
        _, _, rc, r = _reduce(x, k)
        if not r:
            return mult * rc
        g, k, rc, r = _cancel(k, rc, r)  # (g*R) % (g*k) = g * (R % k)
        mult *= g
        rd = _as_dim_node(_build(rc, r))
        lo, hi = _reduced_bounds(rd)
        if hi is not None and lo // k == hi // k:  # R % k = R - k * (R // k), a constant quotient
            return _scale(_shift(rd, -k * (lo // k)), mult)
        if isinstance(rd, DimMod) and rd.divisor % k == 0:  # (y % a) % k = y % k when k divides a
            x = rd.arg
            continue
        return _scale(_atom_mk(DimMod, rd, k), mult)


def _mono_div(m: _Mono, d: _Mono) -> _Mono | None:
    rest = list(m)
    for a in d:
        for i, b in enumerate(rest):
            if b is a:
                del rest[i]
                break
        else:
            return None
    return tuple(rest)


def _exact_div(a: _Z, b: Dim) -> _Z | None:
    """``a / b`` when ``b`` (symbolic) divides ``a`` exactly as a polynomial, else None."""
    if a is b:
        return 1
    if type(a) is int:
        return 0 if a == 0 else None
    bc, bt = _lin(b)
    if bc != 0 or len(bt) != 1:
        return None
    (bm, bcoef), = bt.items()
    ac, at = _lin(a)
    if ac != 0:
        return None
    c = 0
    acc: dict[_Mono, int] = {}
    for m, coef in at.items():
        if coef % bcoef:
            return None
        qm = _mono_div(m, bm)
        if qm is None:
            return None
        if qm:
            acc[qm] = coef // bcoef
        else:
            c = coef // bcoef
    return _build(c, acc)


# -- public arithmetic ------------------------------------------------------------------------

_OPS = {"+": _add, "-": _sub, "*": _mul}
_WHERE = {op: f"dimension arithmetic ({op})" for op in ("+", "-", "*", "//", "%")}


def _binop(a: object, b: object, op: str) -> DimLike:
    where = _WHERE[op]
    x = a if isinstance(a, Dim) else as_dim(a, where)
    y = b if isinstance(b, Dim) else as_dim(b, where)
    if op == "//" or op == "%":
        if y == 0:
            shown = f"({_short(x)})" if isinstance(x, Dim) and _needs_parens(x) else _short(x)
            raise WellFormedError(f"dimension arithmetic: division by zero in {shown} {op} 0")
        if x is _ANY or y is _ANY:
            return _ANY
        if isinstance(y, int):
            r = _floordiv(x, y) if op == "//" else _mod(x, y)
        else:
            q = _exact_div(x, y)
            if q is None:
                return _ANY
            r = q if op == "//" else 0
    else:
        if x is _ANY or y is _ANY:
            return _ANY
        r = _OPS[op](x, y)
    return _result(r, (x, op, y))


def dim_add(a: DimLike, b: DimLike) -> DimLike:
    """``a + b`` (ints stay ints: ``dim_add(2, 3) == 5``)."""
    if type(a) is int and type(b) is int and a >= 0 and b >= 0:
        r = a + b
        if r <= MAX_INDEX:
            return r
    return _binop(a, b, "+")


def dim_sub(a: DimLike, b: DimLike) -> DimLike:
    """``a - b``; a negative constant result raises WellFormedError."""
    if type(a) is int and type(b) is int and 0 <= b <= a <= MAX_INDEX:
        return a - b
    return _binop(a, b, "-")


def dim_mul(a: DimLike, b: DimLike) -> DimLike:
    """``a * b``."""
    if type(a) is int and type(b) is int and 0 <= a <= MAX_INDEX and 0 <= b <= MAX_INDEX:
        r = a * b
        if r <= MAX_INDEX:
            return r
    return _binop(a, b, "*")


def dim_floordiv(a: DimLike, b: DimLike) -> DimLike:
    """``a // b``: exact for a constant divisor, ``Any`` for most symbolic divisors, a literal
    ``0`` divisor raises WellFormedError."""
    if type(a) is int and type(b) is int and 0 <= a <= MAX_INDEX and 0 < b <= MAX_INDEX:
        return a // b
    return _binop(a, b, "//")


def dim_mod(a: DimLike, b: DimLike) -> DimLike:
    """``a % b`` (see :func:`dim_floordiv`)."""
    if type(a) is int and type(b) is int and 0 <= a <= MAX_INDEX and 0 < b <= MAX_INDEX:
        return a % b
    return _binop(a, b, "%")


def dim_sum(dims: Iterable[DimLike]) -> DimLike:
    """The sum of ``dims`` in one pass (linear in the number of terms, unlike repeated ``+``).

    >>> n = sym("n")
    >>> dim_sum([n, 2, n, 1]) is n * 2 + 3
    True
    """
    c = 0
    acc: dict[_Mono, int] = {}
    anyd = False
    for d in dims:
        x = as_dim(d, "dim_sum")
        if type(x) is int:
            c += x
        elif x is _ANY:
            anyd = True
        else:
            c = _accumulate(acc, c, x)
    if anyd:
        return _ANY
    return _result(_build(c, acc), "dim_sum(...)")


def dim_prod(dims: Iterable[DimLike]) -> DimLike:
    """The product of ``dims`` (1 for none); ints multiply without allocating nodes."""
    p: _Z = 1
    for d in dims:
        x = as_dim(d, "dim_prod")
        p = p * x if type(x) is int and type(p) is int else _mul(p, x)
    return _result(p, "dim_prod(...)")


# -- queries ----------------------------------------------------------------------------------


def is_static(d: DimLike) -> bool:
    """Whether ``d`` is a static dimension (an int)."""
    if type(d) is int and 0 <= d <= MAX_INDEX:
        return True
    return type(as_dim(d, "is_static")) is int


def _walk(d: Dim) -> _t.Iterator[Dim]:
    """Every distinct node of ``d`` once (iterative, any depth)."""
    seen = {id(d)}
    stack: list[Dim] = [d]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, DimPoly):
            for m, _ in x.terms:
                for a in m:
                    if id(a) not in seen:
                        seen.add(id(a))
                        stack.append(a)
        elif isinstance(x, (DimFloorDiv, DimMod)):
            arg = x.arg
            if id(arg) not in seen:
                seen.add(id(arg))
                stack.append(arg)


def free_syms(d: DimLike) -> frozenset[str]:
    """The names of the symbols of ``d``.

    >>> sorted(free_syms((sym("n") + sym("m")) // 2 * sym("k")))
    ['k', 'm', 'n']
    """
    x = as_dim(d, "free_syms")
    if isinstance(x, int) or x is _ANY:
        return frozenset()
    return frozenset([s.name for s in _walk(x) if isinstance(s, Sym)])


def substitute(d: DimLike, bindings: Mapping[str, DimLike]) -> DimLike:
    """``d`` with the symbols named in ``bindings`` replaced by their values.

    Values are dimensions (ints, symbols, expressions, ``Any``); unbound symbols stay.
    Evaluation is exact integer arithmetic on the whole expression; a result that is not
    a dimension (a negative int, ...) raises WellFormedError.

    >>> n, m = sym("n"), sym("m")
    >>> substitute((n + 1) // 2 * m, {"n": 4}), substitute(n * m + 1, {"n": 2, "m": 3})
    (m * 2, 7)
    """
    x = as_dim(d, "substitute")
    if not isinstance(bindings, Mapping):
        raise WellFormedError(f"substitute: bindings must be a mapping of symbol names to dimensions, "
                              f"got {safe_repr(bindings)}")
    binds: dict[str, DimLike] = {}
    for k, v in bindings.items():
        if type(k) is not str:
            raise WellFormedError(f"substitute: binding names must be str, got {safe_repr(k)}")
        binds[k] = as_dim(v, f"substitute: the value of {k[:40]!r}")
    if isinstance(x, int) or x is _ANY or not binds:
        return x
    with gc_paused():  # every value is a new acyclic node: the collector would only rescan them
        out = _substitute(x, binds)
    if out is x:
        return x
    return _result(out, f"substitute({_short(x)}, ...)")


def _substitute(x: Dim, binds: dict[str, DimLike]) -> _Z:
    memo: dict[int, _t.Any] = {}  # id -> value (_Z, or a _Pending from _eval_floordiv)
    stack: list[Dim] = [x]
    while stack:
        y = stack[-1]
        if id(y) in memo:
            stack.pop()
            continue
        if type(y) is Sym:
            memo[id(y)] = binds.get(y.name, y)
            stack.pop()
            continue
        if type(y) is DimPoly:
            todo: list[Dim] = [a for m, _ in y.terms for a in m if id(a) not in memo]
            if todo:
                stack.extend(todo)
                continue
            memo[id(y)] = _eval_poly(y, memo)
        elif isinstance(y, (DimFloorDiv, DimMod)):
            arg = y.arg
            if id(arg) not in memo:
                if type(arg) is DimPoly and type(y) is DimFloorDiv:  # (sum) // k from the sum's terms
                    todo = [a for m, _ in arg.terms for a in m if id(a) not in memo]
                    if todo:
                        stack.extend(todo)
                        continue
                    memo[id(y)] = _eval_floordiv(y, arg, memo)
                    stack.pop()
                    continue
                stack.append(arg)
                continue
            v = memo[id(arg)]
            if type(v) is _Pending:
                v = memo[id(arg)] = v.value()
            if v is arg:
                memo[id(y)] = y
            else:
                memo[id(y)] = (_floordiv if isinstance(y, DimFloorDiv) else _mod)(v, y.divisor)
        stack.pop()
    out = memo[id(x)]
    return out.value() if type(out) is _Pending else out


def _eval_lin(p: DimPoly, memo: dict[int, _t.Any], pending: list[_Pending] | None = None
              ) -> tuple[int, dict[_Mono, int]] | AnyDim | None:
    """The value of ``p`` with its atoms replaced by their ``memo`` values, as a constant and a
    dict monomial -> coefficient (not interned, coefficients may be 0); None if no atom changed,
    Any if one became Any.  With ``pending`` (an empty list), one :class:`_Pending` value of a
    degree-1 term stays un-interned: it is appended to ``pending`` and its atom is the key
    ``()`` of the dict."""
    changed = False
    static = True
    for m, _ in p.terms:
        for atom in m:
            v = memo[id(atom)]
            if type(v) is _Pending:
                if pending is None or pending or len(m) != 1:
                    v = memo[id(atom)] = v.value()
                else:
                    pending.append(v)
            if v is not atom:
                changed = True
                if v is _ANY:
                    return _ANY
            if type(v) is not int:
                static = False
    if not changed:
        return None
    if static:
        total = p.const
        for m, a in p.terms:
            for atom in m:
                a *= _t.cast(int, memo[id(atom)])
            total += a
        return total, {}
    c = p.const
    acc: dict[_Mono, int] = {}
    get = acc.get
    for m, a in p.terms:
        if len(m) == 1:  # the common degree-1 term: no product to form
            atom = m[0]
            v = memo[id(atom)]
            if v is atom:
                acc[m] = get(m, 0) + a
            elif type(v) is int:
                c += a * v
            elif type(v) is _Pending:  # c + acc + P, times a
                c += a * v.c
                for m1, b in v.acc.items():
                    acc[m1] = get(m1, 0) + a * b
                acc[()] = get((), 0) + a
            else:
                c = _accumulate(acc, c, _scale(v, a))
            continue
        if all(memo[id(atom)] is atom for atom in m):
            acc[m] = get(m, 0) + a
            continue
        t: _Z = a
        for atom in m:
            t = _mul(t, memo[id(atom)])
        c = _accumulate(acc, c, t)
    return c, acc


def _eval_poly(p: DimPoly, memo: dict[int, _t.Any]) -> _Z:
    r = _eval_lin(p, memo)
    if not isinstance(r, tuple):
        return p if r is None else _ANY
    c, acc = r
    return _build(c, acc) if acc else c


def _eval_floordiv(y: DimFloorDiv, arg: DimPoly, memo: dict[int, _t.Any]) -> _Z | _Pending:
    """``y`` (whose argument is the sum ``arg``) with the atoms of ``arg`` replaced by their
    ``memo`` values: the quotient is built from the argument's terms, so the argument's new
    value gets no node when the division merges into a nested one or moves terms out."""
    pending: list[_Pending] = []
    r = _eval_lin(arg, memo, pending)
    if not isinstance(r, tuple):
        return y if r is None else _ANY
    c, acc = r
    terms = {m: a for m, a in acc.items() if a}
    if () not in terms:
        pending = []
        if not terms:
            return c // y.divisor
    return _floordiv_lin(c, terms, y.divisor, None, pending[0] if pending else None, True)


def dim_bounds(d: DimLike) -> tuple[int | None, int | None]:
    """Bounds ``(lo, hi)`` of ``d`` over every binding of its symbols (None: unbounded).

    The bounds are sound, not always tight.

    >>> n = sym("n")
    >>> dim_bounds(n % 4 + 1), dim_bounds(n + 2), dim_bounds(7)
    ((1, 4), (2, None), (7, 7))
    """
    x = as_dim(d, "dim_bounds")
    if x is _ANY:
        return 0, None
    return _bounds(x)


def _provably_nonzero(d: _Z) -> bool:
    if type(d) is int:
        return d != 0
    c, terms = _lin(d)
    if c % gcd(*terms.values()):  # every term is a multiple of the gcd, the constant is not
        return True
    lo, hi = _bounds(d)
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


def dims_equal(a: DimLike, b: DimLike) -> bool | None:
    """True if ``a`` and ``b`` are provably equal, False if provably different, None if unknown.

    >>> n, m = sym("n"), sym("m")
    >>> dims_equal(n + n, 2 * n), dims_equal(n, n + 1), dims_equal(2 * n, 2 * m + 1), dims_equal(n, m)
    (True, False, False, None)
    """
    x = as_dim(a, "dims_equal")
    y = as_dim(b, "dims_equal")
    if x is _ANY or y is _ANY:
        return None
    if x is y:
        return True
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    if isinstance(x, DimPoly) and isinstance(y, DimPoly) and x.terms == y.terms:
        return False  # the same terms, different constants (else x is y)
    diff = _sub(x, y)
    if type(diff) is int:
        return diff == 0
    return False if _provably_nonzero(diff) else None


def broadcast(a: DimLike, b: DimLike, where: str = "broadcast") -> DimLike:
    """The dimension of broadcasting ``a`` with ``b`` (numpy rules), exact where provable.

    ``1`` with ``d`` gives ``d``, ``d`` with ``d`` gives ``d``; ``?`` with an int ``k != 1``
    gives ``k``.  When one side is provably not 1, the result is that side (the other
    must be 1 or equal to it at run time).  When neither side is provably 1 nor
    provably not 1 (``n`` with ``m``), the result is ``Any``: both ``n`` and ``m`` can be
    the answer at run time, so keeping one (TVM's and ONNX's practice, which then
    requires ``n == m``) could be a wrong dimension.  Two sides that are provably
    different and provably not 1 (two different ints other than 1, ``2 * n`` with
    ``2 * n + 2``) raise TypeCheckError naming ``where`` and both dimensions.

    >>> n, m = sym("n"), sym("m")
    >>> broadcast(1, n), broadcast(n, n), broadcast(Any, 3), broadcast(n, 5), broadcast(n, m)
    (n, n, 3, 5, ?)
    """
    if type(a) is int and type(b) is int and 0 <= a <= MAX_INDEX and 0 <= b <= MAX_INDEX:
        if a == b or b == 1:
            return a
        if a == 1:
            return b
        raise TypeCheckError(f"{where}: cannot broadcast dimension {a} with {b} (they differ and "
                             "neither is 1)")
    x = as_dim(a, where)
    y = as_dim(b, where)
    if x is y:
        return x
    if y == 1:
        return x
    if x == 1:
        return y
    if x is _ANY or y is _ANY:  # the other side is the answer if it cannot be 1
        other = y if x is _ANY else x
        return other if dims_equal(other, 1) is False else _ANY
    x1 = dims_equal(x, 1)  # False: provably not 1 (True is impossible: 1 is the int 1)
    y1 = dims_equal(y, 1)
    if x1 is False and y1 is False:  # both must be equal at run time
        if dims_equal(x, y) is False:
            raise TypeCheckError(f"{where}: cannot broadcast dimension {_short(x)} with {_short(y)} "
                                 "(provably different and neither can be 1)")
        return min(x, y, key=_simplicity)  # either is right: pick one independently of the order
    if y1 is False:
        return y
    if x1 is False:
        return x
    return _ANY


# -- text -------------------------------------------------------------------------------------


def _simplicity(d: DimLike) -> tuple[int, bytes]:
    """An order on dimensions that prefers ints, then fewer terms (ties: by content id)."""
    if isinstance(d, int):
        return (0, b"")
    return (len(d.terms) if isinstance(d, DimPoly) else 1, d.id)


def _needs_parens(arg: Dim) -> bool:
    """Whether the dividend of ``//`` / ``%`` needs parentheses (a sum, not a product:
    ``*``, ``//`` and ``%`` share one precedence level and associate to the left)."""
    return type(arg) is DimPoly and (len(arg.terms) > 1 or arg.const != 0 or arg.terms[0][1] < 0)


def _poly_pieces(p: DimPoly, text: bool = False) -> list[str | Dim]:
    items: list[tuple[bool, list[str | Dim]]] = []
    for m, a in p.terms:
        mag = -a if a < 0 else a
        multi = len(m) > 1 or mag != 1
        pieces: list[str | Dim] = []
        for i, atom in enumerate(m):
            if i:
                pieces.append(" * ")
            if type(atom) is Sym:
                pieces.append(_text_name(atom.name) if text else atom.name)
            elif multi and not text:
                pieces += ["(", atom, ")"]
            else:
                pieces.append(atom)
        if mag != 1:
            pieces.append(f" * {mag}")
        items.append((a < 0, pieces))
    if p.const:
        items.append((p.const < 0, [str(-p.const if p.const < 0 else p.const)]))
    out: list[str | Dim] = []
    if items[0][0]:  # lead with a positive item: "3 - n", not "-n + 3"
        for j, (neg, _) in enumerate(items):
            if not neg:
                items.insert(0, items.pop(j))
                break
        else:
            out.append("0")
    for neg, pieces in items:
        if out:
            out.append(" - " if neg else " + ")
        out += pieces
    return out


def _text_name(name: str) -> str:
    """A symbol's name in pyir's text: as it is if the lexer reads it as one identifier,
    else a JSON string (non-ASCII names; ``inf`` and ``nan``, which lex as numbers)."""
    if name.isascii() and name not in ("inf", "nan"):
        return name
    return json.dumps(name, ensure_ascii=False)


def dim_str(d: DimLike, limit: int | None = None, text: bool = False) -> str:
    """The canonical text of a dimension: ``3``, ``n``, ``n * 3 + 1``, ``(n + 1) // 2``, ``?``.

    The text is a Python expression with the same value (Python's precedence: ``*``,
    ``//`` and ``%`` bind tighter than ``+`` and ``-``, and associate to the left).
    With ``text=True`` it is the spelling of pyir's text format (and TVM's):
    ``floordiv(n + 1, 2)``, ``floormod(n, 4)`` (``//`` starts a comment there, ``%`` a
    variable), and names that are not ASCII are quoted (``"批"``).
    Built iteratively, in time linear in its length; with ``limit``, text longer than
    ``limit`` characters is cut and ends with ``...``.

    >>> n = sym("n")
    >>> dim_str(n * 3 + 1), dim_str((n + 1) // 2), dim_str(3 - n), dim_str(n // 2 * sym("m")), dim_str(Any)
    ('n * 3 + 1', '(n + 1) // 2', '3 - n', 'm * (n // 2)', '?')
    """
    x = as_dim(d, "dim_str")
    if isinstance(x, int):
        return str(x)
    out: list[str] = []
    size = 0
    stack: list[str | Dim] = [x]
    while stack:
        y = stack.pop()
        if isinstance(y, str):
            s = y
        elif isinstance(y, Sym):
            s = _text_name(y.name) if text else y.name
        elif isinstance(y, DimPoly):
            stack.extend(reversed(_poly_pieces(y, text)))
            continue
        elif text and isinstance(y, (DimFloorDiv, DimMod)):
            stack += [f", {y.divisor})", y.arg, "floordiv(" if isinstance(y, DimFloorDiv) else "floormod("]
            continue
        elif isinstance(y, (DimFloorDiv, DimMod)):
            op = " // " if isinstance(y, DimFloorDiv) else " % "
            arg = y.arg
            if _needs_parens(arg):
                stack += [f"{op}{y.divisor}", ")", arg, "("]
            else:
                stack += [f"{op}{y.divisor}", arg]
            continue
        else:
            s = "?"
        out.append(s)
        size += len(s)
        if limit is not None and size > limit:
            return "".join(out)[:limit] + "..."
    return "".join(out)
