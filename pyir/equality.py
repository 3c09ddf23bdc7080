"""Equality queries: structural (identity) and alpha-equivalence.

* **Structural** equality is identity: nodes are hash-consed, so two
  structurally equal expressions are one object.  :func:`structural_equal` is
  ``a is b`` and :func:`structural_hash` is an int taken from the node's 128-bit
  content id (computed once at construction), so both are O(1).
* **Alpha** equality (:func:`alpha_equal`) also accepts a consistent renaming of
  bound variables (Function parameters, Let variables).  Bound variables must
  correspond one-to-one and carry identical type annotations; free variables
  must be the same object, unless ``map_free_vars=True`` (then they are mapped
  consistently and bijectively, again with identical annotations).
* :func:`alpha_hash` is a 128-bit digest invariant under alpha-renaming.

How the alpha hash is computed
------------------------------
A subterm without any variable (no ``F_VAR`` bit in its summary mask) is its
own canonical form: its content id already is a process-stable, context-free
hash, and we use it as is (no walk below it).  Every other node is hashed
bottom-up, iteratively, *in an environment*: the list of binders entered on the
way down from the root.  A bound variable hashes as a marker ``(binder level,
position)`` (de Bruijn levels), a free variable by its id.  A node's digest
depends on its environment, so digests are memoized per ``(environment, node)``
during one walk, and only results computed at the root (empty environment),
where they are context-free, are stored in the global weak cache.  Each
environment keeps a persistent map (``pyrsistent.pmap``), so a 10^5-deep Let
chain costs O(n log n), and a DAG inside one scope is walked once.

Stability: closed terms (every variable bound) hash alike in every process.  A
free variable hashes by its id, which includes its process-unique ``uid``; it
is stable across processes only when the variable itself is (e.g. deserialized).

:func:`alpha_equal` checks ``a is b`` first, then compares alpha hashes (O(1)
once cached), and only when they match runs an exact iterative parallel walk;
positive answers are cached by the pair of content ids (content ids determine
the structure, so a cached answer never goes stale).
"""

from __future__ import annotations

import weakref
from typing import Any

from pyrsistent import pmap
from xxhash import xxh3_128_digest

from .errors import WellFormedError
from .expr import Call, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from .module import Module
from .node import F_VAR, Node, gc_paused

__all__ = ["structural_equal", "structural_hash", "alpha_equal", "alpha_hash", "clear_caches", "gc_paused"]

_digest = xxh3_128_digest
_NONE = b"\x00" * 16

_hash_cache: weakref.WeakKeyDictionary[Node, bytes] = weakref.WeakKeyDictionary()
_equal_cache: dict[tuple[bytes, bytes, bool], bool] = {}
_EQUAL_CACHE_LIMIT = 1 << 16
_marker_cache: dict[tuple[int, int], bytes] = {}


def clear_caches() -> None:
    """Forget every cached alpha hash and alpha-equality answer (for benchmarks)."""
    _hash_cache.clear()
    _equal_cache.clear()



# -- structural -------------------------------------------------------------------------------


def structural_equal(a: Any, b: Any) -> bool:
    """Structural equality: identity for nodes (hash-consing), same functions for modules.

    >>> import pyir
    >>> structural_equal(pyir.const(1.0), pyir.const(1.0))
    True
    """
    if isinstance(a, Module) and isinstance(b, Module):
        if a is b:
            return True
        fa, fb = a.functions(), b.functions()
        return len(fa) == len(fb) and all(fb.get(k) is f for k, f in fa.items())
    return a is b


def structural_hash(x: Any) -> int:
    """A stable 64-bit int from the content id (identity + cached content hash, O(1)).

    For a module: combines the names and function ids (O(number of functions)).
    """
    if isinstance(x, Module):
        parts = b"".join(name.encode() + b"\x00" + f.id for name, f in sorted(x.functions().items()))
        return int.from_bytes(_digest(b"M" + parts)[:8], "little")
    if not isinstance(x, Node):
        raise WellFormedError(f"structural_hash takes a node or a module, got {type(x).__name__}")
    return int.from_bytes(x.id[:8], "little")


# -- alpha hash ---------------------------------------------------------------------------------


class _Env:
    """Binders entered on the way down from the root: var -> marker digest."""

    __slots__ = ("depth", "memo", "vars")

    def __init__(self, vars_: Any, depth: int) -> None:
        self.vars = vars_
        self.depth = depth
        self.memo: dict[Node, bytes] = {}


def _marker(level: int, index: int) -> bytes:
    key = (level, index)
    m = _marker_cache.get(key)
    if m is None:
        m = _marker_cache[key] = _digest(b"B%d,%d" % key)
    return m


