"""Types: ``TensorType``, ``TupleType`` and ``FuncType`` (hash-consed like expressions)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import WellFormedError
from . import hooks
from .dims import Dim, DimLike, Sym, as_dim, dim_prod
from .kinds import Child, Children, Scalar, dtype_key, packed_dims_key
from .node import (
    MAX_INDEX,
    Node,
    _collided,
    _drop,
    _get,
    _new,
    _Ref,
    _setdefault,
    builder_twin,
    digest,
    intern,
    safe_repr,
    short_int,
)

__all__ = ["Type", "TensorType", "TupleType", "FuncType", "normalize_dtype", "TENSOR_DTYPES", "CORE_DTYPES",
           "EXTENDED_DTYPES", "dtype_kind", "is_float_dtype", "dtype_range"]


CORE_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128")
"""numpy's own tensor dtypes (long double dtypes are platform-dependent and not supported)."""

_EXTENDED_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                    "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
_EXTENDED_INTS = ("int4", "uint4", "int2", "uint2")

_ml_dtypes: Any
try:  # the machine-learning dtypes (bfloat16, float8, int4, ...) as numpy dtypes, when installed
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes comes with onnx; the core set works without it
    _ml_dtypes = None

EXTENDED_DTYPES: tuple[str, ...] = tuple(
    n for n in _EXTENDED_FLOATS + _EXTENDED_INTS if _ml_dtypes is not None and hasattr(_ml_dtypes, n))
"""The ``ml_dtypes`` dtypes (bfloat16, the float8/float6/float4 formats, int4/uint4, int2/uint2):
tensor dtypes when ml_dtypes imports, else none.  Each holds one element per byte (or two)."""

TENSOR_DTYPES = CORE_DTYPES + EXTENDED_DTYPES
"""The tensor dtypes: :data:`CORE_DTYPES` then :data:`EXTENDED_DTYPES`."""

_DTYPE_KIND: dict[str, str] = {name: np.dtype(name).kind for name in CORE_DTYPES}
for _n in EXTENDED_DTYPES:
    _DTYPE_KIND[_n] = "f" if _n in _EXTENDED_FLOATS else "u" if _n[0] == "u" else "i"


def dtype_kind(dtype: str) -> str:
    """The numpy kind of a canonical tensor dtype name: ``"b"``, ``"i"``, ``"u"``, ``"f"`` or
    ``"c"``.  The ml_dtypes floats (bfloat16, float8, ...) are ``"f"`` and int4/uint4 ``"i"``/``"u"``
    (numpy itself calls most of them ``"V"``).  Unknown names raise WellFormedError."""
    k = _DTYPE_KIND.get(dtype)
    if k is None:
        return _DTYPE_KIND[normalize_dtype(dtype)]
    return k


def is_float_dtype(dtype: str) -> bool:
    """Whether ``dtype`` (a canonical name) is a real floating-point dtype, ml_dtypes' included."""
    return dtype_kind(dtype) == "f"


def dtype_range(dtype: str) -> tuple[Any, Any]:
    """``(lowest, highest)`` finite value of a numeric dtype (ml_dtypes' included), as Python numbers."""
    dt = np.dtype(normalize_dtype(dtype))
    k = dtype_kind(dt.name)
    if k in "iu":
        ext = dt.name in EXTENDED_DTYPES
        info: Any = _ml_dtypes.iinfo(dt) if ext else np.iinfo(dt)
        return int(info.min), int(info.max)
    if k == "f":
        finfo: Any = _ml_dtypes.finfo(dt) if dt.name in EXTENDED_DTYPES else np.finfo(dt)
        return float(finfo.min), float(finfo.max)
    if k == "b":
        return False, True
    raise WellFormedError(f"dtype {dt.name} has no range")


_DTYPE_MEMO: dict[Any, str] = {}


def normalize_dtype(dtype: Any) -> str:
    """Canonical dtype name (``"float32"``, ``"int64"``, ``"bool"``, ...).

    Only the dtypes in :data:`TENSOR_DTYPES` are tensor dtypes (numpy's, plus ml_dtypes'
    bfloat16, float8, int4, ... when it is installed); others raise WellFormedError.
    """
    memo = type(dtype) is str or isinstance(dtype, np.dtype)
    if memo:
        name = _DTYPE_MEMO.get(dtype)
        if name is not None:
            return name
    try:
        dt = np.dtype(dtype)
        name = dt.name
    except Exception:
        raise WellFormedError(f"unknown dtype {dtype!r:.80}") from None
    if name not in TENSOR_DTYPES or dt.fields is not None:
        raise WellFormedError(f"dtype {dt} is not supported (tensors hold one of {', '.join(TENSOR_DTYPES)})")
    if memo and len(_DTYPE_MEMO) < 4096:
        _DTYPE_MEMO[dtype] = name
    return name


