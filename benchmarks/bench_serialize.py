"""Benchmark of pyir.serialize on ResNet-style graphs, next to pickle of a plain-Python graph.

Usage: ``python benchmarks/bench_serialize.py [--quick]``

For ``pyir.testing.resnet(N, channels=4, size=4)`` sized to about 10**4 and
10**5 calls it prints, per node of the node table (expressions, operators,
types and attribute sets): save time, load time (``load/hit``: the module is
still alive, so every node is found in the intern table; ``load/fresh``: the
module was dropped first, so every node is built again, as in another
process), save+load, and bytes per node.  For comparison it pickles an
equivalent plain-Python object graph built iteratively: small ``__slots__``
objects with child references (``pickle nested``, needs a high recursion limit
and a big thread stack) and the same graph flattened to a list of tuples with
integer child indices (``pickle flat``).
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyir
from pyir.ir.expr import Call, Constant
from pyir.serialize import dumps, from_json, loads, to_json
from pyir.serialize.binary import _node_table
from pyir.testing import resnet


class PNode:
    """A plain-Python stand-in for an IR node."""

    __slots__ = ("kind", "attrs", "children", "data")

    def __init__(self, kind: str, attrs: Any, children: tuple[Any, ...], data: Any) -> None:
        self.kind = kind
        self.attrs = attrs
        self.children = children
        self.data = data


def plain_graph(mod: pyir.Module) -> tuple[PNode, list[tuple[Any, ...]]]:
    """The nested PNode graph and the flat tuple list equivalent to ``mod['main']`` (built iteratively)."""
    memo: dict[Any, PNode] = {}
    index: dict[Any, int] = {}
    flat: list[tuple[Any, ...]] = []
    attr_dicts: dict[Any, dict[str, Any]] = {}
    for n in _node_table([mod["main"]]):
        kind = type(n).__name__
        attrs = None
        data = None
        kids = tuple(c for c in n.children())
        if type(n) is Call:
            kind = n.op.name if isinstance(n.op, pyir.Op) else "call"
            attrs = attr_dicts.setdefault(n.attrs, n.attrs.to_dict())
        elif type(n) is Constant:
            data = (n.dtype, n.shape, n.data.tobytes())
        if n not in memo and isinstance(n, pyir.Expr):
            memo[n] = PNode(kind, attrs, tuple(memo[c] for c in kids), data)
            index[n] = len(flat)
            flat.append((kind, attrs, tuple(index[c] for c in kids), data))
    return memo[mod["main"]], flat


_cpu: dict[str, float] = {}


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` runs (garbage collected before each) and the last result.

    The best CPU time (``time.process_time``) is left in ``_cpu["last"]``.
    """
    t_best = c_best = float("inf")
    out = None
    for _ in range(repeat):
        out = None
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t0)
        c_best = min(c_best, time.process_time() - c0)
    _cpu["last"] = c_best
    return t_best, out


