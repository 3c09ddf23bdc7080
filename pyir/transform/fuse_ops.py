"""FuseOps: group operator calls into primitive functions (``Primitive=1``).

Every operator call of a (non-primitive) function ends up inside exactly one
primitive function, called from the main graph (the example is
``tests/golden/FuseOps/docstring.txt``, run by ``tests/test_golden.py``)::

    # before
    def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(8, 3, 3, 3), float32], %b: Tensor[(8), float32]) {
      %0 = nn.conv2d(%data, %w, padding=[1, 1, 1, 1]);
      %1 = nn.bias_add(%0, %b);
      %2 = nn.relu(%1);
      nn.softmax(%2)
    }

    # after FuseOps()
    def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(8, 3, 3, 3), float32], %b: Tensor[(8), float32]) {
      %0 = fn (%p0: Tensor[(1, 8, 8, 8), float32], Primitive=1) -> Tensor[(1, 8, 8, 8), float32] {
        nn.softmax(%p0)
      };
      %1 = fn (%p0_1: Tensor[(1, 3, 8, 8), float32], %p1: Tensor[(8, 3, 3, 3), float32], %p2: Tensor[(8), float32], Primitive=1) -> Tensor[(1, 8, 8, 8), float32] {
        %2 = nn.conv2d(%p0_1, %p1, padding=[1, 1, 1, 1]);
        %3 = nn.bias_add(%2, %p2);
        nn.relu(%3)
      };
      %4 = %1(%data, %w, %b);
      %0(%4)
    }

The grouping is TVM's (``GraphPartitioner``), on the dataflow graph of each
function body: its operator calls, tuples and tuple items (a scalar constant of a
simple dtype counts as a node of its own at each use, as each ``relay.const`` is
in TVM), with the operators' pattern kinds (:class:`~pyir.op.registry.OpPattern`):

1. Walk the body in post-order (skipping subgraphs without any of them and the
   bodies of primitive functions), recording each node's consumers and the
   pattern of each edge (a broadcast op's argument of the result's shape is an
   elementwise edge).  A use by anything else (``let``, ``if``, a function's
   body, a call of a function, the body's value) is *external*.
2. The post-dominator tree: a node's immediate post-dominator is the least
   common ancestor of its consumers (none for an externally used node).
3. Three rounds over the nodes in post-order, each trying to fuse a node (with
   every node on its paths) into the group of its post-dominator, when the group
   stays within ``max_fuse_depth`` nodes and: round 0, an anchor
   (``OUT_ELEMWISE_FUSABLE``: conv2d, dense, pools, softmax) whose relation to it
   is elementwise with broadcast-or-simpler nodes on the paths (``conv2d -> add
   -> add``), or an elementwise / broadcast node whose paths are injective at
   most, ending in an injective, reduction or anchored group; round 1, the same
   for elementwise nodes, and injective nodes and tuples along injective paths;
   round 2, injective nodes into intermediate tuples.  Groups grow from the
   input: a chain of 300 elementwise calls is 256 + 44.
   ``annotation.stop_fusion`` ends a group and goes (its argument stands for
   it); a non-computational operator (``on_device``, ``memory.*``, ``vm.*``)
   stays a plain call; a tuple at a group's root stays in the main graph.

4. Each group becomes ``fn (%p0, ...) { body }`` with ``Primitive=1``: its free
   inputs become fresh parameters (annotated with the input's type, numbered as
   TVM does: depth first from the root, operands left to right); a scalar
   constant that joined the group stays inline, any other constant becomes a
   parameter unless ``link_params``.  Parameter uids are derived from the group's structure
   (operators, attributes, constants, how members use each other, parameter
   types), so structurally identical groups share one hash-consed function, as a
   compiler caches lowered functions by structural hash (a 10^6-step chain of four
   kinds of step has four fused functions, not 10^6; a repeated group is fused
   by computing its key and reusing the function).  Fusing the same graph twice
   yields the very same function objects, and
   :class:`~pyir.transform.defuse_ops.DefuseOps` restores the input exactly.
   ``share_functions=False`` derives the uids from the members too: one function
   per group.

Fusion never crosses ``let``, ``if`` or function boundaries.  Lineage:
the fused call derives from exactly the nodes of its group, the function from
the nodes of every group it stands for, each parameter from the inputs it
receives, and each body node from the member it copies in every group -- when
shared, through a *shared* edge (:func:`~pyir.ir.lineage.derive_shared`), so
that expanding the function at one call (DefuseOps, Inline, which record
instance edges) gives back the nodes of that call's group only: after
FuseOps + DefuseOps, ``find`` returns exactly the node one started from.  Each
rebuilt node of the main graph derives from its old version.
"""  # noqa: E501 (printed lines of the example)

from __future__ import annotations

import dataclasses
import operator
from array import array
from typing import Any

import numpy as np

from ..analysis.typecheck import TypeContext
from ..errors import PassError
from ..ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var, make_call
from ..ir.lineage import Edges, current_recorder, derive
from ..ir.module import Module
from ..ir.node import EMPTY_ATTRS, F_GETITEM, F_TUPLE, OP_BIT0, Node, cached_type, digest
from ..ir.node import gc_paused as no_gc
from ..ir.types import TensorType, TupleType, Type
from ..op.annotation import NON_COMPUTATIONAL_OPS
from ..op.registry import OpPattern
from ..rewrite.functor import rebuild
from .base import ModulePass, PassContext

__all__ = ["FuseOps"]

# Pattern kinds (TVM's OpPatternKind values).
_EW = int(OpPattern.ELEMWISE)
_BC = int(OpPattern.BROADCAST)
_INJ = int(OpPattern.INJECTIVE)
_RED = int(OpPattern.COMM_REDUCE)
_OUT = int(OpPattern.OUT_ELEMWISE_FUSABLE)
_TUP = int(OpPattern.TUPLE)
_OPQ = int(OpPattern.OPAQUE)

