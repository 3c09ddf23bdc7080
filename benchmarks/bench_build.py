"""Construction of realistic programs (issue 11 item 5): pyir against plain ``__slots__`` objects.

Every figure is a ratio of two timings taken in the same run, pyir and baseline alternating
round by round (best of ``--rounds``), so machine load hits both alike; timings are CPU time
of the process (``time.process_time``: on a shared machine, time spent descheduled is not
counted).  Every table has a target column, and a summary of all targets closes the report:

* **workloads** (10^4 ops each, module included):
  ``resnet``: the anchors' shape (``../shared/anchors/tvm_bench.py``, as in ``bench_vs_tvm.py``):
  blocks of conv2d(padding) -> add(bias) -> relu -> conv2d -> add(bias) -> add(residual) -> relu,
  weights and biases as typed variables; ``transformer``: pre-built blocks of a self-attention
  layer and an MLP (dense, add, reshape, transpose, matmul, multiply, softmax, layer_norm, relu),
  16 typed weight variables per 29 ops.  The baseline builds the same program as plain
  ``__slots__`` objects holding the same fields (normalized attributes copied into a dict per
  call).  Target: pyir <= 4x plain.
* **operators**: every registered operator with typical attributes, as a ratio to ``nn.relu``:
  *hit* rebuilds the same call (an intern hit), *miss* builds it on a fresh input each time (a
  new call; its attributes were seen before).  Target: <= 2x relu per node the call builds: a
  builder taking a list (``concatenate([a, b], axis=0)``, Relay's signature) builds the
  ``Tuple`` and the ``Call`` -- as Relay's does, ``_make.concatenate(Tuple(data), axis)`` -- so
  its ratio is to that many relus; the number of nodes is counted, not declared (the intern
  table's growth on one miss), and the raw ratio is printed beside it.
* **TensorType and var** against a plain 3-field ``__slots__`` object (hit: an equal type is
  alive; miss: a new shape).  Target: <= 3x.

Columns ``gc on`` (the default) and ``gc paused`` (both sides with the cyclic collector off).

    python benchmarks/bench_build.py                 # 10^4 ops, 5 rounds
    python benchmarks/bench_build.py --quick         # 2 rounds, smaller operator loops
    PYTHONPATH=/tmp/pyir_before python benchmarks/bench_build.py   # another checkout, same script
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _plain import PCall, PConstant, PFunction, PModule, POp, PTensorType, PVar
from bench_vs_tvm import plain_resnet, pyir_resnet

import pyir
from pyir import op
from pyir.op.registry import get_op_def, list_ops

F32 = "float32"
TARGET_WORKLOAD, TARGET_OP, TARGET_TYPE = 4.0, 2.0, 3.0

# -- plain baseline ----------------------------------------------------------------------------


class P3:
    """A plain 3-field record (the baseline of TensorType and var)."""

    __slots__ = ("a", "b", "c")

    def __init__(self, a, b, c):
        self.a = a
        self.b = b
        self.c = c


# -- resnet ---------------------------------------------------------------------------------------


# pyir_resnet / plain_resnet: the anchors' resnet workload, imported from bench_vs_tvm.py


def _attrs_of(call: pyir.Call) -> dict[str, Any]:
    return dict(call.attrs.items())


# -- transformer ------------------------------------------------------------------------------------

S, D, H = 16, 64, 4  # sequence, model width, heads
DH = D // H
TRANSFORMER_BLOCK_OPS = 29


def pyir_transformer(n: int) -> pyir.Module:
    Var, T = pyir.Var, pyir.TensorType
    dense, add, mul, matmul = op.nn.dense, op.add, op.multiply, op.matmul
    reshape, transpose, softmax, layer_norm, relu = (op.reshape, op.transpose, op.nn.softmax,
                                                    op.nn.layer_norm, op.nn.relu)
    x = Var("x", T((S, D), F32))
    scale = pyir.const(np.float32(1.0 / np.sqrt(DH)))
    params = [x]
    h: pyir.Expr = x
    for b in range(n // TRANSFORMER_BLOCK_OPS):
        w = [Var(f"{name}{b}", T(shape, F32)) for name, shape in (
            ("wq", (D, D)), ("bq", (D,)), ("wk", (D, D)), ("bk", (D,)), ("wv", (D, D)), ("bv", (D,)),
            ("wo", (D, D)), ("bo", (D,)), ("g1", (D,)), ("e1", (D,)), ("w1", (4 * D, D)),
            ("b1", (4 * D,)), ("w2", (D, 4 * D)), ("b2", (D,)), ("g2", (D,)), ("e2", (D,)))]
        params += w
        wq, bq, wk, bk, wv, bv, wo, bo, g1, e1, w1, b1, w2, b2, g2, e2 = w
        q = transpose(reshape(add(dense(h, wq), bq), newshape=(S, H, DH)), axes=(1, 0, 2))
        k = transpose(reshape(add(dense(h, wk), bk), newshape=(S, H, DH)), axes=(1, 2, 0))
        v = transpose(reshape(add(dense(h, wv), bv), newshape=(S, H, DH)), axes=(1, 0, 2))
        p = softmax(mul(matmul(q, k), scale), axis=-1)
        o = reshape(transpose(matmul(p, v), axes=(1, 0, 2)), newshape=(S, D))
        a = layer_norm(add(add(dense(o, wo), bo), h), g1, e1, axis=-1, epsilon=1e-5)
        f = add(dense(relu(add(dense(a, w1), b1)), w2), b2)
        h = layer_norm(add(f, a), g2, e2, axis=-1, epsilon=1e-5)
    for _ in range(n - TRANSFORMER_BLOCK_OPS * (n // TRANSFORMER_BLOCK_OPS)):
        h = relu(h)
    return pyir.Module({"main": pyir.Function(params, h)})


def plain_transformer(n: int) -> PModule:
    A = _PLAIN_ATTRS
    P = _POPS
    dense, add, mul, matmul = P["nn.dense"], P["add"], P["multiply"], P["matmul"]
    reshape, transpose, softmax, layer_norm, relu = (P["reshape"], P["transpose"], P["nn.softmax"],
                                                    P["nn.layer_norm"], P["nn.relu"])
    x = PVar("x", PTensorType((S, D), F32))
    scale = PConstant(np.float32(1.0 / np.sqrt(DH)))
    params: list[Any] = [x]
    h: Any = x
    for b in range(n // TRANSFORMER_BLOCK_OPS):
        w = [PVar(f"{name}{b}", PTensorType(shape, F32)) for name, shape in (
            ("wq", (D, D)), ("bq", (D,)), ("wk", (D, D)), ("bk", (D,)), ("wv", (D, D)), ("bv", (D,)),
            ("wo", (D, D)), ("bo", (D,)), ("g1", (D,)), ("e1", (D,)), ("w1", (4 * D, D)),
            ("b1", (4 * D,)), ("w2", (D, 4 * D)), ("b2", (D,)), ("g2", (D,)), ("e2", (D,)))]
        params += w
        wq, bq, wk, bk, wv, bv, wo, bo, g1, e1, w1, b1, w2, b2, g2, e2 = w
        qkv = []
        for wt, bt, tk in ((wq, bq, "t102"), (wk, bk, "t120"), (wv, bv, "t102")):
            t = PCall(add, (PCall(dense, (h, wt), dict(A["dense"])), bt), None)
            t = PCall(reshape, (t,), dict(A["reshape3"]))
            qkv.append(PCall(transpose, (t,), dict(A[tk])))
        q, k, v = qkv
        p = PCall(softmax, (PCall(mul, (PCall(matmul, (q, k), None), scale), None),), dict(A["softmax"]))
        o = PCall(reshape, (PCall(transpose, (PCall(matmul, (p, v), None),), dict(A["t102"])),),
                  dict(A["reshape2"]))
        t = PCall(add, (PCall(add, (PCall(dense, (o, wo), dict(A["dense"])), bo), None), h), None)
        a = PCall(layer_norm, (t, g1, e1), dict(A["layer_norm"]))
        t = PCall(relu, (PCall(add, (PCall(dense, (a, w1), dict(A["dense"])), b1), None),), None)
        f = PCall(add, (PCall(dense, (t, w2), dict(A["dense"])), b2), None)
        h = PCall(layer_norm, (PCall(add, (f, a), None), g2, e2), dict(A["layer_norm"]))
    for _ in range(n - TRANSFORMER_BLOCK_OPS * (n // TRANSFORMER_BLOCK_OPS)):
        h = PCall(relu, (h,), None)
    return PModule({"main": PFunction(params, h)})


def _plain_attrs() -> dict[str, dict[str, Any]]:
    """The normalized attributes pyir's calls hold, copied into each plain call."""
    x4, w4 = pyir.var("x", shape=(1, 16, 8, 8)), pyir.var("w", shape=(16, 16, 3, 3))
    x2, w2 = pyir.var("x", shape=(S, D)), pyir.var("w", shape=(D, D))
    x3 = pyir.var("x", shape=(S, H, DH))
    return {
        "conv2d": _attrs_of(op.nn.conv2d(x4, w4, padding=(1, 1))),
        "dense": _attrs_of(op.nn.dense(x2, w2)),
        "reshape3": _attrs_of(op.reshape(x2, newshape=(S, H, DH))),
        "reshape2": _attrs_of(op.reshape(x3, newshape=(S, D))),
        "t102": _attrs_of(op.transpose(x3, axes=(1, 0, 2))),
        "t120": _attrs_of(op.transpose(x3, axes=(1, 2, 0))),
        "softmax": _attrs_of(op.nn.softmax(x3, axis=-1)),
        "layer_norm": _attrs_of(op.nn.layer_norm(x2, x2, x2, axis=-1, epsilon=1e-5)),
    }


