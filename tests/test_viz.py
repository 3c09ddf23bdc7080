"""Tests for pyir.viz: DOT output, clusters, highlight, truncation, SVG errors."""

import shutil

import pytest

import pyir
from pyir import op
from pyir.viz import Graph, GraphvizNotFoundError, to_dot, to_svg, viz


def _fused():
    from pyir.transform.fuse_ops import FuseOps
    from pyir.transform.infer_type import InferType

    return FuseOps()(InferType()(pyir.testing.resnet(1)))


def test_dot_basic_and_sharing():
    """Each distinct node is drawn once, shared nodes have several out-edges."""
    x = pyir.var("x", shape=(2,))
    e = op.exp(x)
    y = op.add(op.nn.relu(e), op.tanh(e))
    d = to_dot(y)
    assert d.startswith('digraph "pyir" {') and d.rstrip().endswith("}")
    assert d.count('label="exp"') == 1
    assert d.count("n1 -> ") + d.count("-> n1;") >= 1
    assert d.count("->") == 5  # exp<-x, relu<-exp, tanh<-exp, add<-relu, add<-tanh


def test_clusters_and_highlight():
    """Fused primitive functions are clusters, highlighted nodes are filled."""
    m = _fused()
    target = m["main"].body
    d = to_dot(m, highlight=[target])
    assert "subgraph cluster_0" in d and 'label="@main"' in d
    assert d.count('label="Primitive"') >= 3
    assert d.count("fillcolor") == 1 and target.id.hex() in d
    assert to_dot(m, highlight=[target.id.hex()]) == d


def test_truncation_deep_chain():
    """A 10**5-deep chain is drawn truncated at max_nodes, with a note, without recursion."""
    m = pyir.testing.elementwise_chain(10**5)
    d = to_dot(m, max_nodes=100)
    assert "more nodes not drawn" in d and d.count("shape=") <= 102  # 100 nodes, the default, the note


def test_graph_and_svg():
    """to_svg renders with graphviz when available, else raises a clear pyir error."""
    g = viz(_fused())
    assert isinstance(g, Graph) and "digraph" in g.source
    try:
        import graphviz  # noqa: F401
        have = shutil.which("dot") is not None
    except ImportError:
        have = False
    if have:
        svg = to_svg(pyir.testing.resnet(1))
        assert "<svg" in svg and "</svg>" in svg
        assert "<svg" in g._repr_svg_()
    else:
        with pytest.raises(GraphvizNotFoundError, match="install"):
            g._repr_svg_()


def test_bad_input():
    """Drawing something that is not IR raises a pyir error."""
    with pytest.raises(pyir.WellFormedError):
        to_dot(42)
