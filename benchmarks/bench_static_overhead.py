"""Do symbolic dimensions slow static programs?  (issue 12: within 5% on a static ResNet.)

Runs the same static workload with two checkouts of pyir, each in its own subprocess (two
versions of a package cannot share one process), alternating round by round so machine
load hits both alike, and reports the best CPU time of each step and their ratio:

* ``build``: the resnet-style module of ``bench_vs_tvm.py`` (10^4 ops, real conv attributes),
  freshly built (its nodes freed between rounds);
* ``infer``: ``InferType`` on it; ``fuse``: ``FuseOps``; ``fold``: ``FoldConstant`` after
  ``SimplifyInference``; ``anf``: ``ToANormalForm``; ``print``: ``astext``; ``dumps``.

    python benchmarks/bench_static_overhead.py --baseline b11fbdc      # a git revision
    python benchmarks/bench_static_overhead.py --baseline /path/to/checkout --rounds 7

A revision is checked out into a temporary ``git worktree`` (removed afterwards).  The
candidate is this checkout unless ``--candidate`` names another revision or path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

WORKER = r"""
import gc, json, sys, time
sys.setrecursionlimit(10000)
import pyir
from pyir import op
from pyir.transform import FoldConstant, FuseOps, InferType, SimplifyInference, ToANormalForm

def resnet(n, c=16, hw=8):
    Var, T = pyir.Var, pyir.TensorType
    x = Var("x", T((1, c, hw, hw), "float32"))
    params, ws = [x], []
    for b in range(n // 7):
        w = (Var(f"w{b}_1", T((c, c, 3, 3), "float32")), Var(f"b{b}_1", T((1, c, 1, 1), "float32")),
             Var(f"w{b}_2", T((c, c, 3, 3), "float32")), Var(f"b{b}_2", T((1, c, 1, 1), "float32")))
        ws.append(w)
        params += w
    h = x
    for w1, b1, w2, b2 in ws:
        t = op.nn.relu(op.add(op.nn.conv2d(h, w1, padding=(1, 1)), b1))
        h = op.nn.relu(op.add(op.add(op.nn.conv2d(t, w2, padding=(1, 1)), b2), h))
    for _ in range(n - 7 * len(ws)):
        h = op.nn.relu(h)
    return pyir.Module({"main": pyir.Function(params, h)})

def cpu(fn):
    gc.collect()
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out

n = int(sys.argv[1])
res = {}
res["build"], mod = cpu(lambda: resnet(n))
res["infer"], typed = cpu(lambda: InferType()(mod))
res["fuse"], _ = cpu(lambda: FuseOps()(mod))
res["fold"], _ = cpu(lambda: FoldConstant()(SimplifyInference()(typed)))
res["anf"], _ = cpu(lambda: ToANormalForm()(mod))
res["print"], _ = cpu(lambda: mod.astext())
res["dumps"], _ = cpu(lambda: pyir.dumps(mod))
print(json.dumps(res))
"""


def checkout(rev: str, tmp: Path) -> Path:
    """A path holding revision ``rev`` (a path is used as it is)."""
    p = Path(rev)
    if p.exists():
        return p.resolve()
    dest = tmp / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(dest), rev],
                   check=True, capture_output=True)
    return dest


def run(path: Path, n: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run([sys.executable, "-c", WORKER, str(n)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git revision or checkout path")
    ap.add_argument("--candidate", default=str(REPO), help="git revision or checkout path (default: here)")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        made = []
        try:
            paths = []
            for rev in (args.baseline, args.candidate):
                p = checkout(rev, Path(tmp))
                if not Path(rev).exists():
                    made.append(p)
                paths.append(p)
            best: list[dict[str, float]] = [{}, {}]
            for _ in range(args.rounds):
                for i, p in enumerate(paths):
                    for k, v in run(p, args.n).items():
                        best[i][k] = min(v, best[i].get(k, v))
        finally:
            for p in made:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(p)],
                               capture_output=True)
    print(f"# static resnet, {args.n} ops, best CPU seconds of {args.rounds} alternating rounds")
    print(f"# baseline {args.baseline}, candidate {args.candidate}\n")
    print("| step | baseline s | candidate s | candidate / baseline |")
    print("|---|---|---|---|")
    for k in best[0]:
        print(f"| {k} | {best[0][k]:.4f} | {best[1][k]:.4f} | **{best[1][k] / best[0][k]:.3f}** |")
    total0, total1 = sum(best[0].values()), sum(best[1].values())
    print(f"| all | {total0:.4f} | {total1:.4f} | **{total1 / total0:.3f}** |")


if __name__ == "__main__":
    main()
