"""Algebraic data types (issue 14 item 2): type definitions, constructors, match with nested
patterns, the prelude; their type checking, evaluation, text (TVM's syntax), both file formats,
alpha-equality, and every standard pass leaving them intact."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import pyir
from pyir import transform as T
from pyir.analysis.interp import ConstructorValue, adt_to_list
from pyir.ir import kinds
from pyir.ir.adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TypeCall,
    TypeData,
    TypeVar,
)
from pyir.testing import check_pass

F32 = pyir.TensorType((), "float32")
I32 = pyir.TensorType((), "int32")

# Our own programs, written to exercise what TVM's ADT tests exercise: a recursive type with a
# type parameter, a nullary constructor, nested constructor / tuple / wildcard / variable patterns,
# `match?`, constructors as values, recursion through a global function.
SHAPES = """
type Shape[A] {
  Circle(A),
  Rect(A, A),
  Group(Shape[A], Shape[A]),
  Empty,
}

def @area(%s: Shape[Tensor[(), float32]]) -> Tensor[(), float32] {
  match (%s) {
    Circle(%r) => {
      multiply(multiply(%r, %r), 3f)
    },
    Rect(%w, %h) => {
      multiply(%w, %h)
    },
    Group(Empty, %b) => {
      @area(%b)
    },
    Group(%a, %b) => {
      add(@area(%a), @area(%b))
    },
    Empty => {
      0f
    },
  }
}

