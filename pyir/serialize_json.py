"""JSON form of the serialization format of :mod:`pyir.serialize`.

``to_json(mod)`` writes the same node table as the binary format, as a JSON
document (``indent`` for pretty-printing)::

    {"format": "pyir", "version": 1,
     "functions": {"main": 7},          # a module (or "node": 7 for a single node)
     "history": [{"name": ..., "options": ..., "seconds": ..., "edges": [[new, [olds]]],
                  "removed": [ids], "sources": null | [[id, value]]}],   # ids as 32 hex digits
     "nodes": [["TensorType", "float32", [1, 3]], ["Var", "x", "<uid hex>", 0], ["Op", "nn.relu"],
               ["Attrs", []], ["Call", 2, 3, [1]], ["Function", [1], 4, null, 3], ...]}

Node records are ``[kind, fields...]`` with children as indices of earlier
records; constants are ``["Constant", dtype, shape, base64 of little-endian
bytes]``; attribute values are tagged (``["int", 1]``, ``["float", 1.0]``,
``["bool", true]``, ``["none"]``, ``["str", s]``, ``["tuple", [...]]``,
``["ref", index]``, ``["float_bits", hex]`` for NaN and infinities) so 1,
1.0 and True stay distinct.  ``from_json`` checks every field's type, converts
the document to the binary decoder's columns and builds it with the same
checks, so the guarantees (re-interning, SerializationError on any defect) are
those of the binary format.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from .errors import SerializationError
from .lineage import PassRecord, thaw_source_value
from .module import Module
from .node import Node
from .serialize import (
    _ALIGN,
    _I64_MAX,
    _I64_MIN,
    _KIND_OF_TYPE,
    _MAX_ATTR_DEPTH,
    FLAG_MODULE,
    FORMAT_VERSION,
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
    KIND_NAMES,
    V_BIGINT,
    V_FALSE,
    V_FLOAT,
    V_INT,
    V_NONE,
    V_REF,
    V_STR,
    V_TRUE,
    V_TUPLE,
    _Bad,
    _build,
    _Columns,
    _float_bits,
    _no_constant,
    _node_table,
    _qq,
    _Strings,
)

__all__ = ["to_json", "from_json"]

_KIND_OF_NAME = {n: k for k, n in enumerate(KIND_NAMES)}

JSON_FORMAT = "pyir"


def _json_value(v: Any, ix: dict[Node, int]) -> Any:
    t = type(v)
    if v is None:
        return ["none"]
    if t is bool:
        return ["bool", v]
    if t is int:
        return ["int", v]
    if t is float:
        if v != v or v in (float("inf"), float("-inf")):
            return ["float_bits", f"{_float_bits(v) & 0xFFFFFFFFFFFFFFFF:016x}"]
        return ["float", v]
    if t is str:
        return ["str", v]
    if t is tuple:
        return ["tuple", [_json_value(x, ix) for x in v]]
    if isinstance(v, Node):
        return ["ref", ix[v]]
    raise SerializationError(f"cannot serialize attribute value {v!r}")


def to_json(obj: Module | Node, *, indent: int | None = None) -> str:
    """The node table of a module (or node) as JSON text; see :func:`from_json`."""
    if isinstance(obj, Module):
        names = obj.names()
        roots: list[Node] = [obj[n] for n in names]
    elif isinstance(obj, Node):
        roots = [obj]
    else:
        raise SerializationError(f"can only serialize a Module or a Node, got {type(obj).__name__}")
    ix: dict[Node, int] = {}
    recs: list[list[Any]] = []
    for i, n in enumerate(_node_table(roots)):
        k = _KIND_OF_TYPE.get(type(n))
        if k is None:
            raise SerializationError(f"cannot serialize node of type {type(n).__name__}")
        name = KIND_NAMES[k]
        r: list[Any]
        if k == K_VAR:
            ta = n.type_annotation  # type: ignore[attr-defined]
            r = [name, n.name_hint, n.uid.hex(), None if ta is None else ix[ta]]  # type: ignore[attr-defined]
        elif k == K_GLOBAL:
            r = [name, n.name_hint]  # type: ignore[attr-defined]
        elif k == K_CONST:
            arr = n.data  # type: ignore[attr-defined]
            raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
            r = [name, arr.dtype.name, list(arr.shape), base64.b64encode(raw).decode("ascii")]
        elif k == K_OP:
            r = [name, n.name]  # type: ignore[attr-defined]
        elif k == K_CALL:
            r = [name, ix[n.op], ix[n.attrs], [ix[a] for a in n.args]]  # type: ignore[attr-defined]
        elif k in (K_TUPLE, K_TUPLE_T):
            r = [name, [ix[f] for f in n.fields]]  # type: ignore[attr-defined]
        elif k == K_GETITEM:
            r = [name, ix[n.tuple_value], n.index]  # type: ignore[attr-defined]
        elif k == K_FUNC:
            rt = n.ret_type  # type: ignore[attr-defined]
            r = [name, [ix[p] for p in n.params], ix[n.body],  # type: ignore[attr-defined]
                 None if rt is None else ix[rt], ix[n.attrs]]  # type: ignore[attr-defined]
        elif k == K_LET:
            r = [name, ix[n.var], ix[n.value], ix[n.body]]  # type: ignore[attr-defined]
        elif k == K_IF:
            r = [name, ix[n.cond], ix[n.true_branch], ix[n.false_branch]]  # type: ignore[attr-defined]
        elif k == K_TENSOR_T:
            r = [name, n.dtype, list(n.shape)]  # type: ignore[attr-defined]
        elif k == K_FUNC_T:
            r = [name, [ix[a] for a in n.arg_types], ix[n.ret_type]]  # type: ignore[attr-defined]
        else:
            r = [name, [[key, _json_value(v, ix)] for key, v in n.items()]]  # type: ignore[attr-defined]
        recs.append(r)
        ix[n] = i
    doc: dict[str, Any] = {"format": JSON_FORMAT, "version": FORMAT_VERSION}
    if isinstance(obj, Module):
        doc["functions"] = {nm: ix[r] for nm, r in zip(names, roots)}
        doc["history"] = [_json_record(rec) for rec in obj.pass_records]
    else:
        doc["node"] = ix[roots[0]]
    doc["nodes"] = recs
    return json.dumps(doc, indent=indent, allow_nan=False)


def _json_record(rec: PassRecord) -> dict[str, Any]:
    src = rec.sources
    return {
        "name": rec.name, "options": rec.options, "seconds": float(rec.seconds),
        "edges": [[new.hex(), [o.hex() for o in olds]] for new, olds in rec.edges],
        "removed": sorted(r.hex() for r in rec.removed),
        "sources": None if src is None else [[k.hex(), thaw_source_value(v)] for k, v in src.items()],
    }


def from_json(text: str | bytes) -> Any:
    """Rebuild what :func:`to_json` wrote (a Module or a single node).

    Raises :class:`SerializationError` for malformed or invalid input.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise SerializationError(f"expected JSON text (str or bytes), got {type(text).__name__}")
    try:
        doc = json.loads(text, parse_constant=_no_constant)  # NaN / Infinity are not JSON
    except (ValueError, TypeError, RecursionError) as e:
        raise SerializationError(f"invalid JSON: {e}") from None
    try:
        cols = _JsonColumns()
        flags = cols.read(doc)
    except SerializationError:
        raise
    except _Bad as e:
        raise SerializationError(f"invalid pyir JSON: {e}") from None
    except Exception as e:  # defensive: every defect must surface as a SerializationError
        raise SerializationError(f"invalid pyir JSON: {type(e).__name__}: {e}") from e
    return _build(_Columns(flags, bytes(cols.kinds), cols.ints, cols.S.items,
                           cols.ids.items, bytes(cols.blob)))  # type: ignore[arg-type]


