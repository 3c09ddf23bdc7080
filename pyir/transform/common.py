"""Helpers shared by the passes: the one place a pass imports from besides the core layers.

No pass imports another pass's module; what two passes share lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xxhash import xxh3_128_digest

from ..analysis.typecheck import TypeContext
from ..errors import WellFormedError
from ..ir.adt import F_MATCH, F_REF, Constructor
from ..ir.expr import Call, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.lineage import current_recorder, derive, eliminate
from ..ir.module import Module
from ..ir.node import F_FUNC, F_IF, F_LET, F_VAR, Node, digest, gc_paused
from ..ir.traverse import _DONE, ScopeTree, post_order
from ..ir.types import Type
from ..rewrite.functor import Derivations, Rewriter, rebuild

# -- inlining and fusion helpers (FuseOps, DefuseOps, Inline) -------------------------


def replace_body(func: Function, body: Expr) -> Function:
    """``func`` with another body of the same type (return type and attributes kept);
    the new function derives from the old one."""
    if body is func.body:
        return func
    return derive(Function(func.params, body, func.ret_type, func.attrs), func)  # type: ignore[return-value]


def inline_call(func: Function, args: Sequence[Expr], site: Node) -> Expr:
    """The body of ``func`` with its parameters replaced by ``args``: ``func`` expanded at
    the call ``site``.

    Variables bound inside the body (``let`` variables, parameters of nested
    functions) are renamed to fresh variables whose uids derive from ``site``
    and the original uid, so inlining is deterministic and two copies never bind
    the same variable.  Lineage: each copied node (renamed variables included) is
    the body node it copies instantiated at ``site`` (an instance edge,
    :func:`~pyir.ir.lineage.derive_at`), so a function FuseOps shared between groups
    gives back, at each call, the nodes of that call's group.  Nothing derives
    from ``site`` itself through an ordinary edge, but for a closed body (no parameter
    used, e.g. a fused constant computation), which is its own copy, and a body that is
    a parameter (the identity), whose copy is the argument: they derive from ``site``.  The walk is iterative.
    """
    if len(args) != len(func.params):
        raise WellFormedError(f"a function of {len(func.params)} parameter(s) is called with "
                              f"{len(args)} argument(s)")
    memo: dict[Node, Any] = dict(zip(func.params, args))
    rec = current_recorder()
    add_at = rec.edges.add_at if rec is not None else None
    sid = site.id
    salt = b"pyir.inline" + sid
    # One streaming walk, children first, with memo as the set of nodes done (no post-order
    # list, no separate seen set): its memory is the memo and a stack as deep as the body.
    # A binder (let or nested function) is met before anything in its scope, so its
    # variables are renamed there.
    stack: list[Any] = [func.body]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            n = pop()
            new = rebuild(n, memo)
            memo[n] = new
            if add_at is not None and new is not n:
                add_at(new.id, n.id, sid)
            continue
        if n in memo:
            continue
        m = n._mask
        if not m & F_VAR:
            memo[n] = n  # nothing to substitute below
            continue
        kids = n.children()
        if not kids:
            memo[n] = n  # a free variable (none in a module function)
            continue
        k = type(n)
        if k is Let or k is Function:
            for v in ((n.var,) if k is Let else n.params):
                if v not in memo:
                    nv = memo[v] = Var(v.name_hint, v.type_annotation, uid=digest(salt + v.uid))
                    if add_at is not None:
                        add_at(nv.id, v.id, sid)
        push(n)
        push(_DONE)
        for c in reversed(kids):
            if c not in memo:
                push(c)
    out = memo[func.body]
    if rec is not None and (out is func.body or type(func.body) is Var):
        # a closed body is its own copy, a body that is a parameter its argument: the site became it
        rec.edges.add(out.id, sid)
    return out


def expand_calls(expr: Expr, callee: Callable[[Call, dict[Node, Any]], Function | None],
                 leaf: Callable[[Node], bool]) -> Expr:
    """``expr`` with each call for which ``callee(call, memo)`` gives a function replaced by
    that function expanded at the call (:func:`inline_call`, arguments rewritten first).

    ``callee`` sees the memo of rewritten nodes (so it may take the call's rewritten
    callee from it); ``leaf(n)`` says there is nothing to expand below ``n``.  One
    streaming walk, children first, with the memo doubling as the set of nodes done;
    each rebuilt node of the enclosing graph derives from its old version.
    """
    memo: dict[Node, Any] = {}
    rec = current_recorder()
    add = rec.edges.add if rec is not None else None
    stack: list[Any] = [expr]
    push = stack.append
    pop = stack.pop
    while stack:
        n = pop()
        if n is _DONE:
            n = pop()
            fn = callee(n, memo) if type(n) is Call else None
            if fn is not None:
                new = inline_call(fn, tuple([memo[a] for a in n.args]), n)
            else:
                new = rebuild(n, memo)
                if add is not None and new is not n:
                    add(new.id, n.id)
            memo[n] = new
            continue
        if n in memo:
            continue
        if leaf(n):
            memo[n] = n
            continue
        kids = n.children()
        if not kids:
            memo[n] = n
            continue
        push(n)
        push(_DONE)
        for c in reversed(kids):
            if c not in memo:
                push(c)
    return memo[expr]


# -- rewriting helpers (the other passes) ----------------------------------------------

_LET_OR_VAR = F_LET | F_VAR
_COMPOUND = (Call, Tuple, TupleGetItem, If, Function)


def is_primitive(n: Node) -> bool:
    """``n`` is a primitive (fused) function."""
    return type(n) is Function and bool(n.attrs.get("Primitive"))


def _let_children(n: Node) -> tuple[Node, ...]:
    # A let variable is reached through its uses only, i.e. after its value.
    if type(n) is Let:
        return (n.value, n.body)
    return n.children()


class _GraphForm(Rewriter):
    """Every let stands for its body and every let variable for its value."""

    record_lineage = False  # the passes record what they mean (record_graph_lineage, ANF)

    def __init__(self, letval: dict[Node, Expr], into_primitive: bool) -> None:
        super().__init__()
        self.letval = letval
        self.into_primitive = into_primitive

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & _LET_OR_VAR) and (self.into_primitive or not is_primitive(node))

    def forward(self, node: Node) -> Expr | None:
        k = type(node)
        if k is Let:
            return node.body  # type: ignore[attr-defined]
        if k is Var:
            return self.letval.get(node)
        return None

    def cycle_error(self, node: Node) -> Exception:
        return WellFormedError(f"let variable %{node.name_hint} is used in its own value "  # type: ignore[attr-defined]
                               "(recursive lets have no graph form)")


def graph_form(expr: Expr, *, into_primitive: bool = True,
               dropped: list[Node] | None = None) -> tuple[Expr, dict[Node, Expr]]:
    """``expr`` without lets, and the map from each walked node to its let-free image.

    Each let variable is replaced by (the image of) its value.  With
    ``into_primitive=False``, primitive functions are kept as they are.  Nodes
    that cannot contain a let or a variable are not walked (they map to
    themselves).  Iterative; raises :class:`~pyir.errors.WellFormedError` for a
    let whose value uses its own variable, or a variable bound by two lets to
    different values.  ``dropped``, when given, receives the input nodes that only unused
    lets held (the caller records them as eliminated).
    """
    if not expr._mask & F_LET:
        return expr, {}

    def stop(n: Node) -> bool:
        return not n._mask & F_LET or (not into_primitive and is_primitive(n))

    lets = [n for n in post_order(expr, _let_children, stop=stop) if type(n) is Let]
    letval: dict[Node, Expr] = {}
    for n in lets:
        prev = letval.setdefault(n.var, n.value)
        if prev is not n.value:
            raise WellFormedError(f"variable %{n.var.name_hint} is bound by two lets "
                                  "with different values")
    rw = _GraphForm(letval, into_primitive)
    memo = rw.memo
    # Values first, outer lets first: the variables a value uses are bound by enclosing lets,
    # whose values are done, so a variable forwards to a done image (no chain of pending
    # forwards down a let chain).  Then each let stands for its body, inner lets first.  Values
    # of unused lets get their images (and errors) as used ones do.
    rw.visit_many(n.value for n in reversed(lets))
    for n in lets:
        if n not in memo:
            b = n.body
            r = memo.get(b)
            memo[n] = r if r is not None else rw.visit(b)
    out = rw.visit(expr)
    if dropped is not None and any(n.var not in memo for n in lets):  # an unused let exists
        dropped.extend(_dropped(out, lets, memo))
    return out, memo


def _dropped(out: Expr, lets: Sequence[Node], memo: dict[Node, Expr]) -> list[Node]:
    """The input nodes a graph form dropped with its unused lets: those under some let's
    value whose image the result does not hold (lets aside; let variables whose value was
    dropped included, as lineage may lead into them)."""
    alive = set(post_order(out))
    bound = {n.var for n in lets}  # type: ignore[attr-defined]
    out_nodes: dict[Node, None] = {}
    for n in lets:
        v = n.value  # type: ignore[attr-defined]
        if memo.get(v, v) in alive:
            continue
        for m in post_order(v, stop=lambda m: memo.get(m, m) in alive):
            if type(m) is not Let and memo.get(m, m) not in alive and (type(m) is not Var or m in bound):
                out_nodes[m] = None  # (a let variable only when it stood for a dropped value)
    return list(out_nodes)


def record_graph_lineage(g: dict[Node, Expr]) -> None:
    """Record lineage for a :func:`graph_form` map: rebuilt nodes derive from
    their originals, substituted values from their let bindings and variables."""
    d = Derivations()
    if not d:
        return
    for n, img in g.items():
        if type(n) is Let:
            value: Expr = n.value
            d.derive(g.get(value, value), n)
        elif img is not n:  # a rebuilt node, or a variable replaced by its value
            d.derive(img, n)


def let_var(value: Expr, ty: Type | None, where: bytes = b"") -> Var:
    """The let variable binding graph node ``value`` of type ``ty`` (A-normal and basic-block
    normal forms) in the function ``where`` names.  Deterministic: the same node, type and
    function always give the same ``Var`` (the function name keeps two functions sharing a
    subexpression from binding one variable: a module binds each variable once)."""
    salt = ty.id if ty is not None else b"-"
    return Var("x", ty, uid=xxh3_128_digest(value.id + salt + b"anf" + where))


def _eval_children(n: Node) -> tuple[Node, ...]:
    # Arguments before the callee: a called function is bound just before its call.
    if type(n) is Call and type(n.op) is not Op:
        return (*n.args, n.op)
    return n.children()


class _Plan:
    """Where each compound node of a let-free body is bound (scope numbers, 0 = the body)."""

    def __init__(self, body: Expr) -> None:
        self.tree = ScopeTree()
        self.scope: dict[Node, int] = {body: 0}
        self.inner: dict[Node, tuple[int, ...]] = {}  # If -> (then, else); Function -> (body,)
        self.mixed: set[Node] = set()  # nodes used from a scope other than their own
        self.flat = not body._mask & (F_IF | F_FUNC)  # one scope: no need to compute anything
        if self.flat:
            return
        scope = self.scope
        mixed = self.mixed
        for n in reversed(post_order(body, _eval_children, stop=is_primitive)):  # parents first
            k = type(n)
            if k not in _COMPOUND:
                continue
            s = scope[n]
            if k is If:
                t, f = self.tree.new(s), self.tree.new(s)
                self.inner[n] = (t, f)
                uses: Any = ((n.cond, s), (n.true_branch, t), (n.false_branch, f))
            elif k is Function:
                if is_primitive(n):
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


class _Bind(Rewriter):
    """The normal form of a let-free body: each compound node rebuilt over the atoms of its
    children, let-bound in its scope (all of them, or only those used from other scopes)."""

    record_lineage = False  # edges go to the input nodes the graph nodes stand for (``pre``)

    def __init__(self, plan: _Plan, ty: Any, bind_all: bool, d: Derivations,
                 pre: dict[Node, Any], where: bytes = b"") -> None:
        super().__init__()
        self.scope, self.inner, self.mixed, self.flat = plan.scope, plan.inner, plan.mixed, plan.flat
        self.ty = ty
        self.where = where
        self.bind_all = bind_all
        self.d = d
        self.pre = pre
        self.bindings: dict[int, list[Any]] = {}  # scope -> (variable, value, graph node) triples, flat
        self.record = self._recorder()

    def children(self, node: Node) -> tuple[Node, ...]:
        k = type(node)
        if k is Call:  # arguments before the callee: a called function is bound just before its call
            op = node.op  # type: ignore[attr-defined]
            return node.args if type(op) is Op else (*node.args, op)  # type: ignore[attr-defined]
        if k is Function and node.attrs.get("Primitive"):  # type: ignore[attr-defined]
            return ()  # bound as a value, its body kept as it is
        return node.children()

    def _recorder(self) -> Any:
        """``record(new, n)``: ``new`` stands for graph node ``n``, so it derives from the input
        node(s) ``n`` stands for; it returns those ids (concatenated, as bytes; None
        when nothing is recorded), which ``record_ids`` takes for a later node standing for
        ``n`` (the let binding it), so the bindings need not keep ``n`` alive."""
        add = self.d.id_adder()
        if add is None:
            return _no_record
        pre_get = self.pre.get
        joined = self.d.joined_adder()

        def record(new: Node, n: Node) -> Any:
            olds = pre_get(n)
            if olds is None:
                olds = n.id
                add(new.id, olds)
            elif len(olds) == 16:
                add(new.id, olds)
            else:
                joined(new.id, olds)  # type: ignore[misc]
            return olds

        return record

    def _ids_recorder(self) -> Any:
        """``record_ids(new, olds)``: ``new`` derives from the ids ``olds`` (as ``record`` returns them)."""
        add = self.d.id_adder()
        if add is None:
            return _no_record
        joined = self.d.joined_adder()

        def record_ids(new: Node, olds: Any) -> None:
            if len(olds) == 16:
                add(new.id, olds)
            else:
                joined(new.id, olds)  # type: ignore[misc]

        return record_ids

    def close(self, s: int, result: Node) -> Expr:
        """The lets of scope ``s`` around the atom of ``result``."""
        return self._wrap(self.memo[result], self.bindings.pop(s, None))

    def close_body(self, e: Expr) -> Expr:
        """The lets of the body scope around ``e``, the atom of the body, once the walk is done:
        the walk's memory (memo, plan, the map ``pre``) is released first, so the graph form
        of the body is freed (when nothing else holds it) before the lets are built."""
        lst = self.bindings.pop(0, None)
        self.memo.clear()
        self.pre.clear()
        self.scope = {}
        self.inner = {}
        self.mixed = set()
        self.original = None
        return self._wrap(e, lst)

    def _wrap(self, e: Expr, lst: list[Any] | None) -> Expr:
        if lst:
            record_ids = self._ids_recorder()
            for i in range(len(lst) - 3, -1, -3):
                e = Let(lst[i], lst[i + 1], e)
                record_ids(e, lst[i + 2])  # the let node stands for the graph node it binds
                del lst[i:]  # free the triple at once
        return e

    def bind(self, new: Expr, n: Node) -> Expr:
        if self.bind_all or n in self.mixed:
            v = let_var(n, self.ty(n), self.where)  # type: ignore[arg-type]
            s = 0 if self.flat else self.scope[n]
            lst = self.bindings.get(s)
            if lst is None:
                lst = self.bindings[s] = []
            lst += (v, new, self.record(v, n))  # the ids n stands for, not n (see close_body)
            out: Expr = v
        else:
            out = new
        if new is not n:
            self.record(new, n)
        return out

    def visit_Call(self, new: Expr) -> Expr:
        if not new.args and type(new.op) is Constructor:  # type: ignore[attr-defined]
            return new  # a nullary constructor (``Nil``) is a value, an atom like a constant
        return self.bind(new, self.original)

    def visit_Tuple(self, new: Expr) -> Expr:
        return self.bind(new, self.original)

    visit_TupleGetItem = visit_Tuple

    def visit_If(self, new: If) -> Expr:
        n = self.original
        t, f = self.inner[n]
        return self.bind(If(new.cond, self.close(t, n.true_branch), self.close(f, n.false_branch)), n)

    def visit_Function(self, new: Function) -> Expr:
        n = self.original
        sub = self.inner.get(n)
        out = n if sub is None else Function(n.params, self.close(sub[0], n.body), n.ret_type, n.attrs)
        return self.bind(out, n)


def normalize_function(func: Function, mod: Module, *, bind_all: bool, name: str = "") -> Function:
    """``func`` in A-normal form (``bind_all``) or basic-block normal form.

    Existing lets are first inlined (:func:`graph_form`); each compound node is then
    let-bound (A-normal form) or only those used from a scope (``if`` branch, function
    body) other than the one they are placed in (basic-block normal form), in the
    innermost scope enclosing all their uses.  Let variables are annotated with the
    value's type when the body type-checks (the module's typing context), and derived
    from ``name``, the function's name in the module (see :func:`let_var`).  Returns
    ``func`` itself when nothing changes; records lineage only then.
    """
    if func.body._mask & (F_MATCH | F_REF):
        return func  # matches (scopes of their own) and references (effects): left as they are
    with gc_paused():
        return _normalize(func, mod, bind_all, name.encode())


def _normalize(func: Function, mod: Module, bind_all: bool, where: bytes) -> Function:
    d = Derivations()
    dropped: list[Node] | None = [] if d else None
    body, g = graph_form(func.body, into_primitive=False, dropped=dropped)
    if dropped:
        eliminate(*dropped)
    del dropped
    mark = d.mark()
    pre = _graph_lineage(g, d)
    del g
    ctx = TypeContext.of(mod)
    ty: Any = ctx.get if ctx.get(body) is not None else _untyped  # annotate only a body that types
    b = _Bind(_Plan(body), ty, bind_all, d, pre, where)
    b.visit(body)
    atom = b.memo[body]
    del pre, body  # nothing but ``b`` holds the graph form now: close_body frees it
    out = b.close_body(atom)
    if out is func.body:
        d.rollback(mark)  # nothing changed: no lineage
        return func
    return derive(Function(func.params, out, func.ret_type, func.attrs), func)  # type: ignore[return-value]


def _graph_lineage(g: dict[Node, Expr], d: Derivations) -> dict[Node, Any]:
    """Record that the nodes of a :func:`graph_form` map rebuilt by inlining the input's lets
    derive from their originals; return the map from each graph node that stands for other
    than itself to the id(s) of the input node(s) it stands for (concatenated, as bytes).
    (A function of its own, so that no loop variable of the caller's frame keeps a graph node
    alive.)"""
    pre: dict[Node, Any] = {}
    if d and g:
        for n, img in g.items():
            if img is not n:
                d.derive(img, n)
            if type(n) in _COMPOUND:
                cur = pre.get(img)
                pre[img] = n.id if cur is None else cur + n.id  # the ids concatenated (no tuples)
        for same in [i for i, c in pre.items() if c == i.id]:  # itself only
            del pre[same]
    return pre


def _untyped(n: Node) -> None:
    return None


def _no_record(new: Node, n: Any) -> None:
    return None
