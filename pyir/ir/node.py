"""Hash-consed immutable nodes: the base class, the intern table and ``Attrs``.

Every node (expressions, types, attribute sets) is created through a single
weak intern table keyed by its 128-bit content ID:

* ``id`` is ``XXH3-128`` over a canonical encoding of the node's kind tag, its
  scalar fields and its children's ids.  It is computed once, at construction,
  from the children's already computed ids, so there is no recursion.  A variable's
  id is its 16-byte uid itself (unique by construction: nothing to digest); a
  variable is never re-keyed (a given uid that is a live node's id is an error).
* Interning is exact: a table hit is accepted only after comparing the fields
  (children by identity).  Should two different nodes ever share a digest, the
  later one is re-keyed along a deterministic probe sequence, so ids stay unique.
* The table holds weak references: a node nobody references is freed at once,
  and its entry disappears with it.
* Misses are inserted with an atomic ``dict.setdefault`` (no lock), so several
  threads building the same structure end up with one canonical object.

Equality is identity and ``hash`` is the identity hash (computed by CPython in C,
O(1), nothing stored).  Setting or deleting any attribute raises
:class:`~pyir.errors.ImmutableError`.

Construction fast paths (see :func:`builder_twin`): a new node is filled in as an
instance of its kind's private twin class (same layout, plain attribute stores) and
becomes its kind by ``__class__`` assignment before it is published, so no other code
ever sees it mutable.  Summary masks are shared int objects (:func:`intern_mask`);
types and ``Attrs`` have mask 0 as a class attribute.
"""

from __future__ import annotations

import contextlib
import gc
import struct
import weakref
from _weakref import _remove_dead_weakref  # type: ignore[attr-defined]
from collections.abc import Iterable, Iterator, Mapping
from marshal import dumps as _marshal
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from xxhash import xxh3_128_digest

from ..errors import AttrError, FinalKindError, ImmutableError, InternalError, WellFormedError
from . import kinds
from .kinds import KINDS, Scalar

# the declaration vocabulary, re-exported for the kinds defined on top of this module alone
from .kinds import Child as Child
from .kinds import Children as Children
from .kinds import OptionalChild as OptionalChild
from .kinds import index_key as index_key
from .kinds import text_key as text_key

__all__ = ["Node", "Attrs", "attrs_of", "live_node_count", "gc_paused", "check_text", "build", "KINDS",
           "MAX_INDEX", "MAX_ATTR_INT", "MAX_ATTR_DEPTH"]

# -- limits every format can store ----------------------------------------------------
# Dimensions and tuple indices are stored as int64 by the binary and JSON formats.
MAX_INDEX = (1 << 63) - 1
# Attribute ints beyond int64 are stored as decimal text: bound them well under the
# smallest limit Python may place on int <-> str conversion (640 digits).
MAX_ATTR_INT = 1 << 1024
# Nesting of tuples inside an attribute value (the loaders' limit).
MAX_ATTR_DEPTH = 64


def short_int(i: int) -> str:
    """``str(i)`` for an int of reasonable size, a description of huge ones (no str limit)."""
    return str(i) if -(1 << 256) < i < 1 << 256 else f"an int of {i.bit_length()} bits"


def safe_repr(v: Any, limit: int = 80) -> str:
    """``repr(v)`` cut to ``limit`` characters, or a description if it cannot be made (a deeply
    nested value, an int too long for ``str``)."""
    try:
        return repr(v)[:limit]
    except (RecursionError, ValueError):
        return f"a deeply nested or huge {type(v).__name__}"


def check_text(s: str, where: str, error: type[Exception] = WellFormedError) -> str:
    """Return ``s`` if it is valid Unicode (encodable as UTF-8), else raise ``error``.

    Lone surrogates (``"\\ud800"``) are rejected: every format stores UTF-8 text.
    """
    if not s.isascii():
        try:
            s.encode()
        except UnicodeEncodeError as e:
            raise error(f"{where}: {s[:40]!r} is not valid Unicode (lone surrogate at position "
                        f"{e.start})") from None
    return s

