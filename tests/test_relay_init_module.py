"""``pyir.parse(text, init_module=mod)``: parsing into an existing module (TVM's ``init_module``)."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir.errors import ParseError
from pyir.transform import InferType

LIB = """
type Pair[A] { MkPair(A, A) }
def @double(%v: Tensor[(4), float32]) -> Tensor[(4), float32] {
  add(%v, %v)
}
"""


@pytest.fixture(scope="module")
def lib() -> pyir.Module:
    return pyir.parse(LIB)


def test_globals_of_init_module_are_in_scope(lib: pyir.Module) -> None:
    mod = pyir.parse("def @main(%a: Tensor[(4), float32]) { @double(@double(%a)) }", init_module=lib)
    assert sorted(mod) == ["double", "main"]
    assert mod["double"] is lib["double"]  # the init module's function itself, not a copy
    assert sorted(lib) == ["double"]  # the init module is unchanged
    typed = InferType()(mod)
    assert typed.type_of(typed["main"].body) == pyir.parse_type("Tensor[(4), float32]")
    # the result is what parsing both definitions in one text builds
    whole = pyir.parse(LIB + "def @main(%a: Tensor[(4), float32]) { @double(@double(%a)) }")
    assert pyir.alpha_equal(mod["main"], whole["main"])
    assert mod.astext() == whole.astext()


def test_types_and_constructors_of_init_module_are_in_scope(lib: pyir.Module) -> None:
    mod = pyir.parse("""
        def @swap(%p: Pair[int32]) -> Pair[int32] {
          match (%p) { MkPair(%x, %y) => MkPair(%y, %x) }
        }""", init_module=lib)
    assert mod.type_definition("Pair") is lib.type_definition("Pair")
    assert mod.constructor("MkPair") is lib.constructor("MkPair")
    InferType()(mod)


def test_new_type_definitions_are_added(lib: pyir.Module) -> None:
    mod = pyir.parse("type Box { MkBox(int32) }\ndef @main() -> Box { MkBox(1) }", init_module=lib)
    assert sorted(mod.type_definitions()) == ["Box", "Pair"]
    assert sorted(lib.type_definitions()) == ["Pair"]


def test_extern_type_of_init_module() -> None:
    core = pyir.parse("extern type Store")  # as TVM's core.rly, which tests pass as init_module
    mod = pyir.parse("def @keep(%s: Store) -> Store { %s }", init_module=core)
    assert mod.type_definition("Store") is core.type_definition("Store")
    assert InferType()(mod).type_of(mod["keep"].body) == mod["keep"].ret_type


def test_init_module_with_meta_table(lib: pyir.Module) -> None:
    table = {"relay.Constant": [np.ones(4, "float32")]}
    mod = pyir.parse("def @main(%a: Tensor[(4), float32]) { add(@double(%a), meta[relay.Constant][0]) }",
                     table, init_module=lib)
    c = mod["main"].body.args[1]
    assert isinstance(c, pyir.Constant) and c.data.tolist() == [1.0] * 4
    InferType()(mod)


def test_redefinition_names_both(lib: pyir.Module) -> None:
    with pytest.raises(ParseError) as ei:
        pyir.parse("def @double(%w: Tensor[(2), int8]) { %w }", init_module=lib)
    msg = str(ei.value)
    assert "@double is defined twice: already a function of the init module" in msg
    assert "def @double(%v: Tensor[(4), float32]) -> Tensor[(4), float32]" in msg  # the first one
    assert "1:5" in msg  # the second one, where it is
    with pytest.raises(ParseError, match="type Pair is defined twice: in init_module"):
        pyir.parse("type Pair { P }", init_module=lib)


def test_unknown_global(lib: pyir.Module) -> None:
    with pytest.raises(ParseError, match=r"undefined global function @triple \(neither defined here nor "
                                         r"in init_module, which defines @double\)"):
        pyir.parse("def @main(%a: Tensor[(4), float32]) { @triple(%a) }", init_module=lib)
    with pytest.raises(ParseError) as ei:
        pyir.parse("def @main(%a: Tensor[(4), float32]) { @double(%a) }")  # no init module
    assert "undefined global function @double" in str(ei.value) and "init_module" not in str(ei.value)


def test_bad_init_module() -> None:
    with pytest.raises(ParseError, match="init_module must be a Module, got dict"):
        pyir.parse("def @main() { 0 }", init_module={"f": None})  # type: ignore[arg-type]


def test_deep_init_module(deep_chain: pyir.Module) -> None:
    """A 10**6-deep function of the init module is taken as it is (no walk of its body), and named
    by its signature in a redefinition error."""
    (x,) = deep_chain["main"].params
    ty = pyir.astext(x.type_annotation)
    mod = pyir.parse(f"def @caller(%a: {ty}) {{ @main(%a) }}", init_module=deep_chain)
    assert mod["main"] is deep_chain["main"] and sorted(mod) == ["caller", "main"]
    with pytest.raises(ParseError, match=r"@main is defined twice: already a function of the init module "
                                         r"\(def @main\(%"):
        pyir.parse(f"def @main(%a: {ty}) {{ %a }}", init_module=deep_chain)
