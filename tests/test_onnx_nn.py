"""The ONNX neural-network operators of issue 13 (attention, rotary embeddings, normalizations,
activations, losses, LpPool, RNN / GRU / LSTM): each import is compared with ``onnx.reference``
(or onnxruntime where the reference ignores an input), becomes the intended pyir operator, types
symbolic shapes, reports bad shapes by node and shape, prints and parses back, and survives the
standard passes unchanged in value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyir
from pyir import op, sym
from pyir.analysis.interp import evaluate
from pyir.errors import AttrError, TypeCheckError
from pyir.frontend.onnx import FrontendError, from_onnx
from pyir.ir.traverse import post_order
from pyir.op import nn
from pyir.testing import check_pass

onnx = pytest.importorskip("onnx")  # a test dependency
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

F32 = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def _model(op_type: str, inputs: list[tuple[str, np.ndarray]], n_out: int = 1, opset: int = 22,
           out_names: list[str] | None = None, out_type: int = F32, **attrs: Any) -> Any:
    """A one-node model; an input whose name starts with ``c_`` is an initializer (a constant)."""
    outs = out_names or [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, [n for n, _ in inputs], outs, name="the_node", **attrs)
    g_in, inits = [], []
    for name, arr in inputs:
        if name == "":
            continue
        if name.startswith("c_"):
            inits.append(onnx.numpy_helper.from_array(arr, name))
        else:
            g_in.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                                      arr.shape))
    g_out = [helper.make_tensor_value_info(o, out_type, None) for o in outs if o]
    graph = helper.make_graph([node], "g", g_in, g_out, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model: Any, inputs: list[tuple[str, np.ndarray]], pyir_op: str | None, rtol: float = 1e-4,
           atol: float = 1e-5) -> Any:
    """Import, evaluate on the graph inputs and compare every output with onnx.reference; the
    module must call ``pyir_op``.  Returns the module."""
    mod = from_onnx(model)
    feeds = {n: a for n, a in inputs if n and not n.startswith("c_")}
    want = ReferenceEvaluator(model).run(None, feeds)
    got = evaluate(mod, *feeds.values())
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
    if pyir_op is not None:
        assert pyir_op in _ops(mod), _ops(mod)
    return mod


def _ops(mod: Any) -> set[str]:
    return {n.op.name for n in post_order([mod["main"]])
            if isinstance(n, pyir.Call) and isinstance(n.op, pyir.Op)}


def _r(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# -- activations ------------------------------------------------------------------------------------

_ACT_CASES = [
    ("Gelu", {}, 20, "nn.gelu"), ("Gelu", {"approximate": "tanh"}, 20, "nn.gelu"),
    ("HardSwish", {}, 22, "nn.hard_swish"),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 22, "nn.hard_sigmoid"),
    ("Mish", {}, 22, "nn.mish"), ("Celu", {"alpha": 2.0}, 12, "nn.celu"),
    ("ThresholdedRelu", {"alpha": 0.5}, 22, "nn.thresholded_relu"),
    ("Shrink", {"lambd": 0.7, "bias": 0.2}, 9, "nn.shrink"), ("Softplus", {}, 22, "nn.softplus"),
    ("Swish", {"alpha": 0.7}, 24, "nn.swish"), ("Hardmax", {"axis": 1}, 13, "nn.hardmax"),
    ("LpNormalization", {"axis": 1, "p": 2}, 22, "nn.lp_normalize"),
]


@pytest.mark.parametrize(("op_type", "attrs", "opset", "pyir_op"), _ACT_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in _ACT_CASES])
def test_activations_match_reference(op_type: str, attrs: dict[str, Any], opset: int, pyir_op: str) -> None:
    """Each activation imports as its own pyir operator (one call) and matches onnx.reference,
    float32 staying float32; large inputs do not overflow (softplus, mish)."""
    x = _r(3, 4, 5) * 4
    x[0, 0, :3] = (60.0, -60.0, 0.0)
    ins = [("x", x)]
    mod = _check(_model(op_type, ins, opset=opset, **attrs), ins, pyir_op)
    assert len([n for n in post_order([mod["main"]]) if isinstance(n, pyir.Call)]) == 1


def test_gelu_is_accurate_in_the_tails() -> None:
    """nn.gelu against math.erf: relative error below 3e-5 in float32 (through erfc, so the lower
    tail keeps its digits: float32's rounding of x^2 in exp(-x^2 / 2) is what is left) and 1e-12
    in float64, from -12 to 12."""
    import math

    xs = np.linspace(-12, 12, 2001)
    want = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in xs])
    for dt, tol in ((np.float32, 3e-5), (np.float64, 1e-12)):
        x = xs.astype(dt)
        got = evaluate(pyir.Function([v := pyir.var("x", shape=x.shape, dtype=dt)], nn.gelu(v)), x)
        assert got.dtype == dt
        ref = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
        np.testing.assert_allclose(got, ref, rtol=tol, atol=1e-300)
    assert want[0] < 0 and abs(want[0]) < 1e-30  # the tail is really tiny, yet matched relatively


def test_activations_float16_and_errors() -> None:
    """float16 data stays float16 (computed in float32); bad attributes are AttrErrors at build
    time and FrontendErrors at import, naming the attribute; integer data is a type error."""
    x16 = _r(4, 6, dtype=np.float16)
    ins = [("x", x16)]
    _check(_model("Gelu", ins, opset=20), ins, "nn.gelu", rtol=2e-3, atol=2e-3)
    with pytest.raises(AttrError, match="approximate"):
        nn.gelu(pyir.var("x", shape=(2,)), approximate="fast")
    with pytest.raises(FrontendError, match="approximate"):
        from_onnx(_model("Gelu", ins, opset=20, approximate="fast"))
    with pytest.raises(TypeCheckError, match="floating-point"):
        pyir.infer_type(nn.mish(pyir.var("i", shape=(3,), dtype="int32")))
    xi = np.arange(-5, 5, dtype=np.int32)
    _check(_model("Shrink", [("x", xi)], opset=9, lambd=1.5, bias=1.0), [("x", xi)], "nn.shrink")


def test_hardmax_before_opset_13_flattens_the_trailing_axes() -> None:
    """Opset 11 Hardmax coerces the input to 2-D at ``axis`` (onnx.reference does not; onnxruntime
    agrees where installed): one 1 per batch row, at the maximum of its flattened trailing axes."""
    x = _r(2, 3, 4)
    model = _model("Hardmax", [("x", x)], opset=11, axis=1)
    got = evaluate(from_onnx(model), x)
    want = np.zeros((2, 12), np.float32)
    want[np.arange(2), x.reshape(2, 12).argmax(1)] = 1
    np.testing.assert_array_equal(got, want.reshape(x.shape))
    ort_out = _ort(model, {"x": x})
    if ort_out is not None:
        np.testing.assert_array_equal(got, ort_out[0])


def test_l1_normalization_divides_by_the_sum_of_magnitudes() -> None:
    """p=1 is the L1 norm sum(|x|) (onnx.reference sums the signed values), and a zero vector stays 0."""
    x = _r(3, 4)
    x[1] = 0
    got = evaluate(from_onnx(_model("LpNormalization", [("x", x)], opset=22, axis=1, p=1)), x)
    norm = np.abs(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, x / np.where(norm == 0, 1, norm), rtol=1e-6)
    assert not np.isnan(got).any()


def test_swiglu_matches_reference() -> None:
    a, b = _r(2, 3, 8), _r(2, 3, 8)
    ins = [("a", a), ("b", b)]
    _check(_model("SwiGLU", ins, opset=28, alpha=1.5), ins, "nn.swiglu")
    with pytest.raises(TypeCheckError, match="one shape"):
        pyir.infer_type(nn.swiglu(pyir.var("a", shape=(2, 3)), pyir.var("b", shape=(2, 4))))


# -- normalizations ----------------------------------------------------------------------------------


def test_layer_norm_last_axis_is_relay_layer_norm() -> None:
    """The common transformer case (last axis, 1-D scale and bias, only Y used) imports as
    ``nn.layer_norm``; without a bias too (center=False)."""
    x, s, b = _r(2, 5, 8), _r(8), _r(8)
    ins = [("x", x), ("c_s", s), ("c_b", b)]
    mod = _check(_model("LayerNormalization", ins, opset=17, epsilon=1e-3), ins, "nn.layer_norm")
    assert "nn.layer_norm_nd" not in _ops(mod)
    ins = [("x", x), ("c_s", s)]
    _check(_model("LayerNormalization", ins, opset=17), ins, "nn.layer_norm")


@pytest.mark.parametrize("axis", [0, 1, -2])
def test_layer_norm_nd_with_statistics(axis: int) -> None:
    """Any axis, trailing-shaped scale and bias, and the Mean / InvStdDev outputs: ``nn.layer_norm_nd``."""
    x = _r(3, 4, 5)
    tail = x.shape[axis % 3:]
    ins = [("x", x), ("s", _r(*tail)), ("b", _r(*tail))]
    _check(_model("LayerNormalization", ins, n_out=3, opset=17, axis=axis), ins, "nn.layer_norm_nd")


def test_layer_norm_errors() -> None:
    """stash_type other than float32 is refused; a scale that does not fit is a type error
    naming the shapes."""
    x = _r(2, 3)
    ins = [("x", x), ("c_s", _r(3))]
    with pytest.raises(FrontendError, match="stash_type"):
        from_onnx(_model("LayerNormalization", ins, opset=17, stash_type=16))
    with pytest.raises(TypeCheckError, match=r"scale \(4,\) must broadcast to the normalized shape \(3,\)"):
        pyir.infer_type(nn.rms_norm(pyir.var("x", shape=(2, 3)), pyir.var("s", shape=(4,))))


def test_rms_and_group_norm() -> None:
    x = _r(2, 6, 3, 3)
    ins = [("x", x), ("c_s", _r(3, 3))]
    _check(_model("RMSNormalization", ins, opset=23, axis=2, epsilon=1e-4), ins, "nn.rms_norm")
    ins = [("x", x), ("c_s", _r(6)), ("c_b", _r(6))]
    _check(_model("GroupNormalization", ins, opset=21, num_groups=3), ins, "nn.group_norm")
    ins18 = [("x", x), ("c_s", _r(3)), ("c_b", _r(3))]  # opset 18: one scale and bias per group
    mod = from_onnx(_model("GroupNormalization", ins18, opset=18, num_groups=3))
    xs = x.reshape(2, 3, -1)
    want = ((xs - xs.mean(-1, keepdims=True)) / np.sqrt(xs.var(-1, keepdims=True) + 1e-5))
    want = want * ins18[1][1][None, :, None] + ins18[2][1][None, :, None]
    np.testing.assert_allclose(evaluate(mod, x), want.reshape(x.shape), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeCheckError, match="not divisible by num_groups 4"):
        pyir.infer_type(nn.group_norm(*(pyir.var(n, shape=s) for n, s in [("x", (1, 6, 2)), ("g", (6,)),
                                                                            ("b", (6,))]), num_groups=4))


def test_batch_norm_training_mode_matches_reference() -> None:
    """opset 14+ training mode: batch statistics, and the running statistics with momentum."""
    x = _r(4, 3, 2, 2)
    ins = [("x", x), ("c_s", _r(3)), ("c_b", _r(3)), ("c_m", _r(3)), ("c_v", np.abs(_r(3)))]
    _check(_model("BatchNormalization", ins, n_out=3, opset=15, training_mode=1, momentum=0.8, epsilon=1e-3),
           ins, "nn.batch_norm")
    _check(_model("BatchNormalization", ins, opset=15), ins, "nn.batch_norm")  # inference mode


def test_instance_norm_is_group_norm_per_channel() -> None:
    x = _r(2, 3, 4, 5)
    ins = [("x", x), ("c_s", _r(3)), ("c_b", _r(3))]
    mod = _check(_model("InstanceNormalization", ins, opset=22, epsilon=1e-3), ins, "nn.group_norm")
    assert len([n for n in post_order([mod["main"]]) if isinstance(n, pyir.Call)]) == 1


# -- losses -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_match_reference(reduction: str, weighted: bool) -> None:
    """SoftmaxCrossEntropyLoss (both outputs) and NegativeLogLikelihoodLoss over (N, C, d1, d2),
    with weights and an ignore_index."""
    x = _r(3, 5, 2, 2)
    t = RNG.integers(0, 5, size=(3, 2, 2)).astype(np.int64)
    t[0, 0, 0] = 1  # the ignored label
    ins = [("x", x), ("t", t)] + ([("w", np.abs(_r(5)))] if weighted else [])
    _check(_model("SoftmaxCrossEntropyLoss", ins, n_out=2, opset=13, reduction=reduction, ignore_index=1),
           ins, "nn.softmax_cross_entropy")
    _check(_model("NegativeLogLikelihoodLoss", ins, opset=22, reduction=reduction, ignore_index=1), ins,
           "nn.nll_loss")


def test_loss_type_errors() -> None:
    with pytest.raises(TypeCheckError, match=r"labels \(3, 4\) must have shape \(3,\)"):
        pyir.infer_type(nn.nll_loss(pyir.var("x", shape=(3, 5)), pyir.var("t", shape=(3, 4), dtype="int64")))
    with pytest.raises(AttrError, match="reduction"):
        nn.nll_loss(pyir.var("x", shape=(3, 5)), pyir.var("t", shape=(3,), dtype="int64"), reduction="avg")


# -- attention and rotary embeddings -----------------------------------------------------------------


def _attention_case(rank: int, hq: int = 4, hkv: int = 2, past: int = 0, mask: str = "", opset: int = 23,
                    **attrs: Any) -> tuple[Any, list[tuple[str, np.ndarray]]]:
    b, sq, skv, d, dv = 2, 3, 4, 8, 6
    if rank == 4:
        ins = [("q", _r(b, hq, sq, d)), ("k", _r(b, hkv, skv, d)), ("v", _r(b, hkv, skv, dv))]
    else:
        ins = [("q", _r(b, sq, hq * d)), ("k", _r(b, skv, hkv * d)), ("v", _r(b, skv, hkv * dv))]
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
    total = skv + past
    if mask == "bool":
        m = RNG.random((sq, total)) > 0.3
        m[:, 0] = True
        ins.append(("m", m))
    elif mask == "float":
        ins.append(("m", _r(b, 1, sq, total)))
    elif past:
        ins.append(("", np.zeros(0)))
    if past:
        ins += [("pk", _r(b, hkv, past, d)), ("pv", _r(b, hkv, past, dv))]
    n_out = 4 if past else 1
    names = ["y", "pk_out", "pv_out", "qk"][:n_out]
    if attrs.get("qk_matmul_output_mode") is not None and not past:
        names = ["y", "", "", "qk"]
    node_ins = [n for n, _ in ins]
    model = _model("Attention", ins, opset=opset, out_names=names, **attrs)
    model.graph.node[0].ClearField("input")
    model.graph.node[0].input.extend(node_ins)
    del model.graph.output[:]
    model.graph.output.extend(helper.make_tensor_value_info(o, F32, None) for o in names if o)
    return model, ins


@pytest.mark.parametrize(("rank", "kw"), [
    (4, {}), (3, {}), (4, {"is_causal": 1}), (3, {"is_causal": 1, "mask": "bool"}),
    (4, {"mask": "float", "scale": 0.3}), (4, {"softcap": 2.0, "qk_matmul_output_mode": 1}),
    (4, {"past": 2, "mask": "float", "is_causal": 1, "qk_matmul_output_mode": 2}),
    (3, {"past": 2, "qk_matmul_output_mode": 3}), (4, {"hq": 2, "hkv": 2, "past": 1}),
    (4, {"opset": 25, "is_causal": 1, "left_window_size": 1}),
], ids=str)
def test_attention_matches_reference(rank: int, kw: dict[str, Any]) -> None:
    """One ``nn.attention`` call per node over 3-D/4-D inputs, GQA, bool and float masks, causal,
    scale, softcap, the past/present KV cache and every qk_matmul_output_mode."""
    model, ins = _attention_case(rank, **kw)
    mod = _check(model, ins, "nn.attention")
    calls = [n for n in post_order([mod["main"]]) if isinstance(n, pyir.Call) and n.op.name == "nn.attention"]
    assert len(calls) == 1


def test_attention_nonpad_kv_seqlen() -> None:
    """opset 24's nonpad_kv_seqlen (a static cache padded per batch row), with is_causal."""
    b, h, sq, skv, d = 2, 2, 2, 5, 4
    ins = [("q", _r(b, h, sq, d)), ("k", _r(b, h, skv, d)), ("v", _r(b, h, skv, d)), ("", np.zeros(0)),
           ("", np.zeros(0)), ("", np.zeros(0)), ("n", np.array([3, 5], np.int64))]
    model = _model("Attention", ins, opset=24, is_causal=1)
    model.graph.node[0].ClearField("input")
    model.graph.node[0].input.extend(n for n, _ in ins)
    _check(model, ins, "nn.attention")


def test_attention_types_symbolic_and_errors() -> None:
    """The relation works over symbolic batch and sequence dimensions, and mismatches name the
    shapes; the importer's error names the ONNX node."""
    bsz, s, t = sym("b"), sym("s"), sym("t")
    q = pyir.var("q", shape=(bsz, 4, s, 8))
    k, v = pyir.var("k", shape=(bsz, 2, t, 8)), pyir.var("v", shape=(bsz, 2, t, 6))
    ty = pyir.infer_type(nn.attention(q, k, v))
    assert ty.fields[0].shape == (bsz, 4, s, 6) and ty.fields[3].shape == (bsz, 4, s, t)
    pk, pv = pyir.var("pk", shape=(bsz, 2, 3, 8)), pyir.var("pv", shape=(bsz, 2, 3, 6))
    ty = pyir.infer_type(nn.attention(q, k, v, pk, pv, has_past=True))
    assert ty.fields[1].shape[2] == pyir.dims.dim_add(t, 3)
    with pytest.raises(TypeCheckError, match=r"q and k head sizes differ \(8 vs 5\)"):
        pyir.infer_type(nn.attention(q, pyir.var("k2", shape=(bsz, 2, t, 5)), v))
    with pytest.raises(TypeCheckError, match="not a multiple of kv heads 3"):
        pyir.infer_type(nn.attention(q, pyir.var("k3", shape=(bsz, 3, t, 8)),
                                     pyir.var("v3", shape=(bsz, 3, t, 6))))
    with pytest.raises(TypeCheckError, match="expected 4 inputs"):
        pyir.infer_type(nn.attention(q, k, v, has_mask=True))
    model, _ = _attention_case(3)
    del model.graph.node[0].attribute[:]  # 3-D inputs without the head counts
    with pytest.raises(FrontendError, match=r"'the_node' \(Attention\).*q_num_heads"):
        from_onnx(model)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rank", [3, 4])
def test_rotary_embedding_matches_reference(interleaved: int, rank: int) -> None:
    """RotaryEmbedding with position ids and a partial rotary dimension."""
    b, h, s, d, rd = 2, 3, 5, 8, 4
    x = _r(b, h, s, d) if rank == 4 else _r(b, s, h * d)
    pos = RNG.integers(0, 10, size=(b, s)).astype(np.int64)
    ins = [("x", x), ("c_cos", _r(10, rd // 2)), ("c_sin", _r(10, rd // 2)), ("p", pos)]
    attrs: dict[str, Any] = {"interleaved": interleaved, "rotary_embedding_dim": rd}
    if rank == 3:
        attrs["num_heads"] = h
    _check(_model("RotaryEmbedding", ins, opset=23, **attrs), ins, "nn.rotary_embedding")
    with pytest.raises(TypeCheckError, match="cache width"):
        pyir.infer_type(nn.rotary_embedding(pyir.var("x", shape=(b, h, s, d)), pyir.var("c", shape=(b, s, 3)),
                                            pyir.var("s", shape=(b, s, 3))))


# -- LpPool and the recurrent networks ----------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_matches_reference(p: int) -> None:
    x = _r(1, 2, 6, 5)
    ins = [("x", x)]
    _check(_model("LpPool", ins, opset=22, kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=p),
           ins, "nn.avg_pool2d", rtol=1e-4, atol=1e-4)
    with pytest.raises(FrontendError, match="p must be > 0"):
        from_onnx(_model("LpPool", ins, opset=22, kernel_shape=[2, 2], p=0))


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's results, a second oracle where it is installed (None where it is not)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def _rnn_oracle(kind: str, x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray, lens: np.ndarray,
                h0: np.ndarray, c0: np.ndarray | None = None, p: np.ndarray | None = None,
                direction: str = "forward", lbr: int = 0, input_forget: int = 0, clip: float | None = None,
                f: Any = _sigmoid) -> list[np.ndarray]:
    """The ONNX RNN / GRU / LSTM equations, one batch row and one step at a time (the spec's
    gate orders: GRU z, r, h; LSTM i, o, f, c; peepholes i, o, f), in float64. Outputs in
    layout 0: Y (seq, dirs, batch, hidden), Y_h (and Y_c) (dirs, batch, hidden)."""
    seq, batch, _ = x.shape
    nd, hid = w.shape[0], r.shape[-1]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    y = np.zeros((seq, nd, batch, hid))
    yh, yc = np.zeros((nd, batch, hid)), np.zeros((nd, batch, hid))
    for d in range(nd):
        rev = direction == "reverse" or d == 1
        wb, rb = np.split(b[d].astype(np.float64), 2)
        for bi in range(batch):
            h = h0[d, bi].astype(np.float64)
            c = c0[d, bi].astype(np.float64) if c0 is not None else None
            steps = range(lens[bi] - 1, -1, -1) if rev else range(lens[bi])
            for t in steps:
                xw = w[d] @ x[t, bi] + wb
                hr = r[d] @ h
                if kind == "RNN":
                    h = np.tanh(cl(xw + hr + rb))
                elif kind == "GRU":
                    z = f(cl(xw[:hid] + hr[:hid] + rb[:hid]))
                    rr = f(cl(xw[hid:2 * hid] + hr[hid:2 * hid] + rb[hid:2 * hid]))
                    if lbr:
                        hh = np.tanh(cl(xw[2 * hid:] + rr * (hr[2 * hid:] + rb[2 * hid:])))
                    else:
                        hh = np.tanh(cl(xw[2 * hid:] + r[d][2 * hid:] @ (rr * h) + rb[2 * hid:]))
                    h = (1 - z) * hh + z * h
                else:
                    assert c is not None
                    gi, go, gf, gc = np.split(xw + hr + rb, 4)
                    pi, po, pf = np.split(p[d], 3) if p is not None else (0, 0, 0)
                    it = f(cl(gi + pi * c))
                    ft = 1 - it if input_forget else f(cl(gf + pf * c))
                    c = ft * c + it * np.tanh(cl(gc))
                    h = f(cl(go + po * c)) * np.tanh(c)
                y[t, d, bi] = h
            yh[d, bi] = h
            if c is not None:
                yc[d, bi] = c
    return [y, yh, yc] if kind == "LSTM" else [y, yh]


def _close_all(got: Any, *wants: list[np.ndarray] | None) -> None:
    for want in wants:
        if want is None:
            continue
        assert len(got) == len(want)
        for gv, wv in zip(got, want):
            assert gv.shape == wv.shape, (gv.shape, wv.shape)
            np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_with_sequence_lens(kind: str, direction: str) -> None:
    """Every direction with per-row sequence lengths (as a graph input and as a constant), biases
    and initial states, against the spec's equations in numpy (onnx.reference ignores
    sequence_lens) and onnxruntime where installed."""
    seq, batch, inp, hid = 4, 3, 5, 6
    nd = 2 if direction == "bidirectional" else 1
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    w, r, b = _r(nd, g * hid, inp) * 0.5, _r(nd, g * hid, hid) * 0.5, _r(nd, 2 * g * hid) * 0.5
    x, lens = _r(seq, batch, inp), np.array([4, 2, 3], np.int32)
    h0, c0 = _r(nd, batch, hid), _r(nd, batch, hid)
    ins = [("x", x), ("c_w", w), ("c_r", r), ("c_b", b), ("lens", lens), ("h0", h0)]
    if kind == "LSTM":
        ins.append(("c0", c0))
    n_out = 3 if kind == "LSTM" else 2
    attrs: dict[str, Any] = {"hidden_size": hid, "direction": direction}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    model = _model(kind, ins, n_out=n_out, opset=14, **attrs)
    feeds = {n: a for n, a in ins if not n.startswith("c_")}
    want = _rnn_oracle(kind, x, w, r, b, lens, h0, c0 if kind == "LSTM" else None, direction=direction,
                       lbr=attrs.get("linear_before_reset", 0))
    got = evaluate(from_onnx(model), *feeds.values())
    _close_all(got, want, _ort(model, feeds))
    ins_c = [("c_lens" if n == "lens" else n, a) for n, a in ins]  # the lengths as a constant
    got_c = evaluate(from_onnx(_model(kind, ins_c, n_out=n_out, opset=14, **attrs)),
                     *(a for n, a in ins_c if not n.startswith("c_")))
    _close_all(got_c, want)
    if kind == "GRU":  # linear_before_reset=0: the reset gate applies before the recurrence
        attrs["linear_before_reset"] = 0
        got0 = evaluate(from_onnx(_model(kind, ins, n_out=n_out, opset=14, **attrs)), *feeds.values())
        _close_all(got0, _rnn_oracle(kind, x, w, r, b, lens, h0, direction=direction))


def test_lstm_layout_peepholes_activations() -> None:
    """Peepholes, clip, input_forget and a non-default activation with alpha/beta, against the
    equations (and onnxruntime where installed); layout=1 (batch first) gives the transposed results."""
    seq, batch, inp, hid = 3, 2, 4, 3
    x, h0, c0 = _r(seq, batch, inp), _r(1, batch, hid), _r(1, batch, hid)
    w, r, b, pp = _r(1, 4 * hid, inp), _r(1, 4 * hid, hid), _r(1, 8 * hid), _r(1, 3 * hid)
    consts = [("c_w", w), ("c_r", r), ("c_b", b), ("", np.zeros(0))]
    attrs: dict[str, Any] = {"hidden_size": hid, "clip": 2.5, "input_forget": 1,
                             "activations": ["HardSigmoid", "Tanh", "Tanh"], "activation_alpha": [0.3],
                             "activation_beta": [0.4]}
    ins = [("x", x), *consts, ("h0", h0), ("c0", c0), ("c_p", pp)]
    model = _model("LSTM", ins, n_out=3, opset=14, **attrs)
    want = _rnn_oracle("LSTM", x, w, r, b, np.full(batch, seq), h0, c0, pp, input_forget=1, clip=2.5,
                       f=lambda v: np.clip(0.3 * v + 0.4, 0, 1))
    got = evaluate(from_onnx(model), x, h0, c0)
    _close_all(got, want, _ort(model, {"x": x, "h0": h0, "c0": c0}))
    ins1 = [("x", x.transpose(1, 0, 2)), *consts, ("h0", h0.transpose(1, 0, 2)),
            ("c0", c0.transpose(1, 0, 2)), ins[-1]]
    got1 = evaluate(from_onnx(_model("LSTM", ins1, n_out=3, opset=14, layout=1, **attrs)),
                    *(a for n, a in ins1 if n and not n.startswith("c_")))
    _close_all(got1, [want[0].transpose(2, 0, 1, 3), *(v.transpose(1, 0, 2) for v in want[1:])])
    with pytest.raises(FrontendError, match="activation 'Bogus'"):
        from_onnx(_model("RNN", ins[:3], opset=14, hidden_size=hid, activations=["Bogus"]))


# -- the operators through the rest of pyir -----------------------------------------------------------


def _block() -> Any:
    """A small pre-norm transformer block as ONNX: LayerNormalization, Attention (3-D, causal),
    Gelu, RMSNormalization."""
    b, s, h, d = 2, 4, 2, 4
    e = h * d
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "bta"], ["n1"]),
        helper.make_node("Attention", ["n1", "n1", "n1"], ["a"], q_num_heads=h, kv_num_heads=h, is_causal=1),
        helper.make_node("Add", ["x", "a"], ["r"]),
        helper.make_node("Gelu", ["r"], ["ge"], approximate="tanh"),
        helper.make_node("RMSNormalization", ["ge", "g"], ["y"]),
    ]
    inits = [onnx.numpy_helper.from_array(_r(e), "g"), onnx.numpy_helper.from_array(_r(e), "bta")]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", F32, (b, s, e))],
                              [helper.make_tensor_value_info("y", F32, (b, s, e))], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def test_block_matches_reference_and_survives_the_passes() -> None:
    """The block imports as real operators, matches onnx.reference, and the standard passes
    (FoldConstant, SimplifyExpr, EliminateCommonSubexpr, DeadCodeElimination, FuseOps) keep its
    value and lineage (pyir.testing.check_pass)."""
    from pyir.transform import (
        DeadCodeElimination,
        EliminateCommonSubexpr,
        FoldConstant,
        FuseOps,
        SimplifyExpr,
    )

    model = _block()
    x = _r(2, 4, 8)
    mod = _check(model, [("x", x)], "nn.attention")
    assert {"nn.layer_norm", "nn.gelu", "nn.rms_norm"} <= _ops(mod)
    for p in (FoldConstant(), SimplifyExpr(), EliminateCommonSubexpr(), DeadCodeElimination()):
        mod = check_pass(p, mod)
    fused = check_pass(FuseOps(), mod)
    np.testing.assert_allclose(evaluate(fused, x), ReferenceEvaluator(model).run(None, {"x": x})[0],
                               rtol=1e-4, atol=1e-5)


