"""ToANormalForm: bind every non-atomic subexpression by a ``let``.

Calls, tuples, tuple projections, ``if`` and nested functions each get a let
with a variable annotated with the value's type (when the function type-checks),
in evaluation order.  A shared node is bound once, in the innermost scope that
encloses all its uses: an expression used only inside one ``if`` branch (or one
nested function body) is bound there.  Primitive (fused) functions are bound as
values but their bodies are kept as they are.

Existing lets are first inlined (see :mod:`~pyir.transform.to_graph_normal_form`),
and each let variable is derived from the id (and type) of the graph node it
binds, so the normal form of a graph is unique: the same graph gives the very
same objects, and the pass is idempotent.

Example (``tests/golden/ToANormalForm/docstring.txt``, run by ``tests/test_golden.py``).

Before::

    def @main(%p: Tensor[(4), float32]) {
      %0 = nn.relu(%p);
      add(%0, %0)
    }

After::

    def @main(%p: Tensor[(4), float32]) {
      let %x: Tensor[(4), float32] = nn.relu(%p);
      let %x_1: Tensor[(4), float32] = add(%x, %x);
      %x_1
    }
"""

from __future__ import annotations

import dataclasses
from typing import Any

from xxhash import xxh3_128_digest

from ..errors import PyIRError
from ..expr import Call, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..functor import rebuild
from ..lineage import current_recorder, derive
from ..module import Module
from ..node import F_FUNC, F_IF, Node
from ..traverse import ScopeTree, post_order
from ..typecheck import infer_type
from ..types import Type
from .base import FunctionPass
from .to_graph_normal_form import _is_primitive, gc_paused, graph_form

__all__ = ["ToANormalForm", "let_var", "normalize_function"]

_COMPOUND = (Call, Tuple, TupleGetItem, If, Function)


def let_var(value: Expr, ty: Type | None) -> Var:
    """The let variable binding graph node ``value`` of type ``ty``.

    Deterministic: the same node and type always give the same ``Var``.
    """
    salt = ty.id if ty is not None else b"-"
    return Var("x", ty, uid=xxh3_128_digest(value.id + salt + b"anf"))


def _eval_children(n: Node) -> tuple[Node, ...]:
    # Arguments before the callee: a called function is bound just before its call.
    if type(n) is Call and type(n.op) is not Op:
        return (*n.args, n.op)
    return n.children()


class _Plan:
    """Where each compound node of a let-free body is bound (scope numbers, 0 = the body)."""

    def __init__(self, body: Expr) -> None:
        self.order: list[Any] = post_order(body, _eval_children, stop=_is_primitive)
        self.tree = ScopeTree()
        self.scope: dict[Node, int] = {body: 0}
        self.inner: dict[Node, tuple[int, ...]] = {}  # If -> (then, else); Function -> (body,)
        self.mixed: set[Node] = set()  # nodes used from a scope other than their own
        self.flat = not body._mask & (F_IF | F_FUNC)  # one scope: no need to compute anything
        if self.flat:
            return
        scope = self.scope
        mixed = self.mixed
        for n in reversed(self.order):  # parents before children
            k = type(n)
            if k not in _COMPOUND:
                continue
            s = scope[n]
            if k is If:
                t, f = self.tree.new(s), self.tree.new(s)
                self.inner[n] = (t, f)
                uses: Any = ((n.cond, s), (n.true_branch, t), (n.false_branch, f))
            elif k is Function:
                if _is_primitive(n):
                    continue
                b = self.tree.new(s)
                self.inner[n] = (b,)
                uses = ((n.body, b),)
            else:
                uses = [(c, s) for c in n.children()]
            for c, u in uses:
                if type(c) in _COMPOUND:
                    old = scope.get(c)
                    if old is None:
                        scope[c] = u
                    elif old != u:
                        scope[c] = self.tree.lca(old, u)
                        mixed.add(c)


def _types_of(body: Expr, mod: Module) -> Any:
    """A function node -> type (None when ``body`` does not type-check)."""
    cache: dict[Node, Type] = {}
    try:
        infer_type(body, mod, cache=cache)
    except PyIRError:
        return lambda n: None
    get = cache.get

    def ty(n: Node) -> Type | None:
        t = getattr(n, "_ty", None)  # the structural type cached on the node
        return t if t is not None else get(n)

    return ty


