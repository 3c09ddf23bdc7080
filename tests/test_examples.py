"""Every example script runs and prints what it promises."""

from __future__ import annotations

import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _run(name: str) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_quickstart_runs():
    """examples/quickstart.py builds, prints, evaluates, transforms and tracks an expression."""
    out = _run("quickstart.py")
    assert "def @main(%x: Tensor[(1, 3, 8, 8), float32])" in out
    assert "relu became: <Call tanh(" in out and "unchanged subtree shared: True" in out


def test_track_through_passes_runs():
    """examples/track_through_passes.py recovers an expression after FuseOps, DefuseOps and more."""
    out = _run("track_through_passes.py")
    assert "recovered the very same expression: True" in out
    assert "defused main is the typed original main: True" in out
    assert "origins of the found call include the original: True" in out
    assert "input module unchanged: True" in out


def test_store_runs():
    """examples/store.py stores a pipeline's stages, queries lineage from the stored edges, rebuilds."""
    out = _run("store.py")
    assert "get returns the live module's nodes: True" in out
    assert "find agrees with the rebuilt module: True" in out
    assert "snapshots: ok" in out and "Step(FuseOps:" in out


def test_parallel_runs():
    """examples/parallel.py maps a pipeline over modules and a file on a two-worker LocalCluster."""
    out = _run("parallel.py")
    assert "workers: 2" in out
    assert "same modules as in-process, in input order: True" in out
    assert "a relu of the input found in the result: True" in out
    assert "passes: ['SimplifyInference', 'FoldConstant', 'FuseOps']" in out
