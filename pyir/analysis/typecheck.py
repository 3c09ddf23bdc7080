"""Type inference: bottom-up, iterative, cached.

A node's type depends only on its structure unless it contains a call of a
global function (its type comes from the module) or a variable without type
annotation (its type comes from the ``let`` that binds it).  Structural types
are cached on the node itself (a memo of a pure function of an immutable node);
context-dependent ones are cached in a dict owned by the caller (the module).
That is sound because a module binds each variable by one binder node across
all its functions (checked when it is built), and the module remembers which
let bound each unannotated variable, so no later walk can rebind it with
another value and read types computed for the first one.

Passes ask types through one :class:`TypeContext` per module
(``TypeContext.of(mod)``): the types of the module's nodes and of the new nodes
a rewrite builds from them, cached, with global calls typed through the module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import InternalError, PyIRError, TypeCheckError, UnknownOpError, WellFormedError
from ..ir import hooks
from ..ir.adt import (
    F_MATCH,
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    TypeCall,
    TypeVar,
    fresh_unknown,
    is_unknown,
    type_vars_of,
)
from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.node import F_FUNC, F_GLOBAL, F_LET, F_UNTYPED, Node, _set_ty, cached_type
from ..ir.traverse import post_order
from ..ir.types import FuncType, TensorType, TupleType, Type

__all__ = ["infer_type", "check_call", "TypeContext"]

_CONTEXT = F_GLOBAL | F_UNTYPED

# Type relations are pure functions of (operator, attrs, argument types); memoize them.
# Keys hold interned nodes strongly, so the memo is bounded and cleared when full.
_rel_memo: dict[tuple[Any, ...], Type] = {}
_REL_MEMO_MAX = 65536


def _fmt(t: Type) -> str:
    from ..text.printer import type_str

    return type_str(t)


def _where(node: Node) -> str:
    from ..text.printer import short_repr

    return short_repr(node)


def check_call(call: Call, arg_types: tuple[Type, ...]) -> Type:
    """Apply the operator's type relation to a call, with a clear error on failure."""
    op = call.op
    if type(op) is not Op:
        raise InternalError(f"check_call on a call of {type(op).__name__}, not of an Op")
    key = (op, call.attrs, arg_types)
    t = _rel_memo.get(key)
    if t is not None:
        return t
    odef = op.op_def
    try:
        odef.check_arity(len(arg_types))
        t = odef.type_rel(arg_types, call.attrs)
        if len(_rel_memo) > _REL_MEMO_MAX:
            _rel_memo.clear()
        _rel_memo[key] = t
        return t
    except TypeCheckError as e:
        shapes = ", ".join(_fmt(t) for t in arg_types)
        msg = str(e)
        short = op.name.rsplit(".", 1)[-1] + ": "
        if msg.startswith(short):  # the relation already named the op
            msg = msg[len(short):]
        raise TypeCheckError(f"{op.name}: {msg}\n  in {_where(call)}\n  argument types: ({shapes})") from None
    except PyIRError:
        raise
    except Exception as e:  # a relation bug: still name the op and node
        raise TypeCheckError(f"{op.name}: type relation failed with {type(e).__name__}: {e}\n"
                             f"  in {_where(call)}") from e


