"""Runs examples/tour.py end to end and checks its output."""

import pathlib
import subprocess
import sys

TOUR = pathlib.Path(__file__).resolve().parent.parent / "examples" / "tour.py"


def test_tour_runs():
    """The tour script runs in a fresh process and prints every section's results."""
    out = subprocess.run([sys.executable, str(TOUR)], capture_output=True, text=True, timeout=300,
                         cwd=TOUR.parent.parent)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("Module: 1 function(s)")  # the summary
    assert "nn.relu(%data)" in text  # a node, built twice: one object (asserted in the script)
    assert "FuseOps" in text and "total" in text  # the pass report
    assert "/* ty=Tensor[" in text  # the fused module with types
    assert "hit(s)" in text and "the representative" in text  # find
    assert "origins of <Call nn.conv2d" in text and "history of <Call nn.conv2d" in text
    assert "@main: " in text and "row(s)" in text  # tabular
    assert "~ @main:" in text and "alpha_hash: " in text and "<Graph: " in text
    assert text.rstrip().endswith("TOUR OK")


def test_tour_has_cells():
    """The tour is split into # %% cells."""
    assert TOUR.read_text().count("# %%") >= 6
