"""Lineage through passes: find, origins, history for every shape of rewrite."""

from __future__ import annotations

import json
from array import array
from types import SimpleNamespace

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
    from pyir.ir.lineage import PassRecord

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
    from pyir.ir.lineage import EdgeBuffer, Edges, PassRecord

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
    from pyir.ir.lineage import EdgeBuffer, PassRecord

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


# -- instance (AND) and shared edges ---------------------------------------------------------------


def _sites_model():
    """main(x) = (exp(x), tanh(x)): two old nodes a, b."""
    x = pyir.var("x", shape=(4,))
    a, b = op.exp(x), op.tanh(x)
    return pyir.Module.from_expr(pyir.Tuple([a, b])), x, a, b


def _share_and_expand():
    """Two passes: "Share" makes a node B standing for a (at site s1) and b (at site s2), with
    s1 <- a and s2 <- b; "Expand" instantiates B at s1 (-> X1) and at s2 (-> X2)."""
    mod, x, a, b = _sites_model()
    B, s1, s2 = op.negative(x), op.log(x), op.sigmoid(x)
    X1, X2 = op.nn.relu(x), op.abs(x)

    @module_pass(name="Share")
    def share(m):
        pyir.ir.lineage.derive_shared(B, a, b)
        pyir.derive(s1, a)
        pyir.derive(s2, b)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([B, s1, s2])))

    @module_pass(name="Expand")
    def expand(m):
        pyir.ir.lineage.derive_at(X1, B, s1)
        pyir.ir.lineage.derive_at(X2, B, s2)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([X1, X2])))

    return mod, share, expand, SimpleNamespace(x=x, a=a, b=b, B=B, s1=s1, s2=s2, X1=X1, X2=X2)


def test_instance_edge_picks_the_site_of_a_shared_node():
    """origins(X) = origins(B) & origins(S) for what B got through shared edges; find(old) reaches
    X only when it reaches both B and the site; history goes through B."""
    mod, share, expand, n = _share_and_expand()
    a, b, B, s1, s2, X1, X2 = n.a, n.b, n.B, n.s1, n.s2, n.X1, n.X2
    mid = share(mod)
    assert set(mid.find(a)) == {B, s1} and set(mid.find(b)) == {B, s2}  # B stands for both
    assert mid.origins(B) == {a.id, b.id}
    out = expand(mid)
    assert out.origins(X1) == {a.id} and out.origins(X2) == {b.id}
    assert out.find(a) == [X1] and out.find(b) == [X2]
    assert out.find(B) == sorted([X1, X2], key=lambda n: n.id)  # B itself: every instance
    assert out.find(s1) == []  # a site alone is no origin: X1 is B (at s1)
    assert [(s.pass_name, s.before, s.after) for s in out.history(X1)] == [
        ("Share", a.id, B.id), ("Expand", B.id, X1.id)]
    steps = [(s.pass_name, s.before, s.after) for s in out.history(a)]  # forward from an old node
    assert sorted(steps[:2]) == sorted([("Share", a.id, B.id), ("Share", a.id, s1.id)])
    assert steps[2:] == [("Expand", B.id, X1.id)]
    assert out.origins(X1, since=1) == {B.id}  # from the Share output on, B is a node of its own


def test_instance_edge_of_an_ordinary_body_keeps_its_origins():
    """A body node that stands for itself (no shared edge: an ordinary function inlined) keeps
    its origins at every site, and find on it returns every instance."""
    mod, x, a, b = _sites_model()
    X1, X2 = op.nn.relu(x), op.abs(x)

    @module_pass(name="Expand")
    def expand(m):
        pyir.ir.lineage.derive_at(X1, a, b)
        pyir.ir.lineage.derive_at(X2, a, m["main"].body)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([X1, X2])))

    out = expand(mod)
    assert out.origins(X1) == {a.id} and out.origins(X2) == {a.id}
    assert out.find(a) == sorted([X1, X2], key=lambda n: n.id)
    assert out.find(b) == []  # a site alone reaches nothing


