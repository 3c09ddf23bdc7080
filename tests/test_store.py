"""Tests of pyir.store: the content-addressed SQLite snapshot store (issue 16 items 1-2)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from test_serialize import _all_kinds_module

import pyir
from pyir import op
from pyir.errors import PyIRError, StoreError
from pyir.serialize.binary import _format_table
from pyir.store import Store
from pyir.transform import (
    DeadCodeElimination,
    DefuseOps,
    EliminateCommonSubexpr,
    FoldConstant,
    FuseOps,
    InferType,
    SimplifyExpr,
    SimplifyInference,
    ToANormalForm,
    ToGraphNormalForm,
    standard_pipeline,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEN = [InferType(), SimplifyInference(), FoldConstant(), SimplifyExpr(), EliminateCommonSubexpr(), FuseOps(),
       ToANormalForm(), ToGraphNormalForm(), DeadCodeElimination(), DefuseOps()]


def _stages(mod: pyir.Module, passes=TEN) -> list[pyir.Module]:
    out = [mod]
    for p in passes:
        out.append(p(out[-1]))
    return out


def _ids(mod: pyir.Module) -> set[bytes]:
    roots = [mod[k] for k in mod.names()] + list(mod.type_definitions().values())
    return {n.id for n in _format_table(roots)}


def _rows(path, table: str = "nodes") -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


def _file_bytes(path) -> int:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode VACUUM writes the new file to the WAL
    db.close()
    return os.path.getsize(path)


def _same_records(a: pyir.Module, b: pyir.Module) -> None:
    assert len(a.pass_records) == len(b.pass_records)
    for x, y in zip(a.pass_records, b.pass_records):
        assert (x.name, x.options, x.edges, x.removed, x.seconds) == \
               (y.name, y.options, y.edges, y.removed, y.seconds)
        assert (x.sources is None) == (y.sources is None)
        assert dict(x.sources or {}) == dict(y.sources or {})
        assert x.rules() == y.rules()


def _same(a: pyir.Module, b: pyir.Module) -> None:
    assert b.names() == a.names()
    for k in a.names():
        assert b[k] is a[k]
    assert dict(b.type_definitions()) == dict(a.type_definitions())
    _same_records(a, b)


@pytest.fixture(scope="module")
def resnet_stages() -> list[pyir.Module]:
    return _stages(pyir.testing.resnet(2))


# -- round trips -----------------------------------------------------------------------------------------


def test_round_trip_every_stage(tmp_path, resnet_stages) -> None:
    """put -> get gives the same module: the very node objects, the pass history, the lineage."""
    with Store(tmp_path / "s.db") as st:
        ids = [st.put(m) for m in resnet_stages]
        assert all(len(i) == 32 for i in ids)
        for k in range(1, len(ids)):  # a pass that changed nothing returns its input: the same snapshot
            assert (ids[k] == ids[k - 1]) == (resnet_stages[k] is resnet_stages[k - 1])
        for m, i in zip(resnet_stages, ids):
            back = st.get(i)
            _same(m, back)
            assert back.astext() == m.astext()
        assert st.check().ok


def test_round_trip_every_kind_symbolic_and_types(tmp_path) -> None:
    """Every node kind, attribute value kind and dtype; symbolic dimensions; type definitions."""
    kinds = _all_kinds_module()
    xs = pyir.var("xs", shape=("batch", pyir.sym("n") * 3 + 1, 8))
    sym = pyir.Module.from_expr(op.dyn.reshape(op.nn.relu(xs), op.shape_of(xs)))
    adt = pyir.with_prelude(pyir.Module.from_expr(op.nn.relu(pyir.var("x", shape=(2,)))))
    assert adt.type_definitions()
    with Store(tmp_path / "s.db") as st:
        for m in (kinds, sym, adt):
            _same(m, st.get(st.put(m)))
        assert st.check().ok


def test_round_trip_in_a_fresh_process(tmp_path) -> None:
    """Another process rebuilds the same ids (variables keep their uids) and the same text."""
    m = FuseOps()(pyir.testing.resnet(1))
    path = tmp_path / "s.db"
    with Store(path) as st:
        sid = st.put(m, name="m")
    code = ("import sys, pyir\nst = pyir.Store(sys.argv[1]); m = st.get('m')\n"
            "print(m['main'].id.hex()); print(len(m.pass_records)); print(m.astext() == sys.stdin.read())")
    out = subprocess.run([sys.executable, "-c", code, str(path)], input=m.astext(), capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": REPO}, timeout=120, check=True)
    assert out.stdout.split() == [m["main"].id.hex(), "1", "True"]
    assert sid


def test_incremental_put_writes_only_new_nodes(tmp_path) -> None:
    """A put writes exactly the nodes (and constant blobs) the file lacks; the same module again
    writes nothing and is the same snapshot."""
    m0 = pyir.testing.resnet(2)
    m1 = SimplifyInference()(m0)
    m2 = FoldConstant()(m1)
    path = tmp_path / "s.db"
    with Store(path) as st:
        a = st.put(m0)
        assert _rows(path) == len(_ids(m0))
        st.put(m1)
        assert _rows(path) == len(_ids(m0) | _ids(m1))
        blobs = _rows(path, "blobs")
        st.put(m2)
        assert _rows(path) == len(_ids(m0) | _ids(m1) | _ids(m2))
        assert _rows(path, "records") == 2
        before = (_rows(path), _rows(path, "blobs"), _rows(path, "snapshots"), _rows(path, "links"))
        assert st.put(m0) == a
        assert st.put(m2) == st.put(m2)
        assert (_rows(path), _rows(path, "blobs"), _rows(path, "snapshots"), _rows(path, "links")) == before
        assert _rows(path, "blobs") >= blobs
        # a big constant's bytes are stored once even when two constants of other shapes hold them
        w = np.arange(64, dtype="float32")
        m3 = pyir.Module.from_expr(op.add(pyir.const(w), pyir.const(w.reshape(8, 8))))
        nb = _rows(path, "blobs")
        st.put(m3)
        assert _rows(path, "blobs") == nb + 1


def test_refs_log_and_prefixes(tmp_path, resnet_stages) -> None:
    """Named refs move with each put (the previous snapshot becomes the parent); log follows
    parents newest first; ids resolve by unique prefix; unknown refs raise StoreError."""
    with Store(tmp_path / "s.db") as st:
        ids = [st.put(m, name="main") for m in resnet_stages[:4]]
        other = st.put(resnet_stages[0], name="other")
        assert other == ids[0]  # the same module with the same (no) parent: the same snapshot
        assert st.refs() == {"main": ids[-1], "other": other}
        log = st.log("main")
        assert [e.id for e in log] == ids[::-1]
        assert [e.parent for e in log] == [*ids[::-1][1:], None]
        assert log[0].names == ("main",)
        assert log[0].passes == tuple(r.name for r in resnet_stages[3].pass_records)
        assert log[-1].nodes == len(_ids(resnet_stages[0]))
        assert log[0].time >= log[-1].time
        assert {e.id for e in st.log()} == set(ids) | {other}
        assert st.get(ids[2][:10])["main"] is resnet_stages[2]["main"]
        assert st.get(ids[2].upper())["main"] is resnet_stages[2]["main"]
        explicit = st.put(resnet_stages[5], parent=ids[1])
        assert st.log(explicit)[1].id == ids[1]
        for bad in ("nope", "", "abc", 42, None):
            with pytest.raises(StoreError):
                st.get(bad)  # type: ignore[arg-type]
        with pytest.raises(StoreError):
            st.put("not a module")  # type: ignore[arg-type]
        assert "main" in str(log[0])


def test_diff(tmp_path, resnet_stages) -> None:
    """diff: the module diff of the rebuilt snapshots and the new/dropped node ids (SQL)."""
    a, b = resnet_stages[1], resnet_stages[3]
    with Store(tmp_path / "s.db") as st:
        ia, ib = st.put(a), st.put(b)
        d = st.diff(ia, ib)
        assert d.new == sorted(_ids(b) - _ids(a))
        assert d.dropped == sorted(_ids(a) - _ids(b))
        assert str(d.diff) == str(pyir.diff(a, b))
        same = st.diff(ia, ia)
        assert same.new == same.dropped == []


def _check_lineage(st: Store, stages: list[pyir.Module], ids: list[str], queries: list) -> int:
    n = 0
    for m, i in zip(stages, ids):
        for q in queries:
            assert st.find(i, q) == [x.id for x in m.find(q)]
            got, want = st.history(i, q), list(m.history(q))
            assert got == want and [s.rule for s in got] == [s.rule for s in want]
            n += 1
    return n


def test_find_and_history_agree_with_the_module(tmp_path, resnet_stages) -> None:
    """find/history over the stored edges answer what the rebuilt module answers, for the
    input's nodes (forward) and each stage's own nodes (backward), on the ten-pass pipeline."""
    with Store(tmp_path / "s.db") as st:
        ids = [st.put(m) for m in resnet_stages]
        first = [n for n in pyir.post_order(resnet_stages[0]["main"]) if not isinstance(n, pyir.Op)]
        assert _check_lineage(st, resnet_stages, ids, first) > 100
        for m, i in zip(resnet_stages, ids):
            own = list(pyir.post_order(m["main"]))[::3]
            _check_lineage(st, [m], [i], own)
        mod = st.get(ids[-1])
        assert st.history(ids[-1], first[5].id.hex()) == list(mod.history(first[5]))


def test_find_and_history_on_every_kind(tmp_path) -> None:
    """Lineage over the every-kind module through ANF, DCE and back (an operator as a value, an
    expression held by an attribute, a call of a global): the store agrees with the module."""
    m = _all_kinds_module()
    sts = _stages(m, [ToANormalForm(), DeadCodeElimination(), ToGraphNormalForm()])
    with Store(tmp_path / "s.db") as st:
        ids = [st.put(x) for x in sts]
        for x, i in zip(sts, ids):
            qs = list(pyir.post_order(list(m.functions().values()))) + \
                list(pyir.post_order(list(x.functions().values())))
            _check_lineage(st, [x], [i], qs)


def test_find_and_history_on_an_onnx_model(tmp_path) -> None:
    """The same on an imported ONNX model through the standard pipeline (frontend sources)."""
    onnx = pytest.importorskip("onnx")
    from pyir.frontend.onnx import from_onnx

    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    mod = from_onnx(os.path.join(light, "light_squeezenet.onnx"))
    sts = _stages(mod, list(standard_pipeline().passes))
    with Store(tmp_path / "s.db") as st:
        ids = [st.put(m) for m in sts]
        _same(sts[-1], st.get(ids[-1]))
        nodes = list(pyir.post_order(mod["main"]))
        rng = random.Random(1)
        _check_lineage(st, [sts[-1]], [ids[-1]], rng.sample(nodes, 40))
        last = list(pyir.post_order(sts[-1]["main"]))
        _check_lineage(st, [sts[-1]], [ids[-1]], rng.sample(last, 40))


def test_rule_names_survive(tmp_path) -> None:
    """The rewrite rules a pass fired are stored with its record: history names them."""
    x = pyir.var("x", shape=(2, 3))
    e = op.nn.relu(op.multiply(op.add(op.reshape(op.reshape(x, newshape=(3, 2)), newshape=(2, 3)),
                                      pyir.const(np.zeros((2, 3), "float32"))), pyir.const(1.0)))
    m = pyir.Module.from_expr(e)
    out = SimplifyExpr()(m)
    assert out.pass_records[0].rule_names
    with Store(tmp_path / "s.db") as st:
        sid = st.put(out)
        back = st.get(sid)
        _same(out, back)
        queries = list(pyir.post_order(m["main"])) + list(pyir.post_order(out["main"]))
        _check_lineage(st, [out], [sid], queries)
        assert any(s.rule for q in queries for s in st.history(sid, q))


# -- dedup, measured ---------------------------------------------------------------------------------------


def test_dedup_ten_pass_pipeline_ratio(tmp_path) -> None:
    """All eleven stages of a ten-pass pipeline on a resnet-style module cost at most 1.5x the
    bytes of storing its largest stage alone (file bytes after VACUUM)."""
    sts = _stages(pyir.testing.resnet(16, channels=4, size=4))
    alone = []
    for k, m in enumerate(sts):
        p = tmp_path / f"alone{k}.db"
        with Store(p) as st:
            st.put(m)
        alone.append(_file_bytes(p))
    p = tmp_path / "all.db"
    with Store(p) as st:
        for m in sts:
            st.put(m, name="main")
    total = _file_bytes(p)
    assert total <= 1.5 * max(alone), (total, alone)
    assert sum(alone) >= 5 * total  # without sharing it would be several times more


def test_dedup_light_models(tmp_path) -> None:
    """The stages of two light ONNX models store each shared subgraph once: a node row per
    distinct id, each weight's bytes once; importing a model again gives the same module (the
    importer derives its input variables from the graph) and adds no row; loading the same
    module again adds nothing either."""
    onnx = pytest.importorskip("onnx")
    from pyir.frontend.onnx import from_onnx

    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    path = tmp_path / "s.db"
    seen: set[bytes] = set()
    with Store(path) as st:
        for name in ("squeezenet", "shufflenet"):
            f = os.path.join(light, f"light_{name}.onnx")
            mod = from_onnx(f)
            sts = _stages(mod, list(standard_pipeline().passes))
            for m in sts:
                st.put(m, name=name)
                seen |= _ids(m)
            assert _rows(path) == len(seen)
            blobs, size = _rows(path, "blobs"), _file_bytes(path)
            again = from_onnx(f)
            assert again["main"] is mod["main"]
            st.put(again)
            consts = {n.id for n in _format_table([again["main"]]) if isinstance(n, pyir.Constant)}
            assert consts <= seen  # every weight (and folded constant) of the new import was stored
            assert _rows(path, "blobs") == blobs
            assert _rows(path) == len(seen)  # a re-import adds no node row
            assert _file_bytes(path) < size * 1.05
            seen |= _ids(again)
            rows = _rows(path)
            st.put(pyir.loads(pyir.dumps(again)))
            assert _rows(path) == rows


# -- processes: killed writers, concurrent writers ------------------------------------------------------

_WRITER = textwrap.dedent("""
    import sys, numpy as np, pyir
    from pyir import op
    st = pyir.Store(sys.argv[1])
    tag, count = sys.argv[2], int(sys.argv[3])
    shared = pyir.loads(open(sys.argv[4], "rb").read()) if len(sys.argv) > 4 else None
    for i in range(count):
        x = pyir.var("x", shape=(1, 64))
        h = x
        rng = np.random.default_rng(i)
        for k in range(60):
            h = op.nn.relu(op.add(h, pyir.const(rng.standard_normal((1, 64)).astype("float32"))))
        m = pyir.Module.from_expr(h)
        if shared is not None:
            m = m.with_function("shared", shared["main"])
        print("begin", flush=True)
        sid = st.put(m, name=f"{tag}-{i % 3}")
        open(sys.argv[1] + f".{tag}.{i}", "wb").write(pyir.dumps(m))
        print(sid, flush=True)
