"""Structure-aware fuzzing of the text format (issue 10: text fuzzing).

Printed text of seed modules (the ``pyir.testing`` models, random programs and a module
using every printed construct, odd names, attribute keys and NaN payloads) is mutated at
the token level: tokens deleted, duplicated or swapped, numbers replaced (huge, negative,
NaN, hex bit patterns), names replaced, unicode, escapes and lone surrogates inserted,
brackets unbalanced, the text truncated.  The oracle: ``pyir.parse`` either raises
ParseError with a line and column inside the text, or returns a module that prints to
text parsing back to the same module (and the same text), whose nodes are canonical, and
that type-checks or fails with pyir errors only.

Budget: ``tests/_fuzz.py`` (``PYIR_FUZZ_EXAMPLES=<n>`` or ``--fuzz-long`` for a campaign).
"""

from __future__ import annotations

import functools
import struct

import numpy as np
from _fuzz import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import pyir
from pyir import Function, If, Let, Module, Tuple, TupleGetItem, Var, const, op
from pyir.analysis.equality import alpha_equal
from pyir.analysis.typecheck import infer_type
from pyir.errors import ParseError, PyIRError
from pyir.ir.types import TensorType, TupleType
from pyir.text.parser import _TOKEN_RE

T = TensorType((2,), "float32")


def _odd_module() -> Module:
    """Every printed construct, with names and keys that need quoting and NaN payloads."""
    x, y = Var("x", T), Var("a b", T)
    c = Var("0", TensorType((), "bool"))
    tv = Var("t.1", TupleType([T, T]))
    v, w = Var("v", T), Var("v", T)
    nan = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000123))[0]
    shared = op.nn.relu(x)
    branch = If(c, op.add(shared, y), op.negative(shared))
    inner = Function([Var("p", T)], op.tanh(shared), T, {"Primitive": 1, "k e y": "s\"\n\u00e9"})
    body = Tuple([branch, pyir.Call(inner, [y]), TupleGetItem(tv, 1), Let(v, op.exp(x), op.add(v, v)),
                  op.clip(x, a_min=-0.0, a_max=float("inf")), const(np.array([1.5, -2.0], "float32")),
                  const(np.arange(6, dtype="float32")), Let(w, op.sqrt(y), w), pyir.GlobalVar("g.0")])
    main = Function([x, y, c, tv], body, None, {"nan": nan, "-nan": -float("nan"), "": (1, 2.5, "z")})
    g = Function([], Tuple([const(1.0)]))
    return Module({"main": main, "g.0": g})


def _aliased_module() -> Module:
    """Text with type aliases (issue 10 item 16): typed nested functions and tuples of them, a type
    DAG shared in annotations, a let annotation and a function attribute."""
    x = Var("x", T)
    e: pyir.Expr = op.nn.relu(x)
    for i in range(12):
        e = Function([], e) if i % 3 else Tuple([Function([], e), x])
    pair = TupleType([T, T])
    for _ in range(3):
        pair = TupleType([pair, pair])
    p, v = Var("p", pair), Var("v", pair)
    g = Function([p], Let(v, p, v), pair, {"ty": pair})
    return pyir.transform.InferType()(Module({"main": Function([x], e), "g": g}))


@functools.cache
def _seed_texts() -> tuple[str, ...]:
    t = pyir.testing
    mods = [_odd_module(), t.elementwise_chain(4), t.shared_dag(6), t.resnet(1, channels=2, size=4),
            t.transformer_block(seq=2, dim=4, heads=1), _aliased_module()]
    return tuple(m.astext() for m in mods) + tuple(m.astext(tvm=True) for m in mods[1:4])


_NUMBERS = ["0", "-1", "7", "99999999999999999999999999", "-99999999999999999999", "1" * 400, "nan",
            "-nan", "inf", "-inf", "0x7ff8000000000001", "0xfff0000000000000", "0x1", "-0x7ff8000000000000",
            "1e400", "-0.0", "2.5e-320", "9223372036854775808", "18446744073709551616", "3.5f16",
            "1u8", "256u8", "-1u8", "1.5i32", "7x", "0.5f", "1e5f64", "65505f16", "65504f16", "2147483648",
            "2147483648i32", "-42i", "--10", "3.40283e+38f32", "1e-05f"]
_NAMES = ['%x', '%0', '%"0"', '%"a b"', '%"\\ud800"', '%"\\udfff\\ud800"', '@main', '@"g.0"', '@g.0',
          '@"\\ud800"', '@nothing', 'nn.relu', 'nn.nope', 'fn', 'let', 'if', 'meta', 'tensor', '%t.1.0',
          '%x.0.0.0.0', '"a b"=', 'axis=', '"\\ud800"=', 'Tensor', 'True', 'None', '%""',
          '$t0', '$t1', '$t99', '$x', 'type']