def test_instance_edge_mixed_origins_and_chains_of_passes():
    """Rewrites before and after the expansion are followed (the site rebuilt in between, the
    instance rewritten after); a body with an ordinary origin besides its shared ones keeps it."""
    mod, share, _, n = _share_and_expand()
    x, a, b, B, s1, s2, X1 = n.x, n.a, n.b, n.B, n.s1, n.s2, n.X1
    c = op.nn.relu(op.exp(x))  # an extra, ordinary origin of B
    mod = pyir.Module.from_expr(pyir.Tuple([a, b, c]))

    @module_pass(name="ShareC")
    def share_with_c(m):
        pyir.ir.lineage.derive_shared(B, a, b)
        pyir.derive(B, c)
        pyir.derive(s1, a)
        pyir.derive(s2, b)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([B, s1, s2])))

    @module_pass(name="RenameSite")
    def rename(m):
        t1 = op.log(op.log(x))
        pyir.derive(t1, s1)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([B, t1, s2])))

    @module_pass(name="Expand2")
    def expand2(m):
        pyir.ir.lineage.derive_at(X1, B, m["main"].body.fields[1])
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([X1])))

    @module_pass(name="After")
    def after(m):
        return m.with_function("main", pyir.Function(m["main"].params, pyir.derive(op.nn.softmax(x), X1)))

    out = after(expand2(rename(share(mod))))
    y = out["main"].body
    assert out.origins(y) == {a.id}
    assert out.find(a) == [y] and out.find(b) == [] and out.find(c) == []
    assert [s.pass_name for s in out.history(y)] == ["Share", "Expand2", "After"]
    out = after(expand2(rename(share_with_c(mod))))
    y = out["main"].body
    assert out.origins(y) == {a.id, c.id}
    assert out.find(a) == [y] and out.find(c) == [y] and out.find(b) == []


def test_instance_of_an_instance():
    """AND of AND: a node made by an instance edge, shared again and instantiated again (across
    passes), and an instance of an instance within one pass."""
    mod, share, expand, n = _share_and_expand()
    x, a, b, B, s1, s2, X1, X2 = n.x, n.a, n.b, n.B, n.s1, n.s2, n.X1, n.X2
    C, u1, u2 = op.sqrt(x), op.floor(x), op.ceil(x)
    Y1, Y2 = op.erf(x), op.rsqrt(x)

    @module_pass(name="Share2")
    def share2(m):
        pyir.ir.lineage.derive_shared(C, X1, X2)
        pyir.derive(u1, X1)
        pyir.derive(u2, X2)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([C, u1, u2])))

    @module_pass(name="Expand2")
    def expand2(m):
        pyir.ir.lineage.derive_at(Y1, C, u1)
        pyir.ir.lineage.derive_at(Y2, C, u2)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([Y1, Y2])))

    out = expand2(share2(expand(share(mod))))
    assert out.origins(Y1) == {a.id} and out.origins(Y2) == {b.id}
    assert out.find(a) == [Y1] and out.find(b) == [Y2]
    assert [s.pass_name for s in out.history(Y2)] == ["Share", "Expand", "Share2", "Expand2"]

    # within one pass: Z is B at s1, W is Z at another site (Z stands for itself: W keeps a)
    Z, W = op.nn.softmax(x), op.nn.log_softmax(x)

    @module_pass(name="Nested")
    def nested(m):
        pyir.ir.lineage.derive_at(Z, B, s1)
        pyir.ir.lineage.derive_at(W, Z, s2)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([W])))

    out = nested(share(mod))
    assert out.origins(W) == {a.id}
    assert out.find(a) == [W] and out.find(b) == []


def test_instance_edge_with_an_eliminated_body():
    """The expanded function's nodes eliminated by the same pass (Inline removes the callee):
    find still reaches the instances, history shows the elimination."""
    mod, x, a, b = _sites_model()
    X1 = op.nn.relu(x)

    @module_pass(name="ExpandAndDrop")
    def expand(m):
        pyir.ir.lineage.derive_at(X1, a, b)
        pyir.eliminate(a)
        return m.with_function("main", pyir.Function(m["main"].params, pyir.Tuple([X1, b])))

    out = expand(mod)
    assert out.find(a) == [X1]
    steps = [(s.pass_name, s.before, s.after) for s in out.history(a)]
    assert steps == [("ExpandAndDrop", a.id, X1.id), ("ExpandAndDrop", a.id, None)]
    assert out.origins(X1) == {a.id}