def infer_type(expr: Expr, mod: Any = None, *, cache: dict[Node, Type] | None = None,
               global_type: Callable[[GlobalVar], Type] | None = None,
               env: dict[Var, Type] | None = None) -> Type:
    """The type of ``expr``; raises TypeCheckError naming the offending node.

    ``mod`` supplies the types of global functions; ``cache`` (default: the
    module's) receives context-dependent types; ``env``, if given, receives the
    types of the let-bound variables without annotation (and may pre-bind some).
    """
    if cache is None:
        cache = mod._type_cache() if mod is not None else {}
    if global_type is None:
        if mod is not None:
            global_type = mod.global_type
        else:
            def global_type(g: GlobalVar) -> Type:
                raise TypeCheckError(f"@{g.name_hint} is a global function: infer types through its module "
                                     "(pyir.infer_type(expr, mod) or mod.type_of(expr))")
    # With a caller-supplied env, walk into let-containing nodes even when their type is
    # already known, so that every let variable gets bound (each such node once).
    want_env = env is not None
    rebound: set[Node] = set()
    if env is None:
        env = {}
    binder: dict[Var, Node] = {}
    # The types in the module's cache below an unannotated let variable are valid for the
    # let that bound it when they were computed: remember that let for the module, so that a
    # later walk (mod.type_of of an expression outside the module) binding the variable with
    # another let fails instead of reading types computed for the other value.
    ctx_binder: dict[Var, Node] = (mod._let_binders() if mod is not None and cache is mod._type_cache()
                                   else binder)

    def known(n: Node) -> Type | None:
        t = getattr(n, "_ty", None)  # cached_type(n), without raising on a miss (half the cost)
        if t is None:
            t = cache.get(n)
        return t

    # Parameter inference (TVM's monomorphic case): a function literal with unannotated
    # parameters is typed where it is used, not where it is written.  It stands for a fresh
    # unknown (``pending``) until a call of it gives its parameters the argument types (or it
    # flows into a parameter of a declared function type, or an annotated let); then its body
    # is typed with them and the unknown unified with its type.  ``subst`` holds the unknowns
    # solved so far; the types stored while solving are substituted at the end.
    subst: dict[Type, Type] = {}
    pending: dict[Node, TypeVar] = {}  # function literal -> the unknown standing for it
    started: set[Node] = set()  # pending functions whose body is being (or was) typed
    provisional: list[Node] = []  # nodes stored with a type holding unknowns while solving
    solving = False

    def resolve(t: Type) -> Type:
        if type(t) is TypeVar:
            r = _walk(t, subst)
            if r is not t:
                subst[t] = r  # path compression
                if type(r) is not TensorType and has_type_vars(r):
                    r = subst_tvars(r, subst)
            return r
        return subst_tvars(t, subst) if has_type_vars(t) else t

    def tyof(n: Node) -> Type:
        k = type(n)
        if k is Var:
            t = n.type_annotation or env.get(n) or cache.get(n)  # type: ignore[attr-defined,call-overload]
            if t is None:
                raise TypeCheckError(f"cannot infer the type of %{n.name_hint}: it has no type annotation "  # type: ignore[attr-defined]
                                     "and is not bound by a let in scope")
            return resolve(t) if solving else t
        if k is GlobalVar:
            return global_type(n)  # type: ignore[arg-type]
        if k is Op:
            raise TypeCheckError(f"operator {n.name} used as a value (call it instead)")  # type: ignore[attr-defined]
        t = known(n)
        if t is None:  # pragma: no cover - the driver computes children first
            raise TypeCheckError(f"internal: no type yet for {_where(n)}")
        return resolve(t) if solving else t

    members: dict[Type, list[Node]] = {}  # a root unknown -> the pending functions it stands for
    roots: list[Node] = []  # the function checked, its unannotated parameters unknowns
    deferred: list[tuple[Node, TypeVar]] = []  # operator calls of unknown arguments, their result

    def solve_node(n: Node, k: type) -> Type:
        """The type of ``n`` while solving: unknowns flow through references, operator calls of
        unknown arguments wait (``deferred``), a declared return type solves the body's unknowns."""
        if k is Call and type(n.op) is Op:  # type: ignore[attr-defined]
            ats = tuple([tyof(a) for a in n.args])  # type: ignore[attr-defined]
            try:
                return check_call(n, ats)  # type: ignore[arg-type]
            except TypeCheckError:
                if not any(type(t) is not TensorType and has_unknowns(t) for t in ats):
                    raise
            u = fresh_unknown()
            deferred.append((n, u))
            return u
        if k is RefRead:
            rt = tyof(n.ref)  # type: ignore[attr-defined]
            if is_unknown(rt):
                u = fresh_unknown()
                _unify_at(rt, RefType(u), subst, n, lambda: "the reference's type and its use")
                return u
        elif k is RefWrite:
            rt, vt = tyof(n.ref), tyof(n.value)  # type: ignore[attr-defined]
            if is_unknown(rt) or (type(rt) is RefType and has_unknowns(rt)) or has_unknowns(vt):
                _unify_at(rt, RefType(vt), subst, n, lambda: "the reference's type and the value written")
                return TupleType([])
        elif k is Function:
            pts = [p.type_annotation or env[p] for p in n.params]  # type: ignore[attr-defined]
            body_t = tyof(n.body)  # type: ignore[attr-defined]
            rt = n.ret_type  # type: ignore[attr-defined]
            if rt is None or not has_unknowns(body_t):
                return _compute_in_place(n, pts, tyof)  # type: ignore[arg-type]
            _unify_at(rt, body_t, subst, n, lambda: "the declared return type and the body's type")
            return FuncType(pts, rt)
        return _compute(n, tyof)

    def pending_class(t: Type) -> list[Node]:
        """The pending functions (not typed yet) that unknown ``t`` (a root) stands for."""
        return [f for f in members.get(t, ()) if f not in started]

    def join(a: Type, b: Type, where: Node, what: Callable[[], str]) -> None:
        """Unify ``a`` and ``b`` (a value flowing where another is expected): their classes of
        pending functions merge; a class solved to a function type has its functions typed."""
        ra, rb = _walk(a, subst), _walk(b, subst)
        _unify_at(a, b, subst, where, what)
        r = _walk(ra, subst)
        merged = [f for x in {ra, rb} for f in members.pop(x, ())]
        if is_unknown(r):
            members.setdefault(r, []).extend(merged)
            return
        r = resolve(r)
        for f in merged:
            if f not in started:
                if type(r) is not FuncType:
                    raise TypeCheckError(f"{_where(where)}: a function is used as a value of type {_fmt(r)}")
                start(f, r.arg_types, where)

    def start(f: Any, types: Sequence[Type], where: Node) -> None:
        """Type pending function ``f`` with parameter types ``types`` (its body, then state 7)."""
        if len(f.params) != len(types):
            raise TypeCheckError(f"{_where(where)}: the function takes {len(f.params)} argument(s), got "
                                 f"{len(types)}")
        started.add(f)
        for v, t in zip(f.params, types):
            if v.type_annotation is None:
                env[v] = t
        push((f, 7))
        push((f.body, 0))

    def store(n: Node, t: Type) -> None:
        if n._mask & _CONTEXT:
            cache[n] = t
        else:
            _set_ty(n, t)

    stack: list[tuple[Node, int]] = [(expr, 0)]
    push = stack.append
    while stack:
        n, state = stack.pop()
        k = type(n)
        if state == 0:
            if k is Var or k is GlobalVar or k is Op:
                continue
            if known(n) is not None:
                if not (want_env and n._mask & (F_LET | F_MATCH)) or n in rebound:
                    continue
                rebound.add(n)
            if k is Let:
                val: Any = n.value  # type: ignore[attr-defined]
                v = n.var  # type: ignore[attr-defined]
                if type(val) is Function and v.type_annotation is None and v not in env and n not in rebound:
                    # a let-bound function may call itself (Relay's recursive let): its variable
                    # has the declared type, or an unknown solved by the function's type
                    if val.ret_type is not None and all(p.type_annotation is not None for p in val.params):
                        env[v] = FuncType([p.type_annotation for p in val.params], val.ret_type)  # type: ignore[misc]
                    elif any(p.type_annotation is None for p in val.params) and known(val) is None:
                        # the function is pending (below): one unknown for it and its variable
                        u = env[v] = pending[val] = fresh_unknown()
                        members[u] = [val]
                        store(val, u)
                        solving = True
                push((n, 2))
                push((n.body, 0))  # type: ignore[attr-defined]
                push((n, 1))
                push((val, 0))
            elif k is Function:
                if n in rebound and all(p.type_annotation is not None or p in cache
                                        for p in n.params):  # type: ignore[attr-defined]
                    for p in n.params:  # type: ignore[attr-defined]  # re-walked: as inferred
                        if p.type_annotation is None:
                            env[p] = cache[p]
                elif n is expr and any(p.type_annotation is None for p in n.params):  # type: ignore[attr-defined]
                    # the function checked (a global function): its unannotated parameters are
                    # unknowns solved by its body and its return type (TVM's type variables)
                    for p in n.params:  # type: ignore[attr-defined]
                        if p.type_annotation is None and p not in env:
                            env[p] = fresh_unknown()
                    roots.append(n)
                    solving = True
                elif any(p.type_annotation is None for p in n.params):  # type: ignore[attr-defined]
                    u = pending[n] = fresh_unknown()  # typed where it is used (see above)
                    members[u] = [n]
                    store(n, u)
                    solving = True
                    continue
                push((n, 2))
                push((n.body, 0))  # type: ignore[attr-defined]
            elif k is Match:  # the data first, then each clause body with its pattern variables bound
                push((n, 2))
                push((n, 3))
                push((n.data, 0))  # type: ignore[attr-defined]
            elif k is Call and type(n.op) is Function and n.op._mask & F_UNTYPED and any(  # type: ignore[attr-defined]
                    p.type_annotation is None for p in n.op.params):  # type: ignore[attr-defined]
                # a function literal called in place, its parameters typed by the arguments (TVM's
                # ``(fn (%x, %y) { ... })(%a, %b)``): the arguments, then its body, then the call
                push((n, 2))
                push((n, 4))
                for c in reversed(n.args):  # type: ignore[attr-defined]
                    push((c, 0))
            else:
                push((n, 2))
                if (k is Call or k is If) and (solving or (n._mask & F_UNTYPED and any(
                        type(c) is Function for c in n.children()))):
                    push((n, 6))
                for c in n.children():
                    push((c, 0))
            continue
        if state == 6:  # solving: a call's children are typed: type the pending functions it uses
            if k is If:
                tt, ft2 = tyof(n.true_branch), tyof(n.false_branch)  # type: ignore[attr-defined]
                if (is_unknown(tt) or is_unknown(ft2)) and tt is not ft2:  # join the two classes
                    join(tt, ft2, n, lambda: "branches have different types")
                continue
            callee = n.op  # type: ignore[attr-defined]
            if type(callee) is Op:
                continue
            ats = [tyof(a) for a in n.args]  # type: ignore[attr-defined]
            ct = tyof(callee)
            if is_unknown(ct):
                fs = pending_class(ct)
                if fs:
                    for f in fs:
                        start(f, ats, n)
                else:  # a function being typed (a recursive call) or a parameter: its type
                    _unify_at(ct, FuncType(ats, fresh_unknown()), subst, n, lambda: "the callee's type")
            elif type(ct) is FuncType:  # a pending function passed where a function type is declared
                for want, got in zip(ct.arg_types, ats):
                    if is_unknown(got) and type(want) is FuncType:
                        for f in pending_class(got):
                            start(f, want.arg_types, n)
            continue
        if state == 7:  # the body of a pending function is typed: its type solves its unknown
            pf: Any = n
            ft = _compute_in_place(pf, [p.type_annotation or env[p] for p in pf.params], tyof)
            u = pending[n]
            _unify_at(u, ft, subst, n, lambda: "the function's type and its uses")
            store(n, ft)
            if has_type_vars(ft):
                provisional.append(n)
            continue
        if state == 1:  # a Let's value is typed: bind its variable
            v = n.var  # type: ignore[attr-defined]
            other = binder.setdefault(v, n)
            if other is n and v.type_annotation is None:
                other = ctx_binder.setdefault(v, n)
            if other is not n:  # shared nodes under both lets would get one type for two values
                raise WellFormedError(f"variable %{v.name_hint} is bound twice (by two lets); use a fresh "
                                      "pyir.var for each binding")
            vt = tyof(n.value)  # type: ignore[attr-defined]
            if solving and is_unknown(vt):
                fs = pending_class(vt)
                ann = v.type_annotation
                if fs and type(ann) is FuncType:  # an annotated let types the function it binds
                    push((n, 1))
                    for f in fs:
                        start(f, ann.arg_types, n)
                    binder.pop(v, None)
                    continue
            pre = env.get(v)
            if pre is not None and v.type_annotation is None and is_unknown(pre):  # a recursive let
                join(pre, vt, n, lambda: "the function's type and its uses inside its value")
            if v.type_annotation is not None and v.type_annotation is not vt:
                if not accepts(v.type_annotation, vt):
                    raise TypeCheckError(f"let %{v.name_hint}: annotated {_fmt(v.type_annotation)} "
                                         f"but the value has type {_fmt(vt)}")
                if not has_unknowns(v.type_annotation):
                    vt = v.type_annotation  # a ? in the annotation: the variable has the declared type
            env[v] = vt
            continue
        if state == 4:  # the arguments of a called function literal are typed: bind its parameters
            fn = n.op  # type: ignore[attr-defined]
            if len(fn.params) != len(n.args):  # type: ignore[attr-defined]
                raise TypeCheckError(f"{_where(n)}: the function takes {len(fn.params)} argument(s), got "
                                     f"{len(n.args)}")  # type: ignore[attr-defined]
            for v, a in zip(fn.params, n.args):  # type: ignore[attr-defined]
                if v.type_annotation is None:
                    env[v] = tyof(a)
            push((fn, 5))
            push((fn.body, 0))
            continue
        if state == 5:  # the body of a function literal called in place is typed: its type
            if known(n) is None:
                lit: Any = n
                pts = [p.type_annotation or env[p] for p in lit.params]
                store(lit, _compute_in_place(lit, pts, tyof))
            continue
        if state == 3:  # a Match's data is typed: bind its pattern variables, then type the clauses
            if mod is not None and n.complete:  # type: ignore[attr-defined]
                check_exhaustive(n, mod)  # type: ignore[arg-type]
            dt = tyof(n.data)  # type: ignore[attr-defined]
            for c in reversed(n.clauses):  # type: ignore[attr-defined]
                for v, t in zip(c.rhs.params, pattern_types(c.lhs, dt, c)):
                    if v.type_annotation is None:
                        env[v] = t
                push((c.rhs.body, 0))
            continue
        if n in rebound:  # typed before the walk, re-walked for its let variables
            continue
        # Not typed yet: a node is expanded once (its state 2 sits above any later state-0 entry
        # of it), so no cache probe here (a probe of an untyped node raises AttributeError).
        t = solve_node(n, k) if solving else _compute(n, tyof)
        store(n, t)
        if solving and has_type_vars(t):
            provisional.append(n)
    if solving:
        while deferred:  # the operator calls whose arguments were unknown: retry until no progress
            rest = []
            for n, u in deferred:
                dats = tuple([tyof(a) for a in n.args])  # type: ignore[attr-defined]
                if any(type(t) is not TensorType and has_unknowns(t) for t in dats):
                    rest.append((n, u))
                    continue
                t = check_call(n, dats)  # type: ignore[arg-type]
                _unify_at(u, t, subst, n, lambda: "the operator's result and its uses")
                store(n, t)
            if len(rest) == len(deferred):
                break
            deferred = rest
        _finish_solving(pending, started, resolve, provisional, env, cache, store, roots)
        if deferred:
            n = deferred[0][0]
            raise TypeCheckError(f"cannot infer the argument types of {_where(n)}: they stay unknown "
                                 f"({', '.join(_fmt(tyof(a)) for a in n.args)})")  # type: ignore[attr-defined]
    return tyof(expr)


