"""Lineage costs: recording overhead, query cost, side-table size, and the
repr-comparison workaround users resorted to in other IRs, for contrast.

    python benchmarks/bench_lineage.py            # ~10^4 and ~10^5 calls
    python benchmarks/bench_lineage.py --quick
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import pyir
from pyir.transform import (
    DeadCodeElimination,
    DefuseOps,
    FoldConstant,
    FuseOps,
    InferType,
    PassContext,
    Sequential,
    SimplifyExpr,
    SimplifyInference,
    ToANormalForm,
    ToGraphNormalForm,
)


def pipeline() -> Sequential:
    return Sequential([SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(), DefuseOps(),
                       ToANormalForm(), ToGraphNormalForm(), DeadCodeElimination(), FuseOps(), InferType()])


def timed(fn, repeats):
    ts = []
    out = None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def bench(blocks: int, repeats: int) -> None:
    mod = pyir.testing.resnet(blocks, channels=4, size=4, batch_norm=True)
    nodes = pyir.count_nodes(mod["main"])
    p = pipeline()

    def off():
        with PassContext(record_lineage=False):
            return p(mod)

    t_on, out = timed(lambda: p(mod), repeats)
    t_off, _ = timed(off, repeats)
    edges = sum(len(r.edges) for r in out.pass_records)
    out_nodes = pyir.count_nodes(list(out.functions().values()))
    # queries: the one-time index, then per query
    originals = [n for n in pyir.post_order(mod["main"]) if isinstance(n, pyir.Call)]
    t0 = time.perf_counter()
    out.find(originals[0])
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    hits = sum(1 for n in originals if out.find(n))
    t_find = (time.perf_counter() - t0) / len(originals)
    sample = [n for n in pyir.post_order(out["main"]) if isinstance(n, pyir.Call)]
    t0 = time.perf_counter()
    for n in sample:
        out.origins(n)
    t_orig = (time.perf_counter() - t0) / len(sample)
    # the repr workaround: compare the text of the original node with every node of the output
    probe = [n for n in originals if n.op is pyir.Op("nn.relu")][:20]
    t0 = time.perf_counter()
    texts = {}
    for n in pyir.post_order(out["main"]):
        texts.setdefault(repr(n).split(" #")[0], []).append(n)
    matches = [len(texts.get(repr(n).split(" #")[0], [])) for n in probe]
    t_repr = time.perf_counter() - t0
    print(f"\n### resnet({blocks}) with batch_norm: {nodes:,} nodes, 10-pass pipeline\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| pipeline with lineage recording | {t_on * 1e3:.0f} ms |")
    print(f"| pipeline without recording | {t_off * 1e3:.0f} ms |")
    print(f"| recording overhead | {t_on / t_off:.2f}x |")
    print(f"| side-table edges after the pipeline | {edges:,} ({edges / out_nodes:.2f} per output node) |")
    print(f"| one-time index of the output module | {t_index * 1e3:.1f} ms |")
    print(f"| find per query | {t_find * 1e6:.1f} µs ({hits}/{len(originals)} calls found) |")
    print(f"| origins per query | {t_orig * 1e6:.1f} µs |")
    print(f"| repr workaround, 20 relus | {t_repr * 1e3:.0f} ms, "
          f"{sum(m - 1 for m in matches if m)} false matches, {matches.count(0)} lost |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    for blocks in ([100, 1000] if a.quick else [1000, 10000]):
        bench(blocks, a.repeats)


if __name__ == "__main__":
    main()
