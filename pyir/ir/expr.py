"""Expressions (Relay names): Var, GlobalVar, Constant, Op, Call, Tuple,
TupleGetItem, Function, Let, If.

All are hash-consed (see :mod:`pyir.ir.node`): building an expression equal to a
live one returns that very object.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from ..errors import AttrError, UnknownOpError, WellFormedError
from . import hooks
from .kinds import Child, Children, OptionalChild, Scalar, ranked_dims_key, raw_key, text_key
from .node import (
    EMPTY_ATTRS,
    F_CONST,
    F_FUNC,
    F_GETITEM,
    F_GLOBAL,
    F_IF,
    F_LET,
    F_TUPLE,
    F_UNTYPED,
    F_VAR,
    MAX_INDEX,
    Attrs,
    Node,
    _collided,
    _drop,
    _get,
    _new,
    _Ref,
    _remove_dead_weakref,
    _setdefault,
    _table,
    attrs_of,
    builder_twin,
    cached_type,
    check_text,
    digest,
    intern,
    intern_mask,
    mask_get,
    publish,
    short_int,
)
from .types import TENSOR_DTYPES, TensorType, Type, _pack_dims, _tt_cache_get, normalize_dtype

__all__ = [
    "Expr",
    "Var",
    "GlobalVar",
    "Constant",
    "Op",
    "Call",
    "Tuple",
    "TupleGetItem",
    "Function",
    "Let",
    "If",
    "var",
    "const",
    "as_expr",
]


class Expr(Node):
    """Base class of expressions."""

    __slots__ = ()

    @property
    def checked_type(self) -> Type:
        """The type of this expression, inferred bottom-up (iteratively) and cached.

        Expressions that call global functions need their module: use
        ``pyir.infer_type(expr, mod)`` for those.
        """
        t = cached_type(self)
        if t is not None:
            return t
        return hooks.infer_type(self)

    def __str__(self) -> str:
        return hooks.astext(self, show_meta_data=False)

    def __repr__(self) -> str:
        return hooks.short_repr(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    # Arithmetic sugar: ``a + b`` builds ``add(a, b)`` and so on.
    def __add__(self, other: Any) -> Call:
        return _sugar("add", self, other)

    def __radd__(self, other: Any) -> Call:
        return _sugar("add", other, self)

    def __sub__(self, other: Any) -> Call:
        return _sugar("subtract", self, other)

    def __rsub__(self, other: Any) -> Call:
        return _sugar("subtract", other, self)

    def __mul__(self, other: Any) -> Call:
        return _sugar("multiply", self, other)

    def __rmul__(self, other: Any) -> Call:
        return _sugar("multiply", other, self)

    def __truediv__(self, other: Any) -> Call:
        return _sugar("divide", self, other)

    def __neg__(self) -> Call:
        return _sugar("negative", self)

    # Equality stays identity even with the arithmetic operators above.
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


# -- Var ------------------------------------------------------------------------


def _uid_source() -> Any:
    """A fresh source of 16-byte uids: a counter in the low 64 bits over a random 64-bit prefix,
    little-endian (so the leading bytes, which reprs and messages show, differ between variables).

    Each uid is one call of C code (``map`` over ``itertools.count``), so uids are unique
    across threads without a lock.
    """
    seed = int.from_bytes(os.urandom(16), "big")
    start = ((seed >> 64) << 64) + (seed & ((1 << 62) - 1)) + 1  # counter from a random start < 2^62
    to_bytes: Any = int.to_bytes
    return map(to_bytes, itertools.count(start), itertools.repeat(16), itertools.repeat("little")).__next__


_next_uid = _uid_source()


def _reseed_uids() -> None:
    # a forked child must not draw the parent's uids: it gets its own random prefix
    global _next_uid
    _next_uid = _uid_source()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_uids)


def fresh_uid() -> bytes:
    """A 16-byte variable uid, unique across processes (random prefix + counter)."""
    return _next_uid()


_F_VAR_UNTYPED = F_VAR | F_UNTYPED


class Var(Expr, final=True):
    """A local variable: a name hint, a unique ``uid`` and an optional type annotation.

    Two calls ``Var("x")`` make two different variables; ``Var`` with an
    existing ``uid`` (as serialization does) returns that variable.

    A variable's ``id`` *is* its uid (the same bytes object): uids are already unique, so
    there is nothing to digest.  A fresh uid never lands on a live node (on the impossible
    clash with one, another uid is drawn); a given uid that is the id of a live node of
    another kind -- only a forged one can be -- is a WellFormedError.  So variables are never
    re-keyed, and ``v.id == v.uid`` always holds.
    """

    __slots__ = ("name_hint", "type_annotation")
    _kind = b"V"
    _code = 0
    _bit = F_VAR  # and F_UNTYPED without an annotation
    _fields = (Scalar("name_hint", str), OptionalChild("type_annotation", Type),
               Scalar("uid", bytes, key=raw_key))
    _key_order = ("uid",)  # the uid is the variable; name and annotation come with it
    _id_field = "uid"  # ... and it is the id itself (the uid property reads the id)
    name_hint: str
    type_annotation: Type | None

    def __new__(cls, name_hint: str, type_annotation: Type | None = None, uid: bytes | None = None) -> Var:
        if type(name_hint) is not str or not name_hint.isascii():
            name_hint = _var_name(name_hint)
        if type_annotation is None:
            mask = _F_VAR_UNTYPED
        elif type(type_annotation) is TensorType or isinstance(type_annotation, Type):
            mask = F_VAR
        else:
            raise WellFormedError(f"Var type annotation must be a Type, got {type_annotation!r:.80}")
        if uid is None:  # a fresh uid: no lookup
            while True:
                uid = _next_uid()
                n: Any = _new(_VarB)
                n.name_hint = name_hint
                n.type_annotation = type_annotation
                n._mask = mask
                n.id = uid
                n.__class__ = Var
                ref = _Ref(n, _drop)
                ref.key = uid  # type: ignore[attr-defined]
                if _setdefault(uid, ref) is ref:
                    return n
                # the slot holds a (forged) node of this id: draw another uid
        if type(uid) is not bytes or len(uid) != 16:
            raise WellFormedError("Var uid must be 16 bytes")
        return _var_of_uid(name_hint, type_annotation, uid, mask)

    @property
    def uid(self) -> bytes:
        """The variable's unique 16-byte uid (also its ``id``)."""
        return self.id