def _unify_at(a: Type, b: Type, s: dict[Type, Type], where: Node, what: Callable[[], str]) -> None:
    """:func:`unify` of ``a`` and ``b`` in ``s``; the error names ``where`` and ``what()`` differ."""
    unify(a, b, s, lambda m: TypeCheckError(f"{_where(where)}: {what()} differ: {m}"))


def _finish_solving(pending: dict[Node, TypeVar], started: set[Node], resolve: Callable[[Type], Type],
                    provisional: list[Node], env: dict[Var, Type], cache: dict[Node, Type],
                    store: Callable[[Node, Type], None], roots: Sequence[Node] = ()) -> None:
    """The end of a walk that inferred parameter types: a function never used (so never typed)
    or a parameter left unknown is an error naming the parameter; the solved types replace the
    provisional ones (nodes, let variables) and the parameters' types go into ``cache`` (keyed
    by the parameter: how a later walk, and :meth:`TypeContext.var_type`, find them)."""
    for f in pending:
        if f not in started:
            p = next(p for p in f.params if p.type_annotation is None)  # type: ignore[attr-defined]
            raise TypeCheckError(f"parameter %{p.name_hint} of {_where(f)} has no type annotation and no "
                                 "use of the function gives it one")
    for n in provisional:
        t = cached_type(n) or cache.get(n)
        if t is not None:
            store(n, resolve(t))
    for v, t in env.items():
        if type(t) is not TensorType and has_type_vars(t):
            env[v] = resolve(t)
    for f in [*roots, *pending]:
        for p in f.params:  # type: ignore[attr-defined]
            if p.type_annotation is None:
                t = env[p]
                if has_unknowns(t):
                    raise TypeCheckError(f"parameter %{p.name_hint} of {_where(f)} has no type annotation "
                                         f"and its uses leave its type unknown ({_fmt(t)})")
                cache[p] = t


def _compute(n: Node, tyof: Callable[[Node], Type]) -> Type:
    k = type(n)
    if k is Call:
        op = n.op  # type: ignore[attr-defined]
        arg_types = tuple(tyof(a) for a in n.args)  # type: ignore[attr-defined]
        if type(op) is Op:
            return check_call(n, arg_types)  # type: ignore[arg-type]
        ft = tyof(op)
        if type(ft) is not FuncType:
            raise TypeCheckError(f"calling a non-function of type {_fmt(ft)} in {_where(n)}")
        if len(ft.arg_types) != len(arg_types):
            raise TypeCheckError(f"{_where(n)}: the function takes {len(ft.arg_types)} argument(s), "
                                 f"got {len(arg_types)}")
        poly = type(op) in _GENERIC_CALLEES and has_type_vars(ft)
        for want, got in zip(ft.arg_types, arg_types):
            if want is not got:
                if poly or has_type_vars(want) or has_type_vars(got):
                    return _poly_call_type(n, ft, arg_types, poly)  # type parameters, unknowns
                return _call_type(n, ft, arg_types)  # symbolic parameters, or a mismatch
        if poly:  # every argument as declared: the type parameters the result has, made fresh
            return _poly_call_type(n, ft, arg_types, poly)
        return ft.ret_type
    if k is Constant:
        return TensorType(n.data.shape, n.data.dtype)  # type: ignore[attr-defined]
    if k is Tuple:
        return TupleType(tyof(f) for f in n.fields)  # type: ignore[attr-defined]
    if k is TupleGetItem:
        t = tyof(n.tuple_value)  # type: ignore[attr-defined]
        if type(t) is not TupleType:
            raise TypeCheckError(f"{_where(n)}: indexing a non-tuple of type {_fmt(t)}")
        if not 0 <= n.index < len(t.fields):  # type: ignore[attr-defined]
            raise TypeCheckError(f"{_where(n)}: index {n.index} out of range for {_fmt(t)}")  # type: ignore[attr-defined]
        return t.fields[n.index]  # type: ignore[attr-defined]
    if k is Function:
        body_t = tyof(n.body)  # type: ignore[attr-defined]
        rt = n.ret_type  # type: ignore[attr-defined]
        if rt is not None and rt is not body_t:
            if not accepts(rt, body_t):
                raise TypeCheckError(f"{_where(n)}: declared return type {_fmt(rt)} but the body has type "
                                     f"{_fmt(body_t)}")
            body_t = rt  # a ? in the declared type: the function has the declared type
        return FuncType([p.type_annotation for p in n.params], body_t)  # type: ignore[attr-defined]
    if k is Let:
        return tyof(n.body)  # type: ignore[attr-defined]
    if k is If:
        ct = tyof(n.cond)  # type: ignore[attr-defined]
        if type(ct) is not TensorType or ct.dtype != "bool" or ct.size != 1:
            raise TypeCheckError(f"{_where(n)}: the condition must be a bool scalar, got {_fmt(ct)}")
        tt, ft2 = tyof(n.true_branch), tyof(n.false_branch)  # type: ignore[attr-defined]
        if tt is ft2:
            return tt
        if has_type_vars(tt) or has_type_vars(ft2):
            return join_types(n, [tt, ft2])
        return _join_branches(n, tt, ft2)
    return _compute_adt(n, k, tyof)


