"""Time and peak memory of every operation on a 10^6-deep chain and its 10^6-deep let chain.

Issue 10's target: every operation peaks under 1.5 GB above its input.  Each
(operation, input) pair runs in a fresh subprocess: the worker builds the input
(``pyir.testing.elementwise_chain(depth)``, or its A-normal form) and whatever
the operation needs (the text for ``parse``, the bytes for ``loads``, the
pipeline's result for the lineage queries, whose rows include the one-time
indexes each query builds on first use), collects garbage, resets the kernel's peak-RSS mark
(``/proc/self/clear_refs``; without it, ``ru_maxrss`` after setup is the base,
which hides a peak lower than the setup's), runs the operation once and reports
the wall and CPU seconds (CPU is the robust figure on a shared machine) and the
peak RSS above the RSS after setup, and the RSS the result still holds when
the operation returns ("kept": the output's own size, an upper bound since freed
memory need not go back to the system; peak minus kept is the working memory).

    nice -n 10 python benchmarks/bench_deep_memory.py                 # depth 10**6
    python benchmarks/bench_deep_memory.py --depth 100000 --only 'Fuse|pipeline'
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

LIMIT_MB = 1500.0

# -- operations (run inside the worker) ------------------------------------------------------


def _passes() -> dict[str, Any]:
    from pyir import transform as T

    return {name: getattr(T, name) for name in (
        "InferType", "FoldConstant", "SimplifyExpr", "SimplifyInference", "EliminateCommonSubexpr",
        "DeadCodeElimination", "FuseOps", "DefuseOps", "ToANormalForm", "ToBasicBlockNormalForm",
        "ToGraphNormalForm", "Inline")}


def pipeline() -> Any:
    """The 10-pass pipeline of tests/test_pipeline_properties.py."""
    from pyir.transform import (
        DeadCodeElimination,
        DefuseOps,
        EliminateCommonSubexpr,
        FoldConstant,
        FuseOps,
        InferType,
        Sequential,
        SimplifyExpr,
        SimplifyInference,
        ToANormalForm,
        ToGraphNormalForm,
    )

    return Sequential([InferType(), SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(),
                       DefuseOps(), ToANormalForm(), EliminateCommonSubexpr(), ToGraphNormalForm(),
                       DeadCodeElimination()])


Setup = Callable[[Any], Any]          # input module -> state
Run = Callable[[Any, Any], Any]       # (input module, state) -> result


def _pass_op(name: str) -> tuple[Setup, Run]:
    def setup(mod: Any) -> Any:
        p = _passes()
        if name == "DefuseOps":
            return p["FuseOps"]()(mod)
        if name == "Inline":
            import pyir

            f = mod["main"]
            callee = pyir.Function(f.params, f.body, f.ret_type, {"Inline": 1})
            x = pyir.var("x", shape=(4,))
            return pyir.Module({"main": pyir.Function([x], pyir.Call(pyir.GlobalVar("f"), [x])), "f": callee})
        return mod

    def run(mod: Any, state: Any) -> Any:
        return _passes()[name]()(state)

    return setup, run


def _ops() -> dict[str, tuple[Setup, Run]]:
    import pyir

    ops: dict[str, tuple[Setup, Run]] = {name: _pass_op(name) for name in _passes()}

    def edited(mod: Any) -> Any:
        """``mod`` with its top node (or its innermost let body) replaced: a one-node change."""
        f = mod["main"]
        body = f.body
        if isinstance(body, pyir.Call):
            return mod.with_function("main", pyir.Function(f.params, pyir.op.tanh(body.args[0])))
        return mod.with_function("main", pyir.Function(f.params, pyir.Let(body.var, pyir.op.tanh(body.value),
                                                                             body.body)))

    def piped(mod: Any) -> Any:
        return pipeline()(mod)  # each query row includes the one-time indexes it builds

    ops.update({
        "pipeline10": (lambda m: m, lambda m, s: pipeline()(m)),
        "evaluate": (lambda m: np.ones(4, "float32"), lambda m, s: pyir.evaluate(m, s)),
        "astext": (lambda m: m, lambda m, s: pyir.astext(m)),
        "parse": (lambda m: pyir.astext(m), lambda m, s: pyir.parse(s)),
        "dumps": (lambda m: m, lambda m, s: pyir.dumps(m)),
        "loads": (lambda m: pyir.dumps(m), lambda m, s: pyir.loads(s)),
        "to_json": (lambda m: m, lambda m, s: pyir.to_json(m)),
        "from_json": (lambda m: pyir.to_json(m), lambda m, s: pyir.from_json(s)),
        "alpha_hash": (lambda m: m, lambda m, s: pyir.alpha_hash(m["main"])),
        "alpha_equal": (lambda m: _input(_kind_of(m), _depth[0]),
                        lambda m, s: _check(pyir.alpha_equal(m["main"], s["main"]))),
        "diff": (edited, lambda m, s: pyir.diff(m, s).summary()),
        "lineage.find": (piped, lambda m, s: s.find(m["main"].params[0])),
        "lineage.origins": (piped, lambda m, s: s.origins(s["main"].body)),
        "lineage.history": (piped, lambda m, s: s.history(s["main"].body)),
    })
    return ops


def _check(ok: bool) -> bool:
    if not ok:
        raise SystemExit("alpha_equal said False on alpha-equivalent inputs")
    return ok


_depth = [0]


def _kind_of(mod: Any) -> str:
    import pyir

    return "let" if isinstance(mod["main"].body, pyir.Let) else "chain"


def _input(kind: str, depth: int) -> Any:
    import pyir

    mod = pyir.testing.elementwise_chain(depth)
    if kind == "let":
        mod = pyir.transform.ToANormalForm()(mod)
    return mod


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(op_name: str, kind: str, depth: int) -> dict[str, Any]:
    """Run one operation on one input in this process; the measurements as a dict."""
    sys.setrecursionlimit(10**4)  # a deep Python recursion must fail, not pass slowly
    setup, run = _ops()[op_name]
    _depth[0] = depth
    mod = _input(kind, depth)
    state = setup(mod)
    gc.collect()
    reset = _reset_peak()
    base = _rss_mb()
    base_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    c0 = time.process_time()
    result = run(mod, state)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kept = _rss_mb() - base  # the result still alive: what the output itself holds (an upper bound)
    del result
    return {"op": op_name, "input": kind, "depth": depth, "seconds": seconds, "cpu": cpu,
            "peak_mb": peak - (base if reset else base_max), "kept_mb": kept, "input_mb": base,
            "reset": reset}


# -- driver ------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=10**6)
    ap.add_argument("--only", default="", help="regex on 'operation input' (e.g. 'FuseOps|let')")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per operation")
    ap.add_argument("--worker", nargs=2, metavar=("OP", "INPUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker[0], a.worker[1], a.depth)))
        return
    rx = re.compile(a.only) if a.only else None
    names = list(_ops())
    print(f"depth {a.depth}; peak RSS above the input after setup; limit {LIMIT_MB:.0f} MB")
    print(f"{'operation':<24} {'input':<6} {'seconds':>9} {'cpu s':>9} {'peak MB':>9} {'kept MB':>9} "
          f"{'input MB':>9}")
    over = []
    for name in names:
        for kind in ("chain", "let"):
            if rx is not None and not rx.search(f"{name} {kind}"):
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, kind, "--depth", str(a.depth)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                print(f"{name:<24} {kind:<6} {'timeout':>9}", flush=True)
                over.append(f"{name} {kind} (timeout)")
                continue
            if p.returncode != 0:
                err = (p.stderr.strip().splitlines() or ["?"])[-1][:60]
                print(f"{name:<24} {kind:<6} {'failed':>9}  rc={p.returncode} {err}", flush=True)
                over.append(f"{name} {kind} (failed)")
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            flag = "  OVER" if r["peak_mb"] > LIMIT_MB else ""
            if flag:
                over.append(f"{name} {kind}")
            print(f"{name:<24} {kind:<6} {r['seconds']:>9.2f} {r['cpu']:>9.2f} {r['peak_mb']:>9.0f} "
                  f"{r['kept_mb']:>9.0f} {r['input_mb']:>9.0f}{flag}", flush=True)
    print("over the limit: " + (", ".join(over) if over else "none"))


if __name__ == "__main__":
    main()