# -- summary bits -------------------------------------------------------------
# Each node carries ``_mask``: the OR of its children's masks and its own bit.
# Bits 0-8 mark node kinds, bits from 12 upward mark registered operators, so a
# pass can skip every subgraph that cannot contain what it looks for.
F_VAR = 1 << 0
F_GLOBAL = 1 << 1
F_FUNC = 1 << 2
F_LET = 1 << 3
F_IF = 1 << 4
F_CONST = 1 << 5
F_TUPLE = 1 << 6
F_GETITEM = 1 << 7
F_UNTYPED = 1 << 8  # a Var without type annotation (types beneath depend on context)
OP_BIT0 = 12

# Masks with operator bits are ints above 256, so each ``a | b`` is a new 32-byte int object:
# one per node.  Programs have few distinct masks, so nodes share one int object per value
# through this table (bounded: cleared when full, which only costs sharing; masks are compared
# by value, never by identity).
MASK_TABLE_MAX = 1 << 14
_masks: dict[int, int] = {}
mask_get = _masks.get


def intern_mask(mask: int) -> int:
    """The shared int object equal to ``mask`` (hot paths inline ``mask_get(m) or intern_mask(m)``)."""
    m = _masks.get(mask)
    if m is None:
        if len(_masks) >= MASK_TABLE_MAX:
            _masks.clear()
        m = _masks.setdefault(mask, mask)
    return m


# -- the intern table -----------------------------------------------------------

digest = xxh3_128_digest
_table: dict[bytes, _Ref] = {}
_get = _table.get
_new = object.__new__


class _Ref(weakref.ref):
    """A weak reference that knows its table key (so its callback can drop it)."""

    __slots__ = ("key",)


def _drop(ref: _Ref, _remove: Any = _remove_dead_weakref, _in: Any = _table) -> None:
    # Atomic in C: removes the entry only if it still holds this dead reference.  The function
    # and the table are bound as defaults: at interpreter shutdown the module's globals may
    # already be None when the last nodes die ("Exception ignored in: _drop").
    _remove(_in, ref.key)  # type: ignore[attr-defined]


def _collision_key(key: bytes) -> bytes:
    return digest(key + b"\x00probe")


# Keys at which a live node of another structure once made a new node move on along the
# probe sequence.  A node re-keyed past ``K`` stays there after ``K``'s owner is freed,
# so lookups must not stop at an empty or dead slot whose key is in this set.  It only
# grows, and only on a genuine 128-bit digest collision -- never, in practice -- so it
# stays empty and costs one failed set lookup on the rare miss paths.  (A set ``add`` is
# atomic under the GIL, and is done before anything is inserted past the key.)
_collided: set[bytes] = set()


def _lookup(key: bytes, same: Any) -> tuple[Node | None, bytes]:
    """Probe for a live node equal to the candidate; returns (node, free_key).

    ``free_key`` is the first empty or dead slot of the probe sequence.
    """
    free: bytes | None = None
    while True:
        r = _get(key)
        n = None if r is None else r()
        if n is None:
            if free is None:
                free = key
            if key not in _collided:
                return None, free
        elif same(n):
            return n, key
        elif free is None:  # the candidate may be inserted past this live, different node
            _collided.add(key)
        key = _collision_key(key)


_setdefault = _table.setdefault


def publish(node: Node, key: bytes, same: Any) -> Any:
    """Insert the new ``node`` under ``key``, or return the live node equal to it.

    Lock-free and race-free: ``dict.setdefault`` inserts only into an empty slot,
    a dead entry is removed only while it is dead (atomically, in C), and a live
    entry that is not equal (a digest collision) sends the node along the probe
    sequence.  So there is never more than one canonical node per structure,
    whatever the threads do.  ``node`` must have every field but ``id`` set.
    """
    while True:
        if key in _collided:  # an equal node may live further along the probe sequence
            other, _ = _lookup(_collision_key(key), same)
            if other is not None:
                return other
        _set_id(node, key)
        ref = _Ref(node, _drop)
        ref.key = key  # type: ignore[attr-defined]
        cur = _setdefault(key, ref)
        if cur is ref:
            return node
        other = cur()
        if other is None:
            _remove_dead_weakref(_table, key)
        elif same(other):
            return other
        else:
            _collided.add(key)
            key = _collision_key(key)


