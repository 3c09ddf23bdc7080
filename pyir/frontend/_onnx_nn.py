"""ONNX converters of the neural-network operators of transformers and modern CNNs (issue 13).

Each maps onto one pyir operator (``pyir.op.nn.attention``, ``nn.rotary_embedding``,
``nn.layer_norm`` / ``nn.layer_norm_nd``, ``nn.rms_norm``, ``nn.group_norm``, the
activations, the losses...), so FuseOps, patterns and lineage see the operator the model
used.  Two rarely used families expand to existing operators instead: ``LpPool``
(average pooling of ``|x|^p``) and the recurrent ``RNN`` / ``GRU`` / ``LSTM`` (unrolled over
the static sequence length).  Every converter reads every attribute of its schema with the
ONNX default and rejects values it does not support with a FrontendError.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import op
from ..ir.expr import Constant, Expr, TupleGetItem
from ..op import nn
from ._onnx_ops import _axis, _pads, _pool_nd, _reg, _reshape, dtype_of, scalar, shape_of
from .onnx import Ctx, FrontendError, _Attrs

__all__: list[str] = []


def _n_outputs(cx: Ctx) -> int:
    """How many outputs the node names (trailing unnamed ones dropped)."""
    names = list(cx.node.output)
    while names and names[-1] == "":
        names.pop()
    return len(names)


def _stash(a: _Attrs) -> None:
    """``stash_type``: the computation precision; pyir computes in at least float32 (1)."""
    st = a.get("stash_type", 1)
    if st != 1:
        raise FrontendError(f"stash_type={st} is not supported (only 1, float32)")


# -- activations -----------------------------------------------------------------------------------


@_reg("Gelu")
def _gelu(cx: Ctx, a: _Attrs) -> Expr:
    approx = a.get("approximate", "none")
    if approx not in ("none", "tanh"):
        raise FrontendError(f"approximate={approx!r} is not supported")
    return nn.gelu(cx.x(0), approximate=approx)


@_reg("HardSwish")
def _hard_swish(cx: Ctx, a: _Attrs) -> Expr:
    return nn.hard_swish(cx.x(0))


@_reg("HardSigmoid")
def _hard_sigmoid(cx: Ctx, a: _Attrs) -> Expr:
    a.ignore("consumed_inputs")
    return nn.hard_sigmoid(cx.x(0), alpha=float(a.get("alpha", 0.2)), beta=float(a.get("beta", 0.5)))


@_reg("Softplus")
def _softplus(cx: Ctx, a: _Attrs) -> Expr:
    return nn.softplus(cx.x(0))


@_reg("Mish")
def _mish(cx: Ctx, a: _Attrs) -> Expr:
    return nn.mish(cx.x(0))


@_reg("Celu")
def _celu(cx: Ctx, a: _Attrs) -> Expr:
    alpha = float(a.get("alpha", 1.0))
    if alpha == 0:
        raise FrontendError("Celu alpha=0 is not defined")
    return nn.celu(cx.x(0), alpha=alpha)


@_reg("ThresholdedRelu")
def _thresholded_relu(cx: Ctx, a: _Attrs) -> Expr:
    return nn.thresholded_relu(cx.x(0), alpha=float(a.get("alpha", 1.0)))


@_reg("Shrink")
def _shrink(cx: Ctx, a: _Attrs) -> Expr:
    return nn.shrink(cx.x(0), lambd=float(a.get("lambd", 0.5)), bias=float(a.get("bias", 0.0)))


@_reg("SwiGLU")
def _swiglu(cx: Ctx, a: _Attrs) -> Expr:
    return nn.swiglu(cx.x(0), cx.x(1), alpha=float(a.get("alpha", 1.0)))


def _coerced_2d(cx: Ctx, a: _Attrs, fn: Callable[[Expr, int], Expr], default_old: int = 1) -> Expr:
    """Softmax-style operators: from opset 13 along ``axis``; before, the input is coerced to
    2-D at ``axis`` and the operator runs along the second dimension."""
    x = cx.x(0)
    s = shape_of(x)
    ax = _axis(a.get("axis", default_old if cx.opset < 13 else -1), len(s))
    if cx.opset >= 13 or ax == len(s) - 1:
        return fn(x, ax)
    flat = _reshape(x, (int(np.prod(s[:ax], dtype=np.int64)), int(np.prod(s[ax:], dtype=np.int64))))
    return _reshape(fn(flat, 1), s)


@_reg("Hardmax")
def _hardmax(cx: Ctx, a: _Attrs) -> Expr:
    return _coerced_2d(cx, a, lambda x, ax: nn.hardmax(x, axis=ax))


@_reg("LpNormalization")
def _lp_normalization(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    p = int(a.get("p", 2))
    if p not in (1, 2):
        raise FrontendError(f"p={p} is not supported (1 or 2)")
    return nn.lp_normalize(x, axis=_axis(int(a.get("axis", -1)), len(shape_of(x))), p=p)


# -- normalizations --------------------------------------------------------------------------------


@_reg("LayerNormalization")
def _layer_norm(cx: Ctx, a: _Attrs) -> list[Expr]:
    _stash(a)
    x, scale = cx.x(0), cx.x(1)
    xs = shape_of(x)
    ax = _axis(int(a.get("axis", -1)), len(xs))
    eps = float(a.get("epsilon", 1e-5))
    bias = cx.x(2) if cx.has(2) else None
    simple = (ax == len(xs) - 1 and _n_outputs(cx) == 1 and shape_of(scale) == (xs[-1],)
              and (bias is None or shape_of(bias) == (xs[-1],)))
    if simple:  # the common case: Relay's layer_norm over the last axis
        beta = bias if bias is not None else Constant(np.zeros((xs[-1],), dtype=dtype_of(x)))
        return [nn.layer_norm(x, scale, beta, axis=-1, epsilon=eps, center=bias is not None)]
    args = [x, scale] if bias is None else [x, scale, bias]
    t = nn.layer_norm_nd(*args, axis=ax, epsilon=eps)
    return [TupleGetItem(t, i) for i in range(3)]


@_reg("RMSNormalization")
def _rms_norm(cx: Ctx, a: _Attrs) -> Expr:
    _stash(a)
    x = cx.x(0)
    return nn.rms_norm(x, cx.x(1), axis=_axis(int(a.get("axis", -1)), len(shape_of(x))),
                       epsilon=float(a.get("epsilon", 1e-5)))


@_reg("GroupNormalization")
def _group_norm(cx: Ctx, a: _Attrs) -> Expr:
    if cx.opset >= 21:
        _stash(a)
    x, scale, bias = cx.x(0), cx.x(1), cx.x(2)
    g = a.get("num_groups")
    if g is None:
        raise FrontendError("GroupNormalization needs num_groups")
    g = int(g)
    c = shape_of(x)[1]
    if g < 1 or c % g:
        raise FrontendError(f"num_groups={g} does not divide the {c} channels")
    if shape_of(scale) == (g,) and g != c:  # opset 18: one scale and bias per group
        idx = Constant(np.arange(c, dtype=np.int64) // (c // g))
        scale, bias = op.take(scale, idx, axis=0), op.take(bias, idx, axis=0)
    return nn.group_norm(x, scale, bias, num_groups=g, epsilon=float(a.get("epsilon", 1e-5)))


# -- losses ------------------------------------------------------------------------------------------


def _loss_attrs(a: _Attrs) -> dict[str, Any]:
    red = a.get("reduction", "mean")
    if red not in ("none", "sum", "mean"):
        raise FrontendError(f"reduction={red!r} is not supported")
    ii = a.get("ignore_index")
    return {"reduction": red, "ignore_index": None if ii is None else int(ii)}


@_reg("SoftmaxCrossEntropyLoss")
def _sce(cx: Ctx, a: _Attrs) -> list[Expr]:
    args = [cx.x(0), cx.x(1)] + ([cx.x(2)] if cx.has(2) else [])
    t = nn.softmax_cross_entropy(*args, **_loss_attrs(a))
    return [TupleGetItem(t, 0), TupleGetItem(t, 1)]


@_reg("NegativeLogLikelihoodLoss")
def _nll(cx: Ctx, a: _Attrs) -> Expr:
    args = [cx.x(0), cx.x(1)] + ([cx.x(2)] if cx.has(2) else [])
    return nn.nll_loss(*args, **_loss_attrs(a))


# -- attention -------------------------------------------------------------------------------------


def _np_dtype(v: Any) -> str:
    from onnx.helper import tensor_dtype_to_np_dtype

    return str(np.dtype(tensor_dtype_to_np_dtype(int(v))))


@_reg("Attention")
def _attention(cx: Ctx, a: _Attrs) -> list[Expr]:
    args = [cx.x(0), cx.x(1), cx.x(2)]
    has_mask = cx.has(3)
    if has_mask:
        args.append(cx.x(3))
    if cx.has(4) != cx.has(5):
        raise FrontendError("past_key and past_value must be given together")
    has_past = cx.has(4)
    if has_past:
        args += [cx.x(4), cx.x(5)]
    has_nonpad = cx.has(6)
    if has_nonpad:
        if has_past:
            raise FrontendError("nonpad_kv_seqlen cannot be combined with past_key / past_value")
        args.append(cx.x(6))
    sp = a.get("softmax_precision")
    kw: dict[str, Any] = {
        "scale": None if a.get("scale") is None else float(a.get("scale")),
        "is_causal": bool(a.get("is_causal", 0)),
        "q_num_heads": None if a.get("q_num_heads") is None else int(a.get("q_num_heads")),
        "kv_num_heads": None if a.get("kv_num_heads") is None else int(a.get("kv_num_heads")),
        "softcap": float(a.get("softcap", 0.0)),
        "qk_matmul_output_mode": int(a.get("qk_matmul_output_mode", 0)),
        "softmax_precision": "" if sp is None else _np_dtype(sp),
        "left_window_size": int(a.get("left_window_size", -1)),
        "right_window_size": int(a.get("right_window_size", -1)),
    }
    if kw["qk_matmul_output_mode"] not in (0, 1, 2, 3):
        raise FrontendError(f"qk_matmul_output_mode={kw['qk_matmul_output_mode']} is not supported")
    if len(shape_of(args[0])) == 4 and cx.opset >= 25 and (kw["q_num_heads"] or kw["kv_num_heads"]):
        raise FrontendError("q_num_heads and kv_num_heads must not be given for 4-D inputs")
    t = nn.attention(*args, has_mask=has_mask, has_past=has_past, has_nonpad=has_nonpad, **kw)
    return [TupleGetItem(t, i) for i in range(4)]


@_reg("RotaryEmbedding")
def _rotary(cx: Ctx, a: _Attrs) -> Expr:
    args = [cx.x(0), cx.x(1), cx.x(2)]
    if cx.has(3):
        args.append(cx.x(3))
    nh = a.get("num_heads")
    return nn.rotary_embedding(*args, interleaved=bool(a.get("interleaved", 0)),
                               rotary_embedding_dim=int(a.get("rotary_embedding_dim", 0)),
                               num_heads=None if not nh else int(nh), has_position_ids=cx.has(3))


# -- LpPool: average pooling of |x|^p, times the window size, to the power 1/p ----------------------------


@_reg("LpPool")
def _lp_pool(cx: Ctx, a: _Attrs) -> Expr:
    x = cx.x(0)
    xs = shape_of(x)
    nd = len(xs) - 2
    k = a.ints("kernel_shape")
    if k is None or len(k) != nd:
        raise FrontendError(f"kernel_shape {k} does not match data of shape {xs}")
    s = a.ints("strides", (1,) * nd)
    d = a.ints("dilations", (1,) * nd)
    ceil = bool(a.get("ceil_mode", 0))
    p = float(a.get("p", 2))
    b, e = _pads(a, xs[2:], k, s, d)
    ax = op.abs(x)
    xp = op.multiply(ax, ax) if p == 2 else op.power(ax, scalar(p, x))
    avg = _pool_nd("avg", xp, k, s, b, e, d, ceil, True)
    total = op.multiply(avg, scalar(float(np.prod(k)), x))
    return op.sqrt(total) if p == 2 else op.power(total, scalar(1.0 / p, x))



