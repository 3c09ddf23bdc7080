"""JSON form of the serialization format of :mod:`pyir.serialize`.

``to_json(mod)`` writes the same node table as the binary format, as a JSON
document (``indent`` for pretty-printing)::

    {"format": "pyir", "version": 1,
     "functions": {"main": 7},          # a module (or "node": 7 for a single node)
     "history": [{"name": ..., "options": ..., "seconds": ..., "edges": [[new, [olds]]],
                  "removed": [ids], "sources": null | [[id, value]]}],   # ids as 32 hex digits
     "nodes": [["TensorType", "float32", [1, 3]], ["Var", "x", "<uid hex>", 0], ["Op", "nn.relu"],
               ["Attrs", []], ["Call", 2, 3, [1]], ["Function", [1], 4, null, 3], ...]}

A document whose pass history records rule names (the rewrite rule that made each node) is
``"version": 3`` (with or without symbolic dimensions; others keep version 1 or 2 and their
text): such a record has ``"rules": [[id, rule name], ...]``, one pair per firing, in order.

A document with symbolic dimensions is ``"version": 2`` (static ones stay version 1):
dimension nodes are records ``["Sym", "n"]``, ``["AnyDim"]``, ``["DimFloorDiv", arg, 2]``,
``["DimMod", arg, 4]``, ``["DimPoly", const, [[[atom, ...], coef], ...]]``, and a TensorType
shape holds ints and ``["ref", index]`` of dimension nodes.

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
import os
import re
import sys
from array import array
from collections.abc import Iterable, Iterator
from json.scanner import make_scanner
from typing import Any

from ..errors import SerializationError
from ..ir.expr import Call, Var
from ..ir.kinds import KINDS, info
from ..ir.lineage import PassRecord, thaw_source_value
from ..ir.module import Module
from ..ir.node import Node, gc_paused
from .binary import (
    _ALIGN,
    _DIM_KIND_OF_TYPE,
    _GENERIC,
    _I64_MAX,
    _I64_MIN,
    _KIND_OF_TYPE,
    _MAX_ATTR_DEPTH,
    _NOT_DIM,
    DIM_KIND_NAMES,
    FLAG_MODULE,
    FLAG_TYPES,
    FORMAT_VERSION,
    K_ANYDIM,
    K_ATTRS,
    K_CALL,
    K_CONST,
    K_DIMPOLY,
    K_FUNC,
    K_FUNC_T,
    K_GETITEM,
    K_GLOBAL,
    K_IF,
    K_LET,
    K_OP,
    K_SYM,
    K_TENSOR_T,
    K_TUPLE,
    K_TUPLE_T,
    K_VAR,
    KIND_NAMES,
    RULES_FORMAT_VERSION,
    SYMBOLIC_FORMAT_VERSION,
    V_BIGINT,
    V_BYTES,
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
    _edge_parts,
    _float_bits,
    _format_table,
    _no_constant,
    _Strings,
)

__all__ = ["to_json", "from_json"]

_KIND_OF_NAME = {n: k for k, n in enumerate(KIND_NAMES) if n is not None}
#: kind code -> the number of fields of its record: its declared fields (pyir.ir.kinds)
_ARITY = {k: len(info(KINDS[n]).fields) for n, k in _KIND_OF_NAME.items()}

JSON_FORMAT = "pyir"
#: Version of the JSON document layout (independent of the binary format's version: the binary
#: layout changed in version 2, the JSON document did not).
JSON_VERSION = 1
#: The document version written for (and only for) documents with symbolic dimension nodes
#: (as binary version 3 is): static documents keep version 1 and their text.
JSON_SYMBOLIC_VERSION = 2
#: The document version written for (and only for) documents whose pass history records rule
#: names, with or without symbolic dimensions (as binary version 4 is).
JSON_RULES_VERSION = 3
_JSON_VERSIONS = (JSON_VERSION, JSON_SYMBOLIC_VERSION, JSON_RULES_VERSION)
_DIM_KIND_OF_NAME = {n: k for k, n in DIM_KIND_NAMES.items()}
_DIM_ARITY = {K_SYM: 1, K_ANYDIM: 0, K_DIMPOLY: 2}  # DimFloorDiv and DimMod: 2 (arg, divisor)


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
    if t is bytes:
        return ["bytes", v.hex()]
    raise SerializationError(f"cannot serialize attribute value {v!r}")


def _node_record(n: Node, ix: dict[Node, int]) -> list[Any]:
    k = _KIND_OF_TYPE.get(type(n))
    if k is None:
        k = _DIM_KIND_OF_TYPE.get(type(n))
        if k is None:
            raise SerializationError(f"cannot serialize node of type {type(n).__name__}")
        return _dim_json(n, k, ix)
    name = type(n).__name__
    if k == K_VAR:
        ta = n.type_annotation  # type: ignore[attr-defined]
        return [name, n.name_hint, n.uid.hex(), None if ta is None else ix[ta]]  # type: ignore[attr-defined]
    if k == K_GLOBAL:
        return [name, n.name_hint]  # type: ignore[attr-defined]
    if k == K_CONST:
        arr = n.data  # type: ignore[attr-defined]
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        return [name, arr.dtype.name, list(arr.shape), base64.b64encode(raw).decode("ascii")]
    if k == K_OP:
        return [name, n.name]  # type: ignore[attr-defined]
    if k == K_CALL:
        return [name, ix[n.op], ix[n.attrs], [ix[a] for a in n.args]]  # type: ignore[attr-defined]
    if k in (K_TUPLE, K_TUPLE_T):
        return [name, [ix[f] for f in n.fields]]  # type: ignore[attr-defined]
    if k == K_GETITEM:
        return [name, ix[n.tuple_value], n.index]  # type: ignore[attr-defined]
    if k == K_FUNC:
        rt = n.ret_type  # type: ignore[attr-defined]
        return [name, [ix[p] for p in n.params], ix[n.body],  # type: ignore[attr-defined]
                None if rt is None else ix[rt], ix[n.attrs]]  # type: ignore[attr-defined]
    if k == K_LET:
        return [name, ix[n.var], ix[n.value], ix[n.body]]  # type: ignore[attr-defined]
    if k == K_IF:
        return [name, ix[n.cond], ix[n.true_branch], ix[n.false_branch]]  # type: ignore[attr-defined]
    if k == K_TENSOR_T:
        return [name, n.dtype, [d if type(d) is int else ["ref", ix[d]]  # type: ignore[attr-defined]
                                for d in n.shape]]  # type: ignore[attr-defined]
    if k == K_FUNC_T:
        return [name, [ix[a] for a in n.arg_types], ix[n.ret_type]]  # type: ignore[attr-defined]
    if k == K_ATTRS:
        return [name, [[key, _json_value(v, ix)] for key, v in n.items()]]  # type: ignore[attr-defined]
    return _generic_json(n, name, ix)


def _dim_json(n: Any, k: int, ix: dict[Node, int]) -> list[Any]:
    """A dimension node's record: ``["Sym", name]``, ``["AnyDim"]``, ``["DimFloorDiv", arg,
    divisor]``, ``["DimMod", arg, divisor]``, ``["DimPoly", const, [[[atoms], coef], ...]]``."""
    name = DIM_KIND_NAMES[k]
    if k == K_SYM:
        return [name, n.name]
    if k == K_ANYDIM:
        return [name]
    if k == K_DIMPOLY:
        return [name, n.const, [[[ix[a] for a in m], c] for m, c in n.terms]]
    return [name, ix[n.arg], n.divisor]


def _generic_json(n: Node, name: str, ix: dict[Node, int]) -> list[Any]:
    """The record of a kind without a hand-tuned one, from its declaration: its fields in
    order (a node as its index or null, a tuple of nodes as a list, a scalar as a tagged value)."""
    out: list[Any] = [name]
    for f in info(type(n)).fields:
        v = getattr(n, f.name)
        out.append([ix[x] for x in v] if f.many else (None if v is None else ix[v]) if f.node
                   else _json_value(v, ix))
    return out


_BATCH = 4096  # list items encoded per json.dumps call while streaming


class _Writer:
    """Builds the JSON text in pieces: the document's small parts by ``json.dumps`` of a skeleton,
    its long lists (node records, edges, removed ids) in batches, never all as Python objects at
    once.  The text is exactly ``json.dumps(document, indent=indent)``."""

    def __init__(self, indent: int | str | None) -> None:
        self.indent = indent
        self.ind = "" if indent is None else indent if isinstance(indent, str) else " " * indent
        self.nonce = "\0" + os.urandom(8).hex() + ":"
        self.lists: list[tuple[int, Iterator[list[Any]]]] = []  # (indent level of the key, batches)

    def placeholder(self, level: int, batches: Iterator[list[Any]]) -> str:
        """A stand-in string for a long list whose key sits at indent ``level``."""
        self.lists.append((level, batches))
        return f"{self.nonce}{len(self.lists) - 1}"

    def _dumps(self, v: Any) -> str:
        return json.dumps(v, indent=self.indent, allow_nan=False)

    def text(self, skeleton: Any) -> str:
        head = self._dumps(skeleton)
        token = json.dumps(self.nonce)[1:-1]
        pieces = head.split('"' + token)
        parts = [pieces[0]]
        for piece in pieces[1:]:
            num, _, rest = piece.partition('"')
            level, batches = self.lists[int(num)]
            self._emit(parts, level, batches)
            parts.append(rest)
        return "".join(parts)

    def _emit(self, parts: list[str], level: int, batches: Iterator[list[Any]]) -> None:
        first = True
        pad = "\n" + self.ind * level
        parts.append("[")
        for batch in batches:
            if not batch:
                continue
            t = self._dumps(batch)
            if self.indent is None:
                body = t[1:-1]
                sep = ", "
            else:
                if level:
                    t = t.replace("\n", pad)
                body = t[1:len(t) - len(pad) - 1]
                sep = ","
            if not first:
                parts.append(sep)
            parts.append(body)
            first = False
        if not first and self.indent is not None:
            parts.append(pad)
        parts.append("]")


def _batched(items: Iterable[Any], fn: Any) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for x in items:
        batch.append(fn(x))
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    yield batch


def _record_batches(table: list[Node], ix: dict[Node, int]) -> Iterator[list[Any]]:
    """The node records of ``table`` in batches (calls and variables written inline)."""
    get = ix.__getitem__
    batch: list[Any] = []
    for n in table:
        if type(n) is Call:
            batch.append(["Call", ix[n.op], ix[n.attrs], list(map(get, n.args))])
        elif type(n) is Var:
            ta = n.type_annotation
            batch.append(["Var", n.name_hint, n.uid.hex(), None if ta is None else ix[ta]])
        else:
            batch.append(_node_record(n, ix))
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    yield batch


def to_json(obj: Module | Node, *, indent: int | str | None = None) -> str:
    """The node table of a module (or node) as JSON text; see :func:`from_json`.

    The text is built in pieces (node records and edges in batches), so its
    Python-object form is never held at once.
    """
    tds: list[Node] = []
    if isinstance(obj, Module):
        names = obj.names()
        roots: list[Node] = [obj[n] for n in names]
        types = obj.type_definitions()
        tds = [types[k] for k in sorted(types)]
    elif isinstance(obj, Node):
        roots = [obj]
    else:
        raise SerializationError(f"can only serialize a Module or a Node, got {type(obj).__name__}")
    table = _format_table(roots + tds)
    w = _Writer(indent)
    symbolic = any(type(n) in _DIM_KIND_OF_TYPE for n in table)
    rules = isinstance(obj, Module) and any(rec.rule_table() is not None for rec in obj.pass_records)
    doc: dict[str, Any] = {"format": JSON_FORMAT,
                           "version": JSON_RULES_VERSION if rules else
                           JSON_SYMBOLIC_VERSION if symbolic else JSON_VERSION}
    with gc_paused():
        ix = {n: i for i, n in enumerate(table)}
        if isinstance(obj, Module):
            doc["functions"] = {nm: ix[r] for nm, r in zip(names, roots)}
            if tds:  # only then: modules without type definitions keep their text
                doc["types"] = [ix[t] for t in tds]
            doc["history"] = [_json_record(rec, w) for rec in obj.pass_records]
        else:
            doc["node"] = ix[roots[0]]
        doc["nodes"] = w.placeholder(1, _record_batches(table, ix))
        return w.text(doc)


def _edge_batches(edges: Any) -> Iterator[list[Any]]:
    """The ``[new, [olds]]`` records of a pass record's edges in batches (ids in hex, converted
    in bulk from the compact parts)."""
    news, olds, counts = _edge_parts(edges)
    nh = news.hex()
    oh = olds.hex()
    n = len(news) // 16
    if counts is None:
        for b in range(0, n, _BATCH):
            yield [[nh[i:i + 32], [oh[i:i + 32]]] for i in range(32 * b, 32 * min(n, b + _BATCH), 32)]
        yield []
        return
    c = array("I")
    c.frombytes(counts)
    batch: list[Any] = []
    p = 0
    for i, k in enumerate(c):
        q = p + 32 * k
        batch.append([nh[32 * i:32 * i + 32], [oh[j:j + 32] for j in range(p, q, 32)]])
        p = q
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    yield batch


def _json_record(rec: PassRecord, w: _Writer) -> dict[str, Any]:
    src = rec.sources
    out = {
        "name": rec.name, "options": rec.options, "seconds": float(rec.seconds),
        "edges": w.placeholder(3, _edge_batches(rec.edges)),
        "removed": w.placeholder(3, _batched(sorted(rec.removed), bytes.hex)),
        "sources": None if src is None else [[k.hex(), thaw_source_value(v)] for k, v in src.items()],
    }
    table = rec.rule_table()
    if table is not None:  # only then: records without rules keep their text
        names, ids, idx = table
        h = ids.hex()
        out["rules"] = w.placeholder(3, _batched(range(len(idx)),
                                                 lambda i: [h[32 * i:32 * i + 32], names[idx[i]]]))
    return out


def from_json(text: str | bytes) -> Any:
    """Rebuild what :func:`to_json` wrote (a Module or a single node).

    The text is read incrementally: node records, edges and removed ids are
    converted one at a time, so the parsed document is never held at once.
    Raises :class:`SerializationError` for malformed or invalid input.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise SerializationError(f"expected JSON text (str or bytes), got {type(text).__name__}")
    try:
        if not isinstance(text, str):  # as json.loads decodes bytes
            text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
        if text.startswith("\ufeff"):
            raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    except ValueError as e:  # UnicodeDecodeError too
        raise SerializationError(f"invalid JSON: {e}") from None
    try:
        cols = _JsonColumns()
        with gc_paused():
            flags, version = cols.read(_Reader(text))
    except SerializationError:
        raise
    except _Syntax as e:
        raise SerializationError(f"invalid JSON: {e}") from None
    except _Bad as e:
        raise SerializationError(f"invalid pyir JSON: {e}") from None
    except (ValueError, RecursionError) as e:  # the scanner's errors (JSONDecodeError, NaN hook ...)
        raise SerializationError(f"invalid JSON: {e}") from None
    except Exception as e:  # defensive: every defect must surface as a SerializationError
        raise SerializationError(f"invalid pyir JSON: {type(e).__name__}: {e}") from e
    return _build(_Columns(flags, bytes(cols.kinds), cols.ints, cols.S.items,
                           cols.ids.items, bytes(cols.blob), version))


