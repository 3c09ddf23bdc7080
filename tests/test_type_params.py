"""Type parameters of functions (``def @id[A]``, ``fn [A]``) instantiated at each call by the
type checker, closures called in place and ``free_var`` (issue 14 item 2)."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir.ir.adt import TypeVar

GENERIC = """
type Box[A] {
  Box(A),
}

def @main(%x: Tensor[(2), float32]) {
  %0 = @id(3);
  %1 = @id(%x);
  %2 = @pair(%0, %1);
  %3 = Box(%x);
  %4 = @twice(@unbox_add, %3);
  (%2, %4)
}

def @id[A](%v: A) -> A {
  %v
}

def @pair[A, B](%a: A, %b: B) -> (A, B) {
  (%a, %b)
}

def @twice[T](%f: fn (T) -> T, %t: T) -> T {
  %0 = %f(%t);
  %f(%0)
}

def @unbox_add(%b_1: Box[Tensor[(2), float32]]) -> Box[Tensor[(2), float32]] {
  match (%b_1) {
    Box(%y) => {
      %0 = add(%y, %y);
      Box(%0)
    },
  }
}
"""


def test_type_parameters_are_instantiated_at_each_call() -> None:
    """One generic function called at two types in one body; a generic higher-order function
    over a monomorphic one; the types come out as the instances."""
    mod = pyir.parse(GENERIC)
    t = mod.type_of(mod["main"])
    assert str(t) == ("fn (Tensor[(2), float32]) -> ((Tensor[(), int32], Tensor[(2), float32]), "
                      "Box[Tensor[(2), float32]])")
    assert str(mod.global_type("pair")) == "fn (A, B) -> (A, B)"
    for f in mod.functions().values():
        pyir.infer_type(f, mod)
    (i, x), box = pyir.evaluate(mod, np.array([1, 2], "float32"))
    assert i == 3 and x.tolist() == [1, 2] and box.fields[0].tolist() == [4, 8]


def test_text_round_trip_with_type_parameters() -> None:
    """`def @f[A, B]` and `fn [A]` print as TVM writes them and parse back to the same text."""
    mod = pyir.parse(GENERIC)
    text = mod.astext()
    assert text == GENERIC.lstrip("\n")
    assert pyir.parse(text).astext() == text
    inner = pyir.parse("def @main() { (fn [A](%x: A) -> A { %x })(2) }")
    assert "  %0 = fn [A](%x: A) -> A {\n" in inner.astext()
    assert pyir.evaluate(inner) == 2 and pyir.parse(inner.astext()).astext() == inner.astext()


def test_type_parameters_are_rigid_in_their_body() -> None:
    """Inside its body a type parameter is only itself: returning an int32 where A is declared,
    or calling an operator on an A, is a TypeCheckError naming the node; a call binding one
    parameter to two types fails."""
    bad = pyir.parse("def @main[A](%x: A) -> A { 1 }")
    with pytest.raises(pyir.TypeCheckError, match=r"declared return type A but the body has type Tensor"):
        pyir.infer_type(bad["main"], bad)
    with pytest.raises(pyir.TypeCheckError, match=r"add: lhs must be a tensor, got A"):
        m = pyir.parse("def @main[A](%x: A) { add(%x, 1) }")
        m.type_of(m["main"])
    two = pyir.parse("def @same[A](%a: A, %b: A) -> A { %a }\ndef @main() { @same(1, 1f) }")
    with pytest.raises(pyir.TypeCheckError, match=r"Call @same.*argument 1 has type Tensor\[\(\), float32\]"):
        two.type_of(two["main"])
    with pytest.raises(pyir.ParseError, match="expected a type, found 'B'"):
        pyir.parse("def @main[A](%x: B) { %x }")
    assert TypeVar("A") is TypeVar("A") and str(TypeVar("A")) == "A"


def test_closures_called_in_place_and_free_var() -> None:
    """`(fn (%x) { ... })(1)` parses as a call of a function literal; `free_var %x: T;` declares
    a free variable of an expression (parse_expr without implicit free variables)."""
    e = pyir.parse_expr("(fn (%x: Tensor[(), int32]) { add(%x, 1) })(41)")
    assert type(e) is pyir.Call and type(e.op) is pyir.Function and pyir.evaluate(e) == 42
    f = pyir.parse_expr("free_var %y: Tensor[(), float32];\nmultiply(%y, %y)", free_vars=False)
    (y,) = pyir.free_vars(f)
    assert y.name_hint == "y" and y.type_annotation is pyir.TensorType((), "float32")
    with pytest.raises(pyir.ParseError, match="undefined variable %y"):
        pyir.parse_expr("multiply(%y, %y)", free_vars=False)
    arg = pyir.parse("def @main(%a: Tensor[(), int32]) {\n"
                     "  @ap(fn (%v: Tensor[(), int32]) { add(%v, %a) }, 2)\n}\n"
                     "def @ap[A, B](%f: fn (A) -> B, %x: A) -> B { %f(%x) }")
    assert pyir.evaluate(arg, np.int32(40)) == 42


def test_called_literals_type_their_parameters_and_generic_values_instantiate() -> None:
    """A function literal called in place types its unannotated parameters from the arguments
    (TVM's `(fn (%x, %y) { ... })(%a, %b)`); a generic function literal or constructor passed as a
    value is instantiated where it is passed."""
    mod = pyir.parse("def @main(%a: Tensor[(2), float32], %b: Tensor[(2), float32]) {\n"
                     "  %0 = (fn (%x, %y, Compiler=\"foo\") { (add(%x, %y), %y) })(%a, %b);\n"
                     "  %0.0\n}")
    t2 = "Tensor[(2), float32]"
    assert str(mod.type_of(mod["main"])) == f"fn ({t2}, {t2}) -> {t2}"
    out = pyir.transform.InferType()(mod)
    assert pyir.evaluate(out, np.ones(2, "float32"), np.ones(2, "float32")).tolist() == [2, 2]
    gen = pyir.parse("def @ap[A, B](%f: fn (A) -> B, %x: A) -> B { %f(%x) }\n"
                     "def @main(%l: Tensor[(3), float32]) {\n"
                     "  %0 = fn [A](%v: A) -> A { %v };\n"
                     "  (@ap(%0, %l), @ap(%0, 1))\n}")
    assert str(gen.type_of(gen["main"]).ret_type) == "(Tensor[(3), float32], Tensor[(), int32])"
    boxed = pyir.parse(pyir.prelude().astext() + "def @main() { @map(Some, Cons(1, Nil)) }")
    assert str(boxed.type_of(boxed["main"]).ret_type) == "List[Option[Tensor[(), int32]]]"
    assert pyir.evaluate(boxed).fields[0].name == "Some"
    m = pyir.parse("type T { A, B(T), }\ndef @main(%t: T[]) { match %t { B(_) => 1, A => 0, } }")
    assert pyir.evaluate(m, pyir.analysis.interp.ConstructorValue(m.constructor("A"))) == 0
    m2 = pyir.parse("type T { A, B(T), }\ndef @main(%t: T[]) { match(%t) { B(_) => 1, A => 0, } }")
    assert pyir.alpha_equal(m2["main"], m["main"])
