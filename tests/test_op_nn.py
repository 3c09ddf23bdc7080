"""Tests of the neural-network operators (pyir.op.nn): builders, type relations, numpy computes."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import pyir
from pyir.op import OpPattern, get_op_def, nn

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    """Standard-normal test data of ``shape``."""
    return RNG.standard_normal(shape).astype(dtype)


def call_of(builder: Any, *arrays: np.ndarray, **attrs: Any) -> pyir.Call:
    """The call of ``builder`` on fresh variables typed like ``arrays``."""
    vs = [pyir.var(f"a{i}", shape=a.shape, dtype=a.dtype) for i, a in enumerate(arrays)]
    return builder(*vs, **attrs)


def type_of(call: pyir.Call) -> pyir.Type:
    """Run the operator's type relation on the argument annotations of ``call``."""
    odef = get_op_def(call.op.name)
    return odef.type_rel(tuple(a.type_annotation for a in call.args), call.attrs)


def run(builder: Any, *arrays: np.ndarray, **attrs: Any) -> Any:
    """Compute ``builder(*arrays, **attrs)`` with numpy, checking the result against the type relation."""
    call = call_of(builder, *arrays, **attrs)
    t = type_of(call)
    out = get_op_def(call.op.name).compute(call.attrs, *arrays)
    if isinstance(t, pyir.TupleType):
        assert len(out) == len(t.fields)
        for o, ft in zip(out, t.fields):
            assert (o.shape, o.dtype.name) == (ft.shape, ft.dtype)
    else:
        assert (out.shape, out.dtype.name) == (t.shape, t.dtype)
    return out


_ONNX_TYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}


def onnx_run(op_type: str, inputs: list[np.ndarray], opset: int = 19, n_out: int = 1, **attrs: Any) -> Any:
    """Run a one-node ONNX model with the reference evaluator; returns its outputs."""
    names = [f"i{k}" for k in range(len(inputs))]
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, _ONNX_TYPES[a.dtype.name], a.shape) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(n, _ONNX_TYPES[inputs[0].dtype.name], None) for n in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    res = ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))
    return res if n_out > 1 else res[0]


# -- registry integration ------------------------------------------------------------------------

_PATTERNS = {
    "relu": OpPattern.ELEMWISE, "leaky_relu": OpPattern.ELEMWISE, "prelu": OpPattern.BROADCAST,
    "conv2d": OpPattern.OUT_ELEMWISE_FUSABLE, "contrib_conv2d_NCHWc": OpPattern.OUT_ELEMWISE_FUSABLE,
    "max_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE, "global_avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "global_max_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE, "batch_norm": OpPattern.OPAQUE,
    "layer_norm": OpPattern.OPAQUE, "lrn": OpPattern.OPAQUE, "dense": OpPattern.OUT_ELEMWISE_FUSABLE,
    "bias_add": OpPattern.BROADCAST,
    "softmax": OpPattern.OUT_ELEMWISE_FUSABLE, "log_softmax": OpPattern.OUT_ELEMWISE_FUSABLE,  # as TVM
    "dropout": OpPattern.OPAQUE, "batch_flatten": OpPattern.INJECTIVE, "pad": OpPattern.INJECTIVE,
    "batch_matmul": OpPattern.OUT_ELEMWISE_FUSABLE, "upsampling": OpPattern.INJECTIVE,
    "upsampling3d": OpPattern.INJECTIVE,
}
# the ONNX neural-network operators of issue 13 (tests/test_onnx_nn.py tests them)
_PATTERNS.update(dict.fromkeys((
    "gelu", "hard_sigmoid", "hard_swish", "softplus", "mish", "celu", "thresholded_relu", "shrink", "swiglu",
    "swish"), OpPattern.ELEMWISE))
_PATTERNS.update(dict.fromkeys((
    "hardmax", "lp_normalize", "rms_norm", "layer_norm_nd", "group_norm", "nll_loss", "softmax_cross_entropy",
    "attention", "rotary_embedding", "linear_attention"), OpPattern.OPAQUE))


def test_all_ops_registered_with_patterns() -> None:
    """Every name in nn.__all__ is a builder of the registered op nn.<name> with the expected pattern."""
    assert sorted(nn.__all__) == sorted(_PATTERNS)
    for name, pattern in _PATTERNS.items():
        builder = getattr(nn, name)
        odef = get_op_def(f"nn.{name}")
        assert builder.op is pyir.Op(f"nn.{name}")
        assert odef.pattern is pattern
        assert odef.doc and "\n" not in odef.doc
        assert f"nn.{name}" in pyir.op.list_ops()