def @main(%x: Tensor[(), float32]) -> Tensor[(), float32] {
  %0 = Rect(%x, 2f);
  %1 = Group(Empty, %0);
  %2 = Circle(%x);
  %3 = Group(%2, %1);
  @area(%3)
}
"""


def _list_type() -> TypeData:
    return TypeData.define("List", ["A"], [("Cons", [lambda me, a: a[0], lambda me, a: me]), ("Nil", [])])


def test_definitions_and_constructors_are_hash_consed_nodes() -> None:
    """A definition and its constructors are interned nodes; a constructor carries its type
    parameters, so its type needs no module; malformed definitions are WellFormedErrors."""
    lst = _list_type()
    assert _list_type() is lst and lst.type_vars == ("A",)
    cons, nil = lst.constructors
    assert cons.inputs == (TypeVar("A"), TypeCall("List", [TypeVar("A")])) and nil.inputs == ()
    assert pyir.infer_type(cons) is pyir.FuncType(cons.inputs, TypeCall("List", [TypeVar("A")]))
    assert lst.constructor("Nil") is nil and Constructor("Nil", [], "List", ["A"]) is nil
    pat = PatternConstructor(cons, [PatternVar(), PatternWildcard()])
    for n in (lst, cons, TypeCall("List", [F32]), pat):
        assert kinds.content_id(n) == n.id  # the declaration is the specification of the id
    with pytest.raises(pyir.WellFormedError, match="uses the type variable B"):
        TypeData.define("Bad", ["A"], [("Mk", [TypeVar("B")])])
    with pytest.raises(pyir.WellFormedError, match="has 1 sub-pattern"):
        PatternConstructor(cons, [PatternVar()])
    with pytest.raises(pyir.WellFormedError, match="binds 1 variable"):
        Clause(PatternConstructor(cons, [PatternVar(), PatternWildcard()]), pyir.Function([], pyir.const(1)))
    with pytest.raises(pyir.WellFormedError, match="constructor Cons is defined by types"):
        pyir.Module({}, [lst, TypeData.define("Other", [], [("Cons", [])])])


def test_match_type_checks_evaluates_and_prints_in_tvm_syntax() -> None:
    """Nested patterns (a constructor inside a constructor), first-match order, recursion: typed,
    evaluated, and printed back to the very text (TVM's layout)."""
    mod = pyir.parse(SHAPES)
    text = mod.astext()
    assert text.startswith(SHAPES[1:SHAPES.index("def")])  # the definition, as TVM prints it
    assert "  %1 = Empty;\n" in text and "    Group(Empty, %b) => {\n      @area(%b)\n    },\n" in text
    assert pyir.parse(text).astext() == text
    assert str(mod.type_of(mod["main"])) == "fn (Tensor[(), float32]) -> Tensor[(), float32]"
    for f in mod.functions().values():
        pyir.infer_type(f, mod)
    # Group(Circle(x), Group(Empty, Rect(x, 2))): 3x^2 + 2x
    assert pyir.evaluate(mod, np.float32(2.0)) == np.float32(16.0)
    back = pyir.parse(mod.astext())
    assert pyir.alpha_equal(back["main"], mod["main"]) and pyir.alpha_equal(back["area"], mod["area"])
    assert back.type_definition("Shape") is mod.type_definition("Shape")


def test_tuple_patterns_wildcards_and_match_question() -> None:
    """Tuple patterns, wildcards, `match?` (not exhaustive): a value no clause matches is an
    EvaluationError naming the match."""
    src = """
type Opt[A] { Yes(A), No, }
def @main(%a: Tensor[(), int32], %b: Tensor[(), int32]) {
  %0 = (Yes(%a), Yes(%b), No);
  match? (%0) {
    (Yes(%x), Yes(%y), No) => add(%x, %y),
    (_, No, _) => 0,
  }
}
"""
    mod = pyir.parse(src)
    assert mod.type_of(mod["main"]).ret_type is I32
    assert pyir.evaluate(mod, np.int32(2), np.int32(5)) == 7
    text = mod.astext()
    assert "  match? (%3) {\n    (Yes(%x), Yes(%y), No) => {\n" in text and "    (_, No, _) => {\n" in text
    assert pyir.parse(text).astext() == text
    # a value the clauses miss
    opt = mod.type_definition("Opt")
    yes, no = opt.constructors
    v = pyir.var("v", TypeCall("Opt", [I32]))
    only_yes = Clause(PatternConstructor(yes, [PatternWildcard()]), pyir.const(1), [])
    miss = pyir.Function([v], Match(v, [only_yes], complete=False))
    with pytest.raises(pyir.EvaluationError, match=r"no clause of .*Match"):
        pyir.evaluate(pyir.Module({"main": miss}, [opt]), ConstructorValue(no))


def test_type_errors_name_the_node() -> None:
    """A constructor applied to the wrong types, a pattern of another type, clauses of different
    types: TypeCheckErrors (TypeError) naming the node."""
    lst = _list_type()
    cons, nil = lst.constructors
    x = pyir.var("x", F32)
    i = pyir.var("i", I32)
    bad = pyir.Call(cons, [x, pyir.Call(cons, [i, pyir.Call(nil, [])])])
    with pytest.raises(TypeError,
                       match=r"Call Constructor.*argument 1 has type List\[Tensor\[\(\), int32\]\]"):
        pyir.infer_type(bad)
    opt = TypeData.define("Opt", ["A"], [("Yes", [lambda me, a: a[0]]), ("No", [])])
    yes = opt.constructors[0]
    m = Match(pyir.Call(cons, [x, pyir.Call(nil, [])]),
              [Clause(PatternConstructor(yes, [PatternVar()]), x, [pyir.var("y")])])
    with pytest.raises(pyir.TypeCheckError,
                       match=r"Clause.*pattern Yes\(...\) of type Opt cannot match a value "
                                                  r"of type List\[Tensor\[\(\), float32\]\]"):
        pyir.infer_type(pyir.Function([x], m))
    both = PatternConstructor(cons, [PatternWildcard(), PatternWildcard()])
    m2 = Match(pyir.Call(nil, []), [Clause(both, x, []),
                                   Clause(PatternWildcard(), i, [])])
    with pytest.raises(pyir.TypeCheckError, match=r"Match.*branches have different types"):
        pyir.infer_type(pyir.Function([x, i], m2))


def test_parse_errors() -> None:
    """Undefined constructors and types, constructors defined twice: ParseErrors at the name."""
    with pytest.raises(pyir.ParseError, match="undefined constructor Foo in a pattern"):
        pyir.parse("type T { A, }\ndef @main(%t: T[]) { match (%t) { Foo => 0, } }")
    with pytest.raises(pyir.ParseError, match="constructor A is defined twice"):
        pyir.parse("type T { A, A, }")
    with pytest.raises(pyir.ParseError, match="expected a type, found 'Nope'"):
        pyir.parse("def @main(%t: Nope[]) { %t }")
    with pytest.raises(pyir.ParseError, match="expected '=>' after a pattern"):
        pyir.parse("type T { A, }\ndef @main(%t: T[]) { match (%t) { A -> 0, } }")


def test_formats_and_pickle_keep_type_definitions() -> None:
    """Binary, JSON and pickle round trips give the very definitions and functions; a module
    without type definitions keeps its bytes (the types flag is unset)."""
    mod = pyir.parse(SHAPES)
    for back in (pyir.loads(pyir.dumps(mod)), pyir.from_json(pyir.to_json(mod)),
                 pickle.loads(pickle.dumps(mod))):
        assert back["area"] is mod["area"] and back.type_definitions() == mod.type_definitions()
    assert pyir.dumps(pyir.loads(pyir.dumps(mod))) == pyir.dumps(mod)
    plain = pyir.testing.elementwise_chain(3)
    assert pyir.dumps(plain)[6:8] == b"\x01\x00" and '"types"' not in pyir.to_json(plain)
    assert pyir.dumps(mod)[6:8] == b"\x03\x00"


def test_alpha_equality_of_matches() -> None:
    """Pattern variables are parameters of the clause's function: matches alpha-compare and
    hash by binder position; another pattern or constructor differs."""
    lst = _list_type()
    cons, nil = lst.constructors
    pat = PatternConstructor(cons, [PatternVar(), PatternWildcard()])

    def f(name: str, pattern=pat) -> pyir.Function:
        x = pyir.var("x", F32)
        h = pyir.var(name)
        data = pyir.Call(cons, [x, pyir.Call(nil, [])])
        return pyir.Function([x], Match(data, [Clause(pattern, pyir.op.add(h, x), [h]),
                                               Clause(PatternWildcard(), x, [])]))

    assert pyir.alpha_equal(f("h"), f("k")) and pyir.alpha_hash(f("h")) == pyir.alpha_hash(f("k"))
    other = PatternConstructor(cons, [PatternWildcard(), PatternVar()])
    assert not pyir.alpha_equal(f("h"), f("h", other))


def test_prelude_functions_type_check_and_evaluate() -> None:
    """The prelude (List / Option / Tree and its functions) type-checks function by function, and
    its functions compute what they say, called from a program of ours."""
    p = pyir.prelude()
    assert sorted(p.type_definitions()) == ["List", "Option", "Tree"]
    for name in p.names():
        pyir.infer_type(p[name], p)
    main = pyir.parse(p.astext() + """
def @main(%n: Tensor[(), int32]) {
  let %l = @range(0, %n);
  let %d = @map(fn (%v: Tensor[(), int32]) -> Tensor[(), int32] { multiply(%v, 2) }, %l);
  let %t = Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)));
  (@length(%l), @sum(%d), @nth(%d, 3), @sum(@rev(@concat(%l, %d))), @size(%t),
   @get_or(@head_opt(@filter(fn (%v: Tensor[(), int32]) { greater(%v, 5) }, %d)), -1),
   @size(@tmap(fn (%v: Tensor[(), int32]) { (%v, %v) }, %t)), @length(@zip(%l, @tl(%l))),
   @hd(@foldr(fn (%a: Tensor[(), int32], %acc: List[Tensor[(), int32]]) { Cons(add(%a, 100), %acc) },
              Nil, %l)),
   @foldl(fn (%a: Tensor[(), int32], %b: Tensor[(), int32]) { subtract(%a, %b) }, 0, %l),
   @hd(@update(%l, 0, 7)), @get_or(@omap(fn (%v: Tensor[(), int32]) { add(%v, 1) }, @head_opt(Nil)), 9))
}
""")
    out = pyir.evaluate(main, np.int32(6))
    assert [int(v) for v in out] == [6, 30, 6, 45, 4, 6, 4, 5, 100, -15, 7, 9]
    lst = adt_to_list(pyir.evaluate(pyir.with_prelude(main=pyir.parse(
        p.astext() + "def @main() { @rev(@range(0, 4)) }")["main"]), ))
    assert [int(v) for v in lst] == [3, 2, 1, 0]


def _pass_module() -> pyir.Module:
    """The prelude and a main using matches, constructors, closures, a reference and operators
    the passes rewrite (x * 1, x + 0, relu)."""
    return pyir.parse(pyir.prelude().astext() + """
def @main(%x: Tensor[(3), float32], %n: Tensor[(), int32]) {
  let %r = ref(%x);
  let %l = @range(0, 3);
  let %s = @sum(@map(fn (%i: Tensor[(), int32]) -> Tensor[(), int32] { add(multiply(%i, 1), 0) }, %l));
  let %u = ref_write(%r, add(nn.relu(%x), multiply(%x, 0f)));
  let %v = ref_read(%r);
  let %o = match (@head_opt(Cons(%n, %l))) {
    Some(%h) => add(%v, cast(%h, dtype="float32")),
    None => exp(add(%x, 0f)),
  };
  (%o, %s, @length(Cons(%v, Cons(%x, Nil))), %u)
}
""")


_PASSES = [T.InferType(), T.SimplifyInference(), T.FoldConstant(), T.SimplifyExpr(),
           T.EliminateCommonSubexpr(), T.DeadCodeElimination(), T.FuseOps(), T.DefuseOps(), T.ToANormalForm(),
           T.ToBasicBlockNormalForm(),
           T.ToGraphNormalForm(), T.Inline(), T.DynamicToStatic(), T.BindShapes({}),
           T.PatternRewrite([pyir.Rule(pyir.is_op("nn.relu")(pyir.wildcard()),
                                       lambda m: pyir.op.maximum(m.expr.args[0], pyir.const(0.0)))])]


@pytest.mark.parametrize("p", _PASSES, ids=lambda p: p.name)
def test_every_pass_leaves_adts_intact(p: T.Pass) -> None:
    """Every pass of pyir.transform on a module with type definitions, matches, constructors and
    references: the input is unchanged, the output type-checks, evaluates the same and has
    complete lineage (pyir.testing.check_pass)."""
    mod = _pass_module()
    out = check_pass(p, mod, idempotent=False)
    for name in out.names():
        pyir.infer_type(out[name], out)
    assert out.type_definitions() == mod.type_definitions()
    x = np.array([1, -2, 3], "float32")
    want, got = pyir.evaluate(mod, x, np.int32(2)), pyir.evaluate(out, x, np.int32(2))
    assert all(np.array_equal(a, b) for a, b in zip(got[:3], want[:3])) and want[0].tolist() == [3, 2, 5]


def test_nested_matches_in_clause_bodies_without_recursion() -> None:
    """3000 matches nested in clause bodies (three times the recursion limit): typed, printed,
    parsed, serialized and evaluated iteratively."""
    lst = _list_type()
    cons, nil = lst.constructors
    lt = TypeCall("List", [F32])
    depth = 3000
    vs = [pyir.var("l", lt)] + [pyir.var(f"t{i}") for i in range(depth)]
    pat = PatternConstructor(cons, [PatternWildcard(), PatternVar()])
    e: pyir.Expr = pyir.const(0.0)
    for i in range(depth - 1, -1, -1):
        e = Match(vs[i], [Clause(pat, e, [vs[i + 1]]), Clause(PatternWildcard(), pyir.const(float(i)), [])])
    mod = pyir.Module({"main": pyir.Function([vs[0]], e)}, [lst])
    assert mod.type_of(mod["main"]).ret_type is F32
    back = pyir.parse(mod.astext())
    assert pyir.alpha_equal(back["main"], mod["main"])
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]
    v = ConstructorValue(nil)
    for _ in range(5):
        v = ConstructorValue(cons, (np.float32(1), v))
    assert pyir.evaluate(mod, v) == np.float32(5.0)  # the 6th match meets Nil