def intern(cls: type[Node], key: bytes, same: Any, fields: dict[str, Any], mask: int | None) -> Any:
    """Return the live node equal to the candidate, or create and publish it.

    ``same(n)`` decides exact equality with the candidate; ``fields`` are the
    slot values of a new node; ``mask`` its summary bits (None for the kinds whose mask is a
    class attribute: types and ``Attrs``).  The general path of the node kinds (their
    constructors inline the common cases).  Thread-safe without a lock (see :func:`publish`).
    """
    r = _get(key)
    if r is not None:
        n = r()
        if n is not None and same(n):
            return n
        n, key = _lookup(key, same)
        if n is not None:
            return n
    n = _new(cls)
    setters = cls._setters
    for name, value in fields.items():
        setters[name](n, value)
    if mask is not None:
        _set_mask(n, mask_get(mask) or intern_mask(mask))
    return publish(n, key, same)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk operation, then restore it.

    Hash-consed nodes are built children-first and never mutated, so they can
    never form a reference cycle: refcounting frees them, and the cyclic
    collector rescanning millions of live nodes is pure overhead.  Pausing it
    during a pass, a parse or a load is sound -- collection is deferred, not
    skipped -- and re-entrant.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def live_node_count() -> int:
    """Number of live interned nodes (the size of the weak intern table)."""
    return len(_table)


# -- the base class -----------------------------------------------------------


class Node:
    """Base of every hash-consed node.

    Nodes are created only through their constructors, which intern them.
    Structural equality is identity: ``a == b`` iff ``a is b``.
    """

    __slots__ = ("__weakref__", "_mask", "_ty", "id")
    _setters: ClassVar[dict[str, Any]] = {}
    _final: ClassVar[bool] = False  # set by ``class K(Base, final=True)``: no subclasses
    # The declaration of a kind (see pyir.ir.kinds): its fields, in constructor order, its key
    # tag, its number in the binary format and its summary bit.
    _fields: ClassVar[tuple[kinds.Field, ...]] = ()
    _kind: ClassVar[bytes] = b"?"
    _code: ClassVar[int | None] = None
    _bit: ClassVar[int] = 0

    id: bytes
    _mask: int


    def __init_subclass__(cls, final: bool = False, **kw: Any) -> None:
        # Node kinds are final: a subclass instance would be interned as (and could
        # become) the canonical node of its structure, and would carry a ``__dict__``.
        # The set of kinds is closed (the formats, the type checker and the passes know
        # each one), so the abstract bases are not extended outside pyir either.
        for base in cls.__mro__[1:]:
            if base.__dict__.get("_final"):
                raise FinalKindError(f"pyir node kinds cannot be subclassed: {cls.__qualname__} "
                                     f"derives from {base.__name__}")
        if not str(cls.__dict__.get("__module__", "")).startswith("pyir."):
            raise FinalKindError(f"pyir node classes cannot be subclassed outside pyir: "
                                 f"{cls.__qualname__} derives from {cls.__mro__[1].__name__}")
        super().__init_subclass__(**kw)
        setters: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name in klass.__dict__.get("__slots__", ()):
                if name != "__weakref__":
                    setters[name] = klass.__dict__[name].__set__
        cls._setters = setters
        if final:  # a node kind: derive its generic methods from its declaration, register it
            sort = next(k for k in cls.__mro__ if Node in k.__bases__)
            kinds.declare(cls, sort, _BASE_SLOTS)
        cls._final = final  # after the declaration is accepted (a rejected class is no kind)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"{type(self).__name__} nodes are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"{type(self).__name__} nodes are immutable (cannot delete {name!r})")

    def __copy__(self) -> Node:
        return self

    def __deepcopy__(self, memo: Any) -> Node:
        return self

    def __reduce__(self) -> Any:  # replaced by the serializer's copyreg registration
        raise InternalError("pickling nodes is provided by pyir.serialize (import pyir)")

    @property
    def hexid(self) -> str:
        """The content id as 32 hex digits."""
        return self.id.hex()

    def children(self) -> tuple[Node, ...]:
        """Direct child nodes, in evaluation order (derived from the kind's declaration)."""
        return ()

    def replace_children(self, new: Iterable[Node]) -> Node:
        """This node with its children (as :meth:`children` lists them) replaced by ``new``,
        positionally: the node itself when nothing changed, else what the constructor builds.

        >>> import pyir
        >>> x, y = pyir.var("x"), pyir.var("y")
        >>> pyir.op.add(x, x).replace_children([x, y]) is pyir.op.add(x, y)
        True
        """
        return kinds._replace_children(self, new)