""")


def _writer(path, tag: str, count: int, *extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, str(count), *map(str, extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": REPO})


def test_killed_writer_loses_nothing_committed(tmp_path) -> None:
    """A writer SIGKILLed at random points of its put (seeded: after 1-3 commits, a random delay
    into the next put): the store opens, check() passes, and every snapshot whose put
    returned loads."""
    path = tmp_path / "s.db"
    rng = random.Random(16)
    committed: list[str] = []
    for run in range(3):
        p = _writer(path, f"w{run}", 1000)
        assert p.stdout is not None
        want = rng.randint(1, 3)
        while want >= 0:
            line = p.stdout.readline().strip()
            assert line, p.stderr.read() if p.stderr else ""
            if line == "begin":
                want -= 1
            else:
                committed.append(line)
        time.sleep(rng.uniform(0.0, 0.012))  # into the put that just began (a put takes ~13 ms)
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        committed += [w for w in out.split() if w != "begin"]  # printed after its commit, before the kill
    with Store(path) as st:
        rep = st.check()
        assert rep.ok, str(rep)
        assert rep.snapshots >= len(set(committed)) >= 3
        for sid in committed:
            assert st.get(sid)["main"].checked_type is not None


def test_concurrent_writers(tmp_path) -> None:
    """Three processes put different modules and one shared module into one file at once:
    every snapshot loads, with the ids the writers had; the shared nodes are stored once."""
    shared = FuseOps()(pyir.testing.resnet(1))
    sfile = tmp_path / "shared.bin"
    sfile.write_bytes(pyir.dumps(shared))
    path = tmp_path / "s.db"
    Store(path).close()
    procs = [_writer(path, f"p{k}", 4, sfile) for k in range(3)]
    reads = 0
    with Store(path) as reader:  # this process reads while they write (WAL: readers never block)
        while any(p.poll() is None for p in procs) and reads < 30:
            for sid in reader.refs().values():
                assert reader.get(sid)["shared"] is shared["main"]
                reads += 1
            time.sleep(0.05)
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append([w for w in out.split() if w != "begin"])
    assert all(len(o) == 4 for o in outs)
    with Store(path) as st:
        assert st.check().ok
        for k, o in enumerate(outs):
            for i, sid in enumerate(o):
                m = pyir.loads((tmp_path / f"s.db.p{k}.{i}").read_bytes())
                _same(m, st.get(sid))
                assert st.get(sid)["shared"] is shared["main"]
        assert sorted(st.refs()) == sorted(f"p{k}-{j}" for k in range(3) for j in range(3))
    db = sqlite3.connect(path)
    shared_ids = [(i,) for i in _ids(shared)]
    got = sum(db.execute("SELECT count(*) FROM nodes WHERE id = ?", r).fetchone()[0] for r in shared_ids)
    db.close()
    assert got == len(shared_ids)


# -- corruption --------------------------------------------------------------------------------------------


def _corrupt(path, sql: str, *args) -> None:
    db = sqlite3.connect(path)
    db.execute(sql, args)
    db.commit()
    db.close()


def _flip(b: bytes, at: int) -> bytes:
    return b[:at] + bytes([b[at] ^ 0x01]) + b[at + 1:]


def test_corrupted_rows_are_named(tmp_path) -> None:
    """A flipped byte in a node record, a blob, a variable's name, an edge; a deleted node row:
    check() names each bad row, and get() of a snapshot that uses it raises StoreError."""
    m = FoldConstant()(SimplifyInference()(pyir.testing.resnet(1)))
    for case in ("node", "blob", "var", "delete", "edge", "link", "kids"):
        path = tmp_path / f"{case}.db"
        with Store(path) as st:
            sid = st.put(m, name="m")
            assert st.check().ok
        db = sqlite3.connect(path)
        if case == "node":  # an operator call's attribute record
            nid, rec = db.execute("SELECT nid, rec FROM nodes WHERE kind = ? AND length(rec) > 8 LIMIT 1",
                                  (pyir.Attrs._code,)).fetchone()
            db.execute("UPDATE nodes SET rec = ? WHERE nid = ?", (_flip(rec, len(rec) - 1), nid))
            want = f"nodes row {nid}"
        elif case == "blob":
            bid, data = db.execute("SELECT bid, data FROM blobs LIMIT 1").fetchone()
            db.execute("UPDATE blobs SET data = ? WHERE bid = ?", (_flip(data, 3), bid))
            want = f"blobs row {bid}"
        elif case == "var":
            nid, rec = db.execute("SELECT nid, rec FROM nodes WHERE kind = ?", (pyir.Var._code,)).fetchone()
            db.execute("UPDATE nodes SET rec = ? WHERE nid = ?", (_flip(rec, len(rec) - 1), nid))
            want = f"nodes row {nid}"
        elif case == "delete":
            nid = db.execute("SELECT nid FROM nodes WHERE kind = ? LIMIT 1", (pyir.Call._code,)).fetchone()[0]
            db.execute("DELETE FROM nodes WHERE nid = ?", (nid,))
            want = f"node row {nid}"
        elif case == "edge":
            rid, news = db.execute("SELECT rid, news FROM records LIMIT 1").fetchone()
            db.execute("UPDATE records SET news = ? WHERE rid = ?", (_flip(news, 0), rid))
            want = f"records row {rid}"
        elif case == "link":
            rid, e = db.execute("SELECT rid, e FROM links LIMIT 1").fetchone()
            db.execute("DELETE FROM links WHERE rid = ? AND e = ?", (rid, e))
            want = f"records row {rid}"
        else:
            parent = db.execute("SELECT parent FROM kids WHERE pos = 1 LIMIT 1").fetchone()[0]
            db.execute("DELETE FROM kids WHERE parent = ? AND pos = 1", (parent,))
            want = f"nodes row {parent}"
        db.commit()
        db.close()
        with Store(path) as st:
            rep = st.check()
            assert not rep.ok and any(want in p for p in rep.problems), (case, rep.problems)
            assert any("snapshots row 1" in p for p in rep.problems), (case, rep.problems)
            with pytest.raises(StoreError):
                rep.raise_if_bad()
            if case != "link":  # get() does not read the links (lineage queries do)
                with pytest.raises(StoreError):  # every row is checked against its id, live nodes or not
                    st.get(sid)


def test_mutated_rows_raise_store_error_only(tmp_path) -> None:
    """Seeded byte flips and truncations of node records, redirected references, changed pass
    record rows: get() either rebuilds the very same module or raises StoreError, never
    anything else."""
    m = FuseOps()(SimplifyInference()(pyir.testing.resnet(1)))
    path = tmp_path / "s.db"
    with Store(path) as st:
        sid = st.put(m)
    rng = random.Random(7)
    db = sqlite3.connect(path, isolation_level=None)
    nodes = db.execute("SELECT nid, rec FROM nodes").fetchall()
    kids = db.execute("SELECT parent, pos, child FROM kids").fetchall()
    edges = db.execute("SELECT rid, olds FROM records").fetchall()
    raised = 0
    for k in range(60):
        what = k % 3
        if what == 0:
            nid, rec = rng.choice(nodes)
            at = rng.randrange(len(rec))
            undo: tuple = ("UPDATE nodes SET rec = ? WHERE nid = ?", (rec, nid))
            db.execute(undo[0], (rec[:at] if rng.random() < 0.2 else _flip(rec, at), nid))
        elif what == 1:
            parent, pos, child = rng.choice(kids)
            undo = ("UPDATE kids SET child = ? WHERE parent = ? AND pos = ?", (child, parent, pos))
            db.execute(undo[0], (rng.choice(kids)[2] if rng.random() < 0.5 else child + 1, parent, pos))
        else:
            rid, olds = rng.choice(edges)
            undo = ("UPDATE records SET olds = ? WHERE rid = ?", (olds, rid))
            db.execute(undo[0], (_flip(olds, rng.randrange(len(olds))), rid))
        with Store(path) as st:
            try:
                assert st.get(sid)["main"] is m["main"]
            except StoreError:
                raised += 1
        db.execute(*undo)
    db.close()
    with Store(path) as st:
        assert st.check().ok
    assert raised >= 50, raised


def test_not_a_store_and_closed(tmp_path) -> None:
    """A file that is not SQLite, a closed store, bad cache arguments: StoreError (a PyIRError)."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError):
        Store(junk)
    st = Store(tmp_path / "s.db")
    st.close()
    with pytest.raises(StoreError):
        st.refs()
    assert issubclass(StoreError, PyIRError) and issubclass(StoreError, ValueError)


