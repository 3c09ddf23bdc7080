"""Tests of pyir.serialize: binary, JSON and pickle round trips, history, and rejection of bad input."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
from array import array

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyir
from pyir import op
from pyir.errors import LineageError, SerializationError
from pyir.ir.expr import Call, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var, const
from pyir.ir.lineage import Edges, PassRecord
from pyir.ir.module import Module
from pyir.ir.node import Attrs
from pyir.ir.types import FuncType, TensorType, TupleType
from pyir.rewrite.functor import rewrite
from pyir.serialize import FORMAT_VERSION, dumps, from_json, load, loads, save, to_json
from pyir.serialize.binary import _assemble, _sections
from pyir.testing import programs, resnet, shared_dag, transformer_block
from pyir.transform import InferType, SimplifyExpr
from pyir.transform.base import module_pass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _all_kinds_module() -> Module:
    """A module using every node kind, type kind and attribute value kind."""
    t = TensorType((2,), "float32")
    x = Var("x", t)
    y = Var("y")  # no annotation
    f_t = Var("f", FuncType([t], t))
    tup_t = Var("tt", TupleType([t, TensorType((), "int64")]))
    consts = [
        const(np.array([True, False])),
        const(np.arange(3, dtype="int64")),
        const(np.array([1.5, -0.0], dtype="float16")),
        const(np.float32(2.5)),  # 0-d
        const(np.zeros((0, 3), "float32")),  # empty
        const(np.array([[1, 2], [3, 4]], dtype="uint8")),
        const(np.array([1 + 2j], dtype="complex64")),
    ]
    helper_x = Var("hx", t)
    helper = Function([helper_x], op.nn.relu(helper_x), t, {"Primitive": 1, "name": "helper"})
    attrs = {
        "none": None, "yes": True, "no": False, "one": 1, "onef": 1.0, "negzero": -0.0, "nan": float("nan"),
        "inf": float("-inf"), "big": 10**30, "neg": -(2**63), "s": "héllo\u2603", "empty": (),
        "nested": (1, (2.0, ("x", None)), True), "type": t, "expr": consts[0],
    }
    call_g = Call(GlobalVar("helper"), [x], attrs)
    img = Var("img", TensorType((1, 1, 4, 4)))
    conv = op.nn.conv2d(img, const(np.ones((1, 1, 3, 3), "float32")), padding=(1, 1))
    tup = Tuple([call_g, x, *consts])
    v = Var("v")
    body = Let(v, TupleGetItem(tup, 0),
               If(op.greater(op.sum(v), const(0.0)), op.add(v, y), op.nn.relu(v)))
    main = Function([x, y, f_t, tup_t, img], Tuple([body, conv, Op("nn.relu"), Call(f_t, [x])]),
                    None, {"Compiler": "test", "flags": (1, 1.0, True)})
    return Module({"main": main, "helper": helper})


def _check_same(a: Module, b: Module) -> None:
    assert isinstance(b, Module)
    assert b.names() == a.names()
    for name in a.names():
        assert b[name] is a[name]


# -- round trips ---------------------------------------------------------------------------------------------


def test_every_kind_binary_round_trip() -> None:
    """Binary dumps/loads preserves every node kind, attribute value kind and dtype, by identity."""
    m = _all_kinds_module()
    data = dumps(m)
    _check_same(m, loads(data))
    assert loads(bytearray(data))["main"] is m["main"]
    assert loads(memoryview(data))["main"] is m["main"]
    assert dumps(loads(data)) == data  # deterministic


def test_every_kind_json_round_trip() -> None:
    """JSON round trip preserves every node kind, attribute value kind and dtype, by identity."""
    m = _all_kinds_module()
    text = to_json(m)
    json.loads(text)  # standard JSON (no NaN literals)
    assert "NaN" not in text and "Infinity" not in text
    _check_same(m, from_json(text))
    assert from_json(text.encode()).names() == m.names()
    assert to_json(from_json(text)) == text


def test_every_kind_pickle_round_trip() -> None:
    """pickle of modules and of nodes goes through the serializer and preserves identity."""
    m = _all_kinds_module()
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        _check_same(m, pickle.loads(pickle.dumps(m, protocol=proto)))
        assert pickle.loads(pickle.dumps(m["main"], protocol=proto)) is m["main"]
    assert pickle.loads(pickle.dumps(Attrs(a=1))) is Attrs(a=1)
    assert pickle.loads(pickle.dumps(TensorType((3,), "int8"))) is TensorType((3,), "int8")


def test_attr_value_kinds_stay_distinct() -> None:
    """1, 1.0 and True (and 0.0 / -0.0) stay distinct attribute values through every format."""
    x = Var("x", TensorType((2,)))
    for value in (1, 1.0, True, 0.0, -0.0, (1,), (1.0,), (True,)):
        e = Call(GlobalVar("g"), [x], {"a": value})
        for back in (loads(dumps(e)), from_json(to_json(e)), pickle.loads(pickle.dumps(e))):
            assert back is e
            got = back.attrs["a"]
            assert type(got) is type(value) and got == value
            if type(value) is float:
                assert np.signbit(got) == np.signbit(value)


def test_loads_returns_what_was_dumped() -> None:
    """A single expression, type or Attrs round-trips to itself; a module to a Module."""
    x = pyir.var("x", shape=(3,))
    e = op.tanh(op.nn.relu(x))
    for obj in (e, x, TensorType((1, 2), "bool"), Attrs(k=(1, "a")), GlobalVar("g"), Op("add"),
                const(np.ones(3, "float64"))):
        assert loads(dumps(obj)) is obj
        assert from_json(to_json(obj)) is obj
    assert isinstance(loads(dumps(Module.from_expr(e))), Module)


@pytest.mark.parametrize("build", [lambda: resnet(3), transformer_block, lambda: shared_dag(500)],
                         ids=["resnet3", "transformer", "shared_dag500"])
def test_models_round_trip(build) -> None:
    """The test models round-trip through binary, JSON and pickle with sharing and identity preserved."""
    m = build()
    _check_same(m, loads(dumps(m)))
    _check_same(m, from_json(to_json(m)))
    _check_same(m, pickle.loads(pickle.dumps(m)))


@given(programs())
@settings(max_examples=30, deadline=None)
def test_random_programs_round_trip(m) -> None:
    """Random well-typed programs round-trip through binary and JSON by identity."""
    _check_same(m, loads(dumps(m)))
    _check_same(m, from_json(to_json(m)))


def test_save_load_paths_and_files(tmp_path) -> None:
    """save/load accept paths (str and PathLike) and binary file objects."""
    m = resnet(1)
    save(m, tmp_path / "a.pyir")
    save(m, str(tmp_path / "b.pyir"))
    with open(tmp_path / "c.pyir", "wb") as f:
        save(m, f)
    _check_same(m, load(tmp_path / "a.pyir"))
    _check_same(m, load(str(tmp_path / "b.pyir")))
    with open(tmp_path / "c.pyir", "rb") as f:
        _check_same(m, load(f))


def test_deep_chain_binary_json_and_pickle(deep_chain) -> None:
    """A 10**6-deep chain saves, loads and pickles without RecursionError."""
    m = deep_chain
    data = dumps(m)
    back = loads(data)  # (one load serves both checks: the functions and the bytes come back)
    assert back["main"] is m["main"]
    assert dumps(back) == data
    del back
    assert from_json(to_json(m))["main"] is m["main"]
    assert pickle.loads(pickle.dumps(m["main"].body)) is m["main"].body


def test_deep_let_chain_binary(deep_anf) -> None:
    """A 10**6-deep let chain (A-normal form, with its pass record) round-trips."""
    m = deep_anf
    back = loads(dumps(m))
    assert back["main"] is m["main"] and back.pass_records[-1].edges == m.pass_records[-1].edges


def test_deep_chain_fresh_load_in_another_process(deep_chain, tmp_path) -> None:
    """A 10**6-deep chain saved here loads in a fresh process (every node built, not found)."""
    path = tmp_path / "deep.pyir"
    save(deep_chain, path)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    got = subprocess.run([sys.executable, "-c", "import sys, pyir; m = pyir.load(sys.argv[1]); "
                          "print(m['main'].hexid, pyir.count_nodes(m['main']))", str(path)],
                         capture_output=True, text=True, env=env, check=True).stdout.split()
    assert got == [deep_chain["main"].hexid, str(pyir.count_nodes(deep_chain["main"]))]


def test_cross_process_ids_equal(tmp_path) -> None:
    """A module saved here and loaded in another Python process has the same function ids."""
    m = _all_kinds_module()
    path = tmp_path / "m.pyir"
    save(m, path)
    code = ("import sys; from pyir.serialize import load, from_json; m = load(sys.argv[1]); "
            "j = from_json(open(sys.argv[2]).read()); "
            "print(m['main'].hexid, m['helper'].hexid, j['main'].hexid)")
    (tmp_path / "m.json").write_text(to_json(m))
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "m.json")],
                         capture_output=True, text=True, env=env, check=True).stdout.split()
    assert out == [m["main"].hexid, m["helper"].hexid, m["main"].hexid]


# -- lineage / history ---------------------------------------------------------------------------------------


@module_pass(name="ReluToTanh")
def _relu_to_tanh(mod: Module) -> Module:
    relu = Op("nn.relu")

    def fn(n):
        if type(n) is Call and n.op is relu:
            return op.tanh(n.args[0])
        return None

    return mod.with_functions({k: rewrite(f, fn) for k, f in mod.items()})


def test_history_survives_round_trip() -> None:
    """Pass records (edges, removed ids, sources, timing) and lineage queries survive every format."""
    x = pyir.var("x", shape=(4,))
    r = op.nn.relu(op.exp(x))
    m0 = Module.from_expr(op.add(r, const(1.0)))
    m1 = _relu_to_tanh(m0)
    assert m1 is not m0 and len(m1.pass_records) == 1
    extra = PassRecord("Frontend", "opset=13", ((m1["main"].body.id, (r.id,)),), frozenset({x.id}),
                       {r.id: {"onnx": "Relu_0", "inputs": [1, 2.5, None, True]}, x.id: None}, 0.25)
    m1 = m1._derive(m1.functions(), history=m1.pass_records.append(extra))
    found = m1.find(r)
    tanh = op.tanh(op.exp(x))
    assert tanh in found and m1["main"].body in found
    for back in (loads(dumps(m1)), from_json(to_json(m1)), pickle.loads(pickle.dumps(m1))):
        assert back["main"] is m1["main"]
        assert len(back.pass_records) == 2
        for a, b in zip(m1.pass_records, back.pass_records):
            assert (a.name, a.options, a.edges, a.removed, a.sources, a.seconds) == \
                   (b.name, b.options, b.edges, b.removed, b.sources, b.seconds)
        assert back.find(r) == found
        assert back.origins(tanh) == m1.origins(tanh)


def test_unserializable_sources_rejected() -> None:
    """Lineage sources that are not JSON-able are refused when the record is made (LineageError),
    so every record can be saved."""
    m = Module.from_expr(op.nn.relu(pyir.var("x", shape=(2,))))
    with pytest.raises(LineageError, match="JSON"):
        PassRecord("P", "", (), frozenset(), {m["main"].id: object()}, 0.0)
    with pytest.raises(SerializationError):
        dumps(object())  # type: ignore[arg-type]


# -- bad input --------------------------------------------------------------------------------

_VALID = dumps(_all_kinds_module())
_VALID_JSON = to_json(_all_kinds_module())


def _resign(cols) -> bytes:
    return _assemble(cols)


def _tamper(fn) -> bytes:
    """A file whose columns were changed by ``fn`` and whose checksum was recomputed."""
    x = pyir.var("x", shape=(2,))
    m = Module.from_expr(op.add(op.nn.relu(x), const(np.ones(2, "float32"))))
    cols = _sections(dumps(m))
    fn(cols)
    return _assemble(cols)


def _kind_pos(cols, kind: int) -> tuple[int, int]:
    """(node index, position in ints) of the first node of ``kind``; walks the simple test module."""
    widths = {0: 3, 3: 1}  # Var (name, uid, type), Op (name)
    p = 1 + 3 * cols.ints[0]  # after the call signatures
    for i, k in enumerate(cols.kinds):
        if k == kind:
            return i, p
        if k == 2:  # Constant
            p += 4 + cols.ints[p + 1]
        elif k == 10:  # TensorType
            p += 2 + cols.ints[p + 1]
        elif k == 13:  # Attrs (empty in the test module)
            p += 1
        elif k == 4:  # Call: signature, then its arguments
            p += 1 + _sig(cols, cols.ints[p])[2]
        else:
            p += widths[k]
    raise AssertionError("kind not found")


def _sig(cols, s: int) -> list[int]:
    """Call signature ``s``: [op, attrs, nargs]."""
    return cols.ints[1 + 3 * s:4 + 3 * s]


def test_header_errors() -> None:
    """Wrong magic, version, flags, truncation, trailing bytes and checksum mismatch are reported."""
    cases = {
        "magic": b"NOPE" + _VALID[4:],
        "version": _VALID[:4] + (FORMAT_VERSION + 1).to_bytes(2, "little") + _VALID[6:],
        "flags": _VALID[:6] + (0x80).to_bytes(2, "little") + _VALID[8:],
        "truncated": _VALID[:-1],
        "trailing": _VALID + b"\0",
        "checksum": _VALID[:40] + bytes([_VALID[40] ^ 1]) + _VALID[41:],
        "truncated data": _VALID[:10],
    }
    for what, data in cases.items():
        with pytest.raises(SerializationError, match=what):
            loads(data)
    with pytest.raises(SerializationError):
        loads("not bytes")  # type: ignore[arg-type]
    with pytest.raises(SerializationError):
        loads(b"")


# relu(%x) saved by pyir 0.1.0 in binary format version 1 (x: Tensor[(2,), float32], uid 00 01 .. 0f)
_V1_PAYLOAD = bytes.fromhex(
    "50594952010001002001000000000000ffcfbad6062260fd1cfc503b5163ba2006000000000000"
    "00b00000000000000020000000000000001300000000000000070000000000000000000000000000"
    "000a00030d04070000000000000000010000000000000002000000000000000100000000000000"
    "000102030405060708090a0b0c0d0e0f00000000000000000200000000000000000000000000000002"
    "00000000000000030000000000000001000000000000000100000000000000010000000000000001"
    "000000000000000400000000000000ffffffffffffffff0300000000000000010000000000000003"
    "00000000000000050000000000000000000000000000000700000000000000010000000000000007"
    "000000000000000400000000000000666c6f61743332786e6e2e72656c756d61696e00000000000000")


def test_version_1_payloads_refused_by_version() -> None:
    """Binary format version 2 (call signatures, uids in the id table, strings cut in code
    points): a version 1 file (checksum intact) is a SerializationError naming both versions and
    the way over (an older pyir's JSON text, whose document version did not change)."""
    assert FORMAT_VERSION == 2 and _V1_PAYLOAD[4:6] == b"\1\0"
    with pytest.raises(SerializationError, match=r"version 1 \(this pyir reads version 2; .*to_json"):
        loads(_V1_PAYLOAD)
    assert json.loads(_VALID_JSON)["version"] == 1
    x = Var("x", TensorType((2,), "float32"), bytes(range(16)))
    v1_json = ('{"format": "pyir", "version": 1, "functions": {"main": 5}, "history": [], "nodes": '
               '[["TensorType", "float32", [2]], ["Var", "x", "000102030405060708090a0b0c0d0e0f", 0], '
               '["Op", "nn.relu"], ["Attrs", []], ["Call", 2, 3, [1]], ["Function", [1], 4, null, 3]]}')
    assert from_json(v1_json)["main"] is Module.from_expr(op.nn.relu(x))["main"]


def test_call_signatures_shared_and_checked_once() -> None:
    """Calls with one target, attribute set and arity share one stored signature; a signature
    whose target or attributes are not earlier nodes, or whose arity is wrong, is refused."""
    x = pyir.var("x", shape=(1, 2, 4, 4))
    w = const(np.ones((2, 2, 3, 3), "float32"))
    h = x
    for _ in range(5):
        h = op.nn.relu(op.nn.conv2d(h, w, padding=(1, 1)))
    m = Module.from_expr(h)
    cols = _sections(dumps(m))
    assert cols.ints[0] == 2  # conv2d and relu
    assert loads(_assemble(cols))["main"] is m["main"]

    def sig_target_later(c):  # the first signature's target: the last node (a later one)
        c.ints[1] = len(c.kinds) - 1
    def sig_attrs_not_attrs(c):  # the first signature's attributes: the variable
        c.ints[2] = c.kinds.index(0)
    def sig_negative(c):
        c.ints[3] = -1  # the first signature's arity
    for fn, msg in ((sig_target_later, "out of range"), (sig_attrs_not_attrs, "Call attrs is a Var"),
                    (sig_negative, "out of range")):
        cols = _sections(dumps(m))
        fn(cols)
        with pytest.raises(SerializationError, match=msg):
            loads(_assemble(cols))


def test_forward_and_out_of_range_references() -> None:
    """A child index not smaller than the node's own index, or negative, is rejected."""
    def forward(c):
        i, p = _kind_pos(c, 4)
        c.ints[p + 1] = i  # a call argument referring to the call itself
    def negative(c):
        _i, p = _kind_pos(c, 4)
        c.ints[p + 1] = -1
    def huge(c):
        _i, p = _kind_pos(c, 4)
        c.ints[p] = 10**9  # the call signature
    def huge_op(c):
        c.ints[1] = 10**9  # the target of the first call signature
    def forward_attrs(c):
        i, p = _kind_pos(c, 4)
        c.ints[1 + 3 * c.ints[p] + 1] = i  # the attrs of the first call's signature: the call itself
    def negative_sig(c):
        _i, p = _kind_pos(c, 4)
        c.ints[p] = -1
    for fn in (forward, negative, huge, huge_op, forward_attrs, negative_sig):
        with pytest.raises(SerializationError, match="out of range"):
            loads(_tamper(fn))


def test_unknown_kind_op_and_dtype() -> None:
    """Unknown node kinds, unknown operators and invalid dtypes are rejected with clear messages."""
    def kind(c):
        c.kinds = bytes([99]) + c.kinds[1:]
    def unknown_op(c):
        _i, p = _kind_pos(c, 3)
        c.strs[c.ints[p]] = "no.such.op"
    def dtype(c):
        _i, p = _kind_pos(c, 2)
        c.strs[c.ints[p]] = "object"
    for fn, msg in ((kind, "unknown node kind"), (unknown_op, "unknown operator"), (dtype, "invalid dtype")):
        with pytest.raises(SerializationError, match=msg):
            loads(_tamper(fn))


def test_wrong_node_kinds_and_arity() -> None:
    """References to nodes of the wrong kind, wrong arity and extra data are rejected."""
    def call_on_type(c):  # a call argument that is a TensorType
        _i, p = _kind_pos(c, 4)
        c.ints[p + 1] = c.kinds.index(10)
    def arity(c):  # relu with two arguments
        _i, p = _kind_pos(c, 4)
        c.ints[1 + 3 * c.ints[p] + 2] = 2
        c.ints.insert(p + 1, c.ints[p + 1])
    def extra(c):
        c.ints.append(0)
    def bad_const_size(c):
        _i, p = _kind_pos(c, 2)
        c.ints[p + 3 + c.ints[p + 1]] += 4
    for fn in (call_on_type, arity, extra, bad_const_size):
        with pytest.raises(SerializationError):
            loads(_tamper(fn))


@FUZZ
@given(st.data())
def test_fuzz_byte_flips_and_truncations(data) -> None:
    """Random byte flips and truncations of a valid file raise SerializationError."""
    buf = bytearray(_VALID)
    if data.draw(st.booleans()):
        for pos in data.draw(st.sets(st.integers(0, len(buf) - 1), min_size=1, max_size=4)):
            buf[pos] ^= data.draw(st.integers(1, 255))
    else:
        buf = buf[:data.draw(st.integers(0, len(buf) - 1))]
    with pytest.raises(SerializationError):
        loads(bytes(buf))


@FUZZ
@given(st.binary(max_size=200), st.booleans())
def test_fuzz_garbage(garbage, with_magic) -> None:
    """Random garbage (with or without a valid magic and version) raises SerializationError."""
    data = (_VALID[:8] + garbage) if with_magic else garbage
    with pytest.raises(SerializationError):
        loads(data)


@FUZZ
@given(st.data())
def test_fuzz_resigned_payload_mutations(data) -> None:
    """Mutated payloads with a recomputed checksum load or raise SerializationError, nothing else."""
    raw = _VALID[32:]
    buf = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    from xxhash import xxh3_128_digest

    header = _VALID[:16] + xxh3_128_digest(bytes(buf))
    try:
        loads(header + bytes(buf))
    except SerializationError:
        pass


_INT_FIELDS = st.one_of(st.integers(-3, 200), st.integers(-(2**70), 2**70))
_JSON_VALUES = st.one_of(st.none(), st.booleans(), _INT_FIELDS, st.floats(allow_nan=False),
                         st.text(max_size=5), st.lists(st.integers(-2, 50), max_size=3),
                         st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@FUZZ
@given(st.data())
def test_fuzz_json_mutations(data) -> None:
    """Random mutations of a JSON document load or raise SerializationError, never anything else."""
    doc = json.loads(_VALID_JSON)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(["node", "field", "top", "history", "drop"]))
        nodes = doc.get("nodes")
        if not isinstance(nodes, list):  # an earlier mutation replaced the table itself
            nodes = []
        if where == "node" and nodes:
            nodes[data.draw(st.integers(0, len(nodes) - 1))] = data.draw(_JSON_VALUES)
        elif where == "field" and nodes:
            rec = nodes[data.draw(st.integers(0, len(nodes) - 1))]
            if isinstance(rec, list) and rec:
                rec[data.draw(st.integers(0, len(rec) - 1))] = data.draw(_JSON_VALUES)
        elif where == "top":
            doc[data.draw(st.sampled_from(["format", "version", "functions", "nodes", "node"]))] = \
                data.draw(_JSON_VALUES)
        elif where == "history":
            doc["history"] = [{"name": "p", "edges": data.draw(_JSON_VALUES),
                               "removed": data.draw(_JSON_VALUES), "sources": data.draw(_JSON_VALUES)}]
        elif nodes:
            del nodes[data.draw(st.integers(0, len(nodes) - 1))]
    try:
        from_json(json.dumps(doc))
    except SerializationError:
        pass


@FUZZ
@given(st.text(max_size=100))
def test_fuzz_json_garbage(text) -> None:
    """Random text and JSON values that are not pyir documents raise SerializationError."""
    with pytest.raises(SerializationError):
        from_json(text)
    with pytest.raises(SerializationError):
        from_json(json.dumps(text))


def test_json_field_type_errors() -> None:
    """JSON fields of the wrong type (bools as indices, strings as ints, bad base64) are rejected."""
    doc = json.loads(_VALID_JSON)
    call = next(i for i, r in enumerate(doc["nodes"]) if r[0] == "Call")
    const_i = next(i for i, r in enumerate(doc["nodes"]) if r[0] == "Constant")
    mutations = [
        lambda d: d["nodes"][call].__setitem__(1, True),
        lambda d: d["nodes"][call].__setitem__(3, "0"),
        lambda d: d["nodes"][call].__setitem__(1, call + 5),
        lambda d: d["nodes"][const_i].__setitem__(3, "@@@"),
        lambda d: d["nodes"][const_i].__setitem__(1, "object"),
        lambda d: d["nodes"].append(["Bogus", 1]),
        lambda d: d.__setitem__("version", 99),
        lambda d: d.__setitem__("format", "other"),
    ]
    for mutate in mutations:
        d = json.loads(_VALID_JSON)
        mutate(d)
        with pytest.raises(SerializationError):
            from_json(json.dumps(d))


def test_loading_rejects_a_variable_bound_twice() -> None:
    """A forged file whose two lets bind one variable is a SerializationError (as Module() would refuse)."""
    x = pyir.var("x", shape=(2,))
    a, b = pyir.Var("a"), pyir.Var("b")
    body = pyir.Tuple([pyir.Let(a, pyir.op.exp(x), pyir.op.tanh(a)),
                       pyir.Let(b, pyir.op.negative(x), pyir.op.tanh(b))])
    doc = json.loads(to_json(pyir.Module({"main": pyir.Function([x], body)})))
    text = json.dumps(doc).replace(b.uid.hex(), a.uid.hex())
    with pytest.raises(SerializationError):
        from_json(text)


# -- issue 10: loaders build exactly what the constructors build -------------------------------------


def _conv_module():
    x = pyir.var("x", shape=(1, 2, 4, 4))
    w = const(np.ones((2, 2, 3, 3), "float32"))
    c = op.nn.conv2d(x, w, padding=(1, 1))
    return Module({"main": Function([x], op.nn.relu(c))}), x, w, c


def test_loaded_call_attrs_are_normalized_binary() -> None:
    """issue 10 item 1: a payload whose conv padding is a 2-tuple loads as the canonical conv
    (the very node op.nn.conv2d builds), type-checks, and saves again stably."""
    mod, x, w, c = _conv_module()
    short = Call(Op("nn.conv2d"), (x, w), c.attrs.with_(padding=(1, 1)), _checked=True)  # a forged node
    assert short is not c
    payload = dumps(Module({"main": Function([x], op.nn.relu(short))}))
    back = loads(payload)
    assert back["main"] is mod["main"] and back["main"].body.args[0] is c
    pyir.testing.assert_canonical(back)
    pyir.transform.InferType()(back)
    again = dumps(back)
    assert again == dumps(mod) and dumps(loads(again)) == again


def test_loaded_call_attrs_are_normalized_json() -> None:
    """issue 10 item 1: the same through JSON: a 2-tuple padding is normalized by the op schema."""
    mod, _x, _w, _c = _conv_module()
    doc = json.loads(to_json(mod))
    for rec in doc["nodes"]:
        if rec[0] == "Attrs":
            for item in rec[1]:
                if item[0] == "padding":
                    item[1] = ["tuple", [["int", 1], ["int", 1]]]
    back = from_json(json.dumps(doc))
    assert back["main"] is mod["main"]
    pyir.testing.assert_canonical(back)
    assert to_json(back) == to_json(mod)


def test_loaded_call_attrs_wrong_kind_rejected() -> None:
    """issue 10 item 1: attributes the op schema refuses are a SerializationError, not a bare error."""
    mod, _x, _w, _c = _conv_module()
    doc = json.loads(to_json(mod))
    for rec in doc["nodes"]:
        if rec[0] == "Attrs":
            for item in rec[1]:
                if item[0] == "padding":
                    item[1] = ["str", "same"]
    with pytest.raises(SerializationError, match="padding"):
        from_json(json.dumps(doc))


def _with_record(mod: Module, rec: PassRecord) -> Module:
    return mod._derive(mod.functions(), history=mod.pass_records.append(rec))


def _reassembled(payload: bytes, mutate) -> bytes:
    """``payload`` with its decoded columns mutated and the checksum recomputed."""
    cols = _sections(payload)
    cols.blob = bytes(cols.blob)
    mutate(cols)
    return _assemble(cols)


def test_non_finite_numbers_rejected_by_records() -> None:
    """issue 10 item 2: one rule, non-finite seconds and lineage values are refused when a record
    is made (LineageError) and when one is loaded (SerializationError)."""
    some_id = bytes(16)
    for bad in ({"seconds": float("nan")}, {"seconds": float("inf")}, {"seconds": -1.0},
                {"sources": {some_id: float("nan")}}, {"sources": {some_id: [1, float("-inf")]}}):
        kw: dict = {"sources": None, "seconds": 0.0, **bad}
        with pytest.raises(LineageError):
            PassRecord("P", "", (), frozenset(), **kw)


def test_non_finite_numbers_rejected_by_loaders() -> None:
    """issue 10 item 2: payloads with a NaN / infinite pass time or lineage value do not load."""
    mod, x, _w, c = _conv_module()
    rec = PassRecord("P", "", ((c.id, (x.id,)),), frozenset(), {c.id: [0.5, "conv"]}, 0.25)
    good = _with_record(mod, rec)
    payload = dumps(good)
    assert dumps(loads(payload)) == payload
    sec_bits = struct.unpack("<q", struct.pack("<d", 0.25))[0]
    for bits in (0x7FF8000000000000, 0x7FF0000000000000, -0x10000000000000):  # NaN, inf, -inf
        def set_seconds(cols, bits=bits):
            cols.ints[len(cols.ints) - cols.ints[::-1].index(sec_bits) - 1] = bits
        with pytest.raises(SerializationError, match="seconds"):
            loads(_reassembled(payload, set_seconds))

    def nan_source(cols):
        cols.strs[cols.strs.index('[[0.5,"conv"]]')] = '[[NaN,"conv"]]'
    with pytest.raises(SerializationError, match="non-finite"):
        loads(_reassembled(payload, nan_source))
    text = to_json(good)
    for old, new in (('"seconds": 0.25', '"seconds": NaN'), ('"seconds": 0.25', '"seconds": 1e999'),
                     ('[0.5, "conv"]', '[Infinity, "conv"]'), ('[0.5, "conv"]', '[1e400, "conv"]')):
        assert old in text
        with pytest.raises(SerializationError):
            from_json(text.replace(old, new))


def test_history_edges_stored_as_id_bytes() -> None:
    """Pass record edges are stored as raw id bytes (loaded into Edges without per-edge work):
    edges with several old ids round-trip; one-old-id edges given with explicit counts save as
    any one-old-id edges do (so binary and JSON agree); inconsistent stored counts are refused."""
    mod, x, w, c = _conv_module()
    multi = PassRecord("P", "", ((c.id, (x.id, w.id)), (w.id, (x.id,)), (x.id, ())), frozenset({x.id}),
                       None, 0.5)
    ones = PassRecord("Q", "", Edges(c.id + w.id, x.id + x.id, array("I", [1, 1]).tobytes()), frozenset(),
                      None, 0.0)
    plain = PassRecord("Q", "", ((c.id, (x.id,)), (w.id, (x.id,))), frozenset(), None, 0.0)
    m = _with_record(_with_record(mod, multi), ones)
    data = dumps(m)
    back = loads(data)
    assert [list(r.edges) for r in back.pass_records] == [list(multi.edges), list(plain.edges)]
    assert back.pass_records[0].removed == frozenset({x.id})
    assert data == dumps(_with_record(_with_record(mod, multi), plain))
    assert dumps(from_json(to_json(m))) == data and to_json(back) == to_json(m)
    counts = array("I", [2, 1, 0]).tobytes()

    def more_olds(cols):  # the first edge claims three old ids: more than are stored
        assert cols.blob.count(counts) == 1
        cols.blob = cols.blob.replace(counts, array("I", [3, 1, 0]).tobytes())
    def past_the_end(cols):  # the last record's edges end past the (shortened) data section
        cols.blob = cols.blob[:-16]
    for fn, msg in ((more_olds, "inconsistent"), (past_the_end, "out of range")):
        with pytest.raises(SerializationError, match=msg):
            loads(_reassembled(data, fn))


def test_frozen_sources_round_trip() -> None:
    """issue 10 items 2, 12: frozen lineage values (tuples, read-only dicts) save and load identically."""
    mod, x, _w, c = _conv_module()
    rec = PassRecord("P", "o", (), frozenset(), {c.id: {"a": [1, {"b": None}], "s": "t"}, x.id: 2}, 1)
    good = _with_record(mod, rec)
    for back in (loads(dumps(good)), from_json(to_json(good)), pickle.loads(pickle.dumps(good))):
        (r,) = back.pass_records
        assert r.sources == rec.sources and r.seconds == 1.0
        assert r.sources[c.id]["a"] == (1, {"b": None})
        assert dumps(back) == dumps(good) and to_json(back) == to_json(good)


def test_json_ids_validated_strictly() -> None:
    """issue 10 item 3: ids must be exactly 32 lowercase hex digits (no spaces, no other forms)."""
    mod, x, w, c = _conv_module()
    good = _with_record(mod, PassRecord("P", "", ((c.id, (x.id,)),), frozenset({w.id}), {c.id: 1}, 0.0))
    text = to_json(good)
    assert from_json(text)["main"] is mod["main"]
    for hexid in (c.id.hex(), x.id.hex(), w.id.hex(), x.uid.hex()):
        assert hexid in text
        spaced = hexid[:10] + " " + hexid[12:] + "0"  # 32 characters, 15.5 bytes of hex
        for bad in (hexid[:8] + " " * 2 + hexid[10:], spaced, hexid.upper(), "0x" + hexid[2:],
                    hexid[:31] + "g", hexid[:30] + "\u0660\u0661"):
            assert len(bad) == 32
            with pytest.raises(SerializationError, match="hex"):
                from_json(text.replace(hexid, bad))


def test_loads_rejects_unusable_inputs() -> None:
    """issue 10 item 13: any object given to loads / load / from_json raises SerializationError
    if unusable; non-contiguous buffers are read like their bytes."""
    mod, *_ = _conv_module()
    payload = dumps(mod)
    bad_inputs = [np.zeros(64, "uint8")[::2], np.zeros((8, 8), "uint8")[:, ::2], np.zeros((4, 4), "int32").T,
                  None, 12, 1.5, "PYIR", [1, 2], object()]
    for data in bad_inputs:
        with pytest.raises(SerializationError):
            loads(data)  # type: ignore[arg-type]
    strided = np.zeros(2 * len(payload), "uint8")
    strided[::2] = np.frombuffer(payload, "uint8")
    assert loads(strided[::2])["main"] is mod["main"]
    assert loads(np.frombuffer(payload + b"\0" * (-len(payload) % 4), "uint8")[:len(payload)]
                 )["main"] is mod["main"]
    for target in (None, 12, 1.5, object(), "/nonexistent/dir/file.pyir", io.StringIO("text"),
                   io.BytesIO(b"PYIR")):
        with pytest.raises(SerializationError):
            load(target)  # type: ignore[arg-type]
    for text in (None, 12, memoryview(b"{}"), ["{}"], b"\xff\xfe"):
        with pytest.raises(SerializationError):
            from_json(text)  # type: ignore[arg-type]


def test_streamed_json_text_is_the_documents_dumps():
    """issue 10 (10^6 memory target): to_json builds its text in pieces (node records, edges and
    removed ids in batches) and still writes exactly ``json.dumps(document, indent=indent)``;
    from_json reads it incrementally and accepts the same texts as ``json.loads``."""
    import json

    import pyir.serialize.json_format as sj

    m = pyir.transform.ToANormalForm()(_all_kinds_module())
    x = pyir.var("x", shape=(2,))
    extra = PassRecord("P", "", ((m["main"].body.id, (x.id, m["main"].id)),), frozenset({x.id, m["main"].id}),
                       {x.id: [1, "a"]}, 0.5)
    m = m._derive(m.functions(), history=m.pass_records.append(extra))
    old_batch = sj._BATCH
    try:
        for batch in (1, 2, 4096):
            sj._BATCH = batch
            for indent in (None, 0, 2, "\t"):
                text = to_json(m, indent=indent)
                assert text == json.dumps(json.loads(text), indent=indent)
                assert to_json(from_json(text), indent=indent) == text
    finally:
        sj._BATCH = old_batch
    text = to_json(m)
    doc = json.loads(text)
    assert to_json(from_json(" \n" + json.dumps(doc, indent=1) + "\t\r\n")) == text
    assert to_json(from_json(text.encode("utf-16"))) == text
    # a repeated key counts once, the last time (as for json.loads)
    dup = text[:-1] + ', "nodes": [], "history": 3}'
    with pytest.raises(SerializationError):
        from_json(dup)
    dup_ok = '{"nodes": 5, "history": 7, ' + text[1:]
    assert to_json(from_json(dup_ok)) == text
    for bad in (text + "x", text[:-1], "\ufeff" + text, text.replace("[", "[,", 1), "[1]", "{}", "",
                '{"format": "pyir", "version": 1, "node": 0, "nodes": [["Op", "nn.relu"] ["Op"]]}'):
        with pytest.raises(SerializationError):
            from_json(bad)


# -- rule names in the history (binary version 4, JSON version 3) --------------------------------------------


def _ruled_module() -> tuple[Module, Call]:
    """A module after SimplifyExpr (its record names the rule ``x + 0``), and the original add."""
    x = pyir.var("x", shape=(2, 3))
    e = op.add(op.nn.relu(x), const(0.0))
    return SimplifyExpr()(Module.from_expr(op.exp(e))), e


def test_rule_names_survive_round_trip() -> None:
    """The rewrite rule of each lineage step is saved (binary version 4, JSON version 3): after a
    round trip ``history()`` shows the same rule column, the records answer ``rule_of`` alike,
    the nodes are the very ones constructed, and saving again gives identical bytes and text."""
    from pyir.serialize.binary import RULES_FORMAT_VERSION
    from pyir.serialize.json_format import JSON_RULES_VERSION

    m, e = _ruled_module()
    want = [(s.pass_name, s.before, s.after, s.rule) for s in m.history(e)]
    assert any(r == "x + 0" for *_, r in want)
    data, text = dumps(m), to_json(m)
    assert int.from_bytes(data[4:6], "little") == RULES_FORMAT_VERSION == 4
    assert json.loads(text)["version"] == JSON_RULES_VERSION == 3
    for back in (loads(data), from_json(text), pickle.loads(pickle.dumps(m))):
        _check_same(m, back)
        assert [(s.pass_name, s.before, s.after, s.rule) for s in back.history(e)] == want
        assert repr(back.history(e)) == repr(m.history(e))
        for a, b in zip(m.pass_records, back.pass_records):
            assert (b.rule_names, b.rules(), b.rule_table()) == (a.rule_names, a.rules(), a.rule_table())
        assert dumps(back) == data and to_json(back) == text
    # several names, an id made twice (the last firing wins, the table keeps both), on a
    # symbolic module: version 4 holds dimension nodes too
    from pyir.ir.lineage import RuleLog

    y = pyir.var("y", shape=("n", 2))
    sm = Module.from_expr(op.nn.relu(y))
    b = sm["main"].body
    log = RuleLog()
    for name, i in (("r1", b.id), ("r✓", y.id), ("r1", y.id)):
        log.add(name, i)
    sm = _with_record(sm, PassRecord("P", "", ((b.id, (y.id,)),), (), None, 0.0, log))
    for back in (loads(dumps(sm)), from_json(to_json(sm))):
        (r,) = back.pass_records
        assert r.rule_names == ("r1", "r✓") and r.rule_of(y.id) == "r1" and r.rule_of(b.id) == "r1"
        assert list(r.rule_table()[2]) == [0, 1, 0] and dumps(back) == dumps(sm)


# a module without rule names, saved before rule names were stored (xxh3-128 of the bytes and
# of the JSON text): static (version 2) and symbolic (version 3); they must not change
_NO_RULES_DIGESTS = [("a56a7739d239d8eab273bc58bbd2fc9e", "6724f64235c3322ab60c9beefb0f4b75"),
                     ("5f6e5adab11720e0e15daa4cc4f3da9d", "397b740a51606143143fcfd224fa8ebd")]


def test_files_without_rule_names_keep_their_bytes() -> None:
    """A history without rule names writes what it wrote before they were stored (the version,
    the bytes and the JSON text), so the files of older pyir versions stay as they were."""
    from xxhash import xxh3_128_hexdigest

    x = Var("x", TensorType((2, "n"), "float32"), bytes(range(16)))
    y = Var("y", TensorType((2, 3), "float32"), bytes(range(1, 17)))
    mods = [Module({"main": Function([y], op.nn.relu(op.add(y, const(1.0))))}),
            Module({"main": Function([x, y], op.nn.relu(op.add(y, const(1.0))))})]
    for mod, (bin_digest, json_digest), version in zip(mods, _NO_RULES_DIGESTS, (2, 3)):
        b = mod["main"].body
        rec = PassRecord("P", "o=1", ((b.id, (b.args[0].id,)),), frozenset({b.args[0].id}),
                         {b.id: ["Relu_0"]}, 0.25)
        mod = _with_record(mod, rec)
        data, text = dumps(mod), to_json(mod)
        assert int.from_bytes(data[4:6], "little") == version and json.loads(text)["version"] == version - 1
        assert '"rules"' not in text
        assert (xxh3_128_hexdigest(data), xxh3_128_hexdigest(text.encode())) == (bin_digest, json_digest)


def test_rule_tables_refused_when_inconsistent() -> None:
    """A version-4 payload without rule names, rule names under another version, and rule tables
    that are not what a pass builds (a name twice, names out of first-firing order, a name never
    used, an index or offset out of range, truncated) raise SerializationError; JSON likewise."""
    m, _ = _ruled_module()
    data = dumps(m)
    plain = dumps(InferType()(Module.from_expr(op.nn.relu(pyir.var("x", shape=(2,))))))
    cols = _sections(data)
    nnames = cols.ints[-4]
    start = len(cols.ints) - 3 - nnames
    assert cols.ints[start:start + 2] == [1, 1]  # one firing of one rule

    def setattr_(k, v):
        return lambda c: setattr(c, k, v)

    def ints_at(i, v):
        def fn(c):
            c.ints[i] = v
        return fn

    def add_name(c):  # two names for one firing: the second is never used
        c.ints[start + 1:start + 3] = [2, c.ints[start + 2], c.ints[start + 2]]

    def index(v):
        def fn(c):
            off = c.ints[-1]
            c.blob = c.blob[:off + 16] + v.to_bytes(2, "little") + c.blob[off + 18:]
        return fn

    cases = [(setattr_("version", 2), "unread integers"), (setattr_("version", 3), "without symbolic"),
             (ints_at(start, 0), "without rule names"), (ints_at(start, 10**9), "bad rule table"),
             (ints_at(start, 7), "out of range"),
             (ints_at(-1, 10**6), "out of range"), (ints_at(-2, 10**6), "string reference"),
             (add_name, "bad rule table|never fired|twice"), (index(1), "out of order or out of range"),
             (lambda c: c.ints.__delitem__(slice(start + 1, None)), "truncated|bad rule table")]
    for fn, msg in cases:
        with pytest.raises(SerializationError, match=msg):
            loads(_reassembled(data, fn))
    with pytest.raises(SerializationError, match="truncated rule table"):
        loads(_reassembled(plain, setattr_("version", 4)))
    with pytest.raises(SerializationError, match="version 4 without rule names"):
        no_history = dumps(Module.from_expr(op.nn.relu(pyir.var("x", shape=(2,)))))
        loads(_reassembled(no_history, setattr_("version", 4)))
    # the RuleLog's own checks (what the loaders build through)
    from pyir.ir.lineage import RuleLog

    i = bytes(16)
    for names, ids, idx, msg in ((["a", "a"], i * 2, [0, 1], "twice"), (["a", "b"], i * 2, [1, 0], "order"),
                                 (["a", "b"], i, [0], "never fired"), (["a"], i, [], "do not match"),
                                 (["\ud800"], i, [0], "surrogate")):
        with pytest.raises(LineageError, match=msg):
            RuleLog.from_table(names, ids, idx)
    text = to_json(m)
    doc = json.loads(text)
    (ruled,) = [r for r in doc["history"] if "rules" in r]
    bad_docs = {"version 3 without rule names": lambda d: [r.pop("rules", None) for r in d["history"]],
                "with rule names": lambda d: d.__setitem__("version", 1),
                "name at least one firing": lambda d: ruled.__setitem__("rules", []),
                "must be a list": lambda d: ruled.__setitem__("rules", None),
                "pairs": lambda d: ruled["rules"].append([ruled["rules"][0][0]]),
                "rule name must be a string": lambda d: ruled["rules"].append([ruled["rules"][0][0], 3])}
    for msg, fn in bad_docs.items():
        d = json.loads(text)
        (ruled,) = [r for r in d["history"] if "rules" in r]
        fn(d)
        with pytest.raises(SerializationError, match=msg):
            from_json(json.dumps(d))