_BASE_SLOTS = frozenset(Node.__slots__)


_EXACT = (str, int, float, bytes, tuple, bool)  # scalar types a build() value must be exactly


def build(cls: type[Node], values: Iterable[Any]) -> Any:
    """The interned ``cls`` node with these field values (in declaration order), built
    generically from the kind's declaration: what a kind without a hand-tuned constructor
    returns from its ``__new__`` after normalizing its arguments.

    Checks each value against its declared field (a node of the field's sort, a tuple of
    them, None for an optional one, a scalar of exactly the declared type), keys the node
    with :func:`pyir.ir.kinds.id_of`, compares candidates field by field (nodes by identity,
    scalars by typed equality: ``1``, ``1.0`` and ``True`` differ), and sets the summary
    mask to the kind's bit OR-ed with its children's masks.  (For a kind with a hand-tuned
    constructor, ``build`` finds the very node the constructor built -- the tests check it --
    but the constructor, with its checks and normalization, is the way to make one.)

    >>> import pyir
    >>> x = pyir.var("x")
    >>> build(pyir.Tuple, [(x, x)]) is pyir.Tuple([x, x])
    True
    """
    ki = kinds.info(cls)
    vals = tuple(values)
    if len(vals) != len(ki.fields):
        raise WellFormedError(f"{ki.name} has {len(ki.fields)} fields, got {len(vals)} values")
    if ki.make is not cls or cls.__dict__.get("_derived"):
        raise InternalError(f"{ki.name} is not built from its fields alone: build it through {ki.name}()")
    for f, v in zip(ki.fields, vals):
        if not f.node:
            if type(v) is not f.type and (f.type in _EXACT or not isinstance(v, f.type)):  # type: ignore[arg-type]
                raise WellFormedError(f"{ki.name}.{f.name}: expected a {f.type.__name__} value, "  # type: ignore[union-attr]
                                      f"got {safe_repr(v)}")
        elif f.many:
            if type(v) is not tuple or not all(isinstance(x, f.sort) for x in v):  # type: ignore[arg-type]
                raise WellFormedError(f"{ki.name}.{f.name} must be a tuple of {f.sort.__name__}, "  # type: ignore[union-attr]
                                      f"got {safe_repr(v)}")
        elif not isinstance(v, f.sort) and not (f.optional and v is None):  # type: ignore[arg-type]
            raise WellFormedError(f"{ki.name}.{f.name} must be a {f.sort.__name__}"  # type: ignore[union-attr]
                                  f"{' or None' if f.optional else ''}, got {safe_repr(v)}")
    mask = ki.bit
    for f, v in zip(ki.fields, vals):
        if f in ki.children:
            for x in (v if f.many else () if v is None else (v,)):
                mask |= x._mask
    names = [f.name for f in ki.fields]
    scalar = [not f.node for f in ki.fields]

    def same(n: Node) -> bool:
        if type(n) is not cls:
            return False
        for name, v, s in zip(names, vals, scalar):
            w = getattr(n, name)
            if not (_typed_equal(w, v) if s else w is v or (type(v) is tuple and w == v)):
                return False
        return True

    stored = {n: v for n, v in zip(names, vals) if n in cls._setters}  # an _id_field may be the id
    return intern(cls, kinds.id_of(cls, vals), same, stored, mask)


