"""TVM's Inline cases (``tests/python/relay/test_pass_inline.py`` at v0.18.0), one test per
case, named after it and rebuilt with pyir's builders: the result is alpha-equal to TVM's
expected module (names bound, free variables mapped) and keeps every pass invariant
(``check_pass``: input unchanged, same values, complete lineage, idempotent)."""

from __future__ import annotations

import pyir
from pyir import Call, Function, GlobalVar, op
from pyir.testing import check_pass
from pyir.transform import Inline

_S = (3, 5)


def _v(name: str, shape: tuple[int, ...] = _S, dtype: str = "float32") -> pyir.Var:
    return pyir.var(name, shape=shape, dtype=dtype)


def _inline(f: Function) -> Function:
    return f.with_attrs(Inline=1)


def _ext(f: Function, compiler: str) -> Function:
    return f.with_attrs(Inline=1, Compiler=compiler)


def _g(name: str, *args: pyir.Expr) -> Call:
    return Call(GlobalVar(name), list(args))


def _run(mod: pyir.Module) -> pyir.Module:
    """Inline through ``check_pass``; for a module without ``main`` (nothing to evaluate), the
    input-unchanged and idempotence checks by hand."""
    if "main" in mod:
        return check_pass(Inline(), mod)
    before = pyir.testing.snapshot(mod)
    out = Inline()(mod)
    assert pyir.testing.snapshot(mod) == before
    assert Inline()(out) is out
    return out


def _check(mod: pyir.Module, expected: pyir.Module) -> pyir.Module:
    out = _run(mod)
    assert pyir.alpha_equal(out, expected, map_free_vars=True), f"{out}\n!=\n{expected}"
    return out


def _two_funcs(fn1: Function | None = None, fn2: Function | None = None) -> dict[str, Function]:
    """``@g1(x1, y1) = x1 + y1`` and ``@g2(x2, y2) = x2 - y2`` (fresh variables each call)."""
    x1, y1, x2, y2 = _v("x1"), _v("y1"), _v("x2"), _v("y2")
    return {"g1": fn1 or Function([x1, y1], op.add(x1, y1)),
            "g2": fn2 or Function([x2, y2], op.subtract(x2, y2))}


def _main(body_of) -> Function:  # type: ignore[no-untyped-def]
    p = [_v(f"p{i}") for i in range(4)]
    return Function(p, body_of(*p))


def _sum_up() -> tuple[str, Function]:
    """The recursive ``@sum_up(i) = if (i == 0) { i } else { @sum_up(i - 1) + i }``, Inline=1."""
    i = _v("i", (), "int32")
    rec = op.add(_g("sum_up", op.subtract(i, pyir.const(1))), i)
    body = pyir.If(op.equal(i, pyir.const(0)), i, rec)
    return "sum_up", _inline(Function([i], body, pyir.TensorType((), "int32")))


def _with_sum_up(funcs: dict[str, Function]) -> pyir.Module:
    name, f = _sum_up()
    return pyir.Module({name: f, **funcs})


def test_call_chain_inline_leaf():
    """main -> g1 -> g11 (inline), main -> g2: only the leaf is inlined (and removed)."""
    def mod(inline_leaf: bool) -> pyir.Module:
        x11, x1, y1 = _v("x11"), _v("x1"), _v("y1")
        funcs = _two_funcs()
        if inline_leaf:
            funcs["g11"] = _inline(Function([x11], x11))
            funcs["g1"] = Function([x1, y1], op.add(op.add(x1, y1), _g("g11", x1)))
        else:
            funcs["g1"] = Function([x1, y1], op.add(op.add(x1, y1), x1))
        funcs["main"] = _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), _g("g2", p2, p3)))
        return pyir.Module(funcs)

    _check(mod(True), mod(False))


def test_call_chain_inline_multiple_levels():
    """main -> g1 (inline) -> g11 (inline): both levels are inlined into main and removed."""
    x11, x1, y1 = _v("x11"), _v("x1"), _v("y1")
    funcs = _two_funcs()
    funcs["g11"] = _inline(Function([x11], x11))
    funcs["g1"] = _inline(Function([x1, y1], op.add(op.add(x1, y1), _g("g11", x1))))
    funcs["main"] = _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), _g("g2", p2, p3)))
    expected = {"g2": _two_funcs()["g2"],
                "main": _main(lambda p0, p1, p2, p3: op.multiply(op.add(op.add(p0, p1), p0),
                                                                 _g("g2", p2, p3)))}
    _check(pyir.Module(funcs), pyir.Module(expected))


