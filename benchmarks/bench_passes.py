"""Pass costs on the ResNet-style model, as ratios to a plain walk measured in the same run.

The baseline is a plain dict-memoized iterative walk over the same graph (what
any pass must at least do).  Also measured: a small edit (one relu rewritten),
and a rare-operator rewrite that uses the per-node operator summary to skip
every subgraph that cannot contain the operator.

    python benchmarks/bench_passes.py            # ~10^4 and ~10^5 calls
    python benchmarks/bench_passes.py --quick    # ~10^3 and ~10^4 calls
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import pyir
from pyir import op
from pyir.transform import (
    DeadCodeElimination,
    DefuseOps,
    FoldConstant,
    FuseOps,
    InferType,
    Sequential,
    SimplifyExpr,
    SimplifyInference,
    ToANormalForm,
    ToGraphNormalForm,
)


def plain_walk(root) -> int:
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
            stack.pop()
            memo[n] = n
    return len(memo)


def best(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def calls(mod) -> int:
    return sum(1 for n in pyir.post_order(list(mod.functions().values())) if isinstance(n, pyir.Call))


def bench(blocks: int, repeats: int) -> None:
    mod = pyir.testing.resnet(blocks, channels=4, size=4, batch_norm=False)
    mod = InferType()(mod)
    main = mod["main"]
    n = calls(mod)
    nodes = pyir.count_nodes(main)
    base = best(lambda: plain_walk(main), repeats)
    relus = list(pyir.ir.traverse.iter_calls(main, "nn.relu"))
    target = relus[len(relus) // 2]
    softmax = pyir.Op("nn.softmax")

    class RareRewrite(pyir.ExprMutator):
        mask = softmax._mask

        def should_visit(self, node):
            return bool(node._mask & self.mask)

        def visit_Call(self, call):
            if call.op is softmax:
                return op.nn.log_softmax(call.args[0], axis=call.attrs["axis"])
            return call

    fused = FuseOps()(mod)
    pipeline = Sequential([SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(), DefuseOps(),
                           ToANormalForm(), ToGraphNormalForm(), DeadCodeElimination()])
    rows = [
        ("plain dict-memoized walk (baseline)", base),
        ("identity ExprMutator", best(lambda: pyir.ExprMutator().visit(main), repeats)),
        ("small edit (one relu -> tanh)", best(lambda: pyir.rewrite(
            main, lambda e: op.tanh(e.args[0]) if e is target else None), repeats)),
        ("rare-op rewrite with summary skipping", best(lambda: RareRewrite().visit(main), repeats)),
        ("FuseOps", best(lambda: FuseOps()(mod), repeats)),
        ("DefuseOps", best(lambda: DefuseOps()(fused), repeats)),
        ("ToANormalForm", best(lambda: ToANormalForm()(mod), repeats)),
        ("standard pipeline (8 passes)", best(lambda: pipeline(mod), max(1, repeats // 2))),
    ]
    print(f"\n### resnet({blocks}): {n:,} calls, {nodes:,} nodes\n")
    print("| step | µs per node | ratio to baseline |")
    print("|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t / nodes * 1e6:.2f} | {t / base:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    # resnet(k) has about 6k + 8 calls without batch_norm
    for blocks in ([170, 1700] if a.quick else [1700, 17000]):
        bench(blocks, a.repeats)


if __name__ == "__main__":
    main()
