"""pyir.testing helpers."""

from __future__ import annotations

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