#: Constants that fuse as scalars (as TVM: the dtypes its code generator inlines).
_SIMPLE_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})
#: Operators TVM calls non-computational: never wrapped in a primitive function.
_NON_COMPUTATIONAL = NON_COMPUTATIONAL_OPS | {"call_lowered"}
_NON_COMPUTATIONAL_PREFIXES = ("memory.", "vm.")
_STOP_FUSION = "annotation.stop_fusion"
_ID_LEN = 16  # (bytes of a node id)
#: Pattern kind -> 1 for an anchor (``OUT_ELEMWISE_FUSABLE``), else 0 (a ``bytes.translate`` table).
_ANCHORS = bytes(int(k == _OUT) for k in range(256))
#: TVM's default ``relay.FuseOps.max_depth``.
MAX_FUSE_DEPTH = 256

# Markers of the non-call members in a group's structure key.
_TUPLE_MARK: Any = object()
_TGI_MARK: Any = object()


class _Shared:
    """A fused function shared by the groups of one structure: the function, its body copies in
    member order, and the groups after the first (their lineage is recorded once, at the end, as
    one edge per node: the members / inputs of every such group)."""

    __slots__ = ("fn", "copies", "later_mids", "later_inputs")

    def __init__(self, fn: Function, copies: tuple[Expr, ...]) -> None:
        self.fn = fn
        self.copies = copies
        self.later_mids: list[bytes] = []  # the ids of each later group's members, joined
        self.later_inputs: list[bytes] = []  # ... and of its inputs, in parameter order

    def flush(self, edges: Any) -> None:
        mids = self.later_mids
        if not mids:
            return
        g = len(mids)
        joined = b"".join(mids)
        edges.add_joined(self.fn.id, joined)
        copies, params = self.copies, self.fn.params
        # the ids as (group, member, byte) arrays; a column (a member / parameter over the
        # groups) is a slice of the transposed bytes, or picked by a mask where ids repeat
        w = g * _ID_LEN
        arr = np.frombuffer(joined, dtype=np.uint8).reshape(g, len(copies), _ID_LEN)
        cols = arr.transpose(1, 0, 2).tobytes()
        own = np.frombuffer(b"".join([c.id for c in copies]), dtype=np.uint8).reshape(len(copies), _ID_LEN)
        same = (arr == own).all(axis=2)  # (group, member): the member is its body copy itself
        some: list[bool] = same.any(axis=0).tolist()
        for j, c in enumerate(copies):  # each body node: the members it copies there
            if some[j]:
                ids = arr[~same[:, j], j].tobytes()
                if ids:
                    edges.add_joined(c.id, ids, shared=True)
            else:
                edges.add_joined(c.id, cols[j * w:(j + 1) * w], shared=True)
        if not params:
            return
        arr = np.frombuffer(b"".join(self.later_inputs), dtype=np.uint8).reshape(g, len(params), _ID_LEN)
        cols = arr.transpose(1, 0, 2).tobytes()
        # (the same input at consecutive sites, a weight or %x, once)
        keep = np.ones((g, len(params)), dtype=bool)
        np.any(arr[1:] != arr[:-1], axis=2, out=keep[1:])
        whole: list[bool] = np.all(keep, axis=0).tolist()
        for k, p in enumerate(params):  # each parameter: its inputs
            if whole[k]:
                edges.add_joined(p.id, cols[k * w:(k + 1) * w])
            else:
                edges.add_joined(p.id, arr[keep[:, k], k].tobytes())


