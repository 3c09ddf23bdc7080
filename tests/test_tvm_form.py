"""pyir's TVM form (``astext(tvm=True)``) writes what TVM 0.18's Relay printer writes (issue 14,
item 1): the spellings fixed after reading TVM's printer (``src/relay/printer/``), each on our own
programs, each checked to read back alpha-equal and to print the same text again; pyir's own form
is unchanged.  Also the classification ``tools/relay_corpus.py`` makes of a difference."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pyir

HEAD = '#[version = "0.0.5"]\n'


def _tvm(text: str) -> tuple[str, str]:
    """(TVM form, pyir form) of a module text; the TVM form reads back alpha-equal and prints
    the same text again."""
    m = pyir.parse(HEAD + text)
    t = m.astext(tvm=True)
    back = pyir.parse(t)
    for name, f in m.items():
        assert pyir.alpha_equal(back[name], f, map_free_vars=True), t
    assert back.astext(tvm=True) == t
    return t, m.astext()


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def test_numbering_goes_on_across_definitions() -> None:
    # TVM prints every definition with one printer whose temporary counter is never reset
    t, own = _tvm("""
def @main(%q: Tensor[(3), float32]) { %0 = @sq(%q); %1 = exp(%0); add(%1, %q) }
def @sq(%p: Tensor[(3), float32]) { %0 = multiply(%p, %p); %1 = sqrt(%0); negative(%1) }
""")
    assert _lines(t)[1:] == [
        "def @main(%q: Tensor[(3), float32]) {", "%0 = @sq(%q);", "%1 = exp(%0);", "add(%1, %q)", "}",
        "def @sq(%p: Tensor[(3), float32]) {", "%2 = multiply(%p, %p);", "%3 = sqrt(%2);",
        "negative(%3)", "}"]
    assert "%0 = multiply(%p, %p);" in own  # pyir's form numbers each definition from %0


def test_block_numbered_after_its_nested_bindings() -> None:
    # TVM allocates a temporary once its value is printed: a fn's body comes first
    t, own = _tvm("""
def @main(%u: Tensor[(4), float32], %c: bool) {
  %0 = fn (%w: Tensor[(4), float32]) { %0 = tanh(%w); %1 = exp(%0); add(%1, %w) };
  %1 = %0(%u);
  %2 = if (%c) { %3 = abs(%1); negative(%3) } else { %1 };
  (%2, %1)
}
""")
    body = _lines(t)[2:]
    assert body[:5] == ["%2 = fn (%w: Tensor[(4), float32]) {", "%0 = tanh(%w);", "%1 = exp(%0);",
                        "add(%1, %w)", "};"]
    assert body[5] == "%3 = %2(%u);"
    assert body[6:8] == ["%5 = if (%c) {", "%4 = abs(%3);"]
    assert body[-2:] == ["(%5, %3)", "}"]
    assert "%0 = fn (%w: Tensor[(4), float32]) {" in own


def test_split_sections_as_an_int() -> None:
    # TVM's SplitAttrs.indices_or_sections: an int of sections, or an array of indices
    t, own = _tvm("""
def @main(%v: Tensor[(6, 2), float32]) {
  %0 = split(%v, indices_or_sections=3);
  %1 = split(%v, indices_or_sections=[1, 4]);
  (%0.0, %1.2)
}
""")
    assert "split(%v, indices_or_sections=3)" in t
    assert "split(%v, indices_or_sections=[1, 4])" in t
    assert "by_sections" not in t
    assert "indices_or_sections=3" in own  # pyir's form too: a list is indices
    three = pyir.parse(t)["main"].body.fields[0].tuple_value  # read back: 3 sections, not index 3
    assert [f.shape for f in three.checked_type.fields] == [(2, 2)] * 3


def test_type_without_constructors_and_let_block() -> None:
    t, own = _tvm("""
