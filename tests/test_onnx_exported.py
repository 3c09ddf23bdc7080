"""Models as PyTorch and Hugging Face export them today, checked against onnxruntime.

``tests/models/`` holds small configurations of the model families of issue 13 (CNNs with
HardSwish and squeeze-excitation, a ConvNeXt block, a segmentation head with Resize, ViT, Swin,
BERT / DistilBERT / GPT-2 with sdpa and eager attention, the T5 and Whisper encoders), each
exported by torch's default exporter (dynamo, opset 18) and by the legacy one (opset 17) with
``tools/export_models.py``.  Their large float initializers are stored without data: each is
regenerated here from the seed and statistics the file records (``pyir.stripped``), so the
suite needs no torch and the files stay small.

Each case imports, evaluates equal to onnxruntime (relative error <= 1e-4: the largest
difference over the largest magnitude of the output), runs through the standard pipeline,
evaluates equal again, and keeps lineage complete: every Call of the result traces back to
ONNX nodes (``onnx_sources``), and every ONNX node that contributes to an output is found again,
backward (it is among the sources of the result) and forward (``find`` of what it was imported as).
A case that cannot import yet is an ``xfail(strict=True)`` naming what blocks it, so it fails
the moment the missing operator lands and the mark must be removed.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import numpy as np
import pytest

import pyir
from pyir.frontend.onnx import from_onnx, onnx_sources
from pyir.ir.traverse import post_order

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")  # the oracle: in the test extra
from onnx import numpy_helper  # noqa: E402

HERE = os.path.join(os.path.dirname(__file__), "models")
with open(os.path.join(HERE, "MANIFEST.json")) as _f:
    MANIFEST = json.load(_f)
CASES = sorted(MANIFEST["cases"])
RTOL = 1e-4

# What blocks each case (an xfail, strict: a case that starts passing fails until its entry is
# removed). None today: every exported case imports, matches onnxruntime and keeps its lineage.
BLOCKED: dict[str, str] = {}


def regenerate(entry: dict[str, Any]) -> np.ndarray:
    """A stripped initializer's values: normal(mean, std) from its seed, clipped to [min, max]
    (the rule of tools/export_models.py)."""
    rng = np.random.default_rng(int(entry["seed"]))
    shape = tuple(int(d) for d in entry["shape"])
    x = rng.standard_normal(shape) * float(entry["std"]) + float(entry["mean"])
    x = np.clip(x, float(entry["min"]), float(entry["max"]))
    return x.astype(entry["dtype"])


def _meta(model: Any, key: str) -> Any:
    return json.loads(next(p.value for p in model.metadata_props if p.key == key))


@functools.cache
def load_case(key: str) -> tuple[bytes, tuple[tuple[str, np.ndarray], ...]]:
    """The case's model with its weights regenerated (serialized), and its seeded inputs."""
    model = onnx.load(os.path.join(HERE, MANIFEST["cases"][key]["file"]))
    entries = {e["name"]: e for e in _meta(model, "pyir.stripped")}
    for t in model.graph.initializer:
        e = entries.pop(t.name, None)
        if e is not None:
            t.CopyFrom(numpy_helper.from_array(regenerate(e), t.name))
    assert not entries, f"stripped initializers missing from the graph: {sorted(entries)}"
    rng = np.random.default_rng(7)
    inputs = []
    spec = _meta(model, "pyir.inputs")
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        shape = tuple(d.dim_value for d in tt.shape.dim)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        how = spec[vi.name]
        if how["kind"] == "normal":
            x = rng.standard_normal(shape).astype(dtype)
        elif how["kind"] == "int":
            x = rng.integers(0, how["high"], shape).astype(dtype)
        elif how["kind"] == "ones":
            x = np.ones(shape, dtype)
        else:
            x = np.zeros(shape, dtype)
        inputs.append((vi.name, x))
    return model.SerializeToString(), tuple(inputs)


@functools.cache
def reference(key: str) -> tuple[np.ndarray, ...]:
    """onnxruntime's outputs on the case's inputs (one thread, no graph optimizations that
    change numerics beyond float rounding)."""
    data, inputs = load_case(key)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    return tuple(np.asarray(o) for o in sess.run(None, dict(inputs)))


def as_list(y: Any) -> list[np.ndarray]:
    """Evaluation results as a list."""
    return list(y) if isinstance(y, (list, tuple)) else [y]


def assert_close(got: list[np.ndarray], want: tuple[np.ndarray, ...], what: str) -> None:
    """Same dtypes and shapes, and the largest difference within RTOL of the largest magnitude."""
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
        scale = max(float(np.abs(w).max()), 1e-6) if w.size else 1.0
        err = float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) / scale if w.size else 0.0
        assert err <= RTOL, f"{what}: relative error {err:.3g} > {RTOL}"


