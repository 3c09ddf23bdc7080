"""TVM's DeadCodeElimination cases (``tests/python/relay/test_pass_dead_code_elimination.py``
at v0.18.0), one test per case, named after it and rebuilt with pyir's builders: the result
is alpha-equal to TVM's expected program and keeps every pass invariant (``check_pass``).

Every case is ported.  One difference of construction in ``test_refs``: hash-consing makes
two calls of one function on the same arguments one node (evaluated once), so pyir's program
calls it with different arguments to have two calls."""

from __future__ import annotations

import numpy as np

import pyir
from pyir import Function, Let, Tuple, op
from pyir.testing import check_pass
from pyir.transform import DeadCodeElimination

_I = pyir.TensorType((), "int32")


def _int(v: int) -> pyir.Constant:
    return pyir.const(np.int32(v))


def _dce(f: Function, expected: Function, **opts: bool) -> None:
    out = check_pass(DeadCodeElimination(**opts), pyir.Module({"main": f}))["main"]
    assert pyir.alpha_equal(out, expected), f"{out}\n!=\n{expected}"


def test_dead_let():
    """An unused let goes."""
    z, x = pyir.var("z", _I), pyir.var("x")
    _dce(Function([z], Let(x, _int(1), z)), Function([z], z))


def test_one_live_let():
    """Of two lets, the unused one goes."""
    z, x, y = pyir.var("z", _I), pyir.var("x"), pyir.var("y")
    body = Let(x, _int(1), Let(y, _int(2), op.add(x, x)))
    _dce(Function([z], body), Function([z], Let(x, _int(1), op.add(x, x))))


def test_nested_let():
    """A let of a parameter, unused, goes; the used one stays."""
    d, b, a, c = pyir.var("d", _I), pyir.var("b", _I), pyir.var("a"), pyir.var("c")
    _dce(Function([d, b], Let(a, b, Let(c, d, c))), Function([d, b], Let(c, d, c)))


def _count_down(f: pyir.Var) -> Function:
    """``fn (%n, %data) { if (%n == 0) { %data } else { %f(%n - 1, log(%data)) } }`` (TVM's
    data is an int; pyir's log takes floats, so float32 here)."""
    n, data = pyir.var("n", _I), pyir.var("data", shape=())
    rec = pyir.Call(f, [op.subtract(n, _int(1)), op.log(data)])
    return Function([n, data], pyir.If(op.equal(n, _int(0)), data, rec), pyir.TensorType(()))


def _f() -> pyir.Var:
    return pyir.var("f", pyir.FuncType([_I, pyir.TensorType(())], pyir.TensorType(())))


def test_live_recursion():
    """A recursive closure that is called stays (the very same module)."""
    f = _f()
    body = Let(f, _count_down(f), pyir.Call(f, [_int(2), pyir.const(np.float32(10000))]))
    mod = pyir.Module({"main": Function([], body)})
    assert DeadCodeElimination()(mod) is mod


def test_dead_recursion():
    """A recursive closure nobody calls goes (its only use is inside itself)."""
    f = _f()
    _dce(Function([], Let(f, _count_down(f), Tuple([]))), Function([], Tuple([])))


def test_add_with_let():
    """``(let %a = 1; 3) + 2`` -> ``3 + 2``."""
    a = pyir.var("a")
    _dce(Function([], op.add(Let(a, _int(1), _int(3)), _int(2))), Function([], op.add(_int(3), _int(2))))


def test_tuple_get_item():
    """An unused let above a projection goes; the projection stays."""
    a = pyir.var("a")
    item = pyir.TupleGetItem(Tuple([_int(1), _int(2), _int(3), _int(4)]), 0)
    _dce(Function([], Let(a, _int(100), item)), Function([], item))


