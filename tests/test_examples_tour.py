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
    assert "relu(x) is relu(x): True" in text
    assert "FuseOps" in text and "total" in text
    assert "alpha_equal: True" in text and "same object: False" in text
    assert "find: [<" in text and "history: [Step(" in text
    assert "~ @main:" in text and "digraph" in text
    assert text.rstrip().endswith("TOUR OK")


def test_tour_has_cells():
    """The tour is split into # %% cells."""
    assert TOUR.read_text().count("# %%") >= 6
