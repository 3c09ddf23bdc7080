"""TensorType with symbolic dimensions (issue 12): construction, ids, the text format."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyir
from pyir import TensorType, op
from pyir.ir.dims import Any, DimPoly, dim_floordiv, dim_mod, dim_str, sym
from pyir.ir.kinds import packed_dims_key
from pyir.ir.node import digest

n, m = sym("n"), sym("m")


def test_shapes_hold_ints_dims_and_names():
    t = TensorType(("batch", 3))
    assert t.shape == (sym("batch"), 3) and t.shape[0] is sym("batch")
    assert t is TensorType((sym("batch"), 3)) is TensorType([sym("batch"), np.int64(3)])
    assert not t.static and TensorType((2, 3)).static and TensorType(()).static
    assert TensorType((n * 3 + 1, Any), "int8").shape == (n * 3 + 1, Any)
    assert TensorType((n, 3)).size is n * 3 and TensorType((2, 3)).size == 6
    assert TensorType((Any, 2)).size is Any
    assert TensorType((n, 3)).ndim == 2


def test_static_ids_unchanged_and_symbolic_ids_distinct():
    """A static shape's id is the digest of b"t<dtype>(" + int64s (as before symbolic shapes);
    a symbolic shape's key is tagged "[" so no symbolic shape shares a static one's bytes."""
    import struct

    assert TensorType((2, 3)).id == digest(b"tfloat32(" + struct.pack("<2q", 2, 3))
    assert packed_dims_key((n, 3)) == b"[d" + n.id + b"i" + struct.pack("<q", 3)
    assert TensorType((n, 3)).id == digest(b"tfloat32" + packed_dims_key((n, 3)))
    ids = {TensorType(s).id for s in [(n, 3), (3, n), (n,), (m, 3), (n * 3,), (Any,), (Any, Any), (3,)]}
    assert len(ids) == 8


def test_types_are_weakly_interned():
    gc.collect()
    before = pyir.live_node_count()
    t = TensorType((sym("only_here_sym") * 5, 2))
    assert pyir.live_node_count() > before
    del t
    gc.collect()
    assert pyir.live_node_count() == before


@pytest.mark.parametrize("bad, msg", [
    ((-1, n), "not a dimension"),
    ((1.5, n), "must hold dimensions"),
    ((True, n), "not a dimension"),
    (("1x",), "identifier"),
    (("a b",), "identifier"),
    ((None,), "must hold dimensions"),
    ("ab", "sequence of dimensions"),
])
def test_bad_dimensions_are_well_formed_errors(bad, msg):
    with pytest.raises(pyir.WellFormedError, match=msg):
        TensorType(bad)


@pytest.mark.parametrize("shape", [
    (n, 3), (n * 3 + 1, Any), (dim_floordiv(n + 1, 2),), (dim_mod(n, 4) * sym("批"), 2),
    (dim_floordiv(n, 2) * m,), (3 - n,), (sym("inf") + 1, sym("nan")),
    (dim_floordiv(n + 1, 2) * 3, n * n - n),
    (Any,), (), (sym("Tensor"), sym("fn"), sym("floordiv")), (n * m * 7 - m + 2,),
])
def test_text_round_trip(shape):
    t = TensorType(shape, "int32")
    s = str(t)
    assert "//" not in s and "%" not in s  # the text's comment and variable sigils
    assert pyir.parse_type(s) is t


def test_text_spellings():
    assert str(TensorType((n * 3, Any))) == "Tensor[(n * 3, ?), float32]"
    assert str(TensorType((dim_floordiv(n + 1, 2), dim_mod(n, 4)))) == \
        "Tensor[(floordiv(n + 1, 2), floormod(n, 4)), float32]"
    assert str(TensorType((sym("批"),))) == 'Tensor[("批"), float32]'
    # hand-written text is read with the usual precedence and canonicalized
    for text, want in [("(n -5)", (n - 5,)), ("(2*(n+1))", (2 * n + 2,)), ("(floordiv(n*4, 2))", (2 * n,)),
                       ("(?, ? * 2)", (Any, Any)), ("((n + 1) * (n - 1))", (n * n - 1,)),
                       ("(n - 2 - 1)", (n - 3,)), ("(n * 2 + m * 2)", (2 * n + 2 * m,)),
                       ('("n" + 1)', (n + 1,)), ("(floormod(n * 6 + 3, 4))", (dim_mod(6 * n + 3, 4),))]:
        assert pyir.parse_type(f"Tensor[{text}, float32]").shape == want, text


@pytest.mark.parametrize("text, msg, col", [
    ("Tensor[(-(n)), float32]", "expected a dimension", 9),
    ("Tensor[(n - n - 1), float32]", "not a dimension", 15),
    ("Tensor[(floordiv(n), float32]", "floordiv takes 2 arguments", 9),
    ("Tensor[(floordiv(n, 1, 2)), float32]", "expected ')'", 22),
    ("Tensor[(n +), float32]", "expected a dimension", 12),
    ("Tensor[(floordiv(n, 0)), float32]", "division by zero", 9),
    ("Tensor[(n * 3i64), float32]", "expected a dimension", 13),
    ("Tensor[(-3), float32]", "negative dimension", 9),
    ("Tensor[(a.b), float32]", "expected a dimension", 9),
])
def test_bad_shape_text_points_at_the_dimension(text, msg, col):
    with pytest.raises(pyir.ParseError, match=re.escape(msg)) as ei:
        pyir.parse_type(text)
    assert ei.value.column == col and "^" in str(ei.value)


def test_deeply_parenthesized_dimension_is_bounded():
    """Parentheses in a dimension count toward the parser's nesting limit (no recursion)."""
    text = "Tensor[(" + "(" * 150 + "n" + ")" * 150 + "), float32]"
    assert pyir.parse_type(text).shape == (n,)
    with pytest.raises(pyir.ParseError, match="nesting too deep"):
        pyir.parse_type("Tensor[(" + "(" * 5000 + "n" + ")" * 5000 + "), float32]")


