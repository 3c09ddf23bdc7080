"""Lineage costs: recording overhead, query cost, side-table size, and the
repr-comparison workaround users resorted to in other IRs, for contrast.

    python benchmarks/bench_lineage.py            # ~10^4 and ~10^5 calls
    python benchmarks/bench_lineage.py --quick
"""

from __future__ import annotations

import argparse
import gc
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


def timed_pair(fa, fb, repeats):
    """Best-of-``repeats`` times of two functions, run alternately (noise hits both alike)."""
    ta, tb, out = [], [], None
    for _ in range(repeats):
        for f, ts in ((fa, ta), (fb, tb)):
            gc.collect()
            t0 = time.perf_counter()
            r = f()
            ts.append(time.perf_counter() - t0)
            if f is fa:
                out = r
    return min(ta), min(tb), out


def bench(blocks: int, repeats: int) -> None:
    mod = pyir.testing.resnet(blocks, channels=4, size=4, batch_norm=True)
    nodes = pyir.count_nodes(mod["main"])
    p = pipeline()

    def off():
        with PassContext(record_lineage=False):
            return p(mod)

    t_on, t_off, out = timed_pair(lambda: p(mod), off, repeats)
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


def repr_workaround(blocks: int) -> None:
    """What users of other IRs did: compare the printed text of the old expression with
    the text of every candidate in the new module (full subgraph text, as ``repr`` gives)."""
    mod = pyir.testing.resnet(blocks, channels=4, size=4, batch_norm=True)
    out = pipeline()(mod)
    probes = [n for n in pyir.post_order(mod["main"]) if isinstance(n, pyir.Call)
              and n.op is pyir.Op("nn.relu")][:20]
    t0 = time.perf_counter()
    want = {pyir.astext(p): p for p in probes}
    cands = [n for n in pyir.post_order(list(out.functions().values()))
             if isinstance(n, pyir.Call) and isinstance(n.op, pyir.Op) and n.op.name == "nn.relu"]
    hits: dict = {}
    for c in cands:
        p = want.get(pyir.astext(c))
        if p is not None:
            hits.setdefault(p, []).append(c)
    t_repr = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = [out.find(p) for p in probes]
    t_find = time.perf_counter() - t0
    print(f"\n### Contrast: the repr-comparison workaround (resnet({blocks}), 20 relus, same pipeline)\n")
    print("| method | time | found | lost | false matches |")
    print("|---|---|---|---|---|")
    print(f"| compare printed text with every relu of the output | {t_repr * 1e3:.0f} ms | "
          f"{len(hits)} | {len(probes) - len(hits)} | {sum(len(v) - 1 for v in hits.values())} |")
    print(f"| `out.find(old)` (lineage, index included) | {t_find * 1e3:.1f} ms | "
          f"{sum(1 for f in found if f)} | {sum(1 for f in found if not f)} | 0 |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    for blocks in ([100, 1000] if a.quick else [1000, 10000]):
        bench(blocks, a.repeats)
    repr_workaround(30 if a.quick else 60)


if __name__ == "__main__":
    main()
