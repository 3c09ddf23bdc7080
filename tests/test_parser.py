"""Tests of the text parser (pyir.text.parser): round trips, errors, depth, fuzzing."""

from __future__ import annotations

import json
import signal
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyir
from pyir import op
from pyir.errors import ParseError
from pyir.ir.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    const,
    var,
)
from pyir.ir.module import Module
from pyir.ir.types import FuncType, TensorType, TupleType
from pyir.text.parser import MAX_NESTING, parse, parse_expr, parse_type, tokenize
from pyir.text.printer import astext

T = TensorType((1, 3), "float32")


# -- helpers ---------------------------------------------------------------------------------------


def alpha_equal(a: Any, b: Any) -> bool:
    """True iff expressions ``a`` and ``b`` are equal up to a consistent renaming of variables.

    Walks both graphs in parallel with an explicit stack; the node map must be a bijection.
    """
    fwd: dict[Any, Any] = {}
    bwd: dict[Any, Any] = {}
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x in fwd or y in bwd:
            if fwd.get(x) is not y or bwd.get(y) is not x:
                return False
            continue
        if type(x) is not type(y):
            return False
        fwd[x] = y
        bwd[y] = x
        k = type(x)
        if k is Var:
            if x.type_annotation is not y.type_annotation:
                return False
        elif k in (GlobalVar, Constant, Op):
            if x is not y:
                return False
        elif k is Call:
            if x.attrs is not y.attrs or len(x.args) != len(y.args):
                return False
            stack.append((x.op, y.op))
            stack.extend(zip(x.args, y.args))
        elif k is Tuple:
            if len(x.fields) != len(y.fields):
                return False
            stack.extend(zip(x.fields, y.fields))
        elif k is TupleGetItem:
            if x.index != y.index:
                return False
            stack.append((x.tuple_value, y.tuple_value))
        elif k is Function:
            if (x.ret_type is not y.ret_type or x.attrs is not y.attrs
                    or len(x.params) != len(y.params)):
                return False
            stack.extend(zip(x.params, y.params))
            stack.append((x.body, y.body))
        elif k is Let:
            stack.extend([(x.var, y.var), (x.value, y.value), (x.body, y.body)])
        elif k is If:
            stack.extend([(x.cond, y.cond), (x.true_branch, y.true_branch),
                          (x.false_branch, y.false_branch)])
        else:  # pragma: no cover
            raise AssertionError(f"unexpected node {x!r}")
    return True


def modules_alpha_equal(m1: Module, m2: Module) -> bool:
    """Same function names, each pair of functions alpha-equivalent."""
    return m1.names() == m2.names() and all(alpha_equal(m1[n], m2[n]) for n in m1.names())


def check_round_trip(mod: Module) -> Module:
    """Parse the full text of ``mod``; check alpha-equivalence and identical re-printed text."""
    text = mod.astext(show_meta_data=True)
    back = parse(text)
    assert back.astext(show_meta_data=True) == text
    assert modules_alpha_equal(mod, back)
    return back


def error_of(text: str) -> ParseError:
    """The ParseError raised by parsing ``text`` (fails if none or another exception)."""
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value


