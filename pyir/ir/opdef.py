"""Operator definitions: the registry of declared operators (the data; the builders are
made by :func:`pyir.op.registry.register_op`).

Each operator is declared once, with :func:`register_op`: its name, number of
inputs, attribute schema (kinds and defaults), type relation, fusion pattern
kind and numpy reference implementation.  ``register_op`` returns the
operator's builder (``pyir.op.nn.conv2d(x, w, strides=(2, 2))``).

Builders and ``pyir.Call`` normalize attributes through the schema: defaults are
filled in and values converted to their canonical kind, so ``conv2d(x, w)`` and
``conv2d(x, w, strides=[1, 1])`` are the very same node.  A type-exact, bounded, weak
cache per operator makes attributes seen before cost a dict lookup (see ``attrs_key``).
"""

from __future__ import annotations

import enum
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from marshal import dumps as _marshal
from typing import Any

import numpy as np

from ..errors import AttrError, TypeCheckError, UnknownOpError, WellFormedError, did_you_mean
from .node import OP_BIT0, Attrs, attrs_of, plain_value, safe_repr
from .types import Type, normalize_dtype

__all__ = ["OpPattern", "AttrSpec", "OpDef", "declare_op", "get_op_def", "list_ops", "REQUIRED"]


class OpPattern(enum.IntEnum):
    """Fusion pattern kinds (the same values as TVM's ``OpPatternKind``)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_KINDS = ("int", "float", "bool", "str", "ints", "floats", "dtype", "int?", "ints?", "float?", "any")


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an operator: name, kind, default (``REQUIRED`` if none)."""

    name: str
    kind: str
    default: Any = REQUIRED
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown attribute kind {self.kind!r}")

    def convert(self, op: str, value: Any) -> Any:
        """Check ``value`` against the kind and return its canonical form."""
        k = self.kind
        where = f"operator {op!r}, attribute {self.name!r}"
        if k.endswith("?"):
            if value is None:
                return None
            k = k[:-1]
        try:
            if k == "int":
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                    raise TypeError
                return int(value)
            if k == "float":
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
                    raise TypeError
                return float(value)
            if k == "bool":
                if isinstance(value, (bool, np.bool_)) or value in (0, 1):
                    return bool(value)
                raise TypeError
            if k == "str":
                if not isinstance(value, str):
                    raise TypeError
                return value
            if k == "dtype":
                return normalize_dtype(value)
            if k == "ints":
                if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                    value = (value,)
                out = tuple(value)
                if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in out):
                    raise TypeError
                return tuple(int(v) for v in out)
            if k == "floats":
                out = tuple(value)
                if any(isinstance(v, bool) or not isinstance(v, (int, float, np.number)) for v in out):
                    raise TypeError
                return tuple(float(v) for v in out)
            from .node import normalize_attr_value

            return normalize_attr_value(value, where)
        except (TypeError, ValueError, OverflowError):  # e.g. float(10**400)
            shown = safe_repr(value)  # not repr: an int too long for str(), a deep tuple
            raise AttrError(f"{where}: expected {self.kind}, got {shown}") from None


TypeRel = Callable[[tuple[Type, ...], Attrs], Type]
Compute = Callable[..., Any]

# -- the attribute cache -------------------------------------------------------------------------
# Each operator maps a type-exact key of the raw attributes it was given to (a weak reference
# to) the Attrs its schema made of them, so a builder call with attributes seen before costs a
# key, a dict lookup and a dereference.
#
# The key is ``marshal.dumps(attrs, v)``: bytes that spell every value with its exact type
# (``1``, ``1.0`` and ``True`` differ, floats are bit patterns so ``0.0`` and ``-0.0`` differ,
# tuples and lists nest), computed in C with a depth limit (a deep or unmarshallable value
# raises ValueError and takes the uncached path, which rejects it).  ``v`` is 2 for a single
# attribute and 4 for more (format 4 spells ASCII names and small tuples more cheaply but pays
# a table of back-references per call: faster from two values on); a dict always gets the
# version of its length.  Format 4's back-references point at an earlier occurrence of the
# very same object, so its bytes still decode to exactly the given values: equal keys mean
# equal, type-exact values (the same value may be spelled in two ways -- at worst a second
# entry).  Marshal spells any buffer
# (bytes, numpy scalars) alike, so an entry is stored only when every value is None, bool, int,
# float, str or a tuple/list of them: the format is a prefix code, so a key equal to a stored
# one spells values of exactly those types.  An entry maps to the live canonical Attrs the
# uncached path would return for the same input (interning keeps one per content), so cached
# and uncached results are the very same object.  The cache holds no node alive (weak
# references), is bounded (cleared when full) and is a plain dict (entries are set and read
# atomically; racing threads at worst compute the same Attrs twice).

ATTR_CACHE_MAX = 512
"""Entries per operator in the attribute cache (the cache is cleared when it is full)."""



_plain = plain_value  # None, bool, int, float, str and tuples/lists of them


def attrs_key(given: dict[str, Any]) -> bytes | None:
    """A type-exact key of raw attribute values (names and values), or None if there is none."""
    try:
        return _marshal(given, 2 if len(given) == 1 else 4)
    except Exception:  # unmarshallable, too deeply nested, a buffer that cannot be exported
        return None