def _ann(v: Var) -> bytes:
    t = v.type_annotation
    return t.id if t is not None else _NONE


def alpha_hash(x: Expr | Module) -> bytes:
    """A 16-byte digest equal for alpha-equivalent expressions (see the module docstring).

    Cached per node: the second call on the same node is a dictionary lookup.
    For a module: a digest of the names and each function's alpha hash.
    """
    if isinstance(x, Module):
        return _digest(b"M" + b"".join(n.encode() + b"\x00" + alpha_hash(f) for n, f in x.items()))
    if not isinstance(x, Expr):
        raise WellFormedError(f"alpha_hash takes an expression or a module, got {type(x).__name__}")
    if not (x._mask & F_VAR) or type(x) is Var:
        return x.id  # variable-free nodes and free variables: the content id is canonical
    h = _hash_cache.get(x)
    if h is not None:
        return h
    with gc_paused():
        return _alpha_walk(x)


def _alpha_walk(root: Expr) -> bytes:
    env0 = _Env(pmap(), 0)
    cache = _hash_cache
    stack: list[Any] = [(root, env0, None)]
    push = stack.append
    pop = stack.pop

    def res(c: Node, env: _Env) -> bytes:
        if not (c._mask & F_VAR):
            return c.id
        if type(c) is Var:
            m = env.vars.get(c)
            return m if m is not None else c.id
        return env.memo[c]

    while stack:
        n, env, inner = pop()
        memo = env.memo
        if inner is None:  # first visit: schedule children
            if n in memo:
                continue
            if env is env0:
                h = cache.get(n)
                if h is not None:
                    memo[n] = h
                    continue
            k = type(n)
            if k is Function:
                depth = env.depth + 1
                vs = env.vars
                for i, p in enumerate(n.params):
                    vs = vs.set(p, _marker(depth, i))
                sub = _Env(vs, depth)
                push((n, env, sub))
                b = n.body
                if b._mask & F_VAR and type(b) is not Var:
                    push((b, sub, None))
                continue
            if k is Let:
                depth = env.depth + 1
                sub = _Env(env.vars.set(n.var, _marker(depth, 0)), depth)
                push((n, env, sub))
                b = n.body
                if b._mask & F_VAR and type(b) is not Var:
                    push((b, sub, None))
                v = n.value
                if v._mask & F_VAR and type(v) is not Var and v not in memo:
                    push((v, env, None))
                continue
            push((n, env, env))
            for c in n.children():
                if c._mask & F_VAR and type(c) is not Var and c not in memo:
                    push((c, env, None))
            continue
        if n in memo:
            continue
        k = type(n)
        if k is Call:
            op = n.op
            opd = b"o" + op.id if type(op) is Op else b"e" + res(op, env)
            args = n.args
            h = _digest(b"".join((b"C%d:" % len(args), opd, n.attrs.id, *[res(a, env) for a in args])))
        elif k is Tuple:
            fs = n.fields
            h = _digest(b"".join((b"T%d:" % len(fs), *[res(f, env) for f in fs])))
        elif k is TupleGetItem:
            h = _digest(b"I%d:" % n.index + res(n.tuple_value, env))
        elif k is If:
            h = _digest(b"?" + res(n.cond, env) + res(n.true_branch, env) + res(n.false_branch, env))
        elif k is Function:
            rt = n.ret_type
            h = _digest(b"".join((b"F%d:" % len(n.params), n.attrs.id, rt.id if rt is not None else _NONE,
                                  *[_ann(p) for p in n.params], res(n.body, inner))))
        elif k is Let:
            h = _digest(b"L" + _ann(n.var) + res(n.value, env) + res(n.body, inner))
        else:  # pragma: no cover - leaves without variables never get here
            h = n.id
        memo[n] = h
        if env is env0 and (k is Function or n is root):
            cache[n] = h
    return env0.memo[root]


# -- alpha equality -----------------------------------------------------------------------------


class _Scope:
    __slots__ = ("a2b", "b2a", "seen")

    def __init__(self, a2b: Any, b2a: Any) -> None:
        self.a2b = a2b
        self.b2a = b2a
        self.seen: set[tuple[Node, Node]] = set()


