"""Tests of ToGraphNormalForm (its interplay with the other normal forms: test_normal_forms.py)."""

import pytest

import pyir
from pyir import op
from pyir.ir.expr import Function, Let
from pyir.testing import transformer_block
from pyir.transform.to_graph_normal_form import ToGraphNormalForm


def test_gnf_lineage():
    """Values substituted by GNF derive from their let bindings."""
    x = pyir.var("x", shape=(4,))
    v = pyir.Var("v")
    value = op.nn.relu(x)
    let = Let(v, value, op.add(v, v))
    mod = pyir.Module({"main": Function([x], let)})
    out = ToGraphNormalForm()(mod)
    assert out["main"].body is op.add(value, value)
    assert value in out.find(let)
    assert let.id in out.origins(value)


def test_gnf_without_lets_is_identity():
    """GNF of a let-free module returns the same module object."""
    mod = transformer_block()
    assert ToGraphNormalForm()(mod) is mod


def test_gnf_recursive_let_is_an_error():
    """A let whose value uses its own variable has no graph form: a PassError naming the pass.
    (Only a let-bound function may use its own variable: in any other value it is free, and
    a module rejects it, issue 10 item 6.)"""
    x = pyir.var("x", shape=(4,))
    v = pyir.var("v", shape=(4,))
    with pytest.raises(pyir.WellFormedError, match="free"):
        pyir.Module({"main": Function([x], Let(v, op.add(v, x), v))})
    f, n = pyir.var("f"), pyir.var("n", shape=(4,))
    mod = pyir.Module({"main": Function([x], Let(f, Function([n], pyir.Call(f, [n])), pyir.Call(f, [x])))})
    with pytest.raises(pyir.PassError, match=r"ToGraphNormalForm.*own value"):
        ToGraphNormalForm()(mod)


def test_deep_chain_gnf(deep_chain, deep_anf):
    """GNF turns the 10**6-deep let chain back into the very same graph."""
    assert ToGraphNormalForm()(deep_anf)["main"] is deep_chain["main"]