def _var_name(name_hint: Any) -> str:
    """Check a Var name that is not a plain ASCII str (convert a str subclass to a str)."""
    if type(name_hint) is not str:
        if not isinstance(name_hint, str):
            raise WellFormedError(f"Var name must be a str, got {name_hint!r:.80}")
        name_hint = str.__getitem__(name_hint, slice(None))  # a plain str
    return check_text(name_hint, "Var name")


def _var_of_uid(name_hint: str, type_annotation: Type | None, uid: bytes, mask: int) -> Var:
    """The variable ``uid``: the live one (which must have this name and type), or a new one
    keyed by its uid.  Lock-free like :func:`pyir.ir.node.publish`."""
    n: Any = None
    while True:
        r = _get(uid)
        if r is not None:
            other = r()
            if other is not None:
                if type(other) is not Var:
                    raise WellFormedError(f"variable uid {uid.hex()} is the id of a live "
                                          f"{type(other).__name__} node")
                if other.name_hint != name_hint or other.type_annotation is not type_annotation:
                    raise WellFormedError(f"variable uid {uid.hex()} is already %{other.name_hint} with "
                                          "another name or type")
                return other
            _remove_dead_weakref(_table, uid)  # only if it is still dead (atomic)
            continue
        if n is None:
            n = _new(_VarB)
            n.name_hint = name_hint
            n.type_annotation = type_annotation
            n._mask = mask
            n.id = uid
            n.__class__ = Var
            ref = _Ref(n, _drop)
            ref.key = uid  # type: ignore[attr-defined]
        if _setdefault(uid, ref) is ref:
            return n


_VarB = builder_twin(Var)


class GlobalVar(Expr, final=True):
    """A reference to a function of the module, by name: ``GlobalVar("main")``."""

    __slots__ = ("name_hint",)
    _kind = b"G"
    _code = 1
    _bit = F_GLOBAL
    _fields = (Scalar("name_hint", str, key=text_key),)
    name_hint: str

    def __new__(cls, name_hint: str) -> GlobalVar:
        if type(name_hint) is not str:
            if not isinstance(name_hint, str):
                raise WellFormedError(f"GlobalVar name must be a non-empty str, got {name_hint!r:.80}")
            name_hint = str.__getitem__(name_hint, slice(None))  # a plain str
        if not name_hint:
            raise WellFormedError("GlobalVar name must be a non-empty str, got ''")
        if not name_hint.isascii():
            check_text(name_hint, "GlobalVar name")
        return intern(GlobalVar, digest(b"G" + name_hint.encode()),
                      lambda n: type(n) is GlobalVar and n.name_hint == name_hint,
                      {"name_hint": name_hint}, F_GLOBAL)


# -- Constant ---------------------------------------------------------------------


