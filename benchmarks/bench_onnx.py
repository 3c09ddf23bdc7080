"""ONNX import and pipeline costs on the light models shipped with onnx.

For each model of ``onnx/backend/test/data/light``: the import time, the time
of the standard pipeline, the tracemalloc peak of import + pipeline (the
models' constant weights included), the number of IR nodes and fused groups,
and the evaluation time of the imported module (numpy reference interpreter).

    python benchmarks/bench_onnx.py            # every model
    python benchmarks/bench_onnx.py resnet50   # models whose name contains the word
"""

from __future__ import annotations

import gc
import glob
import os
import sys
import time
import tracemalloc

import numpy as np
import onnx

import pyir
from pyir.frontend.onnx import from_onnx
from pyir.transform import standard_pipeline
from pyir.transform.base import Sequential

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def pipeline() -> Sequential:
    """The standard pipeline."""
    return standard_pipeline()


def measure(path: str) -> dict[str, float]:
    """Figures for one model file."""
    model = onnx.load(path)
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    mod = from_onnx(model)
    t1 = time.perf_counter()
    import_peak = tracemalloc.get_traced_memory()[1]
    fused = pipeline()(mod)
    t2 = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    groups = sum(1 for n in pyir.post_order(fused["main"]) if isinstance(n, pyir.Call)
                 and isinstance(n.op, pyir.Function))
    shape = mod["main"].params[0].type_annotation.shape
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    t3 = time.perf_counter()
    pyir.evaluate(mod, x)
    t4 = time.perf_counter()
    return {"onnx_nodes": len(model.graph.node), "ir_nodes": pyir.count_nodes(mod["main"]),
            "import_ms": (t1 - t0) * 1e3, "pipeline_ms": (t2 - t1) * 1e3,
            "import_peak_mb": import_peak / 2**20, "peak_mb": peak / 2**20, "groups": groups,
            "eval_s": t4 - t3}


def main() -> None:
    """Print the table."""
    words = sys.argv[1:]
    paths = [p for p in sorted(glob.glob(os.path.join(LIGHT, "*.onnx")))
             if not words or any(w in os.path.basename(p) for w in words)]
    head = (f"{'model':<16} {'onnx':>5} {'ir':>6} {'import ms':>10} {'pipeline ms':>12} "
            f"{'import MB':>10} {'peak MB':>8} {'groups':>7} {'eval s':>7}")
    print(head)
    print("-" * len(head))
    for p in paths:
        r = measure(p)
        name = os.path.basename(p)[len("light_"):-len(".onnx")]
        print(f"{name:<16} {r['onnx_nodes']:>5} {r['ir_nodes']:>6} {r['import_ms']:>10.1f} "
              f"{r['pipeline_ms']:>12.1f} {r['import_peak_mb']:>10.1f} {r['peak_mb']:>8.1f} "
              f"{r['groups']:>7} {r['eval_s']:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