def check_error(text: str, line: int, column: int, fragment: str) -> ParseError:
    """Parsing fails with ``fragment`` in the message at ``line:column``, with a caret line."""
    e = error_of(text)
    assert (e.line, e.column) == (line, column), str(e)
    assert fragment in e.message, str(e)
    lines = text.splitlines()
    src = lines[line - 1] if line <= len(lines) else ""
    assert f"{line}:{column}: " in str(e)
    assert f"\n  {src}\n  " + " " * (column - 1) + "^" in str(e)
    return e


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging) if the block runs longer than ``seconds``."""
    def handler(signum: int, frame: Any) -> None:
        raise TimeoutError("parse took too long (hang?)")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# -- a module with every construct -----------------------------------------------------------------


def everything_module() -> Module:
    """Every node kind and printed construct: lets, blocks, nested fns, ifs, tuples, globals, constants."""
    x = var("x", shape=(1, 3))
    y = var("y", shape=(1, 3))
    u = Var("u")  # untyped parameter
    p = Var("p", T)
    v = Var("v", T)
    w = Var("v")  # same name hint as ``v``: printed as %v_1
    prim = Function([p], op.negative(p), T, {"Primitive": 1, "Compiler": "ext\"q\n", "Scale": 0.5})
    inner = Let(v, op.nn.relu(x), op.add(v, v))  # a Let in non-tail position: a `{ ... }` block
    tup = Tuple([x, y, inner])
    cond = op.greater(op.sum(x), const(0.0))
    branch = If(cond, op.nn.relu(x), op.negative(y))
    g = Var("g", FuncType([T], T))
    tt = Var("tt", TupleType([T, TupleType([TensorType((), "int64")])]))
    fself = Var("f")
    n = Var("n", T)
    rec = Let(fself, Function([n], Call(fself, [n])), Call(fself, [x]))
    consts = Tuple([const(1.5), const(2.0, "float64"), const(3.0, "float16"), const(7),
                    const(-7, "int64"), const(5, "uint8"), const(9, "int8"), const(300, "int16"),
                    const(2, "uint16"), const(4, "uint32"), const(8, "uint64"), const(True), const(False),
                    const(-0.0), const(1e-5), const(np.array([[1.0, 2.0]], "float32")),
                    const(np.array([True, False])), const(np.array([1, -2, 3], "int64")),
                    const(np.arange(12, dtype="float32").reshape(3, 4)),  # metadata
                    const(np.array([np.nan, np.inf, -np.inf], "float32")),  # metadata (non-finite)
                    const(np.zeros((0, 2), "float32")),  # metadata (empty)
                    const(np.array(3 + 4j, "complex64"))])  # metadata (no inline form)
    body = Tuple([
        Call(prim, [x]),
        TupleGetItem(tup, 2),
        Tuple([x]),
        Tuple([]),
        branch,
        Call(GlobalVar("helper"), [x]),
        Call(GlobalVar("weird name"), [x], {"k": 1}),
        Call(g, [y]),
        TupleGetItem(tt, 1),
        Tuple([Op.get("nn.relu"), u]),
        rec,
        op.nn.conv2d(op.reshape(x, newshape=(1, 3, 1, 1)), const(np.ones((4, 3, 3, 3), "float32")),
                     padding=(1, 1), strides=(1, 1), out_dtype="float32"),
        op.nn.softmax(x, axis=0),
        op.clip(x, a_min=-1.0, a_max=float("inf")),
        consts,
        Let(w, op.tanh(y), op.add(w, w)),  # tail Let: a `let` binding in the body
    ])
    attrs = {"ty": TensorType((5,), "int8"), "tup": TupleType([T]), "fty": FuncType([], T), "none": None,
             "lst": (1, 2.5, True, "s", (), (3,)), "neg": -3, "inf": float("-inf"), "nan": float("nan"),
             "e": 1e-05}
    main = Function([x, y, u, g, tt], body, None, attrs)
    a = var("a", shape=(1, 3))
    helper = Function([a], op.nn.relu(a), T)
    b = var("b", shape=(1, 3))
    weird = Function([b], Let(Var("t", T), op.exp(b), op.sqrt(b)))
    return Module({"main": main, "helper": helper, "weird name": weird})


def test_every_construct_round_trips() -> None:
    """A module using every node kind and printed construct parses back alpha-equivalent, same text."""
    mod = everything_module()
    text = mod.astext(show_meta_data=True)
    for fragment in ("let %v_1", "= {", "fn (%p", "Primitive=1", "if (", "@\"weird name\"", "%x,)",
                     "()", "meta[Constant][0]", "#[metadata]", "1.5f", "2.0f64", "3.0f16", "-7i64",
                     "5u8", "tensor([[1.0, 2.0]], float32)", "fn (Tensor[(1, 3), float32])"):
        assert fragment in text, fragment
    check_round_trip(mod)


def test_parsed_names_and_identity() -> None:
    """Same name in one scope is one Var; parsed constants and global vars are the interned nodes."""
    text = ("def @main(%x: Tensor[(2), float32]) {\n  %0 = add(%x, %x);\n  %1 = add(%0, 1f);\n"
            "  multiply(%1, %0)\n}\n")
    f = parse(text)["main"]
    (x,) = f.params
    assert f.body.args[1].args[0] is f.body.args[0].args[0].args[0] is x
    assert f.body.args[0].args[1] is const(1.0) and f.body.args[0].args[0] is op.add(x, x)


def test_shadowing() -> None:
    """A new binding of a name shadows the old one until the end of its scope."""
    text = ("def @main(%x: Tensor[(2), float32]) {\n"
            "  let %y = nn.relu(%x);\n"
            "  %0 = {\n    let %y = negative(%y);\n    exp(%y)\n  };\n"
            "  add(%0, %y)\n}\n")
    f = parse(text)["main"]
    outer = f.body  # Let y = relu(x)
    assert isinstance(outer, Let)
    y1 = outer.var
    call = outer.body
    assert call.args[1] is y1
    inner = call.args[0]
    assert isinstance(inner, Let) and inner.var is not y1 and inner.value.args[0] is y1
    assert inner.body.args[0] is inner.var


def test_standard_models_round_trip() -> None:
    """resnet(3), transformer_block() and shared_dag(300) round-trip (alpha-equivalent, same text)."""
    for mod in (pyir.testing.resnet(3), pyir.testing.transformer_block(), pyir.testing.shared_dag(300)):
        check_round_trip(mod)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pyir.testing.programs())
def test_random_programs_round_trip(mod: Module) -> None:
    """Random well-typed programs round-trip through text."""
    check_round_trip(mod)


def chain_text(n: int) -> str:
    """The printed text of ``pyir.testing.elementwise_chain(n)``, made by string formatting (fast)."""
    one = "tensor([1.0, 1.0, 1.0, 1.0], float32)"
    calls = [f"add(%{{}}, {one})", f"multiply(%{{}}, {one})", "nn.relu(%{})", "subtract(%{}, %x)"]
    lines = ["def @main(%x: Tensor[(4), float32]) {"]
    prev = "x"
    for i in range(n):
        call = calls[i % 4].format(prev)
        lines.append(f"  %{i} = {call};" if i < n - 1 else f"  {call}")
        prev = str(i)
    return "\n".join(lines) + "\n}\n"


def test_deep_chain() -> None:
    """The text of a 10**6-deep elementwise chain parses (bindings in a loop) to the same chain."""
    for k in (5, 6, 7, 8):
        assert chain_text(k) == pyir.testing.elementwise_chain(k).astext(show_meta_data=True)
    n = 10**6
    main = parse(chain_text(n))["main"]
    (x,) = main.params
    ops = [Op.get(name) for name in ("add", "multiply", "nn.relu", "subtract")]
    one = const(np.ones(4, "float32"))
    e, depth = main.body, n
    while type(e) is Call:
        depth -= 1
        assert e.op is ops[depth % 4]
        assert len(e.args) == (1 if depth % 4 == 2 else 2)
        if len(e.args) == 2:
            assert e.args[1] is (x if depth % 4 == 3 else one)
        e = e.args[0]
    assert depth == 0 and e is x


def test_expression_form() -> None:
    """parse_expr reads astext(expr): its free variables are declared (``free_var %x: T;``, as
    in TVM); an undeclared %name is an error unless free_vars=True (fresh untyped Vars)."""
    x = var("x", shape=(2,))
    e = op.add(op.nn.relu(x), Let(Var("t"), op.exp(x), op.multiply(x, const(2.0))))
    text = astext(e)
    assert text.startswith("free_var %x: Tensor[(2), float32];\n")
    back = parse_expr(text)
    assert astext(back) == text
    fv = pyir.free_vars(back)
    assert [v.name_hint for v in fv] == ["x"] and fv[0].type_annotation == x.type_annotation
    assert pyir.alpha_equal(e, back, map_free_vars=True) and not pyir.alpha_equal(e, back)
    assert alpha_equal(e, parse_expr(text, {"x": x}))  # env wins over the declaration
    body = text.split("\n", 1)[1]
    with pytest.raises(ParseError, match="undefined variable %x"):
        parse_expr(body)
    loose = parse_expr(body, free_vars=True)
    assert [v.type_annotation for v in pyir.free_vars(loose)] == [None]
    f = Function([x], e, None, {"Primitive": 1})
    assert alpha_equal(f, parse_expr(astext(f)))


def test_types() -> None:
    """Types print and parse back to the same interned type."""
    for t in (T, TensorType((), "bool"), TensorType((5,), "int64"), TupleType([]), TupleType([T]),
              TupleType([T, TupleType([T])]), FuncType([T, TensorType((2, 2))], TupleType([T]))):
        assert parse_type(astext(t)) is t
    assert parse_type("Tensor[(5,), float32]") is TensorType((5,))
    assert parse_type("(Tensor[(), float32])") is TensorType(())


def test_comments_and_spacing() -> None:
    """Comments (/* */ and //) and free spacing are skipped, everywhere between tokens."""
    text = ("// leading comment\ndef @main(/* c */ %x : Tensor[ (2) , float32 ] ) {\n"
            "  %0 = nn.softmax /* between */ ( %x , axis = 0 ) ; // trailing\n"
            "  %1 = tensor( /* inside */ [ 1.0 , 2.0 ], float32);\n"
            "  %2 = add(%0, %1);\n  %2 . 0\n}\n")
    # %2 is not a tuple, but the parser does not type check: it builds TupleGetItem
    f = parse(text)["main"]
    assert isinstance(f.body, TupleGetItem) and f.body.index == 0
    call = f.body.tuple_value
    assert call.args[1] is const(np.array([1.0, 2.0], "float32"))
    assert call.args[0] is op.nn.softmax(f.params[0], axis=0)


def test_metadata_missing() -> None:
    """Without the #[metadata] section, a meta[...] reference is a ParseError saying so."""
    mod = pyir.testing.resnet(1)
    text = mod.astext(show_meta_data=False)
    assert "#[metadata]" not in text
    e = error_of(text)
    assert "metadata" in e.message and "astext()" in e.message
    assert e.line == 2 and text.splitlines()[1][e.column - 1:].startswith("meta[Constant][0]")


def test_metadata_errors() -> None:
    """Malformed metadata entries and out-of-range references raise ParseError at the entry."""
    good = 'def @main() {\n  meta[Constant][0]\n}\n#[metadata]\nmeta[Constant][0] = float32 (1) "AACAPw=="\n'
    assert parse(good)["main"].body is const(np.array([1.0], "float32"))
    check_error(good.replace("(1)", "(2)"), 5, 33, "bad data")
    check_error(good.replace("AACAPw==", "!!"), 5, 33, "bad data")
    check_error(good.replace("float32 (1)", "float99 (1)"), 5, 21, "unknown dtype")
    check_error(good.replace("[Constant][0]\n}", "[Constant][1]\n}"), 2, 3, "not in the metadata")
    check_error(good + 'meta[Constant][0] = float32 (1) "AACAPw=="\n', 6, 1, "defined twice")
    check_error(good + "garbage\n", 6, 1, "expected 'meta[Constant]")


# -- errors ----------------------------------------------------------------------------------------

HEAD = "def @main(%x: Tensor[(2), float32]) {\n"


def test_error_missing_paren() -> None:
    """A missing ')' is reported at the token found instead."""
    check_error(HEAD + "  %0 = nn.relu(%x;\n  %0\n}\n", 2, 18, "expected ',' or ')'")


def test_error_unknown_op() -> None:
    """An unknown operator is reported at its name with the registry's message."""
    check_error(HEAD + "  %0 = nn.relux(%x);\n  %0\n}\n", 2, 8, "unknown operator 'nn.relux'")


def test_error_bad_attr() -> None:
    """A bad attribute kind, an unknown attribute and a wrong arity are reported at the call."""
    check_error(HEAD + "  nn.softmax(%x, axis=1.5)\n}\n", 2, 3, "expected int")
    check_error(HEAD + "  nn.softmax(%x, axes=1)\n}\n", 2, 3, "unknown attribute")
    check_error(HEAD + "  add(%x)\n}\n", 2, 3, "takes 2 input(s)")
    check_error(HEAD + "  nn.softmax(%x, axis=1, axis=2)\n}\n", 2, 26, "duplicate attribute")
    check_error(HEAD + "  nn.softmax(axis=1, %x)\n}\n", 2, 22, "arguments come before attributes")


def test_error_undefined_names() -> None:
    """Undefined %vars, and @globals not defined in the text, are ParseErrors at their use."""
    check_error(HEAD + "  %0 = nn.relu(%y);\n  %0\n}\n", 2, 16, "undefined variable %y")
    check_error(HEAD + "  @nope(%x)\n}\n", 2, 3, "undefined global function @nope")
    check_error(HEAD + "  %0 = { let %t = nn.relu(%x); %t };\n  %t\n}\n", 3, 3, "undefined variable %t")


def test_error_bad_type() -> None:
    """Malformed types: unknown dtype, negative or non-integer dims, missing brackets."""
    check_error("def @main(%x: Tensor[(2), float33]) {\n  %x\n}\n", 1, 27, "unknown dtype 'float33'")
    check_error("def @main(%x: Tensor[(-2), float32]) {\n  %x\n}\n", 1, 23, "negative dimension")
    check_error("def @main(%x: Tensor[(2.5), float32]) {\n  %x\n}\n", 1, 23, "expected a dimension")
    check_error("def @main(%x: Tensor(2), float32) {\n  %x\n}\n", 1, 21, "expected '['")
    check_error("def @main(%x: Tansor[(2), float32]) {\n  %x\n}\n", 1, 15, "expected a type")


def test_error_truncated() -> None:
    """Text cut short is reported at the end of input."""
    text = pyir.testing.shared_dag(20).astext(show_meta_data=True)
    cut = text[:text.index("(", text.index("%3 = ")) + 1]
    e = error_of(cut)
    assert "end of input" in e.message
    lines = cut.splitlines()
    assert (e.line, e.column) == (len(lines), len(lines[-1]) + 1)
    check_error(HEAD + "  %0 = nn.relu(%x);\n", 3, 1, "found end of input")


def test_error_garbage() -> None:
    """Stray characters, unterminated strings and comments, and non-IR text are ParseErrors."""
    check_error("def @main() { $ }", 1, 15, "found '$'")
    check_error("hello world", 1, 1, "expected 'def' or end of input")
    check_error('def @main() { nn.relu("abc) }', 1, 23, "unterminated string")
    check_error("def @main() { /* never closed }", 1, 15, "unterminated comment")
    check_error("def @main() { 1.5q }", 1, 15, "unknown numeric suffix 'q'")
    check_error("def @main() { 300u8 }", 1, 15, "out of range for uint8")
    check_error("def @main() { tensor([1, [2]], int32) }", 1, 15, "bad tensor literal")
    check_error("def @main() { 1 }\ndef @main() { 2 }", 2, 5, "defined twice")
    check_error("def @main(%x, %x) { %x }", 1, 15, "duplicate parameter %x")
    assert isinstance(error_of("def @main() { 1 }}"), pyir.PyIRError)
    with pytest.raises(ParseError):
        parse(b"def @main() { 1 }")  # type: ignore[arg-type]


def test_error_is_value_error() -> None:
    """ParseError is both a PyIRError and a ValueError."""
    e = error_of("def")
    assert isinstance(e, pyir.PyIRError) and isinstance(e, ValueError)


# -- depth -----------------------------------------------------------------------------------------


def test_deeply_nested_blocks() -> None:
    """10**5 nested fn blocks and 10**4 nested if blocks parse (an explicit stack, no recursion)."""
    n = 10**5
    text = "def @main(%x: Tensor[(2), float32]) {\n" + "fn () {\n" * n + "%x\n" + "}\n" * n + "}\n"
    f = parse(text)["main"]
    depth = 0
    e = f.body
    while type(e) is Function:
        e, depth = e.body, depth + 1
    assert depth == n and e is f.params[0]
    m = 10**4
    text = ("def @main(%c: Tensor[(), bool], %x: Tensor[(2), float32]) {\n"
            + "if (%c) {\n" * m + "%x\n" + "} else {\n%x\n}\n" * m + "}\n")
    e = parse(text)["main"].body
    depth = 0
    while type(e) is If:
        e, depth = e.true_branch, depth + 1
    assert depth == m


def test_deeply_nested_inline_is_error() -> None:
    """Inline nesting deeper than MAX_NESTING (parentheses, lists) raises 'nesting too deep'."""
    n = 10**5
    for text in ("def @main(%x: Tensor[(2), float32]) { " + "(" * n + "%x" + ")" * n + " }",
                 "def @main(%x: Tensor[(2), float32]) { nn.relu(%x, a=" + "[" * n + "]" * n + ") }",
                 "def @main() { tensor(" + "[" * n + "1" + "]" * n + ", int32) }",
                 "def @main() { tensor(" + "[" * n + "1" + "]" * n + ", /**/ int32) }"):
        e = error_of(text)
        assert "nesting too deep" in e.message
    k = MAX_NESTING - 1
    ok = parse("def @main(%x: Tensor[(2), float32]) { " + "(" * k + "%x" + ")" * k + " }")["main"]
    assert ok.body is ok.params[0]


def test_tokenize_positions() -> None:
    """tokenize() reports kinds, texts and 1-based line/column, skipping comments."""
    toks = list(tokenize("def @f() {\n  /* c */ %0 = g(%x, k=[1, 2]);\n}"))
    assert [(t.kind, t.line, t.column) for t in toks[:4]] == [
        ("IDENT", 1, 1), ("GLOBAL", 1, 5), ("LP", 1, 7), ("RP", 1, 8)]
    bind = next(t for t in toks if t.kind == "BIND")
    assert (bind.text, bind.line, bind.column) == ("%0 =", 2, 11)
    assert toks[-1].kind == "EOF" and (toks[-1].line, toks[-1].column) == (3, 2)


# -- fuzzing ---------------------------------------------------------------------------------------

_FUZZ_BASES = [
    everything_module().astext(show_meta_data=True),
    pyir.testing.resnet(1, channels=2, size=4).astext(show_meta_data=True),
]
_ALPHABET = st.sampled_from(list('%@(){}[],;:=.-"/*#\n 0123456789afinxeTFN\\') + ["é", "\x00", "fn", "if"])


@st.composite
def mutated_text(draw: Any) -> str:
    """A valid printed text with a few random deletions, insertions and replacements."""
    text = draw(st.sampled_from(_FUZZ_BASES))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "cut"]))
        if kind == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 5)):]
        elif kind == "insert":
            text = text[:i] + draw(_ALPHABET) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(_ALPHABET) + text[i + 1:]
        else:
            text = text[:i]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_text())
