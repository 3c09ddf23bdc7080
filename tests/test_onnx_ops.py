"""The ONNX importer operator by operator: onnx's PyTorch-exported backend tests (stored inputs and
outputs) and small hand-built models compared with ``onnx.reference`` (opsets where it is right)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import pyir
from pyir.frontend.onnx import FrontendError, from_onnx

onnx = pytest.importorskip("onnx")  # a test dependency: installed in CI, so this never skips there
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
PYTORCH_DIRS = sorted(glob.glob(os.path.join(DATA, "pytorch-converted", "*", ""))
                      + glob.glob(os.path.join(DATA, "pytorch-operator", "*", "")))
# Every one of the 117 tests is supported; the count may only go up.
MIN_SUPPORTED = 117


def _pb(path: str) -> np.ndarray:
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def _run_pytorch_test(d: str) -> str | None:
    """None if the stored inputs give the stored outputs through pyir, else the reason."""
    ins = [_pb(p) for p in sorted(glob.glob(os.path.join(d, "test_data_set_0", "input_*.pb")))]
    outs = [_pb(p) for p in sorted(glob.glob(os.path.join(d, "test_data_set_0", "output_*.pb")))]
    try:
        mod = from_onnx(os.path.join(d, "model.onnx"))
    except FrontendError as e:
        return f"unsupported: {e}"
    with np.errstate(all="ignore"):
        y = pyir.evaluate(mod, *ins[:len(mod["main"].params)])
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    if len(ys) != len(outs):
        return f"{len(ys)} outputs, expected {len(outs)}"
    for g, w in zip(ys, outs):
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-5, equal_nan=True):
            return f"mismatch: shape {g.shape} vs {w.shape}"
    return None


def test_pytorch_backend_tests() -> None:
    """The stored inputs of onnx's pytorch-converted and pytorch-operator tests give the stored outputs;
    unsupported ones are listed with their reasons, and their number may not grow."""
    assert len(PYTORCH_DIRS) == 117
    failures = {}
    for d in PYTORCH_DIRS:
        reason = _run_pytorch_test(d)
        if reason is not None:
            failures["/".join(d.rstrip(os.sep).split(os.sep)[-2:])] = reason
    supported = len(PYTORCH_DIRS) - len(failures)
    print(f"\nONNX pytorch backend tests: {supported}/{len(PYTORCH_DIRS)} supported")
    for name, reason in sorted(failures.items()):
        print(f"  not supported: {name}: {reason}")
    assert not [r for r in failures.values() if not r.startswith("unsupported")], failures
    assert supported >= MIN_SUPPORTED, failures


# -- hand-built single-node models ----------------------------------------------------------------

_ONNX_TYPES = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int64"): TensorProto.INT64,
               np.dtype("bool"): TensorProto.BOOL}


def make_model(nodes: list, inputs: dict[str, np.ndarray], outputs: list[str], opset: int = 13,
               inits: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """A one-graph model with the given nodes, typed inputs, untyped outputs and initializers."""
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, _ONNX_TYPES[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def check(nodes: list, inputs: dict[str, np.ndarray], outputs: list[str] | None = None, opset: int = 13,
          inits: dict[str, np.ndarray] | None = None, expected: list[np.ndarray] | None = None) -> None:
    """pyir on the model equals onnx.reference (or ``expected``)."""
    outputs = outputs or [nodes[-1].output[0]]
    m = make_model(nodes, inputs, outputs, opset, inits)
    want = expected if expected is not None else ReferenceEvaluator(m).run(None, inputs)
    got = pyir.evaluate(from_onnx(m), *inputs.values())
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def rnd(*shape: int, seed: int = 0) -> np.ndarray:
    """Seeded standard-normal float32 data."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


