"""Serialization of modules and expressions: a fast binary format, JSON, and pickle.

* :func:`dumps` / :func:`loads` and :func:`save` / :func:`load` — the binary format;
* :func:`to_json` / :func:`from_json` — the same node table as JSON text;
* ``pickle`` of nodes and modules goes through the binary format
  (this module registers :func:`_reduce_node` and :func:`_reduce_module` with
  :mod:`copyreg` for every node kind and Module), so deep graphs pickle without recursion.

What is stored is a *node table*: every distinct node (expressions, the
operators they call, the types and attribute sets they reference) once, in
topological order (children before parents), children as integer indices, so
sharing is preserved and loading is a single loop.  Loading re-interns each
node through the normal constructors: within one process
``loads(dumps(m))["main"] is m["main"]``, across processes the ids are equal.
A module's pass history (:attr:`Module.pass_records`) is stored too, so
lineage queries (``mod.find`` ...) work after a round trip.

:func:`loads` returns what was dumped: a :class:`~pyir.ir.module.Module` for a
module, the node itself for a single node (expression, type or ``Attrs``).

Binary layout, version 2 (all integers little-endian)::

    header   magic b"PYIR" | version u16 | flags u16 | payload length u64 | XXH3-128(payload) 16 bytes
    payload  six section lengths u64, then the sections:
             kinds    one byte per node (its kind code)
             ints     int64 array: the call signatures [count, (op, attrs, nargs)*], the fields
                      of every node record, then the root, then the history
             strlens  int64 array: length (in code points) of each string of the string table
             strdata  the UTF-8 strings, concatenated (decoded at once, then cut)
             ids      16-byte values, concatenated: variable uids, node ids of the history
             blob     raw bytes of constants (each 16-byte aligned)

Node records in ``ints`` (children are indices of earlier nodes; ``-1`` = none)::

    Var [name, uid, type]   GlobalVar [name]   Op [name]
    Constant [dtype, ndim, *shape, blob offset, nbytes]      TensorType [dtype, ndim, *shape]
    Call [signature, *args]   Tuple / TupleType [n, *fields]   TupleGetItem [tuple, index]
    Function [nparams, *params, body, ret_type, attrs]   Let [var, value, body]   If [cond, then, else]
    FuncType [nargs, *args, ret]   Attrs [n, (name, tagged value)*]

Symbolic dimensions (:mod:`pyir.ir.dims`) are nodes of the table too, children first, with
kind codes of their own (64-68), only in **version 3**: a payload is version 3 exactly when
its table holds a dimension node (static programs stay version 2, byte for byte; a
version-2 payload with dimension nodes, or a version-3 one without, is refused, so every
loaded payload saves again identically)::

    Sym [name]   AnyDim []   DimFloorDiv / DimMod [arg, divisor]
    DimPoly [const, nterms, (degree, *atoms, coef)*]
    TensorType [dtype, ndim, *shape]   a dimension >= 0 is an int, -1 - j is dimension node j

Rule names (the rewrite rule that made each node, :meth:`PassRecord.rule_of`) are stored only
in **version 4**: a payload is version 4 exactly when some pass record has rule names
(symbolic dimension nodes or not); a payload without them keeps version 2 or 3 and its bytes.
In version 4 each history record ends with its rule table::

    rules    [nfire]  0: no rule fired; else [nfire, nnames, *names, blob offset] with, at the
             offset, the firings' result ids (16 bytes each), then their uint16 indices into
             the names (little-endian); the table must be what the pass built (names distinct,
             in the order they first fired, each used), else SerializationError

Each dimension record is built by the dims constructors and must be the canonical form of
what it builds (terms sorted, nonzero coefficients, reduced divisions; else SerializationError).

A call signature (target, attribute set and arity, as node indices and a count) is
stored once for all the calls that share it, and checked once on load (target kind,
arity, attributes normalized by the operator's schema, as ``Call`` does), when a
call first uses it: its nodes must precede that call.  Version 1 files (v1 records:
``Var [name, uid low, uid high, type]``, ``Call [op, attrs, nargs, *args]``) are
refused with a SerializationError naming their version.

(strings are string-table indices; attribute values are tagged so ``1``,
``1.0`` and ``True`` stay distinct.)  Pickling a node on its own stores the
node table of everything below it, so pickling many nodes of one graph
separately duplicates their shared parts.

No code is ever run and no name is ever imported from the data: the decoder
reads integer arrays and UTF-8 strings only (no ``pickle``; no ``marshal``
either, since a few crafted marshal bytes can demand gigabyte allocations).
Constant data is read with ``np.frombuffer`` straight from the input buffer
and copied once by ``Constant``.  Any defect (truncation, bad
checksum, out-of-range or forward references, unknown kinds or operators,
invalid dtypes, wrong field types in JSON ...) raises
:class:`~pyir.errors.SerializationError`.
"""

from __future__ import annotations

import copyreg
import json
import os
import struct
import sys
from array import array
from collections.abc import Callable
from math import prod
from typing import IO, Any

import numpy as np
from pyrsistent import pvector
from xxhash import xxh3_128_digest

from ..errors import InternalError, LineageError, PyIRError, SerializationError
from ..ir.dims import AnyDim, Dim, DimFloorDiv, DimMod, DimPoly, Sym, dim_floordiv, dim_mod
from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    make_call,
)
from ..ir.kinds import KINDS, KindInfo, info
from ..ir.lineage import EdgeBuffer, Edges, PassRecord, RuleLog, thaw_source_value
from ..ir.module import Module
from ..ir.node import MAX_ATTR_DEPTH, Attrs, Node, gc_paused
from ..ir.traverse import post_order
from ..ir.types import TENSOR_DTYPES, FuncType, TensorType, TupleType
from ..progress import Progress

__all__ = ["save", "load", "dumps", "loads", "FORMAT_VERSION", "SYMBOLIC_FORMAT_VERSION",
           "RULES_FORMAT_VERSION", "MAGIC"]

MAGIC = b"PYIR"
FORMAT_VERSION = 2
#: The version written for (and only for) payloads whose node table holds symbolic dimension
#: nodes (pyir.ir.dims): static programs keep version 2 and their bytes; an older pyir refuses
#: a symbolic payload by its version.
SYMBOLIC_FORMAT_VERSION = 3
#: The version written for (and only for) modules whose pass history records rule names (the
#: rewrite rule that made each node), with or without symbolic dimensions: payloads without
#: them keep version 2 or 3 and their bytes; an older pyir refuses these by their version.
RULES_FORMAT_VERSION = 4
_HEADER = struct.Struct("<4sHHQ16s")
_SECTIONS = struct.Struct("<6Q")
FLAG_MODULE = 1  # the root is a Module (else a single node)
FLAG_TYPES = 2  # the module has type definitions: after its function entries, [count, *TypeData refs]
_KNOWN_FLAGS = FLAG_MODULE | FLAG_TYPES
_ALIGN = 16

# Node kind codes: each kind's declared ``_code`` (pyir.ir.kinds), stable across versions.  The
# kinds below have hand-tuned records; any other declared kind is stored generically from its
# declaration (see "generic records").
K_VAR, K_GLOBAL, K_CONST, K_OP, K_CALL = Var._code, GlobalVar._code, Constant._code, Op._code, Call._code
K_TUPLE, K_GETITEM, K_FUNC, K_LET, K_IF = Tuple._code, TupleGetItem._code, Function._code, Let._code, If._code
K_TENSOR_T, K_TUPLE_T, K_FUNC_T, K_ATTRS = TensorType._code, TupleType._code, FuncType._code, Attrs._code
_KIND_OF_TYPE: dict[type, int] = {cls: cls._code for cls in KINDS.values() if cls._code is not None}
#: kind code -> kind name (None: an unused code)
KIND_NAMES: tuple[str | None, ...] = tuple(
    next((c.__name__ for c, k in _KIND_OF_TYPE.items() if k == code), None)
    for code in range(max(_KIND_OF_TYPE.values()) + 1))