def test_long_dimension_expression():
    """A 20,000-term sum prints and parses back (linear, iterative)."""
    from pyir.ir.dims import dim_sum

    d = dim_sum([sym(f"s{i}") * (i + 1) for i in range(20_000)])
    t = TensorType((d, 2))
    assert isinstance(d, DimPoly) and pyir.parse_type(str(t)) is t


def test_module_text_round_trip_with_symbols():
    x = pyir.var("x", shape=("batch", 3))
    y = pyir.var("y", shape=(1, 3))
    f = pyir.Function([x, y], op.nn.relu(op.add(x, y)))
    mod = pyir.Module({"main": f})
    text = mod.astext()
    assert "Tensor[(batch, 3), float32]" in text
    back = pyir.parse(text)
    assert back.astext() == text and pyir.alpha_equal(back["main"], f)
    typed = pyir.transform.InferType()(mod)
    assert typed["main"].checked_type.ret_type is TensorType((sym("batch"), 3))


def test_conv2d_keeps_a_symbolic_batch():
    """A symbolic batch passes through conv2d; the spatial dimensions stay exact."""
    x = pyir.var("x", shape=("n", 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    assert pyir.infer_type(op.nn.conv2d(x, w, padding=(1, 1))) is TensorType((sym("n"), 4, 8, 8))


def test_random_inputs_binds_symbols():
    x = pyir.var("x", shape=("batch", 3))
    mod = pyir.Module({"main": pyir.Function([x], op.nn.relu(x))})
    (a,) = pyir.testing.random_inputs(mod, shapes={"batch": 5})
    assert a.shape == (5, 3)
    with pytest.raises(pyir.WellFormedError, match="batch"):
        pyir.testing.random_inputs(mod)


_dims = st.recursive(
    st.one_of(st.integers(0, 9), st.sampled_from([n, m, sym("k")])),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: p[0] + p[1]),
        st.tuples(inner, inner).map(lambda p: p[0] * p[1]),
        st.tuples(inner, st.integers(1, 5)).map(lambda p: dim_floordiv(p[0], p[1])),
        st.tuples(inner, st.integers(1, 5)).map(lambda p: dim_mod(p[0], p[1])),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_dims, st.just(Any)), max_size=4))
def test_random_shapes_round_trip_through_text(shape):
    t = TensorType(tuple(shape), "float16")
    assert pyir.parse_type(str(t)) is t
    assert all(str(d) == dim_str(d) for d in t.shape if not isinstance(d, int))


def test_metadata_constant_shapes_must_be_static():
    """A constant's shape in the metadata section is ints only (a symbol there is a ParseError
    with a position, not a numpy TypeError; found by the text fuzzer)."""
    text = ('def @main() {\n  meta[Constant][0]\n}\n#[metadata]\n'
            'meta[Constant][0] = float32 (a10, 2) "AAAAAAAAAAA="\n')
    with pytest.raises(pyir.ParseError, match="must be static") as ei:
        pyir.parse(text)
    assert ei.value.line == 5
