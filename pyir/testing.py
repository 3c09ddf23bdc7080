"""Builders of realistic programs, and hypothesis strategies, for tests,
examples and benchmarks (and for users testing their own passes).

* :func:`resnet` — a ResNet-style network (conv2d + bias/batch_norm + relu,
  residual adds) with N blocks;
* :func:`transformer_block` — dense/matmul/softmax attention with layer norm;
* :func:`elementwise_chain` — a long chain of elementwise ops (depth tests);
* :func:`shared_dag` — a DAG with heavy sharing;
* :func:`programs` — a hypothesis strategy drawing random well-typed modules;
* :func:`random_inputs` — seeded random inputs for a module's ``main``;
* :func:`check_pass` — the invariant bundle every pass must satisfy (input
  unchanged, meaning unchanged, lineage complete, idempotent), for your own passes;
* :func:`assert_canonical` — every node of a module (or below a node) is exactly
  what the public constructors build (the oracle of the loader fuzz tests);
* :func:`assert_alpha_equal` (and its Relay name :func:`assert_structural_equal`) — two
  programs are alpha-equal, else an error naming the first difference and where it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import op
from .analysis.equality import alpha_equal
from .errors import AlphaEqualityError, WellFormedError
from .ir.dims import substitute
from .ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var, const, var
from .ir.module import Module
from .ir.node import F_VAR, Attrs, Node, gc_paused
from .ir.types import TensorType

__all__ = ["resnet", "transformer_block", "elementwise_chain", "shared_dag", "programs",
           "random_inputs", "PROGRAM_SHAPE", "SYMBOLIC_BATCH", "snapshot", "assert_same_values", "check_pass",
           "assert_canonical", "assert_alpha_equal", "assert_structural_equal"]


def _bulk(fn: Any) -> Any:
    """Build with the cyclic collector paused (see :func:`pyir.ir.node.gc_paused`)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        with gc_paused():
            return fn(*args, **kw)
    return wrapper


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.1) -> Constant:
    return const(rng.standard_normal(shape).astype("float32") * scale)


@_bulk
def resnet(num_blocks: int = 2, *, channels: int = 8, size: int = 8, batch: int = 1,
           batch_norm: bool = True, num_classes: int = 10, seed: int = 0) -> Module:
    """A ResNet-style module: a stem conv, ``num_blocks`` residual blocks, then
    global pooling and a dense classifier.

    Each block is ``conv-bn-relu-conv-bn (+ input) relu`` (with ``batch_norm=False``:
    conv + bias_add instead of batch_norm); about 9 calls per block.
    """
    rng = np.random.default_rng(seed)
    x = var("data", shape=(batch, 3, size, size))
    c = channels

    def norm(h: Expr) -> Expr:
        if batch_norm:
            bn = op.nn.batch_norm(h, _w(rng, c, scale=1.0), _w(rng, c),
                                  _w(rng, c), const(rng.uniform(0.5, 1.5, c).astype("float32")))
            return TupleGetItem(bn, 0)
        return op.nn.bias_add(h, _w(rng, c))

    h = op.nn.relu(norm(op.nn.conv2d(x, _w(rng, c, 3, 3, 3), padding=(1, 1))))
    for _ in range(num_blocks):
        y: Expr = op.nn.relu(norm(op.nn.conv2d(h, _w(rng, c, c, 3, 3), padding=(1, 1))))
        y = norm(op.nn.conv2d(y, _w(rng, c, c, 3, 3), padding=(1, 1)))
        h = op.nn.relu(op.add(y, h))
    h = op.nn.batch_flatten(op.nn.global_avg_pool2d(h))
    out = op.nn.softmax(op.nn.bias_add(op.nn.dense(h, _w(rng, num_classes, c)), _w(rng, num_classes)))
    return Module({"main": Function([x], out)})


