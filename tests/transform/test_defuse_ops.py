"""Tests of DefuseOps: exact inverse of FuseOps, semantics, lineage, nested and shared primitives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.interp import evaluate
from pyir.ir.expr import Call, Function
from pyir.testing import programs, random_inputs, resnet, transformer_block
from pyir.transform.defuse_ops import DefuseOps
from pyir.transform.fuse_ops import FuseOps

MODELS = {
    "resnet": lambda: resnet(3),
    "resnet4": lambda: resnet(4),
    "resnet4_nobn": lambda: resnet(4, batch_norm=False),
    "transformer": lambda: transformer_block(),
}


def _same_values(a: pyir.Module, b: pyir.Module) -> None:
    ins = random_inputs(a)
    np.testing.assert_allclose(evaluate(b, *ins), evaluate(a, *ins), rtol=1e-4, atol=1e-5)


def _check_round_trip(mod: pyir.Module) -> None:
    fused = FuseOps()(mod)
    text = fused.astext()
    ids = [n.id for n in pyir.post_order(fused["main"])]
    back = DefuseOps()(fused)
    assert fused.astext() == text
    assert [n.id for n in pyir.post_order(fused["main"])] == ids
    assert back["main"] is mod["main"]
    _same_values(fused, back)
    assert DefuseOps()(back) is back


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_round_trip(name):
    """DefuseOps(FuseOps(m))["main"] is m["main"]; input unchanged; same values; idempotent."""
    _check_round_trip(MODELS[name]())


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs_round_trip(mod):
    """The exact round trip holds on random programs (let, if, tuples, batch_norm)."""
    _check_round_trip(mod)


@pytest.mark.parametrize("name", ["resnet", "transformer"])
def test_unfused_module_is_returned_as_is(name):
    """DefuseOps on a module without primitive functions returns the very same module."""
    m = MODELS[name]()
    assert DefuseOps()(m) is m


@settings(max_examples=25, deadline=None)
@given(programs())
def test_unfused_random_program_is_returned_as_is(mod):
    """Random programs contain no primitive function: DefuseOps returns them unchanged."""
    assert DefuseOps()(mod) is mod


def test_hand_written_primitive_called_twice():
    """A primitive function called at two sites is inlined at both, with the right values."""
    p = pyir.var("p", shape=(4,))
    t = pyir.Var("t")
    fn = Function([p], pyir.Let(t, op.exp(p), op.add(t, p)), attrs={"Primitive": 1})
    x = pyir.var("x", shape=(4,))
    m = pyir.Module({"main": Function([x], Call(fn, [Call(fn, [x])]))})
    out = DefuseOps()(m)
    assert not any(type(n) is Function for n in pyir.post_order(out["main"].body))
    lets = [n for n in pyir.post_order(out["main"]) if type(n) is pyir.Let]
    assert len(lets) == 2 and lets[0].var is not lets[1].var
    _same_values(m, out)


def test_nested_primitive():
    """A primitive function whose body calls another primitive function is fully inlined."""
    q = pyir.var("q", shape=(4,))
    inner = Function([q], op.tanh(q), attrs={"Primitive": 1})
    p = pyir.var("p", shape=(4,))
    outer = Function([p], op.exp(Call(inner, [p])), attrs={"Primitive": 1})
    x = pyir.var("x", shape=(4,))
    m = pyir.Module({"main": Function([x], Call(outer, [x]))})
    assert DefuseOps()(m)["main"].body is op.exp(op.tanh(x))


def test_lineage_round_trip():
    """After FuseOps+DefuseOps, find on an original expression returns that very expression."""
    m = resnet(2, batch_norm=False)
    back = DefuseOps()(FuseOps()(m))
    for n in pyir.post_order(m["main"]):
        if type(n) is Call:
            assert back.find(n) == [n]
    relu = m["main"].body.args[0].args[0]
    assert back.origins(relu) == {relu.id}


def test_lineage_defused_nodes_derive_from_body_nodes():
    """Each defused node derives from the fused body node it replaces."""
    m = resnet(1, batch_norm=False)
    fused = FuseOps()(m)
    back = DefuseOps()(fused)
    bodies = [n for n in pyir.post_order(fused["main"]) if type(n) is Function and n.attrs.get("Primitive")]
    body_node = bodies[-1].body
    found = back.find(body_node)
    assert len(found) == 1 and type(found[0]) is Call and found[0].op is body_node.op


def test_annotated_return_type_round_trip():
    """A main with a return type annotation keeps it through FuseOps and DefuseOps."""
    m = resnet(2, batch_norm=False)
    f = m["main"]
    m = pyir.Module({"main": Function(f.params, f.body, m.type_of(f.body))})
    fused = FuseOps()(m)
    assert fused["main"].ret_type is m["main"].ret_type
    assert DefuseOps()(fused)["main"] is m["main"]


def test_defuse_streaming_walk_restores_lets_and_lineage():
    """issue 10 (memory target): DefuseOps walks with its memo as the set of nodes done (no
    post-order list); FuseOps + DefuseOps still gives back the let chain itself, and ``find``
    on a let value of the input returns that very node."""
    anf = pyir.transform.ToANormalForm()(pyir.testing.elementwise_chain(500))
    fused = FuseOps()(anf)
    back = DefuseOps()(fused)
    assert back["main"] is anf["main"]
    e = anf["main"].body
    for _ in range(7):
        e = e.body
    assert e.value in back.find(e.value)


def test_hand_written_primitive_lineage_at_both_sites():
    """An ordinary (hand-written) primitive function called at two sites: each copy derives
    from the body node it copies, find on a body node returns both copies."""
    p = pyir.var("p", shape=(4,))
    body = op.exp(op.tanh(p))
    fn = Function([p], body, attrs={"Primitive": 1})
    x = pyir.var("x", shape=(4,))
    m = pyir.Module({"main": Function([x], op.add(Call(fn, [x]), Call(fn, [op.negative(x)])))})
    out = pyir.testing.check_pass(DefuseOps(), m)
    copies = out.find(body)
    assert set(copies) == {op.exp(op.tanh(x)), op.exp(op.tanh(op.negative(x)))}
    for c in copies:
        assert out.origins(c) == {body.id}
    assert out.find(body.args[0]) == sorted([op.tanh(x), op.tanh(op.negative(x))], key=lambda n: n.id)


def _fresh(mod: pyir.Module) -> pyir.Module:
    return pyir.Module(dict(mod.items()))


@pytest.mark.parametrize("name", ["resnet", "transformer", "let_chain"])
def test_shared_functions_defuse_with_exact_lineage(name):
    """Structurally identical groups share one function, yet after FuseOps + DefuseOps every
    old node is found as exactly itself and a defused node's origins are exactly it."""
    make = {"let_chain": lambda: pyir.transform.ToANormalForm()(pyir.testing.elementwise_chain(30)), **MODELS}
    m = _fresh(make[name]())
    fused = FuseOps()(m)
    prims = [n.op for n in pyir.post_order(fused["main"]) if type(n) is Call and type(n.op) is Function]
    assert len(set(map(id, prims))) < len(prims)  # some function is shared by several calls
    back = DefuseOps()(fused)
    assert back["main"] is m["main"]
    for n in pyir.post_order(m["main"]):
        assert back.find(n) == [n]
        if type(n) is Call:
            assert back.origins(n) == {n.id}


