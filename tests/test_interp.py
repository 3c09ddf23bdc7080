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


def _ill_typed(program, *inputs, needle):
    with pytest.raises(pyir.IllTypedProgramError, match=needle) as info:
        pyir.evaluate(program, *inputs)
    assert isinstance(info.value, pyir.TypeCheckError) and isinstance(info.value, pyir.EvaluationError)
    return str(info.value)


def test_evaluate_type_checks_before_running():
    """Ill-typed programs whose numpy kernels would succeed (float32 + int32 promotes, a
    concatenate of mixed dtypes, a lying return type) are refused before anything runs, with
    the type checker's message (node, operator, shapes); so are those of a module's callee."""
    x, i = pyir.var("x", shape=(2,)), pyir.var("i", shape=(2,), dtype="int32")
    f32, i32 = np.ones(2, "float32"), np.ones(2, "int32")
    msg = _ill_typed(pyir.Function([x, i], op.add(x, i)), f32, i32, needle="add: dtypes differ")
    assert "in <Call add(%x, %i)" in msg and "Tensor[(2), float32], Tensor[(2), int32]" in msg
    _ill_typed(pyir.Module.from_expr(op.concatenate([x, i])), f32, i32,
               needle="concatenate: dtypes differ: float32, int32")
    _ill_typed(pyir.Function([x], op.cast(x, dtype="int32"), ret_type=pyir.TensorType((2,))), f32,
               needle=r"declared return type Tensor\[\(2\), float32\] but the body has type "
                      r"Tensor\[\(2\), int32\]")
    # a closed expression; and a function with unannotated parameters, typed from the inputs
    _ill_typed(op.add(pyir.const(f32), pyir.const(i32)), needle="add: dtypes differ")
    u, v = pyir.var("u"), pyir.var("v")
    g = pyir.Function([u, v], op.add(u, v))
    _ill_typed(g, f32, i32,
               needle=r"add: dtypes differ.*\n.*\n.*Tensor\[\(2\), float32\], Tensor\[\(2\), int32\]")
    np.testing.assert_array_equal(pyir.evaluate(g, f32, f32), 2 * f32)  # typed per call
    pair = pyir.Function([u], op.add(pyir.TupleGetItem(u, 0), pyir.TupleGetItem(u, 1)))
    _ill_typed(pair, (f32, i32), needle="add: dtypes differ")  # a tuple input: typed by its fields
    np.testing.assert_array_equal(pyir.evaluate(pair, (f32, f32)), 2 * f32)
    # a module: main well-typed, the callee's body (annotated: its signature alone is fine) not
    p = pyir.var("p", shape=(2,))
    bad = pyir.Function([p], op.add(p, pyir.const(np.ones(3, "float32"))), ret_type=pyir.TensorType((2,)))
    mod = pyir.Module({"main": pyir.Function([x], pyir.Call(pyir.GlobalVar("h"), [x])), "h": bad})
    _ill_typed(mod, f32, needle=r"add: shapes \(2,\) and \(3,\) do not broadcast")
    # a bare function calling a global is told to evaluate its module
    with pytest.raises(pyir.EvaluationError, match="@h needs a module"):
        pyir.evaluate(mod["main"], f32)


def test_a_second_evaluate_does_not_type_again(monkeypatch):
    """The type check is paid once: a module remembers it, typed nodes carry their types, and
    a function whose type lives in a context cache (an unannotated let) is remembered too."""
    from pyir.analysis import interp

    calls = []
    real = interp.infer_type
    monkeypatch.setattr(interp, "infer_type", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    m = pyir.testing.resnet(1)
    ins = pyir.testing.random_inputs(m)
    pyir.evaluate(m, *ins)
    first = len(calls)
    assert first >= 1
    pyir.evaluate(m, *ins)
    x, v = pyir.var("x", shape=(3,)), pyir.var("v")
    f = pyir.Function([x], pyir.Let(v, op.exp(x), op.nn.relu(v)))  # v unannotated: context types
    a = np.ones(3, "float32")
    pyir.evaluate(f, a)
    pyir.evaluate(f, a)
    e = op.add(pyir.const(a), pyir.const(a))
    pyir.evaluate(e)
    pyir.evaluate(e)
    assert len(calls) == first + 2  # one for f, one for e
