"""The module check's fast path for fused bodies (a body whose inner functions are closed
primitive functions, as FuseOps makes): it accepts exactly the well-formed ones, and every
other input gets the error of the general scope walk, word for word."""

from __future__ import annotations

import pytest

import pyir
from pyir.ir import module as module_mod
from pyir.transform import FuseOps

relu, add = pyir.op.nn.relu, pyir.op.add


def _error(f: pyir.Function) -> str | None:
    """The module check's verdict on ``f`` (None: accepted), run on a fresh node."""
    module_mod._closed_checked.discard(f)
    try:
        pyir.Module({"main": f})
    except pyir.WellFormedError as e:
        return str(e)
    return None


def _general_error(f: pyir.Function, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The same verdict with the fast path switched off (the general scope walk)."""
    with monkeypatch.context() as m:
        m.setattr(module_mod, "_closed_with_closed_functions", lambda f: False)
        m.setattr(module_mod, "_closed_let_spine", lambda f: False)
        return _error(f)


def _call(f: pyir.Expr, *args: pyir.Expr) -> pyir.Call:
    return pyir.Call(f, list(args))


def _no_general_walk(f: object) -> None:
    raise AssertionError("the general scope walk ran")


def _prim(params: list[pyir.Var], body: pyir.Expr) -> pyir.Function:
    return pyir.Function(params, body, None, {"Primitive": 1})


def test_fused_bodies_are_accepted_by_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    x = pyir.var("x", shape=(2,))
    p, q = pyir.var("p", shape=(2,)), pyir.var("q", shape=(2,))
    g = _prim([p], relu(p))
    h = _prim([p, q], add(p, q))  # shares %p with g: a second binder of %p
    shared = pyir.Function([x], _call(g, _call(g, x)))  # one function node at two places: one binder
    two = pyir.Function([x], add(_call(g, x), _call(_prim([q], relu(q)), x)))
    calls = []
    monkeypatch.setattr(module_mod, "_closed_with_closed_functions",
                        lambda f, real=module_mod._closed_with_closed_functions: calls.append(f) or real(f))
    for f in (shared, two):
        assert _error(f) is None
    assert calls == [shared, two]
    assert _error(pyir.Function([x], add(_call(g, x), _call(h, x, x)))) is not None


@pytest.mark.parametrize("case", [
    "inner param is an outer param", "two inner functions bind one var", "inner param used outside",
    "outer free var", "inner free var", "capturing closure", "inner let", "nested function",
    "outer param used by a closure and bound inside"])
def test_fast_path_rejects_like_the_scope_walk(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    x, z = pyir.var("x", shape=(2,)), pyir.var("z", shape=(2,))
    p, q, a = pyir.var("p", shape=(2,)), pyir.var("q", shape=(2,)), pyir.var("a", shape=(2,))
    f = {
        "inner param is an outer param": lambda: pyir.Function([x], _call(_prim([x], relu(x)), x)),
        "two inner functions bind one var": lambda: pyir.Function(
            [x], add(_call(_prim([p], relu(p)), x), _call(_prim([p, q], add(p, q)), x, x))),
        "inner param used outside": lambda: pyir.Function([x], add(_call(_prim([p], relu(p)), x), p)),
        "outer free var": lambda: pyir.Function([x], add(_call(_prim([p], relu(p)), x), z)),
        "inner free var": lambda: pyir.Function([x], _call(_prim([p], add(p, z)), x)),
        # well-formed (the general walk decides): a closure may use the enclosing parameters
        "capturing closure": lambda: pyir.Function([x], _call(pyir.Function([p], add(p, x)), x)),
        "inner let": lambda: pyir.Function([x], _call(_prim([p], pyir.Let(a, relu(p), a)), x)),
        "nested function": lambda: pyir.Function(
            [x], _call(pyir.Function([p], _call(_prim([q], relu(q)), p)), x)),
        "outer param used by a closure and bound inside": lambda: pyir.Function(
            [x], _call(pyir.Function([p], _call(_prim([x], relu(x)), p)), x)),
    }[case]()
    want = _general_error(f, monkeypatch)
    assert _error(f) == want
    if case in ("capturing closure", "inner let", "nested function"):  # well-formed, other paths
        assert want is None
    else:
        assert want is not None and ("bound twice" in want or "free variable" in want)


def test_fused_resnet_main_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """FuseOps' output is checked by the fast path (no general scope walk), and accepted."""
    x = pyir.var("x", shape=(1, 4, 8, 8))
    h: pyir.Expr = x
    params = [x]
    for i in range(6):
        w = pyir.var(f"w{i}", shape=(4, 4, 3, 3))
        params.append(w)
        h = relu(add(pyir.op.nn.conv2d(h, w, padding=(1, 1)), h))
    mod = pyir.Module({"main": pyir.Function(params, h)})

    monkeypatch.setattr(module_mod, "scope_info", _no_general_walk)
    fused = FuseOps()(mod)
    inner = [n for n in pyir.post_order(fused["main"]) if type(n) is pyir.Function]
    assert len(inner) == 2 and inner[1] is fused["main"]  # one shared primitive function, then main
    assert inner[0].attrs.get("Primitive") == 1
    assert pyir.alpha_equal(pyir.transform.DefuseOps()(fused)["main"], mod["main"])


@pytest.mark.parametrize("case", [
    "fused let chain", "let binds an inner param", "inner param is a let var above",
    "inner param used by a later let", "two inner functions bind one var", "let-bound closed function",
    "inner free var"])
def test_let_spine_with_fused_values_rejects_like_the_scope_walk(case: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The let-spine fast path also takes values that call closed primitive functions (FuseOps
    on A-normal form) and leaves every other case, with its error, to the general walk."""
    x, z = pyir.var("x", shape=(2,)), pyir.var("z", shape=(2,))
    p, q = pyir.var("p", shape=(2,)), pyir.var("q", shape=(2,))
    a, b = pyir.var("a", shape=(2,)), pyir.var("b", shape=(2,))
    g = _prim([p], relu(p))
    let = pyir.Let
    f = {
        "fused let chain": lambda: pyir.Function([x], let(a, _call(g, x), let(b, _call(g, a), add(a, b)))),
        "let binds an inner param": lambda: pyir.Function([x], let(a, _call(g, x), let(p, _call(g, a), p))),
        "inner param is a let var above": lambda: pyir.Function(
            [x], let(a, relu(x), let(b, _call(_prim([a], relu(a)), x), b))),
        "inner param used by a later let": lambda: pyir.Function(
            [x], let(a, _call(g, x), let(b, add(a, p), b))),
        "two inner functions bind one var": lambda: pyir.Function(
            [x], let(a, _call(g, x), let(b, _call(_prim([p, q], add(p, q)), a, x), b))),
        "let-bound closed function": lambda: pyir.Function([x], let(a, g, _call(a, x))),
        "inner free var": lambda: pyir.Function([x], let(a, _call(_prim([p], add(p, z)), x), a)),
    }[case]()
    want = _general_error(f, monkeypatch)
    assert _error(f) == want
    if case in ("fused let chain", "let-bound closed function"):
        assert want is None
        monkeypatch.setattr(module_mod, "scope_info", _no_general_walk)
        assert _error(f) is None  # taken by the fast path
    else:
        assert want is not None and ("bound twice" in want or "free variable" in want)