def test_defused_nodes_after_rewrites_around_them():
    """The calls' arguments rewritten between FuseOps and DefuseOps: the defused nodes are new,
    and each derives from exactly the node it was before fusion."""
    m = _fresh(pyir.testing.elementwise_chain(16))
    fused = FuseOps(fuse_opt_level=0)(m)  # one call per group: 4 shared functions
    x = m["main"].params[0]

    @pyir.transform.module_pass(name="NegateInput")
    def negate(mod):
        f = mod["main"]
        y = pyir.var("y", shape=(4,))
        body = pyir.rewrite(f.body, lambda n: op.negative(y) if n is x else None)
        return pyir.Module({"main": Function([y], body)})

    out = DefuseOps()(negate(fused))
    relus = [n for n in pyir.post_order(m["main"]) if type(n) is Call and n.op.name == "nn.relu"]
    news = [n for n in pyir.post_order(out["main"]) if type(n) is Call and n.op.name == "nn.relu"]
    assert len(relus) == len(news) == 4 and not set(relus) & set(news)
    for old in relus:
        (found,) = [n for n in out.find(old) if type(n) is Call and n.op is old.op]
        assert out.origins(found) == {old.id}


def test_deep_let_chain_round_trip_and_lineage(deep_anf):
    """10^6-deep let chain: FuseOps shares four functions, DefuseOps restores the chain exactly,
    and find on a node deep in it gives back exactly that node."""
    fused = FuseOps()(deep_anf)
    prims = {id(n) for n in pyir.post_order(fused["main"].body) if type(n) is Function}
    assert len(prims) == 4  # add, multiply, relu, subtract
    back = DefuseOps()(fused)
    assert back["main"] is deep_anf["main"]
    e = deep_anf["main"].body
    for _ in range(500_000):
        e = e.body
    k = len(deep_anf.pass_records)
    assert back.find(e.value) == [e.value] and back.origins(e.value, since=k) == {e.value.id}
