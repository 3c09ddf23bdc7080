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

The grouping ("post-dominator lite") works on the dataflow DAG of each function
body, using the operators' pattern kinds (:class:`~pyir.op.registry.OpPattern`):

1. Walk the body in post-order (skipping subgraphs without operator calls and
   the bodies of primitive functions) and record, for each operator call, its
   distinct consumers.  A use by anything other than an operator call (a tuple,
   ``TupleGetItem``, ``let``, ``if``, a function body or a call of a function)
   is an *external* use.
2. Anchors first (as TVM's first phase): each ``OUT_ELEMWISE_FUSABLE`` call
   (conv2d, dense, matmul, pools) starts a group and grows it along its chain
   of unique ``ELEMWISE``/``BROADCAST`` consumers (``conv2d -> bias_add ->
   add -> relu``), stopping at a node with several consumers or an external use.
3. Then the remaining calls, consumers first.  A call joins the group of its
   consumers when it has no external use, all its consumers are in one group,
   none of them is an anchor or ``OPAQUE`` (their inputs are never fused), the
   group has fewer than ``max_fuse_depth`` calls, and the kinds allow it:

   * ``ELEMWISE``/``BROADCAST`` join any group but an ``OPAQUE`` one (so
     parallel elementwise branches join an anchored group);
   * ``INJECTIVE`` joins elementwise, injective and reduction groups (TVM
     fuses injective producers into reductions), not anchored ones;
   * ``COMM_REDUCE`` and ``OPAQUE`` calls only start groups (``OPAQUE`` ones
     stay alone).

   Otherwise the call starts a new group, of which it is the *root*.  Every
   non-root member is used only inside its group, so each group has a single
   output (its root) and is convex, as with TVM's dominator-based fusion.  The
   result need not be identical to TVM's (e.g. a diamond below an anchor's
   chain is not fused into it).

