"""The math operators of :mod:`pyir.op.math` (issue 13): types (symbolic and unknown dimensions
too), values against numpy, errors, text and binary round trips, and standard passes."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import TensorType, op
from pyir.ir.dims import Any, sym
from pyir.testing import check_pass
from pyir.transform import FoldConstant, FuseOps, InferType, Sequential, SimplifyExpr

n, m = sym("n"), sym("m")
C = pyir.const
rng = np.random.default_rng(0)


def typ(e):
    return pyir.infer_type(e)


def run(e):
    with np.errstate(all="ignore"):
        return pyir.evaluate(e)


# -- elementwise ------------------------------------------------------------------------------

UNARY = [(op.sin, np.sin), (op.cos, np.cos), (op.tan, np.tan), (op.asin, np.arcsin),
         (op.acos, np.arccos), (op.atan, np.arctan), (op.sinh, np.sinh), (op.cosh, np.cosh),
         (op.asinh, np.arcsinh), (op.acosh, np.arccosh), (op.atanh, np.arctanh),
         (op.round, np.round), (op.sign, np.sign)]


@pytest.mark.parametrize("fn,ref", UNARY, ids=[f.__name__ for f, _ in UNARY])
def test_unary_values_and_dtypes(fn, ref):
    a = rng.uniform(-0.9, 0.9, (3, 4)).astype("float32")
    if fn is op.acosh:
        a = a + 2
    got = run(fn(C(a)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(a), rtol=1e-6)
    assert typ(fn(pyir.var("x", shape=(n, 3), dtype="float16"))) is TensorType((n, 3), "float16")


def test_float_unary_of_integers_types_like_tvm_but_has_no_kernel():
    # TVM's relation of the float math functions is the identity (an int32 log type-checks);
    # there is no integer kernel (TVM fails when it compiles one): an EvaluationError here,
    # except round / floor / ceil of an integer, the integer itself (tir.round of an int)
    i = pyir.var("x", shape=(2,), dtype="int32")
    assert typ(op.sin(i)) is TensorType((2,), "int32")
    with pytest.raises(pyir.EvaluationError, match="sin: no kernel for an integer input"):
        pyir.evaluate(pyir.Function([i], op.sin(i)), np.array([1, 2], "int32"))
    assert run(op.round(C(np.array([3, -4], "int64")))).tolist() == [3, -4]
    with pytest.raises(pyir.TypeCheckError, match="floating-point"):
        typ(op.sin(pyir.var("b", shape=(2,), dtype="bool")))


def test_round_halves_to_even_and_sign_of_integers():
    np.testing.assert_array_equal(run(op.round(C(np.array([0.5, 1.5, 2.5, -0.5, -1.5], "float32")))),
                                  np.array([0, 2, 2, -0, -2], "float32"))
    got = run(op.sign(C(np.array([-3, 0, 7], "int8"))))
    assert got.dtype == np.int8 and got.tolist() == [-1, 0, 1]
    with pytest.raises(pyir.TypeCheckError, match="numeric"):
        typ(op.sign(pyir.var("b", shape=(2,), dtype="bool")))


def test_isnan_isinf():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], "float32")
    assert typ(op.isnan(pyir.var("x", shape=(n,)))) is TensorType((n,), "bool")
    assert run(op.isnan(C(a))).tolist() == [False, True, False, False, False]
    assert run(op.isinf(C(a))).tolist() == [False, False, True, True, False]
    assert run(op.isinf(C(a), detect_negative=False)).tolist() == [False, False, True, False, False]
    assert run(op.isinf(C(a), detect_positive=False)).tolist() == [False, False, False, True, False]
    assert not run(op.isinf(C(a), detect_positive=False, detect_negative=False)).any()
    with pytest.raises(pyir.TypeCheckError, match="floating-point"):
        typ(op.isnan(pyir.var("i", shape=(2,), dtype="int32")))


def test_mod_floor_and_truncated():
    """issue 14: Relay's names with Relay's meanings: mod and trunc_mod truncate, floor_mod floors."""
    a = np.array([-4, 7, 5, 4, -7, 8], "int32")
    b = np.array([2, -3, 8, -2, 3, 5], "int32")
    assert run(op.floor_mod(C(a), C(b))).tolist() == np.mod(a, b).tolist()
    assert run(op.mod(C(a), C(b))).tolist() == np.fmod(a, b).tolist()
    assert run(op.trunc_mod(C(a), C(b))).tolist() == np.fmod(a, b).tolist()
    f = np.array([-4.3, 7.2, 5.0, 4.3, -7.2, 8.0], "float32")
    g = np.array([2.1, -3.4, 8.0, -2.1, 3.4, 5.0], "float32")
    np.testing.assert_allclose(run(op.mod(C(f), C(g))), np.fmod(f, g), rtol=1e-6)
    np.testing.assert_allclose(run(op.floor_mod(C(f), C(g))), np.mod(f, g), rtol=1e-6)
    assert run(op.mod(C(np.array([5], "uint8")), C(np.array([0], "uint8")))).tolist() == [0]
    assert run(op.floor_mod(C(np.array([5], "uint8")), C(np.array([0], "uint8")))).tolist() == [0]
    x, y = pyir.var("x", shape=(n, 1, 4), dtype="int64"), pyir.var("y", shape=(3, 1), dtype="int64")
    assert typ(op.mod(x, y)) is TensorType((n, 3, 4), "int64")
    with pytest.raises(pyir.TypeCheckError, match="dtypes differ"):
        typ(op.mod(x, pyir.var("z", shape=(1,), dtype="int32")))


# -- scans -----------------------------------------------------------------------------------


def _cum_ref(fn, x, axis, exclusive, reverse, identity):
    v = np.flip(x, axis) if reverse else x
    out = fn(v, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                              np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_cumprod(axis, reverse, exclusive):
    a = rng.integers(-3, 4, (3, 4)).astype("int32")
    for fn, ref, ident in ((op.cumsum, np.cumsum, 0), (op.cumprod, np.cumprod, 1)):
        got = run(fn(C(a), axis=axis, exclusive=exclusive, reverse=reverse))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, _cum_ref(ref, a, axis, exclusive, reverse, ident))
        # the axis as a run-time scalar tensor gives the same result
        dyn = run(fn(C(a), C(np.int64(axis)), exclusive=exclusive, reverse=reverse))
        np.testing.assert_array_equal(dyn, got)


def test_cumsum_types_and_errors():
    x = pyir.var("x", shape=(n, Any, 3))
    assert typ(op.cumsum(x, axis=2)) is TensorType((n, Any, 3))
    assert typ(op.cumsum(x, pyir.var("ax", shape=(), dtype="int32"))) is TensorType((n, Any, 3))
    with pytest.raises(pyir.TypeCheckError, match="axis 3 out of range"):
        typ(op.cumsum(x, axis=3))
    with pytest.raises(pyir.TypeCheckError, match="integer"):
        typ(op.cumprod(x, pyir.var("ax", shape=(), dtype="float32")))
    with pytest.raises(pyir.TypeCheckError, match="scalar"):
        typ(op.cumprod(x, pyir.var("ax", shape=(2,), dtype="int64")))
    with pytest.raises(pyir.EvaluationError, match="axis 2 out of range"):
        run(op.cumsum(C(np.zeros((2, 3), "float32")), C(np.int64(2))))
    f = run(op.cumsum(C(np.full(5, 0.1, "float32"))))
    assert f.dtype == np.float32


# -- einsum ------------------------------------------------------------------------------------

EINSUM = [
    ("ij->ji", [(3, 4)]), ("ij->i", [(3, 4)]), ("...ii->...i", [(3, 5, 5)]), ("i,i", [(5,), (5,)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("->", [()]), ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(4, 4)]), ("...j,j...", [(2, 3, 4), (4, 3)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i,j->ij", [(1,), (4,)]), ("ij,ij->ij", [(1, 4), (3, 1)]), ("Ab,bA->", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_numpy(eq, shapes):
    xs = [rng.standard_normal(s).astype("float32") for s in shapes]
    want = np.einsum(eq, *xs)
    e = op.einsum(*[C(x) for x in xs], equation=eq)
    assert typ(e) is TensorType(want.shape, "float32")
    got = run(e)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_einsum_symbolic_types_and_errors():
    a, b = pyir.var("a", shape=(n, 3, m)), pyir.var("b", shape=(n, m, 7))
    assert typ(op.einsum(a, b, equation="bij, bjk -> bik")) is TensorType((n, 3, 7))
    assert op.einsum(a, b, equation="bij, bjk -> bik") is op.einsum(a, b, equation="bij,bjk->bik")
    e = pyir.var("e", shape=(2, Any, 4, 4))
    assert typ(op.einsum(e, equation="...ii->...i")) is TensorType((2, Any, 4))
    assert typ(op.einsum(a, equation="kij")) is TensorType((3, m, n))  # implicit: sorted labels
    with pytest.raises(pyir.TypeCheckError, match="label 'j'"):
        typ(op.einsum(pyir.var("p", shape=(2, 3)), pyir.var("q", shape=(4, 5)), equation="ij,jk->ik"))
    with pytest.raises(pyir.TypeCheckError, match="repeated in operand 0"):
        typ(op.einsum(pyir.var("d", shape=(1, 3)), equation="ii->i"))
    with pytest.raises(pyir.TypeCheckError, match="2 input term"):
        typ(op.einsum(a, equation="ij,jk->ik"))
    with pytest.raises(pyir.TypeCheckError, match="does not match term"):
        typ(op.einsum(a, equation="ij->i"))
    with pytest.raises(pyir.TypeCheckError, match="missing from the output"):
        typ(op.einsum(e, equation="...ii->i"))
    for bad in ("ij->kk", "ij->k", "i.j->i", "ij->i->j", "......i->i"):
        with pytest.raises(pyir.AttrError, match="equation"):
            op.einsum(a, equation=bad)


# -- trilu, eye_like, det ----------------------------------------------------------------------


@pytest.mark.parametrize("k", [-7, -1, 0, 2, 6])
def test_trilu(k):
    a = rng.integers(0, 10, (2, 4, 5)).astype("int64")
    kk = C(np.int64(k))
    np.testing.assert_array_equal(run(op.trilu(C(a), kk)), np.triu(a, k))
    np.testing.assert_array_equal(run(op.trilu(C(a), kk, upper=False)), np.tril(a, k))
    assert run(op.trilu(C(np.zeros((0, 5), "int64")), kk)).shape == (0, 5)


def test_trilu_types():
    x = pyir.var("x", shape=(n, 3, 3))
    assert typ(op.trilu(x, pyir.var("k", shape=(), dtype="int64"))) is TensorType((n, 3, 3))
    with pytest.raises(pyir.TypeCheckError, match="rank >= 2"):
        typ(op.trilu(pyir.var("v", shape=(3,)), C(np.int64(0))))
    with pytest.raises(pyir.TypeCheckError, match="k must be an integer"):
        typ(op.trilu(x, C(np.float32(0))))


def test_eye_like():
    x = pyir.var("x", shape=(4, 5), dtype="int32")
    assert typ(op.eye_like(x)) is TensorType((4, 5), "int32")
    assert typ(op.eye_like(x, dtype="float64")) is TensorType((4, 5), "float64")
    got = run(op.eye_like(C(np.zeros((4, 5), "int32")), k=1, dtype="float32"))
    np.testing.assert_array_equal(got, np.eye(4, 5, 1, dtype="float32"))
    with pytest.raises(pyir.TypeCheckError, match="2-D"):
        typ(op.eye_like(pyir.var("y", shape=(2, 2, 2))))


def test_det():
    a = rng.standard_normal((3, 4, 4)).astype("float32")
    got = run(op.det(C(a)))
    assert got.dtype == np.float32 and got.shape == (3,)
    np.testing.assert_allclose(got, np.linalg.det(a), rtol=1e-4)
    assert typ(op.det(pyir.var("x", shape=(n, m, m)))) is TensorType((n,))
    with pytest.raises(pyir.TypeCheckError, match="not square"):
        typ(op.det(pyir.var("y", shape=(3, 4))))
    h = run(op.det(C(np.array([[1, 2], [3, 4]], "float16"))))
    assert h.dtype == np.float16 and float(h) == pytest.approx(-2.0, rel=1e-3)


# -- signal ------------------------------------------------------------------------------------


def test_dft_forward_inverse_onesided():
    a = rng.standard_normal((2, 8, 3, 1)).astype("float32")
    x = C(a)
    full = run(op.dft(x, axis=1))
    want = np.fft.fft(a[..., 0], axis=1)
    assert full.dtype == np.float32 and full.shape == (2, 8, 3, 2)
    np.testing.assert_allclose(full[..., 0] + 1j * full[..., 1], want, rtol=1e-4, atol=1e-5)
    half = run(op.dft(x, axis=1, onesided=True))
    assert half.shape == (2, 5, 3, 2) and typ(op.dft(x, axis=1, onesided=True)) is TensorType((2, 5, 3, 2))
    back = run(op.dft(C(half), axis=1, inverse=True, onesided=True))
    assert back.shape == (2, 8, 3, 1)
    np.testing.assert_allclose(back, a, rtol=1e-4, atol=1e-5)
    inv = run(op.dft(C(full), axis=1, inverse=True))
    np.testing.assert_allclose(inv[..., 0], a[..., 0], rtol=1e-4, atol=1e-5)
    padded = op.dft(x, axis=1, dft_length=10)
    assert typ(padded) is TensorType((2, 10, 3, 2)) and run(padded).shape == (2, 10, 3, 2)
    dyn = op.dft(x, C(np.int64(1)), onesided=True)
    assert typ(dyn) is TensorType((Any, Any, Any, 2))
    np.testing.assert_array_equal(run(dyn), half)
    with pytest.raises(pyir.EvaluationError, match="component axis"):
        run(op.dft(x, C(np.int64(-1))))


def test_dft_types():
    s = pyir.var("s", shape=(n, 16, 2))
    assert typ(op.dft(s, axis=1, inverse=True, onesided=True)) is TensorType((n, 30, 1))
    assert typ(op.dft(pyir.var("t", shape=(3, m, 1)), axis=1, onesided=True)) is \
        TensorType((3, m // 2 + 1, 2))
    with pytest.raises(pyir.TypeCheckError, match="1 \\(real\\) or 2"):
        typ(op.dft(pyir.var("u", shape=(3, 4, 3)), axis=1))
    with pytest.raises(pyir.TypeCheckError, match="component axis"):
        typ(op.dft(s, axis=-1))
    with pytest.raises(pyir.AttrError, match="non-negative"):
        op.dft(s, dft_length=-1)


def test_stft_matches_framed_fft():
    a = rng.standard_normal((1, 64, 1)).astype("float32")
    win = np.hanning(16).astype("float32")
    e = op.stft(C(a), C(np.int64(8)), C(win), C(np.int64(0)))
    assert typ(e) is TensorType((1, Any, 9, 2))
    got = run(e)
    frames = np.stack([a[0, i * 8:i * 8 + 16, 0] * win for i in range(7)])
    want = np.fft.rfft(frames, axis=-1)
    assert got.shape == (1, 7, 9, 2)
    np.testing.assert_allclose(got[0, ..., 0] + 1j * got[0, ..., 1], want, rtol=1e-4, atol=1e-4)
    rect = run(op.stft(C(a), C(np.int64(8)), C(np.zeros(0, "float32")), C(np.int64(16)), onesided=False))
    assert rect.shape == (1, 7, 16, 2)
    with pytest.raises(pyir.EvaluationError, match="frame_length"):
        run(op.stft(C(a), C(np.int64(8)), C(win), C(np.int64(12))))


@pytest.mark.parametrize("periodic", [True, False])
def test_windows(periodic):
    size = C(np.int64(10))
    nn_ = 10 if periodic else 9
    k = np.arange(10)
    refs = {op.hann_window: 0.5 - 0.5 * np.cos(2 * np.pi * k / nn_),
            op.hamming_window: 25 / 46 - 21 / 46 * np.cos(2 * np.pi * k / nn_),
            op.blackman_window: 0.42 - 0.5 * np.cos(2 * np.pi * k / nn_) + 0.08 * np.cos(4 * np.pi * k / nn_)}
    for fn, want in refs.items():
        e = fn(size, periodic=periodic)
        assert typ(e) is TensorType((Any,), "float32")
        got = run(e)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if not periodic:
        np.testing.assert_allclose(run(op.hann_window(size, periodic=False)), np.hanning(10), atol=1e-6)
    assert run(op.hann_window(size, dtype="float64")).dtype == np.float64


def test_mel_weight_matrix_shape_and_rows():
    args = [C(np.int32(8)), C(np.int32(16)), C(np.int32(8192)), C(np.float32(0)), C(np.float32(4096))]
    e = op.mel_weight_matrix(*args)
    assert typ(e) is TensorType((Any, Any), "float32")
    got = run(e)
    assert got.shape == (9, 8) and got.dtype == np.float32
    assert (got >= 0).all() and (got <= 1).all() and got.max() == 1.0
    with pytest.raises(pyir.EvaluationError, match="sample_rate > 0"):
        run(op.mel_weight_matrix(*args[:2], C(np.int32(0)), *args[3:]))


# -- text, binary, passes ------------------------------------------------------------------------


def _program():
    x = pyir.var("x", shape=(2, 4, 4))
    k = pyir.var("k", shape=(), dtype="int64")
    y = op.einsum(op.sin(x), op.cumsum(x, axis=1, exclusive=True), equation="bij,bjk->bik")
    z = op.trilu(op.add(y, op.mod(x, C(np.float32(1.5)))), k, upper=False)
    w = op.det(op.add(z, op.eye_like(op.take(x, C(np.int64(0)), axis=0))))
    return pyir.Module.from_expr(pyir.Function([x, k], pyir.Tuple([w, op.isinf(z, detect_negative=False)])))


def test_text_and_binary_round_trip():
    mod = _program()
    text = mod.astext()
    assert "einsum(" in text and 'equation="bij,bjk->bik"' in text and "mod(%x" in text
    assert pyir.parse(text).astext() == text
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]


def test_standard_passes_keep_values():
    mod = _program()
    for p in (InferType(), SimplifyExpr(), FoldConstant(), FuseOps()):
        check_pass(p, mod, idempotent=not isinstance(p, FuseOps))
    out = Sequential([InferType(), SimplifyExpr(), FoldConstant(), FuseOps()])(mod)
    a = rng.standard_normal((2, 4, 4)).astype("float32")
    want, got = pyir.evaluate(mod, a, np.int64(0)), pyir.evaluate(out, a, np.int64(0))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])


def test_fold_constant_folds_a_window():
    size = C(np.int64(6))
    mod = pyir.Module.from_expr(pyir.Function([], op.multiply(op.hann_window(size), C(np.float32(2)))))
    out = FoldConstant()(mod)
    body = out["main"].body
    assert isinstance(body, pyir.Constant) and body.data.shape == (6,)


def test_einsum_two_operand_matmul_path_matches_numpy():
    """Random two-operand equations (batch, contracted, kept and summed-out labels in any order,
    implicit and explicit outputs) through the batched-matmul path, against numpy's einsum."""
    from pyir.op.math import _einsum_matmul

    r = np.random.default_rng(1)
    sizes = dict(zip("abcdef", (2, 3, 4, 1, 5, 0)))
    taken = 0
    for _ in range(300):
        ta = "".join(r.permutation(list("abcdef"))[:r.integers(0, 5)])
        tb = "".join(r.permutation(list("abcdef"))[:r.integers(0, 5)])
        labels = sorted(set(ta + tb))
        out = "".join(r.permutation([c for c in labels if r.random() < 0.6]))
        eq = f"{ta},{tb}->{out}" if r.random() < 0.8 else f"{ta},{tb}"
        a = r.standard_normal([sizes[c] for c in ta]).astype("float32")
        b = r.standard_normal([sizes[c] for c in tb]).astype("float32")
        got = _einsum_matmul(eq, a, b)
        assert got is not None
        taken += 1
        want = np.einsum(eq, a, b)
        assert got.shape == want.shape and got.dtype == np.float32, eq
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=eq)
        np.testing.assert_allclose(run(op.einsum(C(a), C(b), equation=eq)), want, rtol=1e-4, atol=1e-5)
    assert taken == 300
    # the forms it leaves to numpy: '...', a repeated label, a size-1 label broadcast
    x = np.ones((2, 2), "float32")
    assert _einsum_matmul("ii,ij->j", x, x) is None
    assert _einsum_matmul("...i,i->...", x, x[0]) is None
    assert _einsum_matmul("ij,jk->ik", np.ones((2, 1), "float32"), np.ones((3, 2), "float32")) is None


def test_bernoulli_is_a_draw_determined_by_its_seed():
    p = np.full((200, 500), 0.3, "float32")
    e = op.bernoulli(C(p), seed=7)
    assert typ(e) is TensorType((200, 500), "float32")
    a, b = run(e), run(op.bernoulli(C(p), seed=7))
    assert a.dtype == np.float32 and set(np.unique(a).tolist()) <= {0.0, 1.0}
    np.testing.assert_array_equal(a, b)  # the same seed: the same draw (and the same node)
    assert abs(float(a.mean()) - 0.3) < 0.01
    assert not np.array_equal(a, run(op.bernoulli(C(p), seed=8)))
    edge = run(op.bernoulli(C(np.array([0.0, 1.0, 0.0, 1.0], "float64")), dtype="int32"))
    assert edge.dtype == np.int32 and edge.tolist() == [0, 1, 0, 1]
    with pytest.raises(pyir.TypeCheckError, match="floating-point"):
        typ(op.bernoulli(pyir.var("i", shape=(2,), dtype="int32")))
