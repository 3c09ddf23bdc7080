"""TVM's metadata section: the ``#[metadata]`` JSON node graph of TVM's Relay text.

TVM's printer writes the constants it does not print inline (``meta[relay.Constant][i]``) after
the program as ``#[metadata]`` and the JSON of its object graph (``SaveJSON`` of a
``Map<String, Array<Object>>``, TVM ``src/node/serialization.cc``)::

    {"root": 1,
     "nodes": [{"type_key": ""},
               {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
               {"type_key": "Array", "data": [3]},
               {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0", ...}}],
     "b64ndarrays": ["P6G0lvBAXt0AAAAAAAAAAAEAAAA..."],
     "attrs": {"tvm_version": "0.18.0"}}

Node 0 is the null object; an object's fields are strings holding node indices (``"0"``: null);
a ``relay.Constant``'s ``data`` is an index into ``b64ndarrays``, each the base64 of an NDArray
in TVM's save format (``src/runtime/ndarray.cc``, little-endian): ``uint64`` magic
``0xDD5E40F096B4A13F``, ``uint64`` reserved, device (``int32`` type, ``int32`` id), ``int32``
ndim, dtype (``uint8`` code: 0 int, 1 uint, 2 float; ``uint8`` bits; ``uint16`` lanes),
``int64`` shape[ndim], ``int64`` byte size, the bytes.

:func:`load` returns the entries of each kind; the parser uses the constants (other kinds, such as
``VirtualDevice``, are returned as :class:`MetaNode` placeholders and only their references'
text is kept).  :func:`dump` writes the section for a list of constants.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParseError
from ..ir.expr import Constant

__all__ = ["load", "dump", "decode_ndarray", "encode_ndarray", "MetaNode", "MAGIC"]

MAGIC = 0xDD5E40F096B4A13F
_CODES = {0: "int", 1: "uint", 2: "float"}
_HEAD = struct.Struct("<QQiii")  # magic, reserved, device type, device id, ndim


@dataclass(frozen=True)
class MetaNode:
    """An object of the metadata section pyir does not represent (kept by its type key)."""

    type_key: str
    index: int


def _dtype(code: int, bits: int, lanes: int) -> np.dtype:
    if lanes != 1:
        raise ValueError(f"vector dtypes (lanes={lanes}) are not supported")
    if code == 1 and bits == 1:
        return np.dtype("bool")
    name = _CODES.get(code)
    if name is None or bits not in (8, 16, 32, 64) or (name == "float" and bits == 8):
        raise ValueError(f"unsupported dtype (code {code}, {bits} bits)")
    return np.dtype(f"{name}{bits}")


def decode_ndarray(raw: bytes) -> np.ndarray:
    """An array from TVM's NDArray save format (ValueError if malformed)."""
    if len(raw) < _HEAD.size + 4:
        raise ValueError("truncated NDArray header")
    magic, _, _, _, ndim = _HEAD.unpack_from(raw, 0)
    if magic != MAGIC:
        raise ValueError(f"bad NDArray magic {magic:#x}")
    if not 0 <= ndim <= 64:
        raise ValueError(f"bad NDArray rank {ndim}")
    code, bits, lanes = struct.unpack_from("<BBH", raw, _HEAD.size)
    dt = _dtype(code, bits, lanes)
    pos = _HEAD.size + 4
    if len(raw) < pos + 8 * ndim + 8:
        raise ValueError("truncated NDArray shape")
    shape = struct.unpack_from(f"<{ndim}q", raw, pos)
    pos += 8 * ndim
    (nbytes,) = struct.unpack_from("<q", raw, pos)
    pos += 8
    if any(d < 0 for d in shape):
        raise ValueError(f"negative NDArray dimension in {shape}")
    count = 1
    for d in shape:
        count *= d
    if nbytes != count * dt.itemsize or len(raw) != pos + nbytes:
        raise ValueError(f"NDArray data of {len(raw) - pos} bytes (header says {nbytes}) for "
                         f"{dt.name} {tuple(shape)}")
    return np.frombuffer(raw, dtype=dt, count=count, offset=pos).reshape(shape).copy()


def encode_ndarray(a: np.ndarray) -> bytes:
    """TVM's NDArray save format of ``a`` (a CPU tensor)."""
    dt = a.dtype
    if dt == np.bool_:
        code, bits = 1, 1
    else:
        code = {"i": 0, "u": 1, "f": 2}.get(dt.kind, -1)
        if code < 0:
            raise ValueError(f"dtype {dt.name} has no TVM NDArray code")
        bits = dt.itemsize * 8
    data = np.ascontiguousarray(a).astype(dt.newbyteorder("<"), copy=False).tobytes()
    return b"".join([_HEAD.pack(MAGIC, 0, 1, 0, a.ndim), struct.pack("<BBH", code, bits, 1),
                     struct.pack(f"<{a.ndim}q", *a.shape), struct.pack("<q", len(data)), data])


