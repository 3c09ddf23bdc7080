"""Tests of Inline: call-site inlining of Inline=1 functions, removal, semantics, lineage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.interp import evaluate
from pyir.ir.expr import Call, Function, GlobalVar, Let, Var
from pyir.testing import programs, random_inputs, resnet, transformer_block
from pyir.transform.inline import Inline


def _same_values(a: pyir.Module, b: pyir.Module) -> None:
    ins = random_inputs(a)
    np.testing.assert_allclose(evaluate(b, *ins), evaluate(a, *ins), rtol=1e-4, atol=1e-5)


def _outline(mod: pyir.Module) -> pyir.Module:
    """Move main's body into an Inline=1 function @body called from a new main."""
    f = mod["main"]
    params = [pyir.var(p.name_hint, p.type_annotation) for p in f.params]
    main = Function(params, Call(GlobalVar("body"), params))
    return pyir.Module({"main": main, "body": f.with_attrs(Inline=1)})


def _check(mod: pyir.Module) -> pyir.Module:
    text = mod.astext()
    ids = {n: [x.id for x in pyir.post_order(f)] for n, f in mod.items()}
    out = Inline()(mod)
    assert mod.astext() == text
    assert {n: [x.id for x in pyir.post_order(f)] for n, f in mod.items()} == ids
    assert "body" not in out
    _same_values(mod, out)
    assert Inline()(out) is out
    return out


@pytest.mark.parametrize("make", [lambda: resnet(3), lambda: transformer_block()],
                         ids=["resnet", "transformer"])
def test_models(make):
    """Inlining an outlined model restores main's body; input unchanged; same values."""
    m = make()
    out = _check(_outline(m))
    assert out["main"].body is not m["main"].body  # other parameters...
    assert pyir.astext(out["main"]) == pyir.astext(m["main"])  # ...but the same program


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs(mod):
    """Inlining an outlined random program preserves its values (lets renamed per call site)."""
    _check(_outline(mod))


@pytest.mark.parametrize("make", [lambda: resnet(2), lambda: transformer_block()],
                         ids=["resnet", "transformer"])
def test_no_inline_functions(make):
    """A module without Inline=1 functions is returned as is."""
    m = make()
    assert Inline()(m) is m


def _square_module(arg_twice: bool = False) -> tuple[pyir.Module, Function]:
    a = pyir.var("a", shape=(4,))
    t = Var("t")
    sq = Function([a], Let(t, op.multiply(a, a), op.add(t, pyir.const(1.0))), attrs={"Inline": 1})
    x = pyir.var("x", shape=(4,))
    g = GlobalVar("square")
    inner = Call(g, [x])
    main = Function([x], op.add(inner, inner) if arg_twice else Call(g, [inner]))
    return pyir.Module({"main": main, "square": sq}), sq


def test_called_twice_two_copies_and_lineage():
    """A function called at two sites gives two copies; find(callee node) returns both."""
    m, sq = _square_module()
    out = Inline()(m)
    assert "square" not in out
    mul = sq.body.value
    found = out.find(mul)
    assert len(found) == 2
    assert all(type(n) is Call and n.op is mul.op for n in found)
    lets = [n for n in pyir.post_order(out["main"]) if type(n) is Let]
    assert len(lets) == 2 and lets[0].var is not lets[1].var
    _same_values(m, out)
    assert out.history(sq)[-1].after is None  # the removed function is recorded as eliminated


def test_same_call_twice_is_one_copy():
    """The same call used twice is one node, so it is inlined once."""
    m, sq = _square_module(arg_twice=True)
    out = Inline()(m)
    assert len(out.find(sq.body.value)) == 1
    _same_values(m, out)


def test_deterministic():
    """Inlining the same module twice yields the very same functions."""
    m, _ = _square_module()
    assert Inline()(m)["main"] is Inline()(m)["main"]


def test_nested_inline_and_kept_functions():
    """Inline functions calling inline functions are inlined; other functions are kept."""
    a = pyir.var("a", shape=(4,))
    b = pyir.var("b", shape=(4,))
    c = pyir.var("c", shape=(4,))
    inner = Function([a], op.exp(a), attrs={"Inline": 1})
    outer = Function([b], op.tanh(Call(GlobalVar("inner"), [b])), attrs={"Inline": 1})
    other = Function([c], op.nn.relu(Call(GlobalVar("outer"), [c])))
    x = pyir.var("x", shape=(4,))
    main = Function([x], Call(GlobalVar("other"), [x]))
    m = pyir.Module({"main": main, "inner": inner, "outer": outer, "other": other})
    out = Inline()(m)
    assert out.names() == ["main", "other"]
    assert out["other"].body is op.nn.relu(op.tanh(op.exp(c)))
    assert out["main"] is main
    _same_values(m, out)


