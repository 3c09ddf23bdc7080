"""Lineage through passes: find, origins, history for every shape of rewrite."""

from __future__ import annotations

import pyir
from pyir import op
from pyir.transform import Sequential, module_pass


def _rewrite_pass(name, fn):
    """A module pass applying ``pyir.rewrite(main, fn)``."""
    @module_pass(name=name)
    def p(mod):
        return mod.with_function("main", pyir.rewrite(mod["main"], fn))
    return p


relu_to_tanh = _rewrite_pass("ReluToTanh", lambda n: op.tanh(n.args[0])
                             if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.relu") else None)
tanh_to_sigmoid = _rewrite_pass("TanhToSigmoid", lambda n: op.sigmoid(n.args[0])
                                if isinstance(n, pyir.Call) and n.op is pyir.Op("tanh") else None)
exp_to_log = _rewrite_pass("ExpToLog", lambda n: op.log(n.args[0])
                           if isinstance(n, pyir.Call) and n.op is pyir.Op("exp") else None)


def _model():
    x = pyir.var("x", shape=(4,))
    r = op.nn.relu(x)
    e = op.exp(r)
    return pyir.Module.from_expr(op.add(e, x)), x, r, e


def test_one_to_one_rewrite_is_found_automatically():
    """After a rewrite pass, find(old) is the node that replaced it, origins go back to it."""
    mod, x, r, e = _model()
    new = relu_to_tanh(mod)
    (t,) = new.find(r)
    assert t is op.tanh(x)
    assert new.origins(t) == {r.id}
    assert new.find(x) == [x]
    # the rebuilt parent derives from the old parent
    (e2,) = new.find(e)
    assert e2 is op.exp(t)
    steps = new.history(t)
    assert [(s.pass_name, s.before, s.after) for s in steps] == [("ReluToTanh", r.id, t.id)]


def test_chains_across_five_passes():
    """find and origins follow an expression through 5+ passes, unchanged passes included."""
    mod, x, r, e = _model()
    noop = _rewrite_pass("Noop", lambda n: None)
    pipeline = Sequential([relu_to_tanh, noop, tanh_to_sigmoid, exp_to_log, noop, relu_to_tanh])
    new = pipeline(mod)
    (s,) = new.find(r)
    assert s is op.sigmoid(x)
    assert new.origins(s) == {r.id}
    (lg,) = new.find(e)
    assert lg is op.log(s)
    assert [st.pass_name for st in new.history(s)] == ["ReluToTanh", "TanhToSigmoid"]
    assert [rec.name for rec in new.pass_records] == ["ReluToTanh", "TanhToSigmoid", "ExpToLog"]


def test_no_change_pass_returns_same_module_and_records_nothing():
    """A pass that changes nothing returns the input module object, with no new record."""
    mod, *_ = _model()
    noop = _rewrite_pass("Noop", lambda n: None)
    assert noop(mod) is mod
    assert len(noop(mod).pass_records) == 0


def test_merge_and_split_with_explicit_derive():
    """derive(new, *olds) records merges (one from many) and splits (many from one)."""
    mod, x, r, e = _model()

    @module_pass(name="Merge")
    def merge(m):
        main = m["main"]
        fused = op.nn.leaky_relu(x, alpha=0.5)
        pyir.derive(fused, r, e)
        return m.with_function("main", pyir.Function(main.params, op.add(fused, x)))

    merged = merge(mod)
    (f,) = merged.find(r)
    assert merged.find(e) == [f]
    assert merged.origins(f) == {r.id, e.id}

    @module_pass(name="Split")
    def split(m):
        main = m["main"]
        a, b = op.nn.relu(x), op.nn.relu(op.negative(x))
        pyir.derive(a, f)
        pyir.derive(b, f)
        return m.with_function("main", pyir.Function(main.params, op.add(a, b)))

    out = split(merged)
    assert set(out.find(r)) == {op.nn.relu(x), op.nn.relu(op.negative(x))}


def test_elimination_gives_empty_find_and_a_history_naming_the_pass():
    """An eliminated expression: find is empty, history ends with the eliminating pass."""
    mod, x, r, e = _model()

    @module_pass(name="DropExp")
    def drop(m):
        pyir.eliminate(e)
        return m.with_function("main", pyir.Function(m["main"].params, op.add(r, x)))

    out = drop(mod)
    assert out.find(e) == []
    assert out.history(e)[-1].pass_name == "DropExp" and out.history(e)[-1].after is None


def test_input_lineage_is_never_changed():
    """Running passes never changes the history of the input module."""
    mod, *_ = _model()
    one = relu_to_tanh(mod)
    records = list(one.pass_records)
    tanh_to_sigmoid(one)
    exp_to_log(one)
    assert list(one.pass_records) == records and len(mod.pass_records) == 0


def test_structurally_equal_expressions_share_lineage():
    """Hash-consing: two equal expressions are one node, so they share find results."""
    x = pyir.var("x", shape=(4,))
    a = op.nn.relu(x)
    mod = pyir.Module.from_expr(pyir.Tuple([op.exp(a), op.nn.relu(x)]))
    new = relu_to_tanh(mod)
    assert new.find(op.nn.relu(x)) == [op.tanh(x)]


def test_find_accepts_ids_and_unknown_ids():
    """find takes an expression or its 16-byte id; an unknown id finds nothing."""
    mod, _, r, _ = _model()
    new = relu_to_tanh(mod)
    assert new.find(r.id) == new.find(r)
    assert new.find(bytes(16)) == []


def test_a_pass_that_builds_a_fresh_module_keeps_the_history():
    """A module pass returning a newly built Module still extends its input's lineage."""
    mod, _, r, _ = _model()
    one = relu_to_tanh(mod)

    @module_pass(name="Rebuild")
    def rebuild(m):
        return pyir.Module({"main": pyir.Function(m["main"].params, op.exp(m["main"].body))})

    out = rebuild(one)
    assert [rec.name for rec in out.pass_records] == ["ReluToTanh", "Rebuild"]
    assert out.find(r)  # the tanh (and what derives from it) is still found


def test_sequential_rejects_non_passes():
    """Sequential of something that is not a sequence of passes is a PassError."""
    import pytest

    with pytest.raises(pyir.PassError):
        Sequential(3)
    with pytest.raises(pyir.PassError):
        Sequential([3])


def test_a_pass_run_inside_another_records_into_it():
    """A pass called from within another pass adds its edges to the outer pass's record."""
    x = pyir.var("x", shape=(4,))
    start = op.negative(op.exp(x))
    mod = pyir.Module.from_expr(start)

    @module_pass(name="Outer")
    def outer(m):
        m = m.with_function("main", pyir.rewrite(m["main"], lambda n: op.tanh(n.args[0])
                                                 if isinstance(n, pyir.Call) and n.op.name == "negative"
                                                 else None))
        return exp_to_log(m)

    out = outer(mod)
    assert [r.name for r in out.pass_records] == ["Outer"]
    final = out["main"].body
    assert final is op.tanh(op.log(x))
    assert start.id in out.origins(final)
    assert out.find(start) == [final]


def test_origins_through_a_cycle_within_one_pass():
    """A pass that rewrites A -> B -> A (hash-consing) still reports A as its own origin."""
    x = pyir.var("x", shape=(4,))
    e = op.exp(x)
    mod = pyir.Module.from_expr(op.negative(e))

    @module_pass(name="RoundTrip")
    def round_trip(m):
        lg = op.log(x)
        pyir.derive(lg, e)
        pyir.derive(e, lg)
        t = pyir.derive(op.tanh(e), m["main"].body)
        return m.with_function("main", pyir.Function(m["main"].params, t))

    out = round_trip(mod)
    assert out.origins(e) == {e.id}
    assert out.origins(out["main"].body) == {mod["main"].body.id}


def test_origins_since_is_checked():
    """origins(since=) takes a record number within range."""
    import pytest

    mod, _, r, _ = _model()
    new = relu_to_tanh(mod)
    assert new.origins(op.tanh(r.args[0]), since=1) == {op.tanh(r.args[0]).id}
    for bad in (-1, 2, "a"):
        with pytest.raises(pyir.LineageError):
            new.origins(r, since=bad)


# -- issue 10 item 12: pass records are immutable -----------------------------------------------------


def test_pass_record_is_immutable():
    """issue 10 item 12: no __dict__, read-only fields, immutable containers (edges, removed, sources)."""
    import copy
    import pickle

    import pytest

    from pyir.errors import ImmutableError, LineageError
    from pyir.lineage import PassRecord

    a, b = bytes(range(16)), bytes(range(1, 17))
    rec = PassRecord("P", "o", [[a, [b]]], [b], {a: {"k": [1, 2]}}, 0.5)
    assert not hasattr(rec, "__dict__")
    for name in ("name", "options", "edges", "removed", "sources", "seconds", "_back", "other"):
        with pytest.raises(ImmutableError):
            setattr(rec, name, 1)
        with pytest.raises(ImmutableError):
            delattr(rec, name)
    assert rec.edges == ((a, (b,)),) and type(rec.removed) is frozenset
    with pytest.raises(TypeError):
        rec.sources[a] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        rec.sources[a]["k"] = 1
    assert rec.sources[a]["k"] == (1, 2)
    for view in (rec.back, rec.fwd):
        with pytest.raises(TypeError):
            view[a] = ()  # type: ignore[index]
    assert rec.back[a] == (b,) and rec.fwd[b] == (a,)
    assert copy.copy(rec) is rec and copy.deepcopy(rec) is rec
    again = pickle.loads(pickle.dumps(rec))
    assert (again.name, again.edges, again.removed, again.sources, again.seconds) == \
           (rec.name, rec.edges, rec.removed, rec.sources, rec.seconds)
    src: dict = {a: [1]}
    rec2 = PassRecord("P", "", (), (), src)
    src[a].append(2)
    src[b] = 3
    assert rec2.sources == {a: (1,)}  # a copy: the caller's containers do not leak in
    for bad in [{"name": 1}, {"name": "\ud800"}, {"edges": [(a, b)]}, {"edges": [(a[:3], ())]},
                {"edges": 5}, {"removed": [a.hex()]}, {"sources": {a.hex(): 1}}, {"sources": [a]},
                {"sources": {a: {1: 2}}}, {"sources": {a: {1, 2}}}, {"seconds": "1"}, {"seconds": True}]:
        kw: dict = {"name": "P", "options": "", "edges": (), "removed": (), **bad}
        with pytest.raises(LineageError):
            PassRecord(**kw)


def test_onnx_sources_are_immutable():
    """issue 10 item 12: the ONNX importer's sources table is a read-only mapping of tuples."""
    import pytest

    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from pyir.frontend.onnx import from_onnx, onnx_sources, source_table

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"), helper.make_node("Exp", ["r"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    onnx.checker.check_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    table = source_table(mod)
    with pytest.raises(TypeError):
        table[b"x" * 16] = ("a", "b")  # type: ignore[index]
    assert all(type(v) is tuple for v in table.values())
    assert onnx_sources(mod, mod["main"].body) == {("y", "Exp")}
    back = pyir.loads(pyir.dumps(mod))
    assert source_table(back) == table and pyir.from_json(pyir.to_json(mod)).pass_records[0].sources == table


def test_back_and_fwd_indexes():
    """issue 10 (10^6 memory target): the indexes built from the compact edges merge the
    edges of an id into one deduplicated tuple."""
    a, b, c, d = (bytes([i]) * 16 for i in range(4))
    olds = (a, b)
    rec = pyir.PassRecord("p", "", ((c, olds), (d, (a,)), (d, (b, a)), (c, (b,))), ())
    assert rec.back[c] == (a, b) and rec.back[d] == (a, b)
    rec2 = pyir.PassRecord("p", "", ((c, (a,)), (d, (a, a)), (b, (c, d))), ())
    assert rec2.back[c] == (a,) and rec2.back[d] == (a,) and rec2.back[b] == (c, d)
    assert rec.fwd[a] == (c, d) and rec.fwd[b] == (c, d)
    assert rec2.fwd[a] == (c, d) and rec2.fwd[c] == (b,)
    assert all(type(v) is tuple for r in (rec, rec2) for v in (*r.back.values(), *r.fwd.values()))


def test_pass_record_edges_are_compact():
    """issue 10 (10^6 memory target): a record stores its edges as concatenated 16-byte ids
    (plus a count per edge only when some edge has several old ids), ~32 bytes per edge; the
    public ``edges`` is an immutable sequence of (new, olds) pairs equal to the tuple form."""
    import pickle

    import pytest

    from pyir.errors import ImmutableError, LineageError
    from pyir.lineage import EdgeBuffer, Edges, PassRecord

    ids = [bytes([i]) * 16 for i in range(8)]
    pairs = tuple((ids[i], (ids[i + 1],)) for i in range(7))
    rec = PassRecord("p", "", pairs, ())
    e = rec.edges
    assert type(e) is Edges and len(e) == 7 and e == pairs and tuple(e) == pairs and list(e) == list(pairs)
    assert e[0] == pairs[0] and e[-1] == pairs[-1] and e[2:5] == pairs[2:5] and e[::-2] == pairs[::-2]
    assert e._counts is None and len(e._news) + len(e._olds) == 7 * 32
    with pytest.raises(IndexError):
        e[7]
    with pytest.raises(ImmutableError):
        e._news = b""  # type: ignore[misc]
    mixed = (*pairs[:3], (ids[0], ()), (ids[1], (ids[2], ids[3], ids[4])), *pairs[3:])
    rec2 = PassRecord("p", "", mixed, ())
    assert rec2.edges == mixed and rec2.edges[4] == mixed[4] and rec2.edges[3] == (ids[0], ())
    assert rec2.edges != rec.edges and rec.edges == PassRecord("q", "", rec.edges, ()).edges
    assert pickle.loads(pickle.dumps(rec2)).edges == mixed and hash(rec.edges) == hash(pairs)
    # buffers: append / extend validate; extending from a buffer or a record keeps the counts right
    buf = EdgeBuffer()
    buf.extend(pairs[:2])
    buf.extend(rec2.edges)
    buf.append((ids[5], [ids[6], ids[7]]))
    buf.add_one_old([ids[1], ids[2]], ids[0])
    want = (*pairs[:2], *mixed, (ids[5], (ids[6], ids[7])), (ids[1], (ids[0],)), (ids[2], (ids[0],)))
    assert tuple(buf) == want and PassRecord("p", "", buf, ()).edges == want
    for bad in [(ids[0],), (ids[0], ids[1]), (ids[0][:3], ()), (ids[0], (ids[1].hex(),)), 5]:
        with pytest.raises(LineageError):
            EdgeBuffer().append(bad)  # type: ignore[arg-type]
    for bad_parts in [(b"x" * 15, b"", None), (ids[0], ids[1] * 2, None), (ids[0], ids[1], b"\2\0\0\0")]:
        with pytest.raises(LineageError):
            Edges(*bad_parts)


def test_recorded_pass_edges_are_compact():
    """issue 10 (10^6 memory target): a pass's recorder accumulates edges in byte buffers, so
    the record of a pass rewriting n nodes holds about 32 n bytes of edges."""
    mod = pyir.testing.elementwise_chain(2000)
    out = pyir.transform.ToANormalForm()(mod)
    e = out.pass_records[-1].edges
    assert len(e) >= 2000
    assert len(e._news) + len(e._olds) + len(e._counts or b"") <= 36 * len(e)
    assert out.origins(out["main"].body) and out.find(mod["main"].params[0])


def test_edge_buffer_add_mark_rollback():
    """issue 10 (memory target): passes stream single-old edges with ``add`` (no pair tuples) and
    drop what they recorded with ``rollback`` when they end up changing nothing."""
    from pyir.lineage import EdgeBuffer, PassRecord

    a, b, c = b"a" * 16, b"b" * 16, b"c" * 16
    buf = EdgeBuffer()
    buf.add(a, b)
    m = buf.mark()
    buf.add(b, c)
    buf.append((c, (a, b)))  # several olds: counts kept from here on
    buf.add(a, c)
    assert list(buf) == [(a, (b,)), (b, (c,)), (c, (a, b)), (a, (c,))]
    buf.rollback(m)
    assert list(buf) == [(a, (b,))] and len(buf) == 1
    buf.append((c, (a, b)))
    assert list(buf) == [(a, (b,)), (c, (a, b))]
    rec = PassRecord("p", "", buf, ())
    assert rec.edges == ((a, (b,)), (c, (a, b)))