def normalize_function(func: Function, mod: Module, *, bind_all: bool) -> Function:
    """``func`` in A-normal form (``bind_all``) or basic-block normal form.

    In basic-block normal form only the nodes used from a scope (if branch,
    function body) other than the one they are placed in are let-bound.
    Returns ``func`` itself when nothing changes; records lineage only then.
    """
    with gc_paused():
        return _normalize(func, mod, bind_all)


def _normalize(func: Function, mod: Module, bind_all: bool) -> Function:
    body, g = graph_form(func.body, into_primitive=False)
    rec = current_recorder()
    # graph node -> the id(s) of the input node(s) it stands for; only for graph nodes that
    # stand for other than themselves (one id as bytes, several as a tuple)
    pre: dict[Node, Any] = {}
    mark = rec.edges.mark() if rec is not None else None
    if rec is not None and g:
        add = rec.edges.add
        for n, img in g.items():
            if img is not n:  # nodes rebuilt by inlining the input's lets derive from their originals
                add(img.id, n.id)
            if type(n) in _COMPOUND:
                cur = pre.get(img)
                pre[img] = n.id if cur is None else (*((cur,) if type(cur) is bytes else cur), n.id)
        for same in [i for i, c in pre.items() if type(c) is bytes and c == i.id]:  # itself only
            del pre[same]
    del g
    plan = _Plan(body)
    ty = _types_of(body, mod)
    scope, inner, mixed, flat = plan.scope, plan.inner, plan.mixed, plan.flat
    order = plan.order
    del plan
    # scope -> flat list of (variable, value, graph node) triples, in binding order
    bindings: dict[int, list[Any]] = {}
    atom: dict[Node, Expr] = {}
    edges = rec.edges if rec is not None else None

    def record(new: Node, n: Node) -> None:  # ``new`` stands for graph node ``n``
        if edges is not None:
            olds = pre.get(n)
            if olds is None:
                edges.add(new.id, n.id)
            elif type(olds) is bytes:
                edges.add(new.id, olds)
            else:
                edges.append((new.id, olds))

    def close(s: int, result: Expr) -> Expr:
        e = atom[result]
        lst = bindings.pop(s, None)
        if lst:
            for i in range(len(lst) - 3, -1, -3):
                e = Let(lst[i], lst[i + 1], e)
                record(e, lst[i + 2])  # the let node stands for the graph node it binds
                del lst[i:]  # free the triple at once
        return e

    for n in order:
        k = type(n)
        if k is Call:
            op = n.op
            args = n.args
            new_args = tuple([atom[a] for a in args])
            if type(op) is Op:
                new: Expr = n if new_args == args else Call(op, new_args, n.attrs, _checked=True)
            else:
                new_op = atom[op]
                new = n if new_args == args and new_op is op else Call(new_op, new_args, n.attrs)
        elif k not in _COMPOUND:
            atom[n] = n
            continue
        elif k is If:
            t, f = inner[n]
            new = If(atom[n.cond], close(t, n.true_branch), close(f, n.false_branch))
        elif k is Function:
            sub = inner.get(n)
            new = n if sub is None else Function(n.params, close(sub[0], n.body), n.ret_type, n.attrs)
        else:
            new = rebuild(n, atom)
        if bind_all or n in mixed:
            v = let_var(n, ty(n))
            s = 0 if flat else scope[n]
            lst = bindings.get(s)
            if lst is None:
                lst = bindings[s] = []
            lst += (v, new, n)
            atom[n] = v
            record(v, n)
        else:
            atom[n] = new
        if new is not n:
            record(new, n)
    del order
    out = close(0, body)
    if out is func.body:
        if rec is not None and mark is not None:
            rec.edges.rollback(mark)  # nothing changed: no lineage
        return func
    return derive(Function(func.params, out, func.ret_type, func.attrs), func)  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class ToANormalForm(FunctionPass):
    """Bind every non-atomic subexpression by a let (see the module docstring)."""

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` in A-normal form (the same object when it already is)."""
        return normalize_function(func, mod, bind_all=True)
