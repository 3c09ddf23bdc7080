"""ONNX converters of the math, scan, einsum and signal operators (:mod:`pyir.op.math`).

Inputs that ONNX gives as tensors but that pyir's operators take as attributes (the axis of
CumSum / CumProd / DFT, the DFT length) become attributes when they are known at import
time, and the operators' optional run-time argument otherwise. Bernoulli becomes the
deterministic-by-seed ``bernoulli`` (see its converter).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

from .. import op
from ..ir.expr import Constant, Expr
from ..ir.types import TensorType
from ._onnx_ops import _reg, dtype_of
from .onnx import CONVERTERS, Ctx, FrontendError, _Attrs

_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "Sin": op.sin, "Cos": op.cos, "Tan": op.tan, "Asin": op.asin, "Acos": op.acos, "Atan": op.atan,
    "Sinh": op.sinh, "Cosh": op.cosh, "Asinh": op.asinh, "Acosh": op.acosh, "Atanh": op.atanh,
    "Sign": op.sign, "Round": op.round, "IsNaN": op.isnan,
}


def _onnx_dtype(code: int) -> str:
    from onnx.helper import tensor_dtype_to_np_dtype

    try:
        return str(tensor_dtype_to_np_dtype(int(code)))
    except (KeyError, ValueError, TypeError):
        raise FrontendError(f"unsupported ONNX data type {code}") from None


def _int_input(cx: Ctx, i: int) -> int | Expr:
    """Scalar input ``i`` as an int when known at import time, else as an expression."""
    e = cx.x(i)
    if type(e) is Constant:
        v = np.asarray(e.data).reshape(-1)
        if v.size != 1:
            raise FrontendError(f"input {i} must be a scalar, got shape {np.shape(e.data)}")
        return int(v[0])
    return e


def _rank(e: Expr) -> int:
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise FrontendError(f"expected a tensor, got {t}")
    return t.ndim


def _scalar_tensor(cx: Ctx, i: int, default: int) -> Expr:
    """Input ``i`` (a scalar integer tensor), or the int64 constant ``default`` if absent."""
    return cx.x(i) if cx.has(i) else Constant(np.asarray(default, dtype=np.int64))


@_reg(*_UNARY)
def _unary(cx: Ctx, a: _Attrs) -> Expr:
    return _UNARY[cx.node.op_type](cx.x(0))


@_reg("IsInf")
def _isinf(cx: Ctx, a: _Attrs) -> Expr:
    return op.isinf(cx.x(0), detect_negative=bool(a.get("detect_negative", 1)),
                    detect_positive=bool(a.get("detect_positive", 1)))


@_reg("Mod")
def _mod(cx: Ctx, a: _Attrs) -> Expr:
    fmod = a.get("fmod", 0)
    if fmod not in (0, 1):
        raise FrontendError(f"fmod must be 0 or 1, got {fmod}")
    # fmod=0 on floats: the floor remainder (defined since opset 28; earlier opsets left it open)
    # (pyir's mod is Relay's: truncated, C's fmod; floor_mod is Python's %)
    return (op.mod if fmod else op.floor_mod)(cx.x(0), cx.x(1))


@_reg("CumSum", "CumProd")
def _cumulative(cx: Ctx, a: _Attrs) -> Expr:
    fn = op.cumsum if cx.node.op_type == "CumSum" else op.cumprod
    x = cx.x(0)
    kw = {"exclusive": bool(a.get("exclusive", 0)), "reverse": bool(a.get("reverse", 0))}
    axis = _int_input(cx, 1)
    if isinstance(axis, int):
        rank = _rank(x)
        if not -rank <= axis < max(rank, 1):
            raise FrontendError(f"axis {axis} out of range for rank {rank}")
        return fn(x, axis=axis, **kw)
    return fn(x, axis, **kw)


@_reg("Einsum")
def _einsum(cx: Ctx, a: _Attrs) -> Expr:
    eq = a.get("equation")
    if not isinstance(eq, str):
        raise FrontendError("Einsum needs an equation")
    return op.einsum(*[cx.x(i) for i in range(cx.n_inputs)], equation=eq)


@_reg("Trilu")
def _trilu(cx: Ctx, a: _Attrs) -> Expr:
    return op.trilu(cx.x(0), _scalar_tensor(cx, 1, 0), upper=bool(a.get("upper", 1)))


@_reg("EyeLike")
def _eye_like(cx: Ctx, a: _Attrs) -> Expr:
    code = a.get("dtype")
    return op.eye_like(cx.x(0), k=int(a.get("k", 0)), dtype=_onnx_dtype(code) if code is not None else "")


@_reg("Det")
def _det(cx: Ctx, a: _Attrs) -> Expr:
    return op.det(cx.x(0))


@_reg("DFT")
def _dft(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    inverse, onesided = bool(a.get("inverse", 0)), bool(a.get("onesided", 0))
    length = 0
    if cx.has(1):
        n = _int_input(cx, 1)
        if not isinstance(n, int):
            raise FrontendError("a dft_length computed at run time is not supported")
        if n < 1:
            raise FrontendError(f"dft_length must be positive, got {n}")
        length = n
    if cx.opset < 20:
        axis: int | Expr = int(a.get("axis", 1))
    else:
        axis = _int_input(cx, 2) if cx.has(2) else -2
    if isinstance(axis, int):
        return op.dft(x, axis=axis, inverse=inverse, onesided=onesided, dft_length=length)
    return op.dft(x, axis, inverse=inverse, onesided=onesided, dft_length=length)


@_reg("STFT")
def _stft(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    window = cx.x(2) if cx.has(2) else Constant(np.zeros((0,), dtype=dtype_of(x)))
    return op.stft(x, cx.x(1), window, _scalar_tensor(cx, 3, 0), onesided=bool(a.get("onesided", 1)))


_WINDOWS = {"HannWindow": op.hann_window, "HammingWindow": op.hamming_window,
            "BlackmanWindow": op.blackman_window}


@_reg(*_WINDOWS)
def _window(cx: Ctx, a: _Attrs) -> Expr:
    return _WINDOWS[cx.node.op_type](cx.x(0), periodic=bool(a.get("periodic", 1)),
                                     dtype=_onnx_dtype(a.get("output_datatype", 1)))


@_reg("MelWeightMatrix")
def _mel_weight_matrix(cx: Ctx, a: _Attrs) -> Expr:
    return op.mel_weight_matrix(*[cx.x(i) for i in range(5)], dtype=_onnx_dtype(a.get("output_datatype", 1)))


_BASE_POW = CONVERTERS["Pow"]


@_reg("Pow", replace=True)
def _pow(cx: Ctx, a: _Attrs) -> Expr:
    """ONNX's Pow is ``np.power(x, y)`` in ``x``'s dtype: an integer base with a floating-point
    exponent is raised in the exponent's dtype, then cast back (casting the exponent to the
    base's integers first, as the generic binary converter does, would lose its fraction)."""
    x, y = cx.x(0), cx.x(1)
    xdt, ydt = dtype_of(x), dtype_of(y)
    if np.dtype(xdt).kind in "iu" and np.dtype(ydt).kind == "f" and "broadcast" not in a.values:
        return op.cast(op.power(op.cast(x, dtype=ydt), y), dtype=xdt)
    return _BASE_POW(cx, a)


@_reg("Bernoulli")
def _bernoulli(cx: Ctx, a: _Attrs) -> Expr:
    """ONNX's Bernoulli is random; pyir's ``bernoulli`` is a draw determined by its seed: the
    node's ``seed`` (its float's bits), else one derived from the node's output name, so that two
    unseeded nodes on the same input stay independent draws rather than one node."""
    seed = a.get("seed")
    if seed is None:
        key = zlib.crc32(cx.node.output[0].encode())
    else:
        key = int(np.asarray(seed, np.float64).view(np.int64)) & 0x7FFFFFFFFFFFFFFF
    code = a.get("dtype")
    return op.bernoulli(cx.x(0), seed=key, dtype=_onnx_dtype(code) if code is not None else "")