4. Each group becomes ``fn (%p0, ...) { body }`` with ``Primitive=1``: its free
   inputs become fresh parameters (annotated with the input's type), constants
   stay inline.  Parameter uids are derived from the group's structure
   (operators, attributes, constants, how members use each other, parameter
   types), so structurally identical groups share one hash-consed function, as a
   compiler caches lowered functions by structural hash (a 10^6-step chain of four
   kinds of step has four fused functions, not 10^6; a repeated group is fused
   by computing its key and reusing the function).  Fusing the same graph twice
   yields the very same function objects, and
   :class:`~pyir.transform.defuse_ops.DefuseOps` restores the input exactly.
   ``share_functions=False`` derives the uids from the members too: one function
   per group.

Fusion never crosses ``let``, ``if``, tuple or function boundaries.  Lineage:
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
from typing import Any

from ..analysis.typecheck import infer_type
from ..errors import PassError, TypeCheckError
from ..ir.expr import Call, Constant, Expr, Function, Op, Var
from ..ir.lineage import current_recorder, derive
from ..ir.module import Module
from ..ir.node import OP_BIT0, Node, cached_type, digest
from ..ir.node import gc_paused as no_gc
from ..ir.traverse import post_order
from ..ir.types import Type
from ..op.registry import OpPattern
from ..rewrite.functor import rebuild
from .base import ModulePass

__all__ = ["FuseOps"]

# Group kinds.
_EWISE, _INJ, _OUT, _RED, _OPAQUE = range(5)
_EXTERNAL: Any = object()  # consumer marker: used outside any operator call

_ELEMWISE = int(OpPattern.ELEMWISE)
_BROADCAST = int(OpPattern.BROADCAST)
_INJECTIVE = int(OpPattern.INJECTIVE)
_COMM_REDUCE = int(OpPattern.COMM_REDUCE)
_OUT_FUSABLE = int(OpPattern.OUT_ELEMWISE_FUSABLE)



def _is_op_call(n: Node) -> bool:
    return type(n) is Call and type(n.op) is Op


def _is_primitive(n: Node) -> bool:
    return type(n) is Function and bool(n.attrs.get("Primitive"))


def _stop(n: Node) -> bool:
    """Do not descend into subgraphs without operator calls, nor into primitive functions."""
    return not (n._mask >> OP_BIT0) or _is_primitive(n)


def _kind_of(pattern: int) -> int:
    if pattern <= _BROADCAST:
        return _EWISE
    if pattern == _INJECTIVE:
        return _INJ
    if pattern == _COMM_REDUCE:
        return _RED
    if pattern == _OUT_FUSABLE:
        return _OUT
    return _OPAQUE


def _join_kind(pattern: int, kind: int) -> int | None:
    """The group kind after a producer of ``pattern`` joins a group of ``kind`` (None: not allowed)."""
    if kind == _OPAQUE:
        return None
    if pattern <= _BROADCAST:
        return kind
    if pattern == _INJECTIVE:
        return _INJ if kind == _EWISE else kind if kind in (_INJ, _RED) else None
    return None


class _Shared:
    """A fused function shared by the groups of one structure: the function, its body copies in
    member order, and the lineage of the groups after the first (recorded once, at the end, as
    one edge per node: the members / inputs of every such group)."""

    __slots__ = ("fn", "copies", "members", "by_copy", "by_param")

    def __init__(self, fn: Function, copies: tuple[Call, ...]) -> None:
        self.fn = fn
        self.copies = copies
        self.members: bytearray | None = None  # ids of the members of the later groups
        self.by_copy: list[bytearray] = []  # per body copy: the ids of the members it copies there
        self.by_param: list[bytearray] = []  # per parameter: the ids of the inputs it receives there

    def flush(self, edges: Any) -> None:
        if self.members is None:
            return
        edges.add_joined(self.fn.id, self.members)
        for c, ids in zip(self.copies, self.by_copy):
            if ids:
                edges.add_joined(c.id, ids, shared=True)
        for p, ids in zip(self.fn.params, self.by_param):
            edges.add_joined(p.id, ids)


class _Group:
    __slots__ = ("root", "kind", "members")

    def __init__(self, root: Call, kind: int) -> None:
        self.root = root
        self.kind = kind
        self.members: list[Call] = [root]


@dataclasses.dataclass(frozen=True)
class FuseOps(ModulePass):
    """Fuse operator calls into primitive functions (see the module docstring).

    ``fuse_opt_level=0`` puts every call in its own group; ``max_fuse_depth``
    bounds the number of calls in a group (as TVM's ``relay.FuseOps.max_depth``);
    structurally identical groups share one function unless ``share_functions=False``
    (one function per group; lineage is exact per group either way).
    """

    fuse_opt_level: int = 2
    max_fuse_depth: int = 256
    share_functions: bool = True

    def __post_init__(self) -> None:
        if type(self.fuse_opt_level) is not int or self.fuse_opt_level < 0:
            raise PassError(f"FuseOps: fuse_opt_level must be an int >= 0, got {self.fuse_opt_level!r}")
        if type(self.max_fuse_depth) is not int or self.max_fuse_depth < 1:
            raise PassError(f"FuseOps: max_fuse_depth must be an int >= 1, got {self.max_fuse_depth!r}")
        if type(self.share_functions) is not bool:
            raise PassError(f"FuseOps: share_functions must be a bool, got {self.share_functions!r}")

    def run(self, mod: Module) -> Module:
        updates = {}
        with no_gc():  # millions of acyclic nodes: the cyclic collector would only slow us down
            for name, f in mod.items():
                if f.attrs.get("Primitive"):
                    continue
                nf = self.fuse_function(f, mod)
                if nf is not f:
                    updates[name] = nf
        return mod.with_functions(updates) if updates else mod

    # -- one function ------------------------------------------------------------------------------
    def fuse_function(self, func: Function, mod: Module) -> Function:
        """``func`` with its operator calls fused (the same object if there is none outside
        primitive functions)."""
        order = post_order(func.body, stop=_stop)
        consumers = self._consumers(order, func.body)
        if not consumers:
            return func
        groups = self._group(order, consumers)
        del consumers
        pos = {}  # post-order position of the members of groups of several calls (to sort them)
        for i, n in enumerate(order):
            g = groups.get(n)
            if g is not None and len(g.members) > 1:
                pos[n] = i
        types = _Types(func, mod)
        cache: dict[bytes, _Shared] | None = {} if self.share_functions else None
        memo: dict[Node, Any] = {}
        for n in order:
            g = groups.get(n)
            if g is None:
                if not n.children() or _stop(n):
                    memo[n] = n
                else:
                    new = rebuild(n, memo)
                    memo[n] = new
                    if new is not n:
                        derive(new, n)
            elif g.root is n:
                memo[n] = self._fuse_group(g, memo, types, pos, cache)
                for m in g.members:  # done with this group (its members came before its root)
                    del groups[m]
        new_body = memo[func.body]
        rec = current_recorder()
        if cache and rec is not None:
            for sh in cache.values():
                sh.flush(rec.edges)
        del cache
        if new_body is func.body:
            return func
        return derive(Function(func.params, new_body, func.ret_type, func.attrs), func)  # type: ignore[return-value]

    @staticmethod
    def _consumers(order: list[Any], root: Expr) -> dict[Node, Any]:
        """Operator call -> its consumer (one node), a list of distinct consumers, or _EXTERNAL."""
        cons: dict[Node, Any] = {}
        for n in order:
            if not (n._mask >> OP_BIT0):
                continue
            k = type(n)
            op_call = k is Call and type(n.op) is Op
            if k is Function and n.attrs.get("Primitive"):
                continue
            for c in (n.args if op_call else n.children()):
                if type(c) is not Call or type(c.op) is not Op:
                    continue
                if not op_call:
                    cons[c] = _EXTERNAL
                    continue
                cur = cons.get(c)
                if cur is None:
                    cons[c] = n
                elif cur is _EXTERNAL or cur is n:
                    pass
                elif type(cur) is list:
                    if cur[-1] is not n:  # repeated uses by one consumer are consecutive
                        cur.append(n)
                else:
                    cons[c] = [cur, n]
        if _is_op_call(root):
            cons[root] = _EXTERNAL
        return cons

    def _group(self, order: list[Any], consumers: dict[Node, Any]) -> dict[Node, _Group]:
        """Assign every operator call to a group: anchors first, then consumers-first."""
        groups: dict[Node, _Group] = {}
        closed: set[Node] = set()  # members that take no producers (anchors, opaque calls)
        patterns: dict[Expr, int] = {}
        calls = []
        for n in order:
            if type(n) is Call and type(n.op) is Op:
                calls.append(n)
                if n.op not in patterns:
                    patterns[n.op] = int(n.op.op_def.pattern)
        fuse = self.fuse_opt_level > 0
        max_size = self.max_fuse_depth
        if fuse:  # phase 1: grow each anchor along its chain of unique elementwise consumers
            for n in calls:
                if patterns[n.op] != _OUT_FUSABLE or n in groups:
                    continue
                anchor = groups[n] = _Group(n, _OUT)
                closed.add(n)
                while len(anchor.members) < max_size:
                    c = consumers.get(anchor.root, _EXTERNAL)
                    if c is _EXTERNAL or type(c) is list or c in groups or patterns[c.op] > _BROADCAST:
                        break
                    anchor.members.append(c)
                    groups[c] = anchor
                    anchor.root = c
        for n in reversed(calls):  # phase 2: producers join the group of their consumers
            if n in groups:
                continue
            pattern = patterns[n.op]
            c = consumers.get(n, _EXTERNAL)
            g: _Group | None = None
            if fuse and c is not _EXTERNAL:
                if type(c) is list:
                    g = groups[c[0]]
                    for x in c:
                        if groups[x] is not g or x in closed:
                            g = None
                            break
                elif c not in closed:
                    g = groups[c]
            new_kind = None if g is None else _join_kind(pattern, g.kind)
            if g is None or new_kind is None or len(g.members) >= max_size:
                kind = _kind_of(pattern)
                groups[n] = _Group(n, kind)
                if kind in (_OUT, _OPAQUE):
                    closed.add(n)
            else:
                g.members.append(n)
                g.kind = new_kind
                groups[n] = g
        return groups

    @staticmethod
    def _fuse_group(g: _Group, memo: dict[Node, Any], types: _Types, pos: dict[Node, int],
                    cache: dict[bytes, _Shared] | None) -> Call:
        """Build the primitive function of ``g`` and its call (args taken from ``memo``).

        The function is keyed by the group's structure (operators, attributes, constants,
        how members use each other and the parameter types) and, without ``cache`` (no
        sharing), by its members' identities.  With ``cache`` (key -> function and its body
        copies in member order), structurally identical groups share one hash-consed
        function, and a group whose key is cached is fused without building anything but
        its call.
        """
        root = g.root
        members = g.members
        if len(members) > 1:  # producers first
            members.sort(key=pos.__getitem__)
        # Pass 1: the group's free inputs (parameters) and its structural key.
        slot: dict[Node, int] = {}  # member -> its position in the group
        inputs: dict[Node, int] = {}  # free input -> parameter number
        ptypes: list[Type] = []
        parts: list[bytes] = [b"pyir.FuseOps.group"]
        for j, m in enumerate(members):
            slot[m] = j
            parts.append(b"C%d;" % len(m.args))
            parts.append(m.op.id)
            parts.append(m.attrs.id)
            for a in m.args:
                k = slot.get(a)
                if k is not None:
                    parts.append(b"m%d;" % k)
                elif type(a) is Constant:
                    parts.append(b"k")
                    parts.append(a.id)
                else:
                    i = inputs.get(a)
                    if i is None:
                        i = inputs[a] = len(ptypes)
                        ptypes.append(types.of(a))
                    parts.append(b"p%d;" % i)
        parts.append(b"T%d;" % len(ptypes))
        parts.extend([t.id for t in ptypes])
        if cache is None:  # one function per group
            parts.append(b"M")
            parts.extend([m.id for m in members])
        gkey = digest(b"".join(parts))
        del parts, slot
        hit = cache.get(gkey) if cache is not None else None
        if hit is not None:
            fn, copies = hit.fn, hit.copies
        else:
            # Pass 2: the parameters, the body copy and the function.
            params = [Var(f"p{i}", t, uid=digest(gkey + b"param%d:" % i)) for i, t in enumerate(ptypes)]
            body: dict[Node, Call] = {}  # member -> its copy (members are built producers first)
            for m in members:
                new_args: list[Expr] = []
                for a in m.args:
                    c: Expr | None = body.get(a)
                    if c is None:
                        c = a if type(a) is Constant else params[inputs[a]]
                    new_args.append(c)
                body[m] = Call(m.op, tuple(new_args), m.attrs, _checked=True)
            copies = tuple([body[m] for m in members])
            fn = Function(tuple(params), body[root], types.of(root), {"Primitive": 1})
            if cache is not None:
                cache[gkey] = _Shared(fn, copies)
        call = Call(fn, tuple([memo[a] for a in inputs]))
        rec = current_recorder()
        if rec is None:
            return call
        edges = rec.edges
        # the call derives from exactly its group
        if len(members) == 1:
            edges.add(call.id, root.id)
        else:
            edges.add_joined(call.id, b"".join([m.id for m in members]))
        if hit is not None:  # a later group of a shared function: its lineage goes in one edge per node
            if hit.members is None:
                hit.members = bytearray()
                hit.by_copy = [bytearray() for _ in copies]
                hit.by_param = [bytearray() for _ in fn.params]
            for m, c, ids in zip(members, copies, hit.by_copy):
                hit.members += m.id
                if c is not m:
                    ids += m.id
            for inp, i in inputs.items():
                ids = hit.by_param[i]
                if ids[-16:] != inp.id:  # the same input at consecutive sites (a weight, %x) once
                    ids += inp.id
            return call
        # the function derives from every group it stands for, a parameter from the inputs it
        # receives, each body node from the member it copies (for a shared function, through a
        # shared edge: at this call only)
        if len(members) == 1:
            edges.add(fn.id, root.id)
        else:
            edges.add_joined(fn.id, b"".join([m.id for m in members]))
        ps = fn.params
        for inp, i in inputs.items():
            edges.add(ps[i].id, inp.id)
        for m, c in zip(members, copies):
            if c is not m:
                if cache is None:
                    edges.add(c.id, m.id)
                else:
                    edges.add_joined(c.id, m.id, shared=True)
        return call


class _Types:
    """Types of the nodes of one function (inferred once, through its module)."""

    def __init__(self, func: Function, mod: Module) -> None:
        self.mod = mod
        self.let_types: dict[Var, Type] = {}
        infer_type(func, mod, env=self.let_types)
        self.func = func
        self.context = mod._type_cache()  # where inference keeps context-dependent types

    def of(self, n: Node) -> Type:
        if type(n) is Var:
            t = n.type_annotation
            if t is not None:
                return t
            t = self.let_types.get(n)
            if t is None:
                raise TypeCheckError(f"FuseOps: cannot find the type of %{n.name_hint}")
            return t
        t = cached_type(n)  # inferred above: on the node, or in the module's cache
        if t is None:
            t = self.context.get(n)
            if t is None:
                return infer_type(n, self.mod)  # type: ignore[arg-type]
        return t