def test_call_chain_inline_multiple_levels_extern_compiler():
    """g11 is inline but has an external compiler: its call in g1 calls the function
    literal, and g1 (inline) is expanded into main with it."""
    x11, x1, y1 = _v("x11"), _v("x1"), _v("y1")
    fn11 = _ext(Function([x11], x11), "a")
    funcs = _two_funcs()
    funcs["g11"] = fn11
    funcs["g1"] = _inline(Function([x1, y1], op.add(op.add(x1, y1), _g("g11", x1))))
    funcs["main"] = _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), _g("g2", p2, p3)))
    x11b = _v("x11")
    expected = {"g2": _two_funcs()["g2"],
                "main": _main(lambda p0, p1, p2, p3: op.multiply(
                    op.add(op.add(p0, p1), Call(_ext(Function([x11b], x11b), "a"), [p0])),
                    _g("g2", p2, p3)))}
    _check(pyir.Module(funcs), pyir.Module(expected))


def test_recursive_call_with_global():
    """A recursive inline function is not inlined (nor removed); the inline function it
    calls is inlined into it and removed."""
    x = _v("x", (), "int32")
    i = _v("i", (), "int32")
    rec = op.add(op.add(_g("sum_up", op.subtract(i, pyir.const(1))), _g("gx", i)), i)
    sum_up = _inline(Function([i], pyir.If(op.equal(i, pyir.const(0)), i, rec), pyir.TensorType((), "int32")))
    a = _v("i", (), "int32")
    main = Function([a], _g("sum_up", a))
    mod = pyir.Module({"gx": _inline(Function([x], x)), "sum_up": sum_up, "main": main})
    j = _v("i", (), "int32")
    rec2 = op.add(op.add(_g("sum_up", op.subtract(j, pyir.const(1))), j), j)
    i32 = pyir.TensorType((), "int32")
    sum_up2 = _inline(Function([j], pyir.If(op.equal(j, pyir.const(0)), j, rec2), i32))
    _check(mod, pyir.Module({"sum_up": sum_up2, "main": main}))


def test_recursive_called():
    """main calls a recursive inline function: nothing changes (the very same module)."""
    a = _v("i", (), "int32")
    mod = _with_sum_up({"main": Function([a], _g("sum_up", a))})
    assert Inline()(mod) is mod


def test_recursive_not_called():
    """An uncalled recursive inline function stays; a leaf inline function is inlined."""
    x, y, x1 = _v("x", (2, 2)), _v("y", (2, 2)), _v("x1", (2, 2))
    mod = _with_sum_up({"g1": _inline(Function([x1], x1)),
                        "main": Function([x, y], op.add(op.add(x, y), _g("g1", x)))})
    expected = _with_sum_up({"main": Function([x, y], op.add(op.add(x, y), x))})
    _check(mod, expected)


def test_recursive_not_called_extern_compiler():
    """As above, with an external compiler on g1: main calls the function literal."""
    x, y, x1 = _v("x", (2, 2)), _v("y", (2, 2)), _v("x1", (2, 2))
    fn1 = _ext(Function([x1], x1), "a")
    mod = _with_sum_up({"g1": fn1, "main": Function([x, y], op.add(op.add(x, y), _g("g1", x)))})
    expected = _with_sum_up({"main": Function([x, y], op.add(op.add(x, y), Call(fn1, [x])))})
    _check(mod, expected)


def test_globalvar_as_call_arg():
    """Two inline functions called from main: both expanded, both removed."""
    funcs = _two_funcs()
    funcs = {k: _inline(f) for k, f in funcs.items()}
    funcs["main"] = _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), _g("g2", p2, p3)))
    expected = {"main": _main(lambda p0, p1, p2, p3: op.multiply(op.add(p0, p1), op.subtract(p2, p3)))}
    _check(pyir.Module(funcs), pyir.Module(expected))


def test_globalvar_as_call_arg_extern_compiler():
    """The same with external compilers: main calls the two function literals."""
    funcs = _two_funcs()
    fn1, fn2 = _ext(funcs["g1"], "a"), _ext(funcs["g2"], "b")
    mod = pyir.Module({"g1": fn1, "g2": fn2,
                       "main": _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), _g("g2", p2, p3)))})
    expected = {"main": _main(lambda p0, p1, p2, p3: op.multiply(Call(fn1, [p0, p1]), Call(fn2, [p2, p3])))}
    _check(mod, pyir.Module(expected))