# (builder, input shapes, required attrs, some defaults spelled out)
_INTERN_CASES = [
    (nn.relu, [(2, 3)], {}, {}),
    (nn.leaky_relu, [(2, 3)], {}, {"alpha": 0.01}),
    (nn.prelu, [(2, 3), (3,)], {}, {"axis": 1}),
    (nn.conv2d, [(1, 3, 8, 8), (4, 3, 3, 3)], {},
     {"strides": (1, 1), "padding": [0, 0, 0, 0], "groups": 1, "data_layout": "NCHW", "out_dtype": None}),
    (nn.max_pool2d, [(1, 3, 8, 8)], {"pool_size": (2, 2)}, {"strides": 1, "ceil_mode": False}),
    (nn.avg_pool2d, [(1, 3, 8, 8)], {"pool_size": 2}, {"padding": 0, "count_include_pad": False}),
    (nn.global_avg_pool2d, [(1, 3, 8, 8)], {}, {"layout": "NCHW"}),
    (nn.global_max_pool2d, [(1, 3, 8, 8)], {}, {"layout": "NCHW"}),
    (nn.batch_norm, [(1, 3, 4, 4)] + [(3,)] * 4, {}, {"axis": 1, "epsilon": 1e-5, "center": True}),
    (nn.layer_norm, [(2, 5), (5,), (5,)], {}, {"axis": -1, "epsilon": 1e-5}),
    (nn.lrn, [(1, 6, 4, 4)], {}, {"size": 5, "bias": 2.0, "alpha": 1e-4, "beta": 0.75}),
    (nn.dense, [(2, 5), (7, 5)], {}, {"units": None}),
    (nn.bias_add, [(2, 5), (5,)], {"axis": -1}, {}),
    (nn.softmax, [(2, 5)], {}, {"axis": -1}),
    (nn.log_softmax, [(2, 5)], {}, {"axis": -1}),
    (nn.dropout, [(2, 5)], {}, {"rate": 0.5}),
    (nn.batch_flatten, [(2, 3, 4)], {}, {}),
    (nn._pad_op, [(2, 3), ()], {"pad_width": ((1, 1), (0, 2))}, {"pad_mode": "constant"}),
]


@pytest.mark.parametrize(("builder", "shapes", "required", "defaults"), _INTERN_CASES,
                         ids=[c[0].__name__ for c in _INTERN_CASES])
def test_builder_interns_with_defaults(builder: Any, shapes: list[tuple[int, ...]], required: dict[str, Any],
                                       defaults: dict[str, Any]) -> None:
    """Same args and attrs give the same node, and spelling out defaults changes nothing."""
    args = [pyir.var(f"a{i}", shape=s) for i, s in enumerate(shapes)]
    c = builder(*args, **required)
    assert isinstance(c, pyir.Call) and c.op is builder.op
    assert builder(*args, **required) is c
    assert builder(*args, **required, **defaults) is c
    assert pyir.Call(builder.op, args, dict(required, **defaults)) is c
    other = [pyir.var(f"b{i}", shape=s) for i, s in enumerate(shapes)]
    assert builder(*other, **required) is not c


def test_unknown_attribute_is_attr_error() -> None:
    """An unknown attribute raises AttrError naming it."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    with pytest.raises(pyir.AttrError, match="stride_h"):
        nn.conv2d(x, w, stride_h=2)
    with pytest.raises(pyir.AttrError, match="bogus"):
        nn.relu(x, bogus=1)
    with pytest.raises(pyir.AttrError, match="pool_size"):
        nn.max_pool2d(x)  # required attribute missing


def test_attribute_kinds_are_checked() -> None:
    """Attributes of the wrong kind or out of range raise AttrError naming the attribute."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    with pytest.raises(pyir.AttrError, match="groups"):
        nn.conv2d(x, w, groups=1.5)
    with pytest.raises(pyir.AttrError, match="groups"):
        nn.conv2d(x, w, groups=0)
    with pytest.raises(pyir.AttrError, match="padding"):
        nn.conv2d(x, w, padding=(1, 2, 3))
    with pytest.raises(pyir.AttrError, match="strides"):
        nn.conv2d(x, w, strides=(1, 0))
    with pytest.raises(pyir.AttrError, match="out_dtype"):
        nn.conv2d(x, w, out_dtype="notadtype")
    with pytest.raises(pyir.AttrError, match="pad_mode"):
        nn.pad(x, ((0, 0),) * 4, pad_mode="wrap")
    with pytest.raises(pyir.AttrError, match="rate"):
        nn.dropout(x, rate=1.5)
    with pytest.raises(pyir.AttrError, match="size"):
        nn.lrn(x, size=0)


# -- conv2d ---------------------------------------------------------------------------------------------