#: kind code -> 1 for the expression kinds (what a call argument may be), else 0
_IS_EXPR = bytes(int(any(k == code and issubclass(c, Expr) for c, k in _KIND_OF_TYPE.items()))
                 for code in range(256))
# Dimension kinds (pyir.ir.dims) carry no declared ``_code``: the binary format numbers them
# here, in a block of its own (the expression and type kinds take the next free low numbers).
K_SYM, K_ANYDIM, K_DIMPOLY, K_FLOORDIV, K_MOD = 64, 65, 66, 67, 68
_DIM_KIND_OF_TYPE: dict[type, int] = {Sym: K_SYM, AnyDim: K_ANYDIM, DimPoly: K_DIMPOLY,
                                      DimFloorDiv: K_FLOORDIV, DimMod: K_MOD}
DIM_KIND_NAMES: dict[int, str] = {k: c.__name__ for c, k in _DIM_KIND_OF_TYPE.items()}
if set(_DIM_KIND_OF_TYPE.values()) & set(_KIND_OF_TYPE.values()):  # pragma: no cover
    raise InternalError(f"a declared node kind takes a binary code of the dimension kinds "
                        f"{sorted(DIM_KIND_NAMES)}: give it another _code")
#: the bytes that are not dimension kind codes (``kinds.translate(None, _NOT_DIM)`` keeps the dims)
_NOT_DIM = bytes(k for k in range(256) if k not in DIM_KIND_NAMES)
_ATOMS = (Sym, DimFloorDiv, DimMod)
_GENERIC: dict[int, KindInfo] = {  # the kinds stored generically, by code
    k: info(c) for c, k in _KIND_OF_TYPE.items()
    if c not in (Var, GlobalVar, Constant, Op, Call, Tuple, TupleGetItem, Function, Let, If, TensorType,
                 TupleType, FuncType, Attrs)}

# attribute value tags (in the ints column)
V_NONE, V_FALSE, V_TRUE, V_INT, V_BIGINT, V_FLOAT, V_STR, V_TUPLE, V_REF = range(9)
V_BYTES = 9  # a bytes scalar of a node record (a reference operation's uid), as hex text; never an attribute
_MAX_ATTR_DEPTH = MAX_ATTR_DEPTH  # what Attrs accepts, so whatever saves loads
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1

_q = struct.Struct("<q")
_d = struct.Struct("<d")
_BIG_ENDIAN = sys.byteorder == "big"


def _float_bits(x: float) -> int:
    return _q.unpack(_d.pack(x))[0]


def _bits_float(b: int) -> float:
    return _d.unpack(_q.pack(b))[0]


class _Bad(Exception):
    """Internal: a defect found by the decoder (turned into SerializationError with context)."""


# -- dtypes ------------------------------------------------------------------------------------------

_dtype_ok: dict[str, np.dtype] = {}

def _check_dtype(name: Any) -> np.dtype:
    """The (little-endian) numpy dtype for a stored dtype name: one of the tensor dtypes
    (:data:`pyir.ir.types.TENSOR_DTYPES`); nothing else is given to numpy."""
    dt = _dtype_ok.get(name) if type(name) is str else None
    if dt is not None:
        return dt
    if type(name) is not str or name not in TENSOR_DTYPES:
        raise _Bad(f"invalid dtype {name!r:.40} (tensors hold one of {', '.join(TENSOR_DTYPES)})")
    dt = np.dtype(name).newbyteorder("<")
    _dtype_ok[name] = dt
    return dt


# -- encoding ----------------------------------------------------------------------------------------


def _attr_refs(v: Any, out: list[Node]) -> None:
    stack = [v]
    while stack:
        x = stack.pop()
        if type(x) is tuple:
            stack.extend(reversed(x))
        elif isinstance(x, Node):
            out.append(x)


def _field_refs(n: Node) -> tuple[Node, ...]:
    """The nodes in ``n``'s node fields (children and annotations), in declaration order."""
    out: list[Node] = []
    for f in info(type(n)).fields:
        if f.node:
            v = getattr(n, f.name)
            if f.many:
                out.extend(v)
            elif v is not None:
                out.append(v)
    return tuple(out)


def _refs(n: Node) -> tuple[Node, ...]:
    """Every node ``n`` references (expression children, operators, types, attributes): its
    node fields in declaration order (a Call's attributes before its arguments)."""
    t = type(n)
    if t is Call:
        return (n.op, n.attrs, *n.args)  # type: ignore[attr-defined]
    if t is Attrs:
        out: list[Node] = []
        for _, v in n.items():  # type: ignore[attr-defined]
            _attr_refs(v, out)
        return tuple(out)
    if not info(t).annotations:
        return n.children()
    return _field_refs(n)


def _node_table(roots: list[Node]) -> list[Node]:
    """Every node reachable from ``roots`` (through :func:`_refs`), children first."""
    return post_order(roots, children=_refs)  # type: ignore[arg-type]


def _format_refs(n: Node) -> tuple[Node, ...]:
    """:func:`_refs`, plus the dimension nodes of a symbolic TensorType's shape (the formats
    store them as nodes of the table; :func:`_node_table` keeps to the declared fields)."""
    if type(n) is TensorType:
        return tuple([d for d in n.shape if isinstance(d, Dim)])
    return _refs(n)


def _format_table(roots: list[Node]) -> list[Node]:
    """Every node the formats store for ``roots`` (dimension nodes included), children first."""
    return post_order(roots, children=_format_refs)  # type: ignore[arg-type]


#: Stack marker of the encoder's walk: the node just below it is emitted when it is popped.
_DONE: Any = object()


class _Strings:
    """A deduplicating table of strings (or of 16-byte ids)."""

    def __init__(self, items: list[Any] | None = None) -> None:
        self.index: dict[Any, int] = {}
        self.items: list[Any] = [] if items is None else items  # given items are not deduplicated

    def __call__(self, s: Any) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


def _encode_value(v: Any, ix: dict[Node, int], S: _Strings, out: list[int]) -> None:
    """Append the tagged encoding of an attribute value to ``out`` (iterative)."""
    stack = [v]
    while stack:
        x = stack.pop()
        t = type(x)
        if x is None:
            out.append(V_NONE)
        elif t is bool:
            out.append(V_TRUE if x else V_FALSE)
        elif t is int:
            if _I64_MIN <= x <= _I64_MAX:
                out += (V_INT, x)
            else:
                out += (V_BIGINT, S(str(x)))
        elif t is float:
            out += (V_FLOAT, _float_bits(x))
        elif t is str:
            out += (V_STR, S(x))
        elif t is tuple:
            out += (V_TUPLE, len(x))
            stack.extend(reversed(x))
        elif isinstance(x, Node):
            out += (V_REF, ix[x])
        elif t is bytes:
            out += (V_BYTES, S(x.hex()))
        else:
            raise SerializationError(f"cannot serialize attribute value {x!r}")


