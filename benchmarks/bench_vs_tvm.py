"""pyir next to TVM Relax on the anchors' workloads, in one run: ratios TVM time / pyir time.

The workloads are exactly those of ``../shared/anchors/tvm_bench.py`` (N op bindings, 16x16 and
1x16x8x8 float32 tensors):

  chain   x -> relu -> add(c1) -> multiply(c2) -> relu -> ...   (each op uses only the previous one)
  resnet  blocks of conv2d -> add(bias) -> relu -> conv2d -> add(bias) -> add(residual) -> relu,
          weights and biases as typed function parameters; the remainder padded with relu
  shared  v[i] = add(v[i-1], v[i//2]); every 16th op is relu(v[i-1])      (a DAG with heavy reuse)

Steps (pyir | TVM step of tvm_bench.py):

  build    pyir constructors (Var, TensorType, op.*, Function, Module) | BlockBuilder
  save     pyir.dumps | tvm.ir.save_json
  load     pyir.loads with the original freed (fresh nodes, not intern hits) | tvm.ir.load_json
  print    pyir.astext (metadata included) | mod.script()
  parse    pyir.parse | tvm.script.from_source(mod.script(show_meta=True))
  copy     copy.deepcopy (pyir: O(1), the module is immutable) | copy.deepcopy
  equal    pyir.alpha_equal of two independent builds, first call | structural_equal
  hash     pyir.alpha_hash, first call (pyir.structural_hash is O(1)) | structural_hash
  mutator  ExprMutator with a Python visit_Call hook that changes nothing | PyExprMutator with a
           Python visit_call_ (also shown: TVM's mutator with no Python hook, a C++ walk)
  edit     one call (the last relu) -> sigmoid, through a Python hook | the same
  fuse     pyir.transform.FuseOps (type inference included) | relax FuseOps after its
           prerequisites LegalizeOps and AnnotateTIROpPattern (untimed)

``build`` also builds the same program as plain ``__slots__`` objects holding the same fields (the
construction baseline of issue 11 item 5) and prints pyir build / plain build.

TVM is never a dependency.  Give a Python interpreter that has ``apache-tvm`` installed
(``../shared/anchors/requirements-tvm.txt`` pins one that works) with ``--tvm-python`` or
``PYIR_TVM_PYTHON``; the anchor script is then run in it (``--anchor`` or ``PYIR_TVM_ANCHOR``,
default ``../../shared/anchors/tvm_bench.py`` from this file) for the same workload, sizes and
steps.  pyir rounds and TVM rounds alternate (each round runs every step once; best of
``--repeats`` rounds), so both sides see the same machine load.  Without TVM, only the pyir column
is printed.  TVM's parse is very slow (~15 ms per op at 10^4), so it runs in the first round only,
and only up to ``--tvm-parse-max-n`` ops.

    python benchmarks/bench_vs_tvm.py                                  # pyir only
    python benchmarks/bench_vs_tvm.py --tvm-python /tmp/tvmvenv/bin/python \\
        --shapes resnet,chain --sizes 10000 --repeats 3
    python benchmarks/bench_vs_tvm.py --steps 'build|fuse' --sizes 1000,10000
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _plain import PCall, PConstant, PFunction, PModule, POp, PTensorType, PVar

import pyir
from pyir import op

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ANCHOR = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "anchors", "tvm_bench.py"))
SHAPES = ("resnet", "chain", "shared")

# (step, label, TVM step in tvm_bench.py, target ratio TVM / pyir or None)
STEPS: list[tuple[str, str, str, float | None]] = [
    ("build", "build", "build", 50),
    ("save", "save (dumps / save_json)", "save_json", 50),
    ("load", "load (loads / load_json)", "load_json", 50),
    ("print", "print (astext / TVMScript)", "script", 10),
    ("parse", "parse", "from_source", None),
    ("copy", "copy (pyir O(1) / deepcopy)", "deepcopy", None),
    ("equal", "alpha / structural equality, first call", "structural_equal", 5),
    ("hash", "alpha / structural hash", "structural_hash", None),
    ("mutator", "identity mutator, Python hook", "mutator_identity_pyvisit", 5),
    ("mutator", "identity mutator (TVM: C++ walk, no hook)", "mutator_identity", None),
    ("edit", "one-call edit", "mutator_small_edit", None),
    ("fuse", "FuseOps", "pass_FuseOps", 20),
]
STEP_NAMES = list(dict.fromkeys(s for s, *_ in STEPS))
# TVM steps that must run for a selected TVM step to have its input
TVM_PREREQ = {"load_json": ["save_json"], "from_source": ["script_meta"],
              "pass_FuseOps": ["pass_LegalizeOps", "pass_AnnotateTIROpPattern"]}
PLAIN_TARGET = 4.0  # pyir build <= 4x plain __slots__ objects

# -- pyir workloads ------------------------------------------------------------------------------

F32 = "float32"


def pyir_chain(n: int) -> pyir.Module:
    x = pyir.Var("x", pyir.TensorType((16, 16), F32))
    c1 = pyir.const(np.full((16, 16), 0.5, F32))
    c2 = pyir.const(np.full((16, 16), 0.9, F32))
    relu, add, mul = op.nn.relu, op.add, op.multiply
    v: pyir.Expr = x
    for i in range(n - 1):
        k = i % 3
        if k == 0:
            v = relu(v)
        elif k == 1:
            v = add(v, c1)
        else:
            v = mul(v, c2)
    return pyir.Module({"main": pyir.Function([x], relu(v))})


def pyir_resnet(n: int, c: int = 16, hw: int = 8) -> pyir.Module:
    Var, T = pyir.Var, pyir.TensorType
    conv2d, add, relu = op.nn.conv2d, op.add, op.nn.relu
    x = Var("x", T((1, c, hw, hw), F32))
    params = [x]
    ws = []
    for b in range(n // 7):
        w = (Var(f"w{b}_1", T((c, c, 3, 3), F32)), Var(f"b{b}_1", T((1, c, 1, 1), F32)),
             Var(f"w{b}_2", T((c, c, 3, 3), F32)), Var(f"b{b}_2", T((1, c, 1, 1), F32)))
        ws.append(w)
        params += w
    h: pyir.Expr = x
    for w1, b1, w2, b2 in ws:
        t = relu(add(conv2d(h, w1, padding=(1, 1)), b1))
        t = add(add(conv2d(t, w2, padding=(1, 1)), b2), h)
        h = relu(t)
    for _ in range(n - 7 * len(ws)):
        h = relu(h)
    return pyir.Module({"main": pyir.Function(params, h)})


def pyir_shared(n: int) -> pyir.Module:
    x = pyir.Var("x", pyir.TensorType((16, 16), F32))
    relu, add = op.nn.relu, op.add
    vs: list[pyir.Expr] = [relu(x)]
    for i in range(1, n):
        vs.append(relu(vs[i - 1]) if i % 16 == 0 else add(vs[i - 1], vs[i // 2]))
    return pyir.Module({"main": pyir.Function([x], vs[-1])})


PYIR_BUILDERS: dict[str, Callable[[int], pyir.Module]] = {
    "chain": pyir_chain, "resnet": pyir_resnet, "shared": pyir_shared}

# -- the plain baseline: __slots__ objects holding the same fields --------------------------------


P_RELU, P_ADD, P_MUL, P_CONV = POp("nn.relu"), POp("add"), POp("multiply"), POp("nn.conv2d")
# the attributes a pyir conv2d call holds (normalized), copied into each plain call
_x, _w = pyir.var("x", shape=(1, 16, 8, 8)), pyir.var("w", shape=(16, 16, 3, 3))
CONV_ATTRS = dict(op.nn.conv2d(_x, _w, padding=(1, 1)).attrs)
del _x, _w


def plain_chain(n: int) -> PModule:
    x = PVar("x", PTensorType((16, 16), F32))
    c1 = PConstant(np.full((16, 16), 0.5, F32))
    c2 = PConstant(np.full((16, 16), 0.9, F32))
    v: Any = x
    for i in range(n - 1):
        k = i % 3
        if k == 0:
            v = PCall(P_RELU, (v,), None)
        elif k == 1:
            v = PCall(P_ADD, (v, c1), None)
        else:
            v = PCall(P_MUL, (v, c2), None)
    return PModule({"main": PFunction([x], PCall(P_RELU, (v,), None))})


def plain_resnet(n: int, c: int = 16, hw: int = 8) -> PModule:
    x = PVar("x", PTensorType((1, c, hw, hw), F32))
    params: list[Any] = [x]
    ws = []
    for b in range(n // 7):
        w = (PVar(f"w{b}_1", PTensorType((c, c, 3, 3), F32)), PVar(f"b{b}_1", PTensorType((1, c, 1, 1), F32)),
             PVar(f"w{b}_2", PTensorType((c, c, 3, 3), F32)), PVar(f"b{b}_2", PTensorType((1, c, 1, 1), F32)))
        ws.append(w)
        params += w
    h: Any = x
    for w1, b1, w2, b2 in ws:
        t = PCall(P_CONV, (h, w1), dict(CONV_ATTRS))
        t = PCall(P_ADD, (t, b1), None)
        t = PCall(P_RELU, (t,), None)
        t = PCall(P_CONV, (t, w2), dict(CONV_ATTRS))
        t = PCall(P_ADD, (t, b2), None)
        t = PCall(P_ADD, (t, h), None)
        h = PCall(P_RELU, (t,), None)
    for _ in range(n - 7 * len(ws)):
        h = PCall(P_RELU, (h,), None)
    return PModule({"main": PFunction(params, h)})


def plain_shared(n: int) -> PModule:
    x = PVar("x", PTensorType((16, 16), F32))
    vs: list[Any] = [PCall(P_RELU, (x,), None)]
    for i in range(1, n):
        vs.append(PCall(P_RELU, (vs[i - 1],), None) if i % 16 == 0
                  else PCall(P_ADD, (vs[i - 1], vs[i // 2]), None))
    return PModule({"main": PFunction([x], vs[-1])})


PLAIN_BUILDERS: dict[str, Callable[[int], PModule]] = {
    "chain": plain_chain, "resnet": plain_resnet, "shared": plain_shared}

# -- pyir rounds ------------------------------------------------------------------------------------


class IdentityHook(pyir.ExprMutator):
    """A Python hook on every call that changes nothing (TVM: IdentityPyVisit)."""

    def visit_Call(self, call):
        return call


class SmallEdit(pyir.ExprMutator):
    """Rewrites exactly one call (by identity in the input) relu -> sigmoid (TVM: SmallEdit)."""

    def __init__(self, target):
        super().__init__()
        self.target = target
        self.hits = 0

    def visit_Call(self, call):
        if self.original is self.target:
            self.hits += 1
            return op.sigmoid(call.args[0])
        return call


def timed(fn: Callable[[], Any], loops: int = 1) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(loops):
        out = fn()
    return (time.perf_counter() - t0) / loops, out


def count_calls(mod: pyir.Module) -> int:
    return sum(1 for n in pyir.post_order(mod["main"]) if isinstance(n, pyir.Call))


def last_relu(main: pyir.Function) -> pyir.Call:
    relu = pyir.Op("nn.relu")
    return [n for n in pyir.post_order(main) if isinstance(n, pyir.Call) and n.op is relu][-1]


def pyir_round(shape: str, n: int, selected: set[str], check: bool) -> tuple[dict[str, float], dict]:
    """One round: every selected step once, on fresh builds.  Returns (seconds per step, facts)."""
    build, plain = PYIR_BUILDERS[shape], PLAIN_BUILDERS[shape]
    t: dict[str, float] = {}
    facts: dict[str, Any] = {}
    t["plain"], p = timed(lambda: plain(n))
    del p
    t["build"], mod = timed(lambda: build(n))
    gc.disable()
    try:
        t["build_gc_off"], m = timed(lambda: build(n))
    finally:
        gc.enable()
    del m
    if check:
        facts["calls"] = count_calls(mod)
    if {"save", "load"} & selected:
        t["save"], data = timed(lambda: pyir.dumps(mod))
        facts["bytes"] = len(data)
        if "load" in selected:
            del mod  # load into an empty intern table: fresh nodes, as TVM's load_json makes
            t["load"], mod = timed(lambda: pyir.loads(data))
        del data
    if {"print", "parse"} & selected:
        t["print"], text = timed(lambda: pyir.astext(mod))
        facts["chars"] = len(text)
        if "parse" in selected:
            t["parse"], parsed = timed(lambda: pyir.parse(text))
        del text
    if "copy" in selected:
        t["copy"], _ = timed(lambda: copy.deepcopy(mod), loops=1000)
    if "equal" in selected:
        mod2 = build(n)  # independent: fresh variables, so every node with a variable below differs
        t["equal"], facts["equal"] = timed(lambda: pyir.alpha_equal(mod, mod2))
        del mod2
    if "hash" in selected:
        mod3 = build(n)  # not hashed by the equality above: a first call
        t["hash"], _ = timed(lambda: pyir.alpha_hash(mod3))
        del mod3
    main = mod["main"]
    if "mutator" in selected:
        def ident():
            f = IdentityHook().visit(main)
            return mod if f is main else mod.with_function("main", f)
        t["mutator"], out = timed(ident)
        facts["mutator_returns_input"] = out is mod
    if "edit" in selected:
        target = last_relu(main)
        ed = SmallEdit(target)
        t["edit"], out = timed(lambda: mod.with_function("main", ed.visit(main)))
        facts["edit_hits"] = ed.hits
        if check:
            facts["edit_input_unchanged"] = count_calls(mod) == n and last_relu(mod["main"]) is target
    if "fuse" in selected:
        t["fuse"], fused = timed(lambda: pyir.transform.FuseOps()(mod))
        if check:
            facts["fused_functions"] = sum(1 for x in pyir.post_order(fused["main"])
                                           if isinstance(x, pyir.Function)) - 1
    if check and "parse" in selected:
        facts["parse_roundtrip_alpha_equal"] = pyir.alpha_equal(parsed, mod)
    return t, facts


# -- TVM rounds -------------------------------------------------------------------------------------


def tvm_probe(python: str) -> tuple[str | None, str]:
    """(TVM version or None, reason)."""
    if not python:
        return None, "no interpreter given (--tvm-python or PYIR_TVM_PYTHON)"
    exe = shutil.which(python) or python
    if not os.path.exists(exe):
        return None, f"{python}: no such interpreter"
    try:
        r = subprocess.run([exe, "-c", "import tvm, tvm.relax; print(tvm.__version__)"],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{python}: {e}"
    if r.returncode != 0:
        return None, f"{python} cannot import tvm.relax: {r.stderr.strip().splitlines()[-1:]}"
    return r.stdout.strip(), ""


def tvm_round(a: argparse.Namespace, shape: str, n: int, tvm_steps: list[str]) -> dict[str, dict]:
    """Run tvm_bench.py once (one run per step) for (shape, n); its records by step name."""
    with tempfile.TemporaryDirectory(prefix="bench_vs_tvm_") as d:
        out = os.path.join(d, "tvm.json")
        cmd = [a.tvm_python, a.anchor, "--sizes", str(n), "--shapes", shape, "--repeats", "1",
               "--max-seconds", "1e9", "--job-timeout", str(a.tvm_timeout),
               "--total-seconds", "1e9", "--steps", "^(%s)$" % "|".join(map(re.escape, tvm_steps)),
               "--out", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if a.verbose:
            print(r.stdout, r.stderr, file=sys.stderr)
        try:
            with open(out) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            tail = (r.stdout + r.stderr)[-1500:]
            err = f"tvm_bench.py failed (exit {r.returncode}): {tail}"
            return {"_error": {"status": "error", "error": err}}
    recs: dict[str, dict] = {}
    for job in doc.get("jobs", []):
        if job.get("status") != "ok":
            err = f"{job.get('status')}: {job.get('stderr_tail', '')[-800:]}"
            recs["_error"] = {"status": "error", "error": err}
        for rec in job.get("steps", []):
            recs[rec["step"]] = rec
    return recs


# -- driver ------------------------------------------------------------------------------------------


def fmt_us(sec: float | None, n: int) -> str:
    if sec is None:
        return "—"
    us = sec / n * 1e6
    if us >= 100:
        return f"{us:,.0f}"
    if us >= 0.1:
        return f"{us:.3g}"
    return f"{us:.2g}"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "—"
    if r >= 1e4:
        return f"{r:.1e}x"
    return f"{r:,.0f}x" if r >= 100 else f"{r:.3g}x"


def run_workload(a, shape, n, selected, tvm_ok):
    tvm_steps = []
    for s, _, ts, _ in STEPS:
        if s in selected:
            for x in [*TVM_PREREQ.get(ts, []), ts]:
                if x not in tvm_steps:
                    tvm_steps.append(x)
    best_p: dict[str, float] = {}
    best_t: dict[str, float] = {}
    tvm_status: dict[str, str] = {}
    facts: dict[str, Any] = {}
    loads = []
    for r in range(a.repeats):
        def do_pyir(r=r):
            t, f = pyir_round(shape, n, selected, check=(r == 0))
            facts.update(f)
            for k, v in t.items():
                best_p[k] = min(v, best_p.get(k, float("inf")))

        def do_tvm(r=r):
            steps = [s for s in tvm_steps if s not in ("from_source", "script_meta")
                     or (r == 0 and n <= a.tvm_parse_max_n)]
            recs = tvm_round(a, shape, n, steps)
            if "_error" in recs:
                tvm_status["_error"] = recs["_error"]["error"]
            for k, rec in recs.items():
                if rec.get("status") == "ok" and "min_s" in rec:
                    best_t[k] = min(rec["min_s"], best_t.get(k, float("inf")))
                    tvm_status.pop(k, None)
                elif k not in best_t and rec.get("status") not in (None, "filtered"):
                    tvm_status[k] = f"{rec.get('status')}: {rec.get('reason') or rec.get('error', '')}"

        order = [do_pyir] + ([do_tvm] if tvm_ok else [])
        for fn in order if r % 2 == 0 else order[::-1]:
            loads.append(os.getloadavg()[0])
            fn()
        print(f"  [{shape} {n:,}] round {r + 1}/{a.repeats} done (load {os.getloadavg()[0]:.2f})",
              file=sys.stderr, flush=True)
    return best_p, best_t, tvm_status, facts, loads


def print_table(a, shape, n, selected, tvm_ok, best_p, best_t, tvm_status, facts, loads):
    print(f"\n### {shape}, N = {n:,} op bindings: µs per op, best of {a.repeats} alternated rounds "
          f"(load {min(loads):.1f} to {max(loads):.1f})\n")
    if tvm_ok:
        print("| step | pyir | TVM Relax | TVM / pyir | target | met |")
        print("|---|---|---|---|---|---|")
    else:
        print("| step | pyir |")
        print("|---|---|")
    for s, label, ts, target in STEPS:
        if s not in selected:
            continue
        p = best_p.get(s)
        if not tvm_ok:
            print(f"| {label} | {fmt_us(p, n)} |")
            continue
        t = best_t.get(ts)
        if t is None:
            why = tvm_status.get(ts)
            if ts == "from_source" and n > a.tvm_parse_max_n:
                why = f"skipped (N > --tvm-parse-max-n {a.tvm_parse_max_n})"
            tcell = why or "—"
        else:
            tcell = fmt_us(t, n)
        ratio = t / p if (t is not None and p) else None
        tgt = f"≥ {target:g}x" if target else ""
        met = ("yes" if ratio >= target else "no") if (target and ratio is not None) else ""
        print(f"| {label} | {fmt_us(p, n)} | {tcell} | {fmt_ratio(ratio)} | {tgt} | {met} |")
    pl, bd, bo = best_p.get("plain"), best_p.get("build"), best_p.get("build_gc_off")
    print(f"\nConstruction against plain `__slots__` objects holding the same fields (same rounds): "
          f"pyir {fmt_us(bd, n)} µs/op, plain {fmt_us(pl, n)} µs/op: **{bd / pl:.1f}x** "
          f"(target ≤ {PLAIN_TARGET:g}x: {'yes' if bd / pl <= PLAIN_TARGET else 'no'}); "
          f"pyir with the collector paused (gc.disable()): {fmt_us(bo, n)} µs/op, {bo / pl:.1f}x.")
    if facts:
        print("\nChecks (first round): " + ", ".join(f"{k}={v}" for k, v in facts.items()))
    if tvm_ok and "_error" in tvm_status:
        print(f"\nTVM run problem: {tvm_status['_error'][:600]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000", help="comma-separated op counts (default 10000)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: resnet,chain,shared")
    ap.add_argument("--steps", default=None, help="regex over the step names " + ", ".join(STEP_NAMES)
                    + " (build always runs)")
    ap.add_argument("--repeats", type=int, default=3, help="alternated rounds per side; best is kept")
    ap.add_argument("--tvm-python", default=os.environ.get("PYIR_TVM_PYTHON", ""),
                    help="python interpreter with apache-tvm installed (env PYIR_TVM_PYTHON)")
    ap.add_argument("--anchor", default=os.environ.get("PYIR_TVM_ANCHOR", DEFAULT_ANCHOR),
                    help="path of tvm_bench.py (env PYIR_TVM_ANCHOR; default %(default)s)")
    ap.add_argument("--tvm-parse-max-n", type=int, default=10000,
                    help="run TVM's parse (first round only) up to this N (default %(default)s)")
    ap.add_argument("--tvm-timeout", type=float, default=3600.0, help="seconds per TVM round")
    ap.add_argument("--json", default=None, help="also write the raw results to this file")
    ap.add_argument("--verbose", action="store_true", help="show tvm_bench.py's output")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    shapes = [s.strip() for s in a.shapes.split(",")]
    for s in shapes:
        if s not in PYIR_BUILDERS:
            ap.error(f"unknown shape {s!r} (choose from {', '.join(SHAPES)})")
    rx = re.compile(a.steps) if a.steps else None
    selected = {s for s in STEP_NAMES if s == "build" or rx is None or rx.search(s)}

    version, why = tvm_probe(a.tvm_python)
    if version is not None and not os.path.exists(a.anchor):
        version, why = None, f"anchor script {a.anchor} not found (--anchor or PYIR_TVM_ANCHOR)"
    tvm_ok = version is not None
    print(f"pyir {pyir.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores; "
          + (f"TVM {version} via {a.tvm_python} running {a.anchor}" if tvm_ok else f"TVM not found: {why}"))
    print("command: python " + " ".join(sys.argv))
    results = []
    for shape in shapes:
        for n in sizes:
            best_p, best_t, st, facts, loads = run_workload(a, shape, n, selected, tvm_ok)
            print_table(a, shape, n, selected, tvm_ok, best_p, best_t, st, facts, loads)
            results.append({"shape": shape, "N": n, "pyir_s": best_p, "tvm_s": best_t,
                            "tvm_status": st, "facts": facts, "load": loads})
    if not tvm_ok:
        print("\nTVM was not found, so only pyir was measured; pass --tvm-python PATH (or set "
              "PYIR_TVM_PYTHON) to an interpreter with apache-tvm "
              "(see ../shared/anchors/requirements-tvm.txt).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"tvm": version, "args": vars(a), "results": results}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