def _compute_in_place(n: Function, param_types: list[Type], tyof: Callable[[Node], Type]) -> Type:
    """The type of a function literal whose unannotated parameters the call's arguments typed."""
    body_t = tyof(n.body)
    rt = n.ret_type
    if rt is not None and rt is not body_t:
        if not accepts(rt, body_t):
            raise TypeCheckError(f"{_where(n)}: declared return type {_fmt(rt)} but the body has type "
                                 f"{_fmt(body_t)}")
        body_t = rt
    return FuncType(param_types, body_t)


_GENERIC_CALLEES = (GlobalVar, Constructor, Function)  # callees whose type parameters each call instantiates


def _compute_adt(n: Node, k: type, tyof: Callable[[Node], Type]) -> Type:
    """The type rules of constructors, match and references."""
    if k is Constructor:
        return FuncType(n.inputs, n.result_type)  # type: ignore[attr-defined]
    if k is Match:
        dt = tyof(n.data)  # type: ignore[attr-defined]
        body_types = []
        for c in n.clauses:  # type: ignore[attr-defined]
            for v, t in zip(c.rhs.params, pattern_types(c.lhs, dt, c)):
                if v.type_annotation is not None and not accepts(v.type_annotation, t) \
                        and not accepts(t, v.type_annotation):
                    raise TypeCheckError(f"{_where(n)}: pattern variable %{v.name_hint} is annotated "
                                         f"{_fmt(v.type_annotation)} but matches a value of type {_fmt(t)}")
            body_types.append(tyof(c.rhs.body))
        if not body_types:
            raise TypeCheckError(f"{_where(n)}: a match needs at least one clause")
        return join_types(n, body_types)
    if k is Clause:  # not a value: its function's type (a Match types its clauses itself)
        return tyof(n.rhs)  # type: ignore[attr-defined]
    if k is RefCreate:
        return RefType(tyof(n.value))  # type: ignore[attr-defined]
    if k is RefRead:
        rt = tyof(n.ref)  # type: ignore[attr-defined]
        if type(rt) is RefType:
            return rt.value
        if is_unknown(rt):
            return fresh_unknown()
        raise TypeCheckError(f"{_where(n)}: ref_read of a non-reference of type {_fmt(rt)}")
    if k is RefWrite:
        rt = tyof(n.ref)  # type: ignore[attr-defined]
        vt = tyof(n.value)  # type: ignore[attr-defined]
        if type(rt) is not RefType and not is_unknown(rt):
            raise TypeCheckError(f"{_where(n)}: ref_write to a non-reference of type {_fmt(rt)}")
        if type(rt) is RefType and rt.value is not vt and not accepts(rt.value, vt):
            unify(rt.value, vt, {}, lambda m: TypeCheckError(
                f"{_where(n)}: ref_write of a value of type {_fmt(vt)} to a {_fmt(rt)} ({m})"))
        return TupleType([])
    raise UnknownOpError(f"cannot type a {k.__name__}")


# -- type variables: instantiation, unification ------------------------------------------------------

_TV_MEMO: dict[Type, bool] = {}


def has_type_vars(t: Type) -> bool:
    """Whether ``t`` holds a type variable (a type parameter or an unknown); memoized."""
    k = type(t)
    if k is TensorType:
        return False
    r = _TV_MEMO.get(t)
    if r is None:
        r = bool(type_vars_of(t))
        if len(_TV_MEMO) > _REL_MEMO_MAX:
            _TV_MEMO.clear()
        _TV_MEMO[t] = r
    return r


def has_unknowns(t: Type) -> bool:
    """Whether ``t`` holds an unknown of inference (``_``)."""
    return has_type_vars(t) and any(is_unknown(v) for v in type_vars_of(t))


def subst_tvars(t: Type, mapping: dict[Type, Type], simultaneous: bool = False) -> Type:
    """``t`` with the type variables of ``mapping`` replaced, bound unknowns resolved through
    ``mapping`` too (iterative, memoized over the type DAG); ``simultaneous``: each variable
    replaced once by its image, not resolved further (an instantiation, whose images may hold
    variables of the same names)."""
    if not mapping:
        return t
    if simultaneous:
        return _subst_once(t, mapping)
    memo: dict[Type, Type] = {}
    stack: list[Type] = [t]
    active: set[Type] = set()
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        if type(x) is TypeVar:
            b = mapping.get(x)
            if b is None or b is x:
                memo[x] = x
                stack.pop()
            elif b in memo:
                memo[x] = memo[b]
                stack.pop()
            else:
                if x in active:  # pragma: no cover - the occurs check prevents cycles
                    raise TypeCheckError(f"cyclic type variable binding of {x}")
                active.add(x)
                stack.append(b)
            continue
        kids: Any = x.children()
        todo = [c for c in kids if c not in memo]
        if todo:
            stack.extend(todo)
            continue
        new = [memo[c] for c in kids]
        memo[x] = x if all(a is b for a, b in zip(new, kids)) else x.replace_children(new)  # type: ignore[assignment]
        stack.pop()
    return memo[t]


def _subst_once(t: Type, mapping: dict[Type, Type]) -> Type:
    memo: dict[Type, Type] = {}
    stack: list[Type] = [t]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        if type(x) is TypeVar:
            memo[x] = mapping.get(x, x)
            stack.pop()
            continue
        kids: Any = x.children()
        todo = [c for c in kids if c not in memo]
        if todo:
            stack.extend(todo)
            continue
        new = [memo[c] for c in kids]
        memo[x] = x if all(a is b for a, b in zip(new, kids)) else x.replace_children(new)  # type: ignore[assignment]
        stack.pop()
    return memo[t]


def instantiate(ft: Type) -> Type:
    """``ft`` with each of its type variables replaced by a fresh unknown."""
    tvs = type_vars_of(ft)
    if not tvs:
        return ft
    return subst_tvars(ft, {v: fresh_unknown() for v in tvs})


def _walk(t: Type, s: dict[Type, Type]) -> Type:
    while type(t) is TypeVar and t in s:
        t = s[t]
    return t


