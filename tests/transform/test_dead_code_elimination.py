"""Tests of the DeadCodeElimination pass."""

from __future__ import annotations

from hypothesis import given, settings

import pyir
from pyir import op
from pyir.ir.traverse import post_order
from pyir.testing import check_pass
from pyir.transform.dead_code_elimination import DeadCodeElimination

DCE = DeadCodeElimination


def _check_pass(mod: pyir.Module) -> pyir.Module:
    """Run DCE and check the invariant bundle (input unchanged, same values, lineage, idempotent)."""
    return check_pass(DCE(), mod, rtol=1e-5, atol=1e-6)


def test_models():
    """resnet(3) and transformer_block have no dead code: returned unchanged."""
    for mod in (pyir.testing.resnet(3), pyir.testing.transformer_block()):
        assert _check_pass(mod) is mod


@settings(max_examples=30, deadline=None)
@given(pyir.testing.programs())
def test_random_programs(mod):
    """Random programs keep their meaning; no unused let remains; idempotent."""
    new = _check_pass(mod)
    for n in post_order(new["main"]):
        if type(n) is pyir.Let:
            assert n.var in pyir.free_vars(n.body)


def test_unused_lets_and_lineage():
    """Unused lets (also chains of them) go; find() of a dead value is empty, history says eliminated."""
    x = pyir.var("x", shape=(2,))
    a, b, c = pyir.var("a"), pyir.var("b"), pyir.var("c")
    dead1 = op.exp(x)
    dead2 = op.tanh(op.sigmoid(a))
    body = pyir.Let(a, dead1, pyir.Let(b, dead2, pyir.Let(c, op.nn.relu(x), op.add(c, c))))
    mod = pyir.Module({"main": pyir.Function([x], body)})
    new = _check_pass(mod)
    assert new["main"].body is pyir.Let(c, op.nn.relu(x), op.add(c, c))
    for dead in (dead1, dead2, op.sigmoid(a), body):
        assert new.find(dead) == []
        steps = new.history(dead)
        assert steps and steps[-1].pass_name == "DeadCodeElimination" and steps[-1].after is None
    assert new.find(op.nn.relu(x)) == [op.nn.relu(x)]


def test_unreachable_functions():
    """Functions unreachable from main are removed (and eliminated in lineage); reachable ones stay."""
    x = pyir.var("x", shape=(2,))
    y = pyir.var("y", shape=(2,))
    z = pyir.var("z", shape=(2,))
    helper = pyir.Function([y], op.nn.relu(y))
    unused_body = op.exp(op.tanh(z))
    unused = pyir.Function([z], unused_body)
    main = pyir.Function([x], pyir.Call(pyir.GlobalVar("helper"), [x]))
    mod = pyir.Module({"main": main, "helper": helper, "unused": unused})
    new = _check_pass(mod)
    assert new.names() == ["main", "helper"]
    assert new.find(unused_body) == []
    assert new.history(unused_body)[-1].after is None
    assert DCE()(pyir.Module({"helper": helper})) is not None  # no main: nothing removed
    only = pyir.Module({"helper": helper})
    assert DCE()(only) is only


def test_deep_let_chain(deep_anf):
    """A 10**6-deep let chain that is all dead is removed without recursion; a live one is kept."""
    main = deep_anf["main"]
    (x,) = main.params
    dead = pyir.Function([x], pyir.Let(pyir.Var("last"), main.body, op.nn.relu(x)))
    new = DCE()(pyir.Module({"main": dead}))
    assert new["main"].body is op.nn.relu(x)
    assert DCE()(deep_anf) is deep_anf


def test_long_chain_of_consecutive_dead_lets():
    """3x10^4 nested dead lets (each one's body the next): each stands for its body, iteratively;
    every dropped let and variable is recorded as eliminated."""
    x = pyir.var("x", shape=(2,))
    body = op.nn.relu(x)
    lets = []
    for i in range(3 * 10**4):
        body = pyir.Let(pyir.var(f"d{i}"), op.exp(x), body)
        lets.append(body)
    mod = pyir.Module({"main": pyir.Function([x], body)})
    new = DCE()(mod)
    assert new["main"].body is op.nn.relu(x)
    removed = new.pass_records[-1].removed
    assert all(let.id in removed and let.var.id in removed for let in lets[::997])
    assert new.find(lets[-1]) == []


def test_purity_walk_reused_only_while_it_holds():
    """The impure lets found by the module's purity fixpoint are reused by the let removal only
    when no callee the walk saw pure became impure later: ``@main`` is walked before ``@g``
    and ``@f`` (first seen pure), then again; ``let %a = @g()`` stays (``@g`` calls ``@f``,
    which writes a reference), the pure ``let %b`` goes."""
    from pyir.ir.adt import RefCreate, RefWrite
    from pyir.transform.dead_code_elimination import _impure_globals

    a, b, r = pyir.var("a"), pyir.var("b"), pyir.var("r")
    one = pyir.const(1.0)
    main = pyir.Function([], pyir.Let(a, pyir.Call(pyir.GlobalVar("g"), []),
                                      pyir.Let(b, op.exp(one), one)))
    g = pyir.Function([], pyir.Call(pyir.GlobalVar("f"), []))
    f = pyir.Function([], pyir.Let(r, RefCreate(one), RefWrite(r, one)))
    mod = pyir.Module({"main": main, "g": g, "f": f})
    assert next(iter(mod.names())) == "main"
    purity = _impure_globals(mod)
    assert purity is not None
    bad, known = purity
    assert bad == {"f", "g", "main"}
    assert known["main"] == {main.body}  # from the second walk of @main, the one that holds
    out = DCE()(mod)["main"].body
    assert out is pyir.Let(a, pyir.Call(pyir.GlobalVar("g"), []), one)