N = helper.make_node


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_conv_auto_pad_strides_dilations_groups(auto_pad: str, rank: int) -> None:
    """Conv of rank 1, 2 and 3 with every auto_pad mode, strides, dilations, groups and a bias."""
    sp = (7, 6, 5)[:rank]
    kw = {"strides": [2] * rank, "group": 2}
    if auto_pad == "NOTSET":
        kw["pads"] = [1] * rank + [2] * rank
        kw["dilations"] = [2] * rank
    else:
        kw["auto_pad"] = auto_pad
    check([N("Conv", ["x", "w", "b"], ["y"], **kw)],
          {"x": rnd(2, 4, *sp), "w": rnd(6, 2, *([3] * rank), seed=1), "b": rnd(6, seed=2)})


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("variant", ["pads", "same", "ceil", "include_pad"])
def test_pooling(op_type: str, rank: int, variant: str) -> None:
    """Max and average pooling of rank 1, 2 and 3 with pads, SAME padding, ceil_mode, count_include_pad."""
    kw: dict = {"kernel_shape": [3] * rank, "strides": [2] * rank}
    if variant == "same":
        kw["auto_pad"] = "SAME_UPPER"
    else:
        kw["pads"] = [1] * rank + [0] * rank
    if variant == "ceil":
        kw["ceil_mode"] = 1
    if variant == "include_pad":
        if op_type == "MaxPool":
            kw["dilations"] = [2] * rank
        else:
            kw["count_include_pad"] = 1
    check([N(op_type, ["x"], ["y"], **kw)], {"x": rnd(1, 2, *(8, 7, 6)[:rank])}, opset=19)


def conv_transpose_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, strides: list, pads: list,
                       output_padding: list, group: int, dil: list) -> np.ndarray:
    """ConvTranspose by its definition: scatter every input pixel times the kernel, then crop."""
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dil
    fh = (h - 1) * sh + (kh - 1) * dh + 1 + output_padding[0]
    fw = (wd - 1) * sw + (kw - 1) * dw + 1 + output_padding[1]
    y = np.zeros((n, cog * group, fh, fw), np.float64)
    cg = cin // group
    for g in range(group):
        for i in range(h):
            for j in range(wd):
                for ki in range(kh):
                    for kj in range(kw):
                        contrib = np.einsum("nc,co->no", x[:, g * cg:(g + 1) * cg, i, j],
                                            w[g * cg:(g + 1) * cg, :, ki, kj])
                        y[:, g * cog:(g + 1) * cog, i * sh + ki * dh, j * sw + kj * dw] += contrib
    y = y[:, :, pads[0]:fh - pads[2], pads[1]:fw - pads[3]]
    return (y + b[None, :, None, None]).astype(np.float32)


@pytest.mark.parametrize("kw", [
    {"strides": [2, 2]},
    {"strides": [2, 3], "pads": [1, 0, 1, 1], "output_padding": [1, 0]},
    {"strides": [1, 2], "dilations": [2, 1]},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
])
def test_conv_transpose(kw: dict) -> None:
    """ConvTranspose (composed from zero insertion, padding and conv2d) with strides, pads,
    output_padding, dilations and auto_pad, against onnx.reference."""
    check([N("ConvTranspose", ["x", "w", "b"], ["y"], **kw)],
          {"x": rnd(1, 4, 5, 4), "w": rnd(4, 3, 3, 3, seed=1), "b": rnd(3, seed=2)})