def test_inline_into_function():
    """With ``inline_once``, a binding used once in its own function is inlined; one used once
    inside a nested function is not (that would move its evaluation), nor one used twice."""
    x, f, y, z = pyir.var("x"), pyir.var("f"), pyir.var("y", _I), pyir.var("z")
    inner = Function([y], Let(z, op.add(y, y), op.add(x, z)), _I)
    calls = Tuple([pyir.Call(f, [_int(2)]), pyir.Call(f, [_int(3)])])
    before = Function([], Let(x, op.add(_int(1), _int(1)), Let(f, inner, calls)))
    inner2 = Function([y], op.add(x, op.add(y, y)), _I)
    expected = Function([], Let(x, op.add(_int(1), _int(1)), Let(f, inner2, calls)))
    _dce(before, expected, inline_once=True)
    assert DeadCodeElimination()(pyir.Module({"main": before}))["main"] is before


def test_complexity():
    """A whole network in graph form (TVM's is inception_v3; pyir's test model here) comes back
    as the very same module, with ``inline_once`` too."""
    mod = pyir.testing.resnet(2)
    assert DeadCodeElimination(inline_once=True)(mod) is mod
    assert DeadCodeElimination()(mod) is mod


_I64 = pyir.TensorType((), "int64")


def _allocate_and_free(inline: bool) -> pyir.Expr:
    """``let %n = cast(2048); let %al = cast(32); let %s = alloc_storage(%n, shape, %al);
    let %k = memory.kill(%s); 1``, or (``inline``) the same with the three pure bindings
    inlined, as TVM's expected program has them."""
    n, al, s, k = pyir.var("n", _I64), pyir.var("al", _I64), pyir.var("s"), pyir.var("k")
    size, align = op.cast(_int(2048), dtype="int64"), op.cast(_int(32), dtype="int64")
    shape = pyir.const(np.array([8, 4], "int64"))
    if inline:
        storage = op.memory.alloc_storage(size, shape, align, virtual_device="cpu")
        return Let(k, op.memory.kill(storage), _int(1))
    storage = op.memory.alloc_storage(n, shape, al, virtual_device="cpu")
    return Let(n, size, Let(al, align, Let(s, storage, Let(k, op.memory.kill(s), _int(1)))))


def test_impure_op():
    """``memory.kill`` has an effect: its unused let stays, and so does the storage it frees;
    with ``inline_once`` the bindings used once are inlined, the kill's binding is not."""
    _dce(Function([], _allocate_and_free(False)), Function([], _allocate_and_free(True)), inline_once=True)
    mod = pyir.Module({"main": Function([], _allocate_and_free(False))})
    assert DeadCodeElimination()(mod) is mod  # every binding is used or has an effect


def test_impure_func():
    """A call of a global function with an effect is kept though its result is unused."""
    g = pyir.GlobalVar("free_it")
    y = pyir.var("y")
    main = Function([], Let(y, pyir.Call(g, []), _int(0)))
    mod = pyir.Module({"main": main, "free_it": Function([], _allocate_and_free(False))})
    out = check_pass(DeadCodeElimination(inline_once=True), mod)
    assert out["main"] is main
    assert pyir.alpha_equal(out["free_it"], Function([], _allocate_and_free(True)))


def test_refs():
    """Reference reads and writes are effects, and so is a call of a function doing them: the
    module is unchanged, with ``inline_once`` too (``%b`` is used once but is a call with an
    effect; ``%c`` is used twice).  (TVM calls ``@f(%r)`` twice; in pyir those two calls would
    be one hash-consed node evaluated once, so the calls here differ by a step argument.)"""
    mod = pyir.parse("""
    def @bump(%c, %step: int32) -> int32 {
      let %old = ref_read(%c);
      let %w = ref_write(%c, add(%old, %step));
      %old
    }
    def @main() -> int32 {
      let %c = ref(3);
      let %a = @bump(%c, 1);
      let %b = @bump(%c, 2);
      %b
    }
    """)
    assert int(pyir.evaluate(mod)) == 4
    assert check_pass(DeadCodeElimination(inline_once=True), mod) is mod
    assert DeadCodeElimination()(mod) is mod
