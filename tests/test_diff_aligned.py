"""Diffs aligned by lineage (issue 15 item 3): old and new versions paired through the side table
(by structure where lineage is silent), only lines that really changed coloured, large diffs
folded and bounded."""

from __future__ import annotations

import numpy as np

import pyir
from pyir import op
from pyir.analysis.diff import diff
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.infer_type import InferType
from pyir.transform.simplify_inference import SimplifyInference


def test_renumbering_is_not_a_change():
    """SimplifyInference lowers each batch_norm: the lowered lines are added or changed, but the
    relu and conv lines after them, only renumbered, stay "same"."""
    m = InferType()(pyir.testing.resnet(2))
    s = SimplifyInference()(m)
    d = diff(m, s)
    rows = d.aligned("main")
    status = {r[0] for r in rows}
    assert status <= {"same", "changed", "added", "removed"} and "same" in status
    relus = [r for r in rows if r[2] and "nn.relu" in r[2]]
    assert relus and all(r[0] == "same" for r in relus)  # %3 = nn.relu(%2) vs %10 = nn.relu(%9)
    changed = [r for r in rows if r[0] == "changed"]
    assert changed and all("batch_norm" in r[2] or ".0" in r[2] for r in changed)
    assert all(h == "lineage" for _, _, h in d.pairs("main"))


def test_a_change_at_the_top_of_a_chain_colours_one_line():
    x = pyir.var("x", shape=(4,))
    h = x
    for _ in range(300):
        h = op.nn.relu(op.add(h, pyir.const(np.ones(4, "float32"))))
    f0 = pyir.Function([x], h)
    f1 = pyir.Function([x], pyir.substitute(h, {x: op.negative(x)}))
    d = diff(f0, f1)
    rows = d.aligned("<expr>")
    assert len(rows) > 600
    assert sum(r[0] != "same" for r in rows) <= 3  # the negative, and the first add reading it
    assert [h for _, _, h in d.pairs("<expr>")].count("structure") >= 1  # no lineage: by structure


def test_large_diff_html_is_folded_and_bounded():
    m = InferType()(pyir.testing.elementwise_chain(5000))
    f = FuseOps()(m)
    h = diff(m, f)._repr_html_()
    assert len(h) < 400_000
    assert "more hunk(s)" in h or "more changed line(s)" in h
    assert h.count("<details") >= 2
