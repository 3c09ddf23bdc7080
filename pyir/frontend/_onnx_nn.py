"""ONNX converters of the neural-network operators of transformers and modern CNNs (issue 13).

Each maps onto one pyir operator (``pyir.op.nn.attention``, ``nn.rotary_embedding``,
``nn.layer_norm`` / ``nn.layer_norm_nd``, ``nn.rms_norm``, ``nn.group_norm``, the
activations, the losses, ``nn.linear_attention``...), so FuseOps, patterns and lineage see the
operator the model used; InstanceNormalization is ``nn.group_norm`` with a group per channel and
BatchNormalization's training mode ``nn.batch_norm`` on the batch statistics.  The rarely used
ones expand to existing operators instead: ``LpPool`` (average pooling of ``|x|^p``),
``MeanVarianceNormalization`` (its function body), ``CausalConvWithState`` (a depthwise
``nn.conv2d``) and the recurrent ``RNN`` / ``GRU`` / ``LSTM`` (unrolled over the static sequence
length).  Every converter reads every attribute of its schema with the ONNX default and rejects
values it does not support with a FrontendError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import op
from ..ir.expr import Constant, Expr, TupleGetItem
from ..ir.types import TensorType
from ..op import nn
from ._onnx_ops import _axis, _pool_nd, _reg, _reshape, dtype_of, pool_window, scalar, shape_of
from .onnx import Ctx, FrontendError, _Attrs

__all__: list[str] = []


def _dims(e: Expr) -> tuple[Any, ...]:
    """The shape of a tensor expression, symbolic or unknown dimensions included (the operators'
    relations handle them; only the converters that unroll or reshape need :func:`shape_of`)."""
    t = e.checked_type
    if not isinstance(t, TensorType):
        raise FrontendError(f"expected a tensor, got {t}")
    return t.shape


def _same_dims(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y or (type(x) is int and x == y) for x, y in zip(a, b))


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


@_reg("Swish")
def _swish(cx: Ctx, a: _Attrs) -> Expr:
    return nn.swish(cx.x(0), alpha=float(a.get("alpha", 1.0)))


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
    ax = _axis(a.get("axis", default_old if cx.opset < 13 else -1), len(_dims(x)))
    if cx.opset >= 13 or ax == len(_dims(x)) - 1:
        return fn(x, ax)
    s = shape_of(x)
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
    return nn.lp_normalize(x, axis=_axis(int(a.get("axis", -1)), len(_dims(x))), p=p)


# -- normalizations --------------------------------------------------------------------------------


@_reg("LayerNormalization")
def _layer_norm(cx: Ctx, a: _Attrs) -> list[Expr]:
    _stash(a)
    x, scale = cx.x(0), cx.x(1)
    xs = _dims(x)
    ax = _axis(int(a.get("axis", -1)), len(xs))
    eps = float(a.get("epsilon", 1e-5))
    bias = cx.x(2) if cx.has(2) else None
    simple = (ax == len(xs) - 1 and _n_outputs(cx) == 1 and _same_dims(_dims(scale), (xs[-1],))
              and (_same_dims(_dims(bias), (xs[-1],)) if bias is not None else type(xs[-1]) is int))
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
    return nn.rms_norm(x, cx.x(1), axis=_axis(int(a.get("axis", -1)), len(_dims(x))),
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
    c = _dims(x)[1] if len(_dims(x)) > 1 else 0
    if g < 1 or (type(c) is int and c % g):
        raise FrontendError(f"num_groups={g} does not divide the {c} channels")
    if _same_dims(_dims(scale), (g,)) and g != c:  # opset 18: one scale and bias per group
        c = shape_of(x)[1]
        idx = Constant(np.arange(c, dtype=np.int64) // (c // g))
        scale, bias = op.take(scale, idx, axis=0), op.take(bias, idx, axis=0)
    return nn.group_norm(x, scale, bias, num_groups=g, epsilon=float(a.get("epsilon", 1e-5)))


@_reg("BatchNormalization", replace=True)
def _batch_norm(cx: Ctx, a: _Attrs) -> list[Expr]:
    """Training mode (opset 14+, ``training_mode=1``): normalize with the batch statistics and
    return ``(Y, running_mean, running_var)`` updated with ``momentum``; inference mode is
    ``_onnx_ops``' converter."""
    if cx.opset < 14 or not a.values.get("training_mode", 0):
        from ._onnx_ops import _batch_norm as inference

        return inference(cx, a)
    a.get("training_mode")
    x, scale, bias, mean, var = (cx.x(i) for i in range(5))
    r = len(_dims(x))
    if r < 2:
        raise FrontendError(f"BatchNormalization needs data of rank >= 2, got {_dims(x)}")
    axes = (0, *range(2, r))
    momentum = float(a.get("momentum", 0.9))
    saved_mean = op.mean(x, axis=axes)
    diff = op.subtract(x, op.mean(x, axis=axes, keepdims=True))
    saved_var = op.mean(op.multiply(diff, diff), axis=axes)
    y = nn.batch_norm(x, scale, bias, saved_mean, saved_var, axis=1, epsilon=float(a.get("epsilon", 1e-5)))

    def running(old: Expr, new: Expr) -> Expr:
        return op.add(op.multiply(old, scalar(momentum, old)), op.multiply(new, scalar(1 - momentum, new)))

    return [TupleGetItem(y, 0), running(mean, saved_mean), running(var, saved_var)]