def _default_array(value: Any, dtype: Any) -> np.ndarray:
    if dtype is not None:
        return np.asarray(value, dtype=normalize_dtype(dtype))
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, bool):
        return np.asarray(value, dtype="bool")
    if isinstance(value, int):
        return np.asarray(value, dtype="int32")
    if isinstance(value, float):
        return np.asarray(value, dtype="float32")
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        arr = arr.astype("float32")
    elif arr.dtype == np.int64:
        arr = arr.astype("int32")
    return arr


def _shared_bytes(arr: np.ndarray) -> bytes:
    """The bytes of a C-contiguous ``arr``: the very ``bytes`` object it views when it views one
    whole (``np.frombuffer(raw)``, as the ONNX importer makes of an initializer's raw data: bytes
    are immutable, so sharing them is safe and saves a copy of the weights), else a copy."""
    root: Any = arr.base
    while type(root) is np.ndarray:
        root = root.base
    if type(root) is bytes and len(root) == arr.nbytes:
        return root  # a contiguous view of all of a buffer's bytes is exactly that buffer
    return arr.tobytes()


_DTYPE_NAMES: dict[Any, str] = {}
_CANONICAL_DTYPES = {name: np.dtype(name) for name in TENSOR_DTYPES}


def _dtype_name(dt: Any) -> str:
    """``dt.name``, memoized (numpy computes it in Python, ~1.5 µs)."""
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = dt.name
        if name in _CANONICAL_DTYPES:  # only supported dtypes are remembered: the memo stays bounded
            _DTYPE_NAMES[dt] = name
    return name


CONST_CACHE_MAX = 4096
"""Entries of the scalar-constant cache: ``(type, value, dtype)`` of a Python float, int or
bool given to ``Constant`` (floats by bit pattern, so 0.0 and -0.0, NaN payloads stay apart;
dtype None or a str as given) -> the weak reference of its table entry.  Holds no constant
alive, cleared when full."""
_const_cache: dict[Any, Any] = {}
_const_cache_get = _const_cache.get
_pack_d = struct.Struct("<d").pack
_CONST_PREFIX = {name: b"K" + name.encode() + b"(" for name in TENSOR_DTYPES}
_RANK_BYTES = [bytes([k]) for k in range(256)]


