"""The snapshot store (issue 16 items 1-2): dedup in bytes, and put/get time per node.

* **pipeline**: a resnet-style module (``pyir.testing.resnet``) through ten passes (InferType,
  SimplifyInference, FoldConstant, SimplifyExpr, EliminateCommonSubexpr, FuseOps,
  ToANormalForm, ToGraphNormalForm, DeadCodeElimination, DefuseOps): the bytes of a store
  holding each stage alone, and of one store holding all eleven (the input and the ten
  outputs). Target: all stages <= 1.5x the largest stage alone.
* **light models**: each of the nine ONNX light models (``onnx`` ships them), imported and
  run through the standard pipeline: bytes of storing each model's stages, then the same
  models imported a second time (a new import: the same content ids, so no new node rows).
* **time**: put (into a new file) and get (from a new connection) in µs per node, against
  ``pyir.dumps`` / ``pyir.loads`` of the same module in the same run (CPU time, best of
  ``--rounds``): the last stage of the pipeline above (large weights), and a node-heavy
  resnet (256 blocks of 4 channels) before the passes (no history) and after them (its
  pass records' edges are rows too).

Bytes are the file's size after ``VACUUM`` (WAL checkpointed), so free pages do not count; the
light models' per-model deltas are pages in use (``page_count - freelist_count``).  The light
models ship constant-filled weights (``ConstantOfShape``), so equal tensors recur across
models: a model's stages can cost less than its last stage alone once earlier models stored
those blobs.

    python benchmarks/bench_store.py                # resnet(16 blocks, 64 channels), 3 rounds
    python benchmarks/bench_store.py --quick        # smaller resnet, 1 round, 3 light models
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from typing import Any

import pyir
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

TEN = [InferType(), SimplifyInference(), FoldConstant(), SimplifyExpr(), EliminateCommonSubexpr(), FuseOps(),
       ToANormalForm(), ToGraphNormalForm(), DeadCodeElimination(), DefuseOps()]
LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
         "squeezenet", "vgg19", "zfnet512"]


def stages(mod: pyir.Module, passes: list[Any]) -> list[pyir.Module]:
    out = [mod]
    for p in passes:
        out.append(p(out[-1]))
    return out


def file_bytes(path: str) -> int:
    """The store file's size once its WAL is checkpointed and free pages are vacuumed away."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode VACUUM writes the new file to the WAL
    db.close()
    return os.path.getsize(path)


def node_rows(path: str) -> int:
    db = sqlite3.connect(path)
    n = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
    db.close()
    return int(n)


def stored_bytes(tmp: str, mods: list[pyir.Module], tag: str) -> int:
    path = os.path.join(tmp, f"{tag}.db")
    with pyir.Store(path) as st:
        for m in mods:
            st.put(m, name=tag)
    return file_bytes(path)


def pipeline_report(tmp: str, blocks: int, channels: int, size: int) -> float:
    mod = pyir.testing.resnet(blocks, channels=channels, size=size)
    sts = stages(mod, TEN)
    print(f"pipeline: resnet({blocks} blocks, {channels} channels, {size}x{size}), 10 passes, 11 stages")
    alone = []
    for k, m in enumerate(sts):
        b = stored_bytes(tmp, [m], f"stage{k}")
        alone.append(b)
        name = m.pass_records[-1].name if m.pass_records else "(input)"
        print(f"  stage {k:2d} {name:22s} {pyir.count_nodes(m['main']):6d} nodes  {b:10,d} bytes alone")
    total = stored_bytes(tmp, sts, "all")
    ratio = total / max(alone)
    print(f"  all 11 stages in one store: {total:,d} bytes = {ratio:.2f}x the largest stage alone "
          f"({max(alone):,d}; target <= 1.5x); sum of the stages alone {sum(alone):,d} = "
          f"{sum(alone) / max(alone):.2f}x")
    return ratio


def used_bytes(path: str) -> int:
    """The bytes of the pages in use (page count less free pages), WAL included: no VACUUM needed."""
    db = sqlite3.connect(path)
    pages, free, size = (db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count",
                                                                            "page_size"))
    db.close()
    return int((pages - free) * size)