def _if_of_globals(fn1: Function, fn2: Function, *, literals: bool) -> pyir.Module:
    p = pyir.var("p", shape=(), dtype="bool")
    f1, f2 = (fn1, fn2) if literals else (GlobalVar("g1"), GlobalVar("g2"))
    main = Function([p], Call(pyir.If(p, f1, f2), []))
    return pyir.Module({"main": main} if literals else {"g1": fn1, "g2": fn2, "main": main})


def test_inline_globalvar_without_args():
    """Inline functions used as values (an ``if`` picks the one to call) become function
    literals, and their globals are removed."""
    fn1 = _inline(Function([], pyir.const(1)))
    fn2 = _inline(Function([], pyir.const(2)))
    _check(_if_of_globals(fn1, fn2, literals=False), _if_of_globals(fn1, fn2, literals=True))


def test_inline_globalvar_without_args_extern_compiler():
    """The same with external compilers."""
    fn1 = _ext(Function([], pyir.const(1)), "a")
    fn2 = _ext(Function([], pyir.const(2)), "b")
    _check(_if_of_globals(fn1, fn2, literals=False), _if_of_globals(fn1, fn2, literals=True))


def test_globalvar_called_by_multiple_functions():
    """g2 (inline) is called by main and by g0: expanded into both, then removed."""
    funcs = _two_funcs()
    funcs["g2"] = _inline(funcs["g2"])
    x0, y0, z0 = _v("x0"), _v("y0"), _v("z0")
    funcs["g0"] = Function([x0, y0, z0], op.add(_g("g2", x0, y0), z0))
    funcs["main"] = _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), _g("g2", p2, p3)))
    expected = {"g1": funcs["g1"],
                "g0": Function([x0, y0, z0], op.add(op.subtract(x0, y0), z0)),
                "main": _main(lambda p0, p1, p2, p3: op.multiply(_g("g1", p0, p1), op.subtract(p2, p3)))}
    _check(pyir.Module(funcs), pyir.Module(expected))


def test_entry_with_inline():
    """A module of two uncalled inline functions (no main): both are entries and stay, so the
    module is returned as it is (pyir before this port removed them and left it empty)."""
    funcs = {k: _inline(f) for k, f in _two_funcs().items()}
    mod = pyir.Module(funcs)
    out = Inline()(mod)
    assert out is mod
    assert out.names() == ["g1", "g2"]


def test_callee_not_inline():
    """main-less module: g2 (inline, uncalled) calls g1 (not inline): nothing changes."""
    funcs = _two_funcs()
    x2, y2 = _v("x2"), _v("y2")
    funcs["g2"] = _inline(Function([x2, y2], op.subtract(x2, _g("g1", x2, y2))))
    mod = pyir.Module(funcs)
    assert Inline()(mod) is mod


def _leaf_inline_module(g0: Function) -> pyir.Module:
    x1, y1, x2, y2 = _v("x1"), _v("y1"), _v("x2"), _v("y2")
    return pyir.Module({
        "g0": g0,
        "g1": Function([x1, y1], op.add(x1, _g("g0", x1, y1))),
        "g2": _inline(Function([x2, y2], op.subtract(x2, _g("g1", x2, y2)))),
    })


def test_callee_not_inline_leaf_inline():
    """g2 (inline, uncalled) -> g1 -> g0 (inline): g0 is inlined into g1 and removed; g2 stays."""
    x0, y0 = _v("x0"), _v("y0")
    mod = _leaf_inline_module(_inline(Function([x0, y0], op.multiply(x0, y0))))
    out = _run(mod)
    x1, y1 = out["g1"].params
    assert out.names() == ["g1", "g2"]
    assert out["g1"].body is op.add(x1, op.multiply(x1, y1))
    assert out["g2"] is mod["g2"]


def test_callee_not_inline_leaf_inline_extern_compiler():
    """The same with an external compiler on g0: g1 calls the function literal."""
    x0, y0 = _v("x0"), _v("y0")
    fn0 = _ext(Function([x0, y0], op.multiply(x0, y0)), "aa")
    mod = _leaf_inline_module(fn0)
    out = _run(mod)
    x1, y1 = out["g1"].params
    assert out.names() == ["g1", "g2"]
    assert out["g1"].body is op.add(x1, Call(fn0, [x1, y1]))
    assert out["g2"] is mod["g2"]
