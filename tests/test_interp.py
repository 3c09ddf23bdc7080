"""The numpy reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op


def test_evaluates_models_to_plausible_outputs():
    """ResNet-style and transformer models run; softmax outputs sum to one."""
    m = pyir.testing.resnet(2)
    out = pyir.evaluate(m, *pyir.testing.random_inputs(m))
    assert out.shape == (1, 10) and out.dtype == np.float32
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)
    t = pyir.testing.transformer_block()
    assert pyir.evaluate(t, *pyir.testing.random_inputs(t)).shape == (8, 16)


def test_matches_numpy_on_a_hand_computed_program():
    """Let, tuple, get-item and arithmetic give numpy's answer."""
    x = pyir.var("x", shape=(3,))
    v = pyir.var("v")
    body = pyir.Let(v, op.multiply(x, pyir.const(2.0)),
                    pyir.TupleGetItem(pyir.Tuple([op.add(v, x), v]), 0))
    a = np.array([1, 2, 3], "float32")
    np.testing.assert_array_equal(pyir.evaluate(pyir.Function([x], body), a), a * 3)


def test_if_is_lazy_and_recursion_through_globals_works():
    """Only the taken branch runs, so a recursive global function terminates."""
    n = pyir.var("n", shape=(), dtype="int32")
    acc = pyir.var("acc", shape=(), dtype="int32")
    fact = pyir.GlobalVar("fact")
    one = pyir.const(1)
    body = pyir.If(op.less_equal(n, one), acc,
                   pyir.Call(fact, [op.subtract(n, one), op.multiply(acc, n)]))
    t = pyir.TensorType((), "int32")
    f = pyir.Function([n, acc], body, t)
    m0 = pyir.var("m", shape=(), dtype="int32")
    main = pyir.Function([m0], pyir.Call(fact, [m0, one]))
    mod = pyir.Module({"main": main, "fact": f})
    assert int(pyir.evaluate(mod, np.int32(5))) == 120


def test_closures_capture_their_environment():
    """A nested function called later sees the variables of its defining scope."""
    x = pyir.var("x", shape=(2,))
    y = pyir.var("y", shape=(2,))
    inner = pyir.Function([y], op.add(x, y))
    fv = pyir.var("f")
    body = pyir.Let(fv, inner, pyir.Call(fv, [pyir.Call(fv, [x])]))
    a = np.array([1, 2], "float32")
    np.testing.assert_array_equal(pyir.evaluate(pyir.Function([x], body), a), a * 3)


@pytest.mark.parametrize("inputs,needle", [
    ((), "takes 1 input"),
    ((np.zeros((1, 3, 8, 8), "float64"),), "dtype float64"),
    ((np.zeros((1, 3, 4, 4), "float32"),), r"shape \(1, 3, 4, 4\)"),
])
def test_bad_inputs_are_reported(inputs, needle):
    """Wrong number, dtype or shape of inputs gives an EvaluationError (and ValueError)."""
    m = pyir.testing.resnet(1)
    with pytest.raises(ValueError, match=needle) as info:
        pyir.evaluate(m, *inputs)
    assert isinstance(info.value, pyir.EvaluationError)


def test_closed_expression_evaluates():
    """A closed expression evaluates without a function."""
    e = op.add(pyir.const(1.0), op.multiply(pyir.const(2.0), pyir.const(3.0)))
    assert float(pyir.evaluate(e)) == 7.0


def test_deep_chains_evaluate(deep_chain, deep_anf):
    """The 10^6-deep chain and its 10^6-deep let chain evaluate to the same values."""
    a = np.array([0.5, -1.0, 2.0, 3.0], "float32")
    want = pyir.evaluate(deep_chain, a)
    np.testing.assert_array_equal(pyir.evaluate(deep_anf, a), want)
