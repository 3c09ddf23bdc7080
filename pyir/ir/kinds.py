"""Node kinds declared once: each kind lists its fields, and the generic machinery derives from that.

A kind declares its fields in its class body, in the order its constructor takes them::

    class Let(Expr, final=True):
        __slots__ = ("body", "value", "var")
        _kind = b"L"     # the tag its content id starts with
        _code = 8        # its number in the binary format: stable, never reused (optional)
        _bit = F_LET     # its summary bit (see pyir.ir.node), if it has one
        _fields = (Child("var", Var, binds=True), Child("value"), Child("body"))

Field declarations:

``Child(name, sort)``, ``OptionalChild(name, sort)``, ``Children(name, sort)``
    A node, a node or None, a tuple of nodes, each an instance of ``sort`` (by default
    the kind's own sort: ``Expr`` for an expression kind, ``Type`` for a type).  A node
    field of the kind's own sort holds **children**: ``children()`` lists them in
    declaration order, walks and mutators descend into them, a rebuild replaces them.
    A node field of another sort (a variable's type annotation, a function's return
    type, the attributes of a call or a function) is an **annotation**: stored, keyed
    and compared like a child, but kept as it is by a rebuild.  ``binds=True`` marks the
    variables the node binds (a Function's params, a Let's var).
``Scalar(name, type, key=codec)``
    A plain immutable value of exactly ``type``; ``key`` encodes it into the bytes the
    content id digests (by default: ``str`` length-prefixed UTF-8, ``int`` decimal with a
    terminator, ``tuple`` of ints as ``(d0,d1)``, ``bytes`` length-prefixed).

Beside ``_fields``, optionally: ``_identity``, the scalar fields that make each node distinct
without being structure (the uid of a reference operation: two ``ref_read(%r)`` are two reads);
alpha-equality and hashing leave them out (:func:`shape_key`); ``_key_order``, the names of
the fields the content id digests, in that order, when it is not every field in declaration
order; ``_id_field``,
the field whose value *is* the id, when nothing is digested (a variable keyed by its
unique uid alone); ``_derived``, the slots the constructor computes from the fields (an
Op's registry entry); ``_bit``, the kind's summary bit.

What derives from the declaration, per kind (:func:`declare`, run by
``Node.__init_subclass__`` for every final kind):

* ``children()`` (unless the class defines its own: ``Call``, whose ``Op`` callee is not a
  child, ``DimPoly``, whose atoms sit inside its terms -- a kind that does so also defines
  ``replace_children``, and may define a faster ``_rebuild``);
* ``replace_children(new)``: the node with its children replaced, positionally (the same
  object when nothing changed);
* ``info(kind).rebuild(node, memo)``: the functor's rebuild, children through ``memo``;
* :func:`key_bytes`, the bytes the content id digests, from the declared fields in key
  order, and :func:`content_id`, the id itself.  The hand-tuned constructors keep their
  inline key code; the tests check, for random nodes of every kind, that
  ``content_id(n) == n.id``, so the declaration is the specification of the id.
  ``pyir.ir.node.build`` interns a new kind generically with it;
* ``__match_args__`` (the public fields), so ``case Let(var, value, body):`` works;
* the registry :data:`KINDS` (name -> class, in declaration order), from which the
  serializer's kind tables, the functor's hook tables and the visitors' dispatch derive.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from xxhash import xxh3_128_digest

from ..errors import InternalError, WellFormedError

__all__ = ["Field", "Child", "OptionalChild", "Children", "Scalar", "KindInfo", "KINDS", "info",
           "declare", "key_bytes", "key_of", "content_id", "id_of", "shape_key", "field_values",
           "text_key", "sized_text_key", "index_key", "dims_key", "dtype_key", "raw_key",
           "packed_dims_key", "ranked_dims_key"]


# -- key codecs: how a scalar value enters the bytes a content id digests ----------------------


def text_key(s: str) -> bytes:
    """UTF-8 bytes as they are: only for the last field of a key (a GlobalVar's, an Op's name)."""
    return s.encode()


def sized_text_key(s: str) -> bytes:
    """Length-prefixed UTF-8 (``5:hello``): safe at any position of a key."""
    b = s.encode()
    return b"%d:" % len(b) + b


def index_key(i: int) -> bytes:
    """Decimal digits with a terminator (``3:``): a TupleGetItem's index."""
    return b"%d:" % i


