"""examples/onnx_resnet50.py runs and prints what it promises."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("onnx")  # a test dependency: installed in CI, so this never skips there

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_onnx_resnet50_example_runs() -> None:
    """The example imports ResNet-50, fuses it and maps every fused group back to ONNX nodes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "onnx_resnet50.py")], capture_output=True,
                          text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "main returns Tensor[(1, 1000), float32]" in out
    assert "<- n0:Conv, n1:BatchNormalization, n2:Relu" in out
    assert "<- n175:Softmax" in out
    assert "ONNX compute nodes covered by the fused groups: 176/176" in out
    assert "fused module computes the same probabilities: True" in out
