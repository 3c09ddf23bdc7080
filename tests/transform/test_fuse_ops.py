"""Tests of FuseOps: grouping, exact round trip with DefuseOps, semantics, lineage, depth."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.analysis.interp import evaluate
from pyir.errors import PassError
from pyir.ir.expr import Call, Function, Op
from pyir.testing import check_pass, elementwise_chain, programs, random_inputs, resnet, transformer_block
from pyir.transform import PassContext
from pyir.transform.defuse_ops import DefuseOps
from pyir.transform.fuse_ops import FuseOps


def pass_context(config: dict, opt_level: int | None = None) -> PassContext:
    """TVM's ``PassContext(opt_level=, config=)``."""
    return PassContext(opt_level=opt_level, config=config)


def _fused(mod: pyir.Module) -> list[Function]:
    """The primitive function of each fused call in main (calls in post-order; structurally
    identical groups share one function, so a function may appear several times)."""
    return [n.op for n in pyir.post_order(mod["main"])
            if type(n) is Call and type(n.op) is Function and n.op.attrs.get("Primitive")]


def _ops(fn: Function) -> list[str]:
    return [n.op.name for n in pyir.post_order(fn.body) if type(n) is Call and type(n.op) is Op]


def _op_calls_outside_primitives(mod: pyir.Module) -> int:
    stop = lambda n: type(n) is Function and bool(n.attrs.get("Primitive"))  # noqa: E731
    return sum(1 for n in pyir.post_order(mod["main"], stop=stop)
               if type(n) is Call and type(n.op) is Op)


def _same_values(a: pyir.Module, b: pyir.Module) -> None:
    ins = random_inputs(a)
    ra, rb = evaluate(a, *ins), evaluate(b, *ins)
    if isinstance(ra, tuple):
        for x, y in zip(ra, rb):
            np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(rb, ra, rtol=1e-4, atol=1e-5)


def _check(mod: pyir.Module) -> pyir.Module:
    text = mod.astext()
    ids = [n.id for n in pyir.post_order(mod["main"])]
    out = FuseOps()(mod)
    assert mod.astext() == text
    assert [n.id for n in pyir.post_order(mod["main"])] == ids
    assert _op_calls_outside_primitives(out) == 0
    _same_values(mod, out)
    assert FuseOps()(out) is out
    assert DefuseOps()(out)["main"] is mod["main"]
    return out


@pytest.mark.parametrize("make", [lambda: resnet(3), lambda: resnet(3, batch_norm=False),
                                  lambda: transformer_block()], ids=["resnet", "resnet_nobn", "transformer"])
def test_models_round_trip(make):
    """FuseOps leaves the input unchanged, preserves values, is idempotent and DefuseOps undoes it exactly."""
    _check(make())


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs(mod):
    """On random programs (let, if, tuples, batch_norm): same properties as on the models."""
    _check(mod)


def test_resnet_groups_without_batch_norm():
    """conv2d+bias_add+relu form one group; the residual add+relu join the second conv's group."""
    out = FuseOps()(resnet(3, batch_norm=False))
    groups = [_ops(f) for f in _fused(out)]
    assert len(groups) == 1 + 2 * 3 + 4
    assert sorted(groups).count(["nn.conv2d", "nn.bias_add", "nn.relu"]) == 4
    assert sorted(groups).count(["nn.conv2d", "nn.bias_add", "add", "nn.relu"]) == 3
    for g in (["nn.global_avg_pool2d"], ["nn.batch_flatten"], ["nn.dense", "nn.bias_add"], ["nn.softmax"]):
        assert g in groups


def test_resnet_groups_with_batch_norm():
    """batch_norm is opaque: conv2d and batch_norm are alone; the item ``.0`` of its result is
    injective and joins the group after it (as TVM: the tuple becomes a parameter)."""
    out = FuseOps()(resnet(2))
    groups = [_ops(f) for f in _fused(out)]
    assert groups.count(["nn.batch_norm"]) == 5
    assert groups.count(["nn.conv2d"]) == 5
    assert groups.count(["add", "nn.relu"]) == 2
    assert not any(type(n) is pyir.TupleGetItem for n in pyir.post_order(out["main"].body,
                                                                        stop=lambda n: type(n) is Function))
    item_groups = [f for f in _fused(out) if type(f.body.args[0]) is pyir.TupleGetItem]
    assert item_groups and all(type(f.params[0].type_annotation) is pyir.TupleType for f in item_groups)


