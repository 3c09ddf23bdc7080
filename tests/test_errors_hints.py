"""Errors that say what to do (issue 15 item 7): did-you-mean for operators, attributes and
builder keywords, the hint for a list where separate tensors are expected, evaluate's type
errors, a pass that returns something other than a module."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.errors import IllTypedProgramError, did_you_mean
from pyir.transform import FunctionPass, ModulePass, Sequential, SimplifyExpr


def test_did_you_mean_helper():
    assert did_you_mean("nn.conv3", ["nn.conv2d", "nn.relu"]) == "; did you mean 'nn.conv2d'?"
    assert did_you_mean("zzzz", ["nn.conv2d"]) == ""
    assert did_you_mean("axs", ["axis", "axes"]).startswith("; did you mean 'ax")


def test_unknown_operator_suggests_close_names():
    with pytest.raises(pyir.UnknownOpError, match=r"unknown operator 'nn\.conv3'; did you mean 'nn\.conv2d'"):
        pyir.Op.get("nn.conv3")
    with pytest.raises(pyir.UnknownOpError, match=r"did you mean 'nn\.conv2d'"):
        pyir.op.get_op_def("nn.conv3")
    with pytest.raises(pyir.ParseError, match=r"unknown operator 'nn\.rel'; did you mean 'nn\.relu'"):
        pyir.parse("def @main(%x: Tensor[(2), float32]) { nn.rel(%x) }")
    with pytest.raises(pyir.UnknownOpError) as e:
        pyir.Op.get("qqqqqqqq")
    assert "did you mean" not in str(e.value)


def test_unknown_attribute_and_keyword_suggest_close_names():
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    with pytest.raises(pyir.AttrError, match=r"attribute\(s\) \['paddin'\].*did you mean 'padding'\?"):
        op.nn.conv2d(x, w, paddin=(1, 1))
    with pytest.raises(pyir.AttrError, match="did you mean 'axis'"):
        op.nn.softmax(x, axs=1)
    with pytest.raises(pyir.AttrError, match="did you mean 'strides'"):
        pyir.Call(pyir.Op("nn.conv2d"), [x, w], {"stride": (1, 1)})


def test_a_list_where_separate_tensors_are_expected():
    """A Python list given to a builder that takes separate tensors becomes one tuple: the type
    error says to pass the tensors as separate arguments."""
    x = pyir.var("x", shape=(2, 3))
    bad = op.add([x, x], x)
    with pytest.raises(pyir.TypeCheckError, match="pass the tensors as separate arguments"):
        pyir.Module.from_expr(bad).type_of(bad)
    with pytest.raises(pyir.TypeCheckError) as e:  # a non-tuple gets no such hint
        good_shape = op.add(pyir.var("s", shape=(2, 5)), x)
        pyir.Module.from_expr(good_shape).type_of(good_shape)
    assert "separate arguments" not in str(e.value)


def test_a_list_where_a_tuple_expression_is_expected():
    """A Python list where the IR wants one expression (a body, a tuple operand) says how to make
    it one (pyir.Tuple); separate tensors where an operator wants a list say to pass a list."""
    x = pyir.var("x", shape=(2, 3))
    for build in (lambda: pyir.Function([x], [x, x]), lambda: pyir.TupleGetItem([x, x], 0)):
        with pytest.raises(pyir.WellFormedError, match=r"must be an expression.*pyir\.Tuple\(\[\.\.\.\]\)"):
            build()
    with pytest.raises(pyir.WellFormedError, match="must be an expression") as e:
        pyir.Function([x], 3)
    assert "pyir.Tuple" not in str(e.value)
    with pytest.raises(pyir.WellFormedError, match=r"one list or tuple: concatenate\(\[a, b\]"):
        op.concatenate(x, x)
    assert op.concatenate([x, x]).checked_type == pyir.TensorType((4, 3))


def test_evaluate_an_ill_typed_conv_names_node_op_and_shapes():
    """A mis-shaped conv fails with the type checker's message, not numpy's reshape error."""
    d = pyir.var("d", shape=(1, 3, 6, 6))
    w = pyir.var("w", shape=(4, 2, 3, 3))
    m = pyir.Module.from_expr(op.nn.conv2d(d, w))
    args = np.zeros((1, 3, 6, 6), "float32"), np.zeros((4, 2, 3, 3), "float32")
    with pytest.raises(IllTypedProgramError) as e:
        pyir.evaluate(m, *args)
    msg = str(e.value)
    assert "nn.conv2d" in msg and "(1, 3, 6, 6)" in msg and "(4, 2, 3, 3)" in msg
    assert "reshape" not in msg and "in <Call nn.conv2d(%d, %w)" in msg
    assert isinstance(e.value, pyir.TypeCheckError) and isinstance(e.value, pyir.EvaluationError)
    with pytest.raises(pyir.TypeCheckError):
        pyir.evaluate(m["main"], *args)
    ok = pyir.Module.from_expr(op.nn.conv2d(d, pyir.var("w", shape=(4, 3, 3, 3))))
    assert pyir.evaluate(ok, args[0], np.ones((4, 3, 3, 3), "float32")).shape == (1, 4, 4, 4)


@dataclasses.dataclass(frozen=True)
class _Forgetful(ModulePass):
    def run(self, mod):  # forgets to return
        mod.with_function("main", mod["main"])


@dataclasses.dataclass(frozen=True)
class _Wrong(FunctionPass):
    def run(self, mod):
        return [mod]


def test_a_pass_returning_something_else_is_a_pass_error():
    m = pyir.Module.from_expr(op.nn.relu(pyir.var("x", shape=(2,))))
    with pytest.raises(pyir.PassError, match=r"pass _Forgetful returned NoneType, not a Module"):
        _Forgetful()(m)
    with pytest.raises(pyir.PassError, match=r"pass _Wrong returned list, not a Module"):
        _Wrong()(m)
    with pytest.raises(pyir.PassError, match="_Forgetful"):
        Sequential([SimplifyExpr(), _Forgetful()])(m)
    assert SimplifyExpr()(m) is m  # a pass that returns its input is fine


def test_item_assignment_points_to_with_function():
    """(Module.__setitem__ comes from the Relay API work; the hint is what issue 15 asks.)"""
    m = pyir.Module.from_expr(op.nn.relu(pyir.var("x", shape=(2,))))
    with pytest.raises(pyir.ImmutableError, match="with_function"):
        m["main"] = m["main"]
