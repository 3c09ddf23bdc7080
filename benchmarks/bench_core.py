"""Core costs: interned construction, memory per node, module copy.

Every figure is a ratio against a baseline built in the same run (a plain
``__slots__`` class with the same fields: op, args, attrs), alternating the
two so machine noise hits both alike.

    python benchmarks/bench_core.py            # 10^5 and 10^6 nodes
    python benchmarks/bench_core.py --quick    # 10^4 and 10^5 nodes
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
import tracemalloc

import numpy as np

import pyir
from pyir import op


class PlainCall:
    """The baseline: a plain record with the same fields as a Call."""

    __slots__ = ("op", "args", "attrs")

    def __init__(self, op, args, attrs):
        self.op = op
        self.args = args
        self.attrs = attrs


def build_plain(n: int, x, c, add):
    h = x
    for _ in range(n):
        h = PlainCall(add, (h, c), None)
    return h


def build_interned(n: int, x, c, add):
    call = pyir.Call
    h = x
    for _ in range(n):
        h = call(add, (h, c))
    return h


def build_builder(n: int, x, c, add):
    b = op.add
    h = x
    for _ in range(n):
        h = b(h, c)
    return h


def timed(fn, n, *args):
    t0 = time.perf_counter()
    r = fn(n, *args)
    t1 = time.perf_counter()
    del r
    gc.collect()
    return (t1 - t0) / n * 1e9


def construction(n: int, repeats: int, gc_on: bool) -> dict:
    # distinct chains per repeat: a fresh variable makes every node new (all misses)
    add = pyir.Op("add")
    c = pyir.const(np.ones(4, "float32"))
    res: dict[str, list[float]] = {"plain": [], "Call()": [], "op.add()": []}
    for _ in range(repeats):
        for name, fn in (("plain", build_plain), ("Call()", build_interned), ("op.add()", build_builder)):
            x = pyir.var("x", shape=(4,))
            gc.collect()
            if gc_on:
                gc.enable()
            else:
                gc.disable()
            try:
                res[name].append(timed(fn, n, x, c, add))
            finally:
                gc.enable()
    return {k: statistics.median(v) for k, v in res.items()}


def memory(n: int) -> dict:
    add = pyir.Op("add")
    c = pyir.const(np.ones(4, "float32"))
    out = {}
    for name, fn in (("plain", build_plain), ("Call()", build_interned)):
        x = pyir.var("x", shape=(4,))
        gc.collect()
        tracemalloc.start()
        r = fn(n, x, c, add)
        cur, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[name] = cur / n
        del r
        gc.collect()
    return out


def copies(sizes: list[int]) -> list[tuple[int, float, float]]:
    rows = []
    for n in sizes:
        m = pyir.testing.elementwise_chain(n)
        t0 = time.perf_counter()
        for _ in range(1000):
            copy.deepcopy(m)
        t1 = time.perf_counter()
        for _ in range(1000):
            copy.copy(m)
        t2 = time.perf_counter()
        rows.append((n, (t1 - t0) / 1000 * 1e9, (t2 - t1) / 1000 * 1e9))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    sizes = [10**4, 10**5] if a.quick else [10**5, 10**6]
    print("## Construction (ns per node; ratio to the plain __slots__ baseline, same run)\n")
    print("| nodes | gc | plain | Call() | ratio | op.add() | ratio |")
    print("|---|---|---|---|---|---|---|")
    mixed = []
    for n in sizes:
        both = {}
        for gc_on in (True, False):
            r = both[gc_on] = construction(n, a.repeats, gc_on)
            p, c, b = r["plain"], r["Call()"], r["op.add()"]
            print(f"| {n:,} | {'on' if gc_on else 'off'} | {p:.0f} | {c:.0f} | {c / p:.2f}x | "
                  f"{b:.0f} | {b / p:.2f}x |")
        mixed.append((n, both[False]["Call()"], both[True]["plain"]))
    print("\nInterned Calls built with the cyclic collector paused (as pyir's builders, passes, parser "
          "and loader do, soundly: nodes are acyclic) vs plain objects with the collector on (the default):")
    for n, c, p in mixed:
        print(f"- {n:,} nodes: {c:.0f} ns vs {p:.0f} ns = {c / p:.2f}x")
    print("\n## Memory per node (bytes, tracemalloc, intern table included)\n")
    print("| nodes | plain | Call() | ratio |")
    print("|---|---|---|---|")
    for n in sizes[:1]:
        m = memory(n)
        print(f"| {n:,} | {m['plain']:.0f} | {m['Call()']:.0f} | {m['Call()'] / m['plain']:.2f}x |")
    print("\n## Module copy (ns per call)\n")
    print("| nodes | copy.deepcopy | copy.copy |")
    print("|---|---|---|")
    for n, d, c in copies([10**3, 10**4, 10**5]):
        print(f"| {n:,} | {d:.0f} | {c:.0f} |")


if __name__ == "__main__":
    main()
