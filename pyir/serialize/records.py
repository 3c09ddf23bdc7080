"""Per-node records: one node's fields in the binary format's encoding, its children by reference.

The binary format (:mod:`pyir.serialize.binary`) is columnar over a whole node table; a
content-addressed store (:mod:`pyir.store`) keeps one record per node instead, keyed by the
node's content id, so that a node shared by many modules is stored once.  A record is

* ``kind``: the node's kind code in the binary format (dimension nodes: 64-68);
* ``kids``: the distinct nodes the record references (:func:`binary._format_refs`, in order,
  repeats dropped) -- the store keeps them as references to other records;
* ``rec``: bytes: a tag byte (``b`` or ``q``: int8 or little-endian int64 integers), the
  integer count (u32), the integers, then the strings, each a u32 byte length and UTF-8;
* ``data``: a constant's raw bytes (little-endian), else None.

The integers are the binary format's node record with every node reference an index into
``kids`` and every string an index into the record's own strings (a Var's uid is its id,
kept by the store; a Constant's data is ``data``)::

    Var [name, type]   GlobalVar [name]   Op [name]   Constant [dtype, ndim, *shape, nbytes]
    Call [op, attrs, nargs, *args]   TupleGetItem [tuple, index]   Attrs [n, (name, value)*]
    Tuple / TupleType [n, *fields]   Function [n, *params, body, ret or -1, attrs]
    Let [var, value, body]   If [cond, then, else]   FuncType [n, *args, ret]
    TensorType [dtype, ndim, *shape]   (a dimension < 0 is kid -1 - d)
    dimension nodes and every other kind: as the binary format stores them

:func:`decode_record` builds the node through the constructors with the binary decoder's
checks (it reuses its pieces); any defect raises :class:`~pyir.errors.SerializationError`.
"""

from __future__ import annotations

import struct
import sys
from array import array
from math import prod
from typing import Any

import numpy as np

from ..errors import SerializationError
from ..ir.expr import Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var, make_call
from ..ir.node import Attrs, Node
from ..ir.types import FuncType, TensorType, TupleType
from .binary import (
    _DIM_KIND_OF_TYPE,
    _GENERIC,
    _KIND_OF_TYPE,
    DIM_KIND_NAMES,
    K_ATTRS,
    K_CALL,
    K_CONST,
    K_FUNC,
    K_FUNC_T,
    K_GETITEM,
    K_GLOBAL,
    K_IF,
    K_LET,
    K_OP,
    K_TENSOR_T,
    K_TUPLE,
    K_TUPLE_T,
    K_VAR,
    _Bad,
    _call_attrs,
    _check_dtype,
    _dim_at,
    _dim_node,
    _dim_record,
    _encode_value,
    _format_refs,
    _generic_node,
    _generic_record,
    _idx,
    _kind_name,
    _read_value,
    _refs_at,
    _Strings,
)

__all__ = ["encode_record", "decode_record", "record_refs", "kind_code"]

_BIG_ENDIAN = sys.byteorder == "big"
_u32 = struct.Struct("<I")


def kind_code(n: Node) -> int:
    """The binary format's kind code of ``n``."""
    t = type(n)
    k = _KIND_OF_TYPE.get(t)
    if k is None:
        k = _DIM_KIND_OF_TYPE.get(t)
        if k is None:
            raise SerializationError(f"cannot store a node of type {t.__name__}")
    return k


def record_refs(n: Node) -> list[Node]:
    """The distinct nodes ``n``'s record references, in record order."""
    out: list[Node] = []
    seen: set[Node] = set()
    for c in _format_refs(n):
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def _pack(ints: list[int], strs: list[str]) -> bytes:
    try:
        a = array("b", ints)
        tag = b"b"
    except OverflowError:
        a = array("q", ints)
        tag = b"q"
        if _BIG_ENDIAN:  # pragma: no cover
            a.byteswap()
    parts = [tag, _u32.pack(len(ints)), a.tobytes()]
    for s in strs:
        b = s.encode("utf-8", "surrogatepass")
        parts += (_u32.pack(len(b)), b)
    return b"".join(parts)


def _unpack(rec: bytes) -> tuple[list[int], list[str]]:
    try:
        tag = rec[:1]
        (n,) = _u32.unpack_from(rec, 1)
        size = 1 if tag == b"b" else 8 if tag == b"q" else 0
        if not size:
            raise _Bad(f"unknown record tag {tag!r}")
        end = 5 + n * size
        if end > len(rec):
            raise _Bad("truncated record integers")
        a = array("b" if size == 1 else "q")
        a.frombytes(rec[5:end])
        if size == 8 and _BIG_ENDIAN:  # pragma: no cover
            a.byteswap()
        strs: list[str] = []
        p = end
        while p < len(rec):
            (ln,) = _u32.unpack_from(rec, p)
            p += 4
            if p + ln > len(rec):
                raise _Bad("truncated record string")
            strs.append(rec[p:p + ln].decode("utf-8", "surrogatepass"))
            p += ln
        return a.tolist(), strs
    except (struct.error, UnicodeDecodeError) as e:
        raise _Bad(f"unreadable record: {e}") from None