def in_big_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread with a 1 GiB stack and a high recursion limit (for nested pickle)."""
    result: list[Any] = []
    old_size = threading.stack_size(1 << 30)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10**7)
    try:
        t = threading.Thread(target=lambda: result.append(fn()))
        t.start()
        t.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    return result[0] if result else None


Row = tuple[str, int, float, float, int, float]


def run(blocks: int, repeat: int, with_json: bool) -> list[Row]:
    """Rows (format, nodes, save s, load s, bytes, save+load CPU s) for resnet(blocks)."""
    mod = resnet(blocks, channels=4, size=4)
    n = len(_node_table([mod["main"]]))
    calls = sum(1 for x in pyir.post_order(mod["main"]) if type(x) is Call)
    print(f"\nresnet({blocks}, channels=4, size=4): {calls} calls, {n} nodes in the node table")
    rows = []
    t_save, data = best(lambda: dumps(mod), repeat)
    c_save = _cpu["last"]
    t_load, back = best(lambda: loads(data), repeat)
    assert back["main"] is mod["main"]
    rows.append(("pyir binary (load/hit)", n, t_save, t_load, len(data), c_save + _cpu["last"]))
    del back
    # fresh load: drop every node first
    main_id = mod["main"].id
    del mod
    gc.collect()
    t_fresh = c_fresh = float("inf")
    for _ in range(repeat):
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        back = loads(data)
        t_fresh = min(t_fresh, time.perf_counter() - t0)
        c_fresh = min(c_fresh, time.process_time() - c0)
        assert back["main"].id == main_id
        del back
        gc.collect()
    rows.append(("pyir binary (load/fresh)", n, t_save, t_fresh, len(data), c_save + c_fresh))
    mod = loads(data)
    if with_json:
        t_js, text = best(lambda: to_json(mod), repeat)
        c_js = _cpu["last"]
        t_jl, _ = best(lambda: from_json(text), repeat)
        rows.append(("pyir JSON (load/hit)", n, t_js, t_jl, len(text.encode()), c_js + _cpu["last"]))
    nested, flat = plain_graph(mod)
    t_fs, pf = best(lambda: pickle.dumps(flat, protocol=pickle.HIGHEST_PROTOCOL), repeat)
    c_fs = _cpu["last"]
    t_fl, _ = best(lambda: pickle.loads(pf), repeat)
    rows.append(("pickle flat tuples", len(flat), t_fs, t_fl, len(pf), c_fs + _cpu["last"]))

    def nested_round() -> tuple[float, float, int, float] | None:
        try:
            t_ns, pn = best(lambda: pickle.dumps(nested, protocol=pickle.HIGHEST_PROTOCOL), repeat)
            c_ns = _cpu["last"]
            t_nl, _ = best(lambda: pickle.loads(pn), repeat)
        except RecursionError:
            return None
        return t_ns, t_nl, len(pn), c_ns + _cpu["last"]

    res = in_big_thread(nested_round)
    if res is not None:
        rows.append(("pickle nested objects", len(flat), res[0], res[1], res[2], res[3]))
    else:
        print("pickle nested objects: RecursionError")
    return rows


def main() -> None:
    """Run the benchmark and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one small size, one repetition")
    args = ap.parse_args()
    sizes = [300] if args.quick else [1430, 14300]
    repeat = 1 if args.quick else 3
    table = []
    for blocks in sizes:
        table += run(blocks, repeat, with_json=True)
    print(f"\n{'format':<26}{'nodes':>9}{'save us/n':>11}{'load us/n':>11}{'total us/n':>12}"
          f"{'cpu total':>11}{'bytes/n':>9}")
    for name, n, ts, tl, size, cpu in table:
        print(f"{name:<26}{n:>9}{ts / n * 1e6:>11.2f}{tl / n * 1e6:>11.2f}{(ts + tl) / n * 1e6:>12.2f}"
              f"{cpu / n * 1e6:>11.2f}{size / n:>9.1f}")
    base = {(name, n): (ts, tl) for name, n, ts, tl, _size, _cpu_s in table}
    print("\nRatios in the same run (pickle time / pyir time, > 1: pyir is faster):")
    for name, n, ts, tl, _size, _cpu_s in table:
        if name != "pyir binary (load/fresh)":
            continue
        for other in ("pickle nested objects", "pickle flat tuples"):
            hit = next((v for (nm, m), v in base.items() if nm == other and abs(m - n) <= 16), None)
            if hit is not None:
                print(f"  {n} nodes, pyir binary (fresh load) vs {other}: save {hit[0] / ts:.2f}x, "
                      f"load {hit[1] / tl:.2f}x")
    print("\n(pickle rows: the plain-Python graph has expression nodes only, no operator/type/attribute"
          "\n nodes; constants in both are raw bytes.  us/n: wall-clock microseconds per node, best of the"
          "\n runs; cpu total: save+load process CPU time per node, less sensitive to machine load.)")


if __name__ == "__main__":
    main()