def test_conv2d_canonicalizes_padding_strides_dilation() -> None:
    """conv2d padding 1 -> 4 values, 2 (h, w) -> (h, w, h, w); strides and dilation 1 -> 2 values."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    assert nn.conv2d(x, w, padding=1).attrs["padding"] == (1, 1, 1, 1)
    assert nn.conv2d(x, w, padding=(1, 2)) is nn.conv2d(x, w, padding=(1, 2, 1, 2))
    assert nn.conv2d(x, w, strides=2) is nn.conv2d(x, w, strides=(2, 2))
    assert nn.conv2d(x, w, dilation=[2]) is nn.conv2d(x, w, dilation=(2, 2))
    assert nn.conv2d(x, w, kernel_size=3).attrs["kernel_size"] == (3, 3)
    assert nn.conv2d(x, w, out_dtype=np.dtype("float32")).attrs["out_dtype"] == "float32"
    assert nn.conv2d(x, w, padding=(1, 2)) is not nn.conv2d(x, w, padding=(2, 1))


@pytest.mark.parametrize(("dshape", "wshape", "attrs", "out"), [
    ((1, 3, 8, 8), (4, 3, 3, 3), {}, (1, 4, 6, 6)),
    ((2, 3, 8, 8), (4, 3, 3, 3), {"padding": 1}, (2, 4, 8, 8)),
    ((1, 3, 9, 9), (4, 3, 3, 3), {"strides": 2, "padding": 1}, (1, 4, 5, 5)),
    ((1, 3, 10, 12), (4, 3, 3, 3), {"dilation": 2}, (1, 4, 6, 8)),
    ((1, 4, 8, 8), (6, 2, 3, 1), {"groups": 2, "padding": (1, 0, 2, 0)}, (1, 6, 9, 8)),
    ((1, 8, 7, 7), (8, 1, 3, 3), {"groups": 8, "padding": 1, "strides": 2}, (1, 8, 4, 4)),
    ((1, 3, 8, 8), (4, 3, 3, 3), {"channels": 4, "kernel_size": 3, "out_dtype": "float64"}, (1, 4, 6, 6)),
])
def test_conv2d_type_relation_shapes(dshape: tuple[int, ...], wshape: tuple[int, ...], attrs: dict[str, Any],
                                     out: tuple[int, ...]) -> None:
    """conv2d's relation gives (N, O, OH, OW) from strides, padding, dilation and groups."""
    c = nn.conv2d(pyir.var("x", shape=dshape), pyir.var("w", shape=wshape), **attrs)
    t = type_of(c)
    assert t is pyir.TensorType(out, attrs.get("out_dtype", "float32"))


def test_conv2d_channel_mismatch_message() -> None:
    """A conv2d channel mismatch is a TypeCheckError (a TypeError) naming both shapes."""
    c = nn.conv2d(pyir.var("x", shape=(1, 3, 8, 8)), pyir.var("w", shape=(8, 4, 3, 3)))
    with pytest.raises(pyir.TypeCheckError) as ei:
        type_of(c)
    assert isinstance(ei.value, TypeError)
    msg = str(ei.value)
    assert "(1, 3, 8, 8)" in msg and "(8, 4, 3, 3)" in msg
    assert msg == ("conv2d: input channels 3 != weight in-channels 4 x groups 1 "
                   "(data (1, 3, 8, 8), weight (8, 4, 3, 3))")


@pytest.mark.parametrize(("dshape", "wshape", "dtypes", "attrs", "needle"), [
    ((1, 4, 8, 8), (6, 2, 3, 3), ("float32", "float32"), {"groups": 4}, "groups 4"),
    ((1, 4, 8, 8), (6, 2, 3, 3), ("float32", "float32"), {"groups": 2, "channels": 4}, "channels=4"),
    ((1, 4, 8, 8), (5, 2, 3, 3), ("float32", "float32"), {"groups": 2}, "not divisible"),
    ((4, 8, 8), (6, 4, 3, 3), ("float32", "float32"), {}, "4-D"),
    ((1, 4, 8, 8), (6, 4, 3), ("float32", "float32"), {}, "4-D"),
    ((1, 4, 8, 8), (6, 4, 3, 3), ("float32", "float64"), {}, "dtype"),
    ((1, 4, 2, 8), (6, 4, 3, 3), ("float32", "float32"), {}, "larger than"),
    ((1, 4, 8, 8), (6, 4, 3, 3), ("float32", "float32"), {"kernel_size": 5}, "kernel_size"),
])
def test_conv2d_type_errors_name_shapes(dshape: tuple[int, ...], wshape: tuple[int, ...],
                                        dtypes: tuple[str, str], attrs: dict[str, Any], needle: str) -> None:
    """Ill-typed conv2d calls raise TypeCheckError with the problem and both shapes in the message."""
    c = nn.conv2d(pyir.var("x", shape=dshape, dtype=dtypes[0]), pyir.var("w", shape=wshape, dtype=dtypes[1]),
                  **attrs)
    with pytest.raises(pyir.TypeCheckError, match=needle) as ei:
        type_of(c)
    assert str(dshape) in str(ei.value) and str(wshape) in str(ei.value)


@pytest.mark.parametrize("attr", ["data_layout", "kernel_layout", "out_layout"])
def test_conv2d_bad_layout_is_attr_error(attr: str) -> None:
    """conv2d with a layout not convertible to NCHW/OIHW (NHWC, HWIO are: tests/test_conv_layouts.py)
    raises AttrError naming the op and the attribute."""
    x = pyir.var("x", shape=(1, 8, 8, 3))
    w = pyir.var("w", shape=(3, 3, 3, 4))
    with pytest.raises(pyir.AttrError, match=attr) as ei:
        nn.conv2d(x, w, **{attr: "NHWD" if attr != "kernel_layout" else "HWIC"})
    assert "nn.conv2d" in str(ei.value)