def builder_twin(cls: type[Node]) -> Any:
    """The private *builder twin* of node kind ``cls``: the constructors' fast paths fill a new
    node in as a twin instance, then make it a ``cls`` before anyone else can see it::

        n = _new(_CallB); n.op = op; ...; n.id = key
        n.__class__ = Call          # the node is now immutable
        (then published in the intern table)

    The twin has exactly ``cls``'s layout (same base, same slots), so ``__class__``
    assignment is allowed, and plain ``object`` attribute setting, so each store is the
    interpreter's specialized slot store (~10 ns) instead of a call of the slot descriptor's
    ``__set__`` (~45 ns); the swap itself costs about one such call.  A twin instance never
    leaves its constructor.
    """
    base = cls.__mro__[1]
    ns = {"__slots__": cls.__dict__["__slots__"], "__module__": cls.__module__,
          "__qualname__": f"{cls.__qualname__}._Builder",
          # both, so the type's setattro slot is the generic C one (``__delattr__`` shares it)
          "__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
    twin = type(f"_{cls.__name__}Builder", (base,), ns)
    probe: Any = _new(twin)
    probe.__class__ = cls  # fails now (TypeError) if the layouts ever differ
    return twin


_set_id = Node.__dict__["id"].__set__
_set_mask = Node.__dict__["_mask"].__set__
_set_ty = Node.__dict__["_ty"].__set__
_get_ty = Node.__dict__["_ty"].__get__


def cached_type(node: Node) -> Any:
    """The type cached on ``node`` by type inference, or None."""
    try:
        return _get_ty(node, type(node))
    except AttributeError:
        return None


# -- attribute values -------------------------------------------------------------

_pack_d = struct.Struct("<d").pack


def normalize_attr_value(v: Any, where: str = "attribute", _depth: int = 0) -> Any:
    """Convert an attribute value to its immutable canonical form.

    Lists become tuples, numpy scalars become Python scalars.  Mutable or
    unsupported values, strings that are not valid Unicode, ints of
    ``MAX_ATTR_INT`` or more in magnitude and tuples nested deeper than
    ``MAX_ATTR_DEPTH`` raise :class:`AttrError`.
    """
    t = type(v)
    if t is int:
        if -MAX_ATTR_INT < v < MAX_ATTR_INT:
            return v
        raise AttrError(f"{where}: attribute int out of range (|value| must be < 2**1024)")
    if t is str:
        return v if v.isascii() else check_text(v, where, AttrError)
    if v is None or t is bool or t is float:
        return v
    if t is tuple or t is list:
        if _depth >= MAX_ATTR_DEPTH:
            raise AttrError(f"{where}: attribute tuples nested deeper than {MAX_ATTR_DEPTH}")
        return tuple(normalize_attr_value(x, where, _depth + 1) for x in v)
    if isinstance(v, Node):
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return normalize_attr_value(int(v), where)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.dtype):
        return v.name
    raise AttrError(f"{where}: unsupported attribute value {v!r:.80} of type {t.__name__} "
                    "(use None, bool, int, float, str, tuples of them, or nodes)")