def test_deep_cons_list() -> None:
    """A 10^6-long Cons list built in IR survives type checking, printing, parsing, both formats
    and evaluation (no recursion proportional to its length)."""
    lst = _list_type()
    cons, nil = lst.constructors
    x = pyir.var("x", F32)
    with pyir.ir.node.gc_paused():
        e: pyir.Expr = pyir.Call(nil, [])
        for _ in range(10**6):
            e = pyir.Call(cons, [x, e])
    mod = pyir.Module({"main": pyir.Function([x], e)}, [lst])
    assert str(mod.type_of(mod["main"]).ret_type) == "List[Tensor[(), float32]]"
    assert pyir.alpha_equal(pyir.parse(mod.astext())["main"], mod["main"])  # (a new %x)
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]
    assert pyir.from_json(pyir.to_json(mod))["main"] is mod["main"]
    assert len(adt_to_list(pyir.evaluate(mod, np.float32(1)))) == 10**6


def test_deep_match_nesting() -> None:
    """10^5 nested matches (each taking the tail of the list the one inside it returns) survive
    type checking, printing, parsing, both formats and evaluation.  (10^5, not 10^6: a match
    nesting is a 6-node unit per level, so 10^6 levels measured 4.3 GB and 200 s of CPU; any
    recursion by depth fails far below 10^5, and the 10^6 Cons list above runs the same
    iterative walks over the ADT kinds.)"""
    lst = _list_type()
    cons, nil = lst.constructors
    lt = TypeCall("List", [F32])
    l0 = pyir.var("l", lt)
    pat = PatternConstructor(cons, [PatternWildcard(), PatternVar()])
    depth = 10**5
    with pyir.ir.node.gc_paused():
        e: pyir.Expr = l0
        for _ in range(depth):
            t = pyir.var("t")
            e = Match(e, [Clause(pat, t, [t])], complete=False)
    mod = pyir.Module({"main": pyir.Function([l0], e)}, [lst])
    del e, t
    assert mod.type_of(mod["main"]).ret_type is lt
    text = mod.astext()
    assert pyir.alpha_equal(pyir.parse(text)["main"], mod["main"])
    del text  # each phase's data freed before the next (peak memory)
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]
    assert pyir.from_json(pyir.to_json(mod))["main"] is mod["main"]
    v = ConstructorValue(nil)
    for _ in range(depth + 3):
        v = ConstructorValue(cons, (np.float32(1), v))
    assert len(adt_to_list(pyir.evaluate(mod, v))) == 3


