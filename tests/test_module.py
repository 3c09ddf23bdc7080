"""Module: construction checks, functional updates and key normalization."""

from __future__ import annotations

import pytest

import pyir
from pyir import op


def _twice_bound():
    v = pyir.Var("v")
    a = pyir.var("a", shape=(2,))
    b = pyir.var("b", shape=(3,), dtype="int32")
    return pyir.Tuple([pyir.Let(v, a, op.add(v, v)), pyir.Let(v, b, op.add(v, v))])


def _nested_rebinding():
    x = pyir.var("x", shape=(2,))
    inner = pyir.Function([x], op.exp(x))
    return pyir.Function([x], pyir.Tuple([op.exp(x), pyir.Call(inner, [op.log(x)])]))


@pytest.mark.parametrize("build", [_twice_bound, _nested_rebinding])
def test_module_rejects_a_var_bound_by_two_binders(build):
    """A variable bound by two different Let/Function nodes makes building a module fail."""
    e = build()
    with pytest.raises(pyir.WellFormedError, match="bound twice"):
        pyir.Module.from_expr(e)
    f = e if isinstance(e, pyir.Function) else pyir.Function(pyir.free_vars(e), e)
    ok = pyir.Module({"main": pyir.Function([pyir.var("y")], pyir.var("z"))})
    with pytest.raises(pyir.WellFormedError):
        ok.with_function("g", f)
    with pytest.raises(pyir.WellFormedError):
        ok.with_functions({"g": f})


def test_a_shared_binder_is_fine():
    """One Let node used twice (so its var has one binder) builds a module."""
    x = pyir.var("x", shape=(2,))
    v = pyir.Var("v")
    let = pyir.Let(v, x, op.exp(v))
    mod = pyir.Module.from_expr(pyir.Tuple([let, op.add(let, let)]))
    assert mod["main"].params == (x,)


def test_with_functions_normalizes_keys():
    """with_functions accepts GlobalVars as keys, and rejects other keys with WellFormedError."""
    x = pyir.var("x")
    f = pyir.Function([x], op.exp(x))
    g = pyir.Function([x], op.log(x))
    mod = pyir.Module({"main": f})
    m2 = mod.with_functions({pyir.GlobalVar("g"): g})
    assert m2.names() == ["main", "g"] and m2["g"] is g
    assert m2.with_functions({pyir.GlobalVar("g"): g}) is m2
    assert m2.with_functions({pyir.GlobalVar("g"): None}).names() == ["main"]
    assert m2.with_functions({pyir.GlobalVar("main"): g})["main"] is g
    with pytest.raises(pyir.WellFormedError):
        mod.with_functions({1: g})


@pytest.mark.parametrize("key", [[1], 1, None, b"main", ("main",)])
def test_contains_is_false_for_non_name_keys(key):
    """``key in mod`` is False (no TypeError) for keys that are neither str nor GlobalVar."""
    x = pyir.var("x")
    mod = pyir.Module({"main": pyir.Function([x], x)})
    assert key not in mod
    assert "main" in mod and pyir.GlobalVar("main") in mod