def dims_key(dims: tuple[int, ...]) -> bytes:
    """A shape as ``(1,3,8,8)``."""
    return b"(" + b",".join([b"%d" % d for d in dims]) + b")"


def dtype_key(name: str) -> bytes:
    """A dtype name as it is: alphanumeric, so the ``(`` of a shape after it delimits it."""
    return name.encode()


_PACKS = [struct.Struct(f"<{k}q").pack for k in range(33)]


def packed_dims_key(dims: tuple[Any, ...]) -> bytes:
    """A shape as ``(`` then each dimension as a little-endian int64 (its rank implied by the
    length: only for the last key field -- a TensorType's).  A shape with a symbolic dimension
    is ``[`` then, per dimension, ``i`` and the int64 or ``d`` and the dimension's 16-byte id
    (so static shapes keep their ids, and the two encodings never meet)."""
    for d in dims:
        if type(d) is not int:
            return b"[" + b"".join([b"i" + _PACKS[1](d) if type(d) is int else b"d" + d.id for d in dims])
    return b"(" + (_PACKS[len(dims)](*dims) if len(dims) < 33 else struct.pack(f"<{len(dims)}q", *dims))


def ranked_dims_key(dims: tuple[int, ...]) -> bytes:
    """A shape as ``(``, its rank (one byte), each dimension as a little-endian int64 (a Constant's)."""
    return b"(" + bytes([len(dims)]) + packed_dims_key(dims)[1:]


def raw_key(b: bytes) -> bytes:
    """Bytes as they are: only for a last key field or a fixed length (a Var's 16-byte uid)."""
    return b


def _sized_bytes_key(b: bytes) -> bytes:
    return b"%d:" % len(b) + b


_DEFAULT_KEYS: dict[type, Callable[[Any], bytes]] = {
    str: sized_text_key, int: index_key, tuple: dims_key, bytes: _sized_bytes_key}
_UNDELIMITED = (text_key, raw_key, packed_dims_key)  # codecs whose output only a key's end delimits


def _node_key(v: Any) -> bytes:
    return v.id


def _optional_key(v: Any) -> bytes:
    return b"-" if v is None else v.id


def _nodes_key(vs: tuple[Any, ...]) -> bytes:
    return b"".join([v.id for v in vs])


# -- field declarations -------------------------------------------------------------------------


class Field:
    """One declared field of a node kind (see the module docstring)."""

    __slots__ = ("name", "sort", "binds", "type", "key")
    node = True  # holds nodes (else a scalar)
    many = False  # a tuple of nodes
    optional = False  # a node or None

    def __init__(self, name: str, sort: type | None = None, *, binds: bool = False) -> None:
        if type(name) is not str or not name.isidentifier():
            raise InternalError(f"a field name must be an identifier, got {name!r}")
        self.name = name
        self.sort = sort  # None: the kind's own sort (filled in by ``declare``)
        self.binds = binds
        self.type: type | None = None
        self.key: Callable[[Any], bytes] = (_nodes_key if self.many else _optional_key if self.optional
                                            else _node_key)

    def __repr__(self) -> str:
        sort = "" if self.sort is None else f", {self.sort.__name__}"
        return f"{type(self).__name__}({self.name!r}{sort}{', binds=True' if self.binds else ''})"


class Child(Field):
    """One node."""

    __slots__ = ()


class OptionalChild(Field):
    """A node or None (keyed as ``-`` when None)."""

    __slots__ = ()
    optional = True


class Children(Field):
    """A tuple of nodes."""

    __slots__ = ()
    many = True


class Scalar(Field):
    """A plain immutable value of exactly ``type``, encoded into the key by ``key``."""

    __slots__ = ()
    node = False

    def __init__(self, name: str, type_: type, *, key: Callable[[Any], bytes] | None = None) -> None:
        super().__init__(name)
        self.type = type_
        codec = key if key is not None else _DEFAULT_KEYS.get(type_)
        if codec is None:
            raise InternalError(f"Scalar {name!r}: no default key codec for {type_.__name__}; pass key=")
        self.key = codec

    def __repr__(self) -> str:
        assert self.type is not None
        return f"Scalar({self.name!r}, {self.type.__name__})"


# -- what derives from a declaration ------------------------------------------------------------