def standard_pipeline() -> Any:
    """The standard passes of the README's ONNX section, in order."""
    return pyir.transform.standard_pipeline()


def live_nodes(model: Any) -> list[tuple[str, str]]:
    """The ONNX compute nodes, as (name, op type): those whose outputs depend on a graph input and
    that some graph output depends on (nodes computed from constants and static shapes alone are
    folded at import)."""
    inits = {t.name for t in model.graph.initializer}
    dynamic = {i.name for i in model.graph.input if i.name not in inits}
    for n in model.graph.node:  # topological order
        if n.op_type not in ("Shape", "Size") and any(i in dynamic for i in n.input):
            dynamic.update(o for o in n.output if o)
    producer = {o: n for n in model.graph.node for o in n.output if o}
    need = [o.name for o in model.graph.output]
    seen: set[str] = set()
    live = []
    while need:
        v = need.pop()
        if v in seen or v not in dynamic:
            continue
        seen.add(v)
        n = producer.get(v)
        if n is None:
            continue
        label = (n.name or n.output[0], n.op_type)
        if label not in live:
            live.append(label)
        need.extend(i for i in n.input if i)
    return live


def check_lineage(model: Any, mod: pyir.Module) -> None:
    """Every Call of ``mod`` (fused bodies included) comes from ONNX nodes, and every live ONNX node
    is the source of some expression of ``mod``."""
    covered: set[tuple[str, str]] = set()
    orphans = []
    for n in post_order(mod["main"]):
        if isinstance(n, (pyir.Op, pyir.Function)):
            continue
        src = onnx_sources(mod, n)
        covered |= src
        if isinstance(n, pyir.Call) and not src:
            orphans.append(n)
    assert not orphans, f"{len(orphans)} call(s) without an ONNX origin, e.g. {orphans[0]!r}"
    lost = [x for x in live_nodes(model) if x not in covered]
    assert not lost, f"{len(lost)} ONNX node(s) not found again: {lost[:5]}"


def check_found_again(model: Any, mod: pyir.Module, out: pyir.Module) -> None:
    """Forward: for every live ONNX node, some expression the import made of it is found by
    ``out.find`` (the pipeline's result still holds what it became)."""
    from pyir.frontend.onnx import _pairs, source_table

    table = source_table(mod)
    made: dict[tuple[str, str], list[Any]] = {}
    for n in post_order(mod["main"]):
        v = table.get(n.id)
        if v is not None and not isinstance(n, (pyir.Op, pyir.Function)):
            for label in _pairs(v):
                made.setdefault(label, []).append(n)
    lost = [x for x in live_nodes(model) if not any(out.find(n) for n in made.get(x, ()))]
    assert not lost, f"{len(lost)} ONNX node(s) whose expressions find() no longer finds: {lost[:5]}"


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.xfail(reason=BLOCKED[k], strict=True))
                                 if k in BLOCKED else k for k in CASES])
def test_exported_model_matches_onnxruntime(key: str) -> None:
    """Import, evaluate against onnxruntime, the standard pipeline, again, and lineage."""
    data, inputs = load_case(key)
    model = onnx.load_model_from_string(data)
    want = reference(key)
    mod = from_onnx(model)
    args = [x for _, x in inputs]
    assert [p.name_hint for p in mod["main"].params] == [n for n, _ in inputs]
    assert_close(as_list(pyir.evaluate(mod, *args)), want, f"{key} imported")
    check_lineage(model, mod)
    text = mod.astext()
    out = standard_pipeline()(mod)
    assert mod.astext() == text  # the input module is untouched
    assert any(isinstance(n, pyir.Function) and n.attrs.get("Primitive") for n in post_order(out["main"]))
    assert_close(as_list(pyir.evaluate(out, *args)), want, f"{key} after the pipeline")
    check_lineage(model, out)
    check_found_again(model, mod, out)


def test_manifest_lists_every_file() -> None:
    """Every model file is a case of the manifest and the other way round; the data stays small."""
    files = sorted(f for f in os.listdir(HERE) if f.endswith(".onnx"))
    assert files == sorted(c["file"] for c in MANIFEST["cases"].values())
    assert sum(os.path.getsize(os.path.join(HERE, f)) for f in files) < 4 * 2**20
    families = {k.split(".")[0] for k in CASES}
    assert {"resnet_ish", "mobilenet_v3_ish", "convnext_ish", "segmentation_head", "vit_sdpa", "vit_eager",
            "swin", "bert_sdpa", "bert_eager", "distilbert_sdpa", "gpt2_eager", "t5_encoder",
            "whisper_encoder"} <= families
    assert {k.split(".")[1] for k in CASES} == {"dynamo", "legacy"}


