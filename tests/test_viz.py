"""Tests for pyir.viz: DOT output, clusters, highlight, truncation, SVG errors."""

import re
import shutil
import xml.etree.ElementTree as ET

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
    assert d.count('label="exp\\nTensor[(2), float32]"') == 1  # operator and type
    assert "label=\"exp\"" in to_dot(y, types=False)
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


def _have_graphviz():
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def test_graph_and_svg():
    """Notebooks always get an SVG: Graphviz's when installed, else pyir's own layout; DOT text
    needs Graphviz and says how to do without it."""
    m = _fused()
    target = m["main"].body
    g = viz(m, highlight=[target])
    assert isinstance(g, Graph) and "digraph" in g.source
    svg = g._repr_svg_()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    own = to_svg(m, highlight=[target], engine="pyir")
    ET.fromstring(own)  # well-formed XML
    assert own.count('class="node hl"') == 1 and f'data-id="{target.id.hex()}"' in own
    assert own.count('<g class="node') == len(re.findall(r"^ *n\d+ \[label=", to_dot(m), re.M))
    if _have_graphviz():
        assert "<svg" in to_svg(to_dot(m))
    else:
        with pytest.raises(GraphvizNotFoundError, match="engine='pyir'"):
            to_svg(to_dot(m))
        with pytest.raises(GraphvizNotFoundError, match="install"):
            to_svg(m, engine="graphviz")


def test_labels_show_attributes_and_types():
    """A call shows its operator, the attributes that differ from their defaults and its type;
    the tooltip has the id."""
    m = pyir.testing.resnet(1)
    conv = next(n for n in pyir.ir.traverse.post_order(m["main"]) if isinstance(n, pyir.Call)
                and getattr(n.op, "name", "") == "nn.conv2d")
    d = to_dot(m, around=[conv], radius=0)
    assert "nn.conv2d\\npadding=[1, 1, 1, 1]" in d and "Tensor[(1, 8, 8, 8), float32]" in d
    assert "strides" not in d  # at its default
    assert conv.id.hex()[:16] in d


def test_around_draws_a_neighbourhood():
    """around= draws what lies within radius edges of the chosen nodes, and says what is hidden."""
    m = pyir.testing.resnet(1)
    body = list(pyir.ir.traverse.post_order(m["main"]))
    relu = next(n for n in body if isinstance(n, pyir.Call) and getattr(n.op, "name", "") == "nn.relu")
    d1 = to_dot(m, around=[relu], radius=1)
    n1 = d1.count(" [label=")
    assert 2 <= n1 <= 6 and "not drawn" in d1 and "fillcolor" not in d1
    d2 = to_dot(m, around=[relu], radius=2, highlight=[relu])
    assert d2.count(" [label=") > n1 and d2.count("fillcolor") == 1
    assert to_dot(m, around=[relu.id.hex()], radius=1) == d1  # ids work as nodes do
    assert to_dot(m, around=[[relu]], radius=1) == d1  # and lists of them (find results)
    with pytest.raises(pyir.WellFormedError, match="none of the 1 node"):
        to_dot(m, around=[op.exp(pyir.var("elsewhere"))])
    with pytest.raises(pyir.WellFormedError, match="max_nodes"):
        to_dot(m, around=[relu], radius=50, max_nodes=5)


def test_around_a_deep_chain():
    """The neighbourhood of a node in a 10**5-deep chain is small and found without recursion."""
    m = pyir.testing.elementwise_chain(10**5)
    mid = m["main"].body
    for _ in range(50_000):
        mid = mid.args[0]
    d = to_dot(m, around=[mid], radius=3)
    assert d.count(" [label=") == 9  # 7 calls of the chain, and the shared x and constant
    assert "+1 in not drawn" in d and "+1 out not drawn" in d


def test_large_fused_modules_are_collapsed():
    """Past max_nodes, each fused call is one node naming its operators."""
    m = _fused()
    full = to_dot(m)
    assert "fused:" not in full and 'label="Primitive"' in full
    small = to_dot(m, max_nodes=40)
    assert "fused: nn.conv2d" in small and "cluster_1" not in small
    assert "more nodes not drawn" not in small or small.count(" [label=") <= 41
    assert "fused:" in to_dot(m, collapse=True) and "fused:" not in to_dot(m, max_nodes=40, collapse=False)


def test_bad_input():
    """Drawing something that is not IR raises a pyir error."""
    with pytest.raises(pyir.WellFormedError):
        to_dot(42)