@dataclasses.dataclass(frozen=True)
class FuseOps(ModulePass):
    """Fuse operator calls into primitive functions (see the module docstring).

    Options as TVM's ``relay.transform.FuseOps``:

    * ``fuse_opt_level``: 0 puts every call in its own group; -1 (the default) takes the
      ``opt_level`` of the current :class:`~pyir.transform.PassContext` (2 outside any);
    * ``max_fuse_depth``: the most nodes in a group (TVM's ``relay.FuseOps.max_depth``);
      None (the default) takes the context's ``config["relay.FuseOps.max_depth"]``, else 256;
    * ``link_params``: keep every constant inline in the fused functions (TVM's
      ``relay.FuseOps.link_params``); by default (None: the context's config, else False) a
      constant other than a scalar of a simple dtype becomes a parameter of its group.

    Structurally identical groups share one function unless ``share_functions=False`` (one
    function per group; lineage is exact per group either way).
    """

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    fuse_opt_level: int = -1
    max_fuse_depth: int | None = None
    link_params: bool | None = None
    share_functions: bool = True

    def __post_init__(self) -> None:
        if type(self.fuse_opt_level) is not int or self.fuse_opt_level < -1:
            raise PassError(f"FuseOps: fuse_opt_level must be an int >= -1, got {self.fuse_opt_level!r}")
        if self.max_fuse_depth is not None:
            _check_depth(self.max_fuse_depth)
        if self.link_params is not None and type(self.link_params) is not bool:
            raise PassError(f"FuseOps: link_params must be a bool, got {self.link_params!r}")
        if type(self.share_functions) is not bool:
            raise PassError(f"FuseOps: share_functions must be a bool, got {self.share_functions!r}")

    def settings(self) -> tuple[int, int, bool]:
        """``(fuse_opt_level, max_fuse_depth, link_params)`` as this run uses them: the pass's
        options, else the current PassContext's ``opt_level`` / ``config``, else TVM's defaults."""
        ctx = PassContext.current()
        config = ctx.config
        level = self.fuse_opt_level
        if level == -1:
            level = 2 if ctx.opt_level is None else ctx.opt_level  # (TVM's default context: 2)
        depth = self.max_fuse_depth
        if depth is None:
            depth = config.get("relay.FuseOps.max_depth", MAX_FUSE_DEPTH)
            _check_depth(depth)
        link = self.link_params
        if link is None:
            link = config.get("relay.FuseOps.link_params", False)
            if type(link) is not bool:
                raise PassError(f"FuseOps: relay.FuseOps.link_params must be a bool, got {link!r}")
        return level, depth, link

    def run(self, mod: Module) -> Module:
        level, depth, link = self.settings()
        updates = {}
        with no_gc():  # millions of acyclic nodes: the cyclic collector would only slow us down
            for name, f in mod.items():
                if f.attrs.get("Primitive"):
                    continue
                nf = self.fuse_function(f, mod, level, depth, link)
                if nf is not f:
                    updates[name] = nf
        return mod.with_functions(updates) if updates else mod

    # -- one function ------------------------------------------------------------------------------
    def fuse_function(self, func: Function, mod: Module, fuse_opt_level: int = 2,
                      max_fuse_depth: int = MAX_FUSE_DEPTH, link_params: bool = False) -> Function:
        """``func`` with its operator calls fused (the same object if there is none outside
        primitive functions)."""
        part = _Partition(func.body)
        work = part.work
        if not work:
            return func
        types = TypeContext.of(mod)
        type_of = _TypeOf(_types_along(func, work, types), types)
        part.partition(type_of, fuse_opt_level > 0, max_fuse_depth)
        idx, roots, members_of = part.idx, part.roots, part.members
        if not part.nodes:  # no operator call, tuple or tuple item outside primitive functions
            return func
        cache: dict[tuple[Any, ...], _Shared] | None = {} if self.share_functions else None
        rec = current_recorder()
        edges = rec.edges if rec is not None else None
        fuse_group = _fuse_group
        pend: list[bytes] = []  # the call edges of shared groups not yet added (call id, member ids)
        # rebuilt node -> its new version (a node not in it is unchanged; with only groups, a plain
        # dict: read by get alone)
        memo: dict[Node, Any] = {} if part.all_graph and not part.special else _Memo()
        inline = _Inline(link_params, part.lifted)
        special = part.special
        get = idx.get
        if part.all_graph and not special:  # only groups: their roots, producers first
            nodes = part.nodes
            for i in reversed(part.heads):
                n = nodes[i]
                ms = members_of[i]
                if ms is None:
                    ms = [n]
                else:
                    ms.reverse()  # in post-order (producers first), the root last
                    ms.append(n)
                memo[n] = fuse_group(ms, memo, type_of, cache, edges, inline, pend)
            work = []
        for n in work:  # children first
            j = get(n)
            if j is not None:
                i = j
                if roots[i] != i:  # a member of a group below its root: built with the root
                    continue
                how = special.get(n) if special else None
                if how is None:
                    ms = members_of[i]
                    if ms is None:
                        ms = [n]
                    else:
                        ms.reverse()  # in post-order (producers first), the root last
                        ms.append(n)
                    memo[n] = fuse_group(ms, memo, type_of, cache, edges, inline, pend)
                    continue
                if how == "stop":  # stop_fusion goes (as TVM), its argument stands for it
                    a = n.args[0]
                    memo[n] = memo[a]
                    if rec is not None:
                        rec.eliminate([n])
                    continue
                # a tuple root, an item of a tuple outside its group, a non-computational call:
                # not a function, its children rebuilt
            if type(n) is Let:  # (A-normal form: 10^6 of them; as rebuild(n, memo))
                v, b = n.value, n.body
                nv, nb = memo.get(v, v), memo.get(b, b)
                new = n if nv is v and nb is b else Let(n.var, nv, nb)
            else:
                new = rebuild(n, memo)
            if new is not n:
                memo[n] = new
                if edges is not None:
                    if pend:
                        _add_call_edges(edges, pend)
                    edges.add(new.id, n.id)  # derive(new, n)
        del part, roots, idx
        body = func.body
        new_body = memo.get(body, body)
        if pend and edges is not None:
            _add_call_edges(edges, pend)
        if cache and edges is not None:
            for sh in cache.values():
                sh.flush(edges)
        if new_body is body:
            return func
        out = Function(func.params, new_body, func.ret_type, func.attrs)
        del cache
        return derive(out, func)  # type: ignore[return-value]


def _types_along(func: Function, work: list[Any], types: TypeContext) -> dict[Node, Type]:
    """The types of the nodes of the walk ``work`` of ``func``'s body (and of the variables they
    use), typed along it if nothing was typed before, else the types they hold."""
    # the parameters' annotations given (the check would find them: a lookup each, not a call)
    ps = func.params
    tys: dict[Node, Type] = dict(zip(ps, map(_annotation_of, ps)))
    if None in tys.values():  # (an unannotated parameter: the check says what it says)
        tys = {p: t for p, t in tys.items() if t is not None}
    given = len(tys)
    types.check(func, work, into=tys)  # along the walk: no second one (nor a stack) for the types
    if len(tys) == given:  # typed before (nothing found along the walk): the types its nodes hold
        for n in work:
            t = cached_type(n)
            if t is not None:
                tys[n] = t
    return tys


def _check_depth(depth: Any) -> None:
    if type(depth) is not int or depth < 1:
        raise PassError(f"FuseOps: the maximum fuse depth must be an int >= 1, got {depth!r}")


def _simple_scalar(c: Constant) -> bool:
    """A constant TVM fuses into its consumers (a scalar of a simple dtype); others are opaque."""
    return c._shape == () and str(c._dtype) in _SIMPLE_DTYPES


def _op_kind(o: Op) -> tuple[int, str | None]:
    """An operator's pattern and how it is handled: None (fused), "stop" (stop_fusion) or
    "keep" (non-computational: left as a call)."""
    name = o.name
    if name == _STOP_FUSION:
        return _OPQ, "stop"
    if name in _NON_COMPUTATIONAL or name.startswith(_NON_COMPUTATIONAL_PREFIXES):
        return _OPQ, "keep"
    return int(o.op_def.pattern), None