class Constant(Expr, final=True):
    """A constant tensor, keyed by dtype, shape and bytes.

    The bytes are private and immutable: :attr:`data` hands out a fresh read-only
    view each time, so reshaping or retyping it never changes the constant.
    ``pyir.const(0.0) is pyir.const(0.0)``; ``0.0`` and ``-0.0`` are different
    constants; NaNs intern by bit pattern; bool data is stored as 0/1 bytes.

    What pure Python cannot prevent: writing the slots with ``object.__setattr__``,
    writing the bytes' memory through ``ctypes`` or a hand-made ``__array_interface__``
    pointer; anything that does so breaks interning for the whole process.
    """

    __slots__ = ("_buf", "_dtype", "_shape")
    _kind = b"K"
    _code = 2
    _bit = F_CONST
    _fields = (Scalar("_dtype", np.dtype, key=lambda dt: _dtype_name(dt).encode()),
               Scalar("_shape", tuple, key=ranked_dims_key),
               Scalar("_buf", bytes, key=lambda buf: digest(buf) if buf else b""))
    _buf: bytes
    _dtype: np.dtype
    _shape: tuple[int, ...]

    def __new__(cls, data: Any, dtype: Any = None) -> Constant:
        t = type(data)
        if (t is float or t is int or t is bool) and (dtype is None or type(dtype) is str):
            # a Python scalar: the cache maps it (exactly: by type, floats by bit pattern) to
            # the table entry of its constant
            ck: Any = (t, _pack_d(data) if t is float else data, dtype)
            r = _const_cache_get(ck)
            if r is not None:
                n = r()
                if n is not None:
                    return n
        else:
            ck = None
        try:
            arr = _default_array(data, dtype)
            if not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)
        except (WellFormedError, MemoryError):
            raise
        except Exception as e:  # numpy's conversions raise TypeError, ValueError, OverflowError ...
            raise WellFormedError(f"cannot make a constant of {data!r:.80}: {type(e).__name__}: {e}"
                                  ) from None
        dt = _DTYPE_NAMES.get(arr.dtype)
        if dt is None:
            if arr.dtype.hasobject or arr.dtype.fields is not None:
                raise WellFormedError(f"Constant dtype {arr.dtype} is not supported")
            dt = _dtype_name(arr.dtype)
        cdt = _CANONICAL_DTYPES.get(dt)
        if cdt is None:
            raise WellFormedError(f"Constant dtype {dt} is not supported (use one of "
                                  f"{', '.join(TENSOR_DTYPES)})")
        if not arr.dtype.isnative:
            arr = arr.astype(cdt)  # key (and store) native byte order: '>f4' and '<f4' data agree
        elif dt == "bool":
            arr = arr != 0  # canonical 0/1 bytes (a bool view of other bytes means the same)
        shape = tuple(arr.shape)
        buf = _shared_bytes(arr)
        # b"K<dtype>(", the rank (one byte), the dims as int64, the digest of the bytes (none if
        # empty): injective, as the rank gives the dims' length and the dims whether bytes follow
        key = digest(b"".join((_CONST_PREFIX[dt], _RANK_BYTES[len(shape)], _pack_dims(shape),
                               digest(buf) if buf else b"")))
        r = _get(key)
        if r is not None:
            n = r()
            if type(n) is not Constant or n._dtype is not cdt or n._shape != shape or n._buf != buf:
                n = None
        elif key not in _collided:
            n = _new(_ConstantB)
            n._buf = buf
            n._dtype = cdt
            n._shape = shape
            n._mask = F_CONST
            n.id = key
            n.__class__ = Constant
            r = _Ref(n, _drop)
            r.key = key  # type: ignore[attr-defined]
            if _setdefault(key, r) is not r:
                n = None
        else:
            n = None
        if n is None:
            n = intern(Constant, key, lambda n: (type(n) is Constant and n._dtype is cdt
                                                 and n._shape == shape and n._buf == buf),
                       {"_buf": buf, "_dtype": cdt, "_shape": shape}, F_CONST)
            r = _get(n.id)
        if ck is not None and r is not None and r() is n:
            if len(_const_cache) >= CONST_CACHE_MAX:
                _const_cache.clear()
            _const_cache[ck] = r
        return n

    @classmethod
    def _from_fields(cls, dtype: np.dtype, shape: tuple[int, ...], buf: bytes) -> Constant:
        return cls(np.frombuffer(buf, dtype).reshape(shape))

    @property
    def data(self) -> np.ndarray:
        """The data: a new read-only array over the constant's immutable bytes.

        Each access returns a fresh view, so changing its ``shape``, ``dtype`` or
        ``strides`` changes that view only; it cannot be made writable.
        """
        return np.ndarray(self._shape, self._dtype, self._buf)

    @property
    def dtype(self) -> str:
        """dtype name of the data."""
        return _dtype_name(self._dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the data."""
        return self._shape


_ConstantB = builder_twin(Constant)


# -- Op -----------------------------------------------------------------------------

_ops: dict[str, Op] = {}  # name -> the Op node (operators are never unregistered)
_ops_get = _ops.get


class Op(Expr, final=True):
    """A registered primitive operator, by name: ``Op("nn.relu")``."""

    __slots__ = ("name", "_def")
    _kind = b"O"
    _code = 3
    _fields = (Scalar("name", str, key=text_key),)  # its summary bit is the operator's own
    _derived = ("_def",)
    name: str
    _def: Any

    def __new__(cls, name: str) -> Op:
        n = _ops_get(name) if type(name) is str else None
        if n is not None:
            return n
        from .opdef import get_op_def

        if type(name) is not str:
            if not isinstance(name, str):
                raise UnknownOpError(f"operator names are str, got {name!r:.80}")
            name = str.__getitem__(name, slice(None))  # a plain str
        odef = get_op_def(name)
        n = intern(Op, digest(b"O" + name.encode()),
                   lambda n: type(n) is Op and n.name == name, {"name": name, "_def": odef},
                   odef.mask)
        _ops.setdefault(name, n)  # registered operators live as long as the process
        return n

    @staticmethod
    def get(name: str) -> Op:
        """The operator named ``name`` (UnknownOpError if unregistered)."""
        return Op(name)

    @property
    def op_def(self) -> Any:
        """The registry entry (:class:`pyir.op.registry.OpDef`)."""
        return self._def


# -- Call: the hot path -----------------------------------------------------------------

_EMPTY_ID = EMPTY_ATTRS.id


class Call(Expr, final=True):
    """``op(args..., attrs)``: a call of an operator, a function or a global function.

    Calls of operators have their attributes normalized through the operator's
    schema (defaults filled in), so equal calls are one node.
    """

    __slots__ = ("args", "attrs", "op")
    _kind = b"C"
    _code = 4
    _fields = (Child("op"), Children("args"), Child("attrs", Attrs))
    _key_order = ("op", "attrs", "args")
    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs

    def __new__(cls, op: Expr | str, args: Iterable[Any] = (),
                attrs: Mapping[str, Any] | Attrs | None = None, *, _checked: bool = False) -> Call:
        if _checked and type(args) is tuple and type(attrs) is Attrs:  # the passes' and loaders' path
            return make_call(op, args, attrs)  # type: ignore[arg-type]
        if attrs is not None and type(attrs) is not Attrs and type(attrs) is not dict \
                and not isinstance(attrs, Mapping):
            raise AttrError(f"Call attributes must be a mapping or Attrs, got {attrs!r:.80}")
        if type(args) is not tuple:
            try:
                args = tuple(as_expr(a) for a in args)
            except TypeError:
                raise WellFormedError(f"Call arguments must be a sequence of expressions, got {args!r:.80}"
                                      ) from None
        if not _checked:
            if type(op) is str:
                op = Op(op)
            if type(op) is Op:
                odef = op._def
                if odef.num_inputs != len(args):
                    odef.check_arity(len(args))
                if attrs or odef.attrs:
                    attrs = odef.normalize_attrs(attrs)
            elif not isinstance(op, Expr):
                raise WellFormedError(f"Call target must be an Op or an expression, got {op!r}")
            for a in args:
                if not isinstance(a, Expr):
                    raise WellFormedError(f"Call arguments must be expressions, got {a!r}")
        if attrs is None:
            attrs = EMPTY_ATTRS
        elif type(attrs) is not Attrs:
            attrs = attrs_of(attrs)
        return make_call(op, args, attrs)  # type: ignore[arg-type]

    # Hand-written: an Op callee is not a child (walks and mutators never visit operators).
    def children(self) -> tuple[Node, ...]:
        if type(self.op) is Op:
            return self.args
        return (self.op, *self.args)

    def replace_children(self, new: Iterable[Node]) -> Call:
        new = tuple(new)
        if len(new) != len(self.args) + (type(self.op) is not Op):
            raise WellFormedError(f"Call.replace_children: {len(new)} children given, the node has "
                                  f"{len(self.children())}")
        op: Any = self.op
        if type(op) is not Op:
            op, new = new[0], new[1:]
        if op is self.op and new == self.args:
            return self
        return Call(op, new, self.attrs)

    @staticmethod
    def _rebuild(n: Call, memo: Mapping[Node, Any]) -> Call:
        """The functor's rebuild of a call: children through ``memo``, an Op callee kept."""
        op = n.op
        args = n.args
        new_args = tuple([memo[a] for a in args])
        new_op = op if type(op) is Op else memo[op]
        if new_op is op and new_args == args:
            return n
        return Call(new_op, new_args, n.attrs, _checked=type(new_op) is Op)


def make_call(op: Expr, args: tuple[Expr, ...], attrs: Attrs) -> Call:
    """The interned ``Call`` of checked parts: the hot path of ``Call()`` and the builders.

    ``op`` is an expression, ``args`` a tuple of expressions and ``attrs`` the canonical
    Attrs (for an operator, its normalized attributes); nothing is checked here.

    The key is ``b"C" + op.id + attrs.id + the arguments' ids`` (as :func:`new_call`'s callers
    compute it); up to four arguments are unrolled (FuseOps' fused calls take three or four), and
    a miss into an empty slot builds the node here (:func:`new_call` inlined): no Python call.
    """
    n = len(args)
    if n == 1:
        a0 = args[0]
        key = digest(b"C" + op.id + attrs.id + a0.id)
        mask = op._mask | a0._mask
    elif n == 2:
        a0, a1 = args
        key = digest(b"".join((b"C", op.id, attrs.id, a0.id, a1.id)))
        mask = op._mask | a0._mask | a1._mask
    elif n == 3:
        a0, a1, a2 = args
        key = digest(b"".join((b"C", op.id, attrs.id, a0.id, a1.id, a2.id)))
        mask = op._mask | a0._mask | a1._mask | a2._mask
    elif n == 4:
        a0, a1, a2, a3 = args
        key = digest(b"".join((b"C", op.id, attrs.id, a0.id, a1.id, a2.id, a3.id)))
        mask = op._mask | a0._mask | a1._mask | a2._mask | a3._mask
    else:
        mask = op._mask
        parts = [b"C", op.id, attrs.id]
        for a in args:
            parts.append(a.id)
            mask |= a._mask
        key = digest(b"".join(parts))
    node: Any
    r = _get(key)
    if r is not None:
        node = r()
        if type(node) is Call and node.op is op and node.attrs is attrs and node.args == args:
            return node
    elif not _collided or key not in _collided:  # an empty slot: the node goes here
        node = _new(_CallB)
        node.op = op
        node.args = args
        node.attrs = attrs
        node._mask = mask_get(mask) or intern_mask(mask)
        node.id = key
        node.__class__ = Call
        ref = _Ref(node, _drop)
        ref.key = key  # type: ignore[attr-defined]
        if _setdefault(key, ref) is ref:
            return node
    return new_call(op, args, attrs, key, mask)


def new_call(op: Expr, args: tuple[Expr, ...], attrs: Attrs, key: bytes, mask: int) -> Call:
    """Create and publish the Call of ``key`` (its digest) and ``mask``, or return the live
    equal one (a race, a collision): the miss path of :func:`make_call` and the builders."""
    node: Any = _new(_CallB)
    node.op = op
    node.args = args
    node.attrs = attrs
    node._mask = mask_get(mask) or intern_mask(mask)
    node.id = key
    node.__class__ = Call
    if key not in _collided:  # else an equal call may live further along the probe sequence
        ref = _Ref(node, _drop)
        ref.key = key  # type: ignore[attr-defined]
        if _setdefault(key, ref) is ref:
            return node
    return publish(node, key, lambda m: type(m) is Call and m.op is op and m.attrs is attrs
                   and m.args == args)


_CallB = builder_twin(Call)


# -- the rest ---------------------------------------------------------------------------


def _expr(x: Any, what: str) -> Expr:
    if not isinstance(x, Expr):
        hint = "; for a tuple value, wrap it in pyir.Tuple([...])" if isinstance(x, (list, tuple)) else ""
        raise WellFormedError(f"{what} must be an expression, got {x!r:.200}{hint}")
    return x


class Tuple(Expr, final=True):
    """A tuple of expressions."""

    __slots__ = ("fields",)
    _kind = b"T"
    _code = 5
    _bit = F_TUPLE
    _fields = (Children("fields"),)
    fields: tuple[Expr, ...]

    def __new__(cls, fields: Iterable[Any]) -> Tuple:
        if type(fields) is tuple:
            fs = fields
        else:
            try:
                fs = tuple(fields)
            except TypeError:
                raise WellFormedError(f"Tuple fields must be a sequence of expressions, got {fields!r}"
                                      ) from None
        parts = [b"T"]
        mask = F_TUPLE
        for f in fs:
            if not isinstance(f, Expr):
                fs = tuple([as_expr(f) for f in fs])
                parts = [b"T"]
                mask = F_TUPLE
                for f in fs:
                    parts.append(f.id)
                    mask |= f._mask
                break
            parts.append(f.id)
            mask |= f._mask
        key = digest(b"".join(parts))
        r = _get(key)
        if r is not None:
            n: Any = r()
            if type(n) is Tuple and n.fields == fs:
                return n
        elif key not in _collided:
            n = _new(_TupleB)
            n.fields = fs
            n._mask = mask_get(mask) or intern_mask(mask)
            n.id = key
            n.__class__ = Tuple
            ref = _Ref(n, _drop)
            ref.key = key  # type: ignore[attr-defined]
            if _setdefault(key, ref) is ref:
                return n
        return intern(Tuple, key, lambda n: type(n) is Tuple and n.fields == fs, {"fields": fs}, mask)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i: int) -> Expr:
        return self.fields[i]