# -- the cache table, pickling -----------------------------------------------------------------------------


def test_cache_table_and_pickle(tmp_path) -> None:
    import pickle

    with Store(tmp_path / "s.db") as st:
        assert st.cache_load(b"k") is None
        st.cache_save(b"k", b"v1")
        st.cache_save(b"k", b"v2")
        assert st.cache_load(b"k") == b"v2"
        with pytest.raises(StoreError):
            st.cache_save("k", b"v")  # type: ignore[arg-type]
        again = pickle.loads(pickle.dumps(st))
        assert again.path == st.path and again.cache_load(b"k") == b"v2"
        again.close()


# -- depth ---------------------------------------------------------------------------------------------------


def test_chain_of_10_4_put_get(tmp_path) -> None:
    """A 10^4-deep chain (three times CI's recursion limit) puts and gets without recursion."""
    m = pyir.testing.elementwise_chain(10_000)
    with Store(tmp_path / "s.db") as st:
        assert st.get(st.put(m))["main"] is m["main"]


@pytest.mark.slow
def test_deep_chain_10_6_put_get(tmp_path, deep_chain) -> None:
    """The 10^6-deep chain puts and gets (no Python recursion proportional to depth)."""
    with Store(tmp_path / "s.db") as st:
        sid = st.put(deep_chain)
        assert st.get(sid)["main"] is deep_chain["main"]