_INSERTS = ['"\\ud800"', '"\ud800"', '\ud800', '"\\u0000"', '"\\"', '\u00e9', '\x00', '/*', '*/', '//',
            '"', "\\", "#[metadata]", "meta[Constant][0]", "meta[Constant][99]", ",", ";", "=", "->",
            ":", ".", "(", ")", "{", "}", "[", "]", " let %q = %x; ", "tensor([1, 2], int8)",
            "Tensor[(2), float32]", "\n", "type $t0 = Tensor[(2), float32];", "type $t1 = ($t0, $t0);", "$t0",
            "$", "type", '#[version = "0.0.5"]', "free_var %x: float32;", "free_var", " + ", " - 1", " * ",
            " / ", " == ", " <= ", " > ", "_", "--", "{virtual_device=meta[VirtualDevice][0]}",
            "meta[relay.Constant][0]", "meta[VirtualDevice][0]", "float32", "int", "/* /* */", "(); ",
            "(fn (%z: float32) { %z })(1f)", "(let %q = 1; %q)", "#[metadata]\n{", '{"root": 1}']
_BRACKETS = "(){}[]"
_NAME_KINDS = ("LOCAL", "GLOBAL", "IDENT", "KEY", "CALLEE", "BIND", "ALIAS")


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each token of ``text`` (end of input excluded)."""
    out = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "EOF"
        if kind == "EOF":
            break
        out.append((m.start(kind), m.end(kind), kind))
    return out


@st.composite
def _mutated(draw: st.DrawFn, base: str) -> str:
    text = base
    for _ in range(draw(st.integers(1, 3))):
        toks = _tokens(text)
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        s, e, kind = toks[i]
        how = draw(st.sampled_from(["delete", "duplicate", "swap", "number", "name", "insert", "bracket",
                                    "truncate"]))
        if how == "delete":
            text = text[:s] + text[e:]
        elif how == "duplicate":
            text = text[:e] + " " + text[s:e] + text[e:]
        elif how == "swap" and i + 1 < len(toks):
            s2, e2, _ = toks[i + 1]
            text = text[:s] + text[s2:e2] + text[e:s2] + text[s:e] + text[e2:]
        elif how == "number":
            nums = [j for j, t in enumerate(toks) if t[2] in ("NUM", "NUMLIST", "TENSOR")]
            if nums:
                s, e, _ = toks[nums[draw(st.integers(0, len(nums) - 1))]]
            text = text[:s] + draw(st.sampled_from(_NUMBERS)) + text[e:]
        elif how == "name":
            names = [j for j, t in enumerate(toks) if t[2] in _NAME_KINDS]
            if names:
                s, e, kind = toks[names[draw(st.integers(0, len(names) - 1))]]
            new = draw(st.sampled_from(_NAMES))
            if kind == "CALLEE":
                new += "("
            elif kind == "BIND":
                new += " ="
            text = text[:s] + new + text[e:]
        elif how == "insert":
            text = text[:s] + draw(st.sampled_from(_INSERTS)) + text[s:]
        elif how == "bracket":
            text = text[:s] + draw(st.sampled_from(_BRACKETS)) + text[s:]
        elif how == "truncate":
            text = text[:draw(st.integers(0, len(text)))]
    return text


def check_text(text: str) -> str:
    """The oracle; returns which way the text went ("error" or "module")."""
    try:
        mod = pyir.parse(text)
    except ParseError as e:
        lines = text.split("\n")
        assert 1 <= e.line <= len(lines), (e.line, len(lines))
        assert 1 <= e.column <= len(lines[e.line - 1]) + 1, (e.column, lines[e.line - 1][:80])
        return "error"
    # (a) prints to text that parses back to the same module, and to the same text
    again = mod.astext()
    back = pyir.parse(again)
    assert back.names() == mod.names()
    for name in mod.names():
        assert back[name] is mod[name] or alpha_equal(back[name], mod[name]), name
    assert back.astext() == again
    # (a') TVM's form prints and reads back, or (a value TVM cannot spell) raises ParseError
    try:
        pyir.parse(mod.astext(tvm=True))
    except ParseError:
        pass
    # (b) canonical nodes
    pyir.testing.assert_canonical(mod)
    # (c) type-checks, or fails with pyir errors only
    for name in mod.names():
        try:
            infer_type(mod[name], mod)
        except PyIRError:
            pass
    return "module"


def test_seed_texts_round_trip() -> None:
    """issue 10 text fuzzing: every seed parses and satisfies the oracle unmutated."""
    for text in _seed_texts():
        assert check_text(text) == "module"
    for text in _seed_texts()[1:4]:  # TVM's form of the plain seeds reads back the same module
        mod = pyir.parse(text)
        assert alpha_equal(pyir.parse(mod.astext(tvm=True)), mod)
    assert "type $t" in _seed_texts()[5]  # the aliased seed really has aliases


@fuzz_settings
@given(st.data())
def test_fuzz_mutated_seed_text(data: st.DataObject) -> None:
    """issue 10 text fuzzing: mutated seed texts parse to sound modules or raise ParseError in the text."""
    base = data.draw(st.sampled_from(_seed_texts()))
    check_text(data.draw(_mutated(base)))


@fuzz_settings
@given(pyir.testing.programs(max_steps=8), st.data())
def test_fuzz_mutated_program_text(mod: Module, data: st.DataObject) -> None:
    """issue 10 text fuzzing: mutated texts of random programs obey the same oracle."""
    check_text(data.draw(_mutated(mod.astext())))
