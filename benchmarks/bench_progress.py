"""What progress reporting costs (issue 15 item 6): the same work with progress shown and off.

Runs a 10-pass pipeline (``pyir.transform.standard_pipeline()``) on the resnet-style
workload (10^5 ops), ``save``/``load`` of the result and a ``diff``, once with progress
forced on (``set_enabled(True)``, no delay, drawn into a throwaway stream) and once off,
alternating round by round; prints CPU seconds (the process's, so the drawing thread
counts) and the ratio.  Target: under 5% more.

    python benchmarks/bench_progress.py [--ops 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import sys
import time

from bench_vs_tvm import pyir_resnet

import pyir
from pyir import progress


def work(mod: pyir.Module) -> None:
    out = pyir.transform.standard_pipeline()(mod)
    pyir.serialize.loads(pyir.serialize.dumps(out))
    pyir.analysis.diff.diff(mod, out)


def timed(mod: pyir.Module, shown: bool) -> float:
    progress.set_enabled(shown)
    saved, sys.stderr = sys.stderr, io.StringIO()
    try:
        t = time.process_time()
        work(mod)
        return time.process_time() - t
    finally:
        sys.stderr = saved
        progress.set_enabled(None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    progress.DELAY = 0.0
    mod = pyir_resnet(a.ops)
    work(mod)  # warm up
    best = {True: float("inf"), False: float("inf")}
    for r in range(a.rounds):
        for shown in ((True, False) if r % 2 == 0 else (False, True)):
            best[shown] = min(best[shown], timed(mod, shown))
    ratio = best[True] / best[False]
    print(f"pipeline + save/load + diff on {a.ops:,} ops, best of {a.rounds}, CPU seconds")
    print(f"| progress | seconds |\n|---|---|\n| off | {best[False]:.3f} |\n| shown | {best[True]:.3f} |")
    print(f"overhead: {100 * (ratio - 1):+.1f}% (target < 5%) {'✓' if ratio < 1.05 else '✗'}")


if __name__ == "__main__":
    main()