@_reg("InstanceNormalization", replace=True)
def _instance_norm(cx: Ctx, a: _Attrs) -> Expr:
    """Instance norm is group norm with one group per channel: one ``nn.group_norm`` call
    (the channel count must be static; otherwise the primitive expansion of ``_onnx_ops``)."""
    x = cx.x(0)
    xs = _dims(x)
    if len(xs) < 3 or type(xs[1]) is not int:
        from ._onnx_ops import _instance_norm as expanded

        return expanded(cx, a)
    return nn.group_norm(x, cx.x(1), cx.x(2), num_groups=xs[1], epsilon=float(a.get("epsilon", 1e-5)))


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
    if len(_dims(args[0])) == 4 and cx.opset >= 25 and (kw["q_num_heads"] or kw["kv_num_heads"]):
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
    k, s, d, ceil, b, e = pool_window(a, shape_of(x))
    p = float(a.get("p", 2))
    if not p > 0:
        raise FrontendError(f"p={p} is not supported (p must be > 0)")
    ax = op.abs(x)
    xp = op.multiply(ax, ax) if p == 2 else op.power(ax, scalar(p, x))
    avg = _pool_nd("avg", xp, k, s, b, e, d, ceil, True)
    total = op.multiply(avg, scalar(float(np.prod(k)), x))
    return op.sqrt(total) if p == 2 else op.power(total, scalar(1.0 / p, x))



# -- RNN, GRU, LSTM: unrolled over the static sequence length ------------------------------------------


def _affine(x: Expr, alpha: float, beta: float) -> Expr:
    return op.add(op.multiply(x, scalar(alpha, x)), scalar(beta, x))


def _elu(x: Expr, alpha: float, beta: float) -> Expr:
    neg = op.multiply(scalar(alpha, x), op.subtract(op.exp(x), scalar(1, x)))
    return op.where(op.greater(x, scalar(0, x)), x, neg)


# name -> (function of (x, alpha, beta), default alpha, default beta); None: the parameter is unused
_ACTIVATIONS: dict[str, tuple[Callable[[Expr, float, float], Expr], float | None, float | None]] = {
    "relu": (lambda x, a, b: nn.relu(x), None, None),
    "tanh": (lambda x, a, b: op.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: op.sigmoid(x), None, None),
    "affine": (_affine, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: nn.leaky_relu(x, alpha=a), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: nn.thresholded_relu(x, alpha=a), 1.0, None),
    "scaledtanh": (lambda x, a, b: op.multiply(scalar(a, x), op.tanh(op.multiply(x, scalar(b, x)))),
                   1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: nn.hard_sigmoid(x, alpha=a, beta=b), 0.2, 0.5),
    "elu": (_elu, 1.0, None),
    "softsign": (lambda x, a, b: op.divide(x, op.add(op.abs(x), scalar(1, x))), None, None),
    "softplus": (lambda x, a, b: nn.softplus(x), None, None),
}

_RNN_SPEC = {  # op type -> (gates, default activations per direction)
    "RNN": (1, ("Tanh",)), "GRU": (3, ("Sigmoid", "Tanh")), "LSTM": (4, ("Sigmoid", "Tanh", "Tanh")),
}

Act = Callable[[Expr], Expr]


def _bind(fn: Callable[[Expr, float, float], Expr], alpha: float, beta: float) -> Act:
    def act(x: Expr) -> Expr:
        return fn(x, alpha, beta)

    return act


