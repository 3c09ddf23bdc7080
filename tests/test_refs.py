"""References (issue 14 item 2): ``ref(e)``, ``ref_read(r)``, ``ref_write(r, v)`` and the type
``ref(T)``; mutable cells at run time only (the IR stays immutable)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import pyir
from pyir import transform as T
from pyir.analysis.interp import RefValue
from pyir.ir.adt import RefCreate, RefRead, RefType, RefWrite

F32 = pyir.TensorType((), "float32")

# A counter bumped by a closure over its cell: lets order the effects.
COUNTER = """
def @main(%x: Tensor[(), float32]) {
  let %r: ref(Tensor[(), float32]) = ref(%x);
  let %bump = fn (%d: Tensor[(), float32]) {
    ref_write(%r, add(ref_read(%r), %d))
  };
  let %a = %bump(1f);
  let %b = %bump(10f);
  let %c = ref_read(%r);
  (%a, %b, %c)
}
"""


def test_types() -> None:
    """ref(e): ref(T); ref_read: T; ref_write: (); misuse is a TypeCheckError naming the node."""
    x = pyir.var("x", F32)
    r = RefCreate(x)
    assert pyir.infer_type(r) is RefType(F32)
    assert pyir.infer_type(RefRead(r)) is F32
    assert pyir.infer_type(RefWrite(r, x)) is pyir.TupleType([])
    with pytest.raises(pyir.TypeCheckError, match=r"RefRead.*ref_read of a non-reference of type Tensor"):
        pyir.infer_type(RefRead(x))
    i = pyir.var("i", pyir.TensorType((), "int32"))
    with pytest.raises(pyir.TypeCheckError,
                       match=r"RefWrite.*ref_write of a value of type Tensor\[\(\), int32\]"):
        pyir.infer_type(RefWrite(r, i))
    # effects: each operation is a node of its own (a uid), so two reads are two reads; alpha-equal
    assert RefCreate(x) is not r and RefRead(r) is not RefRead(r) and r.children() == (x,)
    assert pyir.alpha_equal(pyir.Function([x], RefRead(r)), pyir.Function([x], RefRead(RefCreate(x))))
    assert RefRead(r, uid=RefRead(r).uid) is not None


def test_cells_are_mutable_at_run_time_only() -> None:
    """A closure writes the cell it captured; reads see the writes before them (lets order them);
    the IR itself never changes."""
    mod = pyir.parse(COUNTER)
    text = mod.astext()
    a, b, c = pyir.evaluate(mod, np.float32(5))
    assert a == () and b == () and c == np.float32(16)
    assert mod.astext() == text
    assert str(mod.type_of(mod["main"])) == "fn (Tensor[(), float32]) -> ((), (), Tensor[(), float32])"
    r = pyir.evaluate(pyir.Function([x := pyir.var("x", F32)], RefCreate(x)), np.float32(2))
    assert type(r) is RefValue and r.value == np.float32(2)


def test_text_and_formats() -> None:
    """TVM's spelling prints and parses back (the annotation ref(T) too); binary, JSON, pickle."""
    mod = pyir.parse(COUNTER)
    text = mod.astext()
    assert "let %r: ref(Tensor[(), float32]) = ref(%x);" in text and "ref_write(%r, %1)" in text
    assert "    %0 = ref_read(%r);\n" in text and "  let %c = ref_read(%r);\n" in text  # two reads
    back = pyir.parse(text)
    assert back.astext() == text and pyir.alpha_equal(back["main"], mod["main"])
    for back in (pyir.loads(pyir.dumps(mod)), pyir.from_json(pyir.to_json(mod)),
                 pickle.loads(pickle.dumps(mod))):
        assert back["main"] is mod["main"]
    with pytest.raises(pyir.ParseError, match="ref_write takes 2 argument"):
        pyir.parse_expr("ref_write(%x)", free_vars=True)


def test_passes_keep_effects() -> None:
    """DeadCodeElimination keeps an unused let of a ref_write (an effect); the graph and
    basic-block normal forms leave functions with references as they are, the A-normal form
    keeps their lets in order; every pass keeps the result."""
    src = """
def @main(%x: Tensor[(), float32]) {
  let %r = ref(%x);
  let %unused = ref_write(%r, add(%x, 1f));
  let %dead = add(%x, %x);
  ref_read(%r)
}
"""
    mod = pyir.parse(src)
    assert pyir.evaluate(mod, np.float32(1)) == np.float32(2)
    dce = T.DeadCodeElimination()(mod)
    assert "ref_write" in dce.astext() and "%dead" not in dce.astext()
    for p in (T.ToGraphNormalForm(), T.ToBasicBlockNormalForm()):
        assert p(mod)["main"] is mod["main"]
    anf = pyir.testing.check_pass(T.ToANormalForm(), mod)  # keeps the lets, binds the operands
    assert pyir.evaluate(anf, np.float32(1)) == np.float32(2)
    assert anf.astext().index("let %r") < anf.astext().index("let %unused") < anf.astext().index("ref_read")
    for p in (T.InferType(), T.FoldConstant(), T.SimplifyExpr(), T.FuseOps(), T.EliminateCommonSubexpr(),
              T.DeadCodeElimination(), T.Inline()):
        out = pyir.testing.check_pass(p, mod, idempotent=False)
        assert pyir.evaluate(out, np.float32(1)) == np.float32(2)


def test_alpha_equality_ignores_uids_not_structure() -> None:
    """Two parses of one program with a variable-free ``ref(0)`` are alpha-equal (the uid keeps
    cells apart as nodes; it is not structure), with equal alpha hashes; a different initial
    value is a difference that ``assert_alpha_equal`` names."""
    from pyir.errors import AlphaEqualityError
    from pyir.testing import assert_alpha_equal

    text = "def @main() { let %r = ref(0); ref_read(%r) }"
    a, b = pyir.parse(text), pyir.parse(text)
    assert a["main"] is not b["main"]
    assert pyir.alpha_equal(a, b) and pyir.alpha_hash(a["main"]) == pyir.alpha_hash(b["main"])
    assert_alpha_equal(a, b)
    c = pyir.parse(text.replace("ref(0)", "ref(1)"))
    assert not pyir.alpha_equal(a, c)
    with pytest.raises(AlphaEqualityError, match=r"body\.value\.value: 0 vs 1"):
        assert_alpha_equal(a["main"], c["main"])
