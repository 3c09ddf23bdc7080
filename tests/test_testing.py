"""pyir.testing helpers."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.testing import assert_same_values


def _mod(body_of):
    x = pyir.var("x", shape=(1, 3))
    return pyir.Module.from_expr(body_of(x))


def test_assert_same_values_accepts_equal_programs():
    """Two programs computing the same tensor pass."""
    a = _mod(lambda x: op.add(x, x))
    b = _mod(lambda x: op.multiply(x, pyir.const(2.0)))
    assert_same_values(a, b)


@pytest.mark.parametrize("other", [
    lambda x: op.cast(x, dtype="float64"),  # same values, another dtype
    lambda x: op.reshape(x, newshape=(3,)),  # same values, another shape
    lambda x: op.add(x, pyir.const(np.zeros((2, 1, 3), "float32"))),  # broadcasts to the same values
])
def test_assert_same_values_checks_dtype_and_shape(other):
    """Results with equal values but a different dtype or shape are reported as different."""
    with pytest.raises(AssertionError, match="expected float32"):
        assert_same_values(_mod(lambda x: x), _mod(other))


# -- assert_alpha_equal / assert_structural_equal -------------------------------------------------------


def _diff_message(a, b, **kw):
    with pytest.raises(pyir.AlphaEqualityError) as ei:
        pyir.testing.assert_alpha_equal(a, b, **kw)
    return str(ei.value)


def test_assert_alpha_equal_accepts_renamings():
    """Alpha-equal programs pass (also under TVM's name), modules included."""
    from pyir.testing import assert_alpha_equal, assert_structural_equal

    x, y = pyir.var("x", shape=(2,)), pyir.var("y", shape=(2,))
    t, u = pyir.var("t"), pyir.var("u")
    f = pyir.Function([x], pyir.Let(t, op.exp(x), op.add(t, x)))
    g = pyir.Function([y], pyir.Let(u, op.exp(y), op.add(u, y)))
    assert_alpha_equal(f, g)
    assert_structural_equal(pyir.Module({"main": f}), pyir.Module({"main": g}))
    assert_alpha_equal(op.exp(x), op.exp(y), map_free_vars=True)
    assert assert_structural_equal is assert_alpha_equal


def test_assert_alpha_equal_names_the_first_difference_and_where():
    """The message gives the path from the root and both sides, short."""
    x = pyir.var("x", shape=(1, 4, 8, 8))
    w = pyir.const(np.ones((4, 4, 3, 3), "float32"))
    a = pyir.Module.from_expr(op.nn.relu(op.nn.conv2d(x, w, padding=(1, 1))))
    b = pyir.Module.from_expr(op.nn.relu(op.nn.conv2d(x, w, padding=(0, 0))))
    msg = _diff_message(a, b)
    assert "at main.body.args[0].attrs['padding']: (1, 1, 1, 1) vs (0, 0, 0, 0)" in msg
    y = pyir.var("y", shape=(2,))
    z = pyir.var("z", shape=(3,))
    assert "at body.op: exp vs log" in _diff_message(pyir.Function([y], op.exp(y)),
                                                     pyir.Function([y], op.log(y)))
    assert "at params[0].type_annotation: Tensor[(2), float32] vs Tensor[(3), float32]" in _diff_message(
        pyir.Function([y], y), pyir.Function([z], z))
    assert "at fields: 2 fields vs 3" in _diff_message(pyir.Tuple([y, y]), pyir.Tuple([y, y, y]))
    assert "at args[1]: different free variables: %y" in _diff_message(op.add(y, y), op.add(y, z))
    t, u = pyir.var("t"), pyir.var("u")
    swapped = _diff_message(pyir.Function([y], pyir.Let(t, op.exp(y), op.add(t, y))),
                            pyir.Function([y], pyir.Let(u, op.exp(y), op.add(y, u))))
    assert "at body.body.args[0]: the variables are bound differently: %t vs %y" in swapped
    assert "the functions differ: only in the first ['f']" in _diff_message(
        pyir.Module({"main": pyir.Function([y], y), "f": pyir.Function([z], z)}),
        pyir.Module({"main": pyir.Function([y], y)}))
    assert issubclass(pyir.AlphaEqualityError, AssertionError)


def test_assert_alpha_equal_deep_chain(deep_chain):
    """The diagnosis walks iteratively: the difference at the bottom of a 10**6-deep chain is found."""
    body = deep_chain["main"].body
    x = deep_chain["main"].params[0]
    other = pyir.Function([x], pyir.substitute(body, {x: op.negative(x)}))
    msg = _diff_message(deep_chain["main"], other)
    assert re.search(r"at body\(\.args\[0\] x 1000000\): a Var vs a Call: %x", msg), msg
    assert len(msg) < 300