def _activations(a: _Attrs, kind: str, n_dir: int) -> list[list[Act]]:
    """The activation functions of each direction, with their alpha and beta consumed in order
    by the functions that take them (ONNX's rule; missing values take the function's default)."""
    per = len(_RNN_SPEC[kind][1])
    names = a.get("activations")
    names = list(_RNN_SPEC[kind][1]) * n_dir if not names else [str(n) for n in names]
    if len(names) == per and n_dir == 2:
        names = names * 2
    if len(names) != per * n_dir:
        raise FrontendError(f"activations {names}: expected {per} per direction ({n_dir})")
    alphas = list(a.get("activation_alpha") or [])
    betas = list(a.get("activation_beta") or [])
    out: list[list[Act]] = []
    for dn in range(n_dir):
        fns: list[Act] = []
        for name in names[dn * per:(dn + 1) * per]:
            spec = _ACTIVATIONS.get(name.lower())
            if spec is None:
                raise FrontendError(f"activation {name!r} is not supported")
            fn, da, db = spec
            al = (float(alphas.pop(0)) if alphas else da) if da is not None else 0.0
            be = (float(betas.pop(0)) if betas else db) if db is not None else 0.0
            fns.append(_bind(fn, al, be))
        out.append(fns)
    return out


def _slice(x: Expr, axis: int, start: int, stop: int) -> Expr:
    return op.strided_slice(x, begin=(start,), end=(stop,), axes=(axis,))


def _dir(x: Expr, d: int) -> Expr:
    """Direction ``d`` of a (num_directions, ...) tensor, without that axis."""
    s = shape_of(x)
    return _reshape(_slice(x, 0, d, d + 1), s[1:])


