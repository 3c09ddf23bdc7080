"""Symbolic shapes in the file formats (issue 12 item 6): text, binary and JSON round trips,
the version rule (static payloads unchanged), loaded-is-constructed for dimension records,
hypothesis over random dimension expressions, pickle, and a 10**4-deep chain."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyir
from pyir import op
from pyir.errors import SerializationError, WellFormedError
from pyir.ir.dims import (
    Any,
    DimFloorDiv,
    DimMod,
    DimPoly,
    Sym,
    dim_add,
    dim_floordiv,
    dim_mod,
    dim_mul,
    dim_sub,
    sym,
)
from pyir.serialize.binary import (
    _HEADER,
    DIM_KIND_NAMES,
    FORMAT_VERSION,
    K_DIMPOLY,
    K_FLOORDIV,
    K_SYM,
    K_TENSOR_T,
    SYMBOLIC_FORMAT_VERSION,
    _assemble,
    _format_table,
    _sections,
)
from pyir.serialize.json_format import JSON_SYMBOLIC_VERSION, JSON_VERSION

n, m = sym("n"), sym("m")
BATCH = sym("batch")
WIDE = sym("批")  # non-ASCII: quoted in the text
INF = sym("inf")  # lexes as a number: quoted in the text


def _symbolic_module() -> pyir.Module:
    """Inputs sharing ``batch``, Any, expressions with // and %, products of atoms, non-ASCII and
    ``inf`` names, a typed helper, a type in a call's attributes."""
    t1 = pyir.TensorType((BATCH, n * 3 + 1, Any), "float32")
    t2 = pyir.TensorType((BATCH, (n + 1) // 2 * WIDE, n % 4, INF, 7), "float32")
    x, y = pyir.Var("x", t1), pyir.Var("y", t2)
    hx = pyir.Var("hx", t2)
    helper = pyir.Function([hx], op.tanh(hx), t2)
    call = pyir.Call(pyir.GlobalVar("helper"), [y], {"t": t1, "note": "sym"})
    main = pyir.Function([x, y], pyir.Tuple([op.nn.relu(x), op.add(x, x), call]))
    return pyir.Module({"main": main, "helper": helper})


def _dims_of(obj) -> list:
    roots = [obj[k] for k in obj.names()] if isinstance(obj, pyir.Module) else [obj]
    return [d for d in _format_table(roots) if isinstance(d, pyir.Dim)]


# -- round trips --------------------------------------------------------------------------------------


def test_binary_and_json_round_trips_give_the_same_objects():
    """Loading is re-interning: the same function objects, the same dimension objects; saving the
    loaded module again gives the same bytes and text."""
    mod = _symbolic_module()
    data = pyir.dumps(mod)
    back = pyir.loads(data)
    assert back["main"] is mod["main"] and back["helper"] is mod["helper"]
    assert pyir.dumps(back) == data
    text = pyir.to_json(mod)
    jback = pyir.from_json(text)
    assert jback["main"] is mod["main"] and pyir.to_json(jback) == text and pyir.dumps(jback) == data
    assert {type(d).__name__ for d in _dims_of(mod)} == {"Sym", "AnyDim", "DimPoly", "DimFloorDiv", "DimMod"}
    for d in (BATCH, n * 3 + 1, Any, (n + 1) // 2 * WIDE, n % 4, INF):  # dims and nodes on their own
        assert pyir.loads(pyir.dumps(d)) is d and pyir.from_json(pyir.to_json(d)) is d
        t = pyir.TensorType((d, 2))
        assert pyir.loads(pyir.dumps(t)) is t and pyir.from_json(pyir.to_json(t)) is t


def test_text_round_trip():
    """The printed text parses back into an alpha-equal module whose types are the same objects
    (symbols are identified by name); the text of the parsed module is the same text."""
    mod = _symbolic_module()
    text = mod.astext()
    assert '"批"' in text and '"inf"' in text and "floordiv(n + 1, 2)" in text and "floormod(n, 4)" in text
    back = pyir.parse(text)
    assert back.astext() == text
    assert pyir.alpha_equal(back, mod)
    assert [p.type_annotation for p in back["main"].params] == [p.type_annotation for p in mod["main"].params]


def test_records_are_readable_in_json():
    """Dimension records in the JSON: names as they are, expressions as terms over earlier nodes,
    TensorType shapes holding ints and ["ref", index]."""
    doc = json.loads(pyir.to_json(pyir.TensorType((BATCH, n * 3 + 1, Any, 5))))
    assert doc["version"] == JSON_SYMBOLIC_VERSION
    assert doc["nodes"] == [["Sym", "batch"], ["Sym", "n"], ["DimPoly", 1, [[[1], 3]]], ["AnyDim"],
                            ["TensorType", "float32", [["ref", 0], ["ref", 2], ["ref", 3], 5]]]
    doc = json.loads(pyir.to_json(pyir.TensorType(((n + 1) // 2, n % 4 * WIDE))))
    assert doc["nodes"][:4] == [["Sym", "n"], ["DimPoly", 1, [[[0], 1]]], ["DimFloorDiv", 1, 2],
                                ["Sym", "批"]]


def test_dimensions_in_attributes_round_trip():
    """A dimension (or a tuple of them) as an attribute value is a node reference of the table."""
    x = pyir.var("x", shape=(BATCH, 3))
    call = pyir.Call(pyir.GlobalVar("g"), [x], {"d": n * 2, "k": (n % 3, 1, Any)})
    e = pyir.Function([x], call)
    assert pyir.loads(pyir.dumps(e)) is e and pyir.from_json(pyir.to_json(e)) is e
    assert pyir.dumps(pyir.loads(pyir.dumps(e))) == pyir.dumps(e)


def test_pickle_of_symbolic_nodes_and_modules():
    mod = _symbolic_module()
    assert pickle.loads(pickle.dumps(mod))["main"] is mod["main"]
    assert pickle.loads(pickle.dumps(mod["main"].params[1])) is mod["main"].params[1]
    assert pickle.loads(pickle.dumps((n + 1) // 2 * WIDE)) is (n + 1) // 2 * WIDE


# -- versions: static content unchanged, symbolic content only in the new versions -------------------

# The static module of _static_module() as the version-2 writer of main (before symbolic shapes)
# saved it, and as its JSON: static programs keep their bytes.
_STATIC_V2 = bytes.fromhex(
    "50594952020001000c02000000000000c47fab30994cb1659dbf043bd37e37c40a0000000000000068010000000000"
    "003000000000000000170000000000000017000000000000000c000000000000000a00030d030204040d0702000000"
    "000000000200000000000000030000000000000001000000000000000400000000000000030000000000000002000000"
    "000000000000000000000000030000000000000001000000000000000300000000000000040000000000000001000000"
    "000000000000000000000000000000000000000002000000000000000000000000000000030000000000000000000000"
    "000000000100000000000000030000000000000000000000000000000c00000000000000010000000000000001000000"
    "000000000500000000000000000000000000000006000000000000000100000000000000040000000000000007000000"
    "000000000200000000000000030000000000000001000000000000000500000000000000000000000000044001000000"
    "0000000001000000000000000700000000000000ffffffffffffffff080000000000000001000000000000000500000000"
    "00000009000000000000000000000000000000070000000000000001000000000000000700000000000000030000000000"
    "000001000000000000000400000000000000666c6f61743332786e6e2e72656c756164646b6d61696e00010203040506"
    "0708090a0b0c0d0e0f00000000000000000000000000803f00000040")
_STATIC_JSON = (
    '{"format": "pyir", "version": 1, "functions": {"main": 9}, "history": [], "nodes": [["TensorType", '
    '"float32", [1, 3, 4]], ["Var", "x", "000102030405060708090a0b0c0d0e0f", 0], ["Op", "nn.relu"], '
    '["Attrs", []], ["Op", "add"], ["Constant", "float32", [3], "AAAAAAAAgD8AAABA"], ["Call", 4, 3, [1, 5]], '
    '["Call", 2, 3, [6]], ["Attrs", [["k", ["tuple", [["int", 1], ["float", 2.5]]]]]], '
    '["Function", [1], 7, null, 8]]}')


def _static_module() -> pyir.Module:
    x = pyir.Var("x", pyir.TensorType((1, 3, 4), "float32"), bytes(range(16)))
    w = pyir.const(np.arange(3, dtype="float32"))
    return pyir.Module({"main": pyir.Function([x], op.nn.relu(op.add(x, w)), None, {"k": (1, 2.5)})})


def test_static_programs_keep_their_bytes_and_version():
    """A static program saves exactly as before (binary version 2, JSON version 1); a symbolic one
    is binary version 3 and JSON version 2."""
    mod = _static_module()
    assert pyir.dumps(mod) == _STATIC_V2 and pyir.to_json(mod) == _STATIC_JSON
    assert pyir.loads(_STATIC_V2)["main"] is mod["main"]
    assert pyir.from_json(_STATIC_JSON)["main"] is mod["main"]
    assert _HEADER.unpack_from(pyir.dumps(_symbolic_module()))[1] == SYMBOLIC_FORMAT_VERSION == 3
    assert FORMAT_VERSION == 2 and (JSON_VERSION, JSON_SYMBOLIC_VERSION) == (1, 2)
    assert json.loads(pyir.to_json(_symbolic_module()))["version"] == 2


def _with_version(data: bytes, version: int) -> bytes:
    cols = _sections(data)
    cols.version = version
    return _assemble(cols)


def test_version_must_match_the_content():
    """A version-2 payload holding dimension nodes, or a version-3 one holding none, is refused (so
    every payload that loads saves again identically); likewise for JSON."""
    with pytest.raises(SerializationError, match="need version 3"):
        pyir.loads(_with_version(pyir.dumps(_symbolic_module()), 2))
    with pytest.raises(SerializationError, match="without symbolic dimension nodes"):
        pyir.loads(_with_version(_STATIC_V2, 3))
    with pytest.raises(SerializationError, match="version 4 without rule names"):
        pyir.loads(_with_version(_STATIC_V2, 4))  # version 4 is for histories with rule names
    with pytest.raises(SerializationError, match="unsupported format version 5"):
        pyir.loads(_with_version(_STATIC_V2, 5))
    doc = json.loads(pyir.to_json(_symbolic_module()))
    doc["version"] = 1
    with pytest.raises(SerializationError, match="need version 2"):
        pyir.from_json(json.dumps(doc))
    doc = json.loads(_STATIC_JSON)
    doc["version"] = 2
    with pytest.raises(SerializationError, match="without symbolic dimension nodes"):
        pyir.from_json(json.dumps(doc))
    doc["version"] = True
    with pytest.raises(SerializationError, match="unsupported format version"):
        pyir.from_json(json.dumps(doc))


# -- loaded is constructed: non-canonical or ill-typed dimension records are refused --------------------


def _record_start(cols, index: int) -> int:
    """Where node ``index``'s record starts in ``cols.ints`` (dims and TensorTypes only before it)."""
    p = 1 + 3 * cols.ints[0]
    for k in cols.kinds[:index]:
        if k == K_SYM:
            p += 1
        elif k == K_DIMPOLY:
            nt = cols.ints[p + 1]
            p += 2
            for _ in range(nt):
                p += 2 + cols.ints[p]
        elif k in DIM_KIND_NAMES and DIM_KIND_NAMES[k] in ("DimFloorDiv", "DimMod"):
            p += 2
        elif k == K_TENSOR_T:
            p += 2 + cols.ints[p + 1]
        elif DIM_KIND_NAMES.get(k) != "AnyDim":
            raise AssertionError(f"kind {k} not expected here")
    return p


def _payload(obj, edit) -> bytes:
    cols = _sections(pyir.dumps(obj))
    edit(cols)
    return _assemble(cols)


def test_non_canonical_dimension_records_are_refused():
    """Each record must be the canonical form of what its constructor builds: terms out of order,
    a zero coefficient, a one-atom polynomial, an Any factor, a reducible division, a divisor
    below 2 -- all SerializationError, never a different node."""
    poly = n * m * 2 + n * 3 + 1  # n*m first (higher degree), then n
    t = pyir.TensorType((poly,))
    cols = _sections(pyir.dumps(t))
    ip = list(cols.kinds).index(K_DIMPOLY)
    p = _record_start(cols, ip)
    rec = cols.ints[p:p + 2 + 4 + 3]
    assert rec[:2] == [1, 2] and rec[2] == 2 and rec[5] == 2 and rec[6:] == [1, rec[7], 3]

    def poly_edit(new):
        def edit(c):
            c.ints[p:p + len(rec)] = new
        return edit

    jn = rec[7]
    bad = {
        "terms out of order": [1, 2, 1, jn, 3, *rec[2:6]],
        "zero coefficient": [1, 2, *rec[2:5], 0, 1, jn, 3],
        "a one-atom polynomial": [0, 1, 1, jn, 1],
        "a constant": [5, 1, 1, jn, 0],
    }
    for what, new in bad.items():
        with pytest.raises(SerializationError, match=r"is not canonical \(it builds"):
            pyir.loads(_payload(t, poly_edit(new)))
    # a reducible division: n * 2 // 2 is n; a divisor of 1 or 0
    fd = pyir.TensorType(((n * 2 + 1) // 4,))
    cols = _sections(pyir.dumps(fd))
    i = list(cols.kinds).index(K_FLOORDIV)
    q = _record_start(cols, i)
    for div in (1, 0, -3, 2):  # (2n + 1) // 2 is n: not the record's form
        def edit(c, div=div):
            c.ints[q + 1] = div
        with pytest.raises(SerializationError):
            pyir.loads(_payload(fd, edit))
    # a TensorType dimension that refers to a non-dimension node, or forward
    tt = pyir.TupleType([pyir.TensorType((3,)), pyir.TensorType((n,))])
    cols = _sections(pyir.dumps(tt))
    it = [j for j, k in enumerate(cols.kinds) if k == K_TENSOR_T][-1]
    r = _record_start(cols, it)
    for ref in (-1 - list(cols.kinds).index(K_TENSOR_T), -1 - it, -(2**63)):
        def edit(c, ref=ref):
            c.ints[r + 2] = ref
        with pytest.raises(SerializationError, match="dimension"):
            pyir.loads(_payload(tt, edit))
    # a bad symbol name
    def rename(c):
        c.strs[c.strs.index("n")] = "1n"
    with pytest.raises(SerializationError, match="identifier"):
        pyir.loads(_payload(tt, rename))


def test_non_canonical_json_dimension_records_are_refused():
    base = json.loads(pyir.to_json(pyir.TensorType((n * m * 2 + n * 3 + 1, (n + 1) // 2))))
    nodes = base["nodes"]
    ip = next(i for i, r in enumerate(nodes) if r[0] == "DimPoly" and len(r[2]) == 2)
    jf = next(i for i, r in enumerate(nodes) if r[0] == "DimFloorDiv")
    edits = [
        (ip, lambda r: [r[0], r[1], list(reversed(r[2]))]),  # terms out of order
        (ip, lambda r: [r[0], r[1], [[r[2][0][0], 0], r[2][1]]]),  # zero coefficient
        (ip, lambda r: [r[0], r[1], [[[*r[2][0][0], ip], 2], r[2][1]]]),  # a forward / self factor
        (ip, lambda r: [r[0], 1.5, r[2]]),  # a float constant
        (jf, lambda r: [r[0], r[1], 1]),  # divisor 1
        (jf, lambda r: [r[0], r[1], True]),  # a bool divisor
        (jf, lambda r: [r[0], r[1]]),  # missing field
        (jf, lambda r: ["Sym", "1x"]),  # not an identifier
        (len(nodes) - 1, lambda r: [r[0], r[1], [["ref", 0, 1]]]),  # a malformed reference
        (len(nodes) - 1, lambda r: [r[0], r[1], [["ref", -1]]]),
        (len(nodes) - 1, lambda r: [r[0], r[1], [["ref", len(nodes) - 1]]]),  # itself
    ]
    for i, f in edits:
        doc = json.loads(json.dumps(base))
        doc["nodes"][i] = f(doc["nodes"][i])
        with pytest.raises(SerializationError):
            pyir.from_json(json.dumps(doc))


# -- hypothesis: random dimension expressions through all three formats -------------------------------

_ATOMS = [n, m, BATCH, WIDE, INF]


@st.composite
def dims(draw):
    """A random dimension built with pyir.ir.dims operations (the canonical result of each)."""
    pool: list = list(draw(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=3)))
    for _ in range(draw(st.integers(0, 8))):
        a = draw(st.sampled_from(pool))
        b = draw(st.one_of(st.sampled_from(pool), st.integers(0, 9)))
        how = draw(st.sampled_from(["+", "-", "*", "//", "%", "any"]))
        try:
            if how == "+":
                r = dim_add(a, b)
            elif how == "-":
                r = dim_sub(a, b)
            elif how == "*":
                r = dim_mul(a, b)
            elif how == "//":
                r = dim_floordiv(a, b if isinstance(b, int) and b else draw(st.integers(2, 6)))
            elif how == "%":
                r = dim_mod(a, b if isinstance(b, int) and b else draw(st.integers(2, 6)))
            else:
                r = Any if draw(st.integers(0, 5)) == 0 else a
        except WellFormedError:
            continue  # e.g. a provably negative difference
        pool.append(r)
    return draw(st.sampled_from(pool))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dims(), min_size=1, max_size=4), st.sampled_from(["float32", "int64"]))
def test_random_dimensions_round_trip_through_every_format(shape, dtype):
    """Random shapes of random dimension expressions: the binary and JSON loads give the very same
    type and save again identically; the text prints and parses back the same type."""
    t = pyir.TensorType(shape, dtype)
    data = pyir.dumps(t)
    assert pyir.loads(data) is t and pyir.dumps(pyir.loads(data)) == data
    text = pyir.to_json(t)
    assert pyir.from_json(text) is t
    x = pyir.Var("x", t)
    mod = pyir.Module({"main": pyir.Function([x], op.nn.relu(x))})
    back = pyir.loads(pyir.dumps(mod))
    assert back["main"] is mod["main"]
    parsed = pyir.parse(mod.astext())
    assert parsed["main"].params[0].type_annotation is t
    for d in shape:
        if isinstance(d, pyir.Dim):
            assert pyir.loads(pyir.dumps(d)) is d and pyir.from_json(pyir.to_json(d)) is d


def test_every_dimension_kind_is_stored():
    """Each dims kind has its record; the records rebuild through the public constructors."""
    for d in (n, Any, n * 2 + m, (n + 3) // 4, n % 3):
        for node in _dims_of(pyir.TensorType((d,))):
            t = type(node)
            again = (Sym(node.name) if t is Sym else node if node is Any else
                     DimPoly(node.const, node.terms) if t is DimPoly else
                     (DimFloorDiv if t is DimFloorDiv else DimMod)(node.arg, node.divisor))
            assert again is node


# -- the deep case ------------------------------------------------------------------------------------


def _deep_symbolic_chain(depth: int) -> pyir.Module:
    x = pyir.var("x", shape=(BATCH, 4))
    one = pyir.const(np.ones((4,), "float32"))
    h: pyir.Expr = x
    ops = (lambda a: op.add(a, one), op.nn.relu, op.tanh, lambda a: op.subtract(a, x))
    for i in range(depth):
        h = ops[i % 4](h)
    return pyir.Module({"main": pyir.Function([x], h)})


def test_symbolic_chain_round_trips():
    mod = _deep_symbolic_chain(1000)
    data = pyir.dumps(mod)
    assert pyir.loads(data)["main"] is mod["main"] and pyir.dumps(pyir.loads(data)) == data
    assert pyir.from_json(pyir.to_json(mod))["main"] is mod["main"]


def test_long_chain_with_a_symbolic_batch_dimension():
    """A 10**4-deep chain (over three times the recursion limit) whose input is typed (batch, 4)
    dumps, loads (binary, JSON) and pickles.  The 10**6-deep runs of the three formats are the
    static chain's (test_serialize.py): a symbolic shape is a TensorType's dimension nodes in the
    same node table and the same loops, so a 10**6 run here repeated those walks."""
    mod = _deep_symbolic_chain(10**4)
    data = pyir.dumps(mod)
    assert _HEADER.unpack_from(data)[1] == SYMBOLIC_FORMAT_VERSION
    assert pyir.loads(data)["main"] is mod["main"]
    assert pyir.from_json(pyir.to_json(mod))["main"] is mod["main"]
    assert pickle.loads(pickle.dumps(mod["main"].body)) is mod["main"].body


# -- display, pictures, reports ---------------------------------------------------------------------


def test_html_shows_symbolic_types():
    mod = pyir.transform.InferType()(_symbolic_module())
    h = mod._repr_html_()
    assert "Tensor[(batch, n * 3 + 1, ?), float32]" in h  # the types, highlighted as types
    assert "&quot;批&quot; * floordiv(n + 1, 2)" in h and "&quot;inf&quot;" in h  # escaped
    assert h.count('<span class="ty"') >= 3
    assert "floormod(n, 4)" in mod["main"]._repr_html_()


def test_dot_shows_symbolic_types():
    dot = pyir.viz.to_dot(_symbolic_module())
    assert 'label="%x\\nTensor[(batch, n * 3 + 1, ?), float32]"' in dot
    assert '\\"批\\"' in dot and '\\"inf\\"' in dot  # quoted names, escaped for DOT
    big = pyir.var("big", shape=(sum((sym(f"s{i}") * (i + 2) for i in range(40)), start=n),))
    line = next(ln for ln in pyir.viz.to_dot(op.nn.relu(big)).splitlines() if "%big" in ln)
    label = line[:line.index('", shape=')]
    assert "..." in label and len(label) < 120  # a long symbolic shape is cut in the label
    assert "..." in line and len(line) < 500  # and in the tooltip


def test_pass_report_and_diff_html_of_symbolic_modules():
    from pyir.report import ReportInstrument
    from pyir.transform.base import PassContext

    rep = ReportInstrument()
    x = pyir.var("x", shape=(BATCH, 4))
    mod = pyir.Module.from_expr(op.nn.relu(op.nn.relu(x)))
    with PassContext(instruments=[rep]):
        out = pyir.transform.Sequential([pyir.transform.InferType(), pyir.transform.FuseOps()])(mod)
    assert [r.name for r in rep.rows] == ["InferType", "FuseOps"] and "FuseOps" in rep._repr_html_()
    y = pyir.var("x", shape=(n, 4))
    d = pyir.diff(mod, pyir.Module.from_expr(op.nn.relu(op.nn.relu(y))))
    assert "%x: dimension 0: batch -> n" in d.summary()
    assert "%x: dimension 0: batch -&gt; n" in d._repr_html_()
    assert "Tensor[(batch, 4), float32]" in out._repr_html_()