def light_report(tmp: str, names: list[str]) -> None:
    try:
        import onnx
    except ImportError:
        print("light models: onnx is not installed (skipped)")
        return
    from pyir.frontend.onnx import from_onnx

    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    path = os.path.join(tmp, "light.db")
    print("light models: import, the standard pipeline's 7 passes; every model's 8 stages into one store "
          "(bytes: pages in use)")
    sum_alone = 0
    with pyir.Store(path) as st:
        for name in names:
            mod = from_onnx(os.path.join(light, f"light_{name}.onnx"))
            sts = stages(mod, list(standard_pipeline().passes))
            alone = stored_bytes(tmp, [sts[-1]], f"alone_{name}")
            os.remove(os.path.join(tmp, f"alone_{name}.db"))
            sum_alone += alone
            rows0, b0 = node_rows(path), used_bytes(path)
            for m in sts:
                st.put(m, name=name)
            rows1, b1 = node_rows(path), used_bytes(path)
            again = from_onnx(os.path.join(light, f"light_{name}.onnx"))
            st.put(again, name=name + "-again")
            rows2, b2 = node_rows(path), used_bytes(path)
            st.put(pyir.loads(pyir.dumps(again)), name=name + "-loaded")
            rows3 = node_rows(path)
            print(f"  {name:13s} 8 stages {b1 - b0:12,d} bytes = {(b1 - b0) / alone:4.2f}x its last stage "
                  f"alone, {rows1 - rows0:5d} node rows; imported again: +{b2 - b1:9,d} bytes, "
                  f"+{rows2 - rows1} rows (of {len(_ids(again))}); the same module loaded again: "
                  f"+{rows3 - rows2} rows")
    total = used_bytes(path)
    print(f"  all models, all stages: {total:,d} bytes; their last stages alone, summed: {sum_alone:,d} "
          f"({total / sum_alone:.2f}x)")


def _ids(mod: pyir.Module) -> set[bytes]:
    return {n.id for n in pyir.serialize.binary._format_table([mod[k] for k in mod.names()])}


def best(fn: Any, rounds: int) -> float:
    out = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def time_report(tmp: str, label: str, mod: pyir.Module, rounds: int) -> None:
    n = len(pyir.serialize.binary._format_table([mod[k] for k in mod.names()]))
    edges = sum(len(r.edges) for r in mod.pass_records)
    k = [0]

    def put() -> None:
        k[0] += 1
        with pyir.Store(os.path.join(tmp, f"t{k[0]}.db")) as st:
            st.put(mod)

    path = os.path.join(tmp, "get.db")
    with pyir.Store(path) as st:
        sid = st.put(mod)

    def get() -> None:
        with pyir.Store(path) as st:
            st.get(sid)

    data = pyir.dumps(mod)
    t_put, t_get = best(put, rounds), best(get, rounds)
    t_dumps, t_loads = best(lambda: pyir.dumps(mod), rounds), best(lambda: pyir.loads(data), rounds)
    us = 1e6 / n
    print(f"time, {label}: {n} nodes, {len(mod.pass_records)} pass records with {edges} edges "
          f"(CPU, best of {rounds}; put into a new file, get from a new connection; the nodes are "
          "alive, so get and loads are intern hits alike):")
    print(f"  put  {t_put * us:7.1f} us/node   dumps {t_dumps * us:6.1f} us/node   "
          f"ratio {t_put / t_dumps:5.1f}x")
    print(f"  get  {t_get * us:7.1f} us/node   loads {t_loads * us:6.1f} us/node   "
          f"ratio {t_get / t_loads:5.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    blocks, channels, size = (4, 16, 8) if a.quick else (16, 64, 16)
    tmp = tempfile.mkdtemp(prefix="bench_store_")
    try:
        pipeline_report(tmp, blocks, channels, size)
        light_report(tmp, LIGHT[:3] if a.quick else LIGHT)
        rounds = 1 if a.quick else a.rounds
        weights = stages(pyir.testing.resnet(blocks, channels=channels, size=size), TEN)[-1]
        time_report(tmp, f"the last stage of the resnet({blocks}, {channels} channels) pipeline", weights,
                    rounds)
        nb = 32 if a.quick else 256
        many = stages(pyir.testing.resnet(nb, channels=4, size=4), TEN)
        time_report(tmp, f"resnet({nb} blocks, 4 channels), input (no history)", many[0], rounds)
        time_report(tmp, f"resnet({nb} blocks, 4 channels), last stage", many[-1], rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