def test_conv_transpose_groups_and_output_shape() -> None:
    """ConvTranspose with groups, and with output_shape (pads derived, the start taking the larger half),
    against the definition (onnx.reference 1.23 fails on both)."""
    x, w, b = rnd(1, 4, 5, 4), rnd(4, 3, 3, 3, seed=1), rnd(6, seed=2)
    want = conv_transpose_ref(x, w, b, [2, 2], [0, 0, 0, 0], [0, 0], 2, [1, 1])
    check([N("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], group=2)],
          {"x": x, "w": w, "b": b}, expected=[want])
    # full output 11 x 9; output_shape 10 x 8 -> total padding 1 each way, at the start
    want = conv_transpose_ref(x, w, b[:3], [2, 2], [1, 1, 0, 0], [0, 0], 1, [1, 1])
    check([N("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], output_shape=[10, 8])],
          {"x": x, "w": w, "b": b[:3]}, expected=[want])
    want = conv_transpose_ref(x, w, b[:3], [2, 2], [0, 0, 0, 0], [0, 0], 1, [2, 2])
    check([N("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], dilations=[2, 2])],
          {"x": x, "w": w, "b": b[:3]}, expected=[want])


@pytest.mark.parametrize("kw", [{}, {"transA": 1}, {"transB": 1, "alpha": 0.5, "beta": 2.0}])
def test_gemm(kw: dict) -> None:
    """Gemm with transposes, alpha and beta, and a 2-D C."""
    a = rnd(3, 4) if not kw.get("transA") else rnd(4, 3)
    b = rnd(4, 5, seed=1) if not kw.get("transB") else rnd(5, 4, seed=1)
    check([N("Gemm", ["a", "b", "c"], ["y"], **kw)], {"a": a, "b": b, "c": rnd(3, 5, seed=2)})


def test_shape_subgraph_folds_into_static_reshape() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (an exporter's flatten) folds to one reshape."""
    nodes = [N("Shape", ["x"], ["s"]), N("Gather", ["s", "zero"], ["n"], axis=0),
             N("Unsqueeze", ["n", "ax"], ["n1"]), N("Concat", ["n1", "minus1"], ["shape"], axis=0),
             N("Reshape", ["x", "shape"], ["y"])]
    inits = {"zero": np.array(0, np.int64), "ax": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    m = make_model(nodes, {"x": rnd(2, 3, 4)}, ["y"], inits=inits)
    mod = from_onnx(m)
    body = mod["main"].body
    assert body.op.name == "reshape" and body.attrs["newshape"] == (2, 12)
    assert isinstance(body.args[0], pyir.Var)
    check(nodes, {"x": rnd(2, 3, 4)}, inits=inits)


def test_reshape_zero_and_minus_one_and_flatten() -> None:
    """Reshape with 0 and -1 entries, and Flatten at axes 0 and 2."""
    inits = {"s": np.array([0, -1, 2], np.int64)}
    check([N("Reshape", ["x", "s"], ["y"])], {"x": rnd(2, 3, 4)}, inits=inits)
    check([N("Flatten", ["x"], ["y"], axis=0)], {"x": rnd(2, 3, 4)})
    check([N("Flatten", ["x"], ["y"], axis=2)], {"x": rnd(2, 3, 4)})


def test_softmax_opset_semantics() -> None:
    """Softmax < 13 normalizes over the input coerced to 2-D at axis; 13 over the axis alone."""
    x = rnd(2, 3, 4)
    flat = x.reshape(2, 12)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    coerced = (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4)
    check([N("Softmax", ["x"], ["y"], axis=1)], {"x": x}, opset=11, expected=[coerced])
    check([N("Softmax", ["x"], ["y"], axis=1)], {"x": x}, opset=13)
    check([N("LogSoftmax", ["x"], ["y"])], {"x": x}, opset=13)


def test_layout_and_indexing_ops() -> None:
    """Unsqueeze/Squeeze/Slice/Gather/Expand/Tile/Split/Pad/Transpose/Concat at opset 13."""
    x = rnd(2, 3, 4)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    check([N("Unsqueeze", ["x", "a"], ["y"])], {"x": x}, inits={"a": i64(0, -1)})
    check([N("Squeeze", ["x", "a"], ["y"])], {"x": rnd(2, 1, 4)}, inits={"a": i64(1)})
    check([N("Slice", ["x", "s", "e", "a", "st"], ["y"])], {"x": x},
          inits={"s": i64(-1, 0), "e": i64(-1000, 10), "a": i64(2, 1), "st": i64(-2, 2)})
    check([N("Gather", ["x", "i"], ["y"], axis=1)], {"x": x}, inits={"i": i64(-1, 0, 2)})
    check([N("Gather", ["x", "i"], ["y"], axis=2)], {"x": x, "i": i64(3, -4)})
    check([N("Expand", ["x", "s"], ["y"])], {"x": rnd(3, 1)}, inits={"s": i64(2, 3, 4)})
    check([N("Tile", ["x", "r"], ["y"])], {"x": x}, inits={"r": i64(1, 2, 3)})
    check([N("Split", ["x", "s"], ["a", "b"], axis=2)], {"x": x}, ["a", "b"], inits={"s": i64(1, 3)})
    check([N("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": x}, inits={"p": i64(0, 1, 2, 0, 1, 1)})
    check([N("Transpose", ["x"], ["y"], perm=[2, 0, 1]), N("Concat", ["y", "y"], ["z"], axis=-1)], {"x": x})


def test_elementwise_and_reductions() -> None:
    """Activations, variadic ops, Where/Cast/Clip and reductions at opset 13."""
    x, y = rnd(2, 3, 4), rnd(3, 4, seed=1)
    check([N("Elu", ["x"], ["o"], alpha=0.5)], {"x": x})
    check([N("Selu", ["x"], ["o"])], {"x": x})
    check([N("HardSigmoid", ["x"], ["o"])], {"x": x})
    check([N("Softplus", ["x"], ["o"])], {"x": x})
    check([N("PRelu", ["x", "s"], ["o"])], {"x": x, "s": y})
    check([N("Mean", ["x", "y", "x"], ["o"])], {"x": x, "y": y})
    check([N("Max", ["x", "y"], ["o"]), N("Min", ["o", "x"], ["p"])], {"x": x, "y": y})
    check([N("Greater", ["x", "y"], ["c"]), N("Where", ["c", "x", "y"], ["o"])], {"x": x, "y": y})
    check([N("Cast", ["x"], ["o"], to=TensorProto.INT64)], {"x": x * 10})
    check([N("Clip", ["x", "lo", "hi"], ["o"])], {"x": x},
          inits={"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)})
    check([N("ReduceMean", ["x"], ["o"], axes=[1, -1], keepdims=0)], {"x": x})
    check([N("ReduceSum", ["x", "a"], ["o"])], {"x": x}, inits={"a": np.array([0], np.int64)})
    check([N("ReduceMax", ["x"], ["o"], keepdims=1)], {"x": x})
    check([N("ArgMax", ["x"], ["o"], axis=1)], {"x": x})
    check([N("MatMul", ["x", "w"], ["o"])], {"x": x, "w": rnd(4, 5, seed=3)})
    check([N("InstanceNormalization", ["x", "s", "b"], ["o"])], {"x": rnd(2, 3, 4, 5)},
          inits={"s": rnd(3, seed=4), "b": rnd(3, seed=5)})
    check([N("GlobalAveragePool", ["x"], ["o"])], {"x": rnd(2, 3, 4, 5, 2)})
    check([N("Dropout", ["x", "r"], ["o"])], {"x": x}, inits={"r": np.array(0.3, np.float32)})


def test_batch_norm_opset_9_is_inference() -> None:
    """BatchNormalization with one output is inference: it normalizes with the given statistics."""
    x, s, b, mu = rnd(2, 3, 4, 4), rnd(3, seed=1), rnd(3, seed=2), rnd(3, seed=3)
    v = np.full(3, 2.0, np.float32)
    want = (x - mu[:, None, None]) / np.sqrt(v[:, None, None] + 1e-3) * s[:, None, None] + b[:, None, None]
    check([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)], {"x": x}, opset=9,
          inits={"s": s, "b": b, "m": mu, "v": v}, expected=[want])


# -- errors --------------------------------------------------------------------------------------------


def test_unsupported_operator_names_op_and_node() -> None:
    """An unsupported operator raises FrontendError naming the op type and the node."""
    m = make_model([N("NoSuchOperator", ["x", "x"], ["y"], name="my_node")], {"x": rnd(2, 3)}, ["y"])
    with pytest.raises(FrontendError, match=r"my_node.*NoSuchOperator"):
        from_onnx(m)


def test_unsupported_attribute_is_an_error() -> None:
    """An attribute the converter does not handle raises FrontendError naming it (nothing is ignored)."""
    m = make_model([N("Relu", ["x"], ["y"], frobnicate=1)], {"x": rnd(2)}, ["y"])
    with pytest.raises(FrontendError, match=r"frobnicate.*|.*frobnicate"):
        from_onnx(m)
    m = make_model([N("MaxPool", ["x"], ["y", "i"], kernel_shape=[2])], {"x": rnd(1, 1, 4)}, ["y", "i"])
    with pytest.raises(FrontendError, match="Indices"):  # (2-D Indices: tests/test_onnx_dyn.py)
        from_onnx(m)


def test_dynamic_input_shape_needs_shapes() -> None:
    """A named dynamic input dimension becomes the symbol of its name unless ``shapes`` gives it
    (tests/test_onnx_dyn.py tests ``dims=`` and unnamed dimensions)."""
    g = helper.make_graph([N("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                          [helper.make_empty_tensor_value_info("y")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    assert from_onnx(m)["main"].params[0].type_annotation == pyir.TensorType((pyir.sym("batch"), 3))
    mod = from_onnx(m, shapes={"x": (5, 3)})
    assert mod["main"].params[0].type_annotation == pyir.TensorType((5, 3))


def test_import_pyir_without_onnx() -> None:
    """``import pyir`` works without onnx; from_onnx then raises FrontendError with the install hint."""
    code = ("import sys; sys.modules['onnx'] = None\n"
            "import pyir\nfrom pyir.frontend import from_onnx, FrontendError\n"
            "try:\n    from_onnx('m.onnx')\nexcept FrontendError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert 'pip install "pyir[onnx]"' in out.stdout