def test_typed_edges_storage_views_and_validation():
    """Typed edges are ordinary edges whose first old id is a reserved mark; back/fwd show the
    union view; a misplaced mark is a LineageError (records, compact edges, buffers)."""
    import pickle

    import pytest

    from pyir.errors import LineageError
    from pyir.ir.lineage import INSTANCE_EDGE, SHARED_EDGE, EdgeBuffer, Edges, PassRecord
    from pyir.ir.node import digest

    assert INSTANCE_EDGE == digest(b"pyir.lineage: instance (AND) edge")
    assert SHARED_EDGE == digest(b"pyir.lineage: shared edge")
    x, b_, s, m1, m2, p = (bytes([i]) * 16 for i in range(1, 7))
    buf = EdgeBuffer()
    buf.add(p, m1)
    assert not buf.typed
    buf.add_shared(b_, [m1, m2])
    buf.add_at(x, b_, s)
    assert buf.typed
    want = ((p, (m1,)), (b_, (SHARED_EDGE, m1, m2)), (x, (INSTANCE_EDGE, b_, s)))
    assert tuple(buf) == want
    rec = PassRecord("P", "", buf, ())
    assert rec.edges == want and rec.edges._typed
    assert rec.back[x] == (b_, s) and rec.back[b_] == (m1, m2) and rec.fwd[m1] == (p, b_)
    assert all(SHARED_EDGE not in v and INSTANCE_EDGE not in v for v in rec.back.values())
    assert INSTANCE_EDGE not in rec.fwd and SHARED_EDGE not in rec.fwd
    again = pickle.loads(pickle.dumps(rec))
    assert again.edges == want and again.edges._typed
    assert PassRecord("Q", "", want, ()).edges == want  # from pairs: validated and typed
    other = EdgeBuffer()
    other.extend(rec.edges)
    assert other.typed and tuple(other) == want
    bad_edges = [
        (INSTANCE_EDGE, (m1,)),  # a mark as the new id
        (x, (m1, INSTANCE_EDGE, b_)),  # a mark after the first old id
        (x, (INSTANCE_EDGE, b_)),  # an instance edge without a site
        (x, (INSTANCE_EDGE, b_, s, m1)),  # ... or with more
        (x, (SHARED_EDGE,)),  # a shared edge without old ids
        (x, (SHARED_EDGE, SHARED_EDGE, m1)),
    ]
    for e in bad_edges:
        with pytest.raises(LineageError):
            EdgeBuffer().append(e)
        with pytest.raises(LineageError):
            PassRecord("P", "", [e], ())
        news = e[0]
        olds = b"".join(e[1])
        counts = None if len(e[1]) == 1 else array("I", [len(e[1])]).tobytes()
        with pytest.raises(LineageError):
            Edges(news, olds, counts)
    for kw in ({"removed": [INSTANCE_EDGE]}, {"sources": {SHARED_EDGE: 1}}):
        with pytest.raises(LineageError):
            PassRecord("P", "", (), kw.get("removed", ()), kw.get("sources"))
    # a mark's bytes across two ids (not aligned) is no mark
    split = INSTANCE_EDGE[8:] + bytes(8), bytes(8) + INSTANCE_EDGE[:8]
    assert not Edges(split[0] + split[1], m1 + m2, None)._typed


