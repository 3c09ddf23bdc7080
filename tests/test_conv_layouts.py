"""Convolution and pooling layouts (issue 14): ``nn.conv2d``'s ``data_layout`` / ``kernel_layout`` /
``out_layout``, ``nn.contrib_conv2d_NCHWc``'s packed layouts and the pools' ``layout``: every layout
against the NCHW computation rearranged with numpy, the relations (symbolic dimensions, attributes,
type errors), the text round trip, and ONNX import staying at NCHW."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pyir
from pyir import op, sym
from pyir.op import nn
from pyir.transform import InferType

RNG = np.random.default_rng(14)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def rearrange(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``x`` in the primal layout ``src`` (``NCHW``) rearranged into ``dst`` (``NHWC``, ``NCHW4c``):
    each split axis reshaped to (outer, inner), then the axes transposed (written independently of
    pyir's layout code)."""
    items = re.findall(r"(\d*)([A-Za-z])", dst)
    labels, shape = [], []
    for a, n in zip(src, x.shape):
        f = next((int(k) for k, b in items if b == a.lower()), 0)
        if f:
            labels += [a, a.lower()]
            shape += [n // f, f]
        else:
            labels.append(a)
            shape.append(n)
    return np.ascontiguousarray(x.reshape(shape).transpose([labels.index(b) for _, b in items]))


def shape_in(shape: tuple[int, ...], src: str, dst: str) -> tuple[int, ...]:
    return rearrange(np.empty(shape, "float32"), src, dst).shape


def evaluate(call_of: object, *arrays: np.ndarray) -> np.ndarray:
    """``call_of(*vars)`` as a function of variables typed like ``arrays``, type-checked and run by
    the interpreter."""
    vs = [pyir.var(f"a{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = InferType()(pyir.Module.from_expr(pyir.Function(vs, call_of(*vs))))  # type: ignore[operator]
    out = pyir.evaluate(mod, *arrays)
    t = mod["main"].body.checked_type
    assert (out.shape, str(out.dtype)) == (t.shape, t.dtype)
    return out


# (data_layout, kernel_layout, out_layout, groups)
CONV_CASES = [
    ("NHWC", "HWIO", "", 1),
    ("NHWC", "OHWI", "", 2),
    ("NHWC", "HWOI", "NCHW", 1),
    ("HWCN", "IOHW", "", 1),
    ("CHWN", "OIHW", "NHWC", 2),
    ("NCHW", "HWIO", "HWCN", 1),
    ("NCHW4c", "OIHW4i4o", "NCHW4c", 1),
    ("NHWC", "HWIO", "NCHW2c", 2),
    ("NCHW2n", "OIHW2o", "NCHW", 1),
]


@pytest.mark.parametrize(("dl", "kl", "ol", "groups"), CONV_CASES)
def test_conv2d_layouts_compute_the_nchw_result_rearranged(dl: str, kl: str, ol: str, groups: int) -> None:
    x, w = rand(2, 8, 7, 6), rand(8, 8 // groups, 3, 2)
    kw = {"strides": (2, 1), "padding": (1, 0, 1, 1), "dilation": (1, 2), "groups": groups}
    ref = evaluate(lambda a, b: nn.conv2d(a, b, **kw), x, w)
    got = evaluate(lambda a, b: nn.conv2d(a, b, data_layout=dl, kernel_layout=kl, out_layout=ol,
                                          channels=8, kernel_size=(3, 2), **kw),
                   rearrange(x, "NCHW", dl), rearrange(w, "OIHW", kl))
    np.testing.assert_allclose(got, rearrange(ref, "NCHW", ol or dl), rtol=1e-5, atol=1e-5)


def test_contrib_conv2d_nchwc_is_conv2d_on_packed_layouts() -> None:
    """nn.contrib_conv2d_NCHWc between layout_transforms computes the NCHW convolution."""
    x, w = rand(1, 8, 5, 5), rand(4, 8, 3, 3)
    ref = evaluate(lambda a, b: nn.conv2d(a, b, padding=(1, 1)), x, w)

    def packed(a: pyir.Expr, b: pyir.Expr) -> pyir.Expr:
        y = nn.contrib_conv2d_NCHWc(op.layout_transform(a, src_layout="NCHW", dst_layout="NCHW4c"),
                                    op.layout_transform(b, src_layout="OIHW", dst_layout="OIHW4i2o"),
                                    padding=(1, 1), channels=4, kernel_size=(3, 3), data_layout="NCHW4c",
                                    kernel_layout="OIHW4i2o", out_layout="NCHW2c")
        return op.layout_transform(y, src_layout="NCHW2c", dst_layout="NCHW")

    np.testing.assert_allclose(evaluate(packed, x, w), ref, rtol=1e-5, atol=1e-5)
    d, k = pyir.var("d", shape=(1, 2, 5, 5, 4)), pyir.var("k", shape=(2, 2, 3, 3, 4, 2))
    c = nn.contrib_conv2d_NCHWc(d, k, channels=4, kernel_size=(3, 3), data_layout="NCHW4c",
                                kernel_layout="OIHW4i2o", out_layout="NCHW4c", out_dtype="float64")
    assert pyir.infer_type(c) == pyir.TensorType((1, 1, 3, 3, 4), "float64")
    with pytest.raises(pyir.TypeCheckError, match="NCHWc: needs the attributes channels"):
        pyir.infer_type(nn.contrib_conv2d_NCHWc(d, k, data_layout="NCHW4c", kernel_layout="OIHW4i2o"))
    with pytest.raises(pyir.TypeCheckError, match="contrib_conv2d_NCHWc: channels=8 != weight out-channels"):
        pyir.infer_type(nn.contrib_conv2d_NCHWc(d, k, channels=8, kernel_size=(3, 3), data_layout="NCHW4c",
                                                kernel_layout="OIHW4i2o"))
    with pytest.raises(pyir.AttrError, match=r"'nn\.contrib_conv2d_NCHWc', attribute 'data_layout'"):
        nn.contrib_conv2d_NCHWc(d, k, data_layout="NCHW4q")


def test_conv2d_layout_relation_symbolic_and_attributes() -> None:
    """Symbolic dimensions go through the layout; channels / kernel_size / groups / out_dtype are
    checked on the weight seen in OIHW, as TVM's relation does."""
    n, h = sym("n"), sym("h")
    x = pyir.var("x", shape=(n, h, 10, 6))  # NHWC
    w = pyir.var("w", shape=(3, 3, 3, 8))  # HWIO, groups 2: I = 6 / 2
    c = nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO", groups=2, channels=8, kernel_size=(3, 3),
                  padding=(1, 1), out_dtype="float64")
    t = pyir.infer_type(c)
    assert (t.shape[0], t.shape[2:], t.dtype) == (n, (10, 8), "float64")
    assert str(t.shape[1]) == "h"
    packed = nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO", groups=2, out_layout="NCHW4c")
    assert pyir.infer_type(packed).shape[1:] == (2, h - 2, 8, 4)
    pyir.infer_type(nn.conv2d(pyir.var("y", shape=(1, 5, 5, 3)), pyir.var("k", shape=(3, 3, 3, 1)),
                              data_layout="NHWC", kernel_layout="HWOI", groups=3))  # depthwise


def _error(data: tuple[int, ...], weight: tuple[int, ...], **attrs: object) -> str:
    c = nn.conv2d(pyir.var("x", shape=data), pyir.var("w", shape=weight), **attrs)  # type: ignore[arg-type]
    with pytest.raises(pyir.TypeCheckError) as ei:
        pyir.infer_type(c)
    return str(ei.value)


def test_conv2d_layout_type_errors_name_the_op_and_shapes() -> None:
    msg = _error((1, 8, 8, 3), (3, 3, 4, 8), data_layout="NHWC", kernel_layout="HWIO")
    assert "conv2d: input channels 3 != weight in-channels 4" in msg
    assert "(1, 8, 8, 3) in NHWC" in msg and "(3, 3, 4, 8) in HWIO" in msg
    msg = _error((1, 8, 8, 3), (3, 3, 3, 8), data_layout="NHWC", kernel_layout="HWIO", kernel_size=(2, 2))
    assert "conv2d: kernel_size=(2, 2) != weight kernel (3, 3)" in msg
    msg = _error((1, 8, 8), (3, 3, 3, 8), data_layout="NHWC", kernel_layout="HWIO")
    assert "conv2d: data must be 4-D NHWC" in msg and "(1, 8, 8)" in msg
    msg = _error((1, 2, 8, 8, 3), (8, 8, 3, 3), data_layout="NCHW4c")
    assert "conv2d: data of shape (1, 2, 8, 8, 3) in layout NCHW4c" in msg and "4c" in msg
    msg = _error((1, 8, 8, 3), (3, 3, 3, 6), data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW4c")
    assert "conv2d: result" in msg and "cannot split axis C of size 6 by 4" in msg
    with pytest.raises(pyir.AttrError, match=r"'nn\.conv2d', attribute 'kernel_layout': layout 'HWIO2x'"):
        nn.conv2d(pyir.var("x", shape=(1, 3, 4, 4)), pyir.var("w", shape=(1, 1, 3, 4)),
                  kernel_layout="HWIO2x")


@pytest.mark.parametrize("layout", ["NHWC", "CHWN", "NCHW4c", "HWNC"])
def test_pools_in_any_layout(layout: str) -> None:
    x = rand(2, 8, 7, 6)
    xl = rearrange(x, "NCHW", layout)
    for build, kw in ((nn.max_pool2d, {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 0, 1, 1)}),
                      (nn.avg_pool2d, {"pool_size": 2, "ceil_mode": True, "count_include_pad": True}),
                      (nn.global_avg_pool2d, {}), (nn.global_max_pool2d, {})):
        ref = evaluate(lambda a, b=build, k=kw: b(a, **k), x)  # type: ignore[misc]
        got = evaluate(lambda a, b=build, k=kw: b(a, layout=layout, **k), xl)  # type: ignore[misc]
        np.testing.assert_allclose(got, rearrange(ref, "NCHW", layout), rtol=1e-6, err_msg=build.op.name)
    with pytest.raises(pyir.TypeCheckError, match=r"max_pool2d: .*\(2, 8, 7\)"):
        pyir.infer_type(nn.max_pool2d(pyir.var("y", shape=(2, 8, 7)), pool_size=2, layout=layout))


def test_layouts_print_and_parse_back() -> None:
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 6, 6, 4), float32], %w: Tensor[(3, 3, 8, 8), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3], data_layout="NCHW4c", kernel_layout="HWIO", out_layout="NHWC", out_dtype="float32");
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], layout="NHWC");
  %2 = layout_transform(%1, src_layout="NHWC", dst_layout="NCHW2c");
  %3 = layout_transform(%w, src_layout="HWIO", dst_layout="OIHW2i4o");
  %4 = nn.contrib_conv2d_NCHWc(%2, %3, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3], data_layout="NCHW2c", kernel_layout="OIHW2i4o", out_layout="NCHW4c");
  nn.global_avg_pool2d(%4, layout="NCHW4c")
}
"""  # noqa: E501
    mod = InferType()(pyir.parse(text))
    assert mod["main"].body.checked_type == pyir.TensorType((1, 2, 1, 1, 4), "float32")
    args = rand(1, 2, 6, 6, 4), rand(3, 3, 8, 8)
    out = pyir.evaluate(mod, *args)
    assert out.shape == (1, 2, 1, 1, 4)
    for tvm in (False, True):  # both printed forms parse back to the same program (the same text again)
        printed = mod.astext(tvm=tvm)
        assert 'out_layout="NHWC"' in printed and 'data_layout="NCHW2c"' in printed
        again = InferType()(pyir.parse(printed))
        assert again.astext(tvm=tvm) == printed
        np.testing.assert_array_equal(pyir.evaluate(again, *args), out)


def test_onnx_conv_and_pools_stay_nchw() -> None:
    from onnx import TensorProto, helper

    from pyir.frontend import from_onnx

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
              helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3, 3, 3])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    calls = [n for n in pyir.ir.traverse.post_order(mod["main"]) if isinstance(n, pyir.Call)]
    attrs = {c.op.name: c.attrs for c in calls}
    assert (attrs["nn.conv2d"]["data_layout"], attrs["nn.conv2d"]["kernel_layout"],
            attrs["nn.conv2d"]["out_layout"]) == ("NCHW", "OIHW", "")
    assert attrs["nn.max_pool2d"]["layout"] == attrs["nn.global_avg_pool2d"]["layout"] == "NCHW"
    assert mod["main"].checked_type.ret_type == pyir.TensorType((1, 4, 1, 1), "float32")


def test_alloc_tensor_takes_a_storage_type_and_a_constant_shape_attribute() -> None:
    """The other issue-14 gap of the lowering internals: ``const_shape=meta[relay.Constant][0]`` (TVM keeps
    the shape as a constant; pyir as its ints) and a storage typed with TVM's opaque ``Storage[]``."""
    text = """#[version = "0.0.5"]
def @main(%sto: Tensor[(?), uint8]) {
  %0 = on_device(1, constrain_result=True);
  memory.alloc_tensor(%sto, %0, meta[relay.Constant][0], const_shape=meta[relay.Constant][0], assert_shape=[])
}
"""
    mod = InferType()(pyir.parse(text, meta_table={"relay.Constant": [np.array([4, 2], "int64")]}))
    assert mod["main"].body.checked_type == pyir.TensorType((4, 2), "float32")
    assert mod["main"].body.attrs["const_shape"] == (4, 2)
    assert "const_shape=[4, 2]" in mod.astext(tvm=True)
    with pytest.raises(pyir.ParseError, match="cannot be a constant, except a 1-D integer one"):
        pyir.parse(text, meta_table={"relay.Constant": [np.array([4.0, 2.0], "float32")]})
    from pyir.ir.adt import GlobalTypeVar, TypeCall

    sto = pyir.var("sto", type_annotation=TypeCall(GlobalTypeVar("Storage"), []))
    shape = pyir.const(np.array([3, 2], "int64"))
    fn = pyir.Function([sto], op.memory.alloc_tensor(sto, pyir.const(np.int64(0)), shape, const_shape=(3, 2)))
    assert pyir.infer_type(fn).ret_type == pyir.TensorType((3, 2), "float32")
    with pytest.raises(pyir.TypeCheckError, match="storage must be a storage"):
        pyir.infer_type(op.memory.alloc_tensor(pyir.Tuple([]), pyir.const(np.int64(0)), shape))