class _Partition:
    """TVM's graph partitioner (``GraphPartitioner``) on the dataflow graph of one body.

    The graph: the operator calls, tuples and tuple items of the walk (in post-order), and one
    node per use of a simple scalar constant by one of them (a leaf of its own, processed just
    before its consumer, as in TVM where each ``relay.const`` is a node of its own; pyir shares
    one).  Any other use (the body's value, ``let``, ``if``, a function's body, a call of a
    function, a tuple field that is no tensor) is external.  Then, as TVM: the post-dominator
    tree by least common ancestors, and three rounds over the nodes in post-order, each trying
    to fuse a node into the group of its immediate post-dominator (round 0: anchors and
    elementwise nodes, 1: injective nodes and tuples, 2: injective nodes into intermediate
    tuples), under the same path conditions and the same node count (``max_fuse_depth``).

    Results: ``idx`` (graph node -> index, any other node walked -> None), ``roots`` (index -> the
    index of its group's root), ``members`` (a root's index -> the other members of its group,
    outputs first, or None), ``nodes`` (index -> node, None for a constant's use), ``lifted`` (the
    (constant, consumer) uses whose constant did not join the consumer's group), ``special``
    (nodes that are not made functions: "stop", "keep", "tuple", "item").

    An edge is one int, ``consumer << 4 | edge pattern``; ``outs[i]`` is the edge of a node
    with one consumer, the list of them with several, or None.
    """

    __slots__ = ("idx", "nodes", "pat", "roots", "members", "lifted", "special", "outs", "ext", "gpar",
                 "gsize", "gpat", "work", "consts", "multi", "deferred", "seq", "all_graph", "heads")

    def __init__(self, body: Expr) -> None:
        """The walk of ``body`` (:attr:`work`, as :func:`_walk`) and the graph, built on the way."""
        idx: dict[Node, int | None] = {}  # (a node walked but not yet emitted, or no graph node: None)
        self.idx = idx
        nodes: list[Any] = []
        pat: list[int] = []
        outs: list[Any] = []
        ext: set[int] = set()  # the nodes used outside the graph
        consts: list[tuple[int, Constant, Node]] = []  # the constants' uses: (index, c, consumer)
        seq: list[int] | None = None  # the order of the rounds, if constants' uses come in
        special: dict[Node, str] = {}
        kinds: dict[Op, int] = {}  # a fused operator's pattern
        hows: dict[Op, tuple[int, str]] = {}  # the operators handled otherwise: (pattern, "stop" / "keep")
        multi: list[int] = []  # the nodes with several consumers
        deferred: list[int] = []  # the tuples and items, checked once typed
        work: list[Any] = []
        self.work = work
        self.nodes = nodes
        self.pat = pat
        self.outs = outs
        self.ext = ext
        self.consts = consts
        self.special = special
        self.multi = multi
        self.deferred = deferred
        self.seq = None
        self.all_graph = False
        if body._mask < _HAS_OPS and not body._mask & _TUPLES:
            return
        get = idx.get
        add_node = nodes.append
        add_pat = pat.append
        add_out = outs.append
        emit = work.append
        stack: list[Any] = [body]
        push = stack.append
        pop = stack.pop
        others = False  # a node other than a graph node was walked
        # While only operator calls are emitted, the walk is ``nodes`` (``work`` not kept); from
        # the first other node or constant use on, ``work`` holds it.
        mirror = False
        while stack:
            n = pop()
            if n is _CALL_DONE:  # the operator call below the marker has its arguments emitted
                n = pop()
                if mirror:
                    emit(n)
                o = n.op
                p = kinds.get(o)
                if p is None:  # (met first, or not fused)
                    ph = hows.get(o)
                    if ph is None:
                        p, how = _op_kind(o)
                        if how is None:
                            kinds[o] = p
                        else:
                            hows[o] = p, how
                            special[n] = how
                    else:
                        p, special[n] = ph
                i = len(nodes)
                idx[n] = i
                add_node(n)
                add_pat(p)
                add_out(None)
                e = i << 4 | p  # the edge of each use
                for a in n.args:  # (as below, for tuples and items)
                    j = get(a)
                    if j is None:
                        if type(a) is Constant and _simple_scalar(a):  # a use of its own
                            if not mirror:  # (the walk so far: the nodes, this one last)
                                work.extend(nodes)
                                mirror = True
                            v = len(nodes)
                            consts.append((v, a, n))
                            add_node(None)
                            add_pat(_EW)
                            add_out(e)
                            if seq is None:
                                seq = list(range(i))
                            elif seq[-1] == i:
                                seq.pop()  # (the consumer goes after its constants)
                            seq.append(v)
                            seq.append(i)
                        continue
                    es = outs[j]
                    if es is None:
                        outs[j] = e
                    elif type(es) is int:
                        if es != e:  # (repeated uses by one consumer once)
                            outs[j] = [es, e]
                            multi.append(j)
                    elif es[-1] != e:
                        es.append(e)
                if seq is not None and seq[-1] != i:
                    seq.append(i)
                continue
            if n is _DONE:  # the node below the marker has all its children emitted
                n = pop()
                if not mirror:
                    work.extend(nodes)
                    mirror = True
                emit(n)
                k = type(n)
                if k is Call:  # a call of a function: its uses are external
                    for c in n.args:
                        j = get(c)
                        if j is not None:
                            ext.add(j)
                    j = get(n.op)
                    if j is not None:
                        ext.add(j)
                    continue
                if k is Tuple:
                    p = _TUP
                    args = n.fields
                    deferred.append(len(nodes))
                elif k is TupleGetItem:
                    p = _INJ
                    args = (n.tuple_value,)
                    deferred.append(len(nodes))
                else:  # any other node: its uses are external
                    for c in n.children():
                        j = get(c)
                        if j is not None:
                            ext.add(j)
                    continue
                i = len(nodes)
                idx[n] = i
                add_node(n)
                add_pat(p)
                add_out(None)
                e = i << 4 | _INJ  # the edge of each use
                for a in args:
                    j = get(a)
                    if j is None:
                        if type(a) is Constant and _simple_scalar(a):  # a use of its own
                            v = len(nodes)
                            consts.append((v, a, n))
                            add_node(None)
                            add_pat(_EW)
                            add_out(e)
                            if seq is None:
                                seq = list(range(i))
                            elif seq[-1] == i:
                                seq.pop()  # (the consumer goes after its constants)
                            seq.append(v)
                            seq.append(i)
                        continue
                    es = outs[j]
                    if es is None:
                        outs[j] = e
                    elif type(es) is int:
                        if es != e:  # (repeated uses by one consumer once)
                            outs[j] = [es, e]
                            multi.append(j)
                    elif es[-1] != e:
                        es.append(e)
                if seq is not None and seq[-1] != i:
                    seq.append(i)
                continue
            if n in idx:  # (seen)
                continue
            idx[n] = None
            k = type(n)
            if k is Call and type(n.op) is Op:
                kids = n.args
                push(n)
                push(_CALL_DONE)
            elif k is Function and n.attrs.get("Primitive"):
                continue
            else:
                kids = n.children()
                if not kids:
                    continue
                if k is not Tuple and k is not TupleGetItem:
                    others = True
                push(n)
                push(_DONE)
            for c in reversed(kids):
                m = c._mask
                if m < _HAS_OPS and not m & _TUPLES:  # nothing to fuse below: not walked
                    continue
                if c not in idx:
                    push(c)
        j = get(body)
        if j is not None:
            ext.add(j)
        self.seq = seq
        self.all_graph = not others
        if not mirror:
            self.work = nodes

    def partition(self, type_of: _TypeOf, fuse: bool, max_depth: int) -> None:
        """Check the tuples and items against their types, fuse, and set the results."""
        nodes, pat, ext, idx = self.nodes, self.pat, self.ext, self.idx
        get = idx.get
        known = type_of.known
        has_tuples = False
        for i in self.deferred:
            n = nodes[i]
            if type(n) is Tuple:
                has_tuples = True
                for f in n.fields:
                    j = get(f)
                    if j is not None and type(known(f) or type_of(f)) is not TensorType:
                        ext.add(j)  # (a field that is no tensor: as TVM, an external use)
            else:
                t = n.tuple_value
                tt = known(t) or type_of(t)
                if type(tt) is not TupleType or not all(type(f) is TensorType for f in tt.fields):
                    pat[i] = _OPQ  # (an item of a tuple with a field that is no tensor: opaque)
                    j = get(t)
                    if j is not None:
                        ext.add(j)
        special, consts, seq = self.special, self.consts, self.seq
        n_nodes = len(nodes)
        gpar = [-1] * n_nodes
        self.gpar = gpar
        self.gsize = [1] * n_nodes
        self.gpat = pat
        if fuse and n_nodes > 1:
            self._fuse(pat, ext, self.multi, seq, has_tuples, max_depth, type_of)
        roots = list(range(n_nodes))
        members: list[Any] = [None] * n_nodes  # root -> its other members, outputs first
        self.members = members
        heads: list[int] = []  # the roots, outputs first
        self.heads = heads
        find = self.find
        if consts:  # (a constant's use is no node: not a member, not a head)
            for i in range(n_nodes - 1, -1, -1):
                r = gpar[i]
                if r < 0:
                    if nodes[i] is not None:
                        heads.append(i)
                    continue
                r = roots[r] if r > i else find(i)
                roots[i] = r
                x = nodes[i]
                if x is not None:
                    ms = members[r]
                    if ms is None:
                        members[r] = [x]
                    else:
                        ms.append(x)
        else:
            add_head = heads.append
            for i in range(n_nodes - 1, -1, -1):
                r = gpar[i]
                if r < 0:
                    add_head(i)
                    continue
                r = roots[r] if r > i else find(i)
                roots[i] = r
                ms = members[r]
                if ms is None:
                    members[r] = [nodes[i]]
                else:
                    ms.append(nodes[i])
        self.roots = roots
        lifted: set[tuple[Constant, Node]] = set()
        outs = self.outs
        for j, c, n in consts:
            if find(j) != roots[outs[j] >> 4]:  # (a use's one edge: to its consumer)
                lifted.add((c, n))
        self.lifted = lifted
        for i in self.deferred:  # roots that are not functions
            if roots[i] == i:
                n = nodes[i]
                if type(n) is Tuple:
                    special[n] = "tuple"
                else:
                    j = get(n.tuple_value)
                    if j is None or roots[j] != i:  # isolated: its tuple is not in its group
                        special[n] = "item"

    def find(self, i: int) -> int:
        gpar = self.gpar
        r = gpar[i]
        if r < 0:
            return i
        while gpar[r] >= 0:
            r = gpar[r]
        while True:  # path compression
            nxt = gpar[i]
            if nxt == r or nxt < 0:
                break
            gpar[i] = r
            i = nxt
        return r

    def _fuse(self, pat: list[int], ext: set[int], multi: list[int], seq: list[int] | None,
              has_tuples: bool, max_depth: int, type_of: _TypeOf) -> None:
        outs = self.outs
        nodes = self.nodes
        n_nodes = len(pat)
        gpat = pat  # the pattern of each node's own group (TVM's groups_[i]->pattern)
        gpar, gsize = self.gpar, self.gsize
        find = self.find
        known = type_of.known

        def same_shape(i: int, c: int) -> bool:  # a broadcast edge i -> c is elementwise
            a, n = nodes[i], nodes[c]
            if a is None:
                return False
            ta = known(a) or type_of(a)
            tc = known(n) or type_of(n)
            return ta is tc or (type(ta) is TensorType and type(tc) is TensorType and ta.shape == tc.shape)

        # The post-dominator tree: dom[i] is the edge to the immediate post-dominator (its index
        # << 4 | the combined pattern of the edges to it; broadcast edges refined when read) or
        # None.  A node with one consumer: that one; with several: their least common ancestor,
        # outputs first (a post-dominator comes later in post-order: the walk up moves the
        # lower index, no depths needed).
        dom: list[Any] = outs[:]
        bc_kept = bytearray(n_nodes)  # a broadcast tree edge checked and kept broadcast
        for i in ext:
            dom[i] = None
        for i in sorted(set(multi), reverse=True):
            if i in ext:
                continue
            es = outs[i]
            par = -1
            pt = 0
            first = True
            for e in es:
                r = e >> 4
                q = e & 15
                if q == _BC and same_shape(i, r):
                    q = _EW
                if q > pt:
                    pt = q
                if first:
                    par = r
                    first = False
                    continue
                while par != r:
                    if par < r:
                        x = par
                        d = dom[x]
                        if d is None:
                            par = -1
                            break
                        par = d >> 4
                    else:
                        x = r
                        d = dom[x]
                        if d is None:
                            par = -1
                            break
                        r = d >> 4
                    q = d & 15
                    if q == _BC and not bc_kept[x]:
                        # refined once per tree edge (the walk up is O(depth) per node and
                        # re-reads the same edges: 443k shape checks at 2,000 'shared' ops)
                        if same_shape(x, d >> 4):
                            q = _EW
                            dom[x] = d - _BC + _EW
                        else:
                            bc_kept[x] = 1
                    if q > pt:
                        pt = q
                if par < 0:
                    break
            dom[i] = None if par < 0 else par << 4 | pt
        order = range(n_nodes) if seq is None else seq
        anchor = bytearray(bytes(pat).translate(_ANCHORS))  # 1 for a group with an anchor

        def merge(child: int, parent: int) -> None:
            c, p = find(child), find(parent)
            if c == p:
                return
            gsize[p] += gsize[c]
            gpar[c] = p
            if anchor[c]:
                anchor[p] = 1
                if gpat[c] > gpat[p]:
                    gpat[p] = gpat[c]

        def edges_of(v: int) -> list[int]:
            es = outs[v]
            if es is None:
                return []
            if type(es) is int:
                return [es >> 4]
            return [e >> 4 for e in es]

        def fits(src: int, sink: int) -> bool:  # TVM's CountFusedNodesWithNewChild <= max depth
            # The sum only grows, so the walk stops as soon as it passes the limit: the same
            # answer as TVM's full count, but at most ~max_depth nodes visited (a full count is
            # quadratic on a DAG whose post-dominators are far away: 957 -> 5 us/op on the
            # 'shared' workload at 2,000 ops).
            total = gsize[find(sink)]
            if total > max_depth:
                return False
            seen = {sink}
            stack = [src]
            while stack:
                v = stack.pop()
                if v in seen:
                    continue
                seen.add(v)
                total += gsize[v]
                if total > max_depth:
                    return False
                stack.extend(edges_of(v))
            return True

        def check(src: int, sink: int, inner: int, last: int) -> bool:
            """TVM's CheckPath: every node on a path from ``src`` to ``sink`` has a group
            pattern <= ``inner`` (<= ``last`` at the sink)."""
            seen: set[int] = set()
            stack = edges_of(src)
            while stack:
                v = stack.pop()
                if v in seen:
                    continue
                seen.add(v)
                if v == sink:
                    if gpat[find(v)] > last:
                        return False
                    continue
                if gpat[find(v)] > inner or outs[v] is None:
                    return False
                stack.extend(edges_of(v))
            return True

        def commit(src: int, sink: int) -> None:  # TVM's CommitFuse
            seen = {sink}
            stack = [src]
            while stack:
                v = stack.pop()
                if v in seen:
                    continue
                seen.add(v)
                merge(v, sink)
                stack.extend(edges_of(v))

        again: list[int] = []  # the nodes round 1 tries (again)
        for phase in (0, 1):
            for i in (order if phase == 0 else again):
                d = dom[i]
                if d is None:
                    continue
                gp = gpat[i]
                if gp == _OUT:
                    if phase:
                        continue
                    dp = d & 15
                    if dp != _EW:
                        if dp != _BC:
                            continue
                        a, c = nodes[i], nodes[d >> 4]  # (same_shape, inlined)
                        ta = known(a) or type_of(a)
                        tc = known(c) or type_of(c)
                        if ta is not tc and (type(ta) is not TensorType or type(tc) is not TensorType
                                             or ta.shape != tc.shape):
                            continue
                    inner = last = _BC
                elif gp <= _BC:
                    dp = d & 15
                    if dp > _INJ and dp != _RED:
                        continue
                    inner, last = _INJ, _OUT
                elif gp in (_INJ, _TUP):
                    if not phase:
                        again.append(i)
                        continue
                    inner = last = _INJ
                else:
                    continue
                p = d >> 4
                r = gpar[i]
                ri = i if r < 0 else r if gpar[r] < 0 else find(i)
                r = gpar[p]
                rp = p if r < 0 else r if gpar[r] < 0 else find(p)
                if ri == rp or gpat[p] == _TUP:  # already fused to it / no fusion into a tuple
                    continue
                if type(outs[i]) is int:  # one consumer, the post-dominator: no path to walk
                    if gpat[rp] > last or gsize[rp] + gsize[i] > max_depth:
                        if not phase and gp <= _BC:
                            again.append(i)
                        continue
                    gsize[rp] += gsize[ri]
                    gpar[ri] = rp
                    if anchor[ri]:
                        anchor[rp] = 1
                        if gpat[ri] > gpat[rp]:
                            gpat[rp] = gpat[ri]
                elif fits(i, p) and check(i, p, inner, last):
                    commit(i, p)
                elif not phase and gp <= _BC:
                    again.append(i)
        if has_tuples:  # round 2: injective nodes into intermediate tuples
            for i in order:
                if dom[i] is None or gpat[i] > _INJ:
                    continue
                p = dom[i] >> 4
                pr = find(p)
                if gpat[pr] == _TUP:
                    continue
                if gpat[p] == _TUP and gpat[pr] <= _INJ and fits(i, p) and check(i, p, _INJ, _INJ):
                    commit(i, p)