class KindInfo:
    """What :func:`declare` derived from one kind's declaration."""

    __slots__ = ("cls", "name", "tag", "code", "bit", "sort", "fields", "children", "annotations",
                 "scalars", "binders", "key_fields", "id_field", "rebuild", "make", "custom_children",
                 "identity")

    cls: type
    name: str
    tag: bytes  #: the first byte of the key
    code: int | None  #: the kind's number in the binary format (None: the formats do not store it)
    bit: int  #: the kind's summary bit (0: none)
    sort: type  #: ``Expr``, ``Type`` or the kind itself (``Attrs``)
    fields: tuple[Field, ...]  #: every field, in constructor order
    children: tuple[Field, ...]  #: the node fields of the kind's own sort
    annotations: tuple[Field, ...]  #: the node fields of another sort
    scalars: tuple[Field, ...]
    binders: tuple[Field, ...]  #: the fields whose variables the node binds
    key_fields: tuple[Field, ...]  #: the fields the key digests, in key order
    id_field: str | None  #: the field whose value is the id (nothing digested), if any
    rebuild: Callable[[Any, Any], Any]  #: ``rebuild(node, memo)``: children through ``memo``
    make: Callable[..., Any]  #: builds a node from field values in constructor order
    custom_children: bool  #: the class defines its own ``children()``
    identity: frozenset[str]  #: scalar fields that make each node distinct, not structure (a ref's uid)

    def __repr__(self) -> str:
        return f"<kind {self.name} {', '.join(map(repr, self.fields))}>"


#: Every node kind by name, in declaration order (node.py, types.py, expr.py).
KINDS: dict[str, type[Any]] = {}
_INFO: dict[type, KindInfo] = {}


def info(cls: type) -> KindInfo:
    """The :class:`KindInfo` of the node kind ``cls``."""
    try:
        return _INFO[cls]
    except KeyError:
        raise InternalError(f"{getattr(cls, '__name__', cls)!r} is not a declared node kind") from None


def field_values(node: Any) -> tuple[Any, ...]:
    """The values of ``node``'s fields, in declaration (constructor) order."""
    return tuple([getattr(node, f.name) for f in _INFO[type(node)].fields])


def key_bytes(node: Any) -> bytes:
    """The bytes ``node``'s content id digests, derived from its kind's declaration."""
    i = _INFO[type(node)]
    return i.tag + b"".join([f.key(getattr(node, f.name)) for f in i.key_fields])


def shape_key(node: Any) -> bytes:
    """``node``'s key bytes with each child left out (a tuple of children by its length, an
    optional child by whether it is there): two nodes of one kind have the same shape key
    exactly when they differ in their children only.  Generic walks (alpha-equality) compare
    a kind they have no hand-tuned branch for with it."""
    i = _INFO[type(node)]
    out = [i.tag]
    for f in i.key_fields:
        if f.name in i.identity:  # a uid that keeps effectful nodes apart: not structure
            continue
        v = getattr(node, f.name)
        if f not in i.children:
            out.append(f.key(v))
        elif f.many:
            out.append(b"%d:" % len(v))
        elif f.optional:
            out.append(b"-" if v is None else b"+")
    return b"".join(out)


def key_of(cls: type, values: tuple[Any, ...]) -> bytes:
    """The key bytes of a ``cls`` node with these field values (constructor order)."""
    i = _INFO[cls]
    by_name = {f.name: v for f, v in zip(i.fields, values)}
    return i.tag + b"".join([f.key(by_name[f.name]) for f in i.key_fields])


def content_id(node: Any) -> bytes:
    """``node``'s content id as its declaration defines it: the digest of :func:`key_bytes`,
    or the value of the kind's ``_id_field``.  (A node re-keyed after a genuine 128-bit
    collision has another id; that never happens outside tests forcing collisions.)"""
    i = _INFO[type(node)]
    if i.id_field is not None:
        return getattr(node, i.id_field)
    return xxh3_128_digest(key_bytes(node))


def id_of(cls: type, values: tuple[Any, ...]) -> bytes:
    """The content id of a ``cls`` node with these field values (constructor order)."""
    i = _INFO[cls]
    if i.id_field is not None:
        return values[[f.name for f in i.fields].index(i.id_field)]
    return xxh3_128_digest(key_of(cls, values))


def _slots_of(cls: type) -> set[str]:
    out: set[str] = set()
    for k in cls.__mro__:
        s = k.__dict__.get("__slots__", ())
        out.update((s,) if isinstance(s, str) else s)
    return out


