"""FuseOps on the benchmarks' workloads, against a golden file: the printed output and the lineage.

The workloads are small versions of those of ``benchmarks/bench_vs_tvm.py`` (resnet-style blocks:
conv2d -> add(bias) -> relu -> conv2d -> add(bias) -> add(residual) -> relu, weights as typed
parameters, relus after the last block) and ``benchmarks/bench_build.py`` (transformer blocks: dense,
add, reshape, transpose, matmul, multiply by a constant, softmax, layer_norm, relu), built by the
constructors.  For each workload and set of options the golden file holds the output as
``astext()`` prints it and the pass's derivation edges, every id written as ``in:i`` / ``out:i``
(the position of its node in a post-order of the input / output module, parameters included) or
``SHARED`` / ``INSTANCE`` for the marks of typed edges, in the order the pass recorded them.
Each case also checks that DefuseOps restores the input exactly.

Regenerate after an intended change of output (review the diff)::

    python tests/transform/test_fuse_ops_workloads.py --regen
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.ir.lineage import INSTANCE_EDGE, SHARED_EDGE
from pyir.transform import DefuseOps, FuseOps

GOLDEN = Path(__file__).resolve().parent / "fuse_ops_workloads.txt"
F32 = "float32"


def resnet(blocks: int, tail: int, c: int = 4, hw: int = 4) -> pyir.Module:
    T = pyir.TensorType
    x = pyir.Var("x", T((1, c, hw, hw), F32))
    params = [x]
    h: pyir.Expr = x
    for b in range(blocks):
        w1, w2 = (pyir.Var(f"w{b}_{i}", T((c, c, 3, 3), F32)) for i in (1, 2))
        b1, b2 = (pyir.Var(f"b{b}_{i}", T((1, c, 1, 1), F32)) for i in (1, 2))
        params += [w1, b1, w2, b2]
        t = op.nn.relu(op.add(op.nn.conv2d(h, w1, padding=(1, 1)), b1))
        t = op.add(op.add(op.nn.conv2d(t, w2, padding=(1, 1)), b2), h)
        h = op.nn.relu(t)
    for _ in range(tail):
        h = op.nn.relu(h)
    return pyir.Module({"main": pyir.Function(params, h)})


def transformer(blocks: int, tail: int, s: int = 4, d: int = 8, heads: int = 2) -> pyir.Module:
    T = pyir.TensorType
    dh = d // heads
    x = pyir.Var("x", T((s, d), F32))
    scale = pyir.const(np.float32(1.0 / np.sqrt(dh)))
    params = [x]
    h: pyir.Expr = x
    for b in range(blocks):
        w = [pyir.Var(f"{name}{b}", T(shape, F32)) for name, shape in (
            ("wq", (d, d)), ("bq", (d,)), ("wk", (d, d)), ("bk", (d,)), ("wv", (d, d)), ("bv", (d,)),
            ("wo", (d, d)), ("bo", (d,)), ("g1", (d,)), ("e1", (d,)), ("w1", (4 * d, d)),
            ("b1", (4 * d,)), ("w2", (d, 4 * d)), ("b2", (d,)), ("g2", (d,)), ("e2", (d,)))]
        params += w
        wq, bq, wk, bk, wv, bv, wo, bo, g1, e1, w1, b1, w2, b2, g2, e2 = w
        q = op.transpose(op.reshape(op.add(op.nn.dense(h, wq), bq), newshape=(s, heads, dh)), axes=(1, 0, 2))
        k = op.transpose(op.reshape(op.add(op.nn.dense(h, wk), bk), newshape=(s, heads, dh)), axes=(1, 2, 0))
        v = op.transpose(op.reshape(op.add(op.nn.dense(h, wv), bv), newshape=(s, heads, dh)), axes=(1, 0, 2))
        p = op.nn.softmax(op.multiply(op.matmul(q, k), scale), axis=-1)
        o = op.reshape(op.transpose(op.matmul(p, v), axes=(1, 0, 2)), newshape=(s, d))
        a = op.nn.layer_norm(op.add(op.add(op.nn.dense(o, wo), bo), h), g1, e1, axis=-1, epsilon=1e-5)
        f = op.add(op.nn.dense(op.nn.relu(op.add(op.nn.dense(a, w1), b1)), w2), b2)
        h = op.nn.layer_norm(op.add(f, a), g2, e2, axis=-1, epsilon=1e-5)
    for _ in range(tail):
        h = op.nn.relu(h)
    return pyir.Module({"main": pyir.Function(params, h)})


WORKLOADS = {"resnet": lambda: resnet(3, 2), "transformer": lambda: transformer(2, 1)}
OPTIONS = {"default": {}, "own_functions": {"share_functions": False},
           "max_fuse_depth_2": {"max_fuse_depth": 2}, "opt_level_0": {"fuse_opt_level": 0}}
CASES = [(w, o) for w in WORKLOADS for o in OPTIONS]


def _positions(mod: pyir.Module, side: str) -> dict[bytes, str]:
    pos: dict[bytes, str] = {}
    for n in pyir.post_order(mod["main"]):
        pos.setdefault(n.id, f"{side}:{len(pos)}")
        if isinstance(n, pyir.Function):
            for p in n.params:
                pos.setdefault(p.id, f"{side}:{len(pos)}")
    return pos


def run_case(workload: str, options: str, typed: bool = False) -> str:
    """The golden text of one case: the printed output, then the edges."""
    mod = WORKLOADS[workload]()
    if typed:
        pyir.transform.InferType()(mod)  # types cached on the nodes: FuseOps reads them
    out = FuseOps(**OPTIONS[options])(mod)
    assert DefuseOps()(out)["main"] is mod["main"]
    before, after = _positions(mod, "in"), _positions(out, "out")
    marks = {SHARED_EDGE: "SHARED", INSTANCE_EDGE: "INSTANCE"}

    def name(i: bytes) -> str:
        return marks.get(i) or after.get(i) or before.get(i) or "?"

    lines = [f"=== {workload} {options}", out.astext().rstrip("\n"), "--- edges"]
    lines += [f"{name(new)} <- {' '.join(name(o) for o in olds)}" for new, olds in out.pass_records[-1].edges]
    return "\n".join(lines) + "\n"


def _golden() -> dict[tuple[str, str], str]:
    cases: dict[tuple[str, str], str] = {}
    for chunk in GOLDEN.read_text().split("=== ")[1:]:
        workload, options = chunk.split("\n", 1)[0].split()
        cases[workload, options] = "=== " + chunk
    return cases


@pytest.mark.parametrize("workload,options", CASES, ids=[f"{w}-{o}" for w, o in CASES])
def test_fuse_ops_workload_golden(workload: str, options: str) -> None:
    expected = _golden()[workload, options]
    assert run_case(workload, options) == expected
    assert run_case(workload, options, typed=True) == expected  # typed input: the same output


def test_golden_covers_every_case() -> None:
    assert sorted(_golden()) == sorted(CASES)
    assert all("?" not in text.split("--- edges")[1].split() for text in _golden().values())


if __name__ == "__main__" and sys.argv[1:] == ["--regen"]:
    GOLDEN.write_text("".join(run_case(w, o) for w, o in CASES))
    print(f"wrote {GOLDEN}")