class _Inline:
    """Which constant arguments stay inline in a fused function: all with ``link_params``;
    otherwise the simple scalars that joined their consumer's group."""

    __slots__ = ("link", "lifted", "simple")

    def __init__(self, link: bool, lifted: set[tuple[Constant, Node]]) -> None:
        self.link = link
        self.lifted = lifted
        self.simple: dict[Constant, bool] = {}

    def __call__(self, c: Constant, consumer: Node) -> bool:
        if self.link:
            return True
        s = self.simple.get(c)
        if s is None:
            s = self.simple[c] = _simple_scalar(c)
        return s and (not self.lifted or (c, consumer) not in self.lifted)


def _operands(m: Any) -> tuple[Any, ...]:
    k = type(m)
    if k is Call:
        return m.args
    if k is Tuple:
        return m.fields
    return (m.tuple_value,)


def _group_shape(members: list[Any], where: dict[Node, int], inputs: list[Node],
                 inline: _Inline) -> tuple[list[Any], bool]:
    """The structure of a group (see :func:`_fuse_group`), filling ``where`` (member -> its
    position, free input -> -1 - its parameter number) and ``inputs`` (new free inputs, numbered
    in order of first use unless ``where`` already has them); and whether a member takes a free
    input before a member (then TVM's parameter order, depth-first from the root, differs)."""
    shape: list[Any] = []
    put = shape.append
    misordered = False
    for j, m in enumerate(members):
        k = type(m)
        if k is Call:
            args = m.args
            put(m.op)
            put(m.attrs)
        elif k is Tuple:
            args = m.fields
            put(_TUPLE_MARK)
            put(None)
        else:
            args = (m.tuple_value,)
            put(_TGI_MARK)
            put(m.index)
        free = False
        for a in args:
            w = where.get(a)
            if w is not None:
                if w < 0:
                    free = True
                elif free:
                    misordered = True
                put(w)
            elif type(a) is Constant and inline(a, m):
                put(a)
            else:
                w = where[a] = -1 - len(inputs)
                inputs.append(a)
                free = True
                put(w)
        where[m] = j
    return shape, misordered