def _err(msg: str, text: str, pos: int) -> ParseError:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return ParseError(f"TVM metadata section: {msg}", text, line, col)


def load(text: str, pos: int) -> dict[str, list[Any]]:
    """The entries of the TVM JSON metadata starting at ``text[pos:]``, by kind.

    ``relay.Constant`` entries are :class:`~pyir.ir.expr.Constant` nodes; others are
    :class:`MetaNode`.  Malformed JSON or graphs raise ParseError at ``pos``.
    """
    try:
        doc = json.loads(text[pos:])
    except ValueError as e:
        raise _err(f"bad JSON: {e}", text, pos) from None
    try:
        return _load_graph(doc)
    except (ValueError, TypeError, KeyError, IndexError, binascii.Error) as e:
        raise _err(f"{type(e).__name__}: {e}", text, pos) from None


def _index(v: Any, n: int) -> int:
    # TVM writes indices as ints, and as decimal strings inside "attrs"; a float (1e400
    # would overflow int()) or any other text is no index
    if type(v) is str and v.isascii() and v.isdigit():
        v = int(v)
    if type(v) is not int:
        raise ValueError(f"node index must be an integer, got {v!r}")
    i = v
    if not 0 <= i < n:
        raise IndexError(f"node index {i} out of range ({n} nodes)")
    return i


def _load_graph(doc: Any) -> dict[str, list[Any]]:
    if type(doc) is not dict or type(doc.get("nodes")) is not list:
        raise ValueError("expected an object with 'root' and 'nodes'")
    nodes = doc["nodes"]
    arrays = doc.get("b64ndarrays", [])
    if type(arrays) is not list:
        raise ValueError("'b64ndarrays' must be a list")
    n = len(nodes)
    root = nodes[_index(doc.get("root"), n)]
    if type(root) is not dict or root.get("type_key") != "Map":
        raise ValueError("the root must be a Map from kinds to arrays")
    keys, data = root.get("keys", []), root.get("data", [])
    if type(keys) is not list or type(data) is not list or len(keys) != len(data):
        raise ValueError("the root Map needs as many 'keys' as 'data'")
    decoded: dict[int, Constant] = {}
    out: dict[str, list[Any]] = {}
    for kind, idx in zip(keys, data):
        arr = nodes[_index(idx, n)]
        if type(kind) is not str or type(arr) is not dict or arr.get("type_key") != "Array":
            raise ValueError(f"kind {kind!r} must map to an Array")
        items: list[Any] = []
        for j in arr.get("data", []):
            j = _index(j, n)
            node = nodes[j]
            if type(node) is not dict:
                raise ValueError(f"node {j} is not an object")
            tk = node.get("type_key", "")
            if tk == "relay.Constant":
                a = _index(node["attrs"]["data"], len(arrays))
                c = decoded.get(a)
                if c is None:
                    c = decoded[a] = Constant(decode_ndarray(base64.b64decode(arrays[a], validate=True)))
                items.append(c)
            else:
                items.append(MetaNode(str(tk), j))
        out[kind] = items
    return out


def dump(constants: list[Constant], tvm_version: str = "0.18.0") -> str:
    """TVM's metadata JSON for ``meta[relay.Constant][i]`` = ``constants[i]`` (2-space indented,
    as TVM writes it)."""
    n = len(constants)
    nodes: list[dict[str, Any]] = [
        {"type_key": ""},
        {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
        {"type_key": "Array", "data": list(range(3, 3 + n))},
    ]
    blobs = []
    for i, c in enumerate(constants):  # each on the unconstrained device, as TVM writes them
        nodes.append({"type_key": "relay.Constant",
                      "attrs": {"_checked_type_": "0", "data": str(i), "span": "0",
                                "virtual_device_": str(3 + n)}})
        blobs.append(base64.b64encode(encode_ndarray(c.data)).decode())
    nodes.append({"type_key": "VirtualDevice",
                  "attrs": {"device_type_int": "-1", "memory_scope": str(4 + n), "target": "0",
                            "virtual_device_id": "-1"}})
    nodes.append({"type_key": "runtime.String"})
    doc = {"root": 1, "nodes": nodes, "b64ndarrays": blobs, "attrs": {"tvm_version": tvm_version}}
    return json.dumps(doc, indent=2)