class _Syntax(Exception):
    """Malformed JSON text."""


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # NaN / Infinity are not JSON


class _Reader:
    """Reads a JSON text piecewise: values with the standard (C) scanner, objects and arrays
    that may be long member by member, so their elements can be converted and dropped."""

    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0
        self.scan = make_scanner(_DECODER)  # type: ignore[arg-type]

    def peek(self) -> str:
        m = _WS.match(self.s, self.i)
        self.i = m.end()  # type: ignore[union-attr]
        return self.s[self.i:self.i + 1]

    def _take(self, ch: str) -> None:
        if self.peek() != ch:
            raise _Syntax(f"expected {ch!r} at char {self.i}")
        self.i += 1

    def value(self) -> Any:
        """The next complete value."""
        self.peek()
        try:
            v, self.i = self.scan(self.s, self.i)
        except StopIteration as e:
            raise _Syntax(f"expecting a value at char {e.value}") from None
        return v

    def values(self) -> Iterator[Any]:
        """The values of an array, one at a time (what ``elements`` and ``value`` read, with
        one whitespace match per element)."""
        self._take("[")
        s = self.s
        scan = self.scan
        ws = _WS.match
        i = ws(s, self.i).end()  # type: ignore[union-attr]
        if s[i:i + 1] == "]":
            self.i = i + 1
            return
        while True:
            try:
                v, i = scan(s, i)
            except StopIteration as e:
                raise _Syntax(f"expecting a value at char {e.value}") from None
            self.i = i
            yield v
            c = s[i:i + 1]
            if c != "," and c != "]":
                i = ws(s, i).end()  # type: ignore[union-attr]
                c = s[i:i + 1]
            if c == "]":
                self.i = i + 1
                return
            if c != ",":
                raise _Syntax(f"expected ',' or ']' at char {i}")
            i = ws(s, i + 1).end()  # type: ignore[union-attr]

    def elements(self) -> Iterator[None]:
        """Step through an array: each yield leaves the reader at the next element (read it)."""
        self._take("[")
        if self.peek() == "]":
            self.i += 1
            return
        while True:
            yield None
            c = self.peek()
            self.i += 1
            if c == "]":
                return
            if c != ",":
                raise _Syntax(f"expected ',' or ']' at char {self.i - 1}")

    def members(self) -> Iterator[str]:
        """Step through an object: yields each key, leaving the reader at its value (read it)."""
        self._take("{")
        if self.peek() == "}":
            self.i += 1
            return
        while True:
            if self.peek() != '"':
                raise _Syntax(f"expecting a property name at char {self.i}")
            key = self.value()
            self._take(":")
            yield key
            c = self.peek()
            self.i += 1
            if c == "}":
                return
            if c != ",":
                raise _Syntax(f"expected ',' or '}}' at char {self.i - 1}")

    def end(self) -> None:
        if self.peek():
            raise _Syntax(f"extra data at char {self.i}")


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
    return x