def test_typed_edges_round_trip_through_both_formats():
    """FuseOps + DefuseOps records (shared and instance edges) travel through dumps/loads and
    to_json/from_json unchanged: same edges, same answers, canonical."""
    from pyir.testing import assert_canonical
    from pyir.transform import DefuseOps, FuseOps, ToANormalForm

    m = ToANormalForm()(pyir.testing.elementwise_chain(12))
    out = DefuseOps()(FuseOps()(m))
    assert all(r.edges._typed for r in out.pass_records[1:])
    calls = [n for n in pyir.post_order(m["main"]) if type(n) is pyir.Call]
    for back in (pyir.loads(pyir.dumps(out)), pyir.from_json(pyir.to_json(out))):
        assert_canonical(back)
        assert [list(r.edges) for r in back.pass_records] == [list(r.edges) for r in out.pass_records]
        assert [r.edges._typed for r in back.pass_records] == [r.edges._typed for r in out.pass_records]
        for c in calls:
            assert back.find(c) == out.find(c)
            assert back.origins(c, since=1) == out.origins(c, since=1) == {c.id}
        assert pyir.dumps(back) == pyir.dumps(out)


def test_loaders_reject_misplaced_marks():
    """A payload whose edges put a reserved mark anywhere but first is a SerializationError."""
    import pytest

    from pyir.ir.lineage import INSTANCE_EDGE

    mod, share, expand, _ = _share_and_expand()
    out = expand(share(mod))
    doc = json.loads(pyir.to_json(out))
    edges = doc["history"][-1]["edges"]
    assert any(e[1][0] == INSTANCE_EDGE.hex() for e in edges)
    for change in (lambda e: e[1].pop(), lambda e: e[1].reverse(), lambda e: e.__setitem__(0, e[1][0])):
        bad = json.loads(json.dumps(doc))
        e = next(e for e in bad["history"][-1]["edges"] if e[1][0] == INSTANCE_EDGE.hex())
        change(e)
        with pytest.raises(pyir.SerializationError):
            pyir.from_json(json.dumps(bad))
        with pytest.raises(pyir.SerializationError):
            pyir.loads(pyir.dumps(_reject_hook(bad)))


def _reject_hook(doc):
    """The module of ``doc`` with its records' edges taken as they are, unvalidated (to write a
    binary payload with the same bad edges)."""
    from pyrsistent import pvector

    from pyir.ir.lineage import Edges, PassRecord

    mod = pyir.from_json(json.dumps({**doc, "history": []}))
    recs = []
    for r in doc["history"]:
        pairs = [(bytes.fromhex(n), [bytes.fromhex(o) for o in olds]) for n, olds in r["edges"]]
        edges = Edges.__new__(Edges)
        edges._init(b"".join(p[0] for p in pairs), b"".join(b"".join(p[1]) for p in pairs),
                    array("I", [len(p[1]) for p in pairs]).tobytes(), True)
        rec = PassRecord(r["name"], r["options"], (), [bytes.fromhex(i) for i in r["removed"]])
        object.__setattr__(rec, "edges", edges)
        recs.append(rec)
    return mod._derive(mod.functions(), history=pvector(recs))


def test_cycle_within_a_record_continues_into_earlier_records_with_typed_edges():
    """A pass that rebuilds a node it started from (ToBasicBlockNormalForm goes through graph
    form and back) records a chain returning to that node; with typed edges in the pipeline
    (FuseOps' shared edges), origins must go on from it through the earlier records, as with
    ordinary edges (found by the pipeline property: a let variable had no origins)."""
    from pyir.ir.traverse import post_order
    from pyir.transform import FuseOps, Sequential, ToANormalForm, ToBasicBlockNormalForm

    m = pyir.parse('''def @main(%p0: Tensor[(1, 2, 4, 4), float32]) {
      %0 = add(%p0, %p0);
      %1 = sum(%p0);
      %2 = sum(%0);
      %3 = greater(%1, %2);
      %4 = if (%3) { nn.relu(%p0) } else { negative(%0) };
      add(%0, add(%p0, %4))
    }''')
    out = Sequential([ToANormalForm(), ToBasicBlockNormalForm(), FuseOps()])(m)
    inp = {n.id for n in post_order(m["main"])}
    new = [n for n in post_order(out["main"]) if n.id not in inp]
    assert new and all(out.origins(n) and out.origins(n) <= inp for n in new)