_TupleB = builder_twin(Tuple)


class TupleGetItem(Expr, final=True):
    """``tuple_value[index]``."""

    __slots__ = ("index", "tuple_value")
    _kind = b"I"
    _code = 6
    _bit = F_GETITEM
    _fields = (Child("tuple_value"), Scalar("index", int))
    _key_order = ("index", "tuple_value")
    tuple_value: Expr
    index: int

    def __new__(cls, tuple_value: Expr, index: int) -> TupleGetItem:
        tv = _expr(tuple_value, "TupleGetItem tuple")
        if type(index) is not int and (isinstance(index, bool) or not isinstance(index, (int, np.integer))):
            raise WellFormedError(f"TupleGetItem index must be an int, got {index!r:.80}")
        i = int(index)
        if not 0 <= i <= MAX_INDEX:
            raise WellFormedError(f"TupleGetItem index must be in [0, 2**63), got {short_int(i)}")
        key = digest(b"I%d:" % i + tv.id)
        r = _get(key)
        if r is not None:
            n: Any = r()
            if type(n) is TupleGetItem and n.tuple_value is tv and n.index == i:
                return n
        elif key not in _collided:
            n = _new(_TupleGetItemB)
            n.tuple_value = tv
            n.index = i
            mask = F_GETITEM | tv._mask
            n._mask = mask_get(mask) or intern_mask(mask)
            n.id = key
            n.__class__ = TupleGetItem
            ref = _Ref(n, _drop)
            ref.key = key  # type: ignore[attr-defined]
            if _setdefault(key, ref) is ref:
                return n
        return intern(TupleGetItem, key,
                      lambda n: type(n) is TupleGetItem and n.tuple_value is tv and n.index == i,
                      {"tuple_value": tv, "index": i}, F_GETITEM | tv._mask)


