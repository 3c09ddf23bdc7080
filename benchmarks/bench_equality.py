"""Benchmark: alpha-equality and diff on 10**5-node graphs.

* ``alpha_equal`` on two independently built 10**5-node functions: the first
  call (two alpha hashes + an exact parallel walk) and the cached call, next to
  a plain iterative structural comparison (a parallel walk comparing kinds and
  fields, no binder bookkeeping) of the same graphs.
* ``diff`` of a one-node edit in a 10**5-node module: cold (heights computed
  for the first time), warm (heights cached, as in a pipeline) and against a
  full walk of both graphs with a set difference.

Usage: ``python benchmarks/bench_equality.py [N]``.
"""

from __future__ import annotations

import gc
import sys
import time

import pyir
from pyir import op
from pyir.analysis.diff import _heights, diff
from pyir.analysis.equality import alpha_equal, clear_caches, gc_paused
from pyir.ir.expr import Op


def timed(fn, repeat=1):
    """Best time of ``repeat`` runs, with the cyclic GC paused for every contender alike."""
    best = float("inf")
    out = None
    for _ in range(repeat):
        with gc_paused():
            t = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t)
    return best, out


def plain_compare(a, b) -> bool:
    """Iterative parallel walk comparing kinds and scalar fields (vars matched positionally)."""
    stack = [(a, b)]
    seen = set()
    while stack:
        x, y = stack.pop()
        if (x, y) in seen:
            continue
        seen.add((x, y))
        if type(x) is not type(y):
            return False
        if isinstance(x, pyir.Call):
            if (type(x.op) is Op) != (type(y.op) is Op) or (type(x.op) is Op and x.op is not y.op):
                return False
            if x.attrs is not y.attrs:
                return False
        elif isinstance(x, pyir.Constant) and x is not y:
            return False
        cx, cy = x.children(), y.children()
        if len(cx) != len(cy):
            return False
        stack.extend(zip(cx, cy))
    return True


def main(n: int = 10**5) -> None:
    gc.collect()
    for name, build in (("chain", pyir.testing.elementwise_chain), ("dag", pyir.testing.shared_dag)):
        a, b = build(n)["main"], build(n)["main"]
        assert a is not b
        clear_caches()
        t_plain, ok1 = timed(lambda: plain_compare(a, b))
        t_first, ok2 = timed(lambda: alpha_equal(a, b))
        t_cached, ok3 = timed(lambda: alpha_equal(a, b), repeat=5)
        assert ok1 and ok2 and ok3
        print(f"[{name} {n}] {pyir.count_nodes(a)} reachable nodes")
        print(f"[{name} {n}] plain structural walk {t_plain * 1e3:9.1f} ms")
        print(f"[{name} {n}] alpha_equal first     {t_first * 1e3:9.1f} ms  "
              f"({t_first / t_plain:.2f}x the plain walk)")
        print(f"[{name} {n}] alpha_equal cached    {t_cached * 1e6:9.1f} us  "
              f"({t_plain / t_cached:,.0f}x faster than the plain walk)")

    m = pyir.testing.elementwise_chain(n)
    f = m["main"]
    # edit: replace the node 10 levels below the root
    path = [f.body]
    for _ in range(10):
        path.append(path[-1].args[0])
    repl = {path[-1]: op.tanh(path[-1])}
    from pyir.rewrite.functor import substitute

    m2 = m.with_function("main", f.with_body(substitute(f.body, repl)))
    _heights.clear()
    t_cold, d = timed(lambda: diff(m, m2))
    t_warm, d = timed(lambda: diff(m, m2), repeat=5)

    def full():
        sa = set(pyir.post_order(m["main"]))
        sb = set(pyir.post_order(m2["main"]))
        return sb - sa, sa - sb

    t_full, (new, removed) = timed(full)
    assert set(d.new_nodes) == new and set(d.removed_nodes) == removed
    print(f"[diff {n}] edit: {len(new)} new / {len(removed)} removed nodes")
    print(f"[diff {n}] full walk + set difference {t_full * 1e3:9.1f} ms")
    print(f"[diff {n}] diff cold (heights)        {t_cold * 1e3:9.1f} ms  ({t_cold / t_full:.2f}x)")
    print(f"[diff {n}] diff warm                  {t_warm * 1e3:9.3f} ms  "
          f"({t_full / t_warm:,.0f}x faster than the full walk)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10**5)