def unify(a: Type, b: Type, s: dict[Type, Type], err: Callable[[str], PyIRError]) -> None:
    """Unify ``a`` and ``b``, binding unknowns (only) in ``s``; ``err(message)`` on a mismatch.
    Type parameters are rigid: equal only to themselves.  Tensors must be the same type, up to
    ``?`` dimensions (either way)."""
    stack: list[tuple[Type, Type]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        x, y = _walk(x, s), _walk(y, s)
        if x is y:
            continue
        if is_unknown(x) or is_unknown(y):
            u, t = (x, y) if is_unknown(x) else (y, x)
            if has_type_vars(t) and any(v is u for v in type_vars_of(subst_tvars(t, s))):
                raise err(f"{_fmt(u)} would contain itself in {_fmt(t)}")
            s[u] = t
            continue
        kx = type(x)
        if kx is not type(y):
            raise err(f"{_fmt(x)} is not {_fmt(y)}")
        if kx is TensorType:
            if not (accepts(x, y) or accepts(y, x)):
                raise err(f"{_fmt(x)} is not {_fmt(y)}")
        elif kx is TypeCall:
            if x.func is not y.func or len(x.args) != len(y.args):  # type: ignore[attr-defined]
                raise err(f"{_fmt(x)} is not {_fmt(y)}")
            stack.extend(zip(x.args, y.args))  # type: ignore[attr-defined]
        elif kx is TupleType:
            if len(x.fields) != len(y.fields):  # type: ignore[attr-defined]
                raise err(f"{_fmt(x)} is not {_fmt(y)}")
            stack.extend(zip(x.fields, y.fields))  # type: ignore[attr-defined]
        elif kx is FuncType:
            if len(x.arg_types) != len(y.arg_types):  # type: ignore[attr-defined]
                raise err(f"{_fmt(x)} is not {_fmt(y)}")
            stack.extend(zip(x.arg_types, y.arg_types))  # type: ignore[attr-defined]
            stack.append((x.ret_type, y.ret_type))  # type: ignore[attr-defined]
        elif kx is RefType:
            stack.append((x.value, y.value))  # type: ignore[attr-defined]
        else:
            raise err(f"{_fmt(x)} is not {_fmt(y)}")


def _poly_call_type(n: Node, ft: FuncType, arg_types: tuple[Type, ...], fresh: bool) -> Type:
    """The type of a call whose callee or arguments hold type variables: the callee's type
    parameters instantiated afresh (``fresh``: a global function, constructor or function
    literal), then unified with the argument types."""
    args = n.args  # type: ignore[attr-defined]
    generic = tuple([type(a) in _GENERIC_CALLEES and has_type_vars(t) for a, t in zip(args, arg_types)])
    key = (ft, arg_types, fresh, generic)
    t = _poly_memo.get(key)
    if t is not None:  # a pure function of the types (fresh unknowns are fresh only once: harmless)
        return t
    fi: Any = instantiate(ft) if fresh else ft
    s: dict[Type, Type] = {}
    if any(generic):  # a generic function or constructor passed as a value: instantiated there too
        arg_types = tuple([instantiate(t) if g else t for t, g in zip(arg_types, generic)])
    for i, (want, got) in enumerate(zip(fi.arg_types, arg_types)):
        def err(msg: str, i: int = i, want: Type = want, got: Type = got) -> TypeCheckError:
            return TypeCheckError(f"{_where(n)}: argument {i} has type {_fmt(got)}, expected {_fmt(want)} "
                                  f"({msg})")
        unify(want, got, s, err)
    t = subst_tvars(fi.ret_type, s)
    if len(_poly_memo) > _REL_MEMO_MAX:
        _poly_memo.clear()
    _poly_memo[key] = t
    return t


_poly_memo: dict[tuple[Any, ...], Type] = {}


def join_types(n: Node, types: Sequence[Type]) -> Type:
    """The common type of the branches of an If or the clauses of a Match (unknowns unified)."""
    first = types[0]
    if all(t is first for t in types):
        return first
    if not any(has_type_vars(t) for t in types):
        t = first
        for u in types[1:]:
            t = t if t is u else _join_branches(n, t, u)
        return t
    s: dict[Type, Type] = {}
    for t in types[1:]:
        unify(first, t, s, lambda m: TypeCheckError(
            f"{_where(n)}: branches have different types {', '.join(_fmt(x) for x in types)} ({m})"))
    return subst_tvars(first, s)


def pattern_types(p: Any, data_type: Type, clause: Node) -> list[Type]:
    """The types of the variables of pattern ``p`` (in the order of the clause's parameters)
    matching a value of ``data_type``; a TypeCheckError naming the clause where the pattern
    cannot match such a value."""
    key = (p, data_type)
    memo = _pattern_memo.get(key)
    if memo is not None:
        return memo
    out: list[Type] = []
    stack: list[tuple[Any, Type]] = [(p, data_type)]
    while stack:
        q, t = stack.pop()
        k = type(q)
        if k is PatternVar:
            out.append(t)
        elif k is PatternConstructor:
            c = q.constructor
            if is_unknown(t):
                t = instantiate(c.result_type)
            if type(t) is not TypeCall or t.func is not c.belong_to or len(t.args) != len(c.type_vars):
                raise TypeCheckError(f"{_where(clause)}: pattern {c.name_hint}(...) of type "
                                     f"{c.belong_to.name_hint} cannot match a value of type {_fmt(t)}")
            m: dict[Type, Type] = {TypeVar(v): a for v, a in zip(c.type_vars, t.args)}
            for sub, it in reversed(list(zip(q.patterns, c.inputs))):
                # simultaneous: the type definition's parameter A may be bound to a type holding
                # the function's own parameter A (Option[(A, B)] in a function over [A, B])
                stack.append((sub, subst_tvars(it, m, simultaneous=True)))
        elif k is PatternTuple:
            if type(t) is not TupleType or len(t.fields) != len(q.patterns):
                raise TypeCheckError(f"{_where(clause)}: a tuple pattern of {len(q.patterns)} cannot match a "
                                     f"value of type {_fmt(t)}")
            for sub, ft in reversed(list(zip(q.patterns, t.fields))):
                stack.append((sub, ft))
    if len(_pattern_memo) > _REL_MEMO_MAX:
        _pattern_memo.clear()
    _pattern_memo[key] = out
    return out


_pattern_memo: dict[tuple[Any, Type], list[Type]] = {}

_MAX_PATTERN_DEPTH = 64  # deeper patterns are not checked for exhaustiveness (the check recurses)
_exhaustive_checked: set[bytes] = set()


def check_exhaustive(m: Match, mod: Any) -> None:
    """Raise TypeCheckError if some value escapes every clause of ``m`` (a ``match``, not a
    ``match?``), as TVM's type checker does.  The constructors of each type come from ``mod``'s
    definitions (a type it does not define counts as open: its values need a wildcard).
    Maranget's usefulness check of a row of wildcards, recursing on patterns only."""
    if m.id in _exhaustive_checked:
        return
    rows = [(c.lhs,) for c in m.clauses]
    if any(_pattern_depth(c.lhs) > _MAX_PATTERN_DEPTH for c in m.clauses):
        return
    tds = mod.type_definitions()

    def ctors(c: Constructor) -> tuple[Constructor, ...] | None:
        td = tds.get(c.belong_to.name_hint)
        return None if td is None or c not in td.constructors else td.constructors

    if _useful(rows, 1, ctors):
        raise TypeCheckError(f"{_where(m)}: match is not exhaustive: some values match no clause (add "
                             "clauses, a wildcard clause `_ => ...`, or write match? for a partial match)")
    if len(_exhaustive_checked) > _REL_MEMO_MAX:
        _exhaustive_checked.clear()
    _exhaustive_checked.add(m.id)


def _pattern_depth(p: Any) -> int:
    depth, stack = 0, [(p, 1)]
    while stack:
        q, d = stack.pop()
        depth = max(depth, d)
        stack.extend((c, d + 1) for c in q.children())
    return depth


def _useful(rows: list[tuple[Any, ...]], n: int, ctors: Callable[[Any], Any]) -> bool:
    """Whether a vector of ``n`` wildcards matches a value no row of ``rows`` matches."""
    if n == 0:
        return not rows
    wild = PatternWildcard()
    heads = [r[0] for r in rows]
    tup = next((h for h in heads if type(h) is PatternTuple), None)
    if tup is not None:
        k = len(tup.patterns)
        spec = [(*r[0].patterns, *r[1:]) if type(r[0]) is PatternTuple else (wild,) * k + r[1:] for r in rows]
        return _useful(spec, k + n - 1, ctors)
    used = {h.constructor for h in heads if type(h) is PatternConstructor}
    if used:
        every = ctors(next(iter(used)))
        if every is not None and used == set(every):  # all constructors present: split on each
            for c in every:
                k = len(c.inputs)
                spec = [(*r[0].patterns, *r[1:]) if type(r[0]) is PatternConstructor
                        else (wild,) * k + r[1:]
                        for r in rows if type(r[0]) is not PatternConstructor or r[0].constructor is c]
                if _useful(spec, k + n - 1, ctors):
                    return True
            return False
    default = [r[1:] for r in rows if type(r[0]) not in (PatternConstructor, PatternTuple)]
    return _useful(default, n - 1, ctors)



# -- the typing context of passes ----------------------------------------------------------------


class _TypeFacts:
    """What a module's typing context has learnt (kept in the module's cache; no reference to it)."""

    __slots__ = ("cache", "env", "harvested", "learnt")

    def __init__(self) -> None:
        self.cache: dict[Node, Type] = {}  # context-dependent types of nodes outside the module's functions
        self.env: dict[Var, Type] = {}  # unannotated let variable -> the type of the value bound
        self.harvested = False  # the let variables of the module's functions are in env
        self.learnt: set[bytes] = set()  # ids of other functions whose let variables are in env


class TypeContext:
    """The types of one module's expressions, for passes and rewrites: ask node by node.

    A pass gets it once per module, ``TypeContext.of(mod)`` (shared by every pass
    run on that module, kept with the module's other derived facts), and asks
    ``type_of(e)`` (raises :class:`~pyir.errors.TypeCheckError` when ``e`` cannot be
    typed) or ``get(e)`` / ``ctx(e)`` (None instead) for nodes of the module's
    functions and for new nodes a rewrite builds from them.  ``check(func)`` type-checks
    a function of the module (errors name the offending node).

    * Types are cached once: structural types on the nodes themselves, types that
      depend on context (below a global call or an unannotated let variable) in the
      module's type cache for the module's own nodes and in the context for others.
    * Global calls are typed through the module (``mod.global_type``).
    * An unannotated let variable has the type of the value its let binds in the
      module: a module binds each variable by one binder node, and rewrites keep
      types.  The context learns these types by typing the module's functions, each
      once, when a variable first needs one; ``learn(func)`` adds a function outside
      the module (or the functions of a context without a module).

    >>> import pyir
    >>> x, v = pyir.var("x", shape=(2,)), pyir.var("v")
    >>> mod = pyir.Module({"main": pyir.Function([x], pyir.Let(v, pyir.op.exp(x), pyir.op.nn.relu(v)))})
    >>> ctx = TypeContext.of(mod)
    >>> ctx.type_of(pyir.op.negative(v))           # a new node over the module's let variable
    TensorType((2,), 'float32')
    >>> ctx.get(pyir.op.negative(pyir.var("w"))) is None
    True
    """

    __slots__ = ("mod", "_facts", "_mod_cache")

    def __init__(self, mod: Any = None, functions: Iterable[Function] = ()) -> None:
        self.mod = mod
        if mod is not None:
            facts = mod._cache.get("type_facts")
            if facts is None:
                facts = mod._cache["type_facts"] = _TypeFacts()
            self._mod_cache: dict[Node, Type] = mod._type_cache()
        else:
            facts = _TypeFacts()
            self._mod_cache = facts.cache
        self._facts: _TypeFacts = facts
        for f in functions:
            self.learn(f)

    @classmethod
    def of(cls, mod: Any) -> TypeContext:
        """The typing context of ``mod`` (a fresh one for ``None``)."""
        return cls(mod)

    def check(self, func: Function, order: Sequence[Node] | None = None,
              into: dict[Node, Type] | None = None) -> Type:
        """Type-check ``func``, a function of the module; its FuncType (raises TypeCheckError).

        ``order``, if given, is a walk of ``func.body`` the caller already has (distinct
        nodes, children before parents; it may leave subgraphs out, those are typed on
        demand).  A function whose types need no context (no global call, no let, every
        variable annotated) is then typed along it in one loop, without a walk of its own,
        and ``into`` (a dict), if given, receives the types found on the way (of the nodes
        of ``order`` and of the variables they use): a lookup for the caller cheaper than
        asking node by node.  ``into`` is left as it is when ``func`` is typed otherwise.
        """
        if order is not None and not func._mask & (_CONTEXT | F_LET):
            return _check_along(func, order, {} if into is None else into)
        return infer_type(func, self.mod)

    def learn(self, func: Function) -> None:
        """Learn the types of the let variables of ``func`` (a function outside the module, or
        of a context without one); a function that does not type-check teaches nothing."""
        facts = self._facts
        if func.id in facts.learnt:
            return
        facts.learnt.add(func.id)
        if self.mod is not None and _in_module(self.mod, func):
            return  # a function of the module: harvested with the others
        env: dict[Var, Type] = {}
        try:
            infer_type(func, self.mod, cache=facts.cache, env=env)
        except PyIRError:
            return
        for v, t in env.items():
            facts.env.setdefault(v, t)

    def __call__(self, e: Expr) -> Type | None:
        return self.get(e)

    def get(self, e: Expr) -> Type | None:
        """The type of ``e``, or None when it cannot be typed."""
        t = cached_type(e)
        if t is not None:
            return t
        try:
            return self.type_of(e)
        except PyIRError:
            return None

    def known(self, e: Node) -> Type | None:
        """The type of ``e`` if it is already cached (nothing is computed)."""
        t = cached_type(e)
        if t is None:
            t = self._mod_cache.get(e)
            if t is None:
                t = self._facts.cache.get(e)
        return t

    def var_type(self, v: Var) -> Type | None:
        """The type of variable ``v``: its annotation, the type of the value its let binds, or
        (an unannotated parameter) the type the uses of its function give it."""
        t = v.type_annotation
        if t is not None:
            return t
        facts = self._facts
        t = facts.env.get(v)
        if t is None:  # an unannotated parameter, typed by the uses of its function
            t = self._mod_cache.get(v) or facts.cache.get(v)
        if t is None and not facts.harvested:
            self._harvest()
            t = facts.env.get(v) or self._mod_cache.get(v)
        return t

    def type_of(self, e: Expr) -> Type:
        """The type of ``e`` (raises TypeCheckError when it cannot be typed)."""
        k = type(e)
        if k is Var:  # never cached: its annotation or its let's value (no cache miss to pay)
            t = e.type_annotation  # type: ignore[attr-defined]
            if t is not None:
                return t
        t = self.known(e)
        if t is not None:
            return t
        if k is Var:
            t = self.var_type(e)  # type: ignore[arg-type]
            if t is None:
                raise TypeCheckError(f"cannot infer the type of %{e.name_hint}: it has no type annotation "  # type: ignore[attr-defined]
                                     "and no let of the module binds it")
            return t
        if k is Op:
            raise TypeCheckError(f"operator {e.name} used as a value (call it instead)")  # type: ignore[attr-defined]
        if k is GlobalVar:
            return self._global_type(e)  # type: ignore[arg-type]
        if not e._mask & _CONTEXT:
            return _structural_type(e)
        return self._infer(e)

    def _global_type(self, g: GlobalVar) -> Type:
        if self.mod is None:
            raise TypeCheckError(f"@{g.name_hint} is a global function: it is typed through its module")
        return self.mod.global_type(g)

    def _harvest(self) -> None:
        facts = self._facts
        facts.harvested = True
        if self.mod is None:
            return
        for f in self.mod.functions().values():
            if not f._mask & (F_LET | F_MATCH | F_UNTYPED):
                continue
            env: dict[Var, Type] = {}
            try:
                infer_type(f, self.mod, env=env)
            except PyIRError:
                continue  # a function that does not type-check teaches nothing
            for v, t in env.items():
                facts.env.setdefault(v, t)

    def _infer(self, e: Expr) -> Type:
        """Type a node outside the module's functions: bottom-up, iteratively, variables typed by
        the module (:meth:`var_type`)."""
        known = self.known
        cache = self._facts.cache
        if e._mask & F_MATCH or (e._mask & F_FUNC and e._mask & F_UNTYPED):
            # clause functions bind their pattern variables, called function literals their
            # parameters: the driver's walk
            return infer_type(e, self.mod, cache=cache, env=dict(self._facts.env))

        def tyof(n: Node) -> Type:
            k = type(n)
            if k is Var:
                t = self.var_type(n)  # type: ignore[arg-type]
                if t is None:
                    raise TypeCheckError(f"cannot infer the type of %{n.name_hint}: it has no type "  # type: ignore[attr-defined]
                                         "annotation and no let of the module binds it")
                return t
            if k is GlobalVar:
                return self._global_type(n)  # type: ignore[arg-type]
            if k is Op:
                raise TypeCheckError(f"operator {n.name} used as a value (call it instead)")  # type: ignore[attr-defined]
            t = known(n)
            if t is None:  # pragma: no cover - the walk types children first
                raise InternalError(f"no type yet for {_where(n)}")
            return t

        def stop(n: Node) -> bool:
            return type(n) in _LEAVES or known(n) is not None

        for n in post_order(e, stop=stop):
            if type(n) in _LEAVES or known(n) is not None:
                continue
            if type(n) is Function:
                for p in n.params:
                    if p.type_annotation is None:
                        raise TypeCheckError(f"parameter %{p.name_hint} of {_where(n)} has no type "
                                             "annotation")
            t = _compute(n, tyof)
            if n._mask & _CONTEXT:
                cache[n] = t
            else:
                _set_ty(n, t)
        return tyof(e)


_LEAVES = (Var, GlobalVar, Op)


def _check_along(func: Function, order: Sequence[Node], tys: dict[Node, Type]) -> Type:
    """:meth:`TypeContext.check` of a function without context (no global call, no let, no
    unannotated variable: every type is structural, cached on its node), along ``order``.

    One loop, children first, without the walk's stack or a cache probe per node (a probe of
    an untyped node costs a raised AttributeError): each node of ``order`` is typed from its
    children's types (a node typed before gets the same type again: relations are pure and
    memoized, types hash-consed); a child outside ``order`` is typed on demand.  Same types,
    same errors as :func:`infer_type` (which it falls back to when the body is typed already).
    ``tys`` receives the types found.
    """
    t = cached_type(func)
    if t is not None:
        return t
    body = func.body
    if type(body) is Var or cached_type(body) is not None:
        return infer_type(func)  # nothing to walk below the function
    for p in func.params:  # as infer_type: before the body
        if p.type_annotation is None:
            raise TypeCheckError(f"parameter %{p.name_hint} of {_where(func)} has no type annotation")
    get = tys.get
    memo_get = _rel_memo.get

    def tyof(n: Node) -> Type:
        t = get(n)
        if t is not None:
            return t
        k = type(n)
        if k is Var:
            t = n.type_annotation  # type: ignore[attr-defined]
            if t is None:  # pragma: no cover - an unannotated variable sets F_UNTYPED: not here
                raise InternalError(f"untyped %{n.name_hint} below a function without context")  # type: ignore[attr-defined]
            tys[n] = t
            return t
        if k is Op:
            raise TypeCheckError(f"operator {n.name} used as a value (call it instead)")  # type: ignore[attr-defined]
        t = cached_type(n)
        if t is None:  # a subgraph the caller's walk left out (a constant, a primitive function)
            t = infer_type(n)  # type: ignore[arg-type]
        tys[n] = t
        return t

    for n in order:
        k = type(n)
        if k is Call:
            op = n.op  # type: ignore[attr-defined]
            if type(op) is Op:
                ats = []
                for a in n.args:  # type: ignore[attr-defined]
                    t = get(a)
                    ats.append(tyof(a) if t is None else t)
                arg_types = tuple(ats)
                t = memo_get((op, n.attrs, arg_types))  # type: ignore[attr-defined]
                if t is None:
                    t = check_call(n, arg_types)  # type: ignore[arg-type]
                _set_ty(n, t)
                tys[n] = t
                continue
        elif k is Var or k is Op or k is GlobalVar:
            continue
        elif k is Function:
            for p in n.params:  # type: ignore[attr-defined]
                if p.type_annotation is None:
                    raise TypeCheckError(f"parameter %{p.name_hint} of {_where(n)} has no type annotation")
        elif k is Constant:
            t = cached_type(n)
            if t is not None:
                tys[n] = t
                continue
        t = _compute(n, tyof)
        _set_ty(n, t)
        tys[n] = t
    t = _compute(func, tyof)
    _set_ty(func, t)
    return t


def _in_module(mod: Any, func: Function) -> bool:
    return any(f is func for f in mod.functions().values())


def _structural_type(e: Expr) -> Type:
    """The type of an expression without context (no global call, no unannotated variable),
    cached on the nodes: calls of operators by a cheap explicit-stack walk down to typed nodes."""
    if type(e) is not Call or type(e.op) is not Op:
        return infer_type(e)
    stack: list[Expr] = [e]
    while stack:
        n = stack[-1]
        if cached_type(n) is not None:
            stack.pop()
            continue
        if type(n) is not Call or type(n.op) is not Op:
            infer_type(n)
            stack.pop()
            continue
        ats: list[Type] = []
        for a in n.args:
            ta = cached_type(a)
            if ta is None and type(a) is Var:
                ta = a.type_annotation
            if ta is None:
                stack.append(a)
            elif stack[-1] is n:
                ats.append(ta)
        if stack[-1] is n:
            _set_ty(n, check_call(n, tuple(ats)))
            stack.pop()
    return cached_type(e)


hooks.register(infer_type=infer_type)


# -- symbolic dimensions: calls of functions with symbolic parameters, If branches --------------------


def dim_pairs(want: Type, got: Type, where: str, err: Callable[[str], PyIRError],
              same: bool = False) -> list[tuple[Any, Any, str]]:
    """The (declared, actual, where) dimension pairs of two types of the same structure
    (tensors of one dtype and rank, tuples of as many fields; function types must be the same);
    ``err(message)`` builds the error raised where the structures differ.  Identical types
    give no pairs unless ``same`` (then their symbolic dimensions pair with themselves)."""
    out: list[tuple[Any, Any, str]] = []
    stack: list[tuple[Type, Type, str]] = [(want, got, where)]
    while stack:
        w, g, at = stack.pop()
        kw = type(w)
        if w is g and not (same and (kw is TupleType or (kw is TensorType and not w.static))):  # type: ignore[attr-defined]
            continue
        if kw is TensorType and type(g) is TensorType:
            if w.dtype == g.dtype and w.ndim == g.ndim:  # type: ignore[attr-defined]
                out.extend((a, b, f"{at}, dimension {i}")
                           for i, (a, b) in enumerate(zip(w.shape, g.shape)))  # type: ignore[attr-defined]
                continue
        elif kw is TupleType and type(g) is TupleType and len(w.fields) == len(g.fields):  # type: ignore[attr-defined]
            stack.extend((a, b, f"{at}, field {i}")
                         for i, (a, b) in reversed(list(enumerate(zip(w.fields, g.fields)))))  # type: ignore[attr-defined]
            continue
        raise err(f"{at} has type {_fmt(g)}, expected {_fmt(w)}")
    return out


def bind_dims(pairs: Iterable[tuple[Any, Any, str]], err: Callable[[str], PyIRError],
              bindings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Bind the symbols of declared dimensions to actual ones, and check the rest.

    ``pairs`` are (declared, actual, where) triples.  A declared symbol is bound by the
    actual dimension (``?`` binds nothing); a symbol bound twice to provably different
    values is an error naming the symbol, both values and where they come from.  Then
    declared expressions with one unbound symbol, linear in it (``n * 3 + 1``), bind it from
    an int; at last every declared dimension, substituted, must not be provably different
    from the actual one (``?`` on either side accepts).  Returns the bindings."""
    from ..ir.dims import AnyDim, DimPoly, Sym, dims_equal, free_syms, substitute

    binds: dict[str, Any] = {} if bindings is None else bindings
    source: dict[str, str] = {}
    rest: list[tuple[Any, Any, str]] = []
    for want, got, at in pairs:
        if type(want) is int:
            if type(got) is int and want != got:
                raise err(f"{at} is {got}, expected {want}")
            rest.append((want, got, at))
        elif type(want) is Sym:
            if type(got) is AnyDim:
                continue
            name = want.name
            prev = binds.get(name)
            if prev is None or type(prev) is AnyDim:
                binds[name] = got
                source[name] = at
            elif prev is not got:
                eq = dims_equal(prev, got)
                if eq is False:
                    src = source.get(name)
                    raise err(f"symbol {name} is {_dim(prev)} ({src or 'given'}) and {_dim(got)} ({at})")
                if type(got) is int:  # keep the better-known value
                    binds[name] = got
                    source[name] = at
        elif type(want) is not AnyDim:
            rest.append((want, got, at))
    for want, got, at in rest:  # solve n * a + c == k for one unbound symbol n
        if type(want) is not DimPoly or type(got) is not int or len(want.terms) != 1:
            continue
        (mono, coef), = want.terms
        if len(mono) != 1 or type(mono[0]) is not Sym or mono[0].name in binds:
            continue
        q, r = divmod(got - want.const, coef)
        if r or q < 0:
            raise err(f"{at} is {got}, which {_dim(want)} cannot be for any value of {mono[0].name}")
        binds[mono[0].name] = q
        source[mono[0].name] = at
    for want, got, at in rest:
        w = substitute(want, binds) if binds and type(want) is not int else want
        if type(w) is AnyDim or type(got) is AnyDim or w is got:
            continue
        if dims_equal(w, got) is False:
            named = ", ".join(f"{k} = {_dim(binds[k])}" for k in sorted(free_syms(want)) if k in binds)
            raise err(f"{at} is {_dim(got)}, expected {_dim(want)}"
                      + (f" = {_dim(w)} ({named})" if named else ""))
    return binds


def _dim(d: Any) -> str:
    from ..ir.dims import dim_str

    return str(d) if type(d) is int else dim_str(d, 40)


def subst_type(t: Type, bindings: dict[str, Any]) -> Type:
    """``t`` with the symbols named in ``bindings`` substituted in every tensor shape (iterative)."""
    from ..ir.dims import substitute

    if not bindings:
        return t
    memo: dict[Type, Type] = {}
    stack: list[Type] = [t]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        k = type(x)
        if k is TensorType:
            memo[x] = x if x.static else TensorType(  # type: ignore[attr-defined]
                tuple(d if type(d) is int else substitute(d, bindings) for d in x.shape), x.dtype)  # type: ignore[attr-defined]
        elif k is TupleType or k is FuncType:
            kids = list(x.fields) if k is TupleType else [*x.arg_types, x.ret_type]  # type: ignore[attr-defined]
            todo = [c for c in kids if c not in memo]
            if todo:
                stack.extend(todo)
                continue
            new = [memo[c] for c in kids]
            if all(a is b for a, b in zip(new, kids)):
                memo[x] = x
            else:
                memo[x] = TupleType(new) if k is TupleType else FuncType(new[:-1], new[-1])
        else:
            memo[x] = x
        stack.pop()
    return memo[t]


def type_syms(t: Type) -> set[str]:
    """The names of the symbols in the tensor shapes of ``t``."""
    from ..ir.dims import free_syms

    out: set[str] = set()
    stack: list[Type] = [t]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        k = type(x)
        if k is TensorType:
            if not x.static:  # type: ignore[attr-defined]
                for d in x.shape:  # type: ignore[attr-defined]
                    if type(d) is not int:
                        out |= free_syms(d)
        elif k is TupleType:
            stack.extend(x.fields)  # type: ignore[attr-defined]
        elif k is FuncType:
            stack.extend(x.arg_types)  # type: ignore[attr-defined]
            stack.append(x.ret_type)  # type: ignore[attr-defined]
    return out


def _call_type(n: Node, ft: FuncType, arg_types: tuple[Type, ...]) -> Type:
    """The type of a call of a function whose parameter types differ from the argument types:
    the function's symbols are bound from the arguments for this call (a conflict is an error
    naming the symbol and both values) and its return type substituted; symbols of the return
    type that no argument binds become ``?``."""
    def err(msg: str) -> TypeCheckError:
        takes, got = ", ".join(map(_fmt, ft.arg_types)), ", ".join(map(_fmt, arg_types))
        return TypeCheckError(f"{_where(n)}: {msg}\n  the function takes ({takes}), got ({got})")

    pairs: list[tuple[Any, Any, str]] = []
    for i, (want, got) in enumerate(zip(ft.arg_types, arg_types)):
        pairs += dim_pairs(want, got, f"argument {i}", err, same=True)
    binds = bind_dims(pairs, err)
    free = type_syms(ft.ret_type)
    if not free:
        return ft.ret_type
    from ..ir.dims import Any as ANY_DIM

    for name in free:
        if name not in binds:  # not determined by the arguments
            binds[name] = ANY_DIM
    return subst_type(ft.ret_type, binds)


def _join_branches(n: Node, tt: Type, ft: Type) -> Type:
    """The type of an If whose branches have different types: the same structure and dtypes,
    each dimension the same in both branches (symbolic dimensions by identity), or ``?`` in one
    of them (then the If's dimension is ``?``); else a TypeCheckError."""
    from ..ir.dims import Any as ANY_DIM

    def err(msg: str) -> TypeCheckError:
        return TypeCheckError(f"{_where(n)}: branches have different types {_fmt(tt)} and {_fmt(ft)}"
                              + (f" ({msg})" if msg else ""))

    memo: dict[tuple[Type, Type], Type] = {}
    stack: list[tuple[Type, Type]] = [(tt, ft)]
    while stack:
        a, b = pair = stack[-1]
        if pair in memo:
            stack.pop()
            continue
        if a is b:
            memo[pair] = a
        elif type(a) is TensorType and type(b) is TensorType and a.dtype == b.dtype and a.ndim == b.ndim:
            shape = []
            for i, (x, y) in enumerate(zip(a.shape, b.shape)):
                if x is y or (type(x) is int and x == y):
                    shape.append(x)
                elif x is ANY_DIM or y is ANY_DIM:
                    shape.append(ANY_DIM)
                else:
                    raise err(f"dimension {i}: {_dim(x)} in the true branch, {_dim(y)} in the false branch")
            memo[pair] = TensorType(shape, a.dtype)
        elif type(a) is TupleType and type(b) is TupleType and len(a.fields) == len(b.fields):
            kids = list(zip(a.fields, b.fields))
            todo = [k for k in kids if k not in memo]
            if todo:
                stack.extend(todo)
                continue
            memo[pair] = TupleType([memo[k] for k in kids])
        else:
            raise err("")
        stack.pop()
    return memo[(tt, ft)]


def accepts(declared: Type, actual: Type) -> bool:
    """Whether a value of type ``actual`` fits the annotation ``declared``: the same type, or
    the same structure where each dimension of ``declared`` is ``?`` or equal to ``actual``'s
    (``Tensor[(?, 3)]`` accepts ``Tensor[(n, 3)]`` and ``Tensor[(2, 3)]``).  Iterative."""
    from ..ir.dims import Any as ANY_DIM

    stack: list[tuple[Type, Type]] = [(declared, actual)]
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        if is_unknown(a) or is_unknown(b):  # an unknown of inference fits (and accepts) anything
            continue
        ka = type(a)
        if ka is not type(b):
            return False
        if ka is TensorType:
            if a.dtype != b.dtype or a.ndim != b.ndim:  # type: ignore[attr-defined]
                return False
            for x, y in zip(a.shape, b.shape):  # type: ignore[attr-defined]
                if not (x is y or x is ANY_DIM or (type(x) is int and x == y)):
                    return False
        elif ka is TupleType:
            fa, fb = a.fields, b.fields  # type: ignore[attr-defined]
            if len(fa) != len(fb):
                return False
            stack.extend(zip(fa, fb))
        elif ka is FuncType:  # parameters must match exactly; the result may be more general
            if a.arg_types != b.arg_types:  # type: ignore[attr-defined]
                return False
            stack.append((a.ret_type, b.ret_type))  # type: ignore[attr-defined]
        elif ka is TypeCall:
            if a.func is not b.func or len(a.args) != len(b.args):  # type: ignore[attr-defined]
                return False
            stack.extend(zip(a.args, b.args))  # type: ignore[attr-defined]
        elif ka is RefType:
            stack.append((a.value, b.value))  # type: ignore[attr-defined]
        else:
            return False
    return True