def encode_record(n: Node, kids: list[Node] | None = None) -> tuple[int, bytes, bytes | None]:
    """``(kind, rec, data)`` of node ``n`` whose record references ``kids``
    (:func:`record_refs` when not given)."""
    if kids is None:
        kids = record_refs(n)
    ix = {c: j for j, c in enumerate(kids)}
    S = _Strings()
    ints: list[int] = []
    k = kind_code(n)
    data: bytes | None = None
    if k == K_VAR:
        ta = n.type_annotation  # type: ignore[attr-defined]
        ints += (S(n.name_hint), -1 if ta is None else ix[ta])  # type: ignore[attr-defined]
    elif k == K_CONST:
        arr = n.data  # type: ignore[attr-defined]
        if _BIG_ENDIAN:  # pragma: no cover
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        data = arr.tobytes()
        shape = n.shape  # type: ignore[attr-defined]
        ints += (S(n.dtype), len(shape), *shape, len(data))  # type: ignore[attr-defined]
    elif k == K_CALL:
        a = n.args  # type: ignore[attr-defined]
        ints += (ix[n.op], ix[n.attrs], len(a))  # type: ignore[attr-defined]
        ints += [ix[c] for c in a]
    elif k == K_GETITEM:
        ints += (ix[n.tuple_value], n.index)  # type: ignore[attr-defined]
    elif k == K_ATTRS:
        items = n.items()  # type: ignore[attr-defined]
        ints.append(len(items))
        for key, v in items:
            ints.append(S(key))
            _encode_value(v, ix, S, ints)
    elif k == K_OP:
        ints.append(S(n.name))  # type: ignore[attr-defined]
    elif k == K_GLOBAL:
        ints.append(S(n.name_hint))  # type: ignore[attr-defined]
    elif k in (K_TUPLE, K_TUPLE_T):
        fs = n.fields  # type: ignore[attr-defined]
        ints.append(len(fs))
        ints += [ix[c] for c in fs]
    elif k == K_FUNC:
        ps = n.params  # type: ignore[attr-defined]
        rt = n.ret_type  # type: ignore[attr-defined]
        ints.append(len(ps))
        ints += [ix[c] for c in ps]
        ints += (ix[n.body], -1 if rt is None else ix[rt], ix[n.attrs])  # type: ignore[attr-defined]
    elif k == K_LET:
        ints += (ix[n.var], ix[n.value], ix[n.body])  # type: ignore[attr-defined]
    elif k == K_IF:
        ints += (ix[n.cond], ix[n.true_branch], ix[n.false_branch])  # type: ignore[attr-defined]
    elif k == K_TENSOR_T:
        shp = n.shape  # type: ignore[attr-defined]
        ints += (S(n.dtype), len(shp))  # type: ignore[attr-defined]
        ints += [d if type(d) is int else -1 - ix[d] for d in shp]
    elif k == K_FUNC_T:
        ats = n.arg_types  # type: ignore[attr-defined]
        ints.append(len(ats))
        ints += [ix[c] for c in ats]
        ints.append(ix[n.ret_type])  # type: ignore[attr-defined]
    elif k in DIM_KIND_NAMES:
        _dim_record(n, k, ix, S, ints)
    else:
        _generic_record(n, _GENERIC[k], ix, S, ints)
    return k, _pack(ints, S.items), data


def _args(js: list[int], nodes: list[Node]) -> tuple[Any, ...]:
    m = len(nodes)
    out = []
    for j in js:
        if not 0 <= j < m:
            raise _Bad(f"reference {j} out of range ({m} references)")
        c = nodes[j]
        if not isinstance(c, Expr):
            raise _Bad(f"a Call argument is a {type(c).__name__}, not an expression")
        out.append(c)
    return tuple(out)


def decode_record(kind: int, rec: bytes, kids: list[Node], data: bytes | None = None,
                  node_id: bytes | None = None) -> Node:
    """Build the node of a record (through the constructors, with the binary decoder's checks):
    ``kids`` are the referenced nodes, ``data`` a constant's bytes, ``node_id`` a Var's uid.
    Raises :class:`~pyir.errors.SerializationError` for any defect."""
    try:
        return _decode(kind, rec, kids, data, node_id)
    except SerializationError:
        raise
    except _Bad as e:
        raise SerializationError(f"invalid {_name(kind)} record: {e}") from None
    except (IndexError, ValueError, TypeError, KeyError, OverflowError) as e:
        raise SerializationError(f"invalid {_name(kind)} record: {type(e).__name__}: {e}") from None


def _name(kind: Any) -> str:
    return _kind_name(kind) if type(kind) is int and 0 <= kind < 256 else repr(kind)