@_reg("RNN", "GRU", "LSTM")
def _rnn(cx: Ctx, a: _Attrs) -> list[Expr]:
    kind = cx.node.op_type
    gates = _RNN_SPEC[kind][0]
    x, w, r = cx.x(0), cx.x(1), cx.x(2)
    direction = a.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise FrontendError(f"direction={direction!r} is not supported")
    n_dir = 2 if direction == "bidirectional" else 1
    layout = int(a.get("layout", 0))
    if layout not in (0, 1):
        raise FrontendError(f"layout={layout} is not supported")
    if layout == 1:
        x = op.transpose(x, axes=(1, 0, 2))
    seq, batch, _ = shape_of(x)
    hidden = shape_of(r)[-1]
    hs = a.get("hidden_size")
    if hs is not None and int(hs) != hidden:
        raise FrontendError(f"hidden_size={hs} does not match R of shape {shape_of(r)}")
    if shape_of(w)[0] != n_dir:
        raise FrontendError(f"W of shape {shape_of(w)} does not have {n_dir} direction(s)")
    clip = a.get("clip")
    acts = _activations(a, kind, n_dir)
    lbr = int(a.get("linear_before_reset", 0)) if kind == "GRU" else 0
    coupled = int(a.get("input_forget", 0)) if kind == "LSTM" else 0
    dt = dtype_of(x)
    lens: Any = None  # None, a numpy array (constant lengths) or an int64 (batch,) expression
    if cx.has(4):
        lv = cx.x(4)
        if type(lv) is Constant:
            lens = lv.data.astype(np.int64).reshape(-1)
            if np.all(lens == seq):
                lens = None
        else:
            lens = op.cast(_reshape(lv, (batch,)), dtype="int64")
    ys, hs_out, cs_out = [], [], []
    for d in range(n_dir):
        reverse = direction == "reverse" or d == 1
        xs = x
        if reverse:  # each sequence reversed within its own length
            rows = _reverse_index(lens, seq, batch)
            xs = _reshape(op.take(_reshape(x, (seq * batch, shape_of(x)[2])), rows, axis=0),
                          (seq, batch, shape_of(x)[2]))
        wd, rd = _dir(w, d), _dir(r, d)
        xw = nn.dense(xs, wd)  # (seq, batch, gates * hidden), all steps at once
        wb = rb = None
        if cx.has(3):
            bd = _dir(cx.x(3), d)
            wb, rb = _slice(bd, 0, 0, gates * hidden), _slice(bd, 0, gates * hidden, 2 * gates * hidden)
            if kind != "GRU" or not lbr:
                xw = op.add(xw, op.add(wb, rb))
                rb = None
            else:  # GRU with linear_before_reset: the h gate's recurrent bias goes inside r * (...)
                xw = op.add(xw, op.add(wb, op.concatenate([_slice(rb, 0, 0, 2 * hidden),
                                                           Constant(np.zeros((hidden,), dt))], axis=0)))
                rb = _slice(rb, 0, 2 * hidden, 3 * hidden)
        h: Expr = _dir(cx.x(5), d) if cx.has(5) else Constant(np.zeros((batch, hidden), dt))
        if layout == 1 and cx.has(5):
            h = _reshape(_slice(op.transpose(cx.x(5), axes=(1, 0, 2)), 0, d, d + 1), (batch, hidden))
        c: Expr | None = None
        p = None
        if kind == "LSTM":
            if cx.has(6):
                c = (_dir(cx.x(6), d) if layout == 0 else
                     _reshape(_slice(op.transpose(cx.x(6), axes=(1, 0, 2)), 0, d, d + 1), (batch, hidden)))
            else:
                c = Constant(np.zeros((batch, hidden), dt))
            if cx.has(7):
                p = _dir(cx.x(7), d)
        f = acts[d]

        def pre(v: Expr) -> Expr:
            return op.clip(v, a_min=-float(clip), a_max=float(clip)) if clip is not None else v

        outs = []
        for t in range(seq):
            xt = _reshape(_slice(xw, 0, t, t + 1), (batch, gates * hidden))
            g = [_slice(xt, 1, i * hidden, (i + 1) * hidden) for i in range(gates)]
            if kind == "RNN":
                hn = f[0](pre(op.add(g[0], nn.dense(h, rd))))
            elif kind == "GRU":
                hr = nn.dense(h, _slice(rd, 0, 0, 2 * hidden))
                z = f[0](pre(op.add(g[0], _slice(hr, 1, 0, hidden))))
                rr = f[0](pre(op.add(g[1], _slice(hr, 1, hidden, 2 * hidden))))
                rh = _slice(rd, 0, 2 * hidden, 3 * hidden)
                if lbr:
                    inner = nn.dense(h, rh)
                    if rb is not None:
                        inner = op.add(inner, rb)
                    hh = f[1](pre(op.add(g[2], op.multiply(rr, inner))))
                else:
                    hh = f[1](pre(op.add(g[2], nn.dense(op.multiply(rr, h), rh))))
                hn = op.add(op.multiply(op.subtract(scalar(1, z), z), hh), op.multiply(z, h))
            elif c is not None:  # LSTM
                hr = nn.dense(h, rd)
                gi, go, gf, gc = (op.add(g[i], _slice(hr, 1, i * hidden, (i + 1) * hidden)) for i in range(4))
                if p is not None:
                    gi = op.add(gi, op.multiply(_slice(p, 0, 0, hidden), c))
                    gf = op.add(gf, op.multiply(_slice(p, 0, 2 * hidden, 3 * hidden), c))
                i_t = f[0](pre(gi))
                f_t = op.subtract(scalar(1, i_t), i_t) if coupled else f[0](pre(gf))
                cn = op.add(op.multiply(f_t, c), op.multiply(i_t, f[1](pre(gc))))
                if p is not None:
                    go = op.add(go, op.multiply(_slice(p, 0, hidden, 2 * hidden), cn))
                hn = op.multiply(f[0](pre(go)), f[2](cn))
            y_t = hn
            if lens is not None:  # past a sequence's end: its state holds and its output is 0
                alive = (Constant((t < lens).reshape(batch, 1)) if isinstance(lens, np.ndarray) else
                         _reshape(op.less(Constant(np.asarray(t, np.int64)), lens), (batch, 1)))
                hn = op.where(alive, hn, h)
                y_t = op.where(alive, y_t, Constant(np.zeros((batch, hidden), dt)))
                if c is not None:
                    cn = op.where(alive, cn, c)
            h = hn
            if kind == "LSTM":
                c = cn
            outs.append(y_t)
        if reverse:  # back to the input's time order
            outs = outs[::-1] if lens is None else _unreverse(outs, lens, batch, hidden)
        ys.append(op.concatenate([_reshape(o, (1, 1, batch, hidden)) for o in outs], axis=0))
        hs_out.append(_reshape(h, (1, batch, hidden)))
        if c is not None:
            cs_out.append(_reshape(c, (1, batch, hidden)))
    y = op.concatenate(ys, axis=1) if n_dir == 2 else ys[0]
    yh = op.concatenate(hs_out, axis=0) if n_dir == 2 else hs_out[0]
    res: list[Expr] = [y, yh]
    if kind == "LSTM":
        res.append(op.concatenate(cs_out, axis=0) if n_dir == 2 else cs_out[0])
    if layout == 1:
        res = [op.transpose(res[0], axes=(2, 0, 1, 3)), *(op.transpose(v, axes=(1, 0, 2)) for v in res[1:])]
    return res