def _encode(obj: Module | Node) -> _Columns:
    """The columns of the node table, root and history of ``obj``.

    One iterative walk both orders the table (children first, as :func:`_node_table`) and
    writes each node's record as it is emitted; ``ix`` (node -> index) is also the walk's
    visited set: in a DAG a node popped again is either emitted or not yet started.
    """
    tds: list[Node] = []
    if isinstance(obj, Module):
        names = obj.names()
        roots: list[Node] = [obj[n] for n in names]
        flags = FLAG_MODULE
        types = obj.type_definitions()
        if types:  # only then: modules without type definitions keep their bytes
            flags |= FLAG_TYPES
            tds = [types[k] for k in sorted(types)]
            roots = roots + tds
    elif isinstance(obj, Node):
        roots = [obj]
        flags = 0
    else:
        raise SerializationError(f"can only serialize a Module or a Node, got {type(obj).__name__}")
    ix: dict[Node, int] = {}
    get = ix.__getitem__
    S = _Strings()
    sindex = S.index
    sget = sindex.get
    strs = S.items
    uids: list[bytes] = []  # the ids section starts with the variables' uids
    sigs: list[int] = []  # call signatures: (op, attrs, nargs) triples
    sig_of: dict[tuple[Node, Node, int], int] = {}
    kinds = bytearray()
    kpush = kinds.append
    ints: list[int] = []  # the node records
    blob: list[Any] = []
    blob_len = 0
    kind_of = _KIND_OF_TYPE
    version = FORMAT_VERSION
    cnt = 0
    stack: list[Any] = list(reversed(roots))
    pop = stack.pop
    push = stack.append
    DONE = _DONE
    sig_get = sig_of.get
    # The walk's stack holds nodes to visit and, above a node whose children are being
    # emitted, a marker: DONE, or for a call its signature index (an int).
    while stack:
        n = pop()
        t = type(n)
        if t is int:  # the call below has all its children emitted; n is its signature
            s = n
            n = pop()
            a = n.args
            if len(a) == 1:
                ints += (s, ix[a[0]])
            elif len(a) == 2:
                ints += (s, ix[a[0]], ix[a[1]])
            else:
                ints.append(s)
                ints += map(get, a)
            ix[n] = cnt
            cnt += 1
            kpush(K_CALL)
            continue
        if n is DONE:
            n = pop()
            t = type(n)
        elif n in ix:
            continue
        elif t is Call:
            a = n.args
            na = len(a)
            sk = (n.op, n.attrs, na)
            s = sig_get(sk)
            if s is None:  # a new signature: emit its target and attributes first
                op = n.op
                at = n.attrs
                if op not in ix or at not in ix:
                    push(n)
                    if at not in ix:
                        push(at)
                    if op not in ix:
                        push(op)
                    continue
                s = sig_of[sk] = len(sig_of)
                sigs += (ix[op], ix[at], na)
            push(n)
            push(s)
            if na == 1:
                c = a[0]
                if c not in ix:
                    push(c)
            elif na == 2:
                c = a[1]
                if c not in ix:
                    push(c)
                c = a[0]
                if c not in ix:
                    push(c)
            else:
                stack += [c for c in reversed(a) if c not in ix]
            continue
        else:
            if t is Var:
                c = n.type_annotation
                pend = [] if c is None or c in ix else [c]
            elif t is Constant or t is Op:  # no references
                pend = []
            else:
                pend = [c for c in _format_refs(n) if c not in ix]
            if pend:
                push(n)
                push(DONE)
                stack += reversed(pend)
                continue
        # emit n (not a call): its record, then its index
        if t is Var:
            nm = n.name_hint
            si = sget(nm)
            if si is None:
                si = sindex[nm] = len(strs)
                strs.append(nm)
            ta = n.type_annotation
            ints += (si, len(uids), -1 if ta is None else ix[ta])
            uids.append(n.uid)
            k = K_VAR
        else:
            k = kind_of.get(t)  # type: ignore[assignment]
            if k is None:
                k = _DIM_KIND_OF_TYPE.get(t)
                if k is None:
                    raise SerializationError(f"cannot serialize node of type {t.__name__}")
                version = SYMBOLIC_FORMAT_VERSION
                _dim_record(n, k, ix, S, ints)
            elif k == K_CONST:
                arr = n.data  # C-contiguous, native byte order
                if _BIG_ENDIAN:  # pragma: no cover
                    arr = arr.astype(arr.dtype.newbyteorder("<"))
                nb = arr.nbytes
                pad = -blob_len % _ALIGN
                if pad:
                    blob.append(b"\0" * pad)
                    blob_len += pad
                shape = n.shape
                ints += (S(n.dtype), len(shape), *shape, blob_len, nb)
                if nb:
                    blob.append(arr)  # joined as its buffer: no copy
                blob_len += nb
            elif k == K_GETITEM:
                ints += (ix[n.tuple_value], n.index)
            elif k == K_ATTRS:
                items = n.items()
                ints.append(len(items))
                for key, v in items:
                    ints.append(S(key))
                    _encode_value(v, ix, S, ints)
            elif k == K_OP:
                ints.append(S(n.name))
            elif k == K_GLOBAL:
                ints.append(S(n.name_hint))
            elif k in (K_TUPLE, K_TUPLE_T):
                fs = n.fields
                ints.append(len(fs))
                ints += map(get, fs)
            elif k == K_FUNC:
                ps = n.params
                rt = n.ret_type
                ints.append(len(ps))
                ints += map(get, ps)
                ints += (ix[n.body], -1 if rt is None else ix[rt], ix[n.attrs])
            elif k == K_LET:
                ints += (ix[n.var], ix[n.value], ix[n.body])
            elif k == K_IF:
                ints += (ix[n.cond], ix[n.true_branch], ix[n.false_branch])
            elif k == K_TENSOR_T:
                shp = n.shape
                ints += (S(n.dtype), len(shp))
                for d in shp:
                    if type(d) is not int:  # a symbolic shape: dimension nodes as -1 - index
                        ints += [d if type(d) is int else -1 - ix[d] for d in shp]
                        break
                else:
                    ints += shp
            elif k == K_FUNC_T:
                ats = n.arg_types
                ints.append(len(ats))
                ints += map(get, ats)
                ints.append(ix[n.ret_type])
            else:
                _generic_record(n, _GENERIC[k], ix, S, ints)
        ix[n] = cnt
        cnt += 1
        kpush(k)
    # root
    if flags & FLAG_MODULE:
        ints.append(len(names))
        for name, r in zip(names, roots):
            ints += (S(name), ix[r])
        if flags & FLAG_TYPES:
            ints.append(len(tds))
            ints += [ix[t] for t in tds]
    else:
        ints.append(ix[roots[0]])
    # history
    ids = _Strings(uids)  # reused as an id table (bytes keys), after the uids
    if flags & FLAG_MODULE:
        records = obj.pass_records  # type: ignore[union-attr]
        rules = any(rec.rule_table() is not None for rec in records)
        if rules:
            version = RULES_FORMAT_VERSION
        _encode_history(records, S, ids, ints, blob, blob_len, rules)
    else:
        ints.append(0)
    head = [len(sig_of)]
    head += sigs
    head += ints
    return _Columns(flags, bytes(kinds), head, strs, ids.items, blob, version)


def _dim_record(n: Any, k: int, ix: dict[Node, int], S: _Strings, ints: list[int]) -> None:
    """Append the record of dimension node ``n`` (kind code ``k``)::

        Sym [name]   AnyDim []   DimFloorDiv / DimMod [arg, divisor]
        DimPoly [const, nterms, (degree, *atoms, coef)*]
    """
    if k == K_SYM:
        ints.append(S(n.name))
    elif k == K_DIMPOLY:
        terms = n.terms
        ints += (n.const, len(terms))
        for m, c in terms:
            ints.append(len(m))
            ints += [ix[a] for a in m]
            ints.append(c)
    elif k != K_ANYDIM:  # DimFloorDiv, DimMod
        ints += (ix[n.arg], n.divisor)