TENSOR_TYPE_CACHE_MAX = 4096
"""Entries of the TensorType cache: ``(shape, dtype)`` as given (a tuple of exact ints and a
str) -> the weak reference of the interned type's table entry, so building a type seen before
costs a dict lookup.  Holds no type alive, cleared when full; a plain dict (atomic reads and
writes)."""
_tt_cache: dict[tuple[tuple[int, ...], str], Any] = {}
_tt_cache_get = _tt_cache.get

# The bytes TensorType ids digest: b"t<dtype>(" then the dimensions as little-endian int64
# (8 bytes each, so the rank is implied by the length: the encoding is injective).  struct
# packs in C; ``q`` rejects dimensions of 2**63 or more (struct.error), negative ones are
# rejected before packing.
_PACK_MAX_RANK = 32
_PACKS = [struct.Struct(f"<{k}q").pack for k in range(_PACK_MAX_RANK + 1)]
_TT_PREFIX = {name: b"t" + name.encode() + b"(" for name in TENSOR_DTYPES}
_TT_SYM_PREFIX = {name: b"t" + name.encode() for name in TENSOR_DTYPES}  # then packed_dims_key's "["


def _pack_dims(shp: tuple[int, ...]) -> bytes:
    """The dimensions' part of a TensorType key (any rank); dims are ints in [0, 2**63)."""
    if len(shp) <= _PACK_MAX_RANK:
        return _PACKS[len(shp)](*shp)
    return struct.pack(f"<{len(shp)}q", *shp)


class Type(Node):
    """Base class of types."""

    __slots__ = ()
    # Types carry no summary bits: a class attribute (it shadows the slot, never written) saves
    # a slot store per new type.
    _mask = 0


class TensorType(Type, final=True):
    """A tensor of ``shape`` and ``dtype``; ``TensorType(())`` is a scalar.

    A dimension is an int, a symbolic dimension (``sym("n")``, or its name as a str, and
    arithmetic over symbols: ``n * 3``) or :data:`~pyir.ir.dims.Any` (unknown, printed ``?``);
    see :mod:`pyir.ir.dims`.  Static shapes hold plain ints.

    >>> TensorType((1, 3), "float32") is TensorType([1, 3])
    True
    >>> from pyir.ir.dims import sym
    >>> TensorType(("batch", 3)).shape == (sym("batch"), 3), TensorType(("batch", 3)).static
    (True, False)
    """

    __slots__ = ("dtype", "shape")
    _kind = b"t"
    _code = 10
    _fields = (Scalar("shape", tuple, key=packed_dims_key), Scalar("dtype", str, key=dtype_key))
    _key_order = ("dtype", "shape")
    shape: tuple[DimLike, ...]
    dtype: str

    def __new__(cls, shape: Sequence[DimLike | str] = (), dtype: Any = "float32") -> TensorType:
        if type(shape) is tuple and type(dtype) is str:
            # the hit path: a tuple of exact non-negative ints and a str seen before (exact ints
            # only, as (True,) == (1,) == (1.0,); checked before hashing, so no deep tuple is
            # hashed; a negative dimension takes the general path, which rejects it)
            for d in shape:
                if type(d) is not int or d < 0:
                    break
            else:
                ck = (shape, dtype)
                r = _tt_cache_get(ck)
                if r is not None:
                    n = r()
                    if n is not None:
                        return n
                # the fresh-type path: a known dtype name, an empty slot (``setdefault`` tells:
                # anything already there, live or dead, is left to the general path)
                dt = _DTYPE_MEMO.get(dtype)
                if dt is not None and len(shape) <= _PACK_MAX_RANK:
                    try:
                        key = digest(_TT_PREFIX[dt] + _PACKS[len(shape)](*shape))
                    except struct.error:  # a dimension of 2**63 or more: the checks below
                        key = None
                    if key is not None and (not _collided or key not in _collided):
                        n = _new(_TensorTypeB)
                        n.shape = shape
                        n.dtype = dt
                        n.id = key
                        n.__class__ = TensorType
                        ref = _Ref(n, _drop)
                        ref.key = key  # type: ignore[attr-defined]
                        if _setdefault(key, ref) is ref:
                            if len(_tt_cache) >= TENSOR_TYPE_CACHE_MAX:
                                _tt_cache.clear()
                            _tt_cache[ck] = ref
                            return n
        elif type(shape) is not tuple:
            if isinstance(shape, str):
                raise WellFormedError(f"TensorType shape must be a sequence of dimensions, got {shape!r:.80}")
            try:
                shape = tuple(shape)
            except TypeError:
                raise WellFormedError(f"TensorType shape must be a sequence of ints, got {shape!r:.80}"
                                      ) from None
        return _tensor_type(shape, dtype)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> DimLike:
        """Number of elements (an int for a static shape, else a dimension expression or Any)."""
        n = 1
        for d in self.shape:
            if type(d) is not int:
                return dim_prod(self.shape)
            n *= d
        return n

    @property
    def static(self) -> bool:
        """Whether every dimension is an int."""
        return all(type(d) is int for d in self.shape)

    def __repr__(self) -> str:
        return f"TensorType({self.shape!r}, {self.dtype!r})"

    def __str__(self) -> str:
        return hooks.type_str(self)