def test_shared_node_is_group_boundary():
    """A node with consumers in different groups is the root of its own group."""
    x = pyir.var("x", shape=(4,))
    e = op.exp(x)
    out = FuseOps()(pyir.Module.from_expr(pyir.Tuple([op.nn.relu(e), op.tanh(e)])))
    assert sorted(_ops(f) for f in _fused(out)) == [["exp"], ["nn.relu"], ["tanh"]]


def test_diamond_fuses_into_one_group():
    """A node whose consumers are all in one group joins that group (single output)."""
    x = pyir.var("x", shape=(4,))
    e = op.exp(x)
    out = FuseOps()(pyir.Module.from_expr(op.add(op.nn.relu(e), op.tanh(e))))
    assert [sorted(_ops(f)) for f in _fused(out)] == [["add", "exp", "nn.relu", "tanh"]]


def test_reduce_takes_elementwise_producers_not_injective_ones():
    """As TVM: an elementwise producer joins a reduction (its path condition allows a reduce at
    the sink), an injective one does not (every node of its path, the sink too, must be
    injective); the reduction's consumers start a new group."""
    x = pyir.var("x", shape=(2, 3))
    y = op.nn.relu(op.sum(op.transpose(op.exp(x)), axis=0))
    out = FuseOps()(pyir.Module.from_expr(y))
    assert sorted(_ops(f) for f in _fused(out)) == [["exp", "transpose"], ["nn.relu"], ["sum"]]
    y = op.nn.relu(op.sum(op.exp(x), axis=0))
    out = FuseOps()(pyir.Module.from_expr(y))
    assert sorted(_ops(f) for f in _fused(out)) == [["exp", "sum"], ["nn.relu"]]


def test_fuse_opt_level_zero_and_max_depth():
    """fuse_opt_level=0 wraps each call alone; max_fuse_depth bounds group sizes."""
    m = elementwise_chain(10)
    assert [len(_ops(f)) for f in _fused(FuseOps(fuse_opt_level=0)(m))] == [1] * 10
    assert sorted(len(_ops(f)) for f in _fused(FuseOps(max_fuse_depth=4)(m))) == [2, 4, 4]
    assert [len(_ops(f)) for f in _fused(FuseOps()(m))] == [10]
    with pytest.raises(PassError):
        FuseOps(max_fuse_depth=0)


def test_constants_become_parameters_unless_linked_and_params_are_typed():
    """As TVM: a constant other than a simple scalar becomes a parameter of its group (the
    weights here), unless ``link_params``; free inputs become parameters annotated with
    their types."""
    m = resnet(1, batch_norm=False)
    out = FuseOps()(m)
    for f in _fused(out):
        assert all(p.type_annotation is not None for p in f.params)
        assert all(type(p) is pyir.Var for p in f.params)
    assert len(_fused(out)[0].params) == 3  # data, weight, bias
    linked = FuseOps(link_params=True)(m)
    assert len(_fused(linked)[0].params) == 1  # data only: weights and bias stay inline
    with pass_context({"relay.FuseOps.link_params": True}):
        assert FuseOps()(m)["main"] is linked["main"]
    assert DefuseOps()(out)["main"] is DefuseOps()(linked)["main"] is m["main"]


def test_deterministic_functions():
    """Fusing the same input twice yields the very same function objects."""
    m = transformer_block()
    a, b = FuseOps()(m), FuseOps()(m)
    assert a["main"] is b["main"]


def test_let_and_if_regions():
    """Let values and If branches are fused separately and the result evaluates the same."""
    x = pyir.var("x", shape=(1, 2, 4, 4))
    t = pyir.Var("t")
    body = pyir.If(op.greater(op.sum(x), op.sum(op.negative(x))),
                   op.nn.relu(op.add(t, x)), op.exp(op.tanh(t)))
    m = pyir.Module({"main": pyir.Function([x], pyir.Let(t, op.multiply(op.exp(x), x), body))})
    out = _check(m)
    assert ["tanh", "exp"] in [_ops(f) for f in _fused(out)]