class _Columns:
    """The decoded (or to-be-encoded) content of a payload."""

    __slots__ = ("flags", "kinds", "ints", "strs", "ids", "blob", "version")

    def __init__(self, flags: int, kinds: bytes, ints: list[int], strs: list[str], ids: list[bytes],
                 blob: Any, version: int = FORMAT_VERSION) -> None:
        self.version = version  # FORMAT_VERSION, or SYMBOLIC_FORMAT_VERSION with dimension nodes
        self.flags = flags
        self.kinds = kinds
        self.ints = ints
        self.strs = strs
        self.ids = ids
        self.blob = blob  # bytes-like, or a list of parts (any C-contiguous buffers) to concatenate


def _assemble(c: _Columns) -> bytes:
    """The complete file (header and payload) for ``c``."""
    try:
        strdata = "".join(c.strs).encode("utf-8", "surrogatepass")
    except UnicodeEncodeError as e:  # pragma: no cover - str values always encode with surrogatepass
        raise SerializationError(f"string table: {e}") from None
    ints_b = _i64_bytes(c.ints)
    lens_b = _i64_bytes(list(map(len, c.strs)))  # in code points
    ids_b = b"".join(c.ids)
    pre = _SECTIONS.size + len(c.kinds) + len(ints_b) + len(lens_b) + len(strdata) + len(ids_b)
    pad = -(_HEADER.size + pre) % _ALIGN
    blob_b = b"".join(c.blob) if type(c.blob) is list else bytes(c.blob)
    head = _SECTIONS.pack(len(c.kinds), len(ints_b), len(lens_b), len(strdata), len(ids_b) + pad,
                          len(blob_b))
    payload = b"".join((head, c.kinds, ints_b, lens_b, strdata, ids_b, b"\0" * pad, blob_b))
    return _HEADER.pack(MAGIC, c.version, c.flags, len(payload), xxh3_128_digest(payload)) + payload


def _i64_bytes(values: list[int]) -> bytes:
    try:
        a = array("q", values)
    except OverflowError as e:  # pragma: no cover - every stored int is range-checked
        raise SerializationError(f"integer out of the int64 range: {e}") from None
    if _BIG_ENDIAN:  # pragma: no cover
        a.byteswap()
    return a.tobytes()


def _edge_parts(edges: Any) -> tuple[bytes, bytes, bytes | None]:
    """The compact parts of a record's edges: the new ids and the old ids (16 bytes each,
    concatenated) and the per-edge old-id counts (uint32, native order; None when every edge
    has one old id)."""
    if type(edges) is Edges:
        fn, args = edges.__reduce__()  # what pickling an Edges stores: exactly these parts
        if fn is Edges and len(args) == 3:
            return args
    buf = EdgeBuffer()  # pragma: no cover - a record's edges are Edges
    buf.extend(edges)
    return bytes(buf.news), bytes(buf.olds), None if buf.counts is None else buf.counts.tobytes()