_CONV_CASES = [
    # data shape, weight shape, strides, padding (t, l, b, r), dilation, groups
    ((1, 3, 7, 7), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 3, 9, 8), (5, 3, 3, 2), (2, 1), (1, 0, 2, 1), (1, 1), 1),
    ((1, 4, 10, 10), (6, 2, 3, 3), (1, 2), (1, 1, 1, 1), (2, 1), 2),
    ((2, 6, 9, 9), (6, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    ((1, 4, 8, 8), (8, 1, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 4),  # depthwise, multiplier 2
    ((1, 6, 11, 9), (9, 2, 2, 3), (3, 2), (0, 2, 1, 0), (3, 2), 3),
    ((3, 2, 5, 5), (4, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1
]


@pytest.mark.parametrize(("dshape", "wshape", "strides", "padding", "dilation", "groups"), _CONV_CASES)
def test_conv2d_matches_onnx(dshape: tuple[int, ...], wshape: tuple[int, ...], strides: tuple[int, int],
                             padding: tuple[int, ...], dilation: tuple[int, int], groups: int) -> None:
    """conv2d's compute matches ONNX Conv with strides, padding, dilation and groups."""
    x, w = rand(*dshape), rand(*wshape)
    got = run(nn.conv2d, x, w, strides=strides, padding=padding, dilation=dilation, groups=groups)
    want = onnx_run("Conv", [x, w], strides=list(strides), pads=list(padding), dilations=list(dilation),
                    group=groups, kernel_shape=list(wshape[2:]))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _naive_conv2d(x: np.ndarray, w: np.ndarray, strides: tuple[int, int], padding: tuple[int, ...],
                  dilation: tuple[int, int], groups: int) -> np.ndarray:
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0], padding[2]), (padding[1], padding[3])))
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b, oc, i, j in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // og
        acc = 0.0
        for ic, p, q in itertools.product(range(cg), range(kh), range(kw)):
            acc += (xp[b, g * cg + ic, i * strides[0] + p * dilation[0], j * strides[1] + q * dilation[1]]
                    * w[oc, ic, p, q])
        out[b, oc, i, j] = acc
    return out


