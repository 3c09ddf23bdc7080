"""The ONNX importer on the real architectures of onnx's ``backend/test/data/light`` models.

The light models ship with constant weights (every weight tensor is a
``ConstantOfShape`` of 0.02), which makes every output a uniform softmax: a
comparison on them checks little.  So besides importing the files as they are,
each model is also run with seeded random weights (the ``ConstantOfShape``
weights replaced by random initializers) and compared, on its output and on
its logits (the input of the final Softmax), with onnxruntime (the project's
oracle, one thread, no graph optimizations).  Until session 7 the oracle was
``onnx.reference.ReferenceEvaluator``, with its defects worked around
(BatchNormalization-9 mixing in batch statistics, Softmax < 13 without the 2-D
coercion, LRN summing over the batch axis: onnx/onnx#7805); onnxruntime agrees
with that corrected reference on all nine models within their tolerances and
costs 1/7 to 1/80 of its CPU (inception_v2 19.1 s -> 0.25 s).
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import pytest

import pyir
from pyir.frontend.onnx import FrontendError, from_onnx, onnx_sources, source_table
from pyir.ir.traverse import post_order

onnx = pytest.importorskip("onnx")  # a test dependency: installed in CI, so this never skips there
from onnx import helper, numpy_helper  # noqa: E402

ort = pytest.importorskip("onnxruntime")  # the oracle: in the test extra

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
LIGHT = os.path.join(DATA, "light")
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
          "squeezenet", "vgg19", "zfnet512"]


def light_path(name: str) -> str:
    """Path of a light model file."""
    return os.path.join(LIGHT, f"light_{name}.onnx")


def tolerance(name: str) -> tuple[float, float]:
    """(rtol, atol) of the model's data.json, else (1e-3, 1e-5)."""
    p = os.path.join(DATA, "real", f"test_{name}", "data.json")
    if os.path.exists(p):
        with open(p) as f:
            d = json.load(f)
        return float(d.get("rtol", 1e-3)), float(d.get("atol", 1e-5))
    return 1e-3, 1e-5


def randomized(model: onnx.ModelProto, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """``model`` with every constant ``ConstantOfShape`` weight turned into a graph input, the seeded
    random values to feed them (He-scaled normal for weights of rank >= 2, uniform in [0.5, 1.5] for
    vectors), and the input of the last Softmax (the logits) added as a second graph output."""
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    keep, weights = [], {}
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in inits:
            shape = tuple(int(v) for v in inits[n.input[0]])
            if len(shape) >= 2:
                arr = rng.standard_normal(shape, dtype=np.float32)
                arr *= np.float32(np.sqrt(2.0 / int(np.prod(shape[1:]))))
            else:
                arr = rng.uniform(0.5, 1.5, shape).astype(np.float32)
            weights[n.output[0]] = arr
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    m.graph.input.extend(helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, v.shape)
                         for k, v in weights.items())
    softmax = [n for n in m.graph.node if n.op_type == "Softmax"]
    if softmax:
        m.graph.output.append(helper.make_empty_tensor_value_info(softmax[-1].input[0]))
    return m, weights


def model_input(name: str) -> np.ndarray:
    """The seeded random image fed to a model."""
    return np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)


def data_input_name(m: onnx.ModelProto) -> str:
    """The name of the image input (the first graph input without an initializer)."""
    inits = {t.name for t in m.graph.initializer}
    return next(i.name for i in m.graph.input if i.name not in inits)


@functools.cache
def random_case(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray], list[np.ndarray]]:
    """The randomized model, its weights and onnxruntime's outputs (computed once per session, in memory)."""
    m, weights = randomized(onnx.load(light_path(name)))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    out = sess.run(None, {data_input_name(m): model_input(name), **weights})
    return m, weights, [np.asarray(o) for o in out]


def run_pyir(mod: pyir.Module, name: str, weights: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Evaluate an imported randomized model: the image, then the weights, by parameter name."""
    feed = {"__image__": model_input(name), **weights}
    args = [feed.get(p.name_hint, feed["__image__"]) for p in mod["main"].params]
    return as_list(pyir.evaluate(mod, *args))


def as_list(y: object) -> list[np.ndarray]:
    """Evaluation results as a list of arrays."""
    return list(y) if isinstance(y, (list, tuple)) else [y]  # type: ignore[list-item]


def assert_matches(name: str, got: list[np.ndarray], want: list[np.ndarray]) -> None:
    """Each output equals the reference within the model's tolerance (atol scaled by the magnitude)."""
    rtol, atol = tolerance(name)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=max(atol, 1e-6 * float(np.abs(w).max())))


@pytest.mark.parametrize("name", MODELS)
def test_light_model_imports_with_declared_output_type(name: str) -> None:
    """The file as shipped imports, type-checks to its declared output shape and evaluates to a
    probability vector equal to the reference's."""
    model = onnx.load(light_path(name))
    mod = from_onnx(model)
    out = model.graph.output[0].type.tensor_type
    declared = tuple(d.dim_value for d in out.shape.dim)
    t = mod.type_of(mod["main"].body)
    assert t == pyir.TensorType(declared, "float32")
    assert [p.name_hint for p in mod["main"].params] == [model.graph.input[-1].name] or \
        len(mod["main"].params) == 1
    y = pyir.evaluate(mod, model_input(name))
    assert y.shape == declared and np.isfinite(y).all()
    assert abs(float(y.sum()) - 1.0) < 1e-3 or name == "densenet121"  # densenet121 ends without softmax


