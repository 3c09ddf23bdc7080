"""ONNX indexing, scatter/gather, image, vision, TopK and OneHot converters: the wheel's conformance
cases of each operator pass, constant shape arguments give static types, run-time ones ``?``
dimensions, and unsupported attribute values are FrontendErrors naming the node."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir.frontend.onnx import FrontendError, from_onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

from pyir.frontend import onnx_conformance as conf  # noqa: E402

# every in-scope case of these operators passes (bfloat16 cases wait for the dtype work)
OPS = ["GatherND", "GatherElements", "ScatterND", "ScatterElements", "Scatter", "TensorScatter", "Unique",
       "Compress", "ReverseSequence", "SpaceToDepth", "DepthToSpace", "CenterCropPad", "Col2Im", "MaxUnpool",
       "NonMaxSuppression", "RoiAlign", "Resize", "Upsample", "GridSample", "AffineGrid", "TopK", "OneHot",
       "DeformConv"]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[conf.Outcome]]:
    by_op: dict[str, list[conf.Outcome]] = {}
    for case in conf.cases():  # unfiltered: onnx collects its cases once per process
        if conf._op_type(case) not in OPS:
            continue
        o = conf.run_case(case)
        by_op.setdefault(o.op_type, []).append(o)
    return by_op


@pytest.mark.parametrize("op_type", OPS)
def test_conformance_cases_pass(outcomes: dict[str, list[conf.Outcome]], op_type: str) -> None:
    got = [o for o in outcomes[op_type] if o.status != "skip"]
    assert got, op_type
    bad = [(o.name, o.reason) for o in got if o.status != "pass" and "bfloat16" not in o.reason]
    assert not bad, bad


def _model(nodes, inputs, outputs, inits=(), opset=19):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


def test_resize_constant_scales_is_static_and_matches_reference() -> None:
    from onnx.reference import ReferenceEvaluator

    scales = h.make_tensor("scales", T.FLOAT, [4], [1, 1, 2, 1.5])
    node = h.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic", cubic_coeff_a=-0.5,
                       exclude_outside=1, coordinate_transformation_mode="half_pixel")
    m = _model([node], [_vi("x", T.FLOAT, [1, 2, 3, 4])], [_vi("y", T.FLOAT, None)], [scales])
    mod = from_onnx(m)
    assert mod["main"].body.checked_type == pyir.TensorType((1, 2, 6, 6), "float32")
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(pyir.evaluate(mod, x), want, rtol=1e-5, atol=1e-5)


def test_resize_runtime_sizes_give_unknown_dims() -> None:
    node = h.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", axes=[2, 3])
    m = _model([node], [_vi("x", T.FLOAT, [1, 1, 2, 2]), _vi("sizes", T.INT64, [2])],
               [_vi("y", T.FLOAT, None)])
    mod = from_onnx(m)
    t = mod["main"].body.checked_type
    assert t.shape[:2] == (1, 1) and t.shape[2] is pyir.ir.dims.Any
    y = pyir.evaluate(mod, np.ones((1, 1, 2, 2), np.float32), np.array([3, 5], np.int64))
    assert y.shape == (1, 1, 3, 5) and np.allclose(y, 1.0)


def test_unsupported_attribute_value_names_node() -> None:
    node = h.make_node("ScatterND", ["d", "i", "u"], ["y"], name="sc", reduction="sum")
    m = _model([node], [_vi("d", T.FLOAT, [2]), _vi("i", T.INT64, [1, 1]), _vi("u", T.FLOAT, [1])],
               [_vi("y", T.FLOAT, [2])])
    with pytest.raises(FrontendError, match=r"'sc' \(ScatterND\).*reduction"):
        from_onnx(m)


def test_type_error_names_node_and_shapes() -> None:
    node = h.make_node("GatherElements", ["d", "i"], ["y"], name="ge", axis=0)
    m = _model([node], [_vi("d", T.FLOAT, [2, 3]), _vi("i", T.INT64, [4])], [_vi("y", T.FLOAT, None)])
    with pytest.raises(FrontendError, match=r"'ge' \(GatherElements\).*\(4,\).*\(2, 3\)"):
        from_onnx(m)


def test_topk_constant_k_and_onehot_constant_depth() -> None:
    k = h.make_tensor("k", T.INT64, [1], [2])
    depth = h.make_tensor("depth", T.INT64, [], [4])
    vals = h.make_tensor("vals", T.FLOAT, [2], [0, 5])
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], largest=0),
             h.make_node("OneHot", ["i", "depth", "vals"], ["o"], axis=-1)]
    m = _model(nodes, [_vi("x", T.FLOAT, [3])], [_vi("v", T.FLOAT, [2]), _vi("o", T.FLOAT, [2, 4])],
               [k, depth, vals])
    mod = from_onnx(m)
    v, o = pyir.evaluate(mod, np.array([3.0, 1.0, 2.0], np.float32))
    np.testing.assert_array_equal(v, [1.0, 2.0])
    np.testing.assert_array_equal(o, [[0, 5, 0, 0], [0, 0, 5, 0]])


def test_gather_nd_scatter_nd_round_trip_after_passes() -> None:
    from pyir.testing import check_pass
    from pyir.transform import FoldConstant, FuseOps, Sequential, SimplifyExpr

    idx = h.make_tensor("idx", T.INT64, [2, 1], [1, 0])
    nodes = [h.make_node("GatherND", ["x", "idx"], ["g"]),
             h.make_node("Relu", ["g"], ["r"]),
             h.make_node("ScatterND", ["x", "idx", "r"], ["y"], reduction="add")]
    m = _model(nodes, [_vi("x", T.FLOAT, [2, 3])], [_vi("y", T.FLOAT, [2, 3])], [idx])
    mod = from_onnx(m)
    x = np.array([[1, -2, 3], [-4, 5, 6]], np.float32)
    np.testing.assert_array_equal(pyir.evaluate(mod, x), [[2, -2, 6], [-4, 10, 12]])
    out = check_pass(Sequential([SimplifyExpr(), FoldConstant(), FuseOps()]), mod, idempotent=False)
    np.testing.assert_array_equal(pyir.evaluate(out, x), [[2, -2, 6], [-4, 10, 12]])