_TupleGetItemB = builder_twin(TupleGetItem)


class Function(Expr, final=True):
    """``fn (params) -> ret_type { body }`` with attributes (e.g. ``Primitive=1``)."""

    __slots__ = ("attrs", "body", "params", "ret_type")
    _kind = b"F"
    _code = 7
    _bit = F_FUNC
    _fields = (Children("params", Var, binds=True), Child("body"), OptionalChild("ret_type", Type),
               Child("attrs", Attrs))
    _key_order = ("body", "ret_type", "attrs", "params")
    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None
    attrs: Attrs

    def __new__(cls, params: Iterable[Var], body: Expr, ret_type: Type | None = None,
                attrs: Mapping[str, Any] | Attrs | None = None) -> Function:
        if type(params) is tuple:
            ps = params
        else:
            try:
                ps = tuple(params)
            except TypeError:
                raise WellFormedError(f"Function parameters must be a sequence of Vars, got {params!r}"
                                      ) from None
        b = body if isinstance(body, Expr) else _expr(body, "Function body")
        if ret_type is not None and not isinstance(ret_type, Type):
            raise WellFormedError(f"Function ret_type must be a Type, got {ret_type!r}")
        at = attrs if type(attrs) is Attrs else attrs_of(attrs)
        mask = F_FUNC | b._mask
        if ps:  # the parameters' checks, ids and masks through C loops (a model has thousands)
            if type(ps[0]) is not Var or len(set(map(type, ps))) != 1:
                for p in ps:
                    if type(p) is not Var:
                        raise WellFormedError(f"Function parameters must be Vars, got {p!r}")
            for m in set(map(_mask_of, ps)):  # a Var's mask is F_VAR, or F_VAR | F_UNTYPED
                mask |= m
            if len(ps) > 1 and len(set(ps)) != len(ps):
                raise WellFormedError("Function parameters must be distinct variables")
        key = digest(b"".join((b"F", b.id, b"-" if ret_type is None else ret_type.id, at.id,
                               *map(_id_of, ps))))
        r = _get(key)
        if r is not None:
            n: Any = r()
            if (type(n) is Function and n.body is b and n.params == ps and n.ret_type is ret_type
                    and n.attrs is at):
                return n
        elif key not in _collided:
            n = _new(_FunctionB)
            n.params = ps
            n.body = b
            n.ret_type = ret_type
            n.attrs = at
            n._mask = mask_get(mask) or intern_mask(mask)
            n.id = key
            n.__class__ = Function
            ref = _Ref(n, _drop)
            ref.key = key  # type: ignore[attr-defined]
            if _setdefault(key, ref) is ref:
                return n
        return intern(Function, key,
                      lambda n: (type(n) is Function and n.body is b and n.params == ps
                                 and n.ret_type is ret_type and n.attrs is at),
                      {"params": ps, "body": b, "ret_type": ret_type, "attrs": at}, mask)

    def with_body(self, body: Expr) -> Function:
        """The same function with another body (return type dropped if the body changed)."""
        if body is self.body:
            return self
        return Function(self.params, body, None, self.attrs)

    def with_attrs(self, **kw: Any) -> Function:
        """The same function with attributes added or replaced."""
        return Function(self.params, self.body, self.ret_type, self.attrs.with_(**kw))