@pytest.mark.parametrize("name", MODELS)
def test_light_model_random_weights_match_reference(name: str) -> None:
    """With seeded random weights, pyir.evaluate equals onnxruntime on the output and the logits."""
    m, weights, want = random_case(name)
    mod = from_onnx(m)
    assert len(mod["main"].params) == 1 + len(weights)
    assert_matches(name, run_pyir(mod, name, weights), want)


# -- the standard pipeline --------------------------------------------------------------------------

_PIPELINE = [("simplify_inference", "SimplifyInference"), ("fold_constant", "FoldConstant"),
             ("simplify_expr", "SimplifyExpr"), ("fuse_ops", "FuseOps"),
             ("to_a_normal_form", "ToANormalForm"), ("to_graph_normal_form", "ToGraphNormalForm"),
             ("dead_code_elimination", "DeadCodeElimination")]


def standard_pipeline() -> list[object]:
    """The standard passes, in order (each imported from its module)."""
    import importlib

    return [getattr(importlib.import_module(f"pyir.transform.{m}"), c)() for m, c in _PIPELINE]


def run_pipeline(mod: pyir.Module) -> pyir.Module:
    """``mod`` through the standard pipeline."""
    from pyir.transform.base import Sequential

    return Sequential(standard_pipeline())(mod)  # type: ignore[arg-type]


def fused_calls(mod: pyir.Module) -> list[pyir.Call]:
    """The calls of primitive (fused) functions in ``main``."""
    return [n for n in post_order(mod["main"]) if isinstance(n, pyir.Call)
            and isinstance(n.op, pyir.Function) and n.op.attrs.get("Primitive")]


@pytest.mark.parametrize("name", MODELS)
def test_light_model_after_pipeline_matches_reference(name: str) -> None:
    """After the standard pipeline (and after DefuseOps), the model still equals onnxruntime."""
    from pyir.transform.defuse_ops import DefuseOps

    m, weights, want = random_case(name)
    mod = from_onnx(m)
    text = mod.astext()
    fused = run_pipeline(mod)
    assert mod.astext() == text  # the input module is untouched
    assert fused_calls(fused)
    assert_matches(name, run_pyir(fused, name, weights), want)
    assert_matches(name, run_pyir(DefuseOps()(fused), name, weights), want)


# -- lineage ------------------------------------------------------------------------------------------

_NOT_COMPUTE = {"Constant", "ConstantOfShape", "Shape"}


def test_resnet50_fused_groups_map_back_to_onnx_nodes() -> None:
    """After FuseOps on ResNet-50 each fused call maps to ONNX nodes, and together they cover every
    compute node of the model."""
    model = onnx.load(light_path("resnet50"))
    mod = from_onnx(model)
    assert mod.pass_records[0].name == "from_onnx"
    fused = run_pipeline(mod)
    covered: set[tuple[str, str]] = set()
    calls = fused_calls(fused)
    assert len(calls) > 50
    for c in calls:
        src = onnx_sources(fused, c)
        assert src, f"fused call {c!r} has no ONNX origin"
        covered |= src
    compute = {(n.name or n.output[0], n.op_type) for n in model.graph.node if n.op_type not in _NOT_COMPUTE}
    assert compute - covered == set()
    assert {op for _, op in covered} >= {"Conv", "BatchNormalization", "Relu", "Sum", "Gemm", "Softmax"}


def test_every_imported_node_has_a_source() -> None:
    """Every expression node of an imported module is in the from_onnx sources table."""
    mod = from_onnx(light_path("squeezenet"))
    table = source_table(mod)
    nodes = [n for n in post_order(mod["main"]) if not isinstance(n, (pyir.Op, pyir.Function))]
    assert nodes and all(n.id in table for n in nodes)
    conv = next(n for n in nodes if isinstance(n, pyir.Call) and n.op.name == "nn.conv2d")
    assert onnx_sources(mod, conv) == {(conv_name(mod, conv), "Conv")}


def conv_name(mod: pyir.Module, call: pyir.Call) -> str:
    """The ONNX node name recorded for ``call``."""
    return source_table(mod)[call.id][0]  # type: ignore[no-any-return]


def test_weights_as_params() -> None:
    """weights="params" makes each initializer used as data a parameter and returns its values."""
    m, weights, want = random_case("squeezenet")
    folded = onnx.ModelProto()
    folded.CopyFrom(m)
    for k, v in weights.items():  # make the weights initializers again
        folded.graph.initializer.append(numpy_helper.from_array(v, k))
    mod, params = from_onnx(folded, weights="params")
    names = [p.name_hint for p in mod["main"].params]
    data_inits = {t.name for t in m.graph.initializer if not t.name.endswith("__SHAPE")}
    assert names[0] == data_input_name(m) and set(names[1:]) == set(weights) | data_inits == set(params)
    y = as_list(pyir.evaluate(mod, model_input("squeezenet"), *[params[n] for n in names[1:]]))
    assert_matches("squeezenet", y, want)
    const_mod = from_onnx(folded)
    assert len(const_mod["main"].params) == 1


def test_light_models_are_deterministic() -> None:
    """Importing the same file twice yields the same program (fresh input variables, same text)."""
    assert from_onnx(light_path("shufflenet")).astext() == from_onnx(light_path("shufflenet")).astext()


def test_bad_inputs_raise_frontend_error() -> None:
    """A missing file, a wrong object and a bad weights mode raise FrontendError."""
    with pytest.raises(FrontendError, match="cannot load"):
        from_onnx("/nonexistent/model.onnx")
    with pytest.raises(FrontendError, match="ModelProto"):
        from_onnx(42)
    with pytest.raises(FrontendError, match="weights"):
        from_onnx(light_path("squeezenet"), weights="nope")