@_bulk
def transformer_block(seq: int = 8, dim: int = 16, heads: int = 2, *, seed: int = 0) -> Module:
    """One transformer encoder block (multi-head self-attention + MLP, layer norms)."""
    rng = np.random.default_rng(seed)
    x = var("tokens", shape=(seq, dim))
    hd = dim // heads

    def proj(h: Expr, out: int) -> Expr:
        return op.nn.bias_add(op.nn.dense(h, _w(rng, out, h.checked_type.shape[-1])), _w(rng, out),  # type: ignore[attr-defined]
                              axis=-1)

    def split_heads(h: Expr) -> Expr:
        return op.transpose(op.reshape(h, newshape=(seq, heads, hd)), axes=(1, 0, 2))

    q, k, v = (split_heads(proj(x, dim)) for _ in range(3))
    scores = op.divide(op.matmul(q, op.transpose(k, axes=(0, 2, 1))), const(float(np.sqrt(hd))))
    attn = op.matmul(op.nn.softmax(scores, axis=-1), v)
    attn = op.reshape(op.transpose(attn, axes=(1, 0, 2)), newshape=(seq, dim))
    h = op.nn.layer_norm(op.add(x, proj(attn, dim)), _w(rng, dim, scale=1.0), _w(rng, dim))
    mlp = proj(op.nn.relu(proj(h, 2 * dim)), dim)
    out = op.nn.layer_norm(op.add(h, mlp), _w(rng, dim, scale=1.0), _w(rng, dim))
    return Module({"main": Function([x], out)})


@_bulk
def elementwise_chain(n: int, shape: Sequence[Any] = (4,)) -> Module:
    """``main(x)``: ``n`` elementwise calls in one chain (graph depth ``n``); ``shape`` may hold
    symbolic dimensions (``("batch", 4)``)."""
    x = var("x", shape=shape)
    # the constant broadcasts over symbolic dimensions (size 1 there)
    one = const(np.ones([d if type(d) is int else 1 for d in TensorType(shape).shape], "float32"))
    h: Expr = x
    ops = (lambda a: op.add(a, one), lambda a: op.multiply(a, one), op.nn.relu, lambda a: op.subtract(a, x))
    for i in range(n):
        h = ops[i % 4](h)
    return Module({"main": Function([x], h)})