def encode_attr_value(v: Any, out: list[bytes]) -> None:
    """Append the canonical, type-tagged encoding of a normalized value to ``out``.

    The encoding is injective and keyed by type: ``1``, ``1.0`` and ``True``
    differ, so do ``0.0`` and ``-0.0``; NaNs encode by their bit pattern.
    """
    t = type(v)
    if v is None:
        out.append(b"N")
    elif t is bool:
        out.append(b"B1" if v else b"B0")
    elif t is int:
        out.append(b"I%d;" % v)
    elif t is float:
        out.append(b"F" + _pack_d(v))
    elif t is str:
        s = v.encode()
        out.append(b"S%d:" % len(s) + s)
    elif t is tuple:
        out.append(b"T%d:" % len(v))
        for x in v:
            encode_attr_value(x, out)
    elif isinstance(v, Node):
        out.append(b"R" + v.id)
    else:  # pragma: no cover - normalize_attr_value rejects these first
        raise AttrError(f"cannot encode attribute value {v!r}")


def _typed_equal(a: Any, b: Any) -> bool:
    """Equality of normalized values that distinguishes 1, 1.0 and True, and 0.0 from -0.0.

    The same relation as comparing :func:`encode_attr_value` encodings (floats by bit
    pattern, nodes by identity), without encoding anything.  Normalized values nest at
    most ``MAX_ATTR_DEPTH`` deep, which bounds the recursion.
    """
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is tuple:
        return len(a) == len(b) and all(x is y or _typed_equal(x, y) for x, y in zip(a, b))
    if t is float:
        return _pack_d(a) == _pack_d(b)
    if t is int or t is str or t is bool or t is bytes:
        return a == b
    return False  # nodes (and anything else): identity only


def _same_items(a: tuple[tuple[str, Any], ...], b: tuple[tuple[str, Any], ...]) -> bool:
    """Typed equality of two ``Attrs`` item tuples."""
    if len(a) != len(b):
        return False
    for (ka, va), (kb, vb) in zip(a, b):
        if ka != kb or (va is not vb and not _typed_equal(va, vb)):
            return False
    return True


_PLAIN_SCALARS = (int, float, str, bool, type(None))


def plain_value(v: Any, depth: int = 0) -> bool:
    """``v`` holds only None, bool, int, float, str and tuples/lists of them (what a marshal
    key spells unambiguously: marshal spells any buffer, numpy scalars included, as bytes)."""
    t = type(v)
    if t in _PLAIN_SCALARS:
        return True
    if (t is tuple or t is list) and depth < 100:
        return all(plain_value(x, depth + 1) for x in v)
    return False


ATTRS_CACHE_MAX = 1024
"""Entries of the ``Attrs`` cache: ``marshal.dumps`` of a plain dict given to ``Attrs`` (format 2
for one item, 4 for more: type-exact, see ``pyir.op.registry``) -> the weak reference of the
Attrs' table entry, so ``Attrs({"Primitive": 1})`` seen before costs a key and a lookup.  Only
dicts of str names and plain values (:func:`plain_value`) are entered; holds no Attrs alive;
cleared when full."""
_attrs_cache: dict[bytes, Any] = {}
_attrs_cache_get = _attrs_cache.get
def _items_key(items: tuple[tuple[str, Any], ...]) -> bytes:
    """The key bytes of an ``Attrs``' items after its tag: each name length-prefixed, each
    value type-tagged (:func:`encode_attr_value`)."""
    out: list[bytes] = []
    for k, v in items:
        kb = k.encode()
        out.append(b"%d:" % len(kb) + kb)
        encode_attr_value(v, out)
    return b"".join(out)