_PLAIN_ATTRS = _plain_attrs()
_POPS = {name: POp(name) for name in list_ops()}

WORKLOADS: dict[str, tuple[Callable[[int], Any], Callable[[int], Any]]] = {
    "resnet": (pyir_resnet, plain_resnet), "transformer": (pyir_transformer, plain_transformer)}

# -- timing ---------------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any], gc_on: bool) -> float:
    gc.collect()
    if not gc_on:
        gc.disable()
    try:
        t0 = time.process_time()
        out = fn()
        t = time.process_time() - t0
    finally:
        gc.enable()
    del out
    return t


def alternate(pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]], rounds: int,
              gc_on: bool) -> dict[str, tuple[float, float]]:
    """Best-of-``rounds`` (pyir seconds, baseline seconds) per entry, the two alternating."""
    best: dict[str, list[float]] = {k: [float("inf"), float("inf")] for k in pairs}
    for r in range(rounds):
        for k, (fa, fb) in pairs.items():
            order = ((0, fa), (1, fb)) if r % 2 == 0 else ((1, fb), (0, fa))
            for i, f in order:
                best[k][i] = min(best[k][i], _timed(f, gc_on))
    return {k: (a, b) for k, (a, b) in best.items()}


# -- operators ------------------------------------------------------------------------------------