def test_new_operators_print_and_parse_back() -> None:
    """Every new operator prints with its non-default attributes and parses back to the same module."""
    mod = from_onnx(_block())
    q = pyir.var("q", shape=(1, 2, 3, 4))
    body = op.add(pyir.TupleGetItem(nn.attention(q, q, q, is_causal=True, softcap=1.5), 0), nn.hard_swish(q))
    extra = pyir.Module({"main": pyir.Function([q], body)})
    for m in (mod, extra):
        text = m.astext(show_meta_data=True)
        back = pyir.parse(text)
        assert back.astext(show_meta_data=True) == text
        assert pyir.alpha_equal(back["main"], m["main"])
    assert "softcap=1.5" in extra.astext()


def test_relations_over_symbolic_dimensions() -> None:
    """The normalizations, losses, rotary embedding and linear attention type symbolic shapes,
    and serialize back to the same module."""
    n, s, e = sym("n"), sym("s"), sym("e")
    x = pyir.var("x", shape=(n, s, e))
    g = pyir.var("g", shape=(e,))
    assert pyir.infer_type(nn.rms_norm(x, g)).shape == (n, s, e)
    ln = pyir.infer_type(nn.layer_norm_nd(x, pyir.var("g2", shape=(s, e)), axis=1))
    assert ln.fields[0].shape == (n, s, e) and ln.fields[1].shape == (n, 1, 1)
    logits = pyir.var("l", shape=(n, 5, s))
    sce = pyir.infer_type(nn.softmax_cross_entropy(logits, pyir.var("t", shape=(n, s), dtype="int64"),
                                                   reduction="none"))
    assert sce.fields[0].shape == (n, s) and sce.fields[1].shape == (n, 5, s)
    r = nn.rotary_embedding(pyir.var("q", shape=(n, s, 4 * 8)), pyir.var("c", shape=(n, s, 4)),
                            pyir.var("si", shape=(n, s, 4)), num_heads=4)
    assert pyir.infer_type(r).shape == (n, s, 32)
    la = nn.linear_attention(pyir.var("lq", shape=(n, s, 16)), pyir.var("lk", shape=(n, s, 8)),
                             pyir.var("lv", shape=(n, s, 6)), q_num_heads=4, kv_num_heads=2,
                             update_rule="linear")
    lt = pyir.infer_type(la)
    assert lt.fields[0].shape == (n, s, 12) and lt.fields[1].shape == (n, 2, 4, 3)
    body = pyir.Tuple([nn.rms_norm(x, g), pyir.TupleGetItem(la, 1)])
    mod = pyir.Module({"main": pyir.Function(sorted(pyir.free_vars(body), key=lambda v: v.name_hint), body)})
    back = pyir.loads(pyir.dumps(mod))
    assert pyir.alpha_equal(back["main"], mod["main"])
