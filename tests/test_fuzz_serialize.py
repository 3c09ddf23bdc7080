"""Structure-aware fuzzing of the binary and JSON loaders (issue 10, items 1-3, 12, 13).

Valid payloads of a few seed modules are decoded into their sections (binary) or
parsed (JSON), mutated where the decoder looks (ints, strings, kinds, lengths,
bytes; JSON values, ids, entries), and re-assembled with the checksum recomputed,
so mutations reach the decoder.  The oracle: every payload either raises
SerializationError or loads into objects that are canonical
(:func:`pyir.testing.assert_canonical`), well-formed, re-serializable stably, and
that type-check or fail with pyir errors only.  Budget: see ``tests/_fuzz.py``.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from _fuzz import FUZZ_EXAMPLES, fuzz_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from xxhash import xxh3_128_digest

import pyir
from pyir import op
from pyir.errors import SerializationError
from pyir.ir.dims import Any, AnyDim, DimFloorDiv, DimMod, DimPoly, Sym, dim_floordiv, dim_mod, sym
from pyir.serialize.binary import _HEADER, DIM_KIND_NAMES, _assemble, _format_table, _sections
from pyir.testing import _rebuild, assert_canonical

# -- assert_canonical -------------------------------------------------------------------------------


def test_assert_canonical_accepts_built_modules():
    """issue 10 item 1: the oracle accepts whatever the constructors built."""
    assert_canonical(pyir.testing.resnet(1))
    assert_canonical(pyir.testing.transformer_block())
    assert_canonical(op.nn.relu(pyir.var("x", shape=(2,))))
    assert_canonical(pyir.testing.elementwise_chain(10**5))  # iterative: any depth


def test_assert_canonical_rejects_a_non_normalized_call():
    """issue 10 item 1: a Call whose attributes skipped the op schema is reported."""
    x = pyir.var("x", shape=(1, 2, 4, 4))
    w = pyir.const(np.ones((2, 2, 3, 3), "float32"))
    bad = pyir.Call(pyir.Op("nn.conv2d"), (x, w),
                    op.nn.conv2d(x, w).attrs.with_(padding=(1, 1)), _checked=True)
    with pytest.raises(AssertionError, match="not canonical"):
        assert_canonical(pyir.Module({"main": pyir.Function([x], op.nn.relu(bad))}))
    with pytest.raises(AssertionError):
        assert_canonical("not a node")


# -- seeds --------------------------------------------------------------------------------------------


def _kinds_seed() -> pyir.Module:
    """Lets, ifs, tuples, a global call, functions with attributes, every attribute value kind."""
    t = pyir.TensorType((1, 2, 4, 4), "float32")
    x = pyir.Var("x", t)
    hx = pyir.Var("hx", t)
    helper = pyir.Function([hx], op.nn.relu(hx), t, {"Primitive": 1, "name": "helper"})
    w = pyir.const(np.linspace(-1, 1, 36, dtype="float32").reshape(2, 2, 3, 3))
    conv = op.nn.conv2d(x, w, padding=(1, 1), strides=(1, 1))
    pool = op.nn.max_pool2d(conv, pool_size=(3, 3), padding=(1, 1))
    v = pyir.Var("v")
    flags = {"none": None, "b": True, "i": -3, "f": 0.5, "nan": float("nan"), "big": 10**20, "s": "héllo",
             "nested": (1, (2.0, ("a", None))), "type": t, "ref": pyir.const(np.array([True, False]))}
    call_g = pyir.Call(pyir.GlobalVar("helper"), [pool], flags)
    tup = pyir.Tuple([call_g, x, pyir.const(np.arange(3, dtype="int64")), pyir.const(np.float16(1.5))])
    body = pyir.Let(v, pyir.TupleGetItem(tup, 0),
                    pyir.If(op.greater(op.sum(v), pyir.const(0.0)), op.add(v, x), op.nn.softmax(v, axis=1)))
    main = pyir.Function([x], pyir.Tuple([body, op.nn.batch_flatten(op.nn.global_avg_pool2d(pool))]),
                         None, {"Compiler": "fuzz", "k": (1, 1.0, True)})
    return pyir.Module({"main": main, "helper": helper})


def _history_seed() -> pyir.Module:
    """A small ResNet after two passes, plus a frontend-like record with sources."""
    from pyir.ir.lineage import PassRecord

    mod = pyir.testing.resnet(1, channels=2, size=4)
    mod = pyir.transform.SimplifyInference()(pyir.transform.FoldConstant()(mod))
    main = mod["main"]
    rec = PassRecord("Frontend", "opset=13", ((main.body.id, (main.params[0].id,)),),
                     frozenset({main.params[0].id}), {main.body.id: ["Softmax_0", "Softmax"],
                                                      main.params[0].id: {"k": [1, 2.5, None, True]}}, 0.125)
    return mod._derive(mod.functions(), history=mod.pass_records.append(rec))


def _symbolic_seed() -> pyir.Module:
    """Symbolic shapes (issue 12): every dimension kind, shared symbols, non-ASCII names, a
    symbolic type in an attribute, a typed helper with a symbolic return type.  (No dimension
    directly in an attribute: pyir.testing.assert_canonical does not rebuild dims kinds yet.)"""
    n, b = sym("n"), sym("批")
    t1 = pyir.TensorType(("batch", n * 3 + 1, Any), "float32")
    t2 = pyir.TensorType(("batch", (n + 1) // 2 * b, n % 4, n * n - n + 2), "float16")
    x, y, hy = pyir.Var("x", t1), pyir.Var("y", t2), pyir.Var("hy", t2)
    helper = pyir.Function([hy], op.tanh(hy), t2)
    call = pyir.Call(pyir.GlobalVar("helper"), [y], {"t": t1, "k": (t2, 1)})
    main = pyir.Function([x, y], pyir.Tuple([op.nn.relu(x), op.add(x, x), call]))
    return pyir.Module({"main": main, "helper": helper})


def _rules_seed() -> pyir.Module:
    """Rule names in the history (binary version 4, JSON version 3), on a symbolic module:
    SimplifyExpr's own record, and one naming two rules (non-ASCII) where one id is made twice
    (the last firing wins) and a record without rules between them."""
    from pyir.ir.lineage import PassRecord, RuleLog

    x = pyir.var("x", shape=("batch", 3))
    m = pyir.transform.SimplifyExpr()(pyir.Module.from_expr(op.exp(op.add(op.nn.relu(x), pyir.const(0.0)))))
    a, b = m["main"].body.id, m["main"].body.args[0].id
    log = RuleLog()
    for name, i in (("x * 1", a), ("fold ✓", b), ("x * 1", b)):
        log.add(name, i)
    recs = [PassRecord("Plain", "", ((a, (b,)),), (), None, 0.0),
            PassRecord("Rules", "k=1", ((a, (b,)), (b, (a, b))), (), None, 0.5, log)]
    return m._derive(m.functions(), history=m.pass_records.extend(recs))


SEEDS = [_kinds_seed(), _history_seed(), op.nn.conv2d(pyir.var("d", shape=(1, 1, 3, 3)),
                                                      pyir.const(np.ones((1, 1, 1, 1), "float32"))),
         _symbolic_seed()]
RULES_SEED = _rules_seed()  # fuzzed where its rule tables are (test_fuzz_rule_tables, ..._json_...)
PAYLOADS = [pyir.dumps(s) for s in [*SEEDS, RULES_SEED]]  # the last one: RULES_SEED's
DOCS = [pyir.to_json(s) for s in [*SEEDS, RULES_SEED]]


def test_seeds_are_canonical_and_round_trip():
    """issue 10 item 1: the seeds themselves satisfy the oracle."""
    for seed, payload, doc in zip([*SEEDS, RULES_SEED], PAYLOADS, DOCS):
        _check_loaded(pyir.loads(payload))
        _check_loaded(pyir.from_json(doc))
        assert pyir.dumps(pyir.loads(payload)) == payload and pyir.to_json(pyir.from_json(doc)) == doc


# -- the oracle -----------------------------------------------------------------------------------------


def _assert_dims_canonical(obj) -> None:
    """Every dimension node the formats store for ``obj`` is what its constructor builds."""
    roots = [obj[k] for k in obj.names()] if isinstance(obj, pyir.Module) else [obj]
    for d in _format_table(roots):
        t = type(d)
        if t is Sym:
            again = Sym(d.name)
        elif t is AnyDim:
            again = AnyDim()
        elif t is DimPoly:
            again = DimPoly(d.const, d.terms)
        elif t in (DimFloorDiv, DimMod):
            again = (dim_floordiv if t is DimFloorDiv else dim_mod)(d.arg, d.divisor)
        else:
            continue
        assert again is d, f"{d!r} is not canonical: its constructor builds {again!r}"


_DIM_KIND_MESSAGE = re.compile(r"is a (Sym|AnyDim|DimPoly|DimFloorDiv|DimMod), not one of pyir's node kinds")


def _assert_canonical(obj) -> None:
    """assert_canonical, for payloads with a dimension node where it does not look (an attribute
    value referring to a Sym ...): pyir.testing's rebuild does not know the dims kinds yet, so
    then every node of the table is rebuilt here (dims by their constructors)."""
    try:
        assert_canonical(obj)
    except AssertionError as e:
        if not _DIM_KIND_MESSAGE.search(str(e)):
            raise
        roots = [obj[k] for k in obj.names()] if isinstance(obj, pyir.Module) else [obj]
        for n in _format_table(roots):
            if not isinstance(n, pyir.Dim):
                again = _rebuild(n)
                assert again is n, f"{n!r} is not canonical: its constructor builds {again!r}"
        if isinstance(obj, pyir.Module):
            pyir.Module(dict(obj.items()))
    _assert_dims_canonical(obj)  # (a) for the dimension nodes (symbolic shapes)


def _check_loaded(obj) -> None:
    """Whatever loaded is canonical, well-formed, saves again stably and type-checks (or a pyir error)."""
    assert isinstance(obj, (pyir.Module, pyir.ir.node.Node)), type(obj)
    _assert_canonical(obj)  # (a) canonical nodes; (b) the Module / PassRecord constructors accept it
    data = pyir.dumps(obj)  # (c) re-serializable, stably, in both formats
    again = pyir.loads(data)
    assert pyir.dumps(again) == data
    text = pyir.to_json(obj)
    back = pyir.from_json(text)
    assert pyir.to_json(back) == text and pyir.dumps(back) == data
    if isinstance(obj, pyir.Module):
        assert dict(again.items()) == dict(obj.items()) == dict(back.items())
        assert len(again.pass_records) == len(obj.pass_records)
        rules = [r.rule_table() for r in obj.pass_records]  # rule names travel in both formats
        assert [r.rule_table() for r in again.pass_records] == rules
        assert [r.rule_table() for r in back.pass_records] == rules
        for name in obj.names():  # (d) types: a result or a pyir error
            try:
                obj.global_type(name)
            except pyir.PyIRError:
                pass
    else:
        assert again is obj and back is obj
        if isinstance(obj, pyir.Expr):
            try:
                pyir.infer_type(obj)
            except pyir.PyIRError:
                pass


def _load_or_reject(loader, data) -> None:
    try:
        obj = loader(data)
    except SerializationError:
        return
    _check_loaded(obj)


# -- binary: mutate the decoded sections, re-assemble with the checksum recomputed ------------------------

_INTERESTING_INTS = [0, 1, 2, 3, 4, -1, -2, 16, 64, 65, 255, 2**31, 2**53 + 1, 2**62, 2**63 - 1, -(2**63),
                     0x7FF8000000000000, 0x7FF0000000000000, -0x10000000000000]  # NaN, +inf, -inf bits
_INTERESTING_STRS = ["", "main", "helper", "x", "float32", "float64", "int64", "bool", "float16",
                     "complex64", "object", "float", "f4", "nn.relu", "nn.conv2d", "add", "padding",
                     "strides", "NaN", "[NaN]", "[1e999]", "[[1,2]]", "[{}]", "{}", "[]", "\ud800",
                     "a b", "-5", "99999999999999999999", "--1", "\u0661", "1" * 5000, "from_onnx",
                     "n", "batch", "批", "inf", "nan", "_", "1n", "n m", "Sym", "DimPoly", "AnyDim",
                     "DimFloorDiv", "DimMod", "ref"]


def _pos(data, n: int) -> int:
    """A position in ``range(n)``, uniform (hypothesis' integers favour the ends)."""
    return data.draw(_RANDOM).randrange(n)  # type: ignore[no-any-return]


_RANDOM = st.randoms(use_true_random=False)


def _mutate_columns(data, cols) -> None:
    """One structure-aware mutation of the decoded columns (in place).

    Positions are drawn uniformly (``_pos``), values from hypothesis strategies.
    """
    ints, strs = cols.ints, cols.strs
    what = data.draw(st.sampled_from(["int", "int", "int", "swap", "kind", "str", "insert", "delete",
                                      "blob", "ids", "flags", "kinds_len", "sig", "version"]))
    if what in ("int", "swap", "insert", "delete") and not ints:
        what = "kind"
    if what == "sig":  # a field of a call signature (target, attributes, arity: the head of ints)
        if ints and 0 < ints[0] <= (len(ints) - 1) // 3:
            i = 1 + _pos(data, 3 * ints[0])
            ints[i] = data.draw(st.one_of(st.integers(-2, len(cols.kinds) + 1), st.just(ints[i] + 1),
                                          st.sampled_from(_INTERESTING_INTS)))
        else:
            what = "int" if ints else "kind"
    if what == "int":
        i = _pos(data, len(ints))
        ints[i] = data.draw(st.one_of(
            st.sampled_from(_INTERESTING_INTS), st.just(ints[i] + 1), st.just(ints[i] - 1),
            st.integers(-4, len(ints) + 4), st.integers(-(2**63), 2**63 - 1)))
    elif what == "swap":
        i, j = _pos(data, len(ints)), _pos(data, len(ints))
        ints[i], ints[j] = ints[j], ints[i]
    elif what == "kind":
        kinds = bytearray(cols.kinds)
        if kinds:
            kinds[_pos(data, len(kinds))] = data.draw(st.one_of(st.integers(0, 15),
                                                                st.sampled_from(sorted(DIM_KIND_NAMES))))
        cols.kinds = bytes(kinds)
    elif what == "version":  # 2 (static) <-> 3 (symbolic) <-> 4 (rule names), or another
        cols.version = data.draw(st.sampled_from([2, 3, 1, 4, 5]))
    elif what == "str":
        value = data.draw(st.one_of(st.sampled_from(_INTERESTING_STRS), st.sampled_from(strs or [""]),
                                    st.text(max_size=12)))
        if strs and data.draw(st.booleans()):
            strs[_pos(data, len(strs))] = value
        else:
            strs.append(value)
    elif what == "insert":
        i = _pos(data, len(ints) + 1)
        ints[i:i] = data.draw(st.lists(st.sampled_from(_INTERESTING_INTS), min_size=1, max_size=3))
    elif what == "delete":
        i = _pos(data, len(ints))
        del ints[i:i + data.draw(st.integers(1, 3))]
    elif what == "blob":
        blob = bytearray(cols.blob)
        if blob:
            blob[_pos(data, len(blob))] = data.draw(st.integers(0, 255))
        else:
            blob += bytes(data.draw(st.integers(1, 16)))
        cols.blob = bytes(blob)
    elif what == "ids":
        ids = cols.ids
        if ids and data.draw(st.booleans()):
            k = _pos(data, len(ids))
            ids[k] = data.draw(st.sampled_from([bytes(16), b"\xff" * 16, ids[-1], ids[k][:15] + b"\x01"]))
        else:
            ids.append(data.draw(st.binary(min_size=16, max_size=16)))
    elif what == "flags":
        cols.flags ^= data.draw(st.sampled_from([1, 2, 0x8000]))
    else:  # kinds_len: drop or duplicate a node kind
        kinds = bytearray(cols.kinds)
        if kinds:
            i = _pos(data, len(kinds))
            if data.draw(st.booleans()):
                del kinds[i]
            else:
                kinds.insert(i, kinds[i])
        cols.kinds = bytes(kinds)


def _raw_mutation(data, payload: bytes) -> bytes:
    """Flip bytes anywhere after the header (section sizes included), checksum recomputed."""
    body = bytearray(payload[_HEADER.size:])
    for _ in range(data.draw(st.integers(1, 3))):
        if body:
            body[_pos(data, len(body))] = data.draw(st.integers(0, 255))
    magic, version, flags, _, _ = _HEADER.unpack_from(payload)
    return _HEADER.pack(magic, version, flags, len(body), xxh3_128_digest(bytes(body))) + bytes(body)


@pytest.mark.parametrize("k", range(len(SEEDS)))
@fuzz_settings
@given(data=st.data())
def test_fuzz_binary_payloads(k, data):
    """issue 10 items 1, 2, 13: every mutated binary payload (checksum recomputed) either raises
    SerializationError or loads into canonical, well-formed, stably re-serializable objects."""
    payload = PAYLOADS[k]
    if data.draw(st.integers(0, 9)) == 0:
        mutated = _raw_mutation(data, payload)
    else:
        cols = _sections(payload)
        cols.blob = bytes(cols.blob)
        for _ in range(data.draw(st.integers(1, 3))):
            _mutate_columns(data, cols)
        try:
            mutated = _assemble(cols)
        except SerializationError:
            return  # an integer the encoder cannot write (out of the int64 range)
    _load_or_reject(pyir.loads, mutated)


# the rule-table tests aim at a few dozen integers and bytes: half the budget
_rule_fuzz = settings(fuzz_settings, max_examples=max(1, FUZZ_EXAMPLES // 2))


@_rule_fuzz
@given(data=st.data())
def test_fuzz_rule_tables(data):
    """Rule names (binary version 4): mutations aimed at the last record's rule table (its counts,
    name references and offset in ``ints``; the ids and name indices in the blob; truncation) and
    at the version either raise SerializationError or load into what the oracle accepts."""
    cols = _sections(PAYLOADS[-1])
    blob = bytearray(cols.blob)
    ints = cols.ints
    nnames = ints[-4]
    start = len(ints) - 3 - nnames  # [nfire, nnames, *names, blob offset]
    nfire, off = ints[start], ints[-1]
    assert (nfire, nnames, cols.version) == (3, 2, 4)
    for _ in range(data.draw(st.integers(1, 3))):
        what = data.draw(st.sampled_from(["int", "name", "id", "index", "index", "version", "truncate"]))
        if what in ("int", "name", "truncate") and len(ints) < start + 3 + nnames:
            what = "id"
        if what == "int":
            ints[start + _pos(data, 3 + nnames)] = data.draw(st.one_of(st.sampled_from(_INTERESTING_INTS),
                                                                       st.integers(-2, 40)))
        elif what == "name":
            ints[start + 2 + _pos(data, nnames)] = data.draw(st.integers(-1, len(cols.strs)))
        elif what == "id":
            blob[off + _pos(data, 16 * nfire)] ^= data.draw(st.integers(1, 255))
        elif what == "index":
            k = off + 16 * nfire + 2 * _pos(data, nfire)
            blob[k:k + 2] = data.draw(st.sampled_from([0, 1, 2, 3, 0xFFFF])).to_bytes(2, "little")
        elif what == "version":
            cols.version = data.draw(st.sampled_from([2, 3, 5]))
        else:
            del ints[start + _pos(data, 3 + nnames):]
    cols.blob = bytes(blob)
    _load_or_reject(pyir.loads, _assemble(cols))


# -- JSON: mutate the parsed document ------------------------------------------------------------------

_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 40), st.sampled_from(_INTERESTING_INTS),
                          st.sampled_from([0.0, -0.0, 0.5, 1.0, 1e300, float("nan"), float("inf")]),
                          st.sampled_from(_INTERESTING_STRS), st.text(max_size=8))


def _paths(doc) -> list[tuple[object, object]]:
    """Every (container, key) of the document, iteratively."""
    out: list[tuple[object, object]] = []
    stack = [doc]
    while stack:
        c = stack.pop()
        keys = list(c) if isinstance(c, dict) else range(len(c))
        for k in keys:
            out.append((c, k))
            if isinstance(c[k], (dict, list)):
                stack.append(c[k])
    return out


def _new_value(data, old, doc_strings: list[str]):
    """A replacement for ``old``: mostly of its own type (a nearby number, another id or
    string, a longer or shorter list), sometimes of another type."""
    t = type(old)
    if data.draw(st.integers(0, 9)) < 2 or t not in (int, float, str, bool, list):
        if data.draw(st.booleans()):
            return data.draw(_JSON_SCALARS)
        return data.draw(st.lists(_JSON_SCALARS, max_size=3).map(
            lambda xs: ["tuple", [["int", x] if type(x) is int else ["str", str(x)] for x in xs]]
            if data.draw(st.booleans()) else xs))
    if t is bool:
        return not old
    if t is int:
        return data.draw(st.one_of(st.sampled_from([old - 1, old + 1, old + 2, -old, 0, -1]),
                                   st.sampled_from(_INTERESTING_INTS), st.integers(-(2**64), 2**64)))
    if t is float:
        return data.draw(st.sampled_from([-old, old * 2, 0.0, -0.0, 1e308 * 10, float("nan"), 2.0**70,
                                          float(2**63), 0.1]))
    if t is str:
        if len(old) == 32 and data.draw(st.booleans()):  # an id: one character changed
            i = _pos(data, 32)
            c = data.draw(st.sampled_from([" ", "A", "g", "0", "f", "\u0660", "  ", ""]))
            return old[:i] + c + old[i + 1:]
        return data.draw(st.one_of(st.sampled_from(doc_strings), st.sampled_from(_INTERESTING_STRS)))
    # a list: shorter, longer, or one element duplicated / dropped
    how = data.draw(st.sampled_from(["shrink", "grow", "dup", "drop"]))
    if how == "shrink":
        return old[:-1]
    if how == "grow":
        return old + [data.draw(_JSON_SCALARS)]
    if not old:
        return [0]
    i = _pos(data, len(old))
    return old[:i] + [old[i]] + old[i:] if how == "dup" else old[:i] + old[i + 1:]


def _mutate_doc(data, doc) -> None:
    """One mutation of a parsed document: replace a value, drop or duplicate an entry (mostly
    inside the node table, functions and history; rarely the top-level fields)."""
    paths = _paths(doc)
    if data.draw(st.integers(0, 19)):
        paths = [(c, k) for c, k in paths if c is not doc]
    if data.draw(st.integers(0, 9)) < 7:  # mostly a scalar leaf (an index, a number, a string)
        paths = [(c, k) for c, k in paths if not isinstance(c[k], (list, dict))] or paths  # type: ignore[index]
    if not paths:
        return
    c, k = paths[_pos(data, len(paths))]
    what = data.draw(st.sampled_from(["replace"] * 6 + ["drop", "dup"]))
    if what == "drop":
        del c[k]  # type: ignore[attr-defined]
    elif what == "dup" and isinstance(c, list):
        c.insert(k, json.loads(json.dumps(c[k])))  # type: ignore[arg-type]
    else:
        strings = [v for cc, kk in paths if isinstance(v := cc[kk], str)]  # type: ignore[index]
        c[k] = _new_value(data, c[k], strings or [""])  # type: ignore[index]


@pytest.mark.parametrize("k", range(len(SEEDS)))
@fuzz_settings
@given(data=st.data())
def test_fuzz_json_documents(k, data):
    """issue 10 items 1, 2, 3: every mutated JSON document (types swapped, numbers changed, ids and
    strings altered, entries dropped or duplicated) either raises SerializationError or loads into
    canonical, well-formed, stably re-serializable objects."""
    doc = json.loads(DOCS[k])
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate_doc(data, doc)
    _load_or_reject(pyir.from_json, json.dumps(doc))


@_rule_fuzz
@given(data=st.data())
def test_fuzz_json_rule_tables(data):
    """Rule names (JSON version 3): mutations inside the records' ``"rules"`` lists (ids, names,
    pairs dropped, duplicated or retyped; the key dropped) and of the version either raise
    SerializationError or load into what the oracle accepts."""
    doc = json.loads(DOCS[-1])
    assert doc["version"] == 3
    recs = [r for r in doc["history"] if "rules" in r]
    for _ in range(data.draw(st.integers(1, 3))):
        if data.draw(st.integers(0, 5)) == 0:
            doc["version"] = data.draw(st.sampled_from([1, 2, 4]))
            continue
        rec = recs[_pos(data, len(recs))]
        wrapper = {"rules": rec["rules"]} if "rules" in rec else {}
        _mutate_doc(data, {"w": wrapper} if data.draw(st.integers(0, 9)) == 0 else wrapper)
        rec.pop("rules", None)
        if "rules" in wrapper:
            rec["rules"] = wrapper["rules"]
    _load_or_reject(pyir.from_json, json.dumps(doc))


# -- findings in constructors -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["\ud800", ""])
def test_module_names_are_global_var_names(name):
    """issue 10 item 1 (found by the loader fuzz): a module's function names are valid GlobalVar names;
    a payload naming a function "\\ud800" used to load, print, and give text that does not parse."""
    x = pyir.var("x", shape=(2,))
    f = pyir.Function([x], op.nn.relu(x))
    with pytest.raises(pyir.PyIRError):
        pyir.Module({name: f})