_HEX_DIGITS = frozenset("0123456789abcdef")


def _dim_ref(x: list[Any]) -> int:
    """A symbolic dimension of a TensorType shape, ``["ref", index]``, as the binary column
    holds it (``-1 - index``)."""
    if len(x) != 2 or x[0] != "ref":
        raise _Bad(f"a TensorType dimension is an integer or [\"ref\", node index], got {x!r:.60}")
    j = _int(x[1], "TensorType dimension reference")
    if j < 0:
        raise _Bad(f"TensorType dimension reference {j} out of range")
    return -1 - j


def _hex_id(x: Any, what: str) -> bytes:
    """A 16-byte id written as exactly 32 lowercase hex digits (as ``to_json`` writes them)."""
    if type(x) is str and len(x) == 32 and _HEX_DIGITS.issuperset(x):
        return bytes.fromhex(x)
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
        self.sigs: dict[tuple[int, int, int], int] = {}  # call signature (op, attrs, nargs) -> index

    def read(self, r: _Reader) -> tuple[int, int]:
        """Convert the document being read by ``r``; the flags and binary version of the columns."""
        if r.peek() != "{":
            r.value()
            r.end()
            raise _Bad("not a pyir JSON document (missing \"format\": \"pyir\")")
        top: dict[str, Any] = {}
        node_cols: tuple[bytearray, list[int], bytearray] | None = None
        hist: list[tuple[Any, ...]] | None = None
        for key in r.members():  # a repeated key: the last one counts, as for json.loads
            if key == "nodes" and r.peek() == "[":
                node_cols = self._nodes(r)
                top["nodes"] = True
            elif key == "history" and r.peek() == "[":
                hist = self._history(r)
                top["history"] = True
            else:
                top[key] = r.value()
                if key == "nodes":
                    node_cols = None
                elif key == "history":
                    hist = None
        r.end()
        if top.get("format") != JSON_FORMAT:
            raise _Bad("not a pyir JSON document (missing \"format\": \"pyir\")")
        version = top.get("version")
        if type(version) is not int or version not in _JSON_VERSIONS:
            raise _Bad(f"unsupported format version {version!r} (this pyir reads JSON version "
                       f"{JSON_VERSION}; {JSON_SYMBOLIC_VERSION} with symbolic dimensions; "
                       f"{JSON_RULES_VERSION} with rule names)")
        rules = version == JSON_RULES_VERSION  # (with or without symbolic dimension nodes)
        if (hist is not None and any(h[-1] is not None for h in hist)) != rules:
            raise _Bad(f"JSON version {version} with rule names (they need version {JSON_RULES_VERSION})"
                       if not rules else
                       f"JSON version {version} without rule names (it is for histories with them)")
        if node_cols is None:
            _list(top.get("nodes"), "nodes")  # raises: not a list
            raise _Bad("nodes must be a list")  # pragma: no cover
        self.kinds, self.ints, self.blob = node_cols
        symbolic = bool(bytes(self.kinds).translate(None, _NOT_DIM))
        if not rules and symbolic != (version == JSON_SYMBOLIC_VERSION):  # one version per content
            raise _Bad(f"JSON version {version} with symbolic dimension nodes (they need version "
                       f"{JSON_SYMBOLIC_VERSION})" if symbolic else
                       f"JSON version {version} without symbolic dimension nodes (version "
                       f"{JSON_SYMBOLIC_VERSION} is for documents with them)")
        bversion = RULES_FORMAT_VERSION if rules else SYMBOLIC_FORMAT_VERSION if symbolic else FORMAT_VERSION
        out = self.ints
        if "functions" in top:
            funcs = top["functions"]
            if type(funcs) is not dict:
                raise _Bad("functions must be an object")
            out.append(len(funcs))
            for name, ref in funcs.items():
                out += (self.S(name), _int(ref, f"function @{name}"))
            flags = FLAG_MODULE
            if "types" in top:
                tds = top["types"]
                if type(tds) is not list or not tds:
                    raise _Bad("types must be a non-empty list")
                out.append(len(tds))
                out += [_int(t, "type definition") for t in tds]
                flags |= FLAG_TYPES
            if hist is None:
                hist = []
                if "history" in top:  # present but not a list (a list is read incrementally)
                    _list(top["history"], "history")
            self._emit_history(hist, rules)
            return flags, bversion
        out.append(_int(top.get("node"), "node"))
        out.append(0)
        return 0, bversion

    def _nodes(self, r: _Reader) -> tuple[bytearray, list[int], bytearray]:
        self.kinds, self.ints, self.blob = bytearray(), [], bytearray()
        self.sigs = {}
        kinds = self.kinds
        out = self.ints
        sigs = self.sigs
        S = self.S
        ids = self.ids
        for i, rec in enumerate(r.values()):
            # the common records (calls, typed variables), when plainly valid, converted inline;
            # anything else (and any defect) takes the checked path
            if type(rec) is list and len(rec) == 4:
                tag = rec[0]
                if tag == "Call":
                    o = rec[1]
                    a = rec[2]
                    js = rec[3]
                    if type(o) is int and type(a) is int and type(js) is list and 0 <= o < i \
                            and 0 <= a < i:
                        for j in js:
                            if type(j) is not int or not 0 <= j < i:
                                break
                        else:
                            sig = (o, a, len(js))
                            s = sigs.get(sig)
                            if s is None:
                                s = sigs[sig] = len(sigs)
                            kinds.append(K_CALL)
                            out.append(s)
                            out += js
                            continue
                elif tag == "Var":
                    name = rec[1]
                    uid = rec[2]
                    t = rec[3]
                    if type(name) is str and type(uid) is str and type(t) is int and 0 <= t < i \
                            and len(uid) == 32 and _HEX_DIGITS.issuperset(uid):
                        kinds.append(K_VAR)
                        out += (S(name), ids(bytes.fromhex(uid)), t)
                        continue
            try:
                self._node(rec)
            except _Bad as e:
                raise _Bad(f"node {i}: {e}") from None
        head = [len(self.sigs)]  # the binary columns start with the call signatures
        for sig in self.sigs:
            head += sig
        head += self.ints
        return self.kinds, head, self.blob

    def _refs(self, x: Any, what: str) -> None:
        lst = _list(x, what)
        self.ints.append(len(lst))
        self.ints += [_int(j, what) for j in lst]

    def _node(self, rec: Any) -> None:
        rec = _list(rec, "node record")
        if not rec or type(rec[0]) is not str or (rec[0] not in _KIND_OF_NAME
                                                  and rec[0] not in _DIM_KIND_OF_NAME):
            raise _Bad(f"unknown node kind {rec[0] if rec else None!r:.60}")
        if rec[0] in _DIM_KIND_OF_NAME:
            self._dim(_DIM_KIND_OF_NAME[rec[0]], rec)
            return
        k = _KIND_OF_NAME[rec[0]]
        f = rec[1:]
        arity = _ARITY[k]
        if len(f) != arity:
            raise _Bad(f"{rec[0]} record needs {arity} fields, got {len(f)}")
        self.kinds.append(k)
        out = self.ints
        S = self.S
        if k == K_VAR:
            raw = _hex_id(f[1], "Var uid")
            out += (S(_str(f[0], "Var name")), self.ids(raw), _ref_or_null(f[2], "Var type"))
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
            args = [_int(j, "Call args") for j in _list(f[2], "Call args")]
            sig = (_int(f[0], "Call op"), _int(f[1], "Call attrs"), len(args))
            s = self.sigs.get(sig)
            if s is None:
                s = self.sigs[sig] = len(self.sigs)
            out.append(s)
            out += args
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
            shape = [_int(d, "TensorType shape") if type(d) is not list else _dim_ref(d)
                     for d in _list(f[1], "TensorType shape")]
            out += (S(_str(f[0], "TensorType dtype")), len(shape), *shape)
        elif k == K_FUNC_T:
            self._refs(f[0], "FuncType args")
            out.append(_int(f[1], "FuncType ret"))
        elif k in _GENERIC:
            for fd, x in zip(_GENERIC[k].fields, f):
                what = f"{rec[0]} {fd.name}"
                if fd.many:
                    self._refs(x, what)
                elif fd.node:
                    out.append(_ref_or_null(x, what) if fd.optional else _int(x, what))
                else:
                    self._value(x, 0)
        else:  # Attrs
            items = _list(f[0], "Attrs items")
            out.append(len(items))
            for item in items:
                item = _list(item, "Attrs item")
                if len(item) != 2:
                    raise _Bad("Attrs items are [name, value] pairs")
                out.append(S(_str(item[0], "attribute name")))
                self._value(item[1], 0)

    def _dim(self, k: int, rec: list[Any]) -> None:
        """A dimension node's record, as the binary columns hold it (see binary._dim_record)."""
        f = rec[1:]
        arity = _DIM_ARITY.get(k, 2)
        if len(f) != arity:
            raise _Bad(f"{rec[0]} record needs {arity} fields, got {len(f)}")
        self.kinds.append(k)
        out = self.ints
        if k == K_SYM:
            out.append(self.S(_str(f[0], "Sym name")))
        elif k == K_DIMPOLY:
            terms = _list(f[1], "DimPoly terms")
            out += (_int(f[0], "DimPoly constant"), len(terms))
            for t in terms:
                t = _list(t, "DimPoly term")
                if len(t) != 2:
                    raise _Bad("DimPoly terms are [[atoms], coefficient] pairs")
                atoms = [_int(j, "DimPoly atom") for j in _list(t[0], "DimPoly monomial")]
                out.append(len(atoms))
                out += atoms
                out.append(_int(t[1], "DimPoly coefficient"))
        elif k != K_ANYDIM:
            out += (_int(f[0], f"{rec[0]} arg"), _int(f[1], f"{rec[0]} divisor"))

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
        elif tag == "bytes" and type(x) is str:
            out += (V_BYTES, self.S(x))
        elif tag == "tuple" and type(x) is list:
            out += (V_TUPLE, len(x))
            for y in x:
                self._value(y, depth + 1)
        else:
            raise _Bad(f"bad attribute value {v!r:.60}")

    def _history(self, r: _Reader) -> list[tuple[Any, ...]]:
        """The pass records, each as (name, options, seconds bits, new ids, old ids, counts or
        None, removed ids, source id references or None, sources text): ids as raw bytes."""
        out: list[tuple[Any, ...]] = []
        S = self.S
        ids = self.ids
        for _ in r.elements():
            if r.peek() != "{":
                r.value()
                raise _Bad("pass records must be objects")
            rec: dict[str, Any] = {}
            edges: tuple[bytearray, bytearray, array[int] | None] | None = (bytearray(), bytearray(), None)
            removed: bytearray | None = bytearray()
            fired: tuple[list[int], bytearray, array[int]] | None = None
            for key in r.members():
                if key == "rules" and r.peek() == "[":
                    fired = self._rules(r)
                    rec.pop("rules", None)
                elif key == "edges" and r.peek() == "[":
                    edges = self._edges(r)
                elif key == "removed" and r.peek() == "[":
                    removed = bytearray()
                    for v in r.values():
                        removed += _hex_id(v, "removed id")
                else:
                    rec[key] = r.value()
                    if key == "edges":
                        edges = None
                    elif key == "removed":
                        removed = None
                    elif key == "rules":
                        fired = None
            name = _str(rec.get("name"), "pass name")
            if "rules" in rec:
                raise _Bad(f"pass {name!r}: rules must be a list of [id, rule name] pairs")
            if fired is not None and not fired[2]:
                raise _Bad(f"pass {name!r}: rules, when present, name at least one firing")
            seconds = rec.get("seconds", 0.0)
            if type(seconds) not in (int, float):
                raise _Bad(f"pass {name!r}: seconds must be a number")
            if edges is None:
                _list(rec["edges"], "edges")
                raise _Bad("edges must be a list")  # pragma: no cover
            if removed is None:
                _list(rec["removed"], "removed")
                raise _Bad("removed must be a list")  # pragma: no cover
            head = (S(name), S(_str(rec.get("options", ""), "pass options")), _float_bits(float(seconds)))
            src = rec.get("sources")
            if src is None:
                out.append((*head, *edges, removed, None, None, fired))
                continue
            src = _list(src, "sources")
            vals = []
            keys = []
            for item in src:
                item = _list(item, "sources item")
                if len(item) != 2:
                    raise _Bad("sources items are [id, value] pairs")
                keys.append(ids(_hex_id(item[0], "sources id")))
                vals.append(item[1])
            out.append((*head, *edges, removed, keys, S(json.dumps(vals)), fired))
        return out

    def _rules(self, r: _Reader) -> tuple[list[int], bytearray, array[int]]:
        """A record's ``[[id, rule name], ...]`` as the binary columns store them: the names (string
        references, in the order they first fired), the ids, and each firing's name index."""
        index: dict[str, int] = {}
        ids = bytearray()
        idx = array("H")
        for v in r.values():
            v = _list(v, "rule firing")
            if len(v) != 2:
                raise _Bad("rule firings are [id, rule name] pairs")
            ids += _hex_id(v[0], "rule id")
            name = _str(v[1], "rule name")
            k = index.get(name)
            if k is None:
                if len(index) >= 0xFFFF:
                    raise _Bad("more than 65,535 rule names in one pass record")
                k = index[name] = len(index)
            idx.append(k)
        return [self.S(n) for n in index], ids, idx

    def _edges(self, r: _Reader) -> tuple[bytearray, bytearray, array[int] | None]:
        """The edges as the binary columns store them: new ids, old ids, and the per-edge
        counts of old ids (None when each edge has one)."""
        news = bytearray()
        olds = bytearray()
        counts = array("I")
        for e in r.values():
            e = _list(e, "edge")
            if len(e) != 2:
                raise _Bad("edges are [new id, [old ids]] pairs")
            old = _list(e[1], "edge old ids")
            news += _hex_id(e[0], "edge id")
            for o in old:
                olds += _hex_id(o, "edge id")
            counts.append(len(old))
        return news, olds, None if counts.count(1) == len(counts) else counts

    def _emit_history(self, recs: list[tuple[Any, ...]], rules: bool = False) -> None:
        """Append the history columns (raw ids in the blob, after the constants); with ``rules``
        (binary version 4) each record's rule table."""
        out = self.ints
        blob = self.blob
        out.append(len(recs))
        for name, options, bits, news, olds, counts, removed, keys, text, fired in recs:
            blob += b"\0" * (-len(blob) % _ALIGN)
            out += (name, options, bits, len(news) // 16, len(olds) // 16, int(counts is not None),
                    len(blob), len(removed) // 16)
            blob += news
            blob += olds
            if counts is not None:
                if sys.byteorder == "big":  # pragma: no cover
                    counts.byteswap()
                blob += counts.tobytes()
            blob += removed
            if keys is None:
                out.append(-1)
            else:
                out.append(len(keys))
                out += keys
                out.append(text)
            if rules:
                if fired is None:
                    out.append(0)
                    continue
                names, ids, idx = fired
                blob += b"\0" * (-len(blob) % _ALIGN)
                out += (len(idx), len(names), *names, len(blob))
                blob += ids
                if sys.byteorder == "big":  # pragma: no cover
                    idx.byteswap()
                blob += idx.tobytes()