def declare(cls: type, sort: type, base_slots: frozenset[str]) -> KindInfo:
    """Read ``cls``'s declaration, derive its generic methods, and register it in :data:`KINDS`.

    ``sort`` is the kind's sort (``Expr``, ``Type``, or the kind itself); ``base_slots``
    are the slots every node has (id, summary, cached type).  A malformed declaration
    raises :class:`~pyir.errors.InternalError`.
    """
    d = cls.__dict__
    name = cls.__name__
    fields = d.get("_fields")
    if type(fields) is not tuple or not all(isinstance(f, Field) for f in fields):
        raise InternalError(f"node kind {name} must declare _fields, a tuple of Child/Children/"
                            f"OptionalChild/Scalar, got {fields!r:.80}")
    tag, code, bit = d.get("_kind"), d.get("_code"), getattr(cls, "_bit", 0)
    if type(tag) is not bytes or not tag:
        raise InternalError(f"node kind {name} must declare _kind, its key tag (bytes)")
    if code is not None and (type(code) is not int or not 0 <= code < 256):
        raise InternalError(f"node kind {name}: _code, its number in the binary format, must be an int "
                            "in [0, 256) (or absent: a kind the formats do not store)")
    for other in _INFO.values():  # tags prefix-free, so a key's tag tells its kind
        if (other.name == name or other.tag.startswith(tag) or tag.startswith(other.tag)
                or (code is not None and other.code == code)):
            raise InternalError(f"node kind {name} clashes with {other.name} (the same name or _code, or "
                                "a _kind tag that is a prefix of the other)")
    names = [f.name for f in fields]
    derived = d.get("_derived", ())
    id_field = d.get("_id_field")
    if id_field is not None and id_field not in names:
        raise InternalError(f"node kind {name}: _id_field {id_field!r} is not a field")
    slots = _slots_of(cls) - base_slots - {"__weakref__"}
    stored = set(names) - ({id_field} if id_field is not None and id_field not in slots else set())
    if len(set(names)) != len(names) or stored | set(derived) != slots:
        raise InternalError(f"node kind {name}: fields {names} and derived slots {list(derived)} must be "
                            f"its slots {sorted(slots)}, each once")
    for f in fields:
        if f.sort is None and f.node:
            f.sort = sort
    key_order = d.get("_key_order", tuple(names))
    by_name = {f.name: f for f in fields}
    try:
        key_fields = tuple([by_name[n] for n in key_order])
    except KeyError as e:
        raise InternalError(f"node kind {name}: _key_order names no field {e}") from None
    for f in key_fields[:-1]:
        if f.many or f.key in _UNDELIMITED:
            raise InternalError(f"node kind {name}: key field {f.name!r} is not delimited; only the last "
                                "key field may be a tuple of nodes or raw bytes")
    i = KindInfo()
    i.cls, i.name, i.tag, i.code, i.bit, i.sort, i.fields = cls, name, tag, code, bit, sort, fields
    i.children = tuple([f for f in fields if f.node and f.sort is not None and issubclass(f.sort, sort)])
    i.annotations = tuple([f for f in fields if f.node and f not in i.children])
    i.scalars = tuple([f for f in fields if not f.node])
    i.binders = tuple([f for f in fields if f.binds])
    if any(f not in i.children for f in i.binders):
        raise InternalError(f"node kind {name}: only children bind variables")
    i.key_fields = key_fields
    i.id_field = id_field
    i.identity = frozenset(d.get("_identity", ()))
    i.make = d["_from_fields"].__get__(None, cls) if "_from_fields" in d else cls
    i.custom_children = "children" in d
    if i.custom_children:
        if "replace_children" not in d:
            raise InternalError(f"node kind {name} defines children(): it must define replace_children "
                                "too")
        i.rebuild = d["_rebuild"].__get__(None, cls) if "_rebuild" in d else _custom_rebuild
    else:
        if i.children:
            cls.children = _gen_children(i)  # type: ignore[attr-defined]
        i.rebuild = _gen_rebuild(i)
        if "replace_children" not in d:
            cls.replace_children = _replace_children  # type: ignore[attr-defined]
    if "__match_args__" not in d:
        type.__setattr__(cls, "__match_args__", tuple([n for n in names if not n.startswith("_")]))
    KINDS[name] = cls
    _INFO[cls] = i
    return i


# The derived children() and rebuild are generated Python source (as dataclasses do), so
# they cost what the hand-written ladders they replace cost: plain slot loads, no loop.


def _compile(src: str, fn: str, env: dict[str, Any]) -> Any:
    ns: dict[str, Any] = {}
    exec(compile(src, f"<pyir.ir.kinds: {fn}>", "exec"), env, ns)  # field names are identifiers
    return ns[fn]