_FunctionB = builder_twin(Function)
_id_of = attrgetter("id")
_mask_of = attrgetter("_mask")


class Let(Expr, final=True):
    """``let var = value; body``."""

    __slots__ = ("body", "value", "var")
    _kind = b"L"
    _code = 8
    _bit = F_LET
    _fields = (Child("var", Var, binds=True), Child("value"), Child("body"))
    var: Var
    value: Expr
    body: Expr

    def __new__(cls, var: Var, value: Expr, body: Expr) -> Let:
        if type(var) is not Var:
            raise WellFormedError(f"Let binds a Var, got {var!r}")
        val = value if isinstance(value, Expr) else as_expr(value)
        bd = body if isinstance(body, Expr) else _expr(body, "Let body")
        key = digest(b"".join((b"L", var.id, val.id, bd.id)))
        r = _get(key)
        if r is not None:
            n: Any = r()
            if type(n) is Let and n.var is var and n.value is val and n.body is bd:
                return n
        elif key not in _collided:
            n = _new(_LetB)
            n.var = var
            n.value = val
            n.body = bd
            mask = F_LET | var._mask | val._mask | bd._mask
            n._mask = mask_get(mask) or intern_mask(mask)
            n.id = key
            n.__class__ = Let
            ref = _Ref(n, _drop)
            ref.key = key  # type: ignore[attr-defined]
            if _setdefault(key, ref) is ref:
                return n
        return intern(Let, key,
                      lambda n: type(n) is Let and n.var is var and n.value is val and n.body is bd,
                      {"var": var, "value": val, "body": bd},
                      F_LET | var._mask | val._mask | bd._mask)


