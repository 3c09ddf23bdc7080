"""The tour notebook (issue 15 item 8): ``examples/tour.ipynb`` is in sync with its source
``examples/tour.py`` (``python tools/sync_tour.py`` rewrites it), and executed with nbclient
every shown object renders as HTML (or SVG), with no error, in a notebook that stays small."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _sync_tool():
    spec = importlib.util.spec_from_file_location("sync_tour", ROOT / "tools" / "sync_tour.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notebook_is_in_sync_with_its_source():
    import nbformat

    tool = _sync_tool()
    built = tool.build(tool.SOURCE.read_text(encoding="utf-8"))
    stored = nbformat.read(tool.NOTEBOOK, as_version=4)
    assert tool.same_cells(stored, built), "run: python tools/sync_tour.py --execute"


def test_notebook_executes_and_shows_html():
    tool = _sync_tool()
    nb = tool.execute(tool.build(tool.SOURCE.read_text(encoding="utf-8")), tool.SOURCE.parent, timeout=300)
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    shows = sum(1 for c in code for line in c.source.splitlines() if line.startswith("show("))
    rich = [o for o in outputs if o.output_type == "display_data"
            and ({"text/html", "image/svg+xml"} & set(o.get("data", {})))]
    assert len(rich) == shows >= 10, (len(rich), shows)
    assert any("image/svg+xml" in o.data for o in rich)  # the neighbourhood drawing, inline
    assert any("pyir-summary" in o.data.get("text/html", "") for o in rich)
    assert "TOUR OK" in "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert len(json.dumps(nb)) < 600_000  # the notebook stays small
