"""Type inference of Relay programs TVM accepts: unannotated parameters (typed by the uses of
their function), recursive lets, type parameters shadowed by a type definition's, extern
types, and the float math functions of integers (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import TensorType, op
from pyir.analysis.typecheck import TypeContext
from pyir.ir.adt import RefType
from pyir.transform import FoldConstant, InferType

F23 = TensorType((2, 3), "float32")


def _fn_of_let(mod: pyir.Module, name: str = "main") -> pyir.Function:
    """The function bound by the first let of ``mod[name]``."""
    return mod[name].body.value


def test_let_bound_function_params_take_the_argument_types():
    mod = pyir.parse("""
def @main(%u: Tensor[(2, 3), float32], %w: Tensor[(2, 3), float32]) {
  let %g = fn (%p, %q) { let %m = multiply(%p, %q); %m };
  %0 = %g(%u, %w);
  subtract(%0, %u)
}""")
    assert mod.global_type("main").ret_type is F23
    g = _fn_of_let(mod)
    ctx = TypeContext.of(mod)
    assert [ctx.var_type(p) for p in g.params] == [F23, F23]
    assert ctx.type_of(g) == pyir.FuncType([F23, F23], F23)
    assert ctx.var_type(g.body.var) is F23  # a let inside it (the module's functions re-walked)
    assert ctx.var_type(mod["main"].body.var) == pyir.FuncType([F23, F23], F23)
    out = InferType()(mod)  # the nodes stay as built: the parameters keep no annotation
    assert _fn_of_let(out).params[0].type_annotation is None
    a = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(pyir.evaluate(mod, a, a), a * a - a)


def test_higher_order_functions_and_if_joined_functions():
    mod = pyir.parse("""
def @main(%s: Tensor[(2, 3), float32], %c: bool) {
  let %twice = fn (%k) { fn (%z) { %k(%k(%z)) } };
  let %neg = fn (%e) { negative(%e) };
  let %sq = fn (%e2) { multiply(%e2, %e2) };
  let %pick = if (%c) { %neg } else { %sq };
  %0 = %twice(%pick);
  %0(%s)
}""")
    assert mod.global_type("main").ret_type is F23
    ctx = TypeContext.of(mod)
    twice = _fn_of_let(mod)
    assert ctx.var_type(twice.params[0]) == pyir.FuncType([F23], F23)
    assert ctx.var_type(twice.body.params[0]) is F23
    a = np.full((2, 3), 3, "float32")
    np.testing.assert_array_equal(pyir.evaluate(mod, a, np.array(False)), a ** 4)
    np.testing.assert_array_equal(pyir.evaluate(mod, a, np.array(True)), a)


def test_function_flows_into_a_declared_function_type():
    mod = pyir.parse("""
def @apply(%h: fn (int32) -> int32, %v: int32) -> int32 { %h(%v) }
def @main(%n: int32) -> int32 {
  %0 = fn (%m) { add(%m, %n) };
  let %dbl: fn (int32) -> int32 = fn (%t) { multiply(%t, 2) };
  %1 = @apply(%0, %n);
  @apply(%dbl, %1)
}""")
    InferType()(mod)
    i32 = TensorType((), "int32")
    ctx = TypeContext.of(mod)
    assert ctx.var_type(mod["main"].body.value.params[0]) is i32
    assert int(pyir.evaluate(mod, np.array(5, "int32"))) == 20


def test_recursive_lets():
    mod = pyir.parse("""
def @main(%n: int32) -> int32 {
  let %fact = fn (%i, %acc) { if (%i == 0) { %acc } else { %fact(%i - 1, %acc * %i) } };
  let %down = fn (%j: int32, %x: int32) -> int32 { if (%j == 0) { %x } else { %down(%j - 1, %x + 2) } };
  %0 = %fact(%n, 1);
  %down(%n, %0)
}""")
    assert str(mod.global_type("main")) == "fn (Tensor[(), int32]) -> Tensor[(), int32]"
    assert int(pyir.evaluate(mod, np.array(4, "int32"))) == 24 + 8


def test_unresolved_or_inconsistent_parameters_are_errors():
    unused = pyir.parse("""