_LetB = builder_twin(Let)


class If(Expr, final=True):
    """``if (cond) { true_branch } else { false_branch }``; cond is a scalar bool."""

    __slots__ = ("cond", "false_branch", "true_branch")
    _kind = b"?"
    _code = 9
    _bit = F_IF
    _fields = (Child("cond"), Child("true_branch"), Child("false_branch"))
    cond: Expr
    true_branch: Expr
    false_branch: Expr

    def __new__(cls, cond: Expr, true_branch: Expr, false_branch: Expr) -> If:
        c = cond if isinstance(cond, Expr) else as_expr(cond)
        t = true_branch if isinstance(true_branch, Expr) else as_expr(true_branch)
        f = false_branch if isinstance(false_branch, Expr) else as_expr(false_branch)
        key = digest(b"".join((b"?", c.id, t.id, f.id)))
        r = _get(key)
        if r is not None:
            n: Any = r()
            if type(n) is If and n.cond is c and n.true_branch is t and n.false_branch is f:
                return n
        elif key not in _collided:
            n = _new(_IfB)
            n.cond = c
            n.true_branch = t
            n.false_branch = f
            mask = F_IF | c._mask | t._mask | f._mask
            n._mask = mask_get(mask) or intern_mask(mask)
            n.id = key
            n.__class__ = If
            ref = _Ref(n, _drop)
            ref.key = key  # type: ignore[attr-defined]
            if _setdefault(key, ref) is ref:
                return n
        return intern(If, key,
                      lambda n: (type(n) is If and n.cond is c and n.true_branch is t
                                 and n.false_branch is f),
                      {"cond": c, "true_branch": t, "false_branch": f},
                      F_IF | c._mask | t._mask | f._mask)


_IfB = builder_twin(If)


# -- builders ------------------------------------------------------------------------------


def _sugar(name: str, *args: Any) -> Call:
    """The call behind ``a + b`` and the other operator sugar (the operator must be registered)."""
    return Call(Op(name), tuple([as_expr(a) for a in args]))


def as_expr(x: Any) -> Expr:
    """Return ``x`` if it is an expression; wrap Python/numpy values as constants,
    lists/tuples of expressions as ``Tuple``."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, int, float, np.ndarray, np.generic)):
        return Constant(x)
    if isinstance(x, (list, tuple)) and x and all(isinstance(e, Expr) for e in x):
        return Tuple(x)
    raise WellFormedError(f"cannot use {x!r} as an expression")


def var(name: str, type_annotation: Type | Sequence[int] | None = None, *,
        shape: Sequence[int] | None = None, dtype: Any = "float32") -> Var:
    """A fresh variable.

    >>> x = var("x", shape=(1, 3))
    >>> x.type_annotation
    TensorType((1, 3), 'float32')
    >>> var("x") is var("x")
    False
    """
    if type_annotation is not None and not isinstance(type_annotation, Type):
        try:
            shape = tuple(type_annotation)
        except TypeError:
            raise WellFormedError(f"var() takes a Type or a shape, got {type_annotation!r:.80}") from None
        type_annotation = None
    if shape is not None:
        ta = None
        if type(shape) is tuple and type(dtype) is str:  # TensorType's cache hit, inlined
            for d in shape:
                if type(d) is not int:
                    break
            else:
                r = _tt_cache_get((shape, dtype))
                if r is not None:
                    ta = r()
        type_annotation = ta if ta is not None else TensorType(shape, dtype)
    if type(name) is not str or not name.isascii() or type_annotation is None \
            or type(type_annotation) is not TensorType:
        return Var(name, type_annotation)
    # Var's fresh-uid path, inlined (no class call): a plain ASCII name, a TensorType
    uid = _next_uid()
    n: Any = _new(_VarB)
    n.name_hint = name
    n.type_annotation = type_annotation
    n._mask = F_VAR
    n.id = uid
    n.__class__ = Var
    ref = _Ref(n, _drop)
    ref.key = uid  # type: ignore[attr-defined]
    if _setdefault(uid, ref) is ref:
        return n
    return Var(name, type_annotation)  # the slot holds a (forged) node of this id: draw again


def const(value: Any, dtype: Any = None) -> Constant:
    """A constant: Python floats default to float32, ints to int32.

    >>> const(0.0) is const(0.0), const(0.0) is const(-0.0)
    (True, False)
    """
    return Constant(value, dtype)