def _int(x: Any, what: str) -> int:
    if type(x) is not int:
        raise _Bad(f"{what} must be an integer, got {x!r:.60}")
    if not _I64_MIN <= x <= _I64_MAX:
        raise _Bad(f"{what} out of range: {x}")
    return x


def _str(x: Any, what: str) -> str:
    if type(x) is not str:
        raise _Bad(f"{what} must be a string, got {x!r:.60}")
    return x


def _list(x: Any, what: str) -> list[Any]:
    if type(x) is not list:
        raise _Bad(f"{what} must be a list, got {x!r:.60}")
    return x


def _ref_or_null(x: Any, what: str) -> int:
    if x is None:
        return -1
    if _int(x, what) < 0:
        raise _Bad(f"{what} must be a node index or null, got {x}")
    return x  # type: ignore[no-any-return]


_HEX_DIGITS = frozenset("0123456789abcdef")


def _hex_id(x: Any, what: str) -> bytes:
    """A 16-byte id written as exactly 32 lowercase hex digits (as ``to_json`` writes them)."""
    s = _str(x, what)
    if len(s) != 32 or not _HEX_DIGITS.issuperset(s):
        raise _Bad(f"{what} must be 32 lowercase hex digits, got {s!r:.60}")
    return bytes.fromhex(s)