def test_other_functions_and_primitive_globals():
    """Every non-primitive function is fused; primitive global functions are left alone."""
    x = pyir.var("x", shape=(4,))
    y = pyir.var("y", shape=(4,))
    z = pyir.var("z", shape=(4,))  # one variable per binding, across functions too
    prim = pyir.Function([z], op.exp(op.exp(z)), attrs={"Primitive": 1})
    helper = pyir.Function([y], op.nn.relu(op.exp(y)))
    main = pyir.Function([x], Call(pyir.GlobalVar("helper"), [op.tanh(x)]))
    m = pyir.Module({"main": main, "helper": helper, "prim": prim})
    out = FuseOps()(m)
    assert out["prim"] is prim
    assert out["helper"] is not helper and out["main"] is not main
    _same_values(m, out)


def test_lineage():
    """The fused call derives from all its group's nodes; find(orig) returns the body node."""
    m = resnet(1, batch_norm=False)
    relu = next(n for n in pyir.post_order(m["main"]) if type(n) is Call and n.op.name == "nn.relu")
    out = FuseOps()(m)
    call = next(n for n in pyir.post_order(out["main"])
                if type(n) is Call and type(n.op) is Function and _ops(n.op)[-1] == "nn.relu"
                and relu.args[0].args[0].args[0] is n.args[0])
    group = [relu, relu.args[0], relu.args[0].args[0]]
    origins = out.origins(call)
    assert {g.id for g in group} <= origins
    found = out.find(relu)
    assert call.op.body in found
    assert call in found
    back = DefuseOps()(out)
    assert back.find(relu) == [relu]
    assert back.origins(relu) == {relu.id}


def test_deep_chain(deep_chain):
    """A 10**6-deep chain goes through FuseOps and DefuseOps without recursion, exactly."""
    m = deep_chain
    out = FuseOps()(m)
    assert out is not m
    assert DefuseOps()(out)["main"] is m["main"]


def test_identical_groups_share_one_function():
    """issue 10 (10^6 memory target): structurally identical groups share one primitive function
    (the very same object), so FuseOps on a long let chain builds a handful of functions, not one
    per step; share_functions=False gives each group its own."""
    m = pyir.transform.ToANormalForm()(elementwise_chain(40))
    out = FuseOps()(m)
    calls = _fused(out)
    assert len(calls) == 40
    assert len({id(f) for f in calls}) == 4  # add, multiply, relu, subtract
    relus = [f for f in calls if _ops(f) == ["nn.relu"]]
    assert len(relus) == 10 and all(f is relus[0] for f in relus)
    assert DefuseOps()(out)["main"] is m["main"]
    _same_values(m, out)
    check_pass(FuseOps(), m)
    own = FuseOps(share_functions=False)(m)
    assert len({id(f) for f in _fused(own)}) == 40
    assert DefuseOps()(own)["main"] is m["main"]
    # two identical groups in one expression: one function, two calls
    x = pyir.var("x", shape=(4,))
    y = pyir.var("y", shape=(4,))
    two = FuseOps()(pyir.Module({"main": pyir.Function([x, y], pyir.Tuple([op.nn.relu(op.exp(x)),
                                                                           op.nn.relu(op.exp(y))]))}))
    f1, f2 = _fused(two)
    assert f1 is f2 and _ops(f1) == ["exp", "nn.relu"]


def _let_chain(n: int) -> pyir.Module:
    """The A-normal form of an n-step chain, as a fresh module (no pass history)."""
    return pyir.Module({"main": pyir.transform.ToANormalForm()(elementwise_chain(n))["main"]})


@pytest.mark.parametrize("share", [True, False], ids=["shared", "own"])
def test_lineage_is_exact_per_site(share):
    """The site call derives from exactly its group's nodes, each body node from the members it
    copies (over all sites), a parameter from the inputs it receives; after FuseOps + DefuseOps
    find gives back exactly one node per old node and origins of a defused node is exactly it."""
    m = _let_chain(40)
    fused = FuseOps(share_functions=share)(m)
    old_calls = [n for n in pyir.post_order(m["main"]) if type(n) is Call]
    sites = [n for n in pyir.post_order(fused["main"]) if type(n) is Call and type(n.op) is Function]
    assert len(sites) == len(old_calls) == 40  # one call per group here (lets bound fusion)
    for old, site in zip(old_calls, sites):
        assert fused.origins(site) == {old.id}  # exactly its group
        same = [(o, s) for o, s in zip(old_calls, sites) if s.op is site.op]
        assert len(same) == (10 if share else 1)
        assert fused.origins(site.op.body) == {o.id for o, _ in same}  # every member it copies
        assert fused.origins(site.op.params[0]) == {s.args[0].id for _, s in same}  # its inputs
        found = fused.find(old)
        assert site in found and site.op.body in found and site.op in found
        assert not any(s in found for s in sites if s is not site)  # no other site
    back = DefuseOps()(fused)
    assert back["main"] is m["main"]
    for n in pyir.post_order(m["main"]):
        assert back.find(n) == [n]
        assert back.origins(n) == {n.id}
    assert [s.pass_name for s in back.history(old_calls[5])] == ["FuseOps", "DefuseOps"]


