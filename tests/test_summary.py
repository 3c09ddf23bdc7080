"""pyir.summary (issue 15 item 5): what a large module is, at a glance, bounded in size."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np

import pyir
from pyir import op
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.infer_type import InferType


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-3:])
        self.open.pop()


def _parse(h):
    p = _Tags()
    p.feed(h)
    p.close()
    return p.tags


def test_summary_of_a_fused_model():
    typed = InferType()(pyir.testing.resnet(2))
    fused = FuseOps()(typed)
    s = pyir.summary(fused)
    assert s.nodes == pyir.count_nodes(list(fused.functions().values()))
    convs = [n for n in pyir.post_order(fused["main"]) if isinstance(n, pyir.Call)
             and n.op is pyir.Op("nn.conv2d")]  # distinct nodes: identical fused convs are one
    assert s.ops["nn.conv2d"] == len(convs) >= 1 and sum(s.groups.values()) >= len(convs)
    assert [p for p, _, _ in s.history] == ["InferType", "FuseOps"]
    text = str(s)
    assert "main: 1 input(s) -> Tensor[(1, 10), float32]" in text
    assert "%data: Tensor[(1, 3, 8, 8), float32]" in text and "passes: InferType -> FuseOps" in text
    assert s.weight_bytes == sum(c.data.nbytes for c in pyir.post_order(fused["main"])
                                 if isinstance(c, pyir.Constant))
    h = s._repr_html_()
    tags = _parse(h)
    assert tags.count("details") == 5 and "operators: " in h and "pass history (2)" in h


def test_summary_html_is_bounded():
    """A 10^5-node chain and a module of 300 functions summarize in a few KB."""
    chain = pyir.testing.elementwise_chain(100_000)
    h1 = pyir.summary(chain)._repr_html_()
    assert len(h1) < 8_000 and "100,003 nodes" in h1
    funcs = {}
    for i in range(300):
        x = pyir.var("x", shape=(4,))
        funcs[f"f{i}"] = pyir.Function([x], op.add(x, pyir.const(np.full(4, i, "float32"))))
    h2 = pyir.summary(pyir.Module(funcs))._repr_html_()
    assert len(h2) < 12_000 and "288 more row(s) not shown" in h2
    _parse(h2)


def test_summary_of_a_function_and_bad_input():
    x = pyir.var("x", shape=(2,))
    s = pyir.summary(pyir.Function([x], op.nn.relu(x)))
    assert s.ops == {"nn.relu": 1} and repr(s).startswith("<Summary 3 nodes")  # function, relu, x
    try:
        pyir.summary(42)
    except pyir.WellFormedError as e:
        assert "Module or a Function" in str(e)
    else:
        raise AssertionError("summary(42) did not raise")
