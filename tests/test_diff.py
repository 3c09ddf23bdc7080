"""Tests for pyir.analysis.diff: exactly the changed region is reported."""

import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.diff import changed_nodes, diff, height


def _chain(x, n, swap=None, new_op=op.tanh):
    nodes = []
    h = x
    for i in range(n):
        h = new_op(h) if i == swap else op.nn.relu(h)
        nodes.append(h)
    return nodes


def test_one_relu_changes():
    """Changing one relu of a chain: new = its replacement and its ancestors, removed = the old path."""
    x = pyir.var("x", shape=(4,))
    old = _chain(x, 12)
    new = old[:5] + _chain(old[4], 7, swap=0, new_op=op.sigmoid)
    fa, fb = pyir.Function([x], old[-1]), pyir.Function([x], new[-1])
    y = pyir.var("y", shape=(4,))
    ma = pyir.Module({"main": fa, "other": pyir.Function([y], y)})
    mb = ma.with_function("main", fb)
    d = diff(ma, mb)
    assert d.changed == ["main"] and d.added == [] and d.removed == []
    fd = d.functions["main"]
    assert set(fd.new) == set(new[5:]) | {fb}
    assert set(fd.removed) == set(old[5:]) | {fa}
    assert old[4] in fd.frontier
    assert fd.shared == 6  # x and old[0..4]
    text = str(d)
    assert "-  %5 = nn.relu(%4);" in text and "+  %5 = sigmoid(%4);" in text


def test_added_removed_functions():
    """Added and removed functions are listed with their nodes."""
    x = pyir.var("x", shape=(4,))
    m1 = pyir.Module({"main": pyir.Function([x], op.nn.relu(x))})
    y = pyir.var("y", shape=(4,))
    m2 = pyir.Module({"main": m1["main"], "g": pyir.Function([y], op.tanh(y))})
    d = diff(m1, m2)
    assert d.added == ["g"] and not d.changed and len(d.functions["g"].new) == 3
    assert diff(m2, m1).removed == ["g"]
    assert not diff(m1, m1) and str(diff(m1, m1)).startswith("no changes")


def test_expressions():
    """diff of two expressions reports new and removed nodes."""
    x = pyir.var("x", shape=(4,))
    a, b = op.nn.relu(op.exp(x)), op.tanh(op.exp(x))
    d = diff(a, b)
    assert d.new_nodes == [b] and d.removed_nodes == [a]


def test_shared_subgraph_below_new_node():
    """A node reachable from both sides through a shared parent is never reported as new."""
    x = pyir.var("x", shape=(4,))
    s = op.exp(x)
    p = op.nn.relu(s)  # shared parent
    before = pyir.Tuple([p, op.sigmoid(x)])
    after = pyir.Tuple([p, op.add(s, s)])  # new node reusing s, which is under p
    d = diff(before, after)
    assert set(d.new_nodes) == {after, op.add(s, s)}
    assert set(d.removed_nodes) == {before, op.sigmoid(x)}


def test_height():
    """height is the longest path to a leaf."""
    x = pyir.var("x", shape=(4,))
    assert height(x) == 0 and height(op.nn.relu(op.nn.relu(x))) == 2


@settings(max_examples=30, deadline=None)
@given(pyir.testing.programs(), pyir.testing.programs())
def test_matches_set_difference(m1, m2):
    """changed_nodes agrees with the set difference of the two full node sets."""
    a, b = m1["main"], m2["main"]
    sa, sb = set(pyir.post_order(a)), set(pyir.post_order(b))
    new, removed, _ = changed_nodes([a], [b])
    assert set(new) == sb - sa and len(new) == len(set(new))
    assert set(removed) == sa - sb


def test_errors():
    """Mixing a module and an expression raises a pyir error."""
    with pytest.raises(pyir.WellFormedError):
        diff(pyir.testing.resnet(1), pyir.const(1.0))


def test_deep_chain():
    """Diff of an edit at the top of a 10**5-deep chain works without recursion."""
    m = pyir.testing.elementwise_chain(10**5)
    f = m["main"]
    m2 = m.with_function("main", f.with_body(op.tanh(f.body)))
    d = diff(m, m2)
    assert len(d.functions["main"].new) == 2 and len(d.functions["main"].removed) == 1