@pytest.mark.parametrize(("dshape", "wshape", "strides", "padding", "dilation", "groups"), _CONV_CASES[:5])
def test_conv2d_matches_naive_loop(dshape: tuple[int, ...], wshape: tuple[int, ...], strides: tuple[int, int],
                                   padding: tuple[int, ...], dilation: tuple[int, int], groups: int) -> None:
    """conv2d's compute matches a direct Python loop over output pixels."""
    x, w = rand(*dshape), rand(*wshape)
    got = run(nn.conv2d, x, w, strides=strides, padding=padding, dilation=dilation, groups=groups)
    want = _naive_conv2d(x, w, strides, padding, dilation, groups)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_out_dtype_and_float32() -> None:
    """conv2d keeps float32 as float32, and out_dtype widens integer inputs before accumulating."""
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    assert run(nn.conv2d, x, w).dtype == np.float32
    xi = RNG.integers(-100, 100, (1, 2, 5, 5)).astype("int8")
    wi = RNG.integers(-100, 100, (3, 2, 3, 3)).astype("int8")
    got = run(nn.conv2d, xi, wi, out_dtype="int32", padding=1)
    assert got.dtype == np.int32
    want = _naive_conv2d(xi.astype(np.int64), wi.astype(np.int64), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_array_equal(got, want.astype(np.int64))


def test_conv2d_reasonably_fast() -> None:
    """conv2d on a ResNet-sized layer (1x64x56x56, 64 3x3 filters) is vectorized, not a pixel loop."""
    import time

    x, w = rand(1, 64, 56, 56), rand(64, 64, 3, 3)
    dw = rand(64, 1, 3, 3)
    t0 = time.perf_counter()
    run(nn.conv2d, x, w, padding=1)
    run(nn.conv2d, x, dw, padding=1, groups=64)
    assert time.perf_counter() - t0 < 10.0


# -- pooling ---------------------------------------------------------------------------------------------


_POOL_CASES = [
    # data shape, pool_size, strides, padding, dilation, ceil_mode
    ((1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((1, 2, 7, 8), (3, 2), (1, 2), (1, 0, 1, 1), (1, 1), False),
    ((1, 2, 7, 7), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((1, 2, 8, 9), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((1, 2, 10, 10), (3, 3), (3, 3), (1, 1, 0, 0), (1, 1), True),
    ((1, 2, 9, 9), (2, 2), (1, 1), (1, 1, 1, 1), (2, 2), False),
    ((1, 2, 10, 9), (2, 3), (2, 1), (0, 1, 1, 0), (2, 1), True),
]


@pytest.mark.parametrize(("shape", "pool", "strides", "padding", "dilation", "ceil_mode"), _POOL_CASES)
def test_max_pool2d_matches_onnx(shape: tuple[int, ...], pool: tuple[int, int], strides: tuple[int, int],
                                 padding: tuple[int, ...], dilation: tuple[int, int],
                                 ceil_mode: bool) -> None:
    """max_pool2d matches ONNX MaxPool with padding, dilation and ceil_mode."""
    x = rand(*shape)
    got = run(nn.max_pool2d, x, pool_size=pool, strides=strides, padding=padding, dilation=dilation,
              ceil_mode=ceil_mode)
    want = onnx_run("MaxPool", [x], kernel_shape=list(pool), strides=list(strides), pads=list(padding),
                    dilations=list(dilation), ceil_mode=int(ceil_mode))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize(("shape", "pool", "strides", "padding", "dilation", "ceil_mode"), _POOL_CASES)
def test_avg_pool2d_matches_onnx(shape: tuple[int, ...], pool: tuple[int, int], strides: tuple[int, int],
                                 padding: tuple[int, ...], dilation: tuple[int, int], ceil_mode: bool,
                                 count_include_pad: bool) -> None:
    """avg_pool2d matches ONNX AveragePool with padding, dilation, ceil_mode and count_include_pad."""
    x = rand(*shape)
    got = run(nn.avg_pool2d, x, pool_size=pool, strides=strides, padding=padding, dilation=dilation,
              ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    want = onnx_run("AveragePool", [x], kernel_shape=list(pool), strides=list(strides), pads=list(padding),
                    dilations=list(dilation), ceil_mode=int(ceil_mode),
                    count_include_pad=int(count_include_pad))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _naive_pool(x: np.ndarray, pool: tuple[int, int], strides: tuple[int, int], padding: tuple[int, ...],
                ceil_mode: bool, kind: str, count_include_pad: bool = False) -> np.ndarray:
    n, c, h, w = x.shape
    sizes = []
    for dim, k, s, p0, p1 in ((h, pool[0], strides[0], padding[0], padding[2]),
                              (w, pool[1], strides[1], padding[1], padding[3])):
        o = (math.ceil if ceil_mode else math.floor)((dim + p0 + p1 - k) / s) + 1
        if ceil_mode and (o - 1) * s >= dim + p0:
            o -= 1
        sizes.append(o)
    out = np.zeros((n, c, *sizes))
    for i, j in itertools.product(range(sizes[0]), range(sizes[1])):
        vals, count = [], 0
        for p, q in itertools.product(range(pool[0]), range(pool[1])):
            r, col = i * strides[0] + p - padding[0], j * strides[1] + q - padding[1]
            if 0 <= r < h and 0 <= col < w:
                vals.append(x[:, :, r, col])
                count += 1
            elif -padding[0] <= r < h + padding[2] and -padding[1] <= col < w + padding[3]:
                count += count_include_pad
        if kind == "max":
            out[:, :, i, j] = np.max(vals, axis=0)
        else:
            out[:, :, i, j] = np.sum(vals, axis=0) / count
    return out


@pytest.mark.parametrize(("shape", "pool", "strides", "padding"), [
    ((1, 2, 7, 7), (3, 3), (3, 3), (1, 1, 1, 1)),
    ((1, 1, 6, 11), (2, 3), (3, 4), (0, 1, 1, 0)),
    ((2, 1, 5, 5), (3, 3), (2, 2), (2, 2, 2, 2)),
    ((1, 2, 7, 7), (3, 3), (3, 3), (0, 0, 0, 0)),  # the last window starts on the last row
])
def test_pools_ceil_mode_match_naive_loop(shape: tuple[int, ...], pool: tuple[int, int],
                                          strides: tuple[int, int], padding: tuple[int, ...]) -> None:
    """With ceil_mode, max/avg pooling match a direct loop: windows past the padding are clipped.

    (ONNX's reference AveragePool shifts such windows when they overhang by 2+ rows, so it is not used here.)
    """
    x = rand(*shape)
    for ceil_mode, cip in itertools.product([False, True], [False, True]):
        kw = {"pool_size": pool, "strides": strides, "padding": padding, "ceil_mode": ceil_mode}
        np.testing.assert_array_equal(run(nn.max_pool2d, x, **kw),
                                      _naive_pool(x, pool, strides, padding, ceil_mode, "max"))
        np.testing.assert_allclose(run(nn.avg_pool2d, x, count_include_pad=cip, **kw),
                                   _naive_pool(x, pool, strides, padding, ceil_mode, "avg", cip), rtol=1e-5)


def test_pool_type_relation_and_errors() -> None:
    """Pool relations give (N, C, OH, OW); bad rank or a window that does not fit is a TypeCheckError."""
    x = pyir.var("x", shape=(1, 3, 7, 7))
    assert type_of(nn.max_pool2d(x, pool_size=2, strides=2)).shape == (1, 3, 3, 3)
    assert type_of(nn.max_pool2d(x, pool_size=2, strides=2, ceil_mode=True)).shape == (1, 3, 4, 4)
    assert type_of(nn.avg_pool2d(x, pool_size=3, padding=1)).shape == (1, 3, 7, 7)
    assert nn.max_pool2d(x, pool_size=3).attrs["pool_size"] == (3, 3)
    with pytest.raises(pyir.TypeCheckError, match=r"\(1, 3, 7, 7\)"):
        type_of(nn.max_pool2d(x, pool_size=8))
    with pytest.raises(pyir.TypeCheckError, match="4-D"):
        type_of(nn.avg_pool2d(pyir.var("y", shape=(3, 7, 7)), pool_size=2))
    with pytest.raises(pyir.AttrError, match="layout") as ei:
        nn.max_pool2d(x, pool_size=2, layout="NCHW2h")  # H and W may not be split (as in TVM)
    assert "nn.max_pool2d" in str(ei.value)


def test_max_pool2d_integer_padding() -> None:
    """max_pool2d of integers pads with the dtype's minimum, so padding never wins."""
    x = -RNG.integers(1, 100, (1, 1, 4, 4)).astype("int32")
    got = run(nn.max_pool2d, x, pool_size=3, padding=1)
    np.testing.assert_array_equal(got, _naive_pool(x, (3, 3), (1, 1), (1, 1, 1, 1), False, "max"))


@pytest.mark.parametrize(("builder", "onnx_op", "ref"), [
    (nn.global_avg_pool2d, "GlobalAveragePool", np.mean),
    (nn.global_max_pool2d, "GlobalMaxPool", np.max),
])
def test_global_pools(builder: Any, onnx_op: str, ref: Any) -> None:
    """Global pools reduce H and W to (N, C, 1, 1) like ONNX and numpy."""
    x = rand(2, 3, 5, 4)
    got = run(builder, x)
    assert got.shape == (2, 3, 1, 1)
    np.testing.assert_allclose(got, onnx_run(onnx_op, [x]), rtol=1e-6)
    np.testing.assert_allclose(got, ref(x, axis=(2, 3), keepdims=True), rtol=1e-6)
    with pytest.raises(pyir.TypeCheckError, match="4-D"):
        type_of(builder(pyir.var("y", shape=(3, 5))))


# -- normalization ---------------------------------------------------------------------------------------


def _bn_inputs(c: int) -> list[np.ndarray]:
    return [rand(c), rand(c), rand(c), np.abs(rand(c)) + 0.1]


def test_batch_norm_type_is_tuple() -> None:
    """batch_norm's relation is TupleType(out, mean, var) like Relay, with C taken on ``axis``."""
    args = [pyir.var("x", shape=(2, 3, 4, 5))] + [pyir.var(f"p{i}", shape=(3,)) for i in range(4)]
    t = type_of(nn.batch_norm(*args))
    vec = pyir.TensorType((3,))
    assert t is pyir.TupleType([pyir.TensorType((2, 3, 4, 5)), vec, vec])
    args5 = [pyir.var("x", shape=(2, 3, 4, 5))] + [pyir.var(f"q{i}", shape=(5,)) for i in range(4)]
    assert type_of(nn.batch_norm(*args5, axis=-1)).fields[1] is pyir.TensorType((5,))
    with pytest.raises(pyir.TypeCheckError, match=r"moving_var.*\(2, 3, 4, 5\)"):
        type_of(nn.batch_norm(*args[:4], pyir.var("bad", shape=(4,))))


def test_batch_norm_matches_onnx() -> None:
    """batch_norm (inference) matches ONNX BatchNormalization and returns the moving stats."""
    x = rand(2, 3, 4, 5)
    params = _bn_inputs(3)
    out, mean, var = run(nn.batch_norm, x, *params, epsilon=1e-3)
    want = onnx_run("BatchNormalization", [x, *params], opset=15, epsilon=1e-3)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mean, params[2])
    np.testing.assert_array_equal(var, params[3])


def test_batch_norm_axis_center_scale() -> None:
    """batch_norm normalizes along any axis and honours center=False / scale=False."""
    x = rand(2, 4, 3)
    g, b, m, v = _bn_inputs(3)
    for center, scale in itertools.product([True, False], repeat=2):
        out = run(nn.batch_norm, x, g, b, m, v, axis=2, center=center, scale=scale)[0]
        want = (x - m) / np.sqrt(v + 1e-5) * (g if scale else 1) + (b if center else 0)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_layer_norm_matches_onnx_and_loop() -> None:
    """layer_norm over the last axis matches ONNX LayerNormalization; over axis 1 a direct loop."""
    x, g, b = rand(3, 4, 6), rand(6), rand(6)
    got = run(nn.layer_norm, x, g, b, epsilon=1e-5)
    np.testing.assert_allclose(got, onnx_run("LayerNormalization", [x, g, b], opset=17, axis=-1),
                               rtol=1e-4, atol=1e-5)
    g4, b4 = rand(4), rand(4)
    got = run(nn.layer_norm, x, g4, b4, axis=1)
    for i, k in itertools.product(range(3), range(6)):
        col = x[i, :, k].astype(np.float64)
        want = (col - col.mean()) / np.sqrt(col.var() + 1e-5) * g4 + b4
        np.testing.assert_allclose(got[i, :, k], want, rtol=1e-4, atol=1e-5)
    with pytest.raises(pyir.TypeCheckError, match="gamma"):
        type_of(nn.layer_norm(*(pyir.var(n, shape=s) for n, s in [("x", (3, 6)), ("g", (3,)), ("b", (6,))])))


def _naive_lrn(x: np.ndarray, size: int, axis: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    xm = np.moveaxis(x.astype(np.float64), axis, 0)
    out = np.empty_like(xm)
    c = xm.shape[0]
    for i in range(c):
        lo, hi = max(0, i - (size - 1) // 2), min(c - 1, i + math.ceil((size - 1) / 2))
        s = sum(xm[j] ** 2 for j in range(lo, hi + 1))
        out[i] = xm[i] / (bias + alpha / size * s) ** beta
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_lrn_matches_onnx(size: int) -> None:
    """lrn matches ONNX LRN (the reference evaluator loops over dim 0 as channels, so N == C here)."""
    x = rand(6, 6, 3, 2)
    got = run(nn.lrn, x, size=size, alpha=0.5, beta=0.75, bias=1.5)
    want = onnx_run("LRN", [x], size=size, alpha=0.5, beta=0.75, bias=1.5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("shape", "size", "axis"),
                         [((2, 7, 3, 3), 5, 1), ((2, 3, 4), 3, -1), ((5, 2), 4, 0)])
def test_lrn_matches_naive_loop(shape: tuple[int, ...], size: int, axis: int) -> None:
    """lrn matches a direct loop over channels, on any axis."""
    x = rand(*shape)
    got = run(nn.lrn, x, size=size, axis=axis, alpha=0.3)
    np.testing.assert_allclose(got, _naive_lrn(x, size, axis, 2.0, 0.3, 0.75), rtol=1e-5, atol=1e-6)


# -- dense, bias_add, activations -------------------------------------------------------------------------


def test_dense_type_and_compute() -> None:
    """dense maps (..., K) x (N, K) to (..., N) and matches a direct loop."""
    x, w = rand(2, 3, 5), rand(4, 5)
    got = run(nn.dense, x, w, units=4)
    assert got.shape == (2, 3, 4)
    want = np.zeros((2, 3, 4))
    for i, j, n in itertools.product(range(2), range(3), range(4)):
        want[i, j, n] = sum(float(x[i, j, k]) * float(w[n, k]) for k in range(5))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert run(nn.dense, x, w, out_dtype="float64").dtype == np.float64
    with pytest.raises(pyir.TypeCheckError, match=r"\(2, 3, 5\).*\(4, 6\)"):
        type_of(call_of(nn.dense, x, rand(4, 6)))
    with pytest.raises(pyir.TypeCheckError, match="units"):
        type_of(call_of(nn.dense, x, w, units=3))


def test_bias_add_type_and_compute() -> None:
    """bias_add adds a 1-D bias along ``axis``; a size mismatch is a TypeCheckError."""
    x, b = rand(2, 3, 4), rand(3)
    got = run(nn.bias_add, x, b)
    for c in range(3):
        np.testing.assert_array_equal(got[:, c], x[:, c] + b[c])
    b4 = rand(4)
    np.testing.assert_array_equal(run(nn.bias_add, x, b4, axis=-1), x + b4)
    with pytest.raises(pyir.TypeCheckError, match=r"bias.*\(2, 3, 4\)"):
        type_of(call_of(nn.bias_add, x, b4))


def test_relu_and_leaky_relu() -> None:
    """relu and leaky_relu match their definitions elementwise and keep the dtype."""
    x = rand(3, 4)
    np.testing.assert_array_equal(run(nn.relu, x), np.where(x > 0, x, 0))
    np.testing.assert_allclose(run(nn.leaky_relu, x, alpha=0.2), np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    xi = np.arange(-3, 3, dtype="int32")
    np.testing.assert_array_equal(run(nn.relu, xi), [0, 0, 0, 0, 1, 2])


def test_prelu_type_and_compute() -> None:
    """prelu uses one slope per channel of ``axis``; a wrong slope count is a TypeCheckError."""
    x, a = rand(2, 3, 4), rand(3)
    got = run(nn.prelu, x, a)
    for n, c, k in itertools.product(range(2), range(3), range(4)):
        v = x[n, c, k]
        assert got[n, c, k] == pytest.approx(v if v > 0 else a[c] * v, rel=1e-6)
    np.testing.assert_allclose(run(nn.prelu, x, rand(4), axis=2).shape, (2, 3, 4))
    with pytest.raises(pyir.TypeCheckError, match="alpha"):
        type_of(call_of(nn.prelu, x, rand(4)))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax_match_onnx(axis: int) -> None:
    """softmax / log_softmax match ONNX Softmax / LogSoftmax on any axis."""
    x = rand(3, 4, 5) * 5
    np.testing.assert_allclose(run(nn.softmax, x, axis=axis), onnx_run("Softmax", [x], opset=13, axis=axis),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(run(nn.log_softmax, x, axis=axis),
                               onnx_run("LogSoftmax", [x], opset=13, axis=axis), rtol=1e-5, atol=1e-5)


def test_softmax_is_numerically_stable() -> None:
    """softmax / log_softmax of huge inputs are finite (max is subtracted first)."""
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], dtype="float32")
    s = run(nn.softmax, x)
    ls = run(nn.log_softmax, x)
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(ls))
    np.testing.assert_allclose(s.sum(axis=-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(ls[1], np.log(1 / 3), rtol=1e-6)
    with pytest.raises(pyir.TypeCheckError, match="floating"):
        type_of(nn.softmax(pyir.var("i", shape=(2,), dtype="int32")))
    with pytest.raises(pyir.TypeCheckError, match="axis"):
        type_of(nn.softmax(pyir.var("f", shape=(2,)), axis=3))


# -- dropout, batch_flatten, pad ---------------------------------------------------------------------------


def test_dropout_is_identity() -> None:
    """dropout at inference has the input's type and returns the input itself (not a tuple)."""
    x = rand(2, 3)
    c = call_of(nn.dropout, x, rate=0.3)
    assert type_of(c) is c.args[0].type_annotation
    np.testing.assert_array_equal(run(nn.dropout, x), x)


def test_batch_flatten() -> None:
    """batch_flatten maps (N, ...) to (N, prod(...)) in row-major order."""
    x = rand(2, 3, 4, 5)
    got = run(nn.batch_flatten, x)
    np.testing.assert_array_equal(got, x.reshape(2, 60))
    assert type_of(call_of(nn.batch_flatten, rand(0, 3))).shape == (0, 3)
    assert run(nn.batch_flatten, rand(0, 3)).shape == (0, 3)
    assert run(nn.batch_flatten, rand(4)).shape == (4, 1)


def test_pad_type_and_compute() -> None:
    """pad takes a (before, after) pair per axis (Relay's form; flat widths are accepted) and the
    pad value as a scalar input; constant/edge/reflect match a direct loop."""
    x = rand(2, 3)
    v7 = np.array(7.0, "float32")
    got = run(nn._pad_op, x, v7, pad_width=((1, 0), (2, 1)))
    assert got.shape == (3, 6)
    for i, j in itertools.product(range(3), range(6)):
        src = (i - 1, j - 2)
        inside = 0 <= src[0] < 2 and 0 <= src[1] < 3
        assert got[i, j] == (x[src] if inside else np.float32(7.0))
    edge = run(nn._pad_op, x, v7, pad_width=(0, 1, 1, 0), pad_mode="edge")
    for i, j in itertools.product(range(3), range(4)):
        assert edge[i, j] == x[min(i, 1), max(j - 1, 0)]
    refl = run(nn._pad_op, x, v7, pad_width=((1, 1), (2, 2)), pad_mode="reflect")
    np.testing.assert_array_equal(refl, np.pad(x, ((1, 1), (2, 2)), mode="reflect"))
    with pytest.raises(pyir.TypeCheckError, match=r"a \(before, after\) pair per axis.*\(2, 3\)"):
        type_of(call_of(nn._pad_op, x, v7, pad_width=((1, 1),)))
    with pytest.raises(pyir.TypeCheckError, match="reflect"):
        type_of(call_of(nn._pad_op, x, v7, pad_width=((2, 0), (0, 0)), pad_mode="reflect"))
    with pytest.raises(pyir.TypeCheckError, match="scalar"):
        type_of(call_of(nn._pad_op, x, x, pad_width=((0, 0), (0, 0))))
    with pytest.raises(pyir.AttrError, match="pad_width"):
        nn.pad(pyir.var("y", shape=(2,)), (1, 1, 1))
    with pytest.raises(pyir.AttrError, match="non-negative"):
        nn.pad(pyir.var("y", shape=(2,)), ((1, -1),))
    y = pyir.var("y", shape=(2, 3))
    assert nn.pad(y, (1, 0, 2, 1)) is nn.pad(y, ((1, 0), (2, 1)))  # flat widths, canonical pairs
    assert nn.pad(y, ((1, 0), (2, 1))).args[1] is pyir.const(0)  # relay.const(0): an int32, cast


@pytest.mark.parametrize(("builder", "arrays", "attrs"), [
    (nn.relu, [(2, 3)], {}), (nn.leaky_relu, [(2, 3)], {}), (nn.prelu, [(2, 3), (3,)], {}),
    (nn.conv2d, [(1, 2, 5, 5), (3, 2, 3, 3)], {"padding": 1}),
    (nn.max_pool2d, [(1, 2, 5, 5)], {"pool_size": 2}),
    (nn.avg_pool2d, [(1, 2, 5, 5)], {"pool_size": 3, "padding": 1}),
    (nn.global_avg_pool2d, [(1, 2, 5, 5)], {}), (nn.global_max_pool2d, [(1, 2, 5, 5)], {}),
    (nn.layer_norm, [(2, 3), (3,), (3,)], {}), (nn.lrn, [(1, 6, 2, 2)], {}),
    (nn.dense, [(2, 3), (4, 3)], {}), (nn.bias_add, [(2, 3), (3,)], {}),
    (nn.softmax, [(2, 3)], {}), (nn.log_softmax, [(2, 3)], {}), (nn.dropout, [(2, 3)], {}),
    (nn.batch_flatten, [(2, 3, 2)], {}), (nn._pad_op, [(2, 3), ()], {"pad_width": (1, 1, 1, 1)}),
], ids=lambda v: getattr(v, "__name__", ""))
def test_float32_stays_float32(builder: Any, arrays: list[tuple[int, ...]], attrs: dict[str, Any]) -> None:
    """Every nn compute keeps float32 inputs float32, as its type relation says."""
    out = run(builder, *(rand(*s) for s in arrays), **attrs)
    assert out.dtype == np.float32