def test_regenerated_weights_are_seeded_and_shaped() -> None:
    """The stripped initializers come back with their recorded shape and dtype, the same every time."""
    data, _ = load_case("resnet_ish.legacy")
    model = onnx.load_model_from_string(data)
    entries = _meta(model, "pyir.stripped")
    assert entries
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for e in entries:
        a = inits[e["name"]]
        assert list(a.shape) == e["shape"] and a.dtype.name == e["dtype"]
        np.testing.assert_array_equal(a, regenerate(e))
        assert e["min"] <= float(a.min()) and float(a.max()) <= e["max"]
    stored = onnx.load(os.path.join(HERE, MANIFEST["cases"]["resnet_ish.legacy"]["file"]))
    stripped = {e["name"] for e in entries}
    assert all(not t.raw_data for t in stored.graph.initializer if t.name in stripped)


# -- import memory: initializers' bytes are shared, not copied ----------------------------------------


def _matmul_model(weights: list[np.ndarray], as_raw: bool = True) -> Any:
    """x @ w0 @ w1 ... with the weights as initializers (raw_data, or the typed float_data field)."""
    from onnx import TensorProto, helper

    nodes, inits, prev = [], [], "x"
    for i, w in enumerate(weights):
        t = numpy_helper.from_array(w, f"w{i}")
        if not as_raw:
            t = helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.reshape(-1).tolist())
        inits.append(t)
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
    n = weights[0].shape[0]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, n))],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, (1, weights[-1].shape[1]))],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_import_keeps_one_copy_of_the_weights() -> None:
    """Importing a model whose weights are raw_data allocates them once (the Constants keep the bytes
    read from the file: no second copy), and the constants are the ones the constructor builds."""
    import tracemalloc

    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((512, 512)).astype(np.float32) for _ in range(8)]  # 8 MB
    model = _matmul_model(weights)
    total = sum(w.nbytes for w in weights)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        mod = from_onnx(model)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 1.4 * total, f"import peaked at {peak / total:.2f}x the weights"
    consts = [n for n in post_order(mod["main"]) if isinstance(n, pyir.Constant)]
    assert len(consts) == len(weights)
    for c in consts:
        assert not c.data.flags.writeable
        w = next(w for w in weights if np.array_equal(w, c.data))
        assert pyir.Constant(w) is c
    x = rng.standard_normal((1, 512)).astype(np.float32)
    want = x
    for w in weights:
        want = want @ w
    np.testing.assert_allclose(pyir.evaluate(mod, x), want, rtol=1e-4, atol=1e-3)


def test_initializer_encodings_import_alike() -> None:
    """Typed-field initializers import to the very constants raw_data ones do; raw data of the wrong
    size is a FrontendError naming the initializer."""
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal((4, 3)).astype(np.float32)]
    raw, typed = from_onnx(_matmul_model(weights)), from_onnx(_matmul_model(weights, as_raw=False))
    assert raw["main"].body.args[1] is typed["main"].body.args[1]
    bad = _matmul_model(weights)
    bad.graph.initializer[0].raw_data = bad.graph.initializer[0].raw_data[:-4]
    with pytest.raises(pyir.errors.FrontendError, match=r"initializer 'w0'.*44 bytes"):
        from_onnx(bad)


def test_external_data_is_read_straight_into_the_constants(tmp_path: Any) -> None:
    """A model saved with external data imports from its path to the very constants of the inline
    model (the importer reads each tensor's bytes itself: the proto never holds the weights, and
    tracemalloc sees one copy); a missing data file is a FrontendError naming the initializer."""
    import tracemalloc

    rng = np.random.default_rng(2)
    weights = [rng.standard_normal((256, 256)).astype(np.float32) for _ in range(4)]
    model = _matmul_model(weights)
    inline = from_onnx(model)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="m.data",
              size_threshold=0)
    assert os.path.getsize(path) < 4096
    tracemalloc.start()
    try:
        mod = from_onnx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.4 * sum(w.nbytes for w in weights)
    assert mod["main"].body.args[1] is inline["main"].body.args[1]
    assert mod.astext().split("#[metadata]")[1] == inline.astext().split("#[metadata]")[1]
    os.remove(tmp_path / "m.data")
    with pytest.raises(pyir.errors.FrontendError, match="initializer 'w0'"):
        from_onnx(path)
