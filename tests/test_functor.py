"""Traversals, visitors and mutators: memoized, iterative, sharing-preserving."""

from __future__ import annotations

import pytest

import pyir
from pyir import op
from pyir.traverse import bound_vars, free_vars, iter_calls, post_order, pre_order


def test_post_order_visits_each_distinct_node_once_children_first():
    """post_order lists every distinct node once, after its children."""
    m = pyir.testing.shared_dag(300)
    order = post_order(m["main"])
    assert len(order) == len(set(order))
    pos = {n: i for i, n in enumerate(order)}
    for n in order:
        for c in n.children():
            assert pos[c] < pos[n]
    assert set(pre_order(m["main"])) == set(order)


def test_free_and_bound_vars_respect_scopes():
    """Function params and let vars bind; other uses are free."""
    x, y, v = pyir.var("x", shape=(2,)), pyir.var("y", shape=(2,)), pyir.var("v")
    inner = pyir.Function([x], op.add(x, y))
    e = pyir.Let(v, pyir.Call(inner, [y]), op.add(v, x))
    assert free_vars(e) == [y, x]
    assert set(bound_vars(e)) == {x, v}


def test_iter_calls_with_op_name_skips_subgraphs():
    """iter_calls finds calls of one op; the operator summary prunes the walk."""
    m = pyir.testing.resnet(5, batch_norm=False)
    convs = list(iter_calls(m["main"], "nn.conv2d"))
    assert len(convs) == 11
    assert len(list(iter_calls(m["main"], "nn.softmax"))) == 1
    assert len(list(iter_calls(m["main"], "nn.lrn"))) == 0


def test_identity_mutator_returns_same_objects():
    """A mutator that changes nothing returns its input object, for functions and modules."""
    m = pyir.testing.transformer_block()
    assert pyir.ExprMutator().visit(m["main"]) is m["main"]
    assert pyir.rewrite(m["main"], lambda n: None) is m["main"]


class _CountingRelu(pyir.ExprMutator):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def visit_Call(self, call):
        self.calls += 1
        if call.op is pyir.Op("nn.relu"):
            return op.nn.leaky_relu(call.args[0], alpha=0.1)
        return call


def test_mutator_visits_shared_nodes_once_and_rebuilds_only_the_path():
    """Each distinct node is visited once; only ancestors of changed nodes are rebuilt."""
    x = pyir.var("x", shape=(2,))
    r = op.nn.relu(x)
    untouched = op.exp(x)
    e = pyir.Tuple([op.add(r, r), op.multiply(r, untouched), untouched])
    mut = _CountingRelu()
    out = mut.visit(e)
    assert mut.calls == 4
    assert out.fields[2] is untouched and out.fields[1].args[1] is untouched
    assert out.fields[0].args[0] is op.nn.leaky_relu(x, alpha=0.1)
    assert _CountingRelu().visit(out) is out


def test_small_edit_rebuilds_o_depth_nodes():
    """Rewriting one relu deep in a 10^5-node model creates O(depth) new nodes, not O(n)."""
    m = pyir.testing.elementwise_chain(100_000)
    main = m["main"]
    target = post_order(main)[500]
    while not (isinstance(target, pyir.Call) and target.op is pyir.Op("nn.relu")):
        target = target.args[0]
    out = pyir.rewrite(main, lambda n: op.tanh(n.args[0]) if n is target else None)
    before = set(post_order(main))
    new_nodes = [n for n in post_order(out) if n not in before]
    # the path from the edit to the root, plus the function node
    assert len(new_nodes) < 100_000 - 400
    edit = pyir.testing.shared_dag(20_000)
    relus = list(iter_calls(edit["main"], "nn.relu"))
    out2 = pyir.rewrite(edit["main"], lambda n: op.exp(n.args[0]) if n is relus[0] else None)
    new2 = set(post_order(out2)) - set(post_order(edit["main"]))
    assert 0 < len(new2) < 20_000 // 2


def test_mutator_rejects_non_var_params():
    """Replacing a function parameter by a non-variable is a clear error."""
    x = pyir.var("x", shape=(2,))
    f = pyir.Function([x], op.exp(x))
    with pytest.raises(pyir.WellFormedError, match="parameter"):
        pyir.rewrite(f, lambda n: pyir.const(1.0) if n is x else None)


def test_substitute_and_visitor():
    """substitute replaces vars; ExprVisitor hooks see each node once."""
    x = pyir.var("x", shape=(2,))
    e = op.add(op.exp(x), op.exp(x))
    assert pyir.substitute(e, {x: pyir.const(1.0)}) is op.add(op.exp(pyir.const(1.0)),
                                                               op.exp(pyir.const(1.0)))

    class Count(pyir.ExprVisitor):
        def __init__(self):
            super().__init__()
            self.n = 0

        def visit_Call(self, call):
            self.n += 1

    c = Count()
    c.visit(e)
    assert c.n == 2


def test_deep_chain_walks_and_rewrites_and_drops(deep_chain):
    """Walk, rewrite and free a 10^6-deep chain without RecursionError."""
    main = deep_chain["main"]
    assert len(post_order(main)) == 10**6 + 3
    assert pyir.ExprMutator().visit(main) is main
    out = pyir.rewrite(main, lambda n: op.tanh(n.args[0]) if isinstance(n, pyir.Call)
                       and n.op is pyir.Op("nn.relu") else None)
    assert out is not main
    assert sum(1 for n in pre_order(main)) == 10**6 + 3
    del out
