"""pyir reads and writes TVM's Relay text (issue 14, item 1): our own corpus in tests/relay/.

Each program of ``tests/relay/*.txt`` (one per ``// ---- <name> <mode> ...`` header) exercises a
construct of TVM's Relay text that TVM's test suite exercises: it parses, type-checks (modules,
and the expressions marked ``typed``), and round-trips through the printer in pyir's form and in
TVM's form (alpha-equal, and the text printed again is the same).  ``errors.txt`` holds ill-formed
programs: each is a ParseError at the given line:column.  ``printed.txt`` holds the printer
direction: pyir's text and the exact text ``astext(..., tvm=True)`` writes for it.

The measurement against TVM's own suite is ``tools/relay_corpus.py`` (it needs TVM's sources).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import pyir
from pyir import Constant, ParseError, TensorType, Var, op
from pyir.text import tvm_meta
from pyir.transform import InferType

HERE = Path(__file__).parent / "relay"
_HEAD = re.compile(r"^// ---- (\S+) (\S+)(?: (.*))?$", re.M)

# Floors: how many of our programs parse + type-check + round-trip (all of them today).
FLOOR_OK = 85
FLOOR_ERRORS = 22
FLOOR_PRINTED = 7


class Prog(NamedTuple):
    file: str
    name: str
    mode: str
    extra: str
    text: str
    line: int  # line of the program's first line in its file


def programs(filename: str) -> list[Prog]:
    src = (HERE / filename).read_text()
    heads = list(_HEAD.finditer(src))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(src)
        body = src[m.end() + 1:end]
        out.append(Prog(filename, m.group(1), m.group(2), m.group(3) or "", body,
                        src.count("\n", 0, m.end()) + 2))
    return out


GOOD = [p for f in ("literals.txt", "operators.txt", "bindings.txt", "functions.txt", "modules.txt")
        for p in programs(f)]
ERRORS = programs("errors.txt")
PRINTED = programs("printed.txt")


def _load(p: Prog) -> Any:
    return pyir.parse(p.text) if p.mode == "module" else pyir.parse_expr(p.text)


def _text(obj: Any, tvm: bool) -> str:
    return obj.astext(tvm=tvm) if isinstance(obj, pyir.Module) else pyir.astext(obj, tvm=tvm)


def _reparse(text: str, mode: str) -> Any:
    return pyir.parse(text) if mode == "module" else pyir.parse_expr(text)


def check_good(p: Prog) -> None:
    obj = _load(p)
    if p.mode == "module":
        InferType()(obj)
    elif "typed" in p.extra.split():
        assert obj.checked_type is not None
    for tvm in (False, True):
        text = _text(obj, tvm)
        back = _reparse(text, p.mode)
        assert pyir.alpha_equal(back, obj, map_free_vars=True), (p.name, tvm, text)
        assert _text(back, tvm) == text, (p.name, tvm)


def test_corpus_floor() -> None:
    """Every program of our corpus parses, type-checks and round-trips (in both forms)."""
    ok, failed = 0, []
    for p in GOOD:
        try:
            check_good(p)
            ok += 1
        except (PyIRError, AssertionError) as e:
            failed.append(f"{p.file}:{p.line} {p.name}: {type(e).__name__}: {str(e)[:200]}")
    assert ok >= FLOOR_OK and not failed, "\n".join(failed)
    assert len(GOOD) >= FLOOR_OK


def test_ill_formed_programs_are_parse_errors_with_position() -> None:
    """Each ill-formed program raises ParseError at its line:column, message included."""
    assert len(ERRORS) >= FLOOR_ERRORS
    wrong = []
    for p in ERRORS:
        pos, _, msg = p.extra.partition(" ")
        line, col = (int(x) for x in pos.split(":"))
        try:
            _load(p)
        except ParseError as e:
            if (e.line, e.column) != (line, col) or msg not in e.message:
                wrong.append(f"{p.name}: expected {line}:{col} {msg!r}, got {e.line}:{e.column} "
                             f"{e.message!r}")
            else:
                assert "^" in str(e)  # the line with a caret
            continue
        wrong.append(f"{p.name}: parsed, expected a ParseError")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("p", PRINTED, ids=[p.name for p in PRINTED])
def test_printer_writes_tvm_form(p: Prog) -> None:
    """pyir's text -> pyir -> TVM's form is the expected text; that text reads back to the same
    program and prints again unchanged (TVM text -> pyir -> TVM text)."""
    src, _, want = p.text.partition("// =>\n")
    obj = _reparse(src, p.mode)
    got = _text(obj, True)
    assert got == want
    back = _reparse(want, p.mode)
    assert pyir.alpha_equal(back, obj, map_free_vars=True)
    assert _text(back, True) == want


def test_printed_count() -> None:
    assert len(PRINTED) >= FLOOR_PRINTED


# -- loaded is constructed: what the text means -----------------------------------------------------

def test_literals_build_what_constructors_build() -> None:
    e = pyir.parse_expr
    assert e("2147483647") is pyir.const(np.array(2147483647, "int32"))
    assert e("2147483648") is pyir.const(np.array(2147483648, "int64"))  # TVM's rule
    assert e("-42i") is pyir.const(np.array(-42, "int32"))
    assert e("--10") is pyir.const(np.array(10, "int32"))
    assert e("---10") is pyir.const(np.array(-10, "int32"))
    assert e("3f16") is pyir.const(np.array(3, "float16"))
    assert e("65504f16") is pyir.const(np.array(65504, "float16"))
    assert e("1e-1f") is pyir.const(np.array(0.1, "float32"))


def test_infix_operators_build_calls_with_tvm_precedence() -> None:
    e = pyir.parse_expr
    one = pyir.const(np.array(1, "int32"))
    assert e("1 * 1 + 1 < 1 == 1") is op.equal(op.less(op.add(op.multiply(one, one), one), one), one)
    assert e("1 == 1 < 1 + 1 * 1") is op.equal(one, op.less(one, op.add(one, op.multiply(one, one))))
    assert e("1 * 1 + 1") is e("(1 * 1) + 1") and e("1 * 1 + 1") is not e("1 * (1 + 1)")
    assert e("1 - 1 - 1") is op.subtract(op.subtract(one, one), one)
    pairs = {"/": op.divide, "!=": op.not_equal, ">": op.greater, "<=": op.less_equal,
             ">=": op.greater_equal}
    for sym, f in pairs.items():
        assert e(f"1 {sym} 1") is f(one, one)


def test_sequencing_free_var_incomplete_type_and_closures() -> None:
    e = pyir.parse_expr
    seq = e("(); ()")
    assert type(seq) is pyir.Let and seq.var.name_hint == "_" and seq.body is pyir.Tuple([])
    let = e("let %x: _ = 1; %x")
    assert let.var.type_annotation is None
    fv = e("free_var %x: float32; %x")
    assert type(fv) is Var and fv.type_annotation is TensorType((), "float32")
    call = e("(fn (%x: int32) { %x })(1)")
    assert type(call) is pyir.Call and type(call.op) is pyir.Function
    with pytest.raises(ParseError, match="undefined variable %x"):
        e("%x")  # as in TVM: a free variable is declared
    assert type(e("%x", free_vars=True)) is Var


def test_virtual_devices_are_dropped() -> None:
    """The documented rule: ``{virtual_device=...}`` on parameters and a function's
    ``virtual_device=`` are read and dropped (pyir has no devices)."""
    a = pyir.parse('def @main(%x {virtual_device=meta[VirtualDevice][0]}: float32, '
                   'virtual_device=meta[VirtualDevice][0]) { %x }')
    b = pyir.parse("def @main(%x: float32) { %x }")
    assert pyir.alpha_equal(a, b) and not a["main"].attrs


def test_tvm_metadata_round_trip_and_meta_table() -> None:
    arrays = [np.arange(6, dtype="float32").reshape(2, 3), np.array([True, False]),
              np.array([[-1, 2]], dtype="int64"), np.zeros((0, 3), "uint8"), np.array(7, "int16")]
    for a in arrays:
        back = tvm_meta.decode_ndarray(tvm_meta.encode_ndarray(a))
        assert back.dtype == a.dtype and back.shape == a.shape and np.array_equal(back, a)
    consts = [Constant(a) for a in arrays[:3]]
    text = "#[version = \"0.0.5\"]\ndef @main() { (%s) }\n#[metadata]\n%s" % (
        ", ".join(f"meta[relay.Constant][{i}]" for i in range(3)), tvm_meta.dump(consts))
    mod = pyir.parse(text)
    assert list(mod["main"].body.fields) == consts  # the same (hash-consed) constants
    # TVM's init_meta_table: constants given in Python for a text without metadata section
    m2 = pyir.parse("def @main() { meta[relay.Constant][0] }", meta_table={"relay.Constant": [arrays[0]]})
    assert m2["main"].body is consts[0]
    with pytest.raises(ParseError, match="metadata section"):
        pyir.parse("def @main() { meta[relay.Constant][1] }", meta_table={"relay.Constant": [arrays[0]]})


def test_tvm_form_of_a_long_chain() -> None:
    """TVM's form prints and parses back a 10^4-deep chain (over three times the recursion
    limit).  The 10^6-deep runs are pyir's form's (test_printer.py, test_parser.py): TVM's form
    is the same printer and parser loop (a flag for the header, the metadata section and the
    float spelling), so a 10^6 run here repeated theirs (~25 s of CPU)."""
    chain = pyir.testing.elementwise_chain(10**4)
    text = chain.astext(tvm=True)
    assert text.startswith('#[version = "0.0.5"]\ndef @main(')
    assert pyir.alpha_equal(pyir.parse(text), chain)


def test_infix_chain_deep() -> None:
    """A 10^6-term infix sum parses (operator precedence with explicit stacks, no recursion)."""
    n = 10**6
    chain = pyir.parse_expr("free_var %x: float32;\n%x" + " + 1f" * n + " * 2f")
    one, two = pyir.const(np.array(1.0, "float32")), pyir.const(np.array(2.0, "float32"))
    e = chain
    assert e.op is pyir.Op("add") and e.args[1] is op.multiply(one, two)
    for _ in range(n - 1):
        e = e.args[0]
        assert e.args[1] is one
    assert type(e.args[0]) is Var


from pyir.errors import PyIRError  # noqa: E402  (used in test_corpus_floor)
