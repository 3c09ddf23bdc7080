"""The interpreter's fast kernels (convolution, pooling, batch norm, erf) against definitions.

The kernels of ``pyir/op/nn.py`` and ``pyir/op/tensor.py`` use per-tap block copies and BLAS;
the oracles here are the direct definitions (windows as a ``sliding_window_view``, sums by
``einsum``, ``math.erf``), on seeded random shapes, strides, dilations, paddings and groups.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import pyir
from pyir import op


def windows(x: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int],
            dilation: tuple[int, int]) -> np.ndarray:
    """The (N, C, OH, OW, KH, KW) strided view of the windows of ``x`` (already padded)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    v = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return v[:, :, ::sh, ::sw, ::dh, ::dw]


def conv_reference(x: np.ndarray, w: np.ndarray, strides: tuple[int, int], padding: tuple[int, int, int, int],
                   dilation: tuple[int, int], groups: int) -> np.ndarray:
    """The definition: out[n, o, y, x] = sum_{c, i, j} xpad[n, g*C/G + c, y*s + i*d, x*s + j*d] w[o, c, i, j]
    (g the group of o)."""
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, cg, kh, kw = w.shape
    v = windows(xp, (kh, kw), strides, dilation)
    og = o // groups
    w64 = w.astype(np.float64)
    outs = [np.einsum("nchwij,ocij->nohw", v[:, g * cg:(g + 1) * cg], w64[g * og:(g + 1) * og])
            for g in range(groups)]
    return np.concatenate(outs, axis=1)


def run(expr: pyir.Expr, *arrays: np.ndarray) -> np.ndarray:
    """Evaluate a function of fresh variables over ``arrays``."""
    free = list(pyir.free_vars(expr))
    return pyir.evaluate(pyir.Function(free, expr), *arrays)


CONV_CASES = [
    # (N, C, H, W), (O, C/G, KH, KW), strides, padding, dilation, groups
    ((1, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 10, 7), (6, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 4, 10, 7), (6, 4, 1, 1), (2, 3), (0, 1, 2, 0), (1, 1), 1),
    ((1, 6, 11, 11), (6, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6),     # depthwise
    ((2, 8, 12, 12), (8, 1, 7, 7), (1, 1), (3, 3, 3, 3), (1, 1), 8),     # ConvNeXt's depthwise 7x7
    ((1, 6, 11, 13), (12, 1, 3, 3), (1, 2), (1, 0, 1, 2), (2, 1), 6),    # channel multiplier 2
    ((1, 8, 9, 9), (4, 4, 3, 2), (1, 1), (0, 1, 0, 1), (1, 2), 2),       # grouped
    ((1, 3, 32, 32), (16, 3, 8, 8), (8, 8), (0, 0, 0, 0), (1, 1), 1),    # ViT's patch embedding
    ((1, 2, 5, 5), (3, 2, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1),       # one output pixel
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}x{c[1]}s{c[2]}d{c[4]}g{c[5]}")
def test_conv2d_matches_definition(case: tuple) -> None:
    """conv2d (float32 in, float32 out) equals the float64 definition within float32 rounding."""
    xs, ws, strides, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    e = op.nn.conv2d(pyir.var("x", shape=xs), pyir.var("w", shape=ws), strides=strides, padding=padding,
                     dilation=dilation, groups=groups)
    got = run(e, x, w)
    want = conv_reference(x, w, strides, padding, dilation, groups)
    assert got.dtype == np.float32 and got.shape == want.shape == e.checked_type.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_integer_and_out_dtype() -> None:
    """Integer convolutions are exact; out_dtype widens before the products."""
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (1, 4, 6, 6)).astype(np.int8)
    w = rng.integers(-100, 100, (2, 2, 3, 3)).astype(np.int8)
    e = op.nn.conv2d(pyir.var("x", shape=x.shape, dtype="int8"), pyir.var("w", shape=w.shape, dtype="int8"),
                     groups=2, padding=(1, 1), out_dtype="int32")
    got = run(e, x, w)
    want = conv_reference(x.astype(np.int64), w.astype(np.int64), (1, 1), (1, 1, 1, 1), (1, 1), 2)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want.astype(np.int64))


POOL_CASES = [
    # (N, C, H, W), pool_size, strides, padding, dilation, ceil_mode
    ((1, 3, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 2, 7, 9), (2, 3), (1, 2), (0, 1, 0, 1), (1, 1), True),
    ((1, 2, 10, 10), (3, 3), (3, 3), (0, 0, 0, 0), (2, 1), True),
    ((1, 1, 5, 5), (5, 5), (1, 1), (0, 0, 0, 0), (1, 1), False),
]


