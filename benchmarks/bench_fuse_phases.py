"""Where FuseOps spends its time: CPU µs per op of each phase, as ratios to a plain walk.

The workloads are ``bench_vs_tvm.py``'s (resnet, chain, shared; fresh builds, so type inference is
part of the pass, as in that benchmark).  Phases, each timed alone on a fresh build (CPU time,
``time.process_time``: the machine may be shared), best of ``--repeats``:

  walk       the partitioner's walk and dataflow graph (``_Partition(body)``)
  types      ``TypeContext.check`` along that walk (``_types_along``)
  partition  post-dominator tree, the three rounds, groups' roots and members
  pass       the whole pass, ``FuseOps()(mod)`` (the three above, the groups' functions and
             calls, lineage, the new module and its record)
  typed      the whole pass on a module whose types were inferred before (``InferType``)

The baseline is a plain dict-memoized iterative post-order walk of the same body, measured in the
same run; "x walk" is each phase's time over it.

    python benchmarks/bench_fuse_phases.py                      # resnet, 10^4 ops
    python benchmarks/bench_fuse_phases.py --shapes resnet,chain,shared --sizes 1000,10000
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_vs_tvm import PYIR_BUILDERS

import pyir
from pyir.analysis.typecheck import TypeContext
from pyir.transform import FuseOps, InferType
from pyir.transform import fuse_ops as _fo


def plain_walk(root: Any) -> int:
    """Baseline: iterative post-order with a dict memo (no rebuilding)."""
    memo: dict = {}
    stack = [root]
    while stack:
        n = stack[-1]
        if n in memo:
            stack.pop()
            continue
        pending = [c for c in n.children() if c not in memo]
        if pending:
            stack.extend(pending)
        else:
            memo[n] = True
            stack.pop()
    return len(memo)


def cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def phases(mod: pyir.Module) -> dict[str, float]:
    """The walk, types and partition of ``mod``'s main function (fresh: nothing typed yet)."""
    t: dict[str, float] = {}
    func = mod["main"]
    types = TypeContext.of(mod)
    gc.disable()
    try:
        t["walk"], part = cpu(lambda: _fo._Partition(func.body))
        t["types"], tys = cpu(lambda: _fo._types_along(func, part.work, types))
        t["partition"], _ = cpu(lambda: part.partition(_fo._TypeOf(tys, types), True, _fo.MAX_FUSE_DEPTH))
    finally:
        gc.enable()
    return t


def whole(mod: pyir.Module) -> float:
    """The whole pass on ``mod`` (its result kept while timed: its freeing is not timed)."""
    sec, _ = cpu(lambda: FuseOps()(mod))
    return sec


def one_round(build: Callable[[int], pyir.Module], n: int) -> dict[str, float]:
    t: dict[str, float] = {}
    body = build(n)["main"].body
    t["plain walk"] = cpu(lambda: plain_walk(body))[0]
    t.update(phases(build(n)))
    t["pass"] = whole(build(n))
    t["typed"] = whole(InferType()(build(n)))
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="resnet", help="comma-separated: resnet,chain,shared")
    ap.add_argument("--sizes", default="10000", help="comma-separated op counts")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    for shape in a.shapes.split(","):
        build = PYIR_BUILDERS[shape]
        for n in (int(s) for s in a.sizes.split(",")):
            best: dict[str, float] = {}
            for _ in range(a.repeats):
                for k, v in one_round(build, n).items():
                    best[k] = min(best.get(k, float("inf")), v)
            base = best["plain walk"]
            print(f"\n### FuseOps phases, {shape}, N = {n:,}: CPU µs per op, best of {a.repeats}\n")
            print("| phase | µs/op | x walk |\n|---|---|---|")
            for k, v in best.items():
                print(f"| {k} | {v * 1e6 / n:.2f} | {v / base:.2f} |")


if __name__ == "__main__":
    main()