def alpha_equal(a: Any, b: Any, *, map_free_vars: bool = False) -> bool:
    """True if ``a`` and ``b`` are equal up to a consistent renaming of bound variables.

    Works on expressions and on modules (same names, alpha-equal functions).

    >>> import pyir
    >>> x, y = pyir.var("x", shape=(2,)), pyir.var("y", shape=(2,))
    >>> alpha_equal(pyir.Function([x], pyir.op.nn.relu(x)), pyir.Function([y], pyir.op.nn.relu(y)))
    True
    >>> alpha_equal(pyir.op.nn.relu(x), pyir.op.nn.relu(y))
    False
    >>> alpha_equal(pyir.op.nn.relu(x), pyir.op.nn.relu(y), map_free_vars=True)
    True
    """
    if a is b:
        return True
    if isinstance(a, Module) or isinstance(b, Module):
        if not (isinstance(a, Module) and isinstance(b, Module)):
            return False
        fa, fb = a.functions(), b.functions()
        if set(fa) != set(fb):
            return False
        return all(alpha_equal(f, fb[k], map_free_vars=map_free_vars) for k, f in fa.items())
    if not isinstance(a, Expr) or not isinstance(b, Expr):
        raise WellFormedError(f"alpha_equal takes expressions or modules, got {type(a).__name__} "
                              f"and {type(b).__name__}")
    if type(a) is not type(b) or not (a._mask & F_VAR) or not (b._mask & F_VAR):
        return False
    if not map_free_vars and alpha_hash(a) != alpha_hash(b):
        return False
    key = (a.id, b.id, map_free_vars)
    if _equal_cache.get(key):
        return True
    with gc_paused():
        ok = _parallel_walk(a, b, map_free_vars)
    if ok:
        if len(_equal_cache) >= _EQUAL_CACHE_LIMIT:
            _equal_cache.clear()
        _equal_cache[key] = True
    return ok


def _parallel_walk(a: Expr, b: Expr, map_free_vars: bool) -> bool:
    """Exact, iterative comparison of two graphs under a scoped bijection of bound vars."""
    free_a2b: dict[Node, Node] = {}
    free_b2a: dict[Node, Node] = {}
    stack: list[tuple[Node, Node, _Scope]] = [(a, b, _Scope(pmap(), pmap()))]
    push = stack.append
    pop = stack.pop
    while stack:
        x, y, sc = pop()
        if x is y and not (x._mask & F_VAR):
            continue
        k = type(x)
        if k is not type(y):
            return False
        if k is Var:
            mx = sc.a2b.get(x)
            my = sc.b2a.get(y)
            if mx is not None or my is not None:
                if mx is not y or my is not x:
                    return False
                continue
            if not map_free_vars:
                if x is not y:
                    return False
                continue
            fx = free_a2b.get(x)
            fy = free_b2a.get(y)
            if fx is None and fy is None:
                if x.type_annotation is not y.type_annotation:
                    return False
                free_a2b[x] = y
                free_b2a[y] = x
            elif fx is not y or fy is not x:
                return False
            continue
        if not (x._mask & F_VAR) or not (y._mask & F_VAR):
            return False  # a variable-free node is alpha-equal only to itself
        pair = (x, y)
        if pair in sc.seen:
            continue
        sc.seen.add(pair)
        if k is Call:
            if x.attrs is not y.attrs or len(x.args) != len(y.args):
                return False
            if type(x.op) is Op or type(y.op) is Op:
                if x.op is not y.op:
                    return False
            else:
                push((x.op, y.op, sc))
            for c, d in zip(x.args, y.args):
                push((c, d, sc))
        elif k is Tuple:
            if len(x.fields) != len(y.fields):
                return False
            for c, d in zip(x.fields, y.fields):
                push((c, d, sc))
        elif k is TupleGetItem:
            if x.index != y.index:
                return False
            push((x.tuple_value, y.tuple_value, sc))
        elif k is If:
            push((x.cond, y.cond, sc))
            push((x.true_branch, y.true_branch, sc))
            push((x.false_branch, y.false_branch, sc))
        elif k is Function:
            ps, qs = x.params, y.params
            if (len(ps) != len(qs) or x.attrs is not y.attrs or x.ret_type is not y.ret_type
                    or any(p.type_annotation is not q.type_annotation for p, q in zip(ps, qs))):
                return False
            a2b, b2a = sc.a2b, sc.b2a
            for p, q in zip(ps, qs):
                a2b = a2b.set(p, q)
                b2a = b2a.set(q, p)
            push((x.body, y.body, _Scope(a2b, b2a)))
        elif k is Let:
            if x.var.type_annotation is not y.var.type_annotation:
                return False
            push((x.value, y.value, sc))
            push((x.body, y.body, _Scope(sc.a2b.set(x.var, y.var), sc.b2a.set(y.var, x.var))))
        else:  # Constant, Op, GlobalVar carry no variables: handled above
            return False
    return True