type Handle {}
def @main(%h: Handle, %k: int32) {
  %0 = (let %j = add(%k, 1); multiply(%j, %j));
  %1 = subtract(%0, 2);
  (%1, %0, %h)
}
""")
    assert "type Handle {\n}" in t and "extern" not in t  # TVM's printer has no ``extern``
    assert "extern type Handle" in own
    lines = _lines(t)
    i = lines.index("%0 = (")  # a bound let: TVM wraps it in parentheses
    assert lines[i + 1:i + 5] == ["let %j = add(%k, 1);", "multiply(%j, %j)", ");", "%1 = subtract(%0, 2);"]
    assert "def @main(%h: Handle[], %k: int32) {" in lines  # TVM's TypeCall: always brackets
    assert "%0 = {" not in t and "%0 = {" in own


def test_device_references_unquoted() -> None:
    t, own = _tvm("""
def @main(%g: Tensor[(2), float32]) {
  %0 = negative(%g);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  device_copy(%1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1])
}
""")
    assert "on_device(%0, virtual_device=meta[VirtualDevice][0])" in t
    assert "src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]" in t
    assert 'virtual_device="meta[VirtualDevice][0]"' in own  # pyir's form keeps the string


def _corpus() -> Any:
    path = Path(__file__).resolve().parent.parent / "tools" / "relay_corpus.py"
    spec = importlib.util.spec_from_file_location("relay_corpus_for_tests", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def test_corpus_classifies_differences() -> None:
    rc = _corpus()
    printed = pyir.parse(HEAD + "def @main(%n: int32) { %0 = add(%n, 1); multiply(%0, %0) }").astext(tvm=True)
    same = HEAD + "def @main(%n: int32) {\n  %0 = add(%n, 1); // a comment\n  multiply(%0, %0)\n}"
    assert rc.tvm_form_diff(same, printed, "module") == ("", "")
    cases = {
        "def @main(%n: int) { %0 = add(%n, 1); multiply(%0, %0) }": "type alias (int)",
        "def @main(%n: int32) { let %a = add(%n, 1); multiply(%a, %a) }": "let form or own binding names",
        "def @main(%n: int32) { %5 = add(%n, 1); multiply(%5, %5) }":
            "numbering (excerpt, or not TVM's counter)",
        "def @main(%n: int32) { %0 = %n + 1; multiply(%0, %0) }": "operator sugar (1 + 2)",
    }
    for text, cat in cases.items():
        got, where = rc.tvm_form_diff(HEAD + text, printed, "module")
        assert got == cat, (text, got, where)
        assert rc.TVM_FORM_KINDS[got] == "hand"
    assert rc.looks_tvm_printed(HEAD + "def @main() {\n  %0 = (1, 2);\n  %0\n}", "module")
    assert not rc.looks_tvm_printed(HEAD + "def @main() { let %p = 1; %p }", "module")
    # an expression: TVM's astext writes the header, parse_expr's input has none
    e = pyir.astext(pyir.parse_expr("(1, 2)"), tvm=True)
    assert re.match(r"#\[version", e) and rc.tvm_form_diff("(1, 2)", e, "expr") == ("", "")


def test_split_one_element_list_is_an_index() -> None:
    """``split(x, indices_or_sections=[2])`` splits at index 2 (Relay's SplitAttrs: a list is
    indices), ``=2`` into two sections; both forms print and read back the same node."""
    x = pyir.var("x", shape=(6,))
    split = pyir.op.split
    at2 = pyir.Module({"main": pyir.Function([x], split(x, indices_or_sections=(2,), by_sections=False))})
    two = pyir.Module({"main": pyir.Function([x], pyir.op.split(x, indices_or_sections=2))})
    for m, shapes in ((at2, [(2,), (4,)]), (two, [(3,), (3,)])):
        assert [f.shape for f in m.type_of(m["main"]).ret_type.fields] == shapes
        for tvm in (False, True):
            back = pyir.parse(m.astext(tvm=tvm))["main"]
            assert back.body.attrs is m["main"].body.attrs and pyir.alpha_equal(back, m["main"])
    parsed = pyir.parse("def @main(%x: Tensor[(6), float32]) { split(%x, indices_or_sections=[2]) }")
    assert parsed["main"].body.attrs is at2["main"].body.attrs