def _tvm_inputs(members: list[Any], where: dict[Node, int], inline: _Inline) -> list[Node]:
    """A group's free inputs in TVM's parameter order: first use, depth first from the root,
    operands left to right."""
    order: list[Node] = []
    seen: set[Node] = set()
    root = members[-1]
    visited = {root}
    stack: list[list[Any]] = [[root, _operands(root), 0]]
    while stack:
        top = stack[-1]
        m, args, k = top
        if k == len(args):
            stack.pop()
            continue
        top[2] = k + 1
        a = args[k]
        w = where.get(a)
        if w is not None and w >= 0:
            if a not in visited:
                visited.add(a)
                stack.append([a, _operands(a), 0])
        elif type(a) is Constant and inline(a, m):
            continue
        elif a not in seen:
            seen.add(a)
            order.append(a)
    return order


def _fuse_group(members: list[Any], memo: dict[Node, Any], type_of: _TypeOf,
                cache: dict[tuple[Any, ...], _Shared] | None, edges: Any, inline: _Inline,
                pend: list[bytes]) -> Call:
    """Build the primitive function of a group (``members`` in post-order, its root last)
    and its call (args taken from ``memo``; lineage into ``edges``, unless None: the call's
    edge of a group whose function is cached waits in ``pend``, added in bulk, in order,
    before the next other edge, by :func:`_add_call_edges`).

    The function is keyed by the group's structure (per member its operator and attributes or
    tuple / item marker, then its operands: a member's position j, an inline constant, or a
    parameter -1 - k; then the parameter types) and, without ``cache`` (no sharing), by its
    members' identities.  With ``cache`` (key -> function and its body copies in member order),
    structurally identical groups share one hash-consed function, and a group whose key is
    cached is fused without building anything but its call.
    """
    # member -> j, free input -> -1 - its parameter number (the members' positions set at once: a
    # member's operands come before it)
    where: dict[Node, int] = dict(zip(members, _NATURALS))
    inputs: list[Node] = []  # the free inputs, in parameter order
    shape: list[Any] = []
    put = shape.append
    misordered = False
    for m in members:  # (as _group_shape, inlined)
        if type(m) is Call:
            args = m.args
            put(m.op)
            put(m.attrs)
        elif type(m) is Tuple:
            args = m.fields
            put(_TUPLE_MARK)
            put(None)
        else:
            args = (m.tuple_value,)
            put(_TGI_MARK)
            put(m.index)
        free = False
        for a in args:
            w = where.get(a)
            if w is None:
                if type(a) is Constant and inline(a, m):
                    put(a)
                    continue
                w = where[a] = -1 - len(inputs)
                inputs.append(a)
                free = True
            elif w < 0:
                free = True
            elif free:
                misordered = True
            put(w)
    if misordered:  # number the parameters as TVM does
        inputs = _tvm_inputs(members, where, inline)
        where = {x: -1 - k for k, x in enumerate(inputs)}
        shape, _ = _group_shape(members, where, [], inline)
    ptypes: list[Any] = list(map(type_of.known, inputs))
    if None in ptypes:  # (an input whose type the walk did not see)
        ptypes = [type_of(a) if t is None else t for a, t in zip(inputs, ptypes)]
    shape.append(len(ptypes))
    shape.extend(ptypes)
    skey = tuple(shape)
    hit = cache.get(skey) if cache is not None else None
    if hit is not None:
        fn = hit.fn
    else:
        gkey = _group_key(skey, members, ptypes, cache is None)
        params = [Var(f"p{i}", t, uid=digest(gkey + b"param%d:" % i)) for i, t in enumerate(ptypes)]
        body: dict[Node, Expr] = {}  # member -> its copy (members are built producers first)
        for m in members:
            new_args: list[Expr] = []
            for a in _operands(m):
                c: Expr | None = body.get(a)
                if c is None:
                    w = where.get(a)
                    c = a if w is None else params[-1 - w]
                new_args.append(c)
            k = type(m)
            if k is Call:
                body[m] = Call(m.op, tuple(new_args), m.attrs, _checked=True)
            elif k is Tuple:
                body[m] = Tuple(new_args)
            else:
                body[m] = TupleGetItem(new_args[0], m.index)
        copies = tuple([body[m] for m in members])
        root = members[-1]
        fn = Function(tuple(params), body[root], type_of(root), {"Primitive": 1})
        if cache is not None:
            cache[skey] = _Shared(fn, copies)
    call = make_call(fn, tuple(map(memo.get, inputs, inputs)), EMPTY_ATTRS)  # as Call(fn, args)
    if edges is None:
        return call
    # the call derives from exactly its group
    mids = members[0].id if len(members) == 1 else b"".join(map(_id_of, members))
    if hit is not None:  # a later group of a shared function: its lineage is recorded at the end
        pend.append(call.id)
        pend.append(mids)
        hit.later_mids.append(mids)
        hit.later_inputs.append(b"".join(map(_id_of, inputs)))
        return call
    if pend:
        _add_call_edges(edges, pend)
    if len(members) == 1:
        edges.add(call.id, mids)
    else:
        edges.add_joined(call.id, mids)
    # the function derives from every group it stands for, a parameter from the inputs it
    # receives, each body node from the member it copies (for a shared function, through a
    # shared edge: at this call only)
    if len(members) == 1:
        edges.add(fn.id, mids)
    else:
        edges.add_joined(fn.id, mids)
    for p, inp in zip(fn.params, inputs):
        edges.add(p.id, inp.id)
    for m, c in zip(members, copies):
        if c is not m:
            if cache is None:
                edges.add(c.id, m.id)
            else:
                edges.add_joined(c.id, m.id, shared=True)
    return call