def _tensor_type(shape: tuple[Any, ...], dtype: Any) -> TensorType:
    """The general TensorType path: validates and converts ``shape`` and ``dtype``, probes the
    table (collisions included) and caches exact inputs."""
    shp = shape
    static = True
    for d in shape:
        if type(d) is not int:
            shp = tuple([_dim(x) for x in shape])  # numpy ints -> ints, names -> symbols
            static = all(type(x) is int for x in shp)
            break
    else:
        for d in shp:
            if not 0 <= d <= MAX_INDEX:
                raise WellFormedError(f"TensorType dimensions must be in [0, 2**63), got {short_int(d)}")
    dt = _DTYPE_MEMO.get(dtype) if type(dtype) is str else None
    if dt is None:
        dt = normalize_dtype(dtype)
    key = digest(_TT_PREFIX[dt] + _pack_dims(shp) if static else _TT_SYM_PREFIX[dt] + packed_dims_key(shp))
    r = _get(key)
    n: Any = None if r is None else r()
    if n is None or type(n) is not TensorType or n.shape != shp or n.dtype != dt:
        n = intern(TensorType, key, lambda n: type(n) is TensorType and n.shape == shp and n.dtype == dt,
                   {"shape": shp, "dtype": dt}, None)
        r = _get(n.id)
    if shp is shape and type(dtype) is str and r is not None and r() is n:  # exact: cacheable
        if len(_tt_cache) >= TENSOR_TYPE_CACHE_MAX:
            _tt_cache.clear()
        _tt_cache[(shp, dtype)] = r
    return n


def _dim(d: Any) -> DimLike:
    """One dimension of a TensorType shape: an int in [0, 2**63), a Dim, or a symbol's name."""
    if type(d) is str:
        return Sym(d)
    if isinstance(d, (Dim, int)) or (hasattr(type(d), "__index__") and not isinstance(d, bool)):
        return as_dim(d, "TensorType dimension")
    raise WellFormedError(f"TensorType shape must hold dimensions (ints, symbols such as sym('n') or "
                          f"their names, Any), got {safe_repr(d)} of type {type(d).__name__}")


_TensorTypeB = builder_twin(TensorType)


class TupleType(Type, final=True):
    """The type of a tuple; ``fields`` are types."""

    __slots__ = ("fields",)
    _kind = b"u"
    _code = 11
    _fields = (Children("fields"),)
    fields: tuple[Type, ...]

    def __new__(cls, fields: Iterable[Type]) -> TupleType:
        try:
            fs = tuple(fields)
        except TypeError:
            raise WellFormedError(f"TupleType fields must be a sequence of types, got {fields!r}") from None
        for f in fs:
            if not isinstance(f, Type):
                raise WellFormedError(f"TupleType fields must be types, got {f!r}")
        key = digest(b"u" + b"".join(f.id for f in fs))
        return intern(TupleType, key, lambda n: type(n) is TupleType and n.fields == fs,
                      {"fields": fs}, 0)

    def __repr__(self) -> str:
        return hooks.type_repr(self)

    def __str__(self) -> str:
        return hooks.type_str(self)


class FuncType(Type, final=True):
    """The type of a function: ``arg_types -> ret_type``."""

    __slots__ = ("arg_types", "ret_type")
    _kind = b"f"
    _code = 12
    _fields = (Children("arg_types"), Child("ret_type"))
    _key_order = ("ret_type", "arg_types")
    arg_types: tuple[Type, ...]
    ret_type: Type

    def __new__(cls, arg_types: Iterable[Type], ret_type: Type) -> FuncType:
        try:
            args = tuple(arg_types)
        except TypeError:
            raise WellFormedError(f"FuncType arg_types must be a sequence of types, got {arg_types!r}"
                                  ) from None
        for t in (*args, ret_type):
            if not isinstance(t, Type):
                raise WellFormedError(f"FuncType needs types, got {t!r}")
        key = digest(b"f" + ret_type.id + b"".join(t.id for t in args))
        return intern(FuncType, key,
                      lambda n: type(n) is FuncType and n.ret_type is ret_type and n.arg_types == args,
                      {"arg_types": args, "ret_type": ret_type}, 0)

    def __repr__(self) -> str:
        return hooks.type_repr(self)

    def __str__(self) -> str:
        return hooks.type_str(self)