def test_recursive_inline_function_is_left_alone():
    """An Inline=1 function on a call cycle cannot be inlined: it and its calls stay."""
    a = pyir.var("a", shape=())
    g = GlobalVar("count")
    rec = Function([a], pyir.If(op.greater(a, pyir.const(0.0)),
                                Call(g, [op.subtract(a, pyir.const(1.0))]), a),
                   pyir.TensorType((), "float32"), attrs={"Inline": 1})
    x = pyir.var("x", shape=())
    m = pyir.Module({"main": Function([x], Call(g, [x])), "count": rec})
    assert Inline()(m) is m


def test_inline_removed_ids_and_copy_lineage_with_lets():
    """issue 10 (memory target): a removed function that was inlined lives on in its copies,
    so Inline eliminates only the function and its parameters (no walk over the kept and
    removed functions); each copied node of a let-bodied callee is an instance of the node it
    copies, and find on every callee node but those returns nodes of the output."""
    chain = pyir.testing.elementwise_chain(300)
    anf = pyir.transform.ToANormalForm()(chain)
    f = anf["main"]
    callee = Function(f.params, f.body, f.ret_type, {"Inline": 1})
    x = pyir.var("x", shape=(4,))
    k = pyir.const(np.ones(4, "float32"))
    main = Function([x], op.add(Call(GlobalVar("f"), [x]), k))
    mod = pyir.Module({"main": main, "f": callee})
    out = Inline()(mod)
    assert "f" not in out.functions()
    rec = out.pass_records[-1]
    assert rec.removed == frozenset([callee.id, *(p.id for p in callee.params)])
    for n in pyir.post_order(callee):
        if n is not callee and n not in callee.params:
            assert out.find(n), "every other callee node lives on (as instances, or shared)"
    lets = [n for n in pyir.post_order(out["main"]) if type(n) is Let]
    assert len(lets) == 300
    input_ids = {n.id for n in pyir.post_order(list(mod.functions().values()))}
    for le in lets[:20]:
        assert rec.back.get(le.id), "a copied let derives from the let it copies"
        assert out.origins(le) <= input_ids and out.origins(le)
    _same_values(mod, out)


def test_uncalled_inline_function_is_an_entry_and_stays():
    """An inline function only called from another inline function that nothing calls: the
    uncalled one is an entry and stays (as in TVM), with the other expanded into it; the
    expanded one is removed, and only its function node and parameter are eliminated (its
    body lives on in the copy: find returns it)."""
    a = pyir.var("a", shape=(4,))
    b = pyir.var("b", shape=(4,))
    inner = Function([a], op.exp(a), attrs={"Inline": 1})
    outer = Function([b], op.tanh(Call(GlobalVar("inner"), [b])), attrs={"Inline": 1})
    x = pyir.var("x", shape=(4,))
    m = pyir.Module({"main": Function([x], op.nn.relu(x)), "inner": inner, "outer": outer})
    out = pyir.testing.check_pass(Inline(), m)
    assert out.names() == ["main", "outer"]
    assert out["outer"].body is op.tanh(op.exp(b))
    rec = out.pass_records[-1]
    assert rec.removed == frozenset({inner.id, a.id})
    assert out.find(inner.body) == [op.exp(b)]


def test_copies_derive_from_the_callee_nodes_at_their_site():
    """Each copy is the callee node it copies instantiated at its call: its origins are that
    node (renamed let variables included), find on the node returns every copy, and the
    lineage is complete (every new node has origins in the input)."""
    m, sq = _square_module()
    out = pyir.testing.check_pass(Inline(), m)
    t = sq.body.var
    new_vars = [n.var for n in pyir.post_order(out["main"]) if type(n) is Let]
    assert len(new_vars) == 2 and t not in new_vars
    assert sorted(out.find(t), key=id) == sorted(new_vars, key=id)
    for v in new_vars:
        assert out.origins(v) == {t.id}
    for c in out.find(sq.body.value):
        assert out.origins(c) == {sq.body.value.id}
    # the calls are no origin of what replaced them (an instance of an ordinary callee node is
    # that node)
    calls = [n for n in pyir.post_order(m["main"]) if type(n) is Call and type(n.op) is GlobalVar]
    assert all(out.find(c) == [] for c in calls)


@settings(max_examples=25, deadline=None)
@given(programs())
def test_inline_lineage_complete_on_random_programs(mod):
    """Outlined random programs (lets renamed per site): input unchanged, same values, every new
    node has origins in the input, idempotent (check_pass)."""
    pyir.testing.check_pass(Inline(), _outline(mod))