def _add_call_edges(edges: Any, pend: list[bytes]) -> None:
    """Add the call edges waiting in ``pend`` (call id, joined member ids, ...) as one block,
    in their order, and empty it."""
    olds = pend[1::2]
    joined = b"".join(olds)
    counts = None
    if len(joined) != _ID_LEN * len(olds):  # (some group has several members)
        counts = array("I", [len(m) // _ID_LEN for m in olds]).tobytes()
    edges.extend(Edges(b"".join(pend[0::2]), joined, counts))
    pend.clear()


def _group_key(shape: tuple[Any, ...], members: list[Any], ptypes: list[Type], own: bool) -> bytes:
    """The digest of a group's structure (``shape`` as :func:`_group_shape` builds it) and, if
    ``own``, of its members: what the parameters' uids derive from."""
    parts: list[bytes] = [b"pyir.FuseOps.group"]
    put = parts.append
    i = 0
    for m in members:  # a member: head, extra, operands (as many as it has)
        head, extra, count = shape[i], shape[i + 1], len(_operands(m))
        i += 2
        if head is _TUPLE_MARK:
            put(b"T%d;" % count)
        elif head is _TGI_MARK:
            put(b"I%d;" % extra)
        else:
            put(b"C%d;" % count)
            put(head.id)
            put(extra.id)
        for d in shape[i:i + count]:
            if type(d) is int:
                put(b"m%d;" % d if d >= 0 else b"p%d;" % (-1 - d))
            else:
                put(b"k")
                put(d.id)
        i += count
    put(b"P%d;" % len(ptypes))
    for t in ptypes:
        put(t.id)
    if own:  # one function per group
        put(b"M")
        for m in members:
            put(m.id)
    return digest(b"".join(parts))


class _Memo(dict):
    """Rebuilt node -> its new version; a node not in it stands for itself (``memo[n]`` is
    ``n``, nothing stored: the rebuild of a let reads its variable and its unchanged children
    without an entry each)."""

    __slots__ = ()

    def __missing__(self, n: Node) -> Node:
        return n


class _TypeOf:
    """The types FuseOps asks: ``known(n)``, a dict lookup of the types of the walk's nodes
    (and of annotated variables) or None; ``type_of(n)``, anything else, through the module's
    typing context."""

    __slots__ = ("known", "context")

    def __init__(self, tys: dict[Node, Type], context: TypeContext) -> None:
        self.known = tys.get
        self.context = context

    def __call__(self, n: Node) -> Type:
        if type(n) is Var and n.type_annotation is not None:
            return n.type_annotation
        return self.context.type_of(n)  # type: ignore[arg-type]


_id_of = operator.attrgetter("id")
_NATURALS = range(1 << 62)  # (zipped with a group's members: their positions)
_annotation_of = operator.attrgetter("type_annotation")

#: A summary mask with an operator bit is at least this (a comparison, not a shift: no new int).
_HAS_OPS = 1 << OP_BIT0
_TUPLES = F_TUPLE | F_GETITEM

#: The stack marker of the walk: the node just below it is emitted when it is popped.
_DONE: Any = object()
#: ... for an operator call.
_CALL_DONE: Any = object()