class _JsonColumns:
    """Converts a parsed JSON document into the binary decoder's columns, checking field types."""

    def __init__(self) -> None:
        self.kinds = bytearray()
        self.ints: list[int] = []
        self.S = _Strings()
        self.ids = _Strings()
        self.blob = bytearray()

    def read(self, doc: Any) -> int:
        if type(doc) is not dict or doc.get("format") != JSON_FORMAT:
            raise _Bad("not a pyir JSON document (missing \"format\": \"pyir\")")
        if doc.get("version") != FORMAT_VERSION:
            raise _Bad(f"unsupported format version {doc.get('version')!r} "
                       f"(this pyir reads {FORMAT_VERSION})")
        nodes = _list(doc.get("nodes"), "nodes")
        for i, rec in enumerate(nodes):
            try:
                self._node(rec)
            except _Bad as e:
                raise _Bad(f"node {i}: {e}") from None
        out = self.ints
        if "functions" in doc:
            funcs = doc["functions"]
            if type(funcs) is not dict:
                raise _Bad("functions must be an object")
            out.append(len(funcs))
            for name, r in funcs.items():
                out += (self.S(name), _int(r, f"function @{name}"))
            self._history(_list(doc.get("history", []), "history"))
            return FLAG_MODULE
        out.append(_int(doc.get("node"), "node"))
        out.append(0)
        return 0

    def _refs(self, x: Any, what: str) -> None:
        lst = _list(x, what)
        self.ints.append(len(lst))
        self.ints += [_int(j, what) for j in lst]

    def _node(self, rec: Any) -> None:
        rec = _list(rec, "node record")
        if not rec or type(rec[0]) is not str or rec[0] not in _KIND_OF_NAME:
            raise _Bad(f"unknown node kind {rec[0] if rec else None!r:.60}")
        k = _KIND_OF_NAME[rec[0]]
        f = rec[1:]
        arity = (3, 1, 3, 1, 3, 1, 2, 4, 3, 3, 2, 1, 2, 1)[k]
        if len(f) != arity:
            raise _Bad(f"{rec[0]} record needs {arity} fields, got {len(f)}")
        self.kinds.append(k)
        out = self.ints
        S = self.S
        if k == K_VAR:
            raw = _hex_id(f[1], "Var uid")
            out += (S(_str(f[0], "Var name")), *_qq.unpack(raw), _ref_or_null(f[2], "Var type"))
        elif k in (K_GLOBAL, K_OP):
            out.append(S(_str(f[0], f"{rec[0]} name")))
        elif k == K_CONST:
            shape = [_int(d, "Constant shape") for d in _list(f[1], "Constant shape")]
            try:
                raw = base64.b64decode(_str(f[2], "Constant data"), validate=True)
            except (binascii.Error, ValueError):
                raise _Bad("Constant data is not valid base64") from None
            self.blob += b"\0" * (-len(self.blob) % _ALIGN)
            out += (S(_str(f[0], "Constant dtype")), len(shape), *shape, len(self.blob), len(raw))
            self.blob += raw
        elif k == K_CALL:
            out += (_int(f[0], "Call op"), _int(f[1], "Call attrs"))
            self._refs(f[2], "Call args")
        elif k in (K_TUPLE, K_TUPLE_T):
            self._refs(f[0], f"{rec[0]} fields")
        elif k == K_GETITEM:
            out += (_int(f[0], "TupleGetItem tuple"), _int(f[1], "TupleGetItem index"))
        elif k == K_FUNC:
            self._refs(f[0], "Function params")
            out += (_int(f[1], "Function body"), _ref_or_null(f[2], "Function ret_type"),
                    _int(f[3], "Function attrs"))
        elif k in (K_LET, K_IF):
            out += [_int(j, f"{rec[0]} field") for j in f]
        elif k == K_TENSOR_T:
            shape = [_int(d, "TensorType shape") for d in _list(f[1], "TensorType shape")]
            out += (S(_str(f[0], "TensorType dtype")), len(shape), *shape)
        elif k == K_FUNC_T:
            self._refs(f[0], "FuncType args")
            out.append(_int(f[1], "FuncType ret"))
        else:  # Attrs
            items = _list(f[0], "Attrs items")
            out.append(len(items))
            for item in items:
                item = _list(item, "Attrs item")
                if len(item) != 2:
                    raise _Bad("Attrs items are [name, value] pairs")
                out.append(S(_str(item[0], "attribute name")))
                self._value(item[1], 0)

    def _value(self, v: Any, depth: int) -> None:
        v = _list(v, "attribute value")
        if not v or type(v[0]) is not str or depth > _MAX_ATTR_DEPTH:
            raise _Bad(f"bad attribute value {v!r:.60}")
        tag, rest = v[0], v[1:]
        out = self.ints
        if tag == "none" and not rest:
            out.append(V_NONE)
            return
        if len(rest) != 1:
            raise _Bad(f"bad attribute value {v!r:.60}")
        x = rest[0]
        if tag == "bool" and type(x) is bool:
            out.append(V_TRUE if x else V_FALSE)
        elif tag == "int" and type(x) is int:
            if _I64_MIN <= x <= _I64_MAX:
                out += (V_INT, x)
            else:
                out += (V_BIGINT, self.S(str(x)))
        elif tag == "float" and type(x) in (float, int):
            out += (V_FLOAT, _float_bits(float(x)))
        elif tag == "float_bits" and type(x) is str and len(x) == 16:
            try:
                bits = int(x, 16)
            except ValueError:
                raise _Bad(f"bad float bits {x!r}") from None
            out += (V_FLOAT, bits - (1 << 64) if bits > _I64_MAX else bits)
        elif tag == "str" and type(x) is str:
            out += (V_STR, self.S(x))
        elif tag == "ref":
            out += (V_REF, _int(x, "attribute node reference"))
        elif tag == "tuple" and type(x) is list:
            out += (V_TUPLE, len(x))
            for y in x:
                self._value(y, depth + 1)
        else:
            raise _Bad(f"bad attribute value {v!r:.60}")

    def _history(self, records: list[Any]) -> None:
        out = self.ints
        S = self.S
        ids = self.ids
        out.append(len(records))
        for rec in records:
            if type(rec) is not dict:
                raise _Bad("pass records must be objects")
            name = _str(rec.get("name"), "pass name")
            seconds = rec.get("seconds", 0.0)
            if type(seconds) not in (int, float):
                raise _Bad(f"pass {name!r}: seconds must be a number")
            edges = _list(rec.get("edges", []), "edges")
            out += (S(name), S(_str(rec.get("options", ""), "pass options")), _float_bits(float(seconds)),
                    len(edges))
            for e in edges:
                e = _list(e, "edge")
                if len(e) != 2:
                    raise _Bad("edges are [new id, [old ids]] pairs")
                olds = _list(e[1], "edge old ids")
                out += (ids(_hex_id(e[0], "edge id")), len(olds))
                out += [ids(_hex_id(o, "edge id")) for o in olds]
            removed = _list(rec.get("removed", []), "removed")
            out.append(len(removed))
            out += [ids(_hex_id(r, "removed id")) for r in removed]
            src = rec.get("sources")
            if src is None:
                out.append(-1)
            else:
                src = _list(src, "sources")
                vals = []
                out.append(len(src))
                for item in src:
                    item = _list(item, "sources item")
                    if len(item) != 2:
                        raise _Bad("sources items are [id, value] pairs")
                    out.append(ids(_hex_id(item[0], "sources id")))
                    vals.append(item[1])
                out.append(S(json.dumps(vals)))
