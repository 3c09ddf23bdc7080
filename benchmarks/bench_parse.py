"""Benchmark of the text parser: print and parse time per node on ResNet-style modules.

Run ``python benchmarks/bench_parse.py`` (about 10**4 and 10**5 calls) or with
``--quick`` (about 10**3 and 10**4 calls).  Parse time per node should stay flat
as the text grows tenfold (linear time).  "Nodes" counts every distinct expression
node (calls, constants, variables); CPU time is reported because wall time is noisy on
a shared machine.
"""

from __future__ import annotations

import argparse
import gc
import time

import pyir
from pyir.ir.traverse import count_nodes, iter_calls
from pyir.text.parser import parse


def measure(blocks: int) -> dict[str, float]:
    """Print and parse ``resnet(blocks, channels=4, size=4)``; times in seconds and counts."""
    mod = pyir.testing.resnet(blocks, channels=4, size=4)
    main = mod["main"]
    nodes = count_nodes(main)
    calls = sum(1 for _ in iter_calls(main))
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    text = mod.astext(show_meta_data=True)
    c1, t1 = time.process_time(), time.perf_counter()
    parsed = parse(text)
    c2, t2 = time.process_time(), time.perf_counter()
    assert parsed.astext(show_meta_data=True) == text, "round trip changed the text"
    return {"nodes": nodes, "calls": calls, "chars": len(text), "print": c1 - c0, "parse": c2 - c1,
            "print_wall": t1 - t0, "parse_wall": t2 - t1}


def main() -> None:
    """Run the benchmark and print a table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (10**3 and 10**4 calls)")
    args = ap.parse_args()
    sizes = [110, 1100] if args.quick else [1100, 11000]  # ~9 calls per block
    print("CPU time (process_time); wall-clock parse time in the last column")
    print(f"{'blocks':>7} {'calls':>8} {'nodes':>8} {'MB':>6} {'print s':>8} {'parse s':>8} "
          f"{'print us/node':>14} {'parse us/node':>14} {'parse us/call':>14} {'wall us/node':>13}")
    rows = []
    for n in sizes:
        r = measure(n)
        rows.append(r)
        print(f"{n:>7} {r['calls']:>8} {r['nodes']:>8} {r['chars'] / 1e6:>6.2f} {r['print']:>8.2f} "
              f"{r['parse']:>8.2f} {r['print'] / r['nodes'] * 1e6:>14.2f} "
              f"{r['parse'] / r['nodes'] * 1e6:>14.2f} {r['parse'] / r['calls'] * 1e6:>14.2f} "
              f"{r['parse_wall'] / r['nodes'] * 1e6:>13.2f}")
    a, b = rows
    print(f"growth x{b['chars'] / a['chars']:.1f} text -> x{b['parse'] / a['parse']:.1f} parse time, "
          f"x{b['print'] / a['print']:.1f} print time")


if __name__ == "__main__":
    main()
