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
import operator
from typing import Any

from ..analysis.typecheck import TypeContext
from ..errors import PassError
from ..ir.expr import Call, Constant, Expr, Function, Let, Op, Var, make_call
from ..ir.lineage import current_recorder, derive
from ..ir.module import Module
from ..ir.node import EMPTY_ATTRS, OP_BIT0, Node, digest
from ..ir.node import gc_paused as no_gc
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
    member order, and the groups after the first (their lineage is recorded once, at the end, as
    one edge per node: the members / inputs of every such group)."""

    __slots__ = ("fn", "copies", "later", "later_mids", "later_inputs")

    def __init__(self, fn: Function, copies: tuple[Call, ...]) -> None:
        self.fn = fn
        self.copies = copies
        self.later: list[list[Call]] = []  # the members of each later group (in member order)
        self.later_mids: list[bytes] = []  # ... and their ids, joined
        self.later_inputs: list[list[Node]] = []  # the inputs of each, in parameter order

    def flush(self, edges: Any) -> None:
        later = self.later
        if not later:
            return
        edges.add_joined(self.fn.id, b"".join(self.later_mids))
        for j, c in enumerate(self.copies):  # each body node: the members it copies there
            ids = b"".join([ms[j].id for ms in later if ms[j] is not c])
            if ids:
                edges.add_joined(c.id, ids, shared=True)
        for p, seq in zip(self.fn.params, zip(*self.later_inputs)):  # each parameter: its inputs
            # (the same input at consecutive sites, a weight or %x, once)
            edges.add_joined(p.id, b"".join([x.id for x, prev in zip(seq, (None, *seq)) if x is not prev]))


class _Group:
    __slots__ = ("root", "kind", "size", "members")

    def __init__(self, root: Call, kind: int) -> None:
        self.root = root
        self.kind = kind
        self.size = 1  # the number of members
        # the members in reverse post-order (the root first), as phase 2 of the grouping visits
        # them; reversed in place when the group is fused
        self.members: list[Call] = []


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
        work, calls, consumers = _walk(func.body)
        if not calls:
            return func
        types = TypeContext.of(mod)
        tys: dict[Node, Type] = {}  # the types of the nodes of the walk, if typed along it
        types.check(func, work, into=tys)  # along the walk: no second one (nor a stack) for the types
        groups, roots = self._group(calls, consumers)
        del consumers
        type_of = _TypeOf(tys, types)
        cache: dict[tuple[Any, ...], _Shared] | None = {} if self.share_functions else None
        rec = current_recorder()
        edges = rec.edges if rec is not None else None
        fuse_group = self._fuse_group
        memo = _Memo()  # rebuilt node -> its new version (a node not in it is unchanged)
        if calls is work:  # only operator calls: the groups, producers first
            for grp in reversed(roots):
                members = grp.members
                members.reverse()  # in post-order (producers first), the root last
                memo[grp.root] = fuse_group(members, memo, type_of, cache, edges)
        else:
            for n in work:  # children first
                g = groups.get(n)
                if g is None:  # a node other than an operator call: its children rebuilt
                    if type(n) is Let:  # (A-normal form: 10^6 of them; as rebuild(n, memo))
                        v, b = n.value, n.body
                        nv, nb = memo.get(v, v), memo.get(b, b)
                        new = n if nv is v and nb is b else Let(n.var, nv, nb)
                    else:
                        new = rebuild(n, memo)
                    if new is not n:
                        memo[n] = new
                        if edges is not None:
                            edges.add(new.id, n.id)  # derive(new, n)
                elif g.root is n:
                    members = g.members
                    members.reverse()  # in post-order (producers first), the root last
                    memo[n] = fuse_group(members, memo, type_of, cache, edges)
        del groups, roots
        body = func.body
        new_body = memo.get(body, body)
        if cache and edges is not None:
            for sh in cache.values():
                sh.flush(edges)
        del cache
        if new_body is body:
            return func
        return derive(Function(func.params, new_body, func.ret_type, func.attrs), func)  # type: ignore[return-value]

    def _group(self, calls: list[Any], consumers: dict[Node, Any]) -> tuple[dict[Node, _Group], list[_Group]]:
        """Assign every operator call (``calls``: in post-order) to a group: anchors first, then
        consumers-first.  Returns call -> its group, and the groups in reverse post-order of
        their roots."""
        groups: dict[Node, _Group] = {}
        closed: set[Node] = set()  # members that take no producers (anchors, opaque calls)
        patterns: dict[Expr, int] = {}
        for o in {n.op for n in calls}:
            patterns[o] = int(o.op_def.pattern)
        fuse = self.fuse_opt_level > 0
        max_size = self.max_fuse_depth
        if fuse:  # phase 1: grow each anchor along its chain of unique elementwise consumers
            anchor_ops = {o for o, p in patterns.items() if p == _OUT_FUSABLE}
            for n in [n for n in calls if n.op in anchor_ops] if anchor_ops else ():
                if n in groups:
                    continue
                anchor = groups[n] = _Group(n, _OUT)
                closed.add(n)
                while anchor.size < max_size:
                    c = consumers.get(anchor.root, _EXTERNAL)
                    if c is _EXTERNAL or type(c) is list or c in groups or patterns[c.op] > _BROADCAST:
                        break
                    anchor.size += 1
                    groups[c] = anchor
                    anchor.root = c
        get = groups.get
        roots: list[_Group] = []  # the groups, in reverse post-order of their roots
        for n in reversed(calls):  # phase 2: producers join the group of their consumers
            g = get(n)
            if g is not None:  # grouped in phase 1
                g.members.append(n)
                if g.root is n:
                    roots.append(g)
                continue
            pattern = patterns[n.op]
            c = consumers.get(n, _EXTERNAL)
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
            if g is None or new_kind is None or g.size >= max_size:
                kind = _kind_of(pattern)
                g = groups[n] = _Group(n, kind)
                if kind in (_OUT, _OPAQUE):
                    closed.add(n)
                roots.append(g)
            else:
                g.size += 1
                g.kind = new_kind
                groups[n] = g
            g.members.append(n)
        return groups, roots

    @staticmethod
    def _fuse_group(members: list[Call], memo: dict[Node, Any], type_of: _TypeOf,
                    cache: dict[tuple[Any, ...], _Shared] | None, edges: Any) -> Call:
        """Build the primitive function of a group (``members`` in post-order, its root last)
        and its call (args taken from ``memo``; lineage into ``edges``, unless None).

        The function is keyed by the group's structure (operators, attributes, constants,
        how members use each other and the parameter types) and, without ``cache`` (no
        sharing), by its members' identities.  With ``cache`` (key -> function and its body
        copies in member order), structurally identical groups share one hash-consed
        function, and a group whose key is cached is fused without building anything but
        its call.
        """
        # Pass 1: the group's free inputs (parameters) and its structure, as a tuple (see
        # _group_key): per member its operator, attributes and args (a member's position j,
        # a constant, a new parameter's type -- parameters are numbered in order of first
        # use -- or a parameter used again as -1 - its number).
        where: dict[Node, int] = {}  # member -> j, free input -> -1 - its parameter number
        inputs: list[Node] = []  # the free inputs, in parameter order
        shape: list[Any] = []
        put = shape.append
        known = type_of.known
        for j, m in enumerate(members):
            put(m.op)
            put(m.attrs)
            for a in m.args:
                k = where.get(a)
                if k is not None:
                    put(k)
                elif type(a) is Constant:
                    put(a)
                else:
                    where[a] = -1 - len(inputs)
                    inputs.append(a)
                    t = known(a)
                    put(type_of(a) if t is None else t)
            where[m] = j
        skey = tuple(shape)
        hit = cache.get(skey) if cache is not None else None
        if hit is not None:
            fn = hit.fn
        else:
            gkey, ptypes = _group_key(skey, None if cache is not None else members)
            # Pass 2: the parameters, the body copy and the function.
            params = [Var(f"p{i}", t, uid=digest(gkey + b"param%d:" % i)) for i, t in enumerate(ptypes)]
            body: dict[Node, Call] = {}  # member -> its copy (members are built producers first)
            for m in members:
                new_args: list[Expr] = []
                for a in m.args:
                    c: Expr | None = body.get(a)
                    if c is None:
                        c = a if type(a) is Constant else params[-1 - where[a]]
                    new_args.append(c)
                body[m] = Call(m.op, tuple(new_args), m.attrs, _checked=True)
            copies = tuple([body[m] for m in members])
            root = members[-1]
            fn = Function(tuple(params), body[root], type_of(root), {"Primitive": 1})
            if cache is not None:
                cache[skey] = _Shared(fn, copies)
        call = make_call(fn, tuple(map(memo.get, inputs, inputs)), EMPTY_ATTRS)  # as Call(fn, args)
        if edges is None:
            return call
        # the call derives from exactly its group
        if len(members) == 1:
            mids = members[0].id
            edges.add(call.id, mids)
        else:
            mids = b"".join(map(_id_of, members))
            edges.add_joined(call.id, mids)
        if hit is not None:  # a later group of a shared function: its lineage is recorded at the end
            hit.later.append(members)
            hit.later_mids.append(mids)
            hit.later_inputs.append(inputs)
            return call
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


def _group_key(shape: tuple[Any, ...], members: list[Call] | None) -> tuple[bytes, list[Type]]:
    """The digest of a group's structure (``shape`` as :meth:`FuseOps._fuse_group` builds it)
    and, if given, of its members: what the parameters' uids derive from; and the parameter
    types, in parameter order."""
    parts: list[bytes] = [b"pyir.FuseOps.group"]
    put = parts.append
    ptypes: list[Type] = []
    end = len(shape)
    i = 0
    while i < end:  # a member: its operator, attributes, then its args up to the next operator
        op, attrs = shape[i], shape[i + 1]
        i += 2
        s = i
        while i < end and type(shape[i]) is not Op:
            i += 1
        put(b"C%d;" % (i - s))
        put(op.id)
        put(attrs.id)
        for d in shape[s:i]:
            if type(d) is int:
                put(b"m%d;" % d if d >= 0 else b"p%d;" % (-1 - d))  # a member / a parameter again
            elif isinstance(d, Type):  # a new parameter
                put(b"p%d;" % len(ptypes))
                ptypes.append(d)
            else:  # a constant
                put(b"k")
                put(d.id)
    put(b"T%d;" % len(ptypes))
    for t in ptypes:
        put(t.id)
    if members is not None:  # one function per group
        put(b"M")
        for m in members:
            put(m.id)
    return digest(b"".join(parts)), ptypes


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


def _walk(body: Expr) -> tuple[list[Any], list[Any], dict[Node, Any]]:
    """One walk of a function body: ``(work, calls, consumers)``.

    ``work``: the nodes with operator calls below, in post-order (children first, each once),
    not descending into subgraphs without operator calls nor into primitive functions (neither
    is listed); ``calls``: its operator calls; ``consumers``: operator call -> its consumer
    (one node), the list of its distinct consumers, or _EXTERNAL.  A use by anything other
    than an operator call is external, and so is the body's value.  ``calls`` is ``work``
    itself when every node walked is an operator call.
    """
    work: list[Any] = []
    cons: dict[Node, Any] = {}
    if body._mask < _HAS_OPS:
        return work, [], cons
    emit = work.append
    seen: set[Node] = set()
    add = seen.add
    stack: list[Any] = [body]
    push = stack.append
    pop = stack.pop
    get = cons.get
    others = False  # a node other than an operator call was emitted
    while stack:
        n = pop()
        if n is _DONE:  # the node below the marker has all its children emitted
            emit(pop())
            continue
        if n in seen:
            continue
        add(n)
        k = type(n)
        if k is Call and type(n.op) is Op:
            push(n)
            push(_DONE)
            for c in reversed(n.args):
                if c._mask < _HAS_OPS:  # no operator call below: not walked
                    continue
                if type(c) is Call and type(c.op) is Op:  # n consumes c
                    cur = get(c)
                    if cur is None:
                        cons[c] = n
                    elif cur is _EXTERNAL or cur is n:
                        pass
                    elif type(cur) is list:
                        if cur[-1] is not n:  # repeated uses by one consumer are consecutive
                            cur.append(n)
                    else:
                        cons[c] = [cur, n]
                if c not in seen:
                    push(c)
            continue
        if k is Function and n.attrs.get("Primitive"):
            continue
        kids = n.children()
        if not kids:
            continue
        others = True
        push(n)
        push(_DONE)
        for c in reversed(kids):
            if c._mask < _HAS_OPS:
                continue
            if type(c) is Call and type(c.op) is Op:  # an external use
                cons[c] = _EXTERNAL
            if c not in seen:
                push(c)
    if type(body) is Call and type(body.op) is Op:
        cons[body] = _EXTERNAL
    calls = [n for n in work if type(n) is Call and type(n.op) is Op] if others else work
    return work, calls, cons


_id_of = operator.attrgetter("id")

#: A summary mask with an operator bit is at least this (a comparison, not a shift: no new int).
_HAS_OPS = 1 << OP_BIT0

#: The stack marker of the walk: the node just below it is emitted when it is popped.
_DONE: Any = object()
