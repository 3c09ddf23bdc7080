"""Shape, creation, image and dynamic operators (issue 12 item 3), and the BindShapes and
DynamicToStatic passes (item 5).  Oracles: numpy, and onnx's reference evaluator for the
operators ONNX defines (Resize, TopK, OneHot, Tile, Expand, Range)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyir
from pyir import TensorType, op
from pyir.ir.dims import Any, sym
from pyir.testing import check_pass
from pyir.transform import BindShapes, DynamicToStatic, FoldConstant, InferType, Sequential

n, m = sym("n"), sym("m")
C = pyir.const


def typ(e):
    return pyir.infer_type(e)


def run(e):
    return pyir.evaluate(e)


# -- static operators: types (symbolic too) and values ------------------------------------------


def test_shape_of():
    x = pyir.var("x", shape=(n, 3))
    assert typ(op.shape_of(x)) is TensorType((2,), "int64")
    assert typ(op.shape_of(x, dtype="int32")) is TensorType((2,), "int32")
    assert run(op.shape_of(C(np.zeros((2, 5), "float32")))).tolist() == [2, 5]
    with pytest.raises(pyir.AttrError, match="integer dtype"):
        op.shape_of(x, dtype="float32")


def test_broadcast_to():
    x = pyir.var("x", shape=(1, 3))
    assert typ(op.broadcast_to(x, shape=(4, 2, 3))) is TensorType((4, 2, 3))
    assert typ(op.broadcast_to(pyir.var("y", shape=(n, 1)), shape=(5, 4))) is TensorType((5, 4))
    with pytest.raises(pyir.TypeCheckError, match="cannot broadcast"):
        typ(op.broadcast_to(x, shape=(4, 2)))
    with pytest.raises(pyir.TypeCheckError, match="lower rank"):
        typ(op.broadcast_to(x, shape=(3,)))
    with pytest.raises(pyir.TypeCheckError, match="cannot broadcast"):
        typ(op.broadcast_to(pyir.var("z", shape=(n * 2 + 3,)), shape=(4,)))  # odd, cannot be 4
    a = np.arange(3, dtype="float32").reshape(1, 3)
    np.testing.assert_array_equal(run(op.broadcast_to(C(a), shape=(2, 2, 3))), np.broadcast_to(a, (2, 2, 3)))
    with pytest.raises(pyir.AttrError, match="non-negative"):
        op.broadcast_to(x, shape=(-1, 3))


def test_zeros_ones_full():
    assert typ(op.zeros(shape=(2, 3), dtype="int8")) is TensorType((2, 3), "int8")
    np.testing.assert_array_equal(run(op.ones(shape=(2,))), np.ones(2, "float32"))
    v = C(np.float16(2.5))
    assert typ(op.full(v, shape=(3,))) is TensorType((3,), "float16")
    assert typ(op.full(v, shape=(3,), dtype="float64")) is TensorType((3,), "float64")
    np.testing.assert_array_equal(run(op.full(v, shape=(2, 2))), np.full((2, 2), 2.5, "float16"))
    with pytest.raises(pyir.TypeCheckError, match="scalar"):
        typ(op.full(C(np.zeros(2, "float32")), shape=(3,)))


def test_tile_symbolic_and_values():
    assert typ(op.tile(pyir.var("x", shape=(n, 3)), reps=(2, 1, 2))) is TensorType((2, n, 6))
    a = np.arange(6).reshape(2, 3).astype("int32")
    np.testing.assert_array_equal(run(op.tile(C(a), reps=(2, 3))), np.tile(a, (2, 3)))


def test_arange():
    assert typ(op.arange(start=1, stop=2, step=0.25)) is TensorType((4,), "float32")
    assert typ(op.arange(stop=5, dtype="int32")) is TensorType((5,), "int32")
    assert typ(op.arange(start=5, stop=0)) is TensorType((0,), "float32")
    np.testing.assert_array_equal(run(op.arange(start=3, stop=-3, step=-2, dtype="int64")), [3, 1, -1])
    with pytest.raises(pyir.AttrError, match="step"):
        op.arange(stop=3, step=0)


def test_one_hot():
    i = pyir.var("i", shape=(n, 2), dtype="int64")
    on, off = C(np.float32(1)), C(np.float32(0))
    assert typ(op.one_hot(i, on, off, depth=4)) is TensorType((n, 2, 4))
    assert typ(op.one_hot(i, on, off, depth=4, axis=0, dtype="int8")) is TensorType((4, n, 2), "int8")
    got = run(op.one_hot(C(np.array([1, 0, 3])), on, off, depth=3))
    np.testing.assert_array_equal(got, np.eye(3, dtype="float32")[[1, 0]].tolist() + [[0, 0, 0]])


def test_topk_types_and_ties():
    x = pyir.var("x", shape=(n, 5))
    assert typ(op.topk(x, k=2)) == TupleType_((n, 2), (n, 2))
    assert typ(op.topk(x, k=0, ret_type="indices", dtype="int64")) is TensorType((n, 5), "int64")
    with pytest.raises(pyir.TypeCheckError, match="exceeds"):
        typ(op.topk(x, k=6))
    v, i = run(op.topk(C(np.array([[1.0, 3.0, 3.0, 2.0]], "float32")), k=3))
    assert v.tolist() == [[3, 3, 2]] and i.tolist() == [[1, 2, 3]]  # ties: the lower index first
    v, i = run(op.topk(C(np.array([5, 1, 1, 7], "uint8")), k=2, is_ascend=True))
    assert v.tolist() == [1, 1] and i.tolist() == [1, 2]


def TupleType_(a, b):
    return pyir.TupleType([TensorType(a), TensorType(b, "int32")])


def test_resize2d_types():
    x = pyir.var("x", shape=(n, 3, 8, 8))
    assert typ(op.image.resize2d(x, size=(16, 4))) is TensorType((n, 3, 16, 4))
    y = pyir.var("y", shape=(1, 8, 8, 3))
    assert typ(op.image.resize2d(y, size=(2, 2), layout="NHWC")) is TensorType((1, 2, 2, 3))
    with pytest.raises(pyir.AttrError, match="method"):
        op.image.resize2d(x, size=(2, 2), method="cubic")


# -- ONNX's reference evaluator as the oracle ----------------------------------------------------

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402


def _onnx_run(node, inputs):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, inputs)


@pytest.mark.parametrize("method, mode, rounding", [
    ("linear", "half_pixel", ""), ("linear", "align_corners", ""), ("linear", "asymmetric", ""),
    ("linear", "pytorch_half_pixel", ""), ("nearest_neighbor", "asymmetric", "floor"),
    ("nearest_neighbor", "half_pixel", "round_prefer_floor"),
    ("nearest_neighbor", "half_pixel", "round_prefer_ceil"),
    ("nearest_neighbor", "align_corners", "round_prefer_ceil"), ("nearest_neighbor", "asymmetric", "ceil"),
])
@pytest.mark.parametrize("size", [(7, 5), (2, 3), (1, 1)])
def test_resize2d_matches_onnx(method, mode, rounding, size):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 4, 6)).astype("float32")
    got = run(op.image.resize2d(C(x), size=size, method=method, coordinate_transformation_mode=mode,
                                rounding_method=rounding))
    onnx_mode = {"nearest_neighbor": "nearest", "linear": "linear"}[method]
    kw = {"nearest_mode": rounding} if method == "nearest_neighbor" else {}
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=onnx_mode,
                            coordinate_transformation_mode=mode, **kw)
    (want,) = _onnx_run(node, {"x": x, "sizes": np.array((1, 2) + size, "int64")})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k, largest", [(1, 1), (3, 1), (2, 0), (5, 1)])
def test_topk_matches_onnx(k, largest):
    x = np.array([[3, 1, 3, 2, 0], [1, 1, 1, 4, 4]], "float32")
    v, i = run(op.topk(C(x), k=k, is_ascend=not largest, dtype="int64"))
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=largest, sorted=1)
    want_v, want_i = _onnx_run(node, {"x": x, "k": np.array([k], "int64")})
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, want_i)


def test_tile_expand_range_one_hot_match_onnx():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    (want,) = _onnx_run(helper.make_node("Tile", ["x", "r"], ["y"]), {"x": x, "r": np.array([2, 2], "int64")})
    np.testing.assert_array_equal(run(op.dyn.tile(C(x), C(np.array([2, 2])))), want)
    (want,) = _onnx_run(helper.make_node("Expand", ["x", "s"], ["y"]),
                        {"x": x[:1], "s": np.array([3, 2, 3], "int64")})
    np.testing.assert_array_equal(run(op.dyn.broadcast_to(C(x[:1]), C(np.array([3, 2, 3])))), want)
    (want,) = _onnx_run(helper.make_node("Range", ["a", "b", "c"], ["y"]),
                        {"a": np.array(1.0, "float32"), "b": np.array(4.0, "float32"),
                         "c": np.array(0.7, "float32")})
    got = run(op.dyn.arange(C(np.float32(1)), C(np.float32(4)), C(np.float32(0.7))))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    idx = np.array([[0, 2], [1, 5]], "int64")
    (want,) = _onnx_run(helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=1),
                        {"i": idx, "d": np.array(4, "int64"), "v": np.array([0, 1], "float32")})
    got = run(op.dyn.one_hot(C(idx), C(np.float32(1)), C(np.float32(0)), C(np.int64(4)), axis=1))
    np.testing.assert_array_equal(got, want)


# -- dynamic operators ---------------------------------------------------------------------------


def test_dyn_types_are_unknown_where_values_decide():
    x = pyir.var("x", shape=(n, 3))
    s = pyir.var("s", shape=(3,), dtype="int64")
    assert typ(op.dyn.reshape(x, s)) is TensorType((Any, Any, Any))
    assert typ(op.dyn.broadcast_to(pyir.var("y", shape=(1, 3)), s)) is TensorType((Any, Any, 3))
    assert typ(op.dyn.zeros(s, dtype="int8")) is TensorType((Any, Any, Any), "int8")
    assert typ(op.dyn.strided_slice(x, *[pyir.var(k, shape=(1,), dtype="int64") for k in "bes"])) \
        is TensorType((Any, 3))
    k = pyir.var("k", shape=(), dtype="int32")
    assert typ(op.dyn.topk(x, k, ret_type="values")) is TensorType((n, Any))
    im, sz = pyir.var("im", shape=(1, 3, 4, 4)), pyir.var("sz", shape=(2,), dtype="int64")
    assert typ(op.dyn.resize2d(im, sz)) is TensorType((1, 3, Any, Any))
    assert typ(op.dyn.arange(C(0), C(5), C(1), dtype="int64")) is TensorType((Any,), "int64")
    with pytest.raises(pyir.TypeCheckError, match="static length"):
        typ(op.dyn.reshape(x, pyir.var("q", shape=(m,), dtype="int64")))
    with pytest.raises(pyir.TypeCheckError, match="integer"):
        typ(op.dyn.reshape(x, pyir.var("f", shape=(2,), dtype="float32")))


def test_dyn_values():
    a = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(run(op.dyn.reshape(C(a), C(np.array([0, -1, 2])))), a.reshape(3, 2, 2))
    np.testing.assert_array_equal(run(op.dyn.ones(C(np.array([2, 1])), dtype="int32")),
                                  np.ones((2, 1), "int32"))
    np.testing.assert_array_equal(run(op.dyn.full(C(np.int8(7)), C(np.array([3])))), np.full(3, 7, "int8"))
    np.testing.assert_array_equal(
        run(op.dyn.strided_slice(C(a), C(np.array([2, 0])), C(np.array([0, 4])), C(np.array([-1, 2])))),
        a[2:0:-1, 0:4:2])
    np.testing.assert_array_equal(
        run(op.dyn.pad(C(a), C(np.array([[1, 0], [0, 2]])), C(np.float32(-1)), pad_mode="edge")),
        np.pad(a, ((1, 0), (0, 2)), mode="edge"))
    with pytest.raises(pyir.EvaluationError, match=r"dyn\.reshape"):
        run(op.dyn.reshape(C(a), C(np.array([5, 5]))))


# -- BindShapes, DynamicToStatic -----------------------------------------------------------------


def _symbolic_module():
    x = pyir.var("x", shape=("batch", 3, 4))
    w = pyir.var("w", shape=(4, 4))
    h = op.matmul(x, w)
    flat = op.dyn.reshape(h, op.concatenate([op.strided_slice(op.shape_of(h), begin=(0,), end=(1,)),
                                             C(np.array([12], "int64"))], axis=0))
    ones = op.dyn.ones(op.shape_of(flat), dtype="float32")
    out = op.add(op.nn.relu(flat), ones)
    return pyir.Module({"main": pyir.Function([x, w], out)})


def test_bind_then_static_is_the_static_program():
    mod = _symbolic_module()
    bound = check_pass(BindShapes({"batch": 2}), mod)
    assert bound["main"].params[0].type_annotation is TensorType((2, 3, 4))
    static = check_pass(DynamicToStatic(), bound)
    text = static.astext()
    assert "dyn." not in text and "shape_of" not in text
    assert InferType()(static)["main"].checked_type.ret_type is TensorType((2, 12))
    # the symbolic program, evaluated on batch-2 inputs, equals the specialized one
    ins = pyir.testing.random_inputs(static)
    np.testing.assert_allclose(pyir.evaluate(mod, *ins), pyir.evaluate(static, *ins), rtol=1e-6)
    # lineage through both passes: the final add comes from the symbolic one
    assert static.find(mod["main"].body) == [static["main"].body]


def test_passes_leave_their_input_unchanged_and_are_idempotent():
    mod = _symbolic_module()
    text, ids = mod.astext(), [n.id for n in pyir.post_order(mod["main"])]
    out = Sequential([BindShapes({"batch": 5}), DynamicToStatic(), FoldConstant()])(mod)
    assert mod.astext() == text and [n.id for n in pyir.post_order(mod["main"])] == ids
    assert DynamicToStatic()(out) is out and BindShapes({"batch": 5})(out) is out


def test_dynamic_to_static_leaves_symbolic_shapes():
    mod = _symbolic_module()
    assert "dyn.reshape" in DynamicToStatic()(mod).astext()


def test_bind_shapes_options_and_errors():
    assert BindShapes({sym("b"): 1, "a": 2}).bindings == (("a", 2), ("b", 1))
    assert "bindings={'a': 2" in BindShapes({"a": 2}).options()
    for bad in ({"a": -1}, {"a": 1.5}, {"1a": 1}, {3: 1}, [1, 2]):
        with pytest.raises(pyir.PassError):
            BindShapes(bad)
    mod = _symbolic_module()
    assert BindShapes({})(mod) is mod and BindShapes({"other": 3})(mod) is mod
    renamed = BindShapes({"batch": sym("b")})(mod)
    assert renamed["main"].params[0].type_annotation is TensorType((sym("b"), 3, 4))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from(["reshape", "tile", "broadcast"]))
def test_random_bindings_symbolic_equals_specialized(batch, k, kind):
    """Evaluating the symbolic program equals evaluating BindShapes + DynamicToStatic + FoldConstant of it."""
    x = pyir.var("x", shape=("b", 2))
    s = op.shape_of(x)
    if kind == "reshape":
        newshape = op.concatenate([C(np.array([-1], "int64")), C(np.array([2]))], axis=0)
        body = op.dyn.reshape(op.tile(x, reps=(1, k)), newshape)
    elif kind == "tile":
        body = op.dyn.tile(x, op.multiply(C(np.array([1, k], "int64")), op.divide(s, s)))
    else:
        body = op.add(x, op.dyn.broadcast_to(C(np.float32(k)), s))
    mod = pyir.Module({"main": pyir.Function([x], op.nn.relu(body))})
    spec = Sequential([BindShapes({"b": batch}), DynamicToStatic(), FoldConstant()])(mod)
    assert "dyn." not in spec.astext()
    (a,) = pyir.testing.random_inputs(spec)
    np.testing.assert_allclose(pyir.evaluate(mod, a), pyir.evaluate(spec, a))


def test_symbolic_chain_through_the_other_passes_and_queries():
    """A 10^4-deep chain with a symbolic batch (over three times the recursion limit) through the
    passes the other symbolic tests leave out, lineage queries and diff (issue 12: every operation).
    Each of these passes has its 10^6-deep run on the static chain (tests/transform/, deep_chain
    and deep_anf), and symbolic InferType its own (test_deep_symbolic_chain_binding): a symbolic
    batch changes what each node's type holds, not how the passes walk the graph.  (At 10^6 this test
    took ~60 s of CPU, 35 s of them SimplifyExpr, checked at 10^6 by test_simplify_expr.py.)"""
    from pyir import transform as T

    mod = pyir.testing.elementwise_chain(10**4, shape=("batch", 4))
    assert mod["main"].params[0].type_annotation is TensorType((sym("batch"), 4))
    out = Sequential([T.InferType(), T.SimplifyInference(), T.FoldConstant(), T.SimplifyExpr(),
                      T.EliminateCommonSubexpr(), T.DeadCodeElimination(), T.ToANormalForm(),
                      T.ToBasicBlockNormalForm(), T.Inline(), T.ToGraphNormalForm()])(mod)
    assert out["main"].checked_type.ret_type is TensorType((sym("batch"), 4))
    last = out["main"].body
    assert last in out.find(mod["main"].body) and out.origins(last)
    d = pyir.diff(mod, out)
    assert d and d.changed == ["main"] and not d.added and not d.removed


def _symbolic_relu_add_chain(depth):
    """``main(x: (batch, 4))``: ``depth`` alternating relu / add calls, then a dyn.reshape to
    their own shape (the one dynamic call DynamicToStatic makes static once batch is bound)."""
    x = pyir.var("x", shape=("batch", 4))
    one = C(np.ones((1, 4), "float32"))
    h = x
    with pyir.ir.node.gc_paused():
        for i in range(depth):
            h = op.add(h, one) if i % 2 else op.nn.relu(h)
    return pyir.Module({"main": pyir.Function([x], op.dyn.reshape(h, op.shape_of(h)))})


def test_deep_symbolic_chain_binding():
    """The 10^6-deep chain with a symbolic batch through BindShapes and DynamicToStatic, the only
    10^6-deep run of these two, without recursion.  (Symbolic equality has its own 10^6 test;
    InferType with a symbolic batch, the formats, the interpreter, the text, fusion and the other
    passes are checked with a symbolic batch at 10^4 (test_symbolic_chain_text_and_fusion), their
    10^6 runs being the static chain's.)"""
    mod = _symbolic_relu_add_chain(10**6)
    bound = BindShapes({"batch": 2})(mod)
    static = DynamicToStatic()(bound)
    assert static["main"].body.op is pyir.Op("reshape")
    assert static["main"].params[0].type_annotation is TensorType((2, 4))


def test_symbolic_chain_text_and_fusion():
    """A 10^4-deep chain with a symbolic batch (over three times the recursion limit) type-checks
    (every node typed (batch, 4)), prints, parses back, and goes through FuseOps and DefuseOps
    exactly.  The 10^6-deep runs of these operations are the static chain's (test_printer.py,
    test_parser.py, transform/test_fuse_ops.py, transform/test_infer_type.py): a symbolic batch
    changes one parameter's type text and each node's type, not the walks."""
    mod = _symbolic_relu_add_chain(10**4)
    typed = InferType()(mod)
    assert typed.type_of(typed["main"].body.args[0]) is TensorType((sym("batch"), 4))  # (the chain's top)
    text = mod.astext()
    assert text.startswith("def @main(%x: Tensor[(batch, 4), float32])")
    assert pyir.alpha_equal(pyir.parse(text)["main"], mod["main"])
    fused = pyir.transform.FuseOps()(mod)
    assert fused is not mod
    assert pyir.transform.DefuseOps()(fused)["main"] is mod["main"]