def test_lineage_is_exact_per_site_through_inline():
    """FuseOps, then the shared fused function outlined to a global Inline=1 function (each call
    deriving from the fused call it replaces), then Inline: each inlined node's origins are
    exactly the node it was before fusion, and find gives back exactly that node."""
    m = _let_chain(24)
    fused = FuseOps()(m)
    relu_fn = next(f for f in _fused(fused) if _ops(f) == ["nn.relu"])

    @pyir.transform.module_pass(name="Outline")
    def outline(mod):
        g = pyir.GlobalVar("relu_fn")
        gfn = pyir.derive(Function(relu_fn.params, relu_fn.body, relu_fn.ret_type, {"Inline": 1}), relu_fn)

        def swap(n):
            if type(n) is Call and n.op is relu_fn:
                return Call(g, n.args)  # derives from n (recorded by rewrite)
            return None

        return pyir.Module({"main": pyir.rewrite(mod["main"], swap), "relu_fn": gfn})

    out = pyir.transform.Inline()(outline(fused))
    assert "relu_fn" not in out
    assert DefuseOps()(out)["main"] is m["main"]
    relus = [n for n in pyir.post_order(m["main"]) if type(n) is Call and n.op.name == "nn.relu"]
    assert len(relus) == 6
    for r in relus:
        assert r in out.find(r) and not [c for c in out.find(r) if c is not r and c.op is r.op]
        assert out.origins(r) == {r.id}
    assert [s.pass_name for s in out.history(relus[2])] == ["FuseOps", "Inline"]


def test_shared_structure_with_other_parameter_types_is_not_shared():
    """issue 10 item (10^6 memory target): groups that differ only in a parameter's type get
    different functions and different parameters (one binder per variable)."""
    x = pyir.var("x", shape=(4,))
    y = pyir.var("y", shape=(1,))
    a = op.subtract(op.exp(x), x)  # p1: (4,)
    b = op.subtract(op.exp(x), y)  # p1: (1,), p0 the same type as above
    out = FuseOps(fuse_opt_level=0, share_functions=True)(
        pyir.Module({"main": pyir.Function([x, y], pyir.Tuple([a, b]))}))
    subs = [f for f in _fused(out) if _ops(f) == ["subtract"]]
    assert len(subs) == 2 and subs[0] is not subs[1]
    assert subs[0].params[0] is not subs[1].params[0]
    pyir.Module({"main": out["main"]})  # the binder check passes


def test_parameters_in_tvm_order():
    """Parameters are numbered as TVM's FuseOps does, depth first from the group's root with
    operands left to right: here the free input of the add comes before the exp's."""
    x, y = pyir.var("x", shape=(4,)), pyir.var("y", shape=(4,))
    out = FuseOps()(pyir.Module.from_expr(op.add(y, op.exp(x))))
    (f,) = _fused(out)
    p0, p1 = f.params
    assert f.body.args[0] is p0 and f.body.args[1].args[0] is p1
    assert out["main"].body.args == (y, x)
    assert DefuseOps()(out)["main"].body is op.add(y, op.exp(x))


def test_fused_parameter_reused_by_main_is_still_rejected():
    """A main whose parameter is a fused function's parameter (the same group fused again binds it
    twice): the module's check of FuseOps' output says so."""
    x = pyir.var("x", shape=(4, 4))
    fn = FuseOps()(pyir.Module({"main": pyir.Function([x], op.nn.relu(op.add(x, x)))}))["main"].body.op
    p0 = fn.params[0]
    mod = pyir.Module({"main": pyir.Function([p0], op.nn.relu(op.add(p0, p0)))})
    with pytest.raises(PassError, match="bound twice"):
        FuseOps()(mod)
