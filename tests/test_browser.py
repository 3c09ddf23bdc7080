"""Notebook HTML in a real browser (issue 15): headless Chromium renders the HTML of a
module with highlighted nodes, a lineage answer, a diff, the summary of a large module and an
SVG neighbourhood drawing; each screenshot is not blank and the highlighted elements are
visible (measured in the page after load).  Screenshots are kept in ``$PYIR_ARTIFACTS``
(``.ci/run`` sets it) or pytest's temporary directory.

Needs Chromium (``apt-get install chromium``; ``.ci/run`` installs it).  Without it the test is
skipped, unless ``PYIR_REQUIRE_BROWSER=1`` (set by ``.ci/run``), which makes it fail instead.
"""

from __future__ import annotations

import os

import pytest
from _browser import artifact_dir, chromium, page, render

import pyir
from pyir.analysis.diff import diff
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.infer_type import InferType
from pyir.viz import to_svg

HL_FILL = "#ffd54f"


def _need_browser():
    if chromium() is None:
        if os.environ.get("PYIR_REQUIRE_BROWSER") == "1":
            pytest.fail("PYIR_REQUIRE_BROWSER=1 but Chromium is not installed")
        pytest.skip("Chromium is not installed (apt-get install chromium)")


def _conv(mod):
    return next(n for n in pyir.ir.traverse.post_order(mod["main"]) if isinstance(n, pyir.Call)
                and getattr(n.op, "name", "") == "nn.conv2d")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    _need_browser()
    typed = InferType()(pyir.testing.resnet(2))
    fused = FuseOps()(typed)
    conv = _conv(typed)
    found = fused.find(conv)
    pages = {
        "blank": page(""),
        "module": page(fused.show(highlight=found)._repr_html_(), "span.hl"),
        "lineage": page(found._repr_html_(), "tr.rep"),
        "diff": page(diff(typed, fused)._repr_html_(), "td.chg, td.ins, td.del"),
        "summary": page(pyir.testing.elementwise_chain(20_000)._repr_html_(), "details"),
        "svg": page(to_svg(typed, engine="pyir", around=[conv], radius=2, highlight=[conv]), "g.node.hl"),
    }
    out = artifact_dir(tmp_path_factory.mktemp("browser"))
    return render(pages, out), out


def test_pages_are_not_blank(rendered):
    results, out = rendered
    blank = results.pop("blank")
    for name, got in results.items():
        assert got["exit"] == 0 and (out / f"{name}.png").exists(), name
        assert got["png_bytes"] > 2 * blank["png_bytes"], (name, got, blank)  # something was painted
        assert got["area"] > 2000 and got["chars"] > 20, (name, got)
        assert got["matched"] >= 1 and got["visible"] == got["matched"], (name, got)


def test_highlights_are_visible_and_coloured(rendered):
    """The highlighted conv: one filled node in the drawing, its line(s) in the program, the
    representative row of the find answer; all painted in a highlight colour."""
    results, _ = rendered
    got = results["svg"]
    assert got["matched"] == 1 and got["visible"] == 1
    assert got["colour"] in (HL_FILL, "rgb(255, 213, 79)"), got
    for name in ("module", "lineage"):
        got = results[name]
        assert got["matched"] >= 1 and got["visible"] == got["matched"], (name, got)
    assert results["module"]["colour"] == "rgb(255, 211, 61)"  # .pyir .hl{background:#ffd33d}