def cacheable(given: dict[str, Any]) -> bool:
    """Whether an entry may be stored for ``given`` (str names, plain values)."""
    return all(type(k) is str and _plain(v) for k, v in given.items())


@dataclass(frozen=True, eq=False)
class OpDef:
    """Everything pyir knows about one operator."""

    name: str
    num_inputs: int | None  # None: variadic (at least one input)
    attrs: tuple[AttrSpec, ...]
    type_rel: TypeRel
    compute: Compute
    pattern: OpPattern
    bit: int
    doc: str = ""
    canonicalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    _specs: dict[str, AttrSpec] = field(default_factory=dict, repr=False)
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    # the keyword builder's identity entries (see pyir.op.registry.ATTR_HOT_MAX)
    _hot: list[tuple[Any, ...]] = field(default_factory=list, repr=False, compare=False)

    @property
    def mask(self) -> int:
        """This operator's summary bit (see ``Node._mask``)."""
        return 1 << self.bit

    def normalize_attrs(self, attrs: Mapping[str, Any] | Attrs | None, key: Any = None) -> Attrs:
        """Validate ``attrs`` against the schema, fill defaults, return canonical Attrs.

        ``key``: the builders pass the cache key of a dict they already computed (and missed),
        so a miss computes it once.
        """
        cache = self._cache
        t = type(attrs)
        if t is dict or attrs is None:
            if key is None:
                key = attrs_key(attrs) if attrs else ()  # type: ignore[arg-type]
                if key is not None:
                    e = cache.get(key)
                    if e is not None:
                        a = e()
                        if a is not None:
                            return a
            if key is not None:
                a = self._normalize(dict(attrs) if attrs else {})
                if not attrs or cacheable(attrs):  # type: ignore[arg-type]
                    if len(cache) >= ATTR_CACHE_MAX:
                        cache.clear()
                    cache[key] = weakref.ref(a)
                return a
        elif t is Attrs:
            # keyed by the Attrs' id (in a 1-tuple: never equal to the bytes keys of dicts); the
            # entry holds a weak reference to the input to check that it is the same node (an
            # id is unique among live nodes only)
            aid = (attrs.id,)  # type: ignore[union-attr]
            e = cache.get(aid)
            if e is not None:
                src, res = e
                a = res()
                if a is not None and src() is attrs:
                    return a
            a = self._normalize(dict(attrs.items()))
            if len(cache) >= ATTR_CACHE_MAX:
                cache.clear()
            cache[aid] = (weakref.ref(attrs), weakref.ref(a))
            return a
        return self._normalize(dict(attrs.items()) if attrs is not None else {})

    def _normalize(self, given: dict[str, Any]) -> Attrs:
        """The uncached normalization (``given`` is consumed)."""
        out: dict[str, Any] = {}
        for spec in self.attrs:
            if spec.name in given:
                out[spec.name] = spec.convert(self.name, given.pop(spec.name))
            elif spec.default is REQUIRED:
                raise AttrError(f"operator {self.name!r}: missing required attribute {spec.name!r}")
            else:
                out[spec.name] = spec.default
        if given:
            hint = "".join(did_you_mean(k, [s.name for s in self.attrs], 1) for k in sorted(given))
            raise AttrError(f"operator {self.name!r}: unknown attribute(s) {sorted(given)}; "
                            f"accepted: {[s.name for s in self.attrs]}{hint}")
        if self.canonicalize is not None:
            out = self.canonicalize(out)
        return attrs_of(out)

    def check_arity(self, n: int) -> None:
        """Raise TypeCheckError unless ``n`` inputs are acceptable."""
        if self.num_inputs is None:
            if n < 1:
                raise TypeCheckError(f"operator {self.name!r} needs at least one input")
        elif n != self.num_inputs:
            raise TypeCheckError(f"operator {self.name!r} takes {self.num_inputs} input(s), got {n}")


_registry: dict[str, OpDef] = {}
_reg_lock = threading.Lock()


def get_op_def(name: str) -> OpDef:
    """The OpDef registered under ``name``; UnknownOpError if there is none."""
    try:
        return _registry[name]
    except KeyError:
        raise UnknownOpError(f"unknown operator {name!r}{did_you_mean(name, _registry)}") from None


def list_ops() -> list[str]:
    """Names of all registered operators, sorted."""
    return sorted(_registry)


def declare_op(name: str, num_inputs: int | None, attrs: tuple[AttrSpec, ...], type_rel: TypeRel,
               compute: Compute, pattern: OpPattern, doc: str = "",
               canonicalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> OpDef:
    """Register the definition of operator ``name`` (WellFormedError if the name is taken)."""
    with _reg_lock:
        if name in _registry:
            raise WellFormedError(f"operator {name!r} is already registered")
        odef = OpDef(name, num_inputs, tuple(attrs), type_rel, compute, OpPattern(pattern),
                     OP_BIT0 + len(_registry), doc, canonicalize,
                     {a.name: a for a in attrs})
        _registry[name] = odef
    return odef