_INPUTS = {
    "x2": ((S, D), F32), "y2": ((S, D), F32), "x4": ((1, 16, 8, 8), F32), "w4": ((16, 16, 3, 3), F32),
    "w2": ((D, D), F32), "c": ((16,), F32), "d": ((D,), F32), "b2": ((S, D), "bool"),
    "i": ((4,), "int32"), "s2": ((2,), "int64"), "s4": ((4,), "int64"), "k": ((), "int64"),
    "p4": ((4, 2), "int64"), "f0": ((), F32),
}
# operator -> (inputs, typical attributes); unlisted operators take one or two x2 tensors
_OP_CASES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "nn.conv2d": (("x4", "w4"), {"strides": (1, 1), "padding": (1, 1)}),
    "nn.max_pool2d": (("x4",), {"pool_size": (2, 2), "strides": (2, 2)}),
    "nn.avg_pool2d": (("x4",), {"pool_size": (2, 2), "strides": (2, 2)}),
    "nn.global_avg_pool2d": (("x4",), {}),
    "nn.global_max_pool2d": (("x4",), {}),
    "nn.batch_norm": (("x4", "c", "c", "c", "c"), {"epsilon": 1e-5}),
    "nn.layer_norm": (("x2", "d", "d"), {"axis": -1, "epsilon": 1e-5}),
    "nn.lrn": (("x4",), {"size": 5}),
    "nn.dense": (("x2", "w2"), {}),
    "nn.bias_add": (("x4", "c"), {"axis": 1}),
    "nn.prelu": (("x4", "c"), {}),
    "nn.softmax": (("x2",), {"axis": -1}),
    "nn.log_softmax": (("x2",), {"axis": -1}),
    "nn.dropout": (("x2",), {"rate": 0.1}),
    "nn.leaky_relu": (("x2",), {"alpha": 0.1}),
    "nn.pad": (("x4", "f0"), {"pad_width": ((0, 0), (0, 0), (1, 1), (1, 1))}),
    "nn.batch_flatten": (("x4",), {}),
    "argmax": (("x2",), {"axis": 1}),
    "cast": (("x2",), {"dtype": "float16"}),
    "clip": (("x2",), {"a_min": 0.0, "a_max": 6.0}),
    "concatenate": (("x2", "y2"), {"axis": 0}),
    "expand_dims": (("x2",), {"axis": 0}),
    "reshape": (("x2",), {"newshape": (4, 256)}),
    "split": (("x2",), {"indices_or_sections": (2,), "axis": 1}),
    "squeeze": (("x4",), {"axis": (0,)}),
    "strided_slice": (("x2",), {"begin": (0, 0), "end": (8, 32)}),
    "take": (("x2", "i"), {"axis": 0}),
    "transpose": (("x2",), {"axes": (1, 0)}),
    "where": (("b2", "x2", "y2"), {}),
    "logical_not": (("b2",), {}),
    "logical_and": (("b2", "b2"), {}),
    "logical_or": (("b2", "b2"), {}),
    "shape_of": (("x2",), {}),
    "broadcast_to": (("d",), {"shape": (S, D)}),
    "full": (("f0",), {"shape": (S, D)}),
    "tile": (("x2",), {"reps": (1, 2)}),
    "one_hot": (("i", "f0", "f0"), {"depth": 8}),
    "topk": (("x2",), {"k": 4}),
    "image.resize2d": (("x4",), {"size": (16, 16)}),
    "dyn.reshape": (("x2", "s2"), {}),
    "dyn.broadcast_to": (("d", "s2"), {}),
    "dyn.zeros": (("s2",), {}),
    "dyn.ones": (("s2",), {}),
    "dyn.full": (("f0", "s2"), {}),
    "dyn.strided_slice": (("x2", "s2", "s2", "s2"), {}),
    "dyn.nn.pad": (("x2", "p4", "f0"), {}),
    "dyn.tile": (("x2", "s2"), {}),
    "dyn.topk": (("x2", "k"), {}),
    "dyn.image.resize2d": (("x4", "s2"), {}),
    "dyn.one_hot": (("i", "f0", "f0", "k"), {}),
    "dyn.arange": (("f0", "f0", "f0"), {}),
    "bitcast": (("x2",), {"dtype": "int32"}),
    "center_crop_pad": (("x2",), {"shape": (4, 16)}),
    "col2im": (("x2",), {"image_shape": (4, 4), "block_shape": (2, 2)}),
    "depth_to_space": (("x4",), {"block_size": 2}),
    "space_to_depth": (("x4",), {"block_size": 2}),
    "max_unpool": (("x4", "x4"), {"kernel_shape": (2, 2)}),
    "dyn.max_unpool": (("x4", "x4", "s4"), {"kernel_shape": (2, 2)}),
    "einsum": (("x2", "w2"), {"equation": "ij,jk->ik"}),
    "image.affine_grid": (("x2",), {"size": (1, 1, 4, 4)}),
    "image.resize": (("x4",), {"size": (1, 16, 16, 16), "scales": (1.0, 1.0, 2.0, 2.0), "roi": (0.0,) * 8}),
    "nn.group_norm": (("x4", "c", "c"), {"num_groups": 4}),
    "nn.linear_attention": (("x2", "x2", "x2"), {"q_num_heads": 4, "kv_num_heads": 4}),
    "collapse_sum_to": (("x2",), {"shape": (1, D)}),
    "layout_transform": (("x4",), {"src_layout": "NCHW", "dst_layout": "NHWC"}),
    "vm.reshape_tensor": (("x2", "s2"), {"newshape": (D, S)}),
    "on_device": (("x2",), {"virtual_device": "cuda:0", "constrain_result": True}),
    "nn.batch_matmul": (("x2", "x2"), {"transpose_b": True}),
    "nn.upsampling": (("x4",), {"scale_h": 2.0, "scale_w": 2.0}),
}
for _r in ("sum", "mean", "max", "min", "prod"):
    _OP_CASES[_r] = (("x2",), {"axis": (1,), "keepdims": True})