def _reverse_index(lens: Any, seq: int, batch: int) -> Expr:
    """Row indices into a (seq * batch, ...) tensor that reverse each batch row's sequence within
    its length ``lens`` (None: all of ``seq``; a numpy array; or an int64 expression): the same
    permutation undoes itself."""
    t_idx = np.arange(seq, dtype=np.int64)[:, None]
    cols = np.arange(batch, dtype=np.int64)[None, :]
    if lens is None or isinstance(lens, np.ndarray):
        ln = np.full((batch,), seq, dtype=np.int64) if lens is None else lens
        src = np.where(t_idx < ln[None, :], ln[None, :] - 1 - t_idx, t_idx)
        return Constant((src * batch + cols).reshape(-1))
    tt, lr = Constant(t_idx), _reshape(lens, (1, batch))
    src_e = op.where(op.less(tt, lr), op.subtract(op.subtract(lr, Constant(np.asarray(1, np.int64))), tt), tt)
    flat = op.add(op.multiply(src_e, Constant(np.asarray(batch, np.int64))), Constant(cols))
    return _reshape(flat, (seq * batch,))


def _unreverse(outs: list[Expr], lens: Any, batch: int, hidden: int) -> list[Expr]:
    """Outputs of a reversed pass (step t read x[len - 1 - t]) put back at time len - 1 - t,
    per batch row (steps past a row's length hold zeros and stay there)."""
    seq = len(outs)
    stacked = op.concatenate([_reshape(o, (1, batch, hidden)) for o in outs], axis=0)
    rows = _reverse_index(lens, seq, batch)
    back = _reshape(op.take(_reshape(stacked, (seq * batch, hidden)), rows, axis=0), (seq, batch, hidden))
    return [_reshape(_slice(back, 0, t, t + 1), (batch, hidden)) for t in range(seq)]


# -- CausalConvWithState: a depthwise causal 1-D convolution that carries its state ---------------------


@_reg("CausalConvWithState")
def _causal_conv(cx: Ctx, a: _Attrs) -> list[Expr]:
    act = a.get("activation", "none")
    if act not in ("none", "silu", "swish"):
        raise FrontendError(f"activation={act!r} is not supported")
    x, w = cx.x(0), cx.x(1)
    xs, ws = shape_of(x), shape_of(w)
    if len(xs) != 3 or len(ws) != 3 or ws[0] != xs[1] or ws[1] != 1:
        raise FrontendError(f"input {xs} must be (batch, channels, length) and weight {ws} (channels, 1, k)")
    n, c, length = xs
    k = ws[2]
    past = cx.x(3) if cx.has(3) else Constant(np.zeros((n, c, k - 1), dtype_of(x)))
    padded = op.concatenate([past, x], axis=2) if k > 1 else x
    total = length + k - 1
    y: Expr = nn.conv2d(_reshape(padded, (n, c, 1, total)), _reshape(w, (c, 1, 1, k)), groups=c)
    y = _reshape(y, (n, c, length))
    if cx.has(2):
        y = nn.bias_add(y, cx.x(2), axis=1)
    if act != "none":
        y = nn.swish(y)
    state = _slice(padded, 2, total - (k - 1), total)
    return [y, state]


@_reg("LinearAttention")
def _linear_attention(cx: Ctx, a: _Attrs) -> list[Expr]:
    a.ignore("chunk_size")  # a tuning hint without effect on the result
    rule = a.get("update_rule", "gated_delta")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise FrontendError(f"update_rule={rule!r} is not supported")
    hq, hkv = a.get("q_num_heads"), a.get("kv_num_heads")
    if hq is None or hkv is None:
        raise FrontendError("LinearAttention needs q_num_heads and kv_num_heads")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if cx.has(4) != gated or cx.has(5) != delta:
        raise FrontendError(f"update_rule {rule!r} {'needs' if gated else 'forbids'} decay and "
                            f"{'needs' if delta else 'forbids'} beta")
    args = [cx.x(0), cx.x(1), cx.x(2)] + [cx.x(i) for i in (3, 4, 5) if cx.has(i)]
    t = nn.linear_attention(*args, q_num_heads=int(hq), kv_num_heads=int(hkv),
                            scale=float(a.get("scale", 0.0)), update_rule=rule, has_past=cx.has(3))
    return [TupleGetItem(t, 0), TupleGetItem(t, 1)]


@_reg("MeanVarianceNormalization")
def _mvn(cx: Ctx, a: _Attrs) -> Expr:
    """ONNX's function body: ``(X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)`` over ``axes``."""
    x = cx.x(0)
    r = len(_dims(x))
    axes = tuple(sorted({_axis(v, r) for v in a.ints("axes", (0, 2, 3))}))
    mean = op.mean(x, axis=axes, keepdims=True)
    var = op.subtract(op.mean(op.multiply(x, x), axis=axes, keepdims=True), op.multiply(mean, mean))
    return op.divide(op.subtract(x, mean), op.add(op.sqrt(var), scalar(1e-9, x)))
