"""The compact lineage indexes (issue 10: 10^6-deep memory) and the lineage a rewrite must
keep for what it consumes (issue 13 bug 8), checked by ``pyir.testing.check_pass``."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.ir.lineage import INSTANCE_EDGE, SHARED_EDGE, PassRecord, _IdIndex


def _ids(n: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(16) for _ in range(n)]


def test_id_index_finds_every_position_including_near_collisions() -> None:
    base = _ids(300)
    # same first 8 bytes, different last 8; trailing zero bytes; a repeated id
    tricky = [base[0][:8] + bytes(8), base[0][:8] + b"\x01" * 8, bytes(16), b"\x00" * 15 + b"\x01",
              base[5]]
    blob_ids = base + tricky
    ix = _IdIndex(b"".join(blob_ids))
    for i in set(blob_ids):
        assert ix.positions(i) == [p for p, j in enumerate(blob_ids) if j == i]
        assert ix.first(i)
    for missing in _ids(50, seed=1):
        assert ix.positions(missing) == [] and not ix.first(missing)
    for bad in [b"", b"x" * 15, b"x" * 17, "x" * 16, 7, None]:
        assert ix.positions(bad) == [] and not ix.first(bad)
    assert list(ix.unique()) == list(dict.fromkeys(blob_ids))
    empty = _IdIndex(b"")
    assert empty.positions(base[0]) == [] and list(empty.unique()) == []


def test_back_and_fwd_match_a_dict_built_from_the_edges() -> None:
    rng = random.Random(3)
    ids = _ids(60, seed=2)
    edges = []
    for _ in range(400):
        new = rng.choice(ids)
        olds = tuple(rng.choice(ids) for _ in range(rng.randint(1, 3)))
        edges.append((new, olds))
    rec = PassRecord("p", "", edges, ())
    back: dict[bytes, list[bytes]] = {}
    fwd: dict[bytes, list[bytes]] = {}
    for new, olds in edges:
        back.setdefault(new, []).extend(olds)
        for o in olds:
            fwd.setdefault(o, []).append(new)
    want_back = {k: tuple(dict.fromkeys(v)) for k, v in back.items()}
    want_fwd = {k: tuple(dict.fromkeys(v)) for k, v in fwd.items()}
    assert dict(rec.back) == want_back and dict(rec.fwd) == want_fwd
    assert len(rec.back) == len(want_back) and len(rec.fwd) == len(want_fwd)
    assert list(rec.back) == list(want_back)  # first-edge order, as before
    for i in _ids(20, seed=9):
        assert i not in rec.back and rec.back.get(i) is None
        with pytest.raises(KeyError):
            rec.back[i]


def test_typed_record_views() -> None:
    x, b_, s, m1, m2, p = (bytes([i]) * 16 for i in range(1, 7))
    rec = PassRecord("P", "", ((p, (m1,)), (b_, (SHARED_EDGE, m1, m2)), (x, (INSTANCE_EDGE, b_, s)),
                               (x, (m2,))), ())
    fwd, shr, by_body, by_site = rec._qfwd()
    assert fwd.get(m1) == (p,) and fwd.get(m2) == (x,) and shr.get(m1) == (b_,) and shr.get(m2) == (b_,)
    assert by_body.get(b_) == [s, x] and by_site.get(s) == [b_, x]
    assert m1 not in by_body and b_ not in shr and b_ not in fwd and s not in fwd
    q = rec._qback()
    assert q[x] == [(INSTANCE_EDGE, b_, s), (m2,)] and q[b_] == (SHARED_EDGE, m1, m2)
    assert rec.back[x] == (b_, s, m2) and INSTANCE_EDGE not in rec.fwd


def test_queries_through_a_pipeline_agree_with_the_edges() -> None:
    mod = pyir.testing.elementwise_chain(300)
    out = pyir.transform.Sequential([pyir.transform.ToANormalForm(), pyir.transform.FuseOps(),
                                     pyir.transform.DefuseOps(), pyir.transform.ToGraphNormalForm()])(mod)
    x = mod["main"].params[0]
    body = mod["main"].body
    assert out.find(x) == [x]
    assert [n.id for n in out.find(body)] == [out["main"].body.id]
    assert body.id in out.origins(out["main"].body)
    assert out.history(out["main"].body)


# -- lineage of consumed nodes (issue 13 bug 8) ------------------------------------------------


def _layout_program() -> tuple[pyir.Module, dict[str, pyir.Expr]]:
    x = pyir.var("x", shape=(2, 3, 4))
    r1 = op.reshape(x, newshape=(6, 4))
    r2 = op.reshape(r1, newshape=(4, 6))
    y = op.nn.relu(r2)
    c0 = pyir.const(0.0)
    z = op.add(y, c0)
    t1 = op.transpose(z, axes=(1, 0))
    t2 = op.transpose(t1, axes=(1, 0))
    mod = pyir.Module({"main": pyir.Function([x], op.exp(t2))})
    return mod, {"r1": r1, "r2": r2, "c0": c0, "z": z, "t1": t1, "t2": t2}


def test_simplify_expr_keeps_what_its_merges_consume() -> None:
    mod, nodes = _layout_program()
    out = pyir.testing.check_pass(pyir.transform.SimplifyExpr(), mod)
    present = set(pyir.ir.traverse.post_order(out["main"]))
    for name, e in nodes.items():
        hits = out.find(e)
        assert hits and all(h in present for h in hits), name
        steps = out.history(e)
        assert steps and steps[-1].after in {n.id for n in present}, name
    merged = out.find(nodes["r1"])[0]
    assert merged.op.name == "reshape" and merged.args[0] is mod["main"].params[0]


@dataclasses.dataclass(frozen=True)
class _Forgetful(pyir.transform.FunctionPass):
    """A broken pass: rewrites reshape(reshape(x)) to reshape(x) recording only the outer edge."""

    def transform_function(self, func, mod, name):  # type: ignore[no-untyped-def]
        body = func.body
        inner = body.args[0]
        new = op.reshape(inner.args[0], newshape=body.attrs["newshape"])
        pyir.derive(new, body)
        return pyir.derive(func.with_body(new), func)


def test_check_pass_catches_a_consumed_node_without_lineage() -> None:
    x = pyir.var("x", shape=(2, 3, 4))
    mod = pyir.Module({"main": pyir.Function(
        [x], op.reshape(op.reshape(x, newshape=(6, 4)), newshape=(4, 6)))})
    with pytest.raises(AssertionError, match="neither in the output, nor found again"):
        pyir.testing.check_pass(_Forgetful(), mod, idempotent=False)


@pytest.mark.parametrize("pass_", [pyir.transform.ToANormalForm(), pyir.transform.ToGraphNormalForm()])
def test_normal_forms_eliminate_the_unused_lets_they_drop(pass_: pyir.transform.FunctionPass) -> None:
    p0 = pyir.var("p0", shape=(2,))
    t0, t1, t2 = (pyir.var(f"t{i}") for i in range(3))
    dead = op.add(p0, p0)
    dead2 = op.exp(op.multiply(t0, p0))
    live = op.negative(p0)
    body = pyir.Let(t0, dead, pyir.Let(t1, dead2, pyir.Let(t2, live, t2)))
    mod = pyir.Module({"main": pyir.Function([p0], body)})
    out = pyir.testing.check_pass(pass_, mod)
    rec = out.pass_records[-1]
    for e in (dead, dead2, dead2.args[0]):
        assert e.id in rec.removed and out.find(e) == []
    assert live.id not in rec.removed and out.find(live)
    np.testing.assert_allclose(pyir.evaluate(out, np.ones(2, "float32")), -np.ones(2, "float32"))
    assert pyir.transform.ToBasicBlockNormalForm()(mod) is mod  # already in basic blocks: kept as is
