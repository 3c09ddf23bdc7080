"""Incremental re-runs with PassCache: the standard pipeline on a multi-function module, a full
run against a warm re-run after editing one function, in one process (CPU seconds, ratios).

    nice python benchmarks/bench_pass_cache.py            # 20 functions of ~500 ops, ~10^4 ops
    nice python benchmarks/bench_pass_cache.py --quick    # 5 functions of ~100 ops

The module: ``--funcs`` functions, each a ResNet-style network of ``--blocks`` residual blocks
(conv-bn-relu-conv-bn-add-relu, about 9 calls a block), and ``main`` calling them all.  Each
repeat edits one function twice, with two fresh functions of the same size (so that neither
run finds types already cached on its nodes): the uncached pipeline runs on one edit, the
cached pipeline (its cache warm from a run on the unedited module) on the other.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

import pyir
from pyir import op
from pyir.ir.expr import Call, Function, GlobalVar
from pyir.transform import PassCache, standard_pipeline


def leaf(blocks: int, seed: int) -> Function:
    return pyir.testing.resnet(blocks, channels=4, size=4, seed=seed)["main"]


def module(funcs: int, blocks: int) -> pyir.Module:
    x = pyir.var("x", shape=(1, 3, 4, 4))
    fs = {f"f{i:02d}": leaf(blocks, i) for i in range(funcs)}
    body: Any = Call(GlobalVar("f00"), [x])
    for i in range(1, funcs):
        body = op.add(body, Call(GlobalVar(f"f{i:02d}"), [x]))
    fs["main"] = Function([x], body)
    return pyir.Module(fs)


def cpu(f: Any) -> tuple[float, Any]:
    gc.collect()
    t0 = time.process_time()
    r = f()
    return time.process_time() - t0, r


def same(a: pyir.Module, b: pyir.Module) -> bool:
    def rows(m: pyir.Module) -> list[Any]:
        return [(r.name, r.options, list(r.edges), r.removed, r.rules()) for r in m.pass_records]
    return a.names() == b.names() and all(a[n] is b[n] for n in a.names()) and rows(a) == rows(b)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--funcs", type=int, default=20)
    ap.add_argument("--blocks", type=int, default=55)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.funcs, a.blocks, a.repeats = 5, 11, 2
    mod = module(a.funcs, a.blocks)
    nodes = pyir.post_order(list(mod.functions().values()))
    calls = sum(isinstance(n, Call) for n in nodes)
    pipe = standard_pipeline()
    print(f"{a.funcs} functions x {a.blocks} blocks + main: {calls:,} calls, {len(nodes):,} nodes; "
          f"standard pipeline ({len(pipe.passes)} passes); CPU seconds, best of {a.repeats}")
    t_full, t_cold, t_warm, t_edit_full, t_edit_cached, t_edit_decoded = [], [], [], [], [], []
    seed = 1000
    for _ in range(a.repeats):
        fresh = module(a.funcs, a.blocks)  # new functions: nothing typed on them yet
        t, _ = cpu(lambda: pipe(fresh))
        t_full.append(t)
        fresh2 = module(a.funcs, a.blocks)
        cache = PassCache()
        t, out = cpu(lambda: pipe(fresh2, cache=cache))
        t_cold.append(t)
        t, warm = cpu(lambda: pipe(fresh2, cache=cache))
        t_warm.append(t)
        assert warm.astext() == out.astext()
        e1 = fresh.with_function("f07" if a.funcs > 7 else "f01", leaf(a.blocks, seed))
        e2 = fresh2.with_function("f07" if a.funcs > 7 else "f01", leaf(a.blocks, seed + 1))
        seed += 2
        t, _ = cpu(lambda: pipe(e1))
        t_edit_full.append(t)
        cache.hits = cache.misses = 0
        t, got = cpu(lambda: pipe(e2, cache=cache))
        t_edit_cached.append(t)
        hits, misses = cache.hits, cache.misses
        assert same(got, pipe(e2)), "cached result differs from an uncached run"
        # the same hits decoded from the bytes (live=0), as a new process over a store pays
        e3 = fresh2.with_function("f07" if a.funcs > 7 else "f01", leaf(a.blocks, seed + 99))
        cold_bytes = PassCache(cache.backend, live=0)
        t, got = cpu(lambda: pipe(e3, cache=cold_bytes))
        t_edit_decoded.append(t)
    full, cold, warm_t = min(t_full), min(t_cold), min(t_warm)
    ef, ec = min(t_edit_full), min(t_edit_cached)
    print(f"{'full run, uncached':<46} {full:8.2f} s")
    print(f"{'full run filling a PassCache (cold)':<46} {cold:8.2f} s   {cold / full:5.2f}x the uncached run")
    print(f"{'re-run, nothing changed (warm)':<46} {warm_t:8.2f} s   1/{full / warm_t:.0f} of the full run")
    print(f"{'one function edited: uncached full run':<46} {ef:8.2f} s")
    print(f"{'one function edited: warm cached run':<46} {ec:8.2f} s   1/{ef / ec:.1f} of the full run "
          f"({hits} hits, {misses} misses: the edited function; main keys on its callees' types)")
    ed = min(t_edit_decoded)
    print(f"{'... the same, every hit decoded (live=0)':<46} {ed:8.2f} s   1/{ef / ed:.1f} of the full run")


if __name__ == "__main__":
    main()
