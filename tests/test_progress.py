"""Progress on long work (issue 15 item 6): nothing for short work or outside terminals and
notebooks, a line redrawn in place once work takes longer than the delay, only the
outermost progress shown, and a switch to turn it off."""

from __future__ import annotations

import dataclasses
import io
import time

import pytest

import pyir
from pyir import progress
from pyir.transform.base import ModulePass, Sequential


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    monkeypatch.delenv("PYIR_PROGRESS", raising=False)
    yield
    progress.set_enabled(None)


@dataclasses.dataclass(frozen=True)
class Nap(ModulePass):
    """A pass that takes ``seconds`` and changes nothing."""

    seconds: float = 0.0
    name = "Nap"

    def run(self, mod):
        time.sleep(self.seconds)
        return mod


def test_off_outside_terminals_and_notebooks(capsys):
    """A test run's stderr is not a terminal: nothing is printed, whatever the work takes."""
    assert not progress.enabled()
    Sequential([Nap(0.3)])(pyir.testing.resnet(1))
    assert capsys.readouterr().err == ""


def test_long_work_shows_a_line_and_its_final_state(monkeypatch):
    """Past the delay, the pipeline's line names the pass running and the count; closing
    draws the final state and ends the line."""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    out = io.StringIO()
    with progress.Progress("work", total=4, unit="steps", show=True, file=out) as p:
        for i in range(4):
            p.note(f"step {i}")
            p.update()
            time.sleep(progress.TICK * 1.6)
    text = out.getvalue()
    assert "work: " in text and "steps" in text and "[step" in text
    assert text.endswith("\n") and "4/4 steps 100% [step 3]" in text.splitlines()[-1]
    assert text.count("\n") == 1  # redrawn in place (\r), one line at the end


def test_short_work_shows_nothing():
    out = io.StringIO()
    with progress.Progress("quick", total=3, show=True, file=out) as p:
        p.update(3)
    assert out.getvalue() == ""


def test_pipeline_progress_forced_on(monkeypatch, capsys):
    """set_enabled(True) shows a pipeline's progress on stderr; the inner passes' own progress
    objects (a nested Sequential) are not drawn."""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    progress.set_enabled(True)
    Sequential([Nap(0.5), Sequential([Nap(0.5)]), Nap(0.0)])(pyir.testing.resnet(1))
    err = capsys.readouterr().err
    assert "pipeline: " in err and "passes" in err and ("[Nap]" in err or "[Sequential]" in err)
    assert err.count("\n") == 1 and "3/3 passes 100%" in err


def test_environment_variable_wins(monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setenv("PYIR_PROGRESS", "0")
    progress.set_enabled(True)
    assert not progress.enabled()
    Sequential([Nap(0.5)])(pyir.testing.resnet(1))
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("PYIR_PROGRESS", "1")
    progress.set_enabled(None)
    assert progress.enabled()
    with pytest.raises(pyir.WellFormedError):
        progress.set_enabled("yes")


def test_every_long_operation_reports(monkeypatch, capsys):
    """Import, save, load, diff and evaluate each open a progress (checked by recording the
    descriptions of the outermost progress objects opened)."""
    seen = []
    real_enter = progress.Progress.__enter__

    def enter(self):
        seen.append(self.desc)
        return real_enter(self)

    monkeypatch.setattr(progress.Progress, "__enter__", enter)
    m = pyir.testing.resnet(1)
    data = pyir.serialize.dumps(m)
    pyir.serialize.loads(data)
    m2 = pyir.transform.standard_pipeline()(m) if hasattr(pyir.transform, "standard_pipeline") else m
    pyir.analysis.diff.diff(m, m2)
    import numpy as np

    x = np.zeros([int(d) for d in m["main"].params[0].type_annotation.shape], "float32")
    pyir.evaluate(m, x)
    onnx = pytest.importorskip("onnx")
    from pyir.frontend.onnx import from_onnx

    g = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g",
                               [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                               [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    from_onnx(onnx.helper.make_model(g))
    for desc in ("save", "load", "pipeline", "diff", "evaluate", "ONNX import"):
        assert desc in seen, (desc, seen)


def test_in_a_notebook_one_bar_is_updated_in_place(monkeypatch):
    """In a notebook (no file given) progress is on by default and is one HTML output, a
    ``<progress>`` bar displayed once (a display id) and updated in place, so the notebook
    file keeps one small output whatever the work takes."""
    import IPython.display as ipd

    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "_in_notebook", lambda: True)
    shown: list[tuple[str, str]] = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj.data))

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(("display", obj.data))
        return Handle()

    monkeypatch.setattr(ipd, "display", display)
    assert progress.enabled()
    with progress.Progress("work", total=3, unit="steps") as p:
        p.update()
        time.sleep(progress.TICK * 1.6)  # drawn once by the ticker, then once more on closing
        p.update(2)
    kinds = [k for k, _ in shown]
    assert kinds[0] == "display" and kinds.count("display") == 1 and len(kinds) >= 2
    assert '<progress value="3" max="3"' in shown[-1][1] and "3/3 steps 100%" in shown[-1][1]
    assert all('class="pyir-progress"' in h for _, h in shown)