def @main(%a: Tensor[(2, 3), float32]) {
  let %f = fn (%lonely) { negative(%lonely) };
  %a
}""")
    with pytest.raises(pyir.TypeCheckError, match=r"parameter %lonely .* no type annotation"):
        unused.global_type("main")
    two_types = pyir.parse("""
def @main(%a: Tensor[(2, 3), float32], %i: Tensor[(3), int32]) {
  let %f = fn (%x) { negative(%x) };
  (%f(%a), %f(%i))
}""")
    with pytest.raises(pyir.TypeCheckError, match="argument 0 has type"):
        two_types.global_type("main")
    wrong_annotation = pyir.parse("""
def @main(%a: Tensor[(2, 3), float32]) {
  let %f: fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), int32] = fn (%x) { negative(%x) };
  %f(%a)
}""")
    with pytest.raises(pyir.TypeCheckError):
        wrong_annotation.global_type("main")
    with pytest.raises(pyir.TypeCheckError, match="parameter %y"):  # a function alone: no use types it
        pyir.infer_type(pyir.parse_expr("fn (%y) { %y }"))


def test_long_let_chain_of_unannotated_functions():
    # 10^5 deep (the check of a new construct: not marked slow, so no "deep" in the name):
    # let %f0 = fn (%x0) { negative(%x0) }; let %fi = fn (%xi) { %f{i-1}(%xi) }; ... %f{n-1}(%a)
    n = 100_000
    a = pyir.var("a", shape=(2,))
    fs = [pyir.var(f"f{i}") for i in range(n)]
    body: pyir.Expr = pyir.Call(fs[-1], [a])
    for i in range(n - 1, -1, -1):
        x = pyir.var(f"x{i}")
        value = pyir.Function([x], op.negative(x) if i == 0 else pyir.Call(fs[i - 1], [x]))
        body = pyir.Let(fs[i], value, body)
    mod = pyir.Module({"main": pyir.Function([a], body)})
    assert mod.global_type("main").ret_type == TensorType((2,), "float32")
    inner = mod["main"].body
    for _ in range(n // 2):
        inner = inner.body
    assert TypeContext.of(mod).var_type(inner.value.params[0]) == TensorType((2,), "float32")


def test_type_parameter_named_like_the_type_definitions():
    # Option's parameter is A, and so is the function's: Some's field A is (A, B) here
    mod = pyir.parse("""
type Option[A] { Some(A), None }
type List[A] { Cons(A, List[A]), Nil }
def @firsts[A, B](%g: fn (A) -> Option[(A, B)], %s: A) -> List[B] {
  match (%g(%s)) {
    Some(%pair) => Cons(%pair.1, Nil),
    None => Nil,
  }
}""")
    assert str(mod.global_type("firsts")) == "fn (fn (A) -> Option[(A, B)], A) -> List[B]"
    InferType()(mod)


def test_extern_type_parse_print_check_serialize():
    text = """extern type Blob

extern type Handle[A]