def pool_reference(x: np.ndarray, pool: tuple[int, int], strides: tuple[int, int],
                   padding: tuple[int, int, int, int], dilation: tuple[int, int], oh: int, ow: int,
                   fill: float) -> np.ndarray:
    """The (N, C, OH, OW, KH, KW) windows of ``x`` padded with ``fill`` far enough for ceil_mode."""
    pt, pl, _, _ = padding
    (kh, kw), (sh, sw), (dh, dw) = pool, strides, dilation
    big = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pt + kh * dh + sh), (pl, pl + kw * dw + sw)),
                 constant_values=fill)
    return windows(big, pool, strides, dilation)[:, :, :oh, :ow]


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_matches_definition(case: tuple) -> None:
    """max_pool2d equals the maximum over each window (padding never wins), NaN propagating."""
    xs, pool, strides, padding, dilation, ceil = case
    x = np.random.default_rng(2).standard_normal(xs).astype(np.float32)
    x.flat[7] = np.nan
    e = op.nn.max_pool2d(pyir.var("x", shape=xs), pool_size=pool, strides=strides, padding=padding,
                         dilation=dilation, ceil_mode=ceil)
    got = run(e, x)
    oh, ow = got.shape[2:]
    want = pool_reference(x, pool, strides, padding, dilation, oh, ow, -np.inf).max(axis=(-2, -1))
    assert got.dtype == np.float32 and got.shape == e.checked_type.shape
    np.testing.assert_array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("case", POOL_CASES)
def test_avg_pool2d_matches_definition(case: tuple, include_pad: bool) -> None:
    """avg_pool2d divides each window's sum by its counted positions (declared padding counts only
    with count_include_pad; ceil_mode's extra never does)."""
    xs, pool, strides, padding, dilation, ceil = case
    x = np.random.default_rng(3).standard_normal(xs).astype(np.float32)
    e = op.nn.avg_pool2d(pyir.var("x", shape=xs), pool_size=pool, strides=strides, padding=padding,
                         dilation=dilation, ceil_mode=ceil, count_include_pad=include_pad)
    got = run(e, x)
    oh, ow = got.shape[2:]
    h, w = xs[2:]
    pt, pl, pb, pr = padding
    mask = np.zeros((1, 1, h, w))
    mask[...] = 1
    if include_pad:
        mask = np.pad(mask, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=1)
        counted = pool_reference(mask, pool, strides, (0, 0, 0, 0), dilation, oh, ow, 0)
    else:
        counted = pool_reference(mask, pool, strides, padding, dilation, oh, ow, 0)
    total = pool_reference(x, pool, strides, padding, dilation, oh, ow, 0).sum(axis=(-2, -1))
    want = total / counted.sum(axis=(-2, -1))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_batch_norm_matches_definition() -> None:
    """batch_norm is (x - mean) / sqrt(var + eps) * gamma + beta, in the input's float dtype."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 4, 3)).astype(np.float32) * 3 + 1
    g, b, m = (rng.standard_normal(5).astype(np.float32) for _ in range(3))
    v = rng.uniform(0.1, 2, 5).astype(np.float32)
    for axis, center, scale in [(1, True, True), (-1, False, True), (1, True, False)]:
        n = x.shape[axis]
        xs = x if n == 5 else x[..., :1].repeat(5, axis=-1)
        vs = [pyir.var(k, shape=(5,)) for k in "gbmv"]
        e = pyir.TupleGetItem(op.nn.batch_norm(pyir.var("x", shape=xs.shape), *vs, axis=axis, epsilon=1e-3,
                                               center=center, scale=scale), 0)
        got = run(e, xs, g, b, m, v)
        sh = [1] * 4
        sh[axis] = 5
        want = (xs.astype(np.float64) - m.reshape(sh)) / np.sqrt(v.reshape(sh).astype(np.float64) + 1e-3)
        if scale:
            want = want * g.reshape(sh)
        if center:
            want = want + b.reshape(sh)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_erf_is_vectorized_and_exact() -> None:
    """erf agrees with math.erf to double precision over the whole range, infinities and NaN
    included, and rounds float32 the way math.erf does."""
    xs = np.concatenate([np.linspace(-7, 7, 20001), np.logspace(-30, 1, 300), -np.logspace(-30, 1, 300),
                         [0.0, -0.0, 1.9999999, 2.0, 2.0000001, np.inf, -np.inf]])
    got = run(op.erf(pyir.var("x", shape=xs.shape, dtype="float64")), xs)
    want = np.array([math.erf(v) for v in xs])
    assert np.all(np.abs(got - want) <= 2e-15 * np.abs(want) + 1e-300)
    x32 = xs.astype(np.float32)
    got32 = run(op.erf(pyir.var("x", shape=xs.shape)), x32)
    assert got32.dtype == np.float32
    np.testing.assert_array_equal(got32, np.array([math.erf(v) for v in x32.astype(np.float64)], np.float32))
    nan = run(op.erf(pyir.var("x", shape=(2,))), np.array([np.nan, 1.0], np.float32))
    assert np.isnan(nan[0]) and nan[1] == np.float32(math.erf(1.0))


@pytest.mark.parametrize("groups", [1, 8])
def test_conv2d_float16_accumulates_in_float32(groups: int) -> None:
    """A float16 convolution (im2col or depthwise) is float16 out, accumulated in float32: within
    float16 rounding of the float64 definition even over 8 x 7 x 7 = 392 products."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float16)
    w = rng.standard_normal((8, 8 // groups, 7, 7)).astype(np.float16)
    xv, wv = pyir.var("x", shape=x.shape, dtype="float16"), pyir.var("w", shape=w.shape, dtype="float16")
    e = op.nn.conv2d(xv, wv, padding=(3, 3), groups=groups)
    got = run(e, x, w)
    want = conv_reference(x, w, (1, 1), (3, 3, 3, 3), (1, 1), groups)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3 * float(np.abs(want).max()))