@_bulk
def shared_dag(n: int, *, seed: int = 0, shape: Sequence[int] = (4,)) -> Module:
    """A DAG of ``n`` calls where each call uses one or two random earlier nodes."""
    rng = np.random.default_rng(seed)
    x = var("x", shape=shape)
    pool: list[Expr] = [x, op.nn.relu(x)]
    for i in range(n):
        a = pool[int(rng.integers(len(pool)))]
        b = pool[-1 - int(rng.integers(min(len(pool), 8)))]
        k = i % 3
        pool.append(op.add(a, b) if k == 0 else op.maximum(a, b) if k == 1 else op.tanh(a))
    return Module({"main": Function([x], Tuple([pool[-1], pool[len(pool) // 2]]))})


# -- random programs ----------------------------------------------------------------------------------

PROGRAM_SHAPE = (1, 2, 4, 4)
_T = TensorType(PROGRAM_SHAPE, "float32")


def random_inputs(mod: Module, seed: int = 0, shapes: Mapping[str, int] | None = None) -> list[np.ndarray]:
    """Seeded random inputs for ``mod["main"]`` (standard normal floats; ints in [0, 5), bools).

    ``shapes`` gives the value of each symbolic dimension (``{"batch": 2}``); a parameter whose
    shape stays symbolic or unknown raises WellFormedError."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        t = p.type_annotation
        if not isinstance(t, TensorType):
            raise WellFormedError(f"random_inputs needs tensor parameters, %{p.name_hint} is {t}")
        shape: list[int] = []
        for d in t.shape:
            v = substitute(d, shapes or {})
            if type(v) is not int:
                break
            shape.append(v)
        if len(shape) != t.ndim:
            raise WellFormedError(f"random_inputs: %{p.name_hint} has shape {t}; give the value of every "
                                  f"symbolic dimension with shapes={{...}}")
        if t.dtype == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        elif np.dtype(t.dtype).kind in "iu":
            out.append(rng.integers(0, 5, shape).astype(t.dtype))
        else:
            out.append(rng.standard_normal(shape).astype(t.dtype))
    return out


SYMBOLIC_BATCH = "batch"
"""The symbol of the batch dimension of ``programs(symbolic=True)``."""


def _build_program(steps: list[tuple[int, int, int, float]], n_params: int, use_let: list[bool],
                   symbolic: bool = False) -> Module:
    """Deterministically build a well-typed program from drawn integers (with ``symbolic``: the
    batch dimension of the parameters is the symbol :data:`SYMBOLIC_BATCH`)."""
    pt = TensorType((SYMBOLIC_BATCH, *PROGRAM_SHAPE[1:]), "float32") if symbolic else _T
    params = [Var(f"p{i}", pt) for i in range(n_params)]
    pool: list[Expr] = list(params)
    lets: list[tuple[Var, Expr]] = []
    c, h, w = PROGRAM_SHAPE[1:]
    for idx, (kind, a_i, b_i, f) in enumerate(steps):
        a = pool[a_i % len(pool)]
        b = pool[b_i % len(pool)]
        k = kind % 22
        e: Expr
        if k == 0:
            e = op.add(a, b)
        elif k == 1:
            e = op.multiply(a, b)
        elif k == 2:
            e = op.subtract(a, b)
        elif k == 3:
            e = op.maximum(a, b)
        elif k == 4:
            e = op.nn.relu(a)
        elif k == 5:
            e = op.tanh(a)
        elif k == 6:
            e = op.sigmoid(a)
        elif k == 7:
            e = op.add(a, const(0.0))
        elif k == 8:
            e = op.multiply(a, const(1.0))
        elif k == 9:
            e = op.transpose(op.transpose(a, axes=(0, 1, 3, 2)), axes=(0, 1, 3, 2))
        elif k == 10 and not symbolic:
            e = op.reshape(op.reshape(a, newshape=(c, h * w)), newshape=PROGRAM_SHAPE)
        elif k == 10 and f > 0:  # -1 over a symbolic count: (batch * 2, 16), then batch again
            e = op.reshape(op.reshape(a, newshape=(-1, h * w)), newshape=(-1, c, h, w))
        elif k == 10:  # (batch, 32), then 0 copies batch
            e = op.reshape(op.nn.batch_flatten(a), newshape=(0, c, h, w))
        elif k == 11:
            wt = const(np.linspace(-f, f, c * c * 9, dtype="float32").reshape(c, c, 3, 3))
            e = op.nn.conv2d(a, wt, padding=(1, 1))
        elif k == 12:
            e = op.nn.bias_add(a, const(np.full(c, f, "float32")))
        elif k == 13:
            bn = op.nn.batch_norm(a, const(np.full(c, 1.0 + f, "float32")), const(np.full(c, f, "float32")),
                                  const(np.full(c, -f, "float32")), const(np.full(c, 1.5, "float32")))
            e = TupleGetItem(bn, 0)
        elif k == 14:
            e = op.nn.avg_pool2d(a, pool_size=(3, 3), padding=(1, 1))
        elif k == 15:
            e = op.nn.softmax(a, axis=1)
        elif k == 16:
            e = TupleGetItem(Tuple([a, b]), int(f > 0))
        elif k == 17:
            cond = op.greater(op.sum(a), op.sum(b))
            e = If(cond, op.nn.relu(a), op.negative(b))
        elif k == 18:
            e = op.clip(a, a_min=-abs(f), a_max=abs(f) + 0.5)
        elif k == 19:
            # a constant subgraph, for FoldConstant
            e = op.add(a, op.multiply(const(np.full(PROGRAM_SHAPE, f, "float32")), const(2.0)))
        elif k == 20:
            e = op.nn.dropout(a)
        else:
            e = op.nn.max_pool2d(a, pool_size=(3, 3), padding=(1, 1))
        if use_let[idx % len(use_let)]:
            v = Var(f"t{idx}")
            lets.append((v, e))
            e = v
        pool.append(e)
    body: Expr = pool[-1]
    if len(pool) > n_params + 2:
        body = op.add(body, pool[n_params + len(steps) // 2])
    for v, e in reversed(lets):
        body = Let(v, e, body)
    return Module({"main": Function(params, body)})


def programs(max_steps: int = 12, *, allow_let: bool = True, symbolic: bool = False) -> Any:
    """A hypothesis strategy of random well-typed modules.

    ``main`` takes 1-3 tensors of shape ``PROGRAM_SHAPE`` (float32) and mixes
    elementwise, broadcast, layout, conv/pool/batch_norm, tuple, if and let
    constructs, including patterns that SimplifyExpr, FoldConstant and
    SimplifyInference rewrite.

    With ``symbolic=True`` the parameters' batch dimension is the symbol ``batch``
    (:data:`SYMBOLIC_BATCH`: ``Tensor[(batch, 2, 4, 4), float32]``) and the reshapes go
    through ``-1`` and ``0``; give it a value with ``random_inputs(mod, shapes={"batch": 3})``.
    """
    from hypothesis import strategies as st

    step = st.tuples(st.integers(0, 21), st.integers(0, 64), st.integers(0, 64),
                     st.sampled_from([-0.5, -0.25, 0.25, 0.5]))
    lets = st.lists(st.booleans(), min_size=1, max_size=4) if allow_let else st.just([False])
    return st.builds(_build_program, st.lists(step, min_size=1, max_size=max_steps),
                     st.integers(1, 3), lets, st.just(symbolic))


# -- the invariant bundle ----------------------------------------------------------------------------


def snapshot(mod: Module) -> tuple[str, dict[str, list[bytes]]]:
    """Printed text (with metadata) and the ids of every node of every function."""
    from .ir.traverse import post_order

    return (mod.astext(show_meta_data=True),
            {name: [n.id for n in post_order(f)] for name, f in mod.items()})


def _default_shapes(mod: Module) -> dict[str, int]:
    """Every symbol of ``mod["main"]``'s parameter types, bound to 3."""
    from .ir.dims import free_syms

    names: set[str] = set()
    for p in mod["main"].params:
        t = p.type_annotation
        if isinstance(t, TensorType) and not t.static:
            for d in t.shape:
                names |= free_syms(d)
    return dict.fromkeys(sorted(names), 3)


def assert_same_values(before: Module, after: Module, *, inputs: Sequence[np.ndarray] | None = None,
                       rtol: float = 1e-4, atol: float = 1e-5, seed: int = 0,
                       shapes: Mapping[str, int] | None = None) -> None:
    """Both modules' ``main`` give the same values (within tolerance) on the same inputs.

    Tensors must also agree exactly in shape and dtype.  Random inputs are drawn for
    ``after``'s parameter types, each symbolic dimension taking its value in ``shapes``
    (default: 3).
    """
    from .analysis.interp import evaluate

    # inputs for the output's parameter types (a pass may make them more specific: BindShapes),
    # symbols that remain taking their value in ``shapes`` (default 3)
    if inputs is not None:
        ins = list(inputs)
    else:
        ins = random_inputs(after, seed, shapes={**_default_shapes(after), **(shapes or {})})
    want, got = evaluate(before, *ins), evaluate(after, *ins)
    stack = [(want, got)]
    while stack:
        w, g = stack.pop()
        if isinstance(w, tuple):
            if not (isinstance(g, tuple) and len(g) == len(w)):
                raise AssertionError(f"tuple results differ: {g!r} vs {w!r}")
            stack.extend(zip(w, g))
        else:
            w, g = np.asarray(w), np.asarray(g)
            if w.shape != g.shape or w.dtype != g.dtype:
                raise AssertionError(f"result is {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def check_pass(pass_: Any, mod: Module, *, idempotent: bool = True, lineage: bool = True,
               rtol: float = 1e-4, atol: float = 1e-5, seed: int = 0,
               shapes: Mapping[str, int] | None = None) -> Module:
    """Run ``pass_`` on ``mod`` and assert the invariants every pass must keep.

    * the input is unchanged: the same printed text and the same node ids;
    * the output means the same under the interpreter (on seeded random inputs; symbolic
      dimensions take their values in ``shapes``, default 3);
    * lineage is complete: every output node existed in the input or has origins,
      all of them ids of the input; and every node of the input (but variables) is in the
      output, or is found again in it, or was eliminated by the pass;
    * (``idempotent``) running the pass on its output returns that very module.

    Returns the output module.
    """
    from .ir.traverse import post_order

    before = snapshot(mod)
    out = pass_(mod)
    if snapshot(mod) != before:
        raise AssertionError(f"{pass_.name} modified its input")
    assert_same_values(mod, out, rtol=rtol, atol=atol, seed=seed, shapes=shapes)
    if lineage and out is not mod:
        input_ids = {i for ids in before[1].values() for i in ids}
        out_nodes = post_order(list(out.functions().values()))
        for n in out_nodes:
            if n.id not in input_ids:
                orig = out.origins(n, since=len(mod.pass_records))
                if not orig or not orig <= input_ids:
                    raise AssertionError(f"{pass_.name}: {n!r} has no origins, or origins outside the input")
        _check_forward_lineage(pass_.name, mod, out, {n.id for n in out_nodes},
                               lambda: _intermediate_var_ids(pass_, mod))
    if idempotent and pass_(out) is not out:
        raise AssertionError(f"{pass_.name} is not idempotent here")
    return out


def _intermediate_var_ids(pass_: Any, mod: Module) -> set[bytes]:
    """The ids of the variables of every module a pipeline makes on its way (its passes run
    one by one again): lineage that reaches a variable ends there, in any intermediate module
    too (``x + 0 -> %p`` inside a fused function whose ``%p`` DefuseOps then substitutes)."""
    from .ir.traverse import post_order
    from .transform.base import Sequential

    out: set[bytes] = set()
    todo = [pass_]
    flat = []
    while todo:
        p = todo.pop()
        if isinstance(p, Sequential):
            todo.extend(reversed(p.passes))
        else:
            flat.append(p)
    m = mod
    for p in flat:
        m = p(m)
        out.update(n.id for n in post_order(list(m.functions().values())) if type(n) is Var)
    return out


def _check_forward_lineage(name: str, mod: Module, out: Module, out_ids: set[bytes],
                           intermediate_vars: Callable[[], set[bytes]] | None = None) -> None:
    """Every expression node of ``mod`` (variables and operators aside) is in ``out``, is found
    again in it through the pass's records (a call site counts as found in the copies made
    at it, which derive from it AND the callee), or was eliminated by one of them.  A let or a
    function counts as found where its parts are (normal forms re-nest lets, DefuseOps
    dissolves primitive functions into their sites)."""
    from .ir.expr import GlobalVar, Op
    from .ir.lineage import _forward
    from .ir.traverse import post_order

    recs = out.pass_records[len(mod.pass_records):]
    removed = frozenset().union(*(r.removed for r in recs))
    # Variables are names: lineage that reaches one ("x + 0 -> %t") ends there, as variables are
    # not followed through the normal forms that rename or substitute them.
    var_ids = {n.id for m in (mod, out) for n in post_order(list(m.functions().values()))
               if type(n) is Var}
    # A let or a function survives where its parts do (their parts are checked on their own).
    skip = (Var, GlobalVar, Op, Let, Function)
    for n in post_order(list(mod.functions().values())):
        if type(n) in skip or n.id in out_ids or n.id in removed:
            continue
        cur: dict[bytes, bool] = {n.id: True}
        trail: set[bytes] = set()  # every id it became on the way
        gone = False
        for rec in recs:
            trail.update(cur)
            if rec.removed and not rec.removed.isdisjoint(cur):
                gone = True  # it, or what it became in an earlier record, was eliminated here
            by_site = rec._qfwd()[3]
            if by_site is not None:  # a call site is accounted for by the copies made at it
                for i in [i for i in cur if i in by_site]:
                    pairs = by_site[i]
                    cur.update(dict.fromkeys(pairs[1::2], True))
            cur, reached = _forward(rec, cur)
            if rec.removed and not rec.removed.isdisjoint(reached):
                gone = True  # what it became within this record was eliminated by it
        if gone or any(i in out_ids or i in var_ids for i in cur):
            continue
        trail.update(cur)
        if intermediate_vars is not None:  # the failure path only: re-run the pipeline once
            var_ids |= intermediate_vars()
            intermediate_vars = None
            if not trail.isdisjoint(var_ids):
                continue
        raise AssertionError(f"{name}: {n!r} of the input is neither in the output, nor found again "
                             "in it, nor eliminated (a rewrite consumed it without recording lineage)")


# -- canonical form ----------------------------------------------------------------------------------


def _rebuild(n: Any) -> Any:
    """``n`` rebuilt through its public constructor from its (already canonical) fields."""
    from .ir.expr import Call, GlobalVar, Op
    from .ir.node import Attrs
    from .ir.types import FuncType, TupleType

    t = type(n)
    if t is Call:
        return Call(n.op, list(n.args), n.attrs.to_dict())
    if t is Var:
        return Var(n.name_hint, n.type_annotation, n.uid)
    if t is Constant:
        return Constant(np.array(n.data), n.dtype)
    if t is Attrs:
        return Attrs(n.to_dict())
    if t is TensorType:
        return TensorType(list(n.shape), n.dtype)
    if t is Function:
        return Function(list(n.params), n.body, n.ret_type, n.attrs.to_dict())
    if t is Tuple:
        return Tuple(list(n.fields))
    if t is TupleGetItem:
        return TupleGetItem(n.tuple_value, n.index)
    if t is Let:
        return Let(n.var, n.value, n.body)
    if t is If:
        return If(n.cond, n.true_branch, n.false_branch)
    if t is Op:
        return Op(n.name)
    if t is GlobalVar:
        return GlobalVar(n.name_hint)
    if t is TupleType:
        return TupleType(list(n.fields))
    if t is FuncType:
        return FuncType(list(n.arg_types), n.ret_type)
    from .ir import dims

    if t is dims.Sym:
        return dims.Sym(n.name)
    if t is dims.AnyDim:
        return dims.AnyDim()
    if t is dims.DimFloorDiv:
        return dims.dim_floordiv(n.arg, n.divisor)
    if t is dims.DimMod:
        return dims.dim_mod(n.arg, n.divisor)
    if t is dims.DimPoly:
        pos = [dims.dim_prod([*mono, c]) for mono, c in n.terms if c > 0] + [max(n.const, 0)]
        neg = [dims.dim_prod([*mono, -c]) for mono, c in n.terms if c < 0] + [max(-n.const, 0)]
        return dims.dim_sub(dims.dim_sum(pos), dims.dim_sum(neg))
    raise AssertionError(f"{n!r} is a {t.__name__}, not one of pyir's node kinds")


def assert_canonical(obj: Any) -> None:
    """Assert that ``obj`` (a Module or a node) is exactly what the constructors build.

    Every node reachable from it (expressions, operators, types, attribute sets),
    rebuilt children first through its public constructor from its fields, must give
    back the very same object (``is``); a module must also be accepted by the
    ``Module`` constructor, and its pass records by ``PassRecord``'s.  Iterative: any
    depth works.  Raises AssertionError naming the first node that differs.
    """
    from .errors import PyIRError
    from .ir.lineage import PassRecord
    from .ir.node import Node
    from .serialize.binary import _node_table

    if isinstance(obj, Module):
        roots: list[Any] = [obj[name] for name in obj.names()]
    elif isinstance(obj, Node):
        roots = [obj]
    else:
        raise AssertionError(f"expected a Module or a node, got {type(obj).__name__}")
    with gc_paused():
        for n in _node_table(roots):
            try:
                again = _rebuild(n)
            except PyIRError as e:
                raise AssertionError(f"the constructor rejects the fields of {n!r}: "
                                     f"{type(e).__name__}: {e}") from None
            if again is not n:
                raise AssertionError(f"{n!r} is not canonical: its constructor builds {again!r}")
    if isinstance(obj, Module):
        try:
            again_mod = Module(dict(obj.items()))
        except PyIRError as e:
            raise AssertionError(f"the Module constructor rejects this module: {type(e).__name__}: {e}"
                                 ) from None
        del again_mod  # the constructor's checks (binders, free vars, names) accept these functions
        for rec in obj.pass_records:
            if type(rec) is not PassRecord:
                raise AssertionError(f"pass record {rec!r} is a {type(rec).__name__}")
            try:
                again_rec = PassRecord(rec.name, rec.options, rec.edges, rec.removed, rec.sources,
                                       rec.seconds)
            except PyIRError as e:
                raise AssertionError(f"the PassRecord constructor rejects {rec!r}: {e}") from None
            if (again_rec.name, again_rec.options, list(again_rec.edges), again_rec.removed,
                    again_rec.sources, again_rec.seconds) != (rec.name, rec.options, list(rec.edges),
                                                              rec.removed, rec.sources, rec.seconds):
                raise AssertionError(f"pass record {rec.name!r} is not what its constructor builds")


# -- alpha equality with a diagnosis --------------------------------------------------------------------


def assert_alpha_equal(a: Any, b: Any, *, map_free_vars: bool = False) -> None:
    """``a`` and ``b`` (expressions or modules) are alpha-equal (:func:`pyir.alpha_equal`); else
    :class:`~pyir.AlphaEqualityError` naming the first difference (depth first, left to right)
    and where it is, as a path from the root with both sub-terms printed short::

        at main.body.args[0].attrs['padding']: (1, 1, 1, 1) vs (0, 0, 0, 0)

    >>> import pyir
    >>> x, y = pyir.var("x", shape=(2,)), pyir.var("y", shape=(2,))
    >>> assert_alpha_equal(pyir.Function([x], pyir.op.exp(x)), pyir.Function([y], pyir.op.exp(y)))
    >>> assert_alpha_equal(pyir.Function([x], pyir.op.exp(x)), pyir.Function([y], pyir.op.log(y)))
    Traceback (most recent call last):
    ...
    pyir.errors.AlphaEqualityError: not alpha-equal: at body.op: exp vs log
    """
    if alpha_equal(a, b, map_free_vars=map_free_vars):
        return
    with gc_paused():  # the walk makes a path tuple per node: no collections over a big graph
        msg = _first_difference(a, b, map_free_vars)
    raise AlphaEqualityError("not alpha-equal: " + msg)


#: Relay's name: TVM's ``structural_equal`` is alpha equality (pyir's ``structural_equal`` is identity).
assert_structural_equal = assert_alpha_equal


def _small(n: Node, limit: int = 24) -> bool:
    """Whether ``n`` has at most ``limit`` distinct nodes below it (a bounded walk)."""
    seen: set[Node] = set()
    stack = [n]
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        if len(seen) > limit:
            return False
        stack.extend(c.children())
    return True


def _short(x: Any, limit: int = 70) -> str:
    if isinstance(x, Op):
        s = x.name
    elif isinstance(x, Var):
        s = f"%{x.name_hint}" + (f": {x.type_annotation}" if x.type_annotation is not None else "")
    elif isinstance(x, Node):
        s = " ".join(str(x).split()) if _small(x) else repr(x)
    else:
        s = repr(x)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _first_difference(a: Any, b: Any, map_free_vars: bool) -> str:
    if isinstance(a, Module) or isinstance(b, Module):
        if not (isinstance(a, Module) and isinstance(b, Module)):
            return f"at the root: {type(a).__name__} vs {type(b).__name__}"
        fa, fb = a.functions(), b.functions()
        if set(fa) != set(fb):
            return (f"the functions differ: only in the first {sorted(set(fa) - set(fb))}, "
                    f"only in the second {sorted(set(fb) - set(fa))}")
        for name in sorted(fa):
            if not alpha_equal(fa[name], fb[name], map_free_vars=map_free_vars):
                return _walk_difference(fa[name], fb[name], name, map_free_vars)
        return "the modules differ (in their symbolic dimensions)"
    return _walk_difference(a, b, "", map_free_vars)


def _join(path: Any, step: str) -> Any:
    """A path: ``(parent path or None, step)``, rendered once, at the end."""
    return (path, step)


def _render(path: Any) -> str:
    """``main.body.args[0]``, with a step repeated many times written once with its count (the
    path down a 10**6-deep chain stays short)."""
    steps: list[str] = []
    while path is not None:
        path, step = path
        if step:
            steps.append(step)
    steps.reverse()
    out: list[str] = []
    i = 0
    while i < len(steps):
        j = i
        while j < len(steps) and steps[j] == steps[i]:
            j += 1
        st = steps[i]
        piece = st if st.startswith("[") or not out else "." + st
        if j - i < 4:
            out.append(piece)
            j = i + 1
        else:
            out.append(f"({piece} x {j - i})")
        i = j
    return "".join(out) or "the root"


_ARG_STEPS = tuple(f"args[{i}]" for i in range(16))


def _walk_difference(a: Node, b: Node, root: str, map_free_vars: bool) -> str:
    """The first place ``a`` and ``b`` differ, walking both in step (iteratively) under a
    bijection of the variables their binders bind."""
    a2b: dict[Node, Node] = {}
    b2a: dict[Node, Node] = {}
    seen: set[tuple[Node, Node]] = set()
    start = (None, root)
    stack: list[tuple[Any, Any, Any]] = [(a, b, start)]

    def at(path: Any, x: Any, y: Any, what: str = "") -> str:
        return f"at {_render(path)}: {what}{_short(x)} vs {_short(y)}"

    while stack:
        x, y, path = stack.pop()
        if x is y and not (isinstance(x, Node) and x._mask & F_VAR and (a2b or b2a)):
            continue
        if not isinstance(x, Node) or not isinstance(y, Node):
            if x != y or type(x) is not type(y):
                return at(path, x, y)
            continue
        if (x, y) in seen:
            continue
        seen.add((x, y))
        k = type(x)
        if k is not type(y):
            return at(path, x, y, f"a {k.__name__} vs a {type(y).__name__}: ")
        if k is Var:
            mx, my = a2b.get(x), b2a.get(y)
            if mx is not None or my is not None:
                if mx is not y or my is not x:
                    return at(path, x, y, "the variables are bound differently: ")
                continue
            if not map_free_vars:
                if x is not y:
                    return at(path, x, y, "different free variables: ")
                continue
            ta, tb = getattr(x, "type_annotation"), getattr(y, "type_annotation")  # noqa: B009 (a Var's)
            if ta is not tb:
                return at(_join(path, "type_annotation"), ta, tb)
            a2b[x], b2a[y] = y, x
            continue
        if k is Constant or k is Op or not x._fields:
            return at(path, x, y)  # leaves are equal only when they are the same node
        if k is Attrs:
            ka, kb = dict(x.items()), dict(y.items())  # type: ignore[attr-defined]
            for key in sorted(set(ka) | set(kb)):
                if key not in ka or key not in kb:
                    return at(_join(path, f"[{key!r}]"), ka.get(key, "<absent>"), kb.get(key, "<absent>"))
                va, vb = ka[key], kb[key]
                if isinstance(va, Node) or isinstance(vb, Node):
                    stack.append((va, vb, _join(path, f"[{key!r}]")))
                elif va != vb or type(va) is not type(vb):
                    return at(_join(path, f"[{key!r}]"), va, vb)
            continue
        if k is Call and (type(x.op) is Op or type(y.op) is Op) and x.op is not y.op:  # type: ignore[attr-defined]
            return at(_join(path, "op"), x.op, y.op)  # type: ignore[attr-defined]
        if k is Call and type(x.op) is Op and x.attrs is y.attrs:  # type: ignore[attr-defined]
            xs, ys = x.args, y.args  # type: ignore[attr-defined]
            if len(xs) == len(ys):  # the common case, without the generic field loop
                for i in range(len(xs) - 1, -1, -1):
                    stack.append((xs[i], ys[i], (path, _ARG_STEPS[i] if i < 16 else f"args[{i}]")))
                continue
        todo: list[tuple[Any, Any, Any]] = []
        ident = getattr(k, "_identity", ())  # a reference operation's uid: not structure
        for f in x._fields:
            if f.name in ident:
                continue
            vx, vy = getattr(x, f.name), getattr(y, f.name)
            p = _join(path, f.name)
            if not f.node:
                if vx != vy or type(vx) is not type(vy):
                    return at(p, vx, vy)
                continue
            if f.many:
                if len(vx) != len(vy):
                    return f"at {_render(p)}: {len(vx)} {f.name} vs {len(vy)}"
                pairs = [(u, v, (path, f"{f.name}[{i}]")) for i, (u, v) in enumerate(zip(vx, vy))]
            else:
                if (vx is None) != (vy is None):
                    return at(p, vx, vy)
                pairs = [] if vx is None else [(vx, vy, p)]
            for u, v, q in pairs:
                if f.binds:  # a binder: pair its variables, then compare their annotations
                    if u.type_annotation is not v.type_annotation:
                        return at(_join(q, "type_annotation"), u.type_annotation, v.type_annotation)
                    a2b[u], b2a[v] = v, u
                else:
                    todo.append((u, v, q))
        stack.extend(reversed(todo))
    return at(start, a, b, "(a difference in symbolic dimensions or scoping): ")
