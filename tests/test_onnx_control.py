"""ONNX control flow: If becomes a pyir If, Loop and Scan are unrolled when short and constant,
otherwise a recursive local function that the interpreter runs without Python recursion."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir.frontend.onnx import from_onnx
from pyir.ir.expr import If, Let

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

from pyir.frontend import onnx_conformance as conf  # noqa: E402


def _vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


def _nodes(e):
    from pyir.ir.traverse import post_order

    return list(post_order([e]))


def _loop_model(m_shape=(), cond_input=True):
    body = h.make_graph([
        h.make_node("Identity", ["cond_in"], ["cond_out"]),
        h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        h.make_node("Add", ["y_in", "fi"], ["y_out"]),
        h.make_node("Mul", ["y_out", "w"], ["scan_out"]),  # w: an outer-scope value
    ], "body", [_vi("i", T.INT64, []), _vi("cond_in", T.BOOL, []), _vi("y_in", T.FLOAT, [2])],
        [_vi("cond_out", T.BOOL, []), _vi("y_out", T.FLOAT, [2]), _vi("scan_out", T.FLOAT, [2])])
    g = h.make_graph([h.make_node("Loop", ["M", "c" if cond_input else "", "y"], ["ry", "rs"], body=body)],
                     "g", [_vi("M", T.INT64, list(m_shape)), _vi("c", T.BOOL, []), _vi("y", T.FLOAT, [2]),
                           _vi("w", T.FLOAT, [2])],
                     [_vi("ry", T.FLOAT, [2]), _vi("rs", T.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_if_with_runtime_condition_is_pyir_if() -> None:
    def branch(name, value):
        return h.make_graph([h.make_node("Add", ["x", "k"], [name])], name + "_g", [],
                            [_vi(name, T.FLOAT, [2])],
                            initializer=[h.make_tensor("k", T.FLOAT, [2], value)])
    g = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=branch("t", [1, 1]),
                                  else_branch=branch("e", [-1, -1]))],
                     "g", [_vi("c", T.BOOL, []), _vi("x", T.FLOAT, [2])], [_vi("y", T.FLOAT, [2])])
    mod = from_onnx(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
    assert any(type(n) is If for n in _nodes(mod["main"].body))
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(pyir.evaluate(mod, np.asarray(True), x), [2, 3])
    np.testing.assert_array_equal(pyir.evaluate(mod, np.asarray(False), x), [0, 1])


def test_loop_with_runtime_trip_count_is_a_recursive_function() -> None:
    mod = from_onnx(_loop_model())
    assert any(type(n) is Let for n in _nodes(mod["main"].body))
    y0, w = np.zeros(2, np.float32), np.array([1.0, 2.0], np.float32)
    for n in (0, 1, 4):
        ry, rs = pyir.evaluate(mod, np.asarray(n, np.int64), np.asarray(True), y0, w)
        want = np.cumsum(np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(ry, [want[-1] if n else 0.0] * 2)
        np.testing.assert_array_equal(rs, want[:, None] * w[None, :])
    ry, rs = pyir.evaluate(mod, np.asarray(5, np.int64), np.asarray(False), y0, w)
    assert rs.shape == (0, 2) and not ry.any()


def test_long_loop_runs_without_python_recursion() -> None:
    import sys

    mod = from_onnx(_loop_model())
    n = 3 * sys.getrecursionlimit()
    ry, rs = pyir.evaluate(mod, np.asarray(n, np.int64), np.asarray(True), np.zeros(2, np.float32),
                           np.ones(2, np.float32))
    # The loop adds float32 values one by one; past 2**24 the sum rounds, so the reference must
    # round the same way (the CI machine's recursion limit gives n = 9000, a sum of 4.0e7).
    want = np.cumsum(np.arange(n, dtype=np.float32), dtype=np.float32)
    assert rs.shape == (n, 2)
    np.testing.assert_array_equal(ry, [want[-1]] * 2)
    np.testing.assert_array_equal(rs[:, 0], want)


def test_loop_with_constant_trip_count_unrolls() -> None:
    m = _loop_model()
    g = m.graph
    g.node.insert(0, h.make_node("Constant", [], ["M3"], value=h.make_tensor("v", T.INT64, [], [3])))
    g.node.insert(0, h.make_node("Constant", [], ["c3"], value=h.make_tensor("b", T.BOOL, [], [1])))
    g.node[2].input[0], g.node[2].input[1] = "M3", "c3"
    mod = from_onnx(m)
    assert not any(type(n) is Let for n in _nodes(mod["main"].body))
    ry, rs = pyir.evaluate(mod, np.asarray(0, np.int64), np.asarray(False), np.zeros(2, np.float32),
                           np.ones(2, np.float32))
    np.testing.assert_array_equal(ry, [3, 3])
    np.testing.assert_array_equal(rs[:, 0], [0, 1, 3])


def test_scan_and_if_conformance_cases() -> None:
    # conf.cases() unfiltered: onnx collects its cases once per process, with the first filter given
    every = conf.cases()
    for op_type in ("Scan", "If"):
        outs = [conf.run_case(c) for c in every if conf._op_type(c) == op_type]
        scoped = [o for o in outs if o.status != "skip"]
        assert scoped and all(o.status == "pass" for o in scoped), [(o.name, o.reason) for o in scoped]


def test_scan_reverse_directions_and_axes() -> None:
    body = h.make_graph([h.make_node("Add", ["s", "x"], ["s2"]), h.make_node("Identity", ["s2"], ["o"])],
                        "b", [_vi("s", T.FLOAT, [2]), _vi("x", T.FLOAT, [2])],
                        [_vi("s2", T.FLOAT, [2]), _vi("o", T.FLOAT, [2])])
    node = h.make_node("Scan", ["s0", "xs"], ["sf", "os"], body=body, num_scan_inputs=1,
                       scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1],
                       scan_output_directions=[1])
    g = h.make_graph([node], "g", [_vi("s0", T.FLOAT, [2]), _vi("xs", T.FLOAT, [2, 4])],
                     [_vi("sf", T.FLOAT, [2]), _vi("os", T.FLOAT, [2, 4])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    s0, xs = np.zeros(2, np.float32), np.arange(8, dtype=np.float32).reshape(2, 4)
    sf, os_ = pyir.evaluate(from_onnx(m), s0, xs)  # (onnx.reference has no reverse directions)
    np.testing.assert_array_equal(sf, xs.sum(axis=1))
    # read from the end, written from the end: os[:, j] is the sum of xs[:, j:]
    np.testing.assert_array_equal(os_, np.flip(np.cumsum(np.flip(xs, 1), axis=1), 1))


def test_loop_whose_state_grows_generalizes_to_unknown_dims() -> None:
    """A loop-carried value whose length changes each iteration gets a ``?`` dimension; its scan
    output has ``?`` dimensions too, so the first iteration is peeled off the recursion."""
    body = h.make_graph([
        h.make_node("Identity", ["cond_in"], ["cond_out"]),
        h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        h.make_node("Unsqueeze", ["fi", "zero"], ["fi1"]),
        h.make_node("Concat", ["y_in", "fi1"], ["y_out"], axis=0),
        h.make_node("ReduceSum", ["y_out"], ["total"], keepdims=1),
        h.make_node("Compress", ["w", "m"], ["picked"], axis=0),  # (?,): w and m are outer values
        h.make_node("Mul", ["picked", "fi"], ["scaled"]),
    ], "body", [_vi("i", T.INT64, []), _vi("cond_in", T.BOOL, []), _vi("y_in", T.FLOAT, [1])],
        [_vi("cond_out", T.BOOL, []), _vi("y_out", T.FLOAT, None), _vi("total", T.FLOAT, [1]),
         _vi("scaled", T.FLOAT, None)],
        initializer=[h.make_tensor("zero", T.INT64, [1], [0])])
    g = h.make_graph([h.make_node("Loop", ["M", "", "y"], ["ry", "rs", "rp"], body=body)], "g",
                     [_vi("M", T.INT64, []), _vi("y", T.FLOAT, [1]), _vi("w", T.FLOAT, [3]),
                      _vi("m", T.BOOL, [3])],
                     [_vi("ry", T.FLOAT, None), _vi("rs", T.FLOAT, None), _vi("rp", T.FLOAT, None)])
    mod = from_onnx(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
    t = mod["main"].body.checked_type
    assert t.fields[0].shape == (pyir.ir.dims.Any,)
    w, m = np.array([1.0, 2.0, 3.0], np.float32), np.array([True, False, True])
    for n in (0, 1, 4):
        ry, rs, rp = pyir.evaluate(mod, np.asarray(n, np.int64), np.array([10.0], np.float32), w, m)
        np.testing.assert_array_equal(ry, [10.0, *range(n)])
        np.testing.assert_array_equal(rs.reshape(-1), [10 + sum(range(k + 1)) for k in range(n)])
        if n:
            np.testing.assert_array_equal(rp, np.arange(n, dtype=np.float32)[:, None] * [[1.0, 3.0]])
        else:  # no iteration: the per-iteration length is unknown, the empty stack takes 0
            assert rp.shape == (0, 0)