def _opt(x: Any) -> tuple[Any, ...]:
    return () if x is None else (x,)


def _gen_children(i: KindInfo) -> Any:
    parts = [f"*self.{f.name}" if f.many else f"*_opt(self.{f.name})" if f.optional
             else f"self.{f.name}" for f in i.children]
    only = i.children[0]
    body = f"self.{only.name}" if len(parts) == 1 and only.many else f"({', '.join(parts)},)"
    src = f"def children(self):\n    return {body}\n"
    fn = _compile(src, "children", {"_opt": _opt})
    fn.__qualname__ = f"{i.name}.children"
    fn.__doc__ = f"Direct child nodes, in evaluation order: {', '.join(f.name for f in i.children)}."
    return fn


def _leaf_rebuild(n: Any, memo: Any) -> Any:
    return n


def _custom_rebuild(n: Any, memo: Any) -> Any:
    """The memo rebuild of a kind with hand-written children() and replace_children()."""
    return n.replace_children([memo[c] for c in n.children()])


def _replaced(i: KindInfo, f: Field, x: Any) -> WellFormedError:
    sort = f.sort.__name__ if f.sort is not None else "node"
    if f.binds:
        return WellFormedError(f"a mutator replaced a variable bound by a {i.name} ({i.name}.{f.name}) by "
                               f"{x!r:.80}; bound variables (function parameters, let variables) can "
                               f"only be renamed to {sort}s")
    return WellFormedError(f"a mutator replaced {i.name}.{f.name} by {x!r:.80}, which must be a {sort}")


def _gen_rebuild(i: KindInfo) -> Any:
    if not i.children:
        return _leaf_rebuild
    lines = ["def rebuild(n, memo):"]
    same = []
    args = []
    env: dict[str, Any] = {"make": i.make, "_replaced": _replaced, "_i": i}
    for k, f in enumerate(i.fields):
        a = f"n.{f.name}"
        if f not in i.children:
            args.append(a)
            continue
        v = f"v{k}"
        if f.many:
            lines.append(f"    {v} = tuple([memo[c] for c in {a}])")
            same.append(f"{v} == {a}")
        elif f.optional:
            lines.append(f"    {v} = {a}")
            lines.append(f"    if {v} is not None:")
            lines.append(f"        {v} = memo[{v}]")
            same.append(f"{v} is {a}")
        else:
            lines.append(f"    {v} = memo[{a}]")
            same.append(f"{v} is {a}")
        args.append(v)
    lines.append(f"    if {' and '.join(same)}:")
    lines.append("        return n")
    for k, f in enumerate(i.fields):  # a child narrower than the sort (a Var) must stay one
        if f in i.children and f.sort is not i.sort:
            env[f"S{k}"], env[f"F{k}"] = f.sort, f
            if f.many:
                lines.append(f"    for c in v{k}:")
                lines.append(f"        if not isinstance(c, S{k}):")
                lines.append(f"            raise _replaced(_i, F{k}, c)")
            else:
                opt = f" and v{k} is not None" if f.optional else ""
                lines.append(f"    if not isinstance(v{k}, S{k}){opt}:")
                lines.append(f"        raise _replaced(_i, F{k}, v{k})")
    lines.append(f"    return make({', '.join(args)})")
    fn = _compile("\n".join(lines) + "\n", "rebuild", env)
    fn.__qualname__ = f"rebuild_{i.name}"
    fn.__doc__ = f"A {i.name} with its children replaced through ``memo`` (the node itself if none changed)."
    return fn


def _replace_children(self: Any, new: Any) -> Any:
    """This node with its children (as ``children()`` lists them) replaced by ``new``, positionally.

    Returns the node itself when every new child is the old one; otherwise builds the new
    node through the constructor (so it is interned and checked).
    """
    i = _INFO[type(self)]
    new = tuple(new)
    old = self.children()
    if len(new) != len(old):
        raise WellFormedError(f"{i.name}.replace_children: {len(new)} children given, the node has "
                              f"{len(old)}")
    if all(a is b for a, b in zip(new, old)):
        return self
    values = []
    p = 0
    for f in i.fields:
        v = getattr(self, f.name)
        if f in i.children:
            if f.many:
                v, p = new[p:p + len(v)], p + len(v)
            elif v is not None or not f.optional:
                v, p = new[p], p + 1
        values.append(v)
    return i.make(*values)