class Attrs(Node, final=True):
    """An immutable, interned mapping of attribute names to immutable values.

    >>> a = Attrs({"axis": 1})
    >>> a is Attrs(axis=1), a["axis"], Attrs(axis=1) is Attrs(axis=1.0)
    (True, 1, False)
    """

    __slots__ = ("_index", "_items")
    _kind = b"A"
    _mask = 0  # no summary bits: a class attribute shadowing the slot
    _code = 13
    _fields = (Scalar("_items", tuple, key=lambda items: _items_key(items)),)  # sorted (name, value) pairs
    _derived = ("_index",)
    _items: tuple[tuple[str, Any], ...]
    _index: Mapping[str, Any]  # a read-only view (MappingProxyType) of a dict

    def __new__(cls, mapping: Mapping[str, Any] | Attrs | None = None, **kw: Any) -> Attrs:
        if type(mapping) is Attrs and not kw:
            return mapping
        given = mapping if type(mapping) is dict and not kw else kw if mapping is None else None
        ck: Any = None
        if given:  # the cache of plain dicts (see ATTRS_CACHE_MAX)
            try:
                ck = _marshal(given, 2 if len(given) == 1 else 4)
            except Exception:  # unmarshallable (nodes, deep tuples): the uncached path
                ck = None
            else:
                e = _attrs_cache_get(ck)
                if e is not None:
                    a = e()
                    if a is not None:
                        return a
        items: dict[str, Any] = {}
        if mapping is not None:
            if type(mapping) is not dict and not isinstance(mapping, (Mapping, Attrs)):
                raise AttrError(f"Attrs takes a mapping of names to values, got {mapping!r:.80}")
            items.update(mapping.items())
        items.update(kw)
        try:
            keys = sorted(items)
        except TypeError:  # keys of mixed types do not compare: name the first non-str one
            keys = list(items)
        pairs = []
        for k in keys:
            if type(k) is not str:
                raise AttrError(f"attribute names must be str, got {k!r:.80}")
            if not k.isascii():
                check_text(k, "attribute name", AttrError)
            pairs.append((k, normalize_attr_value(items[k], f"attribute {k!r}")))
        out: list[bytes] = [b"A"]
        for k, v in pairs:
            kb = k.encode()
            out.append(b"%d:" % len(kb) + kb)
            encode_attr_value(v, out)
        key = digest(b"".join(out))
        tup = tuple(pairs)
        r = _get(key)  # the hit path: no closure, no field dict
        n: Any = None if r is None else r()
        if n is None or type(n) is not Attrs or not _same_items(n._items, tup):

            def same(n: Node) -> bool:
                return type(n) is Attrs and _same_items(n._items, tup)

            n = intern(Attrs, key, same, {"_items": tup, "_index": MappingProxyType(dict(tup))}, None)
            r = _get(n.id)
        if ck is not None and r is not None and r() is n and all(
                type(k) is str and plain_value(v) for k, v in given.items()):  # type: ignore[union-attr]
            if len(_attrs_cache) >= ATTRS_CACHE_MAX:
                _attrs_cache.clear()
            _attrs_cache[ck] = r
        return n

    @classmethod
    def _from_fields(cls, items: tuple[tuple[str, Any], ...]) -> Attrs:
        return cls(dict(items))

    def __getitem__(self, name: str) -> Any:
        try:
            return self._index[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            raise AttrError(f"no attribute {name!r:.80}; have {sorted(self._index)}") from None

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``, or ``default``."""
        return self._index.get(name, default) if isinstance(name, str) else default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def keys(self) -> list[str]:
        """Attribute names, sorted."""
        return [k for k, _ in self._items]

    def items(self) -> tuple[tuple[str, Any], ...]:
        """``(name, value)`` pairs, sorted by name."""
        return self._items

    def to_dict(self) -> dict[str, Any]:
        """A fresh (mutable) dict copy."""
        return dict(self._items)

    def with_(self, **kw: Any) -> Attrs:
        """A new Attrs with ``kw`` added or replaced."""
        d = dict(self._items)
        d.update(kw)
        return Attrs(d)

    def __repr__(self) -> str:
        return "Attrs({%s})" % ", ".join(f"{k!r}: {v!r}" for k, v in self._items)


EMPTY_ATTRS = Attrs()


def attrs_of(a: Mapping[str, Any] | Attrs | None) -> Attrs:
    """Coerce ``None``, a mapping or an ``Attrs`` to an interned ``Attrs``."""
    if a is None:
        return EMPTY_ATTRS
    if type(a) is Attrs:
        return a
    return Attrs(a)
