"""The indexing, image and vision operators (pyir.op.index, pyir.op.image): typed builders,
type relations (symbolic and ``?`` dimensions, errors naming the shapes), numpy results against
hand-computed values, text round trips and the standard passes."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.errors import AttrError, EvaluationError, TypeCheckError
from pyir.ir.dims import Any as AnyDim
from pyir.op import image, index
from pyir.testing import check_pass
from pyir.transform import FoldConstant, FuseOps, Sequential, SimplifyExpr


def _run(build, *arrays):
    xs = [pyir.var(f"x{i}", pyir.TensorType(a.shape, a.dtype)) for i, a in enumerate(arrays)]
    f = pyir.Function(xs, build(*xs))
    return pyir.evaluate(f, *arrays), f


def test_gather_nd_batch_dims() -> None:
    data = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    idx = np.array([[1], [0]], dtype=np.int64)
    y, f = _run(lambda d, i: index.gather_nd(d, i, batch_dims=1), data, idx)
    np.testing.assert_array_equal(y, np.array([[2, 3], [4, 5]], np.float32))
    assert f.body.checked_type == pyir.TensorType((2, 2), "float32")
    y, _ = _run(lambda d, i: index.gather_nd(d, i), data, np.array([[0, 1], [-1, 0]], np.int64))
    np.testing.assert_array_equal(y, data[[0, 1], [1, 0]])


def test_gather_nd_type_errors_name_shapes() -> None:
    d = pyir.var("d", pyir.TensorType((2, 3), "float32"))
    i = pyir.var("i", pyir.TensorType((4, 3), "int64"))
    with pytest.raises(TypeCheckError, match=r"gather_nd.*\(4, 3\)"):
        _ = index.gather_nd(d, i).checked_type
    fi = pyir.var("fi", pyir.TensorType((4, 1), "float32"))
    with pytest.raises(TypeCheckError, match="indices must be integers"):
        _ = index.gather_nd(d, fi).checked_type


def test_gather_scatter_elements() -> None:
    data = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    idx = np.array([[2, -3], [1, 1]], np.int64)
    y, _ = _run(lambda d, i: index.gather_elements(d, i, axis=1), data, idx)
    np.testing.assert_array_equal(y, np.take_along_axis(data, np.array([[2, 0], [1, 1]]), axis=1))
    upd = np.array([[10, 20], [30, 40]], np.float32)
    y, _ = _run(lambda d, i, u: index.scatter_elements(d, i, u, axis=1, reduction="add"), data, idx, upd)
    np.testing.assert_array_equal(y, np.array([[21, 2, 13], [4, 75, 6]], np.float32))
    with pytest.raises(EvaluationError, match="out of range"):
        _run(lambda d, i: index.gather_elements(d, i, axis=1), data, np.array([[3, 0], [0, 0]], np.int64))


@pytest.mark.parametrize("reduction,expect", [("none", 7.0), ("add", 1 + 3 + 4), ("mul", 1 * 3 * 4),
                                              ("max", 4.0), ("min", 1.0)])
def test_scatter_nd_reductions(reduction: str, expect: float) -> None:
    data = np.ones((2, 2), np.float32)
    idx = np.array([[0, 1], [0, 1]], np.int64)
    upd = np.array([3, 4], np.float32) if reduction != "none" else np.array([7, 7], np.float32)
    y, _ = _run(lambda d, i, u: index.scatter_nd(d, i, u, reduction=reduction), data, idx, upd)
    assert y[0, 1] == expect and y[0, 0] == 1 and y.dtype == np.float32
    with pytest.raises(AttrError, match="reduction"):
        index.scatter_nd(pyir.const(data), pyir.const(idx), pyir.const(upd), reduction="sum")


def test_unique_four_outputs_with_unknown_lengths() -> None:
    x = np.array([2, 1, 1, 3, 4, 3], np.float32)
    (y, i, inv, c), f = _run(lambda v: index.unique(v, is_sorted=False), x)
    np.testing.assert_array_equal(y, [2, 1, 3, 4])
    np.testing.assert_array_equal(i, [0, 1, 3, 4])
    np.testing.assert_array_equal(inv, [0, 1, 1, 2, 3, 2])
    np.testing.assert_array_equal(c, [1, 2, 2, 1])
    t = f.body.checked_type
    assert t.fields[0].shape == (AnyDim,) and t.fields[2].shape == (6,)


def test_compress_reverse_sequence_blocks() -> None:
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y, f = _run(lambda a, c: index.compress(a, c, axis=0), x, np.array([0, 1, 1], bool))
    np.testing.assert_array_equal(y, x[1:])
    assert f.body.checked_type.shape == (AnyDim, 2)
    s = np.arange(16, dtype=np.float32).reshape(4, 4)
    y, _ = _run(lambda a, n: index.reverse_sequence(a, n, seq_axis=0, batch_axis=1), s,
                np.array([4, 3, 2, 1], np.int64))
    np.testing.assert_array_equal(y[:, 0], s[::-1, 0])
    np.testing.assert_array_equal(y[:, 1], [s[2, 1], s[1, 1], s[0, 1], s[3, 1]])
    img = np.random.default_rng(0).standard_normal((1, 8, 2, 3)).astype(np.float32)
    for mode in ("DCR", "CRD"):
        back, _ = _run(lambda a, m=mode: index.space_to_depth(index.depth_to_space(a, block_size=2, mode=m),
                                                             block_size=2, mode=m), img)
        np.testing.assert_array_equal(back, img)


def test_symbolic_dims_flow_through() -> None:
    n = pyir.sym("n")
    x = pyir.var("x", pyir.TensorType((n, 8, 4, 6), "float32"))
    assert index.space_to_depth(x, block_size=2).checked_type.shape[1:] == (32, 2, 3)
    i = pyir.var("i", pyir.TensorType((n, 5), "int64"))
    d = pyir.var("d", pyir.TensorType((n, 7), "float32"))
    assert index.gather_elements(d, i, axis=1).checked_type.shape == (n, 5)


def test_center_crop_pad_col2im_max_unpool() -> None:
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    y, _ = _run(lambda a: index.center_crop_pad(a, shape=(3, 6)), x)
    assert y.shape == (3, 6)
    np.testing.assert_array_equal(y[:, 1:5], x[1:4])
    assert not y[:, 0].any() and not y[:, 5].any()
    # col2im of unfolded 2x2 blocks (stride 2) is the image itself
    img = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    cols = img.reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 4, 4)
    y, _ = _run(lambda c: index.col2im(c, image_shape=(4, 4), block_shape=(2, 2), strides=(2, 2)), cols)
    np.testing.assert_array_equal(y, img)
    v = np.array([[[[5.0, 6.0]]]], np.float32)
    i = np.array([[[[1, 2]]]], np.int64)
    y, _ = _run(lambda a, b: index.max_unpool(a, b, kernel_shape=(1, 2), strides=(1, 2)), v, i)
    np.testing.assert_array_equal(y, [[[[0, 5, 6, 0]]]])


def test_non_max_suppression_and_roi_align() -> None:
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 10, 1, 11]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    sel, f = _run(lambda b, s: index.non_max_suppression(
        b, s, pyir.const(np.array([3], np.int64)), pyir.const(np.array([0.5], np.float32)),
        pyir.const(np.zeros((0,), np.float32))), boxes, scores)
    np.testing.assert_array_equal(sel, [[0, 0, 0], [0, 0, 2]])
    assert f.body.checked_type.shape == (AnyDim, 3)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 4, 4]], np.float32)
    y, _ = _run(lambda a, r: index.roi_align(a, r, pyir.const(np.zeros(1, np.int64)), output_height=1,
                                             output_width=1,
                                             coordinate_transformation_mode="output_half_pixel",
                                             sampling_ratio=2), x, rois)
    assert y.shape == (1, 1, 1, 1) and y.dtype == np.float32
    # samples at 1 and 3 along each axis, clamped bilinear: the mean of x[1|3, 1|3]
    assert np.isclose(y[0, 0, 0, 0], np.mean([x[0, 0, 1, 1], x[0, 0, 1, 3], x[0, 0, 3, 1], x[0, 0, 3, 3]]))


def test_resize_modes_match_hand_values() -> None:
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    y, f = _run(lambda a: image.resize(a, size=(1, 1, 4, 4), scales=(1, 1, 2, 2), mode="nearest"), x)
    np.testing.assert_array_equal(y[0, 0], np.repeat(np.repeat(x[0, 0], 2, 0), 2, 1))
    assert y.dtype == np.float32 and f.body.checked_type.shape == (1, 1, 4, 4)
    y, _ = _run(lambda a: image.resize(a, size=(1, 1, 1, 3), scales=(1, 1, 0.5, 1.5), mode="linear",
                                       coordinate_transformation_mode="align_corners"), x)
    np.testing.assert_allclose(y[0, 0, 0], [1.0, 1.5, 2.0])
    y, _ = _run(lambda a: image.resize(a, size=(1, 1, 2, 2), scales=(1, 1, 1, 1),
                                       roi=(0, 0, 0, 0, 1, 1, 2, 2),
                                       mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                       extrapolation_value=-1.0), x)
    assert y[0, 0, 1, 1] == -1.0 and y[0, 0, 0, 0] == 1.0
    with pytest.raises(AttrError, match="antialias"):
        image.resize(pyir.const(x), size=(1, 1, 2, 2), scales=(1, 1, 1, 1), antialias=True)


def test_resize2d_is_unchanged() -> None:
    """The existing image.resize2d keeps its attributes (and so its node ids)."""
    names = [s.name for s in op.get_op_def("image.resize2d").attrs]
    assert names == ["size", "layout", "method", "coordinate_transformation_mode", "rounding_method"]


def test_grid_sample_identity_and_affine_grid() -> None:
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
    grid, _ = _run(lambda t: image.affine_grid(t, size=(2, 3, 4, 5)), theta)
    assert grid.shape == (2, 4, 5, 2)
    for mode in ("linear", "nearest", "cubic"):
        y, _ = _run(lambda a, g, m=mode: image.grid_sample(a, g, mode=m), x, grid)
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-5)


def test_index_ops_print_parse_and_passes() -> None:
    d = pyir.var("d", pyir.TensorType((3, 4), "float32"))
    i = pyir.var("i", pyir.TensorType((3, 2), "int64"))
    body = op.add(index.gather_elements(d, i, axis=1), pyir.const(np.float32(1.0)))
    body = index.scatter_elements(d, i, body, axis=1, reduction="max")
    mod = pyir.Module({"main": pyir.Function([d, i], body)})
    text = mod.astext()
    assert "scatter_elements" in text and 'reduction="max"' in text
    assert pyir.parse(text).astext() == text
    # random int64 indices would be out of range: bind them to constants and run the pipeline
    idx = np.array([[0, 3], [1, 2], [-1, 0]], np.int64)
    mod2 = pyir.Module({"main": pyir.Function([d], pyir.ir.expr.Let(i, pyir.const(idx), body))})
    check_pass(Sequential([SimplifyExpr(), FoldConstant(), FuseOps()]), mod2, idempotent=False)


def test_deformable_conv2d_with_zero_offsets_is_conv2d() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    off = np.zeros((1, 2 * 2 * 9, 3, 3), np.float32)
    empty = pyir.const(np.zeros((0,), np.float32))
    y, f = _run(lambda a, b, o: image.deformable_conv2d(a, b, o, empty, empty, groups=2, offset_groups=2,
                                                        strides=(2, 2), padding=(1, 1, 1, 1)), x, w, off)
    want, _ = _run(lambda a, b: op.nn.conv2d(a, b, strides=(2, 2), padding=(1, 1, 1, 1), groups=2), x, w)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert f.body.checked_type == pyir.TensorType((1, 6, 3, 3), "float32")


def test_dynamic_to_static_makes_the_dyn_variants_static() -> None:
    from pyir.transform import DynamicToStatic

    x = pyir.var("x", pyir.TensorType((1, 1, 4, 4), "float32"))
    f32 = np.zeros((0,), np.float32)
    r = image.dyn_resize(x, pyir.const(f32), pyir.const(f32), pyir.const(np.array([2, 6], np.int64)),
                         axes=(2, 3), mode="linear")
    c = index.dyn_center_crop_pad(r, pyir.const(np.array([1, 4], np.int64)), axes=(2, 3))
    mod = pyir.Module({"main": pyir.Function([x], c)})
    assert mod["main"].body.checked_type.shape[2] is AnyDim
    out = check_pass(DynamicToStatic(), mod)  # the static calls derive from the consumed shapes
    assert out["main"].body.checked_type == pyir.TensorType((1, 1, 1, 4), "float32")
    assert "dyn." not in out.astext()