def _builder(name: str) -> tuple[Callable[..., Any], str]:
    """The builder of operator ``name`` (``dyn.nn.pad`` is ``op.dyn.pad``) and the form of its
    call: ``"plain"`` takes the call's inputs positionally, ``"list"`` one list of them
    (``concatenate``, Relay's signature), ``"pad"`` Relay's ``nn.pad(data, pad_width, pad_value)``."""
    for mod in op.BUILDER_MODULES:
        for n in mod.__all__:
            b = getattr(mod, n, None)
            if getattr(getattr(b, "op", None), "name", None) == name:
                if getattr(b, "relay_signature", False) and name in ("concatenate", "nn.pad"):
                    return b, "list" if name == "concatenate" else "pad"
                return b, "plain"
    raise KeyError(name)


def _loops(f: Callable[..., Any], form: str, args: tuple[Any, ...], kw: dict[str, Any], fresh: list[Any],
           k: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(hit loop, miss loop) calling ``f`` as a program does: inputs positionally, attributes as
    keywords (``f(x, w, strides=s, padding=p)``, the values the very objects of each call, as a
    literal is), generated for the operator -- not through ``f(*args, **kw)``, whose splat copies
    a dict and rebinds the keywords at each call: a cost of the caller, not of the builder."""
    kw = dict(kw)
    ins = [f"a{i}" for i in range(len(args))]
    if form == "pad":  # nn.pad(data, pad_width, pad_value): pad_width is positional
        pos = [ins[0], "kv_pad_width", *ins[1:]]
        kwn = [n for n in kw if n != "pad_width"]
    else:
        pos = [f"[{', '.join(ins)}]"] if form == "list" else ins
        kwn = list(kw)
    call = ", ".join(pos + [f"{n}=kv_{n}" for n in kwn])
    params = ", ".join(["f", "fresh", "reps", *ins, *(f"kv_{n}" for n in kw)])
    src = (f"def hit({params}):\n    return [f({call}) for _ in reps]\n"
           f"def miss({params}):\n    return [f({call.replace('a0', 'x', 1)}) for x in fresh]\n")
    ns: dict[str, Any] = {}
    exec(compile(src, "<bench_build op loops>", "exec"), ns)
    values = {"f": f, "fresh": fresh, "reps": range(k), **dict(zip(ins, args)),
              **{f"kv_{n}": v for n, v in kw.items()}}
    hit, miss = ns["hit"], ns["miss"]
    return (lambda: hit(**values)), (lambda: miss(**values))


def nodes_built(warm: Callable[[], Any], f: Callable[[], Any]) -> int:
    """How many nodes one call of ``f`` (a miss: a fresh input) adds to the intern table, while
    the result of ``warm`` (the same call on another fresh input: its attributes) is alive."""
    from pyir.ir.node import live_node_count

    keep = warm()
    gc.collect()
    before = live_node_count()
    out = f()
    n = live_node_count() - before
    del out, keep
    return max(n, 1)


def op_cases(k: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """For every operator: (hit loop, miss loop), each building ``k`` calls."""
    ins = {name: pyir.var(name, shape=s, dtype=dt) for name, (s, dt) in _INPUTS.items()}
    out = {}
    for name in list_ops():
        odef = get_op_def(name)
        if odef.num_inputs == 0:  # zeros, ones, arange: no input to vary for a miss
            continue
        default = ("x2",) * (odef.num_inputs or 2)
        inputs, kw = _OP_CASES.get(name, (default, {}))
        f, form = _builder(name)
        args = tuple(ins[i] for i in inputs)
        s0, dt0 = _INPUTS[inputs[0]]
        fresh = [pyir.var("f", shape=s0, dtype=dt0) for _ in range(k)]
        hit, miss = _loops(f, form, args, kw, fresh, k)
        hit()
        out[name] = (hit, miss)
        one, two = [pyir.var("f", shape=s0, dtype=dt0)], [pyir.var("f", shape=s0, dtype=dt0)]
        NODES[name] = nodes_built(_loops(f, form, args, kw, one, 1)[1], _loops(f, form, args, kw, two, 1)[1])
    return out


NODES: dict[str, int] = {}  # operator -> nodes one call builds (op_cases counts them)


def type_cases(k: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    T, Var, var = pyir.TensorType, pyir.Var, pyir.var
    t = T((16, 16, 3, 3), F32)
    dims = list(range(1, k + 1))
    c = 16

    def tt_hit():
        return [T((c, c, 3, 3), F32) for _ in dims]

    def p_tt_hit():
        return [P3((c, c, 3, 3), F32, None) for _ in dims]

    def tt_miss():
        return [T((d, c, 3, 3), F32) for d in dims]

    def p_tt_miss():
        return [P3((d, c, 3, 3), F32, None) for d in dims]

    def v_typed():
        return [Var("w", t) for _ in dims]

    def p_v():
        return [P3("w", t, None) for _ in dims]

    def v_shape():
        return [var("w", shape=(c, c, 3, 3)) for _ in dims]

    def p_v_shape():
        return [P3("w", P3((c, c, 3, 3), F32, None), None) for _ in dims]

    return {"TensorType hit": (tt_hit, p_tt_hit), "TensorType miss": (tt_miss, p_tt_miss),
            "Var(name, type)": (v_typed, p_v), "var(name, shape=...) (type hit)": (v_shape, p_v_shape)}


# -- floors: the irreducible steps --------------------------------------------------------------
# What a weak, exact intern table with ids at construction costs at the least, in pure Python:
# each row adds one step to the row above, down to the full minimal construction (the same twin
# class, weak reference and table insert pyir uses, into a private table), so the last row of
# each group is a floor that no constructor keeping those properties can go under.


class _Floor:
    """A class called like a node kind: ``__new__`` runs the steps given to it."""

    __slots__ = ()


def floor_cases(k: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Each entry: (the steps, the plain 3-field object), ``k`` of each, kept alive."""
    import itertools
    import struct
    import weakref

    from pyir.ir.expr import Var, _VarB
    from pyir.ir.node import _new
    from pyir.ir.types import TensorType, _TensorTypeB

    table: dict[bytes, Any] = {}
    setdefault = table.setdefault

    class Ref(weakref.ref):
        __slots__ = ("key",)

    def drop(ref: Any) -> None:
        table.pop(ref.key, None)

    to_bytes: Any = int.to_bytes
    uid = map(to_bytes, itertools.count(1 << 80), itertools.repeat(16), itertools.repeat("little")).__next__
    t = pyir.TensorType((16, 16, 3, 3), F32)
    pack4 = struct.Struct("<4q").pack
    digest = pyir.ir.node.digest
    dims = list(range(10**6, 10**6 + k))

    def var_steps(n_steps: int) -> Callable[[], Any]:
        def new(cls: Any, name: str, ta: Any) -> Any:
            n = _new(_VarB)
            if n_steps >= 1:
                n.name_hint = name
                n.type_annotation = ta
                n._mask = 1
                n.id = uid() if n_steps >= 2 else b""
                n.__class__ = Var
            if n_steps >= 3:
                ref = Ref(n, drop)
                ref.key = n.id
                if n_steps >= 4:
                    setdefault(n.id, ref)
            return n
        cls = type("FloorVar", (_Floor,), {"__new__": new, "__slots__": ()})
        return lambda: [cls("w", t) for _ in dims]

    def tt_steps(n_steps: int) -> Callable[[], Any]:
        cache: dict[Any, Any] = {}

        def new(cls: Any, shape: tuple[int, ...], dtype: str) -> Any:
            n = _new(_TensorTypeB)
            n.shape = shape
            n.dtype = dtype
            key = digest(b"tfloat32(" + pack4(*shape)) if n_steps >= 1 else b""
            n.id = key
            n.__class__ = TensorType
            if n_steps >= 2:
                ref = Ref(n, drop)
                ref.key = key
                if n_steps >= 3:
                    setdefault(key, ref)
                    if n_steps >= 4:
                        cache[(shape, dtype)] = ref
            return n
        cls = type("FloorTensorType", (_Floor,), {"__new__": new, "__slots__": ()})
        return lambda: [cls((d, 16, 3, 3), F32) for d in dims]

    p_var = lambda: [P3("w", t, None) for _ in dims]  # noqa: E731
    p_tt = lambda: [P3((d, 16, 3, 3), F32, None) for d in dims]  # noqa: E731
    return {
        "Var: class call + object + 4 slot stores + class swap": (var_steps(1), p_var),
        "Var: ... + fresh uid (the id)": (var_steps(2), p_var),
        "Var: ... + weak reference with its key": (var_steps(3), p_var),
        "Var: ... + table insert (floor)": (var_steps(4), p_var),
        "Var(name, type) (pyir)": (lambda: [pyir.Var("w", t) for _ in dims], p_var),
        "TensorType: class call + object + 3 stores + class swap": (tt_steps(0), p_tt),
        "TensorType: ... + struct pack + digest (the id)": (tt_steps(1), p_tt),
        "TensorType: ... + weak reference with its key": (tt_steps(2), p_tt),
        "TensorType: ... + table insert": (tt_steps(3), p_tt),
        "TensorType: ... + (shape, dtype) cache insert (floor)": (tt_steps(4), p_tt),
        "TensorType miss (pyir)": (lambda: [pyir.TensorType((d, 16, 3, 3), F32) for d in dims], p_tt),
    }


# -- driver ---------------------------------------------------------------------------------------


def _mark(ratio: float, target: float) -> str:
    return "✓" if ratio <= target else "✗"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="ops per workload")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--op-loops", type=int, default=1000, help="calls per operator measurement")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip: workloads,ops,types,floors")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.op_loops = 2, 300
    skip = set(filter(None, a.skip.split(",")))
    n = a.n
    print(f"pyir from {pyir.__file__}; {n:,} ops; best of {a.rounds} alternating rounds; CPU time\n")
    summary: list[tuple[str, str, float, float]] = []  # (what, column, ratio, target)

    if "workloads" not in skip:
        for name, (fp, fb) in WORKLOADS.items():
            assert len([c for c in pyir.post_order(fp(n)["main"]) if isinstance(c, pyir.Call)]) == n
        pairs = {name: (lambda fp=fp: fp(n), lambda fb=fb: fb(n)) for name, (fp, fb) in WORKLOADS.items()}
        print("## Workloads (µs per op, module included; ratio to plain __slots__ objects)\n")
        print("| workload | gc | pyir | plain | ratio | target |")
        print("|---|---|---|---|---|---|")
        for gc_on in (True, False):
            res = alternate(pairs, a.rounds, gc_on)
            for name, (tp, tb) in res.items():
                r = tp / tb
                col = "gc on" if gc_on else "gc paused"
                print(f"| {name} | {'on' if gc_on else 'paused'} | {tp / n * 1e6:.2f} | {tb / n * 1e6:.2f} | "
                      f"**{r:.2f}x** | <= {TARGET_WORKLOAD:g}x {_mark(r, TARGET_WORKLOAD)} |")
                summary.append((f"{name} workload", col, r, TARGET_WORKLOAD))
        print()

    if "ops" not in skip:
        k = a.op_loops
        cases = op_cases(k)
        print(f"## Operators (µs per call; ratio to nn.relu in the same run; target <= {TARGET_OP:g}x)\n")
        relu_hit, relu_miss = cases["nn.relu"]
        cols = []
        for gc_on in (True, False):
            # per operator: best of rounds of [op hit, relu hit, op miss, relu miss], each op paired
            # with relu loops timed right next to it (order flipped every round)
            best = {name: [float("inf")] * 4 for name in cases}
            for r in range(a.rounds):
                for name, (hit, miss) in cases.items():
                    fs = (hit, relu_hit, miss, relu_miss)
                    for i in ((0, 1, 2, 3) if r % 2 == 0 else (1, 0, 3, 2)):
                        best[name][i] = min(best[name][i], _timed(fs[i], gc_on) / k)
            cols.append(best)
        print("Ratios are per node the call builds (column *nodes*; a raw ratio in brackets when it is more "
              "than one).\n")
        print("| operator | nodes | hit µs | hit ratio | miss µs | miss ratio | gc paused: hit ratio | "
              "miss ratio | target |")
        print("|---|---|---|---|---|---|---|---|---|")
        worst = [(0.0, ""), (0.0, "")]
        for name in cases:
            nodes = NODES[name]
            row = [f"| {name} | {nodes} "]
            top = 0.0

            def shown(r: float) -> str:
                return f"{r / nodes:.2f}x" + (f" ({r:.2f}x)" if nodes > 1 else "")

            for j, best in enumerate(cols):
                oh, rh_, om, rm_ = best[name]
                rh, rm = oh / rh_, om / rm_
                top = max(top, rh / nodes, rm / nodes)
                worst[j] = max(worst[j], (rh / nodes, f"{name} hit"), (rm / nodes, f"{name} miss"))
                if j == 0:
                    row.append(f"| {oh * 1e6:.2f} | {shown(rh)} | {om * 1e6:.2f} | {shown(rm)} ")
                else:
                    row.append(f"| {shown(rh)} | {shown(rm)} ")
            row.append(f"| {_mark(top, TARGET_OP)} |")
            print("".join(row))
        relu_us = cols[0]["nn.relu"]
        print(f"\nWorst operator / relu: gc on **{worst[0][0]:.2f}x** ({worst[0][1]}), gc paused "
              f"**{worst[1][0]:.2f}x** ({worst[1][1]}); relu itself: hit {relu_us[1] * 1e6:.2f} µs, "
              f"miss {relu_us[3] * 1e6:.2f} µs\n")
        summary.append((f"worst operator / relu ({worst[0][1]})", "gc on", worst[0][0], TARGET_OP))
        summary.append((f"worst operator / relu ({worst[1][1]})", "gc paused", worst[1][0], TARGET_OP))

    if "types" not in skip:
        k = a.op_loops * 5
        pairs = type_cases(k)
        print(f"## TensorType and var (µs per call; ratio to a plain 3-field __slots__ object; target <= "
              f"{TARGET_TYPE:g}x)\n")
        print("| construction | gc | pyir | plain | ratio | target |")
        print("|---|---|---|---|---|---|")
        for gc_on in (True, False):
            res = alternate(pairs, a.rounds, gc_on)
            for name, (tp, tb) in res.items():
                r = tp / tb
                print(f"| {name} | {'on' if gc_on else 'paused'} | {tp / k * 1e6:.3f} | {tb / k * 1e6:.3f} | "
                      f"**{r:.2f}x** | <= {TARGET_TYPE:g}x {_mark(r, TARGET_TYPE)} |")
                summary.append((name, "gc on" if gc_on else "gc paused", r, TARGET_TYPE))
        print()

    if "floors" not in skip:
        k = a.op_loops * 5
        pairs = floor_cases(k)
        print("## Floors: the irreducible steps of a fresh Var and TensorType (µs per object; ratio to a "
              "plain 3-field __slots__ object)\n")
        print("Each row adds one step to the row above; the row marked floor is the least a weak, exact "
              "table with ids at construction costs in pure Python.\n")
        print("| steps | gc | µs | plain | ratio |")
        print("|---|---|---|---|---|")
        for gc_on in (True, False):
            res = alternate(pairs, a.rounds, gc_on)
            for name, (tp, tb) in res.items():
                print(f"| {name} | {'on' if gc_on else 'paused'} | {tp / k * 1e6:.3f} | {tb / k * 1e6:.3f} | "
                      f"**{tp / tb:.2f}x** |")
        print()

    print("## Summary\n")
    print("| measure | gc | ratio | target |")
    print("|---|---|---|---|")
    for what, col, r, target in summary:
        print(f"| {what} | {col} | {r:.2f}x | <= {target:g}x {_mark(r, target)} |")


if __name__ == "__main__":
    main()