def _encode_history(records: Any, S: _Strings, ids: Any, ints: list[int], blob: list[Any],
                    blob_len: int, rules: bool = False) -> None:
    """Append the history to ``ints``: per record its strings, time and counts; its edges (new
    ids, old ids, counts) and removed ids as raw bytes appended to ``blob`` (now ``blob_len``
    bytes long), referenced by offset; with ``rules`` (version 4), each record's rule table."""
    def idref(x: Any) -> int:
        if type(x) is not bytes or len(x) != 16:
            raise SerializationError(f"pass history: expected a 16-byte node id, got {x!r}")
        return ids(x)

    ints.append(len(records))
    for rec in records:
        news, olds, counts = _edge_parts(rec.edges)
        if counts is not None:
            c = array("I")
            c.frombytes(counts)
            if c.count(1) == len(c):
                counts = None  # as a buffer of one-old-id edges stores them (so as JSON reads them)
            elif _BIG_ENDIAN:  # pragma: no cover
                c.byteswap()
                counts = c.tobytes()
        removed = b"".join(sorted(rec.removed))
        pad = -blob_len % _ALIGN
        if pad:
            blob.append(b"\0" * pad)
            blob_len += pad
        off = blob_len
        parts = (news, olds, counts or b"", removed)
        blob += parts
        blob_len += sum(map(len, parts))
        ints += (S(rec.name), S(rec.options), _float_bits(float(rec.seconds)), len(news) // 16,
                 len(olds) // 16, int(counts is not None), off, len(removed) // 16)
        src = rec.sources
        if src is None:
            ints.append(-1)
        else:
            keys = list(src)
            ints.append(len(keys))
            ints += map(idref, keys)
            ints.append(S(_json_value_text([thaw_source_value(src[k]) for k in keys], rec.name)))
        if rules:
            table = rec.rule_table()
            if table is None:
                ints.append(0)
                continue
            names, rids, idx = table
            if _BIG_ENDIAN:  # pragma: no cover
                idx.byteswap()
            pad = -blob_len % _ALIGN
            if pad:
                blob.append(b"\0" * pad)
                blob_len += pad
            ints += (len(idx), len(names), *map(S, names), blob_len)
            blob += (rids, idx.tobytes())
            blob_len += len(rids) + 2 * len(idx)


def _json_value_text(values: Any, pass_name: str) -> str:
    try:
        return json.dumps(values, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise SerializationError(f"pass {pass_name!r}: lineage sources must be JSON-able: {e}") from None


def dumps(obj: Module | Node) -> bytes:
    """Serialize a module, or a single node (expression, type, ``Attrs``), to bytes.

    >>> import pyir
    >>> x = pyir.var("x", shape=(2,))
    >>> y = pyir.op.nn.relu(x)
    >>> loads(dumps(y)) is y
    True
    """
    with Progress("save") as shown, gc_paused():  # the encoder allocates many small, long-lived objects
        shown.note("encoding nodes")
        cols = _encode(obj)
        shown.note("writing")
        return _assemble(cols)


def save(obj: Module | Node, path_or_file: str | os.PathLike[str] | IO[bytes]) -> None:
    """Write ``dumps(obj)`` to a path or a binary file object."""
    data = dumps(obj)
    if hasattr(path_or_file, "write"):
        path_or_file.write(data)
    else:
        with open(path_or_file, "wb") as f:
            f.write(data)


# -- decoding ----------------------------------------------------------------------------------------


def _bytes_view(data: Any) -> memoryview:
    """A flat byte view of ``data`` (any buffer; non-contiguous ones are copied)."""
    if isinstance(data, str):
        raise SerializationError("expected bytes, got str (is this the JSON form? use from_json)")
    try:
        mv = memoryview(data)
    except Exception:
        raise SerializationError(f"expected bytes, got {type(data).__name__}") from None
    try:
        if mv.ndim != 1 or mv.itemsize != 1 or not mv.c_contiguous:
            mv = memoryview(mv.tobytes())
    except Exception as e:  # e.g. a buffer released meanwhile
        raise SerializationError(f"unusable buffer ({type(e).__name__}: {e})") from None
    return mv


def _i64_list(mv: memoryview, what: str) -> list[int]:
    if len(mv) % 8:
        raise SerializationError(f"{what} section length {len(mv)} is not a multiple of 8")
    a = array("q")
    a.frombytes(mv)
    if _BIG_ENDIAN:  # pragma: no cover
        a.byteswap()
    return a.tolist()


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Rebuild what :func:`dumps` wrote: a Module, or a single node.

    Raises :class:`SerializationError` for any malformed input.
    """
    with Progress("load") as shown:
        shown.note("checking")
        cols = _sections(data)
        shown.note("building nodes")
        return _build(cols)


def _sections(data: Any) -> _Columns:
    """Check the header and checksum of ``data`` and decode its columns."""
    mv = _bytes_view(data)
    n = len(mv)
    if n < _HEADER.size:
        raise SerializationError(f"truncated data: {n} bytes, the header alone has {_HEADER.size}")
    magic, version, flags, plen, checksum = _HEADER.unpack_from(mv)
    if magic != MAGIC:
        raise SerializationError(f"not a pyir file: magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version not in (FORMAT_VERSION, SYMBOLIC_FORMAT_VERSION, RULES_FORMAT_VERSION):
        older = ("; it was written by an older pyir, whose to_json text this pyir reads"
                 if version < FORMAT_VERSION else "")
        raise SerializationError(f"unsupported format version {version} (this pyir reads version "
                                 f"{FORMAT_VERSION}; {SYMBOLIC_FORMAT_VERSION} with symbolic dimensions; "
                                 f"{RULES_FORMAT_VERSION} with rule names{older})")
    if flags & ~_KNOWN_FLAGS:
        raise SerializationError(f"unknown flags 0x{flags:04x}")
    if n - _HEADER.size != plen:
        what = "truncated data" if n - _HEADER.size < plen else "trailing bytes after the payload"
        raise SerializationError(f"{what}: payload has {n - _HEADER.size} bytes, header says {plen}")
    payload = mv[_HEADER.size:]
    if xxh3_128_digest(payload) != checksum:
        raise SerializationError("checksum mismatch: the data is corrupted")
    if plen < _SECTIONS.size:
        raise SerializationError("truncated payload: no section table")
    sizes = _SECTIONS.unpack_from(payload)
    if _SECTIONS.size + sum(sizes) != plen:
        raise SerializationError(f"section sizes {list(sizes)} do not add up to the payload length {plen}")
    parts = []
    off = _SECTIONS.size
    for s in sizes:
        parts.append(payload[off:off + s])
        off += s
    kinds_mv, ints_mv, lens_mv, str_mv, ids_mv, blob = parts
    ints = _i64_list(ints_mv, "ints")
    lens = _i64_list(lens_mv, "string length")
    strs = _decode_strings(lens, str_mv)
    ids_raw = bytes(ids_mv)
    ids_raw = ids_raw[:len(ids_raw) - len(ids_raw) % 16]  # alignment padding follows the ids
    ids = [ids_raw[i:i + 16] for i in range(0, len(ids_raw), 16)]
    return _Columns(flags, bytes(kinds_mv), ints, strs, ids, blob, version)


def _decode_strings(lens: list[int], data: memoryview) -> list[str]:
    """The string table: one UTF-8 decode of the data, cut at the lengths (in code points)."""
    try:
        text = str(data, "utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        raise SerializationError(f"string table: invalid UTF-8: {e}") from None
    if min(lens, default=0) < 0 or sum(lens) != len(text):
        raise SerializationError("string table: lengths do not match the string data")
    out: list[str] = []
    push = out.append
    off = 0
    for ln in lens:
        end = off + ln
        push(text[off:end])
        off = end
    return out


def load(path_or_file: str | os.PathLike[str] | IO[bytes]) -> Any:
    """Read a module (or node) written by :func:`save` from a path or a binary file object.

    SerializationError for anything unusable: not a path or a binary file, a file
    that cannot be read (the OSError is the cause), or invalid content.
    """
    try:
        if hasattr(path_or_file, "read"):
            data = path_or_file.read()
        elif isinstance(path_or_file, (str, bytes, os.PathLike)):
            with open(path_or_file, "rb") as f:
                data = f.read()
        else:
            raise SerializationError(f"expected a path or a binary file, got {type(path_or_file).__name__}")
    except SerializationError:
        raise
    except Exception as e:
        raise SerializationError(f"cannot read {path_or_file!r:.200}: {type(e).__name__}: {e}") from e
    return loads(data)


def _build(c: _Columns) -> Any:
    """Construct the nodes, the root and the history from decoded columns."""
    kinds, ints, strs, ids, blob, flags = c.kinds, c.ints, c.strs, c.ids, c.blob, c.flags
    symbolic = bool(kinds.translate(None, _NOT_DIM))  # the table holds dimension nodes
    rules = c.version == RULES_FORMAT_VERSION  # (with or without dimension nodes)
    if not rules and symbolic != (c.version == SYMBOLIC_FORMAT_VERSION):  # one version per content
        raise SerializationError(
            f"format version {c.version} with symbolic dimension nodes (they need version "
            f"{SYMBOLIC_FORMAT_VERSION})" if symbolic else
            f"format version {c.version} without symbolic dimension nodes (version "
            f"{SYMBOLIC_FORMAT_VERSION} is for payloads with them; static ones are version {FORMAT_VERSION})")
    with gc_paused():  # see pyir.ir.node.gc_paused: nodes are acyclic
        try:
            nodes, p = _build_nodes(kinds, ints, strs, ids, blob, symbolic)
            root, p = _build_root(nodes, ints, strs, p, flags)
            history, p = _build_history(ints, strs, ids, blob, p, rules)
            if p != len(ints):
                raise _Bad(f"{len(ints) - p} unread integers after the history")
        except SerializationError:
            raise
        except _Bad as e:
            raise SerializationError(f"invalid module root or pass history: {e}") from None
        except Exception as e:
            raise SerializationError(
                f"invalid module root or pass history: {type(e).__name__}: {e}") from e
    if flags & FLAG_MODULE:
        try:
            mod = Module(*root)  # the constructor's checks (binders, type definitions ...)
        except PyIRError as e:
            raise SerializationError(f"invalid module: {e}") from None
        return mod._derive(mod.functions(), history=pvector(history))
    return root


class _NodeError(SerializationError):
    """A SerializationError raised while building a particular node."""


def _idx(j: int, i: int) -> int:
    if not 0 <= j < i:
        raise _Bad(f"reference {j} out of range (must be a smaller index)")
    return j


def _build_nodes(kinds: bytes, ints: list[int], strs: list[str], ids: list[bytes],
                 blob: Any, symbolic: bool = False) -> tuple[list[Node], int]:
    nodes: list[Any] = []  # the nodes built so far (kinds[j] says the class of nodes[j])
    push = nodes.append
    nsig = ints[0] if ints else -1
    if not 0 <= nsig <= (len(ints) - 1) // 3:
        raise SerializationError(f"invalid call signature count {nsig}")
    p = 1 + 3 * nsig
    sigs: dict[int, tuple[Expr, Attrs, int]] = {}  # signature -> (target, canonical attrs, arity)
    nstr = len(strs)
    nid = len(ids)
    dtype_ok = _dtype_ok
    is_expr = _IS_EXPR
    i = 0
    k = -1
    try:
        for i, k in enumerate(kinds):
            if k == K_CALL:
                s = ints[p]
                sig = sigs.get(s)
                if sig is None:
                    sig = sigs[s] = _call_sig(s, nsig, ints, i, nodes)
                op, at, na = sig
                # What Call(op, args, attrs) builds: the target, arity and attributes were checked
                # and normalized (once per signature) by _call_sig; each argument is checked to be
                # an earlier node of an expression kind (the kind code says the node's class).
                if na == 1:
                    j = ints[p + 1]
                    p += 2
                    if not (0 <= j < i and is_expr[kinds[j]]):
                        _bad_args((j,), i, kinds)
                    push(make_call(op, (nodes[j],), at))
                elif na == 2:
                    j = ints[p + 1]
                    j2 = ints[p + 2]
                    p += 3
                    if not (0 <= j < i and 0 <= j2 < i and is_expr[kinds[j]] and is_expr[kinds[j2]]):
                        _bad_args((j, j2), i, kinds)
                    push(make_call(op, (nodes[j], nodes[j2]), at))
                else:
                    q = p + 1 + na
                    if q > len(ints):
                        raise _Bad(f"truncated Call arguments ({na})")
                    js = ints[p + 1:q]
                    p = q
                    for j in js:
                        if not (0 <= j < i and is_expr[kinds[j]]):
                            _bad_args(js, i, kinds)
                    push(make_call(op, tuple([nodes[j] for j in js]), at))
            elif k == K_VAR:
                s = ints[p]
                u = ints[p + 1]
                t = ints[p + 2]
                p += 3
                if not (0 <= s < nstr and 0 <= u < nid):
                    raise _Bad(f"Var fields out of range: name {s}, uid {u}")
                if t == -1:
                    push(Var(strs[s], None, ids[u]))
                elif 0 <= t < i:
                    push(Var(strs[s], nodes[t], ids[u]))
                else:
                    raise _Bad(f"type reference {t} out of range (must be a smaller index)")
            elif k == K_CONST:
                s = ints[p]
                nd = ints[p + 1]
                if not (0 <= s < nstr and 0 <= nd <= 64):
                    raise _Bad(f"Constant fields out of range: dtype {s}, ndim {nd}")
                shape = tuple(ints[p + 2:p + 2 + nd])
                off, nb = ints[p + 2 + nd], ints[p + 3 + nd]
                p += 4 + nd
                dt = dtype_ok.get(strs[s])
                if dt is None:
                    dt = _check_dtype(strs[s])
                if shape and min(shape) < 0:
                    raise _Bad(f"negative dimension in Constant shape {shape}")
                size = prod(shape)
                if nb != size * dt.itemsize or off < 0 or off + nb > len(blob):
                    raise _Bad(f"Constant data ({nb} bytes at {off}) does not match {strs[s]}{list(shape)} "
                               f"or lies outside the data section")
                if size:
                    arr = np.ndarray(shape, dt, blob, off)  # a view of the input (Constant copies it)
                else:
                    arr = np.empty(shape, dtype=dt)
                push(Constant(arr))
            elif k == K_GETITEM:
                t = _idx(ints[p], i)
                push(TupleGetItem(nodes[t], ints[p + 1]))
                p += 2
            elif k == K_ATTRS:
                na = ints[p]
                if not 0 <= na <= len(ints):
                    raise _Bad(f"Attrs with {na} entries")
                p += 1
                amap: dict[str, Any] = {}
                for _ in range(na):
                    s = ints[p]
                    if not 0 <= s < nstr:
                        raise _Bad(f"string reference {s} out of range")
                    v, p = _read_value(ints, p + 1, i, nodes, strs, 0)
                    if strs[s] in amap:
                        raise _Bad(f"duplicate attribute {strs[s]!r}")
                    amap[strs[s]] = v
                push(Attrs(amap))
            elif k in (K_OP, K_GLOBAL):
                s = ints[p]
                p += 1
                if not 0 <= s < nstr:
                    raise _Bad(f"string reference {s} out of range")
                push(Op(strs[s]) if k == K_OP else GlobalVar(strs[s]))
            elif k in (K_TUPLE, K_TUPLE_T):
                nf = ints[p]
                fs, p = _refs_at(ints, p + 1, nf, i)
                push(Tuple([nodes[j] for j in fs]) if k == K_TUPLE
                     else TupleType([nodes[j] for j in fs]))
            elif k == K_FUNC:
                ps, p = _refs_at(ints, p + 1, ints[p], i)
                b, rt, at_i = ints[p:p + 3]
                p += 3
                if len(ps) and len(set(ps)) != len(ps):
                    raise _Bad("repeated Function parameter")
                ret = None if rt == -1 else nodes[_idx(rt, i)]
                fat = nodes[_idx(at_i, i)]
                if type(fat) is not Attrs:
                    raise _Bad(f"Function attrs is a {type(fat).__name__}")
                push(Function([nodes[j] for j in ps], nodes[_idx(b, i)], ret, fat))
            elif k in (K_LET, K_IF):
                a0, a1, a2 = (nodes[_idx(j, i)] for j in ints[p:p + 3])
                p += 3
                push(Let(a0, a1, a2) if k == K_LET else If(a0, a1, a2))
            elif k == K_TENSOR_T:
                s, nd = ints[p], ints[p + 1]
                if not (0 <= s < nstr and 0 <= nd <= 64):
                    raise _Bad(f"TensorType fields out of range: dtype {s}, ndim {nd}")
                shape = tuple(ints[p + 2:p + 2 + nd])
                p += 2 + nd
                if len(shape) != nd:
                    raise _Bad(f"invalid TensorType shape {shape}")
                if any(d < 0 for d in shape):
                    if not symbolic:
                        raise _Bad(f"invalid TensorType shape {shape}")
                    shape = tuple([d if d >= 0 else _dim_at(-1 - d, i, kinds, nodes) for d in shape])
                _check_dtype(strs[s])
                push(TensorType(shape, strs[s]))
            elif k == K_FUNC_T:
                ats, p = _refs_at(ints, p + 1, ints[p], i)
                ret = nodes[_idx(ints[p], i)]
                p += 1
                push(FuncType([nodes[j] for j in ats], ret))
            elif k in DIM_KIND_NAMES:
                n, p = _dim_node(k, ints, p, i, kinds, nodes, strs)
                push(n)
            else:
                gen = _GENERIC.get(k)
                if gen is None:
                    raise _Bad(f"unknown node kind {k}")
                n, p = _generic_node(gen, ints, p, i, nodes, strs)
                push(n)
        if len(nodes) != len(kinds):
            raise _Bad("truncated node table")
    except _Bad as e:
        raise _NodeError(f"invalid node {i} ({_kind_name(k)}): {e}") from None
    except Exception as e:
        raise _NodeError(f"invalid node {i} ({_kind_name(k)}): {type(e).__name__}: {e}") from e
    return nodes, p


def _bad_args(js: Any, i: int, kinds: bytes) -> None:
    """Raise the error for Call argument references ``js`` of node ``i`` (one of them is bad)."""
    for j in js:
        if not 0 <= j < i:
            raise _Bad(f"argument reference {j} out of range (must be a smaller index)")
        if not _IS_EXPR[kinds[j]]:
            raise _Bad(f"a Call argument is a {_kind_name(kinds[j])}, not an expression")
    raise InternalError("no bad Call argument among " + repr(js))  # pragma: no cover


def _call_sig(s: int, nsig: int, ints: list[int], i: int, nodes: list[Node]) -> tuple[Expr, Attrs, int]:
    """Check call signature ``s`` (first used by node ``i``): (target, canonical attrs, arity)."""
    if not 0 <= s < nsig:
        raise _Bad(f"call signature {s} out of range ({nsig} signatures)")
    q = 1 + 3 * s
    o, a, na = ints[q], ints[q + 1], ints[q + 2]
    if not (0 <= o < i and 0 <= a < i and 0 <= na <= len(ints)):
        raise _Bad(f"Call fields out of range: op {o}, attrs {a}, {na} args")
    op = nodes[o]
    return op, _call_attrs(op, nodes[a], na), na  # type: ignore[return-value]


def _kind_name(k: int) -> str:
    name = KIND_NAMES[k] if 0 <= k < len(KIND_NAMES) else DIM_KIND_NAMES.get(k)
    return name if name is not None else f"kind {k}"


# -- dimension records -------------------------------------------------------------------------------
# Loaded is constructed: each record goes through the dims constructors, and a record that is not
# the canonical form of what it builds (terms out of order, a zero coefficient, a reducible
# division, an Any factor ...) is refused, so every loaded payload saves again identically.


def _dim_at(j: int, i: int, kinds: bytes, nodes: list[Node]) -> Any:
    """Node ``j`` (< ``i``), which must be a dimension node."""
    if not 0 <= j < i or kinds[j] not in DIM_KIND_NAMES:
        raise _Bad(f"dimension reference {j} is not an earlier dimension node")
    return nodes[j]


def _dim_node(k: int, ints: list[int], p: int, i: int, kinds: bytes, nodes: list[Node],
              strs: list[str]) -> tuple[Node, int]:
    """Decode the dimension record of kind ``k`` at ``ints[p]``: the node and the next position."""
    if k == K_SYM:
        s = ints[p]
        if not 0 <= s < len(strs):
            raise _Bad(f"string reference {s} out of range")
        return Sym(strs[s]), p + 1
    if k == K_ANYDIM:
        return AnyDim(), p
    if k == K_DIMPOLY:
        const, nt = ints[p], ints[p + 1]
        p += 2
        if not 1 <= nt <= (len(ints) - p) // 3:
            raise _Bad(f"DimPoly with {nt} terms")
        terms = []
        for _ in range(nt):
            deg = ints[p]
            if not 1 <= deg <= len(ints) - p - 2:
                raise _Bad(f"DimPoly monomial of degree {deg}")
            mono = tuple([_dim_at(j, i, kinds, nodes) for j in ints[p + 1:p + 1 + deg]])
            for a in mono:
                if type(a) not in _ATOMS:
                    raise _Bad(f"a DimPoly factor is a {type(a).__name__}, not a symbol or a // or % atom")
            terms.append((mono, ints[p + 1 + deg]))
            p += 2 + deg
        r: Any = DimPoly(const, terms)
        if type(r) is not DimPoly or r.const != const or r.terms != tuple(terms):
            raise _Bad(f"DimPoly record is not canonical (it builds {r})")
        return r, p
    arg, div = _dim_at(ints[p], i, kinds, nodes), ints[p + 1]
    cls = DimFloorDiv if k == K_FLOORDIV else DimMod
    r = (dim_floordiv if k == K_FLOORDIV else dim_mod)(arg, div)
    if type(r) is not cls or r.arg is not arg or r.divisor != div:
        raise _Bad(f"{DIM_KIND_NAMES[k]} record is not canonical (it builds {r})")
    return r, p + 2


# -- generic records, from the kinds' declarations -------------------------------------------------
# A kind without a hand-tuned record above (any kind added later) is stored field by field in
# declaration order: a node as its index (-1 for None), a tuple of nodes as its length and the
# indices, a scalar as a tagged value (like an attribute value).  For the kinds whose fields
# are all nodes (Tuple, Function, Let, If, TupleType, FuncType) this is exactly their
# hand-tuned record (the tests check it).


def _generic_record(n: Node, ki: KindInfo, ix: dict[Node, int], S: _Strings, out: list[int]) -> None:
    for f in ki.fields:
        v = getattr(n, f.name)
        if f.many:
            out.append(len(v))
            out += [ix[x] for x in v]
        elif f.node:
            out.append(-1 if v is None else ix[v])
        else:
            _encode_value(v, ix, S, out)


def _generic_node(ki: KindInfo, ints: list[int], p: int, i: int, nodes: list[Node],
                  strs: list[str]) -> tuple[Node, int]:
    """Decode a generic record at ``ints[p]``; the node (through the kind's constructor) and
    the next position."""
    vals: list[Any] = []
    for f in ki.fields:
        if f.many:
            js, p = _refs_at(ints, p + 1, ints[p], i)
            vals.append(tuple([nodes[j] for j in js]))
        elif f.node:
            j = ints[p]
            p += 1
            vals.append(None if j == -1 and f.optional else nodes[_idx(j, i)])
        else:
            v, p = _read_value(ints, p, i, nodes, strs, 0)
            vals.append(v)
    for f, v in zip(ki.fields, vals):
        if f.node and not f.many and v is not None and not isinstance(v, f.sort):  # type: ignore[arg-type]
            raise _Bad(f"{ki.name}.{f.name} is a {type(v).__name__}, not a {f.sort.__name__}")  # type: ignore[union-attr]
    return ki.make(*vals), p


def _refs_at(ints: list[int], p: int, n: int, i: int) -> tuple[list[int], int]:
    """``n`` node references starting at ``ints[p]``, each checked to be < ``i``."""
    if not 0 <= n <= len(ints) - p:
        raise _Bad(f"bad reference count {n}")
    js = ints[p:p + n]
    for j in js:
        if not 0 <= j < i:
            raise _Bad(f"reference {j} out of range (must be a smaller index)")
    return js, p + n


def _call_attrs(op: Node, at: Node, na: int) -> Attrs:
    """Validate a call target, its arity and attributes as ``Call`` does; return the
    attributes ``Call`` would store (normalized by the operator's schema)."""
    if type(at) is not Attrs:
        raise _Bad(f"Call attrs is a {type(at).__name__}")
    if type(op) is Op:
        odef = op.op_def
        odef.check_arity(na)
        if at or odef.attrs:
            return odef.normalize_attrs(at)
    elif not isinstance(op, Expr):
        raise _Bad(f"Call target is a {type(op).__name__}, not an expression")
    return at


def _read_value(ints: list[int], p: int, i: int, nodes: list[Node], strs: list[str],
                depth: int) -> tuple[Any, int]:
    """Decode one tagged attribute value at ``ints[p]``; returns (value, next position)."""
    tag = ints[p]
    if tag == V_NONE:
        return None, p + 1
    if tag == V_FALSE:
        return False, p + 1
    if tag == V_TRUE:
        return True, p + 1
    if tag == V_INT:
        return ints[p + 1], p + 2
    if tag == V_FLOAT:
        return _bits_float(ints[p + 1]), p + 2
    if tag in (V_STR, V_BIGINT):
        s = ints[p + 1]
        if not 0 <= s < len(strs):
            raise _Bad(f"string reference {s} out of range")
        if tag == V_STR:
            return strs[s], p + 2
        txt = strs[s]
        if not (txt.lstrip("-").isdigit() and txt.isascii() and len(txt) < 4400):
            raise _Bad(f"invalid big integer {txt[:40]!r}")
        return int(txt), p + 2
    if tag == V_REF:
        return nodes[_idx(ints[p + 1], i)], p + 2
    if tag == V_BYTES:
        s = ints[p + 1]
        if not 0 <= s < len(strs):
            raise _Bad(f"string reference {s} out of range")
        try:
            return bytes.fromhex(strs[s]), p + 2
        except ValueError:
            raise _Bad(f"invalid bytes {strs[s][:40]!r}") from None
    if tag == V_TUPLE:
        n = ints[p + 1]
        if not 0 <= n <= len(ints) or depth >= _MAX_ATTR_DEPTH:
            raise _Bad(f"bad attribute tuple (length {n}, depth {depth})")
        p += 2
        out = []
        for _ in range(n):
            v, p = _read_value(ints, p, i, nodes, strs, depth + 1)
            out.append(v)
        return tuple(out), p
    raise _Bad(f"unknown attribute value tag {tag}")


def _build_root(nodes: list[Node], ints: list[int], strs: list[str], p: int, flags: int) -> tuple[Any, int]:
    n = len(nodes)
    if not flags & FLAG_MODULE:
        r = ints[p]
        if not 0 <= r < n:
            raise _Bad(f"root reference {r} out of range")
        return nodes[r], p + 1
    nf = ints[p]
    if not 0 <= nf <= n:
        raise _Bad(f"bad function count {nf}")
    p += 1
    funcs: dict[str, Function] = {}
    for _ in range(nf):
        s, r = ints[p], ints[p + 1]
        p += 2
        if not (0 <= s < len(strs) and 0 <= r < n):
            raise _Bad(f"module function entry ({s}, {r}) out of range")
        f = nodes[r]
        if type(f) is not Function:
            raise _Bad(f"module entry @{strs[s]} is a {type(f).__name__}, not a Function")
        if strs[s] in funcs:
            raise _Bad(f"duplicate module function @{strs[s]}")
        funcs[strs[s]] = f
    types: list[Any] = []
    if flags & FLAG_TYPES:
        from ..ir.adt import TypeData

        nt = ints[p]
        if not 0 < nt <= n:
            raise _Bad(f"bad type definition count {nt}")
        for r in ints[p + 1:p + 1 + nt]:
            if not 0 <= r < n or type(nodes[r]) is not TypeData:
                raise _Bad(f"module type definition entry {r} is not a TypeData")
            types.append(nodes[r])
        p += 1 + nt
    return (funcs, types), p


def _build_history(ints: list[int], strs: list[str], ids: list[bytes], blob: Any,
                   p: int, rules: bool = False) -> tuple[list[PassRecord], int]:
    nid = len(ids)
    nstr = len(strs)
    nblob = len(blob)

    def idrefs(q: int, n: int) -> tuple[bytes, ...]:
        if not 0 <= n <= len(ints) - q:
            raise _Bad(f"bad id count {n}")
        js = ints[q:q + n]
        for j in js:
            if not 0 <= j < nid:
                raise _Bad(f"id reference {j} out of range")
        return tuple([ids[j] for j in js])

    def sref(s: int) -> str:
        if not 0 <= s < nstr:
            raise _Bad(f"string reference {s} out of range")
        return strs[s]

    nrec = ints[p]
    if not 0 <= nrec <= len(ints):
        raise _Bad(f"bad pass record count {nrec}")
    p += 1
    out = []
    any_rules = False
    for _ in range(nrec):
        name, options = sref(ints[p]), sref(ints[p + 1])
        seconds = _bits_float(ints[p + 2])
        ne, no, has_counts, off, nr = ints[p + 3:p + 8]
        p += 8
        sizes = (16 * ne, 16 * no, 4 * ne if has_counts else 0, 16 * nr)
        if not (min(ne, no, nr, off) >= 0 and has_counts in (0, 1) and off + sum(sizes) <= nblob):
            raise _Bad(f"pass {name!r}: edges ({ne}, {no} old ids) or removed ids ({nr}) out of range")
        parts = []
        for size in sizes:
            parts.append(bytes(blob[off:off + size]))
            off += size
        news, olds, counts, removed = parts
        if _BIG_ENDIAN and counts:  # pragma: no cover
            c = array("I")
            c.frombytes(counts)
            c.byteswap()
            counts = c.tobytes()
        try:
            edges = Edges(news, olds, counts if has_counts else None)
        except LineageError as e:
            raise _Bad(f"pass {name!r}: {e}") from None
        ns = ints[p]
        sources: dict[bytes, Any] | None = None
        if ns != -1:
            keys = idrefs(p + 1, ns)
            p += 1 + ns
            try:
                values = json.loads(sref(ints[p]), parse_constant=_no_constant)
            except (ValueError, RecursionError) as e:
                raise _Bad(f"pass {name!r}: invalid lineage sources: {e}") from None
            p += 1
            if type(values) is not list or len(values) != ns:
                raise _Bad(f"pass {name!r}: lineage sources do not match their ids")
            sources = dict(zip(keys, values))
        else:
            p += 1
        log: RuleLog | None = None
        if rules:
            log, p = _rule_log(ints, p, sref, blob, name)
            any_rules = any_rules or log is not None
        try:
            out.append(PassRecord(name, options, edges,
                                  frozenset([removed[i:i + 16] for i in range(0, len(removed), 16)]),
                                  sources, seconds, log))
        except LineageError as e:
            raise _Bad(str(e)) from None
    if rules and not any_rules:
        raise _Bad(f"format version {RULES_FORMAT_VERSION} without rule names (it is for histories with "
                   "them)")
    return out, p


def _rule_log(ints: list[int], p: int, sref: Callable[[int], str], blob: Any,
              name: str) -> tuple[RuleLog | None, int]:
    """A record's rule table (version 4; see the module docstring) at ``ints[p]``: the RuleLog
    (None when no rule fired) and the position after it."""
    if p >= len(ints):
        raise _Bad(f"pass {name!r}: truncated rule table")
    nfire = ints[p]
    if nfire == 0:
        return None, p + 1
    nnames = ints[p + 1] if p + 1 < len(ints) else -1
    if not (0 < nfire <= len(blob) // 18 and 0 < nnames <= min(nfire, 0xFFFF)
            and p + 3 + nnames <= len(ints)):
        raise _Bad(f"pass {name!r}: bad rule table ({nfire} firing(s) of {nnames} rule(s))")
    names = [sref(s) for s in ints[p + 2:p + 2 + nnames]]
    off = ints[p + 2 + nnames]
    if not 0 <= off <= len(blob) - 18 * nfire:
        raise _Bad(f"pass {name!r}: rule table out of range")
    idx = array("H")
    idx.frombytes(blob[off + 16 * nfire:off + 18 * nfire])
    if _BIG_ENDIAN:  # pragma: no cover
        idx.byteswap()
    try:
        log = RuleLog.from_table(names, bytes(blob[off:off + 16 * nfire]), idx)
    except LineageError as e:
        raise _Bad(f"pass {name!r}: {e}") from None
    return log, p + 3 + nnames


def _no_constant(name: str) -> Any:
    """``json.loads`` hook: NaN and infinities are not JSON (nor valid lineage values)."""
    raise ValueError(f"non-finite number {name} (not JSON)")


# -- JSON (in pyir.serialize.json_format) ----------------------------------------------------------------


# -- pickle ------------------------------------------------------------------------------------------


def _reduce_node(node: Node) -> tuple[Callable[[bytes], Any], tuple[bytes]]:
    """``Node.__reduce__``: pickle a node as its binary serialization."""
    return loads, (dumps(node),)


def _reduce_module(mod: Module) -> tuple[Callable[[bytes], Any], tuple[bytes]]:
    """``Module.__reduce__``: pickle a module (with its pass history) as its binary serialization."""
    return loads, (dumps(mod),)


def _register_pickling() -> None:
    """Pickle every node kind and Module through the binary format (``copyreg``): the core
    classes do not import the serializer, the serializer registers itself with pickle."""
    kinds: list[type] = [Module]
    todo: list[type] = [Node]
    while todo:
        cls = todo.pop()
        kinds.append(cls)
        todo.extend(cls.__subclasses__())
    for cls in kinds:
        if Dim in cls.__mro__:  # dimensions pickle by their own __reduce__ (name, terms)
            continue
        copyreg.pickle(cls, _reduce_module if cls is Module else _reduce_node)


_register_pickling()