def @main(%h: Handle[Tensor[(), float32]], %b: Blob[]) -> (Blob[], Handle[Tensor[(), float32]]) {
  (%b, %h)
}
"""
    mod = pyir.parse(text)
    td = mod.type_definitions()["Handle"]
    assert td.type_vars == ("A",) and td.constructors == ()
    assert mod.astext() == text
    assert "type Blob {\n}\n" in mod.astext(tvm=True)  # TVM's printer writes an extern type so
    assert str(mod.global_type("main").ret_type) == "(Blob[], Handle[Tensor[(), float32]])"
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]
    assert pyir.from_json(pyir.to_json(mod)).astext() == text
    back = pyir.parse(mod.astext(tvm=True))
    assert pyir.alpha_equal(back, mod)
    other = pyir.parse(text.replace("Blob", "Blub"))
    assert not pyir.alpha_equal(other, mod)
    with pytest.raises(pyir.TypeCheckError):  # an extern type is not a tensor
        pyir.parse("extern type Blob\ndef @main(%b: Blob[]) { negative(%b) }").global_type("main")
    with pytest.raises(pyir.ParseError, match="extern type T has constructors"):
        pyir.parse("extern type T { Mk }")
    with pytest.raises(pyir.ParseError, match="expected 'type' after 'extern'"):
        pyir.parse("extern T")


def test_float_math_of_integers_types_like_tvm():
    # TVM's relation of log is the identity: log of an int32 type-checks (TVM fails when it
    # compiles it); here evaluating it is an EvaluationError, floor of an integer is itself
    mod = pyir.parse("""
def @main(%n: int32) -> int32 {
  %0 = log(%n);
  %1 = floor(%n);
  add(%0, %1)
}""")
    assert str(mod.global_type("main").ret_type) == "Tensor[(), int32]"
    with pytest.raises(pyir.EvaluationError, match="log: no kernel for an integer input"):
        pyir.evaluate(mod, np.array(3, "int32"))
    i = pyir.var("i", shape=(3,), dtype="int64")
    assert pyir.evaluate(pyir.Function([i], op.ceil(i)), np.array([1, -2, 3])).tolist() == [1, -2, 3]
    folded = FoldConstant()(pyir.Module.from_expr(op.exp(pyir.const(np.array([1, 2], "int32")))))
    assert "exp(" in folded.astext()  # no kernel: FoldConstant leaves the call
    with pytest.raises(pyir.TypeCheckError, match="floating-point"):
        op.sqrt(pyir.var("b", shape=(2,), dtype="bool")).checked_type


def test_parse_with_an_init_module():
    # TVM's import_from_std: a text using the prelude's List, Cons and @hd / @tl
    mod = pyir.parse("""
type Peano { Zero, Succ(Peano) }
def @at[A](%l: List[A], %i: Peano) -> A {
  match (%i) {
    Zero => @hd(%l),
    Succ(%j) => @at(@tl(%l), %j),
  }
}
def @main(%x: int32) -> int32 { @at(Cons(%x, Cons(%x + 1, Nil)), Succ(Zero)) }""", init_module=pyir.prelude())
    assert {"at", "main", "hd", "map"} <= set(mod.names())
    assert {"List", "Peano"} <= set(mod.type_definitions())
    assert int(pyir.evaluate(mod, np.array(7, "int32"))) == 8
    with pytest.raises(pyir.ParseError, match="already a function of the init module"):
        pyir.parse("def @hd(%x: int32) -> int32 { %x }", init_module=pyir.prelude())
    with pytest.raises(pyir.ParseError, match="undefined global function @hd"):
        pyir.parse("def @main(%l: int32) { @hd(%l) }")


def test_global_function_params_solved_by_its_body_and_return_type():
    mod = pyir.parse("""
def @bump(%cell) -> int32 {
  let %old = ref_read(%cell);
  let %w = ref_write(%cell, %old * 2);
  %old
}
def @main() -> int32 {
  let %c = ref(5);
  let %a = @bump(%c);
  add(ref_read(%c), %a)
}""")
    assert str(mod.global_type("bump")) == "fn (ref(Tensor[(), int32])) -> Tensor[(), int32]"
    InferType()(mod)
    assert TypeContext.of(mod).var_type(mod["bump"].params[0]) == RefType(TensorType((), "int32"))
    assert int(pyir.evaluate(mod)) == 15
    with pytest.raises(pyir.TypeCheckError, match="parameter %x"):  # nothing says what %x is
        pyir.parse("def @g(%x) { add(%x, 1) }").global_type("g")