def test_match_must_be_exhaustive_match_question_need_not() -> None:
    """A `match` whose clauses miss some values is a TypeCheckError (as in TVM); nested patterns
    covering every case together are exhaustive; `match?` is never checked."""
    def program(q: str, data: str, clauses: str) -> str:
        return ("type T { A, B(T), C(T, T), }\ndef @main(%t: T[], %u: T[]) {\n  match" + q + " (" + data
                + ") {\n" + clauses + "  }\n}\n")
    cases = [
        ("%t", "    B(A) => 1,\n    A => 0,\n    C(_, _) => 2,\n", False),  # B(B(_)) and B(C(_, _)) missed
        ("%t", "    B(A) => 1,\n    B(B(_)) => 3,\n    B(C(_, %x)) => 4,\n    A => 0,\n"
               "    C(_, _) => 2,\n", True),
        ("(%t, %u)", "    (A, _) => 0,\n    (_, A) => 1,\n", False),
        ("(%t, %u)", "    (A, _) => 0,\n    (_, A) => 1,\n    (%p, %q) => 2,\n", True),
    ]
    for data, clauses, exhaustive in cases:
        for q in ("", "?"):
            mod = pyir.parse(program(q, data, clauses))
            if exhaustive or q == "?":
                assert mod.type_of(mod["main"]).ret_type is I32
            else:
                with pytest.raises(pyir.TypeCheckError, match=r"Match.*match is not exhaustive"):
                    mod.type_of(mod["main"])