def _decode(k: int, rec: bytes, kids: list[Node], data: bytes | None, node_id: bytes | None) -> Node:
    ints, strs = _unpack(rec)
    nodes = kids
    i = len(nodes)  # every reference must be < i: an index of kids
    nstr = len(strs)

    def s_at(s: int) -> str:
        if not 0 <= s < nstr:
            raise _Bad(f"string reference {s} out of range")
        return strs[s]

    def done(n: Node, p: int) -> Node:
        if p != len(ints):
            raise _Bad(f"{len(ints) - p} unread integers")
        return n

    if k == K_VAR:
        if type(node_id) is not bytes or len(node_id) != 16:
            raise _Bad("a Var record needs its 16-byte uid")
        name, t = s_at(ints[0]), ints[1]
        return done(Var(name, None if t == -1 else nodes[_idx(t, i)], node_id), 2)  # type: ignore[arg-type]
    if k == K_CONST:
        dtn, nd = s_at(ints[0]), ints[1]
        if not 0 <= nd <= 64:
            raise _Bad(f"Constant ndim {nd}")
        shape = tuple(ints[2:2 + nd])
        nb = ints[2 + nd]
        dt = _check_dtype(dtn)
        if len(shape) != nd or (shape and min(shape) < 0):
            raise _Bad(f"invalid Constant shape {shape}")
        size = prod(shape)
        if data is None or nb != size * dt.itemsize or nb != len(data):
            raise _Bad(f"Constant data ({None if data is None else len(data)} bytes) does not match "
                       f"{dtn}{list(shape)}")
        arr = np.frombuffer(data, dt).reshape(shape) if size else np.empty(shape, dtype=dt)
        return done(Constant(arr), 3 + nd)
    if k == K_CALL:
        o, a, na = ints[0], ints[1], ints[2]
        op = nodes[_idx(o, i)]
        at = _call_attrs(op, nodes[_idx(a, i)], na)
        if not 0 <= na <= len(ints) - 3:
            raise _Bad(f"Call with {na} arguments")
        return done(make_call(op, _args(ints[3:3 + na], nodes), at), 3 + na)  # type: ignore[arg-type]
    if k == K_GETITEM:
        return done(TupleGetItem(nodes[_idx(ints[0], i)], ints[1]), 2)  # type: ignore[arg-type]
    if k == K_ATTRS:
        na = ints[0]
        if not 0 <= na <= len(ints):
            raise _Bad(f"Attrs with {na} entries")
        p = 1
        amap: dict[str, Any] = {}
        for _ in range(na):
            key = s_at(ints[p])
            v, p = _read_value(ints, p + 1, i, nodes, strs, 0)
            if key in amap:
                raise _Bad(f"duplicate attribute {key!r}")
            amap[key] = v
        return done(Attrs(amap), p)
    if k in (K_OP, K_GLOBAL):
        name = s_at(ints[0])
        return done(Op(name) if k == K_OP else GlobalVar(name), 1)
    if k in (K_TUPLE, K_TUPLE_T):
        fs, p = _refs_at(ints, 1, ints[0], i)
        fields = [nodes[j] for j in fs]
        return done(Tuple(fields) if k == K_TUPLE else TupleType(fields), p)  # type: ignore[arg-type]
    if k == K_FUNC:
        ps, p = _refs_at(ints, 1, ints[0], i)
        b, rt, at_i = ints[p:p + 3]
        if len(set(ps)) != len(ps):
            raise _Bad("repeated Function parameter")
        ret = None if rt == -1 else nodes[_idx(rt, i)]
        fat = nodes[_idx(at_i, i)]
        if type(fat) is not Attrs:
            raise _Bad(f"Function attrs is a {type(fat).__name__}")
        return done(Function([nodes[j] for j in ps], nodes[_idx(b, i)], ret, fat), p + 3)  # type: ignore[misc, arg-type]
    if k in (K_LET, K_IF):
        a0, a1, a2 = (nodes[_idx(j, i)] for j in ints[0:3])
        return done(Let(a0, a1, a2) if k == K_LET else If(a0, a1, a2), 3)  # type: ignore[arg-type]
    if k == K_TENSOR_T:
        dtn, nd = s_at(ints[0]), ints[1]
        if not 0 <= nd <= 64:
            raise _Bad(f"TensorType ndim {nd}")
        raw = ints[2:2 + nd]
        if len(raw) != nd:
            raise _Bad(f"invalid TensorType shape {raw}")
        kinds = bytes([kind_code(c) for c in nodes])
        shape = tuple([d if d >= 0 else _dim_at(-1 - d, i, kinds, nodes) for d in raw])
        _check_dtype(dtn)
        return done(TensorType(shape, dtn), 2 + nd)
    if k == K_FUNC_T:
        ats, p = _refs_at(ints, 1, ints[0], i)
        return done(FuncType([nodes[j] for j in ats], nodes[_idx(ints[p], i)]), p + 1)  # type: ignore[misc, arg-type]
    if k in DIM_KIND_NAMES:
        kinds = bytes([kind_code(c) for c in nodes])
        n, p = _dim_node(k, ints, 0, i, kinds, nodes, strs)
        return done(n, p)
    gen = _GENERIC.get(k)
    if gen is None:
        raise _Bad(f"unknown node kind {k}")
    n, p = _generic_node(gen, ints, 0, i, nodes, strs)
    return done(n, p)