def test_fuzz_mutations(text: str) -> None:
    """Mutated valid text parses to a Module or raises ParseError: no other exception, no hang."""
    with time_limit(20):
        try:
            result = parse(text)
        except ParseError as e:
            assert e.line >= 1 and e.column >= 1
            return
    assert isinstance(result, Module)


@settings(max_examples=100, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_fuzz_random_text(text: str) -> None:
    """Random token soup gives a Module or a ParseError, never another exception."""
    try:
        parse("def @main(%x: Tensor[(2), float32]) {\n" + text + "\n}\n")
        parse_expr(text)
    except ParseError:
        pass


def test_attribute_values_round_trip() -> None:
    """Typed attribute values (int, float, bool, None, str with escapes, lists, types) parse back exactly."""
    x = var("x", shape=(2,))
    for value in (1, -1, 1.0, -0.0, 1e-05, 1e300, float("inf"), float("-inf"), True, False, None,
                  "a\"b\\c\nd\u00e9", (), (1, (2.5, "x")), TensorType((3,), "int8"), TupleType([T]),
                  FuncType([T], T)):
        f = Function([x], x, None, {"v": value})
        back = parse(Module({"main": f}).astext())["main"]
        assert back.attrs is f.attrs, (value, back.attrs)
    nan = Function([x], x, None, {"v": float("nan")})
    assert np.isnan(parse(Module({"main": nan}).astext())["main"].attrs["v"])
    assert json.dumps("é") in Module({"main": Function([x], x, None, {"s": "é"})}).astext()


# -- issue 10: strings, names, keys, NaN payloads, dotted names -----------------------------------


@pytest.mark.parametrize("text", [
    'def @main() { @"\\ud800" }',
    'def @main(%"\\ud800") { %"\\ud800" }',
    'def @main(%x, "\\udfff"=1) { %x }',
    'def @main(%x, k="\\ud800") { %x }',
    'def @main(%x, k="\ud800") { %x }',  # a raw lone surrogate inside the text
    'def @"\\ud800x"() { () }',
])
def test_lone_surrogates_are_parse_errors(text: str) -> None:
    """issue 10 item 4: escapes (or raw text) giving invalid strings are ParseErrors with a caret."""
    with pytest.raises(ParseError) as ei:
        parse(text)
    e = ei.value
    assert e.line == 1 and 1 <= e.column <= len(text)
    assert "^" in str(e)


def test_constructor_errors_are_parse_errors_at_the_token() -> None:
    """issue 10 item 4: a value the constructors reject is a ParseError at its token."""
    with pytest.raises(ParseError) as ei:
        parse("def @main(%x: Tensor[(9223372036854775808), float32]) { %x }")
    assert ei.value.column == 15


ODD = ["a b", "", "0", "12", "a.0", "x.1.2", "a.", ".0", "\u00e9", 'q"\\', "\n", "%x", "@g", "=",
       "True", "fn", "let", "meta", "tensor", "x_1", "a.b"]


def test_odd_attribute_keys_round_trip() -> None:
    """issue 10 item 5: attribute keys that are not identifiers print quoted and parse back."""
    y = Var("y", T)
    attrs = {k: i for i, k in enumerate(ODD)}
    mod = Module({"main": Function([y], y, None, attrs)})
    text = mod.astext()
    back = parse(text)
    assert back["main"].attrs.to_dict() == attrs
    assert back.astext() == text
    assert '"a b"=0' in text and "True=" in text
    # keys of operator calls with a non-operator callee too
    f = Var("f", FuncType([T], T))
    g = Function([f, y], Call(f, [y], {"a b": 1, "c": (1, "d")}))
    assert astext(parse_expr(astext(g))) == astext(g)


def test_odd_names_round_trip() -> None:
    """issue 10 item 5: variable name hints and global names print quoted when needed and round-trip."""
    vs = [Var(n, T) for n in ODD]
    tup = Var("t", TupleType([T, T]))
    tup0 = Var("t.0", TupleType([T, T]))
    body = Tuple([*vs, TupleGetItem(tup, 0), TupleGetItem(tup0, 1), tup0,
                  TupleGetItem(GlobalVar("g.0"), 0), GlobalVar("a b")])
    mod = Module({"main": Function([*vs, tup, tup0], body), "g.0": Function([], Tuple([])),
                  "a b": Function([], Tuple([])), "1": Function([], GlobalVar("1"))})
    text = mod.astext()
    back = parse(text)
    assert [v.name_hint for v in back["main"].params] == [*ODD, "t", "t.0"]
    assert back.names() == mod.names()
    for name in mod.names():
        assert pyir.alpha_equal(back[name], mod[name])
    assert back.astext() == text
    assert '%"0"' in text and '%"a.0"' in text and "@\"g.0\".0" in text and "%t.0" in text
    # the expression form, with free variables
    e = parse_expr(astext(body))
    assert astext(e) == astext(body)


def test_quoted_and_plain_names_meet_only_when_the_same() -> None:
    """issue 10 item 5: %"x" is %x; %"0" is not the binding %0; %"a.0" is not element 0 of %a."""
    e = parse_expr('%0 = (%"0", %x); (%0, %"x", %"a.0", %a.0)', free_vars=True)
    fields = e.fields
    assert fields[1] is fields[0].fields[1]
    assert fields[0].fields[0].name_hint == "0" and fields[0].fields[0] is not fields[0]
    assert type(fields[3]) is TupleGetItem and fields[3].tuple_value.name_hint == "a"
    assert fields[2].name_hint == "a.0"
    assert parse_expr("%a", env={"a b": const(1.0)}, free_vars=True).name_hint == "a"
    assert parse_expr('%"a b"', env={"a b": const(1.0)}) is const(1.0)


def _bits(v: float) -> bytes:
    return struct.pack("<d", v)


def test_float_attributes_keep_their_bits() -> None:
    """issue 10 item 15: NaN payloads, signed NaN, -0.0 and infinities read back bit for bit."""
    raw = [0x7FF0000000000001, 0x7FF8000000000123, 0xFFF8000000000000, 0xFFFFFFFFFFFFFFFF,
           0x7FF8000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 1]
    vals = [struct.unpack("<d", struct.pack("<Q", b))[0] for b in raw]
    y = Var("y", T)
    attrs = {f"k{i}": v for i, v in enumerate(vals)}
    attrs["lst"] = tuple(vals)
    mod = Module({"main": Function([y], y, None, attrs)})
    text = mod.astext()
    assert "k1=0x7ff8000000000123" in text and "k2=-nan" in text and "k4=nan" in text
    back = parse(text)["main"].attrs
    for k, v in attrs.items():
        got = back[k]
        if type(v) is tuple:
            assert [_bits(a) for a in got] == [_bits(b) for b in v]
        else:
            assert _bits(got) == _bits(v), k
    assert parse(text)["main"].attrs is mod["main"].attrs
    assert parse(text).astext() == text


@pytest.mark.parametrize("text", [
    "def @main(%x, k=0x7ff8) { %x }",
    "def @main(%x, k=-0x7ff8000000000000) { %x }",
    "def @main(%x, k=0x7ff80000000000000) { %x }",
    "def @main(%x, k=0x7ff800000000000f64) { %x }",
    "def @main(%x) { add(%x, 0x7ff8000000000000) }",
])
def test_bad_hex_bit_patterns_are_parse_errors(text: str) -> None:
    """issue 10 item 15: hex float bits take exactly 16 digits, no sign, only in attributes."""
    with pytest.raises(ParseError):
        parse(text)


def test_long_dotted_names_parse_in_linear_time() -> None:
    """issue 10 item 18: ``%a.0.0...`` with 3*10^5 indices parses quickly (was quadratic)."""
    n = 300_000
    e = parse_expr("%a" + ".0" * n, free_vars=True)
    for _ in range(n):
        assert type(e) is TupleGetItem and e.index == 0
        e = e.tuple_value
    assert type(e) is Var and e.name_hint == "a"
    # a bound name that itself ends in a number (older text) wins when written in full;
    # otherwise every trailing number is an index (the printer quotes such names)
    a = Var("a.1", TupleType([T]))
    assert parse_expr("%a.1", env={"a.1": a}) is a
    e2 = parse_expr("%a.1.0", env={"a.1": a}, free_vars=True)
    assert type(e2.tuple_value) is TupleGetItem and e2.tuple_value.tuple_value.name_hint == "a"
    # the same for globals: element indices of @g
    g = parse_expr("@g" + ".1" * 1000)
    assert type(g) is TupleGetItem and g.index == 1


def test_deep_types_parse() -> None:
    """issue 10 item 16: types of any depth parse (iteratively), e.g. those InferType writes."""
    n = 10**5
    t = parse_type("(" * n + "Tensor[(2), float32]" + ",)" * n)
    for _ in range(n):
        assert type(t) is TupleType and len(t.fields) == 1
        t = t.fields[0]
    f = parse_type("fn (Tensor[(), int8]) -> " * n + "()")
    assert str(f) == "fn (Tensor[(), int8]) -> " * n + "()"
    x = var("x", shape=(2,))
    e: Any = x
    for _ in range(n):
        e = Tuple([e])
    mod = pyir.transform.InferType()(Module({"main": Function([x], e)}))
    text = mod.astext()
    assert text.count("(%") == n + 1 and len(text) < 100 * n  # (linear: from test_printer.py)
    assert parse(text).astext() == text
    for bad in ("fn (", "fn () ", "(Tensor[(2), float32]", "(Tensor[(2), float32],, )", "fn (()) -> ",
                "((()", "fn (,) -> ()"):
        with pytest.raises(ParseError):
            parse_type(bad)
    assert parse_type("fn (Tensor[(2), int8],) -> ((), (Tensor[(), bool]))") is FuncType(
        [TensorType((2,), "int8")], TupleType([TupleType([]), TensorType((), "bool")]))


# -- type aliases (issue 10 item 16) ---------------------------------------------------------------


def test_nested_function_types_round_trip_at_depth() -> None:
    """issue 10 item 16: 10^5 nested functions after InferType print with type aliases in linear
    text (was O(d^2): 46 GB at 10^5; from test_printer.py) and parse back to the same types
    (interned: `is`), alpha-equal functions and the same text."""
    def nested(d: int) -> Module:
        x = var("x", shape=(2,))
        e: Any = op.nn.relu(x)
        for _ in range(d):
            e = Function([], e)
        return pyir.transform.InferType()(Module({"main": Function([x], e)}))

    d = 10**5
    mod = nested(d)
    text = mod.astext()
    ratio = len(text) / len(nested(10**4).astext())
    assert 9 < ratio < 11.5, ratio  # alias names get one digit longer: slightly above 10
    assert len(text) < 200 * d
    assert text.count("type $t") == d - 7  # one alias per level but the 7 small and the top one
    with time_limit(60):
        back = parse(text)
    assert alpha_equal(back["main"], mod["main"])
    a, b, depth = mod["main"], back["main"], 0
    while type(a) is Function:
        assert b.ret_type is a.ret_type
        a, b, depth = a.body, b.body, depth + 1
    assert depth == d + 1


ALIASED = ("type $a = Tensor[(2), float32];\ntype $b = ($a, $a);\n"
           "def @main(%x: $a, t=$b) -> $b {\n  (%x, %x)\n}\n")


def test_alias_declarations_and_references() -> None:
    """issue 10 item 16: `type $name = T;` declares an alias usable in every type position
    (annotations, return types, type attributes, nested types, later declarations)."""
    f = parse(ALIASED)["main"]
    a = TensorType((2,))
    assert f.params[0].type_annotation is a and f.ret_type is TupleType([a, a])
    assert f.attrs["t"] is TupleType([a, a])
    # declarations may sit between definitions; aliases are textual, so small types print inline
    two = parse("type $a = Tensor[(2), float32];\ndef @f(%x: $a) { %x }\ntype $c = fn ($a) -> $a;\n"
                "def @g(%y: $c) { %y }\n")
    assert two["g"].params[0].type_annotation is FuncType([a], a)
    assert "$" not in two.astext()
    e = parse_expr("type $a = Tensor[(2), float32];\nlet %v: ($a,) = (%x,);\n%v", free_vars=True)
    assert e.var.type_annotation is TupleType([a])
    ft = parse_type("type $a = Tensor[(2), float32];\nfn ($a) -> ($a, $a)")
    assert ft is FuncType([a], TupleType([a, a]))
    toks = [(t.kind, t.text) for t in tokenize("type $t0 = $t1;")]
    assert toks[:4] == [("IDENT", "type"), ("ALIAS", "$t0"), ("EQ", "="), ("ALIAS", "$t1")]


def test_alias_errors() -> None:
    """issue 10 item 16: an undefined alias, a redefinition, a use before the declaration or in
    the declaration itself are ParseErrors at line:column."""
    check_error("def @main(%x: $a) { %x }", 1, 15, "undefined type alias $a")
    check_error("type $a = Tensor[(2), float32];\ntype $a = Tensor[(3), float32];\n"
                "def @main() { 1 }", 2, 6, "type alias $a is declared twice (first at 1:6)")
    check_error("type $b = ($a, $a);\ntype $a = Tensor[(2), float32];\ndef @main() { 1 }", 1, 12,
                "type alias $a is used before its declaration (at 2:1)")
    check_error("def @main(%x: $a) { %x }\ntype $a = Tensor[(2), float32];", 1, 15,
                "used before its declaration (at 2:1)")
    check_error("type $a = fn () -> $a;\ndef @main() { 1 }", 1, 20,
                "type alias $a is used in its own declaration")
    check_error("type $a Tensor[(2), float32];", 1, 9, "expected '=' in a type alias declaration")
    check_error("type $a = Tensor[(2), float32]\ndef @main() { 1 }", 2, 1,
                "expected ';' after a type alias declaration")
    check_error("type $a = 1;", 1, 11, "expected a type")
    check_error("type $a List", 1, 9, "expected '=' in a type alias declaration")  # an alias, malformed
    with pytest.raises(ParseError, match="undefined type alias"):
        parse_expr("let %v: $q = %x;\n%v")
    with pytest.raises(ParseError, match="undefined type alias"):
        parse_type("($a, $a)")
    with pytest.raises(ParseError):
        parse_type(None)  # type: ignore[arg-type]


def test_quoted_key_may_be_followed_by_space_before_equals():
    """A quoted attribute key reads like a plain one: whitespace or a newline may precede ``=``."""
    y = pyir.var("y", shape=(2,))
    m = pyir.Module({"main": pyir.Function([y], y, None, {"a b": 1})})
    text = m.astext().replace('"a b"=', '"a b"\n  =')
    assert pyir.parse(text)["main"].attrs is m["main"].attrs
