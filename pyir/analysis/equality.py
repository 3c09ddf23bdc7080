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
* Symbolic dimensions (issue 12): a symbol first appearing in a Function's parameter
  annotations is bound by it, so a consistent renaming of such symbols is alpha-equivalent
  (a free symbol must be the same); in a module the parameters' symbols are the module's,
  paired across all its functions.  See "symbols" below for the rule and its limits.

How the alpha hash is computed
------------------------------
A subterm without any variable (no ``F_VAR`` bit in its summary mask) is its
own canonical form: its content id already is a process-stable, context-free
hash, and we use it as is (no walk below it).  Every other node is hashed
bottom-up in one iterative depth-first walk that keeps a single mutable map
from the variables bound on the current path to their markers, updated on
entering a binder and undone on leaving it (no per-level environment).  A
bound variable hashes as a marker ``(binder level, position)`` (de Bruijn
levels), a free variable by its id; a let-bound function is in the scope of its
own variable (it may call itself).  Each result also carries ``L``, a level at
or above which lie the binders of all the node's free variables, and the
memo keeps the scope instance at level ``L`` it was computed under: a node
shared by several scopes is hashed again only under a different binding of
levels ``1..L`` (so a subgraph depending on an outer parameter and shared under
many nested lets is hashed once).  Results that depend on no binder (``L == 0``)
of functions and of the root are stored in a global weak cache.
:func:`alpha_equal` walks both graphs the same way, with one pair of mutable
maps and the same memo rule for pairs already found equal; memory is linear in
the graph, bounded by a few hundred bytes per node.

Stability: closed terms (every variable bound) hash alike in every process.  A
free variable hashes by its id, which includes its process-unique ``uid``; it
is stable across processes only when the variable itself is (e.g. deserialized).

:func:`alpha_equal` checks ``a is b`` first, then the alpha hashes when both are
already cached (an O(1) refutation; it never computes them), then runs an exact
iterative parallel walk; positive answers are cached by the pair of content ids
(content ids determine the structure, so a cached answer never goes stale).  Two
functions the module check certified closed and well-formed (every module
function) take a cheaper exact walk: there a variable means the same thing
wherever it occurs, so one dict pairing each node with its counterpart is the
whole memo and nothing travels back up; it hands over to the general walk only
where a shared binder node meets two alpha-equivalent copies of itself.
"""

from __future__ import annotations

import weakref
from typing import Any

from xxhash import xxh3_128_digest

from ..errors import WellFormedError
from ..ir.adt import F_REF
from ..ir.dims import Dim, DimFloorDiv, DimMod, DimPoly, Sym, substitute
from ..ir.expr import Call, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.kinds import shape_key
from ..ir.module import Module, _closed_checked
from ..ir.node import F_VAR, Attrs, Node, gc_paused
from ..ir.traverse import BINDER_BITS, BOUND
from ..ir.types import FuncType, TensorType, TupleType

__all__ = ["structural_equal", "structural_hash", "alpha_equal", "alpha_hash", "clear_caches", "gc_paused"]

_digest = xxh3_128_digest
_NONE = b"\x00" * 16

_hash_cache: weakref.WeakKeyDictionary[Node, bytes] = weakref.WeakKeyDictionary()
_equal_cache: dict[tuple[bytes, bytes, bool], bool] = {}
_EQUAL_CACHE_LIMIT = 1 << 16


def clear_caches() -> None:
    """Forget every cached alpha hash and alpha-equality answer (for benchmarks).

    These three are the only caches of this module; all are bounded (the hash cache and
    the symbols-of-a-type cache are weak, the equality cache is cleared when full)."""
    _hash_cache.clear()
    _equal_cache.clear()
    _syms_cache.clear()


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


# -- symbols (symbolic dimensions) --------------------------------------------------------------
#
# A symbol (pyir.ir.dims.Sym) first appearing in the type annotation of a Function's parameter is
# bound by that Function (a symbol its enclosing functions bind stays theirs); every other symbol
# is free.  Alpha-equality pairs the symbols a Function binds by the order of their first
# appearance (parameters in order, dimensions in order, inside a dimension expression in its
# canonical order) and compares the types it meets (annotations, return types, attributes) as
# "renamed by the pairing", a free symbol only with itself.  The alpha hash renames bound symbols
# to placeholders named by their (binder level, position).  Symbols are scoped like variables:
# one mutable map, undone on leaving the binder.
#
# Limits: two fresh symbols first appearing inside one expression (``n * 2 + m``) are paired in
# that expression's canonical order, which sorts by name, so a renaming that changes their order by
# name can be missed (a false negative, never a false positive; the hash agrees with the answer).
# Variable-free subgraphs are compared by identity, as before: a dimension in the attributes of a
# call on constants alone is not renamed.

#: A node compared by identity has neither bit: no variable, and no reference operation (whose
#: uid keeps two ``ref(0)`` apart as nodes but is not structure, see ``RefCreate``).
_OPEN = F_VAR | F_REF

_syms_cache: weakref.WeakKeyDictionary[Node, tuple[Sym, ...]] = weakref.WeakKeyDictionary()


def _dim_syms(d: Dim, out: dict[Sym, None]) -> None:
    """Add the symbols of ``d`` to ``out`` in the order of a depth-first walk (iterative)."""
    stack: list[Dim] = [d]
    while stack:
        x = stack.pop()
        if type(x) is Sym:
            out.setdefault(x)
        elif type(x) is DimPoly:
            stack.extend(reversed([a for mono, _ in x.terms for a in mono]))
        elif type(x) is DimFloorDiv or type(x) is DimMod:
            stack.append(x.arg)


def _node_syms(t: Any) -> tuple[Sym, ...]:
    """The symbols of a type, an Attrs or a dimension, in first-appearance order (cached)."""
    if t is None:
        return ()
    if type(t) is TensorType:
        for d in t.shape:
            if type(d) is not int:
                break
        else:
            return ()
    elif type(t) is not TupleType and type(t) is not FuncType and type(t) is not Attrs \
            and not isinstance(t, Dim):
        return ()
    r = _syms_cache.get(t)
    if r is not None:
        return r
    out: dict[Sym, None] = {}
    stack: list[Any] = [t]
    while stack:
        x = stack.pop()
        k = type(x)
        if k is TensorType:
            for d in x.shape:
                if type(d) is not int:
                    _dim_syms(d, out)
        elif k is TupleType:
            stack.extend(reversed(x.fields))
        elif k is FuncType:
            stack.append(x.ret_type)
            stack.extend(reversed(x.arg_types))
        elif k is Attrs:
            stack.extend(reversed([v for _, v in x.items()]))
        elif k is tuple:
            stack.extend(reversed(x))
        elif isinstance(x, Dim):
            _dim_syms(x, out)
    r = tuple(out)
    _syms_cache[t] = r
    return r


def _rename(t: Any, m: dict[Sym, Any]) -> Any:
    """The type, Attrs or dimension ``t`` with its symbols renamed by ``m`` (simultaneously);
    expressions inside attributes are kept.  Iterative, memoized per call."""
    names = {s.name: v for s, v in m.items()}
    memo: dict[int, Any] = {}

    def leaf(x: Any) -> Any | None:  # the renamed value if it needs no children, else None
        if isinstance(x, Dim):
            return substitute(x, names)
        if not isinstance(x, (TensorType, TupleType, FuncType, Attrs, tuple)):
            return x
        if type(x) is not tuple and not _node_syms(x):
            return x
        if type(x) is TensorType:
            return TensorType([d if type(d) is int else substitute(d, names) for d in x.shape], x.dtype)
        return None

    stack: list[Any] = [t]
    while stack:
        x = stack[-1]
        if id(x) in memo:
            stack.pop()
            continue
        r = leaf(x)
        if r is not None or x is None:
            memo[id(x)] = r
            stack.pop()
            continue
        k = type(x)
        kids = (x.fields if k is TupleType else (*x.arg_types, x.ret_type) if k is FuncType
                else [v for _, v in x.items()] if k is Attrs else x)
        todo = [c for c in kids if id(c) not in memo]
        if todo:
            stack.extend(todo)
            continue
        vals = [memo[id(c)] for c in kids]
        memo[id(x)] = (TupleType(vals) if k is TupleType else FuncType(vals[:-1], vals[-1]) if k is FuncType
                       else Attrs({key: v for (key, _), v in zip(x.items(), vals)}) if k is Attrs
                       else tuple(vals))
        stack.pop()
    return memo[id(t)]


def _new_binders(f: Function, bound: dict[Sym, Any]) -> list[Sym]:
    """The symbols ``f`` binds: those of its parameters' annotations not bound already, in order."""
    out: dict[Sym, None] = {}
    seen: set[Any] = set()  # parameters mostly share a few interned types: look at each once
    for p in f.params:
        t = p.type_annotation
        if t in seen:
            continue
        seen.add(t)
        for s in _node_syms(t):
            if s not in bound:
                out.setdefault(s)
    return list(out)


class _SymPairs:
    """The scoped bijection of bound symbols of an equality walk, and its type comparison."""

    __slots__ = ("a2b", "b2a", "version", "memo")

    def __init__(self, a2b: dict[Sym, tuple[Sym, int]] | None = None,
                 b2a: dict[Sym, tuple[Sym, int]] | None = None) -> None:
        self.a2b: dict[Sym, tuple[Sym, int]] = dict(a2b or {})
        self.b2a: dict[Sym, tuple[Sym, int]] = dict(b2a or {})
        self.version = 0
        self.memo: dict[tuple[Any, Any, int], int] = {}  # -> the level used, or -1: different

    def bind(self, f: Function, g: Function, level: int) -> list[tuple[Sym, Sym]] | None:
        """Pair the symbols ``f`` and ``g`` bind (None: not as many)."""
        xs, ys = _new_binders(f, self.a2b), _new_binders(g, self.b2a)
        if len(xs) != len(ys):
            return None
        for x, y in zip(xs, ys):
            self.a2b[x] = (y, level)
            self.b2a[y] = (x, level)
        if xs:
            self.version += 1
        return list(zip(xs, ys))

    def unbind(self, pairs: list[tuple[Sym, Sym]]) -> None:
        for x, y in pairs:
            del self.a2b[x]
            del self.b2a[y]
        self.version += 1

    def eq(self, ta: Any, tb: Any) -> int:
        """-1 if the types (Attrs, dims) differ under the pairing, else the deepest binder level
        of the bound symbols involved (0: none)."""
        if ta is tb and not self.a2b:
            return 0
        if ta is None or tb is None:
            return 0 if ta is tb else -1
        syms = _node_syms(ta)
        if not syms:
            return 0 if ta is tb else -1
        key = (ta, tb, self.version)
        r = self.memo.get(key)
        if r is not None:
            return r
        m: dict[Sym, Sym] = {}
        lv = 0
        r = 0
        for s in syms:
            e = self.a2b.get(s)
            if e is None:
                if s in self.b2a:  # free here, bound there
                    r = -1
                    break
                continue
            if e[1] > lv:
                lv = e[1]
            if e[0] is not s:
                m[s] = e[0]
        if r == 0:
            r = lv if (_rename(ta, m) if m else ta) is tb else -1
        self.memo[key] = r
        return r


# -- alpha hash ---------------------------------------------------------------------------------

_ENTER, _EXIT, _COMPUTE, _SEXIT = 1, 2, 3, 4


def alpha_hash(x: Expr | Module) -> bytes:
    """A 16-byte digest equal for alpha-equivalent expressions (see the module docstring).

    Cached per node: the second call on the same node is a dictionary lookup.
    For a module: a digest of the names and each function's alpha hash; symbols are the
    module's (see :func:`alpha_equal`), so with symbolic parameters each function is hashed
    with the module's symbols renamed to placeholders in their order of first appearance.
    """
    if isinstance(x, Module):
        items = sorted(x.items())
        seed = _module_symbols([f for _, f in items])
        if not seed:
            return _digest(b"M" + b"".join(n.encode() + b"\x00" + alpha_hash(f) for n, f in items))
        marks = {s: (Sym(f"_pyir_m{i}"), 0) for i, s in enumerate(seed)}
        with gc_paused():
            return _digest(b"M" + b"".join(n.encode() + b"\x00" + _alpha_walk(f, marks) for n, f in items))
    if not isinstance(x, Expr):
        raise WellFormedError(f"alpha_hash takes an expression or a module, got {type(x).__name__}")
    if not (x._mask & _OPEN) or type(x) is Var:
        return x.id  # variable-free nodes and free variables: the content id is canonical
    h = _hash_cache.get(x)
    if h is not None:
        return h
    with gc_paused():
        return _alpha_walk(x)


def _binds_in_value(n: Let) -> bool:
    """A let-bound function may call itself: its var scopes over its value too."""
    return type(n.value) is Function


class _SymMarks:
    """The bound symbols of a hash walk: symbol -> (placeholder, binder level), scoped."""

    __slots__ = ("bound", "version", "memo")

    def __init__(self, seed: dict[Sym, tuple[Sym, int]] | None = None) -> None:
        self.bound: dict[Sym, tuple[Sym, int]] = dict(seed or {})
        self.version = 0
        self.memo: dict[tuple[Any, int], tuple[bytes, int]] = {}

    def bind(self, f: Function, level: int) -> list[Sym]:
        new = _new_binders(f, self.bound)
        for i, x in enumerate(new):
            self.bound[x] = (Sym(f"_pyir_s{level}_{i}"), level)
        if new:
            self.version += 1
        return new

    def unbind(self, syms: list[Sym]) -> None:
        for x in syms:
            del self.bound[x]
        self.version += 1

    def tid(self, t: Any) -> tuple[bytes, int]:
        """The id of ``t`` (a type, Attrs or None) with bound symbols renamed to their
        placeholders, and the deepest binder level involved (0: none)."""
        if t is None:
            return _NONE, 0
        if not self.bound:
            return t.id, 0
        syms = _node_syms(t)
        if not syms:
            return t.id, 0
        key = (t, self.version)
        r = self.memo.get(key)
        if r is None:
            m: dict[Sym, Sym] = {}
            lv = 0
            for x in syms:
                e = self.bound.get(x)
                if e is not None:
                    m[x] = e[0]
                    if e[1] > lv:
                        lv = e[1]
            r = self.memo[key] = ((_rename(t, m).id if m else t.id), lv)
        return r


def _alpha_walk(root: Expr, seed: dict[Sym, tuple[Sym, int]] | None = None) -> bytes:
    """Depth-first, iterative; one mutable var -> (marker, level) map, undone on scope exit.

    A result is a triple (digest, L, open): L is a level at or above which every binder
    of the node's free variables lies (0: none), ``open`` says a free variable was hashed
    by its id.  The memo keeps, per node, the scope instance at level L when it was
    computed: the node is hashed again only under another binding of those levels (a
    shared subgraph under nested lets is hashed once per distinct binding context).
    Types are hashed by their ids with bound symbols renamed to placeholders (``seed``: the
    module's symbols, for a module's hash; then nothing is read from or written to the cache).
    """
    cache: Any = _hash_cache if not seed else {}
    sm = _SymMarks(seed)
    tid = sm.tid
    sbound = sm.bound  # the same dict all along (bind / unbind update it in place)
    fsigs: list[tuple[bytes, int, list[Sym]]] = []  # per Function being hashed: its signature
    _bound = BOUND  # binder kind -> the variables a node binds (from the declarations)
    bound: dict[Var, tuple[bytes, int]] = {}
    inst: list[int] = [0]  # scope instance at each level of the current path
    shadows: list[int] = []  # levels, on the current path, of binders that rebind a bound var
    undo: list[Any] = []
    memo: dict[Node, tuple[int, int, int, bytes]] = {}  # node -> (L, instance at L or -1 if open, cur, h)
    counter = 0
    vals: list[tuple[bytes, int, bool]] = []
    pushv = vals.append
    ops: list[Any] = [root]
    push = ops.append
    pop = ops.pop
    while ops:
        item = pop()
        if type(item) is tuple:
            code, n, nk = item
            if code == _ENTER:
                level = len(inst)
                counter += 1
                inst.append(counter)
                if type(n) is Let:  # (the common binder: one variable, no symbols)
                    p = n.var
                    old = bound.get(p)
                    undo.append((p, old))
                    bound[p] = (_digest(b"B%d,0" % level), level)
                    if old is not None:
                        shadows.append(level)
                    continue
                vs = _bound[type(n)](n)
                shadow = False
                for i, p in enumerate(vs):
                    old = bound.get(p)
                    if old is not None:
                        shadow = True
                    undo.append((p, old))
                    bound[p] = (_digest(b"B%d,%d" % (level, i)), level)
                if shadow:
                    shadows.append(level)
                if type(n) is Function:  # its symbols, then its signature under them
                    new = sm.bind(n, level)
                    parts = [tid(n.attrs), tid(n.ret_type), *[tid(p.type_annotation) for p in n.params]]
                    fsigs.append((b"".join([h for h, _ in parts]), max([lv for _, lv in parts]), new))
                continue
            if code == _EXIT:
                for _ in range(nk):  # (nk: the number of variables the binder bound)
                    p, old = undo.pop()
                    if old is None:
                        del bound[p]
                    else:
                        bound[p] = old
                level = len(inst) - 1
                if shadows and shadows[-1] == level:
                    shadows.pop()
                inst.pop()
                continue
            # _COMPUTE (a node with variables below has nk >= 1 child results on ``vals``)
            k = type(n)
            kids = vals[-nk:]
            del vals[-nk:]
            lv = 0
            opn = False
            for _, cl, co in kids:
                if cl > lv:
                    lv = cl
                opn = opn or co
            if k is Call:
                op = n.op
                if type(op) is Op:
                    opd = b"o" + op.id
                    hs = [c[0] for c in kids]
                else:
                    opd = b"e" + kids[0][0]
                    hs = [c[0] for c in kids[1:]]
                if sbound:  # symbols bound: the attributes renamed
                    ah, slv = tid(n.attrs)
                    if slv > lv:
                        lv = slv
                else:
                    ah = n.attrs.id
                h = _digest(b"".join((b"C%d:" % len(hs), opd, ah, *hs)))
            elif k is Tuple:
                h = _digest(b"".join((b"T%d:" % len(kids), *[c[0] for c in kids])))
            elif k is TupleGetItem:
                h = _digest(b"I%d:" % n.index + kids[0][0])
            elif k is If:
                h = _digest(b"?" + kids[0][0] + kids[1][0] + kids[2][0])
            elif k is Function:
                sig, slv, new = fsigs.pop()
                if new:
                    sm.unbind(new)
                if slv > lv:
                    lv = slv
                h = _digest(b"".join((b"F%d:" % len(n.params), sig, kids[0][0])))
            elif k is Let:
                if sbound:
                    ah, slv = tid(n.var.type_annotation)
                    if slv > lv:
                        lv = slv
                else:
                    t = n.var.type_annotation
                    ah = t.id if t is not None else _NONE
                h = _digest(b"L" + ah + kids[0][0] + kids[1][0])
            else:  # any other kind, from its declaration: its shape, then its children's hashes
                h = _digest(b"".join((b"N%d:" % nk, shape_key(n), *[c[0] for c in kids])))
            if k is Function or k is Let:
                own = len(inst)  # the level its body was hashed at
                if lv >= own:
                    lv = own - 1  # conservative: its own binder is internal
            cur = len(inst) - 1
            memo[n] = (lv, -1 if opn else inst[lv], inst[cur], h)
            if lv == 0 and (k is Function or n is root):
                cache[n] = h
            pushv((h, lv, opn))
            continue
        n = item
        if not (n._mask & _OPEN):
            pushv((n.id, 0, False))
            continue
        k = type(n)
        if k is Var:
            b = bound.get(n)
            pushv((n.id, 0, True) if b is None else (b[0], b[1], False))
            continue
        cur = len(inst) - 1
        rec = memo.get(n)
        if rec is not None:
            lv, at, where, h = rec
            if (where == inst[cur] if at < 0 else
                    lv <= cur and inst[lv] == at and (not shadows or shadows[-1] <= lv)):
                pushv((h, lv, at < 0))
                continue
        if cur == 0:
            h2 = cache.get(n)
            if h2 is not None:
                pushv((h2, 0, True))  # conservative: hashed standalone
                continue
        if k is Let:
            push((_COMPUTE, n, 2))
            rec_value = _binds_in_value(n)
            push((_EXIT, n, 1))
            push(n.body)
            if rec_value:
                push(n.value)
                push((_ENTER, n, 0))
            else:
                push((_ENTER, n, 0))
                push(n.value)
        elif k is Function:
            push((_COMPUTE, n, 1))
            push((_EXIT, n, len(n.params)))
            push(n.body)
            push((_ENTER, n, 0))
        else:
            cs = n.children()
            push((_COMPUTE, n, len(cs)))
            for c in reversed(cs):
                push(c)
    return vals[-1][0]


# -- alpha equality -----------------------------------------------------------------------------


def alpha_equal(a: Any, b: Any, *, map_free_vars: bool = False) -> bool:
    """True if ``a`` and ``b`` are equal up to a consistent renaming of bound variables.

    Works on expressions and on modules (same names, alpha-equal functions).

    Symbolic dimensions: a symbol first appearing in a parameter's type annotation is bound
    by that function, so renaming it consistently is alpha-equivalent; a free symbol must be
    the same on both sides.  In a module, symbols are the module's: those of every function's
    parameters are paired across the whole module (``@main(x: (batch, 3))`` and ``@f(y: (batch,
    8))`` share ``batch``), in the order of first appearance (functions by name).

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
        names = sorted(fa)
        xs = _module_symbols([fa[k] for k in names])
        ys = _module_symbols([fb[k] for k in names])
        if not xs and not ys:
            return all(alpha_equal(fa[k], fb[k], map_free_vars=map_free_vars) for k in names)
        if len(xs) != len(ys):
            return False
        a2b = {x: (y, 0) for x, y in zip(xs, ys)}
        b2a = {y: (x, 0) for x, y in zip(xs, ys)}
        with gc_paused():  # one bijection of symbols for the whole module; no per-function cache
            for k in names:
                f, g = fa[k], fb[k]
                ok = None
                if f in _closed_checked and g in _closed_checked:
                    ok = _closed_walk(f, g, _SymPairs(a2b, b2a))
                if ok is None:
                    ok = _parallel_walk(f, g, map_free_vars, _SymPairs(a2b, b2a))
                if not ok:
                    return False
        return True
    if not isinstance(a, Expr) or not isinstance(b, Expr):
        raise WellFormedError(f"alpha_equal takes expressions or modules, got {type(a).__name__} "
                              f"and {type(b).__name__}")
    if type(a) is not type(b) or not (a._mask & _OPEN) or not (b._mask & _OPEN):
        return False
    key = (a.id, b.id, map_free_vars)
    if _equal_cache.get(key):
        return True
    if not map_free_vars:  # the alpha hashes refute in O(1) once both are cached; never computed here
        ha, hb = _hash_cache.get(a), _hash_cache.get(b)
        if ha is not None and hb is not None and ha != hb:
            return False
    with gc_paused():
        ok = None
        if type(a) is Function and type(b) is Function and a in _closed_checked and b in _closed_checked:
            ok = _closed_walk(a, b)
        if ok is None:
            ok = _parallel_walk(a, b, map_free_vars)
    if ok:
        if len(_equal_cache) >= _EQUAL_CACHE_LIMIT:
            _equal_cache.clear()
        _equal_cache[key] = True
    return ok


def _module_symbols(funcs: list[Function]) -> list[Sym]:
    """The symbols a module's functions bind (those of their parameters), in order of first
    appearance."""
    out: dict[Sym, None] = {}
    for f in funcs:
        for s in _new_binders(f, out):
            out.setdefault(s)
    return list(out)


def _closed_walk(a: Function, b: Function, syms: _SymPairs | None = None) -> bool | None:
    """Alpha-equality of two closed, well-formed functions in one walk without scopes.

    The module's well-formedness check certified both (``_closed_checked``): each
    variable is bound by one binder node, and every path from the root to a use of it
    goes through that binder.  So a variable means the same thing wherever it occurs,
    and while every binder pair seen so far pairs its variables consistently (one
    global bijection ``a2b``/``b2a``), whether a pair of nodes is equal does not depend
    on where it is met: one dict ``a2b`` (node -> its counterpart) is the whole memo,
    filled when a pair is first expanded (any mismatch below ends the walk), and no
    result travels back up (no post-order step).

    Returns True or False, or None when a binder is paired inconsistently (a shared
    binder node matching two alpha-equivalent copies: ``(f, f)`` against ``(f1, f2)``),
    where the answer depends on context: the caller then runs the general walk.
    A node already paired with another counterpart and without binders below refutes:
    both counterparts would be the same substitution of it, i.e. the same interned node.
    Symbols: the root pair's bound symbols are paired once for the whole walk (``syms``); a
    nested function binding symbols of its own hands over to the general walk (None).
    """
    sp = _SymPairs() if syms is None else syms
    teq = sp.eq
    a2b: dict[Node, Node] = {}  # a-side var or expanded node -> its b-side counterpart
    b2a: dict[Node, Node] = {}  # b-side bound var -> its a-side var
    get = a2b.get
    sa: list[Node] = [a]
    sb: list[Node] = [b]
    popa, popb, pusha, pushb, exta, extb = sa.pop, sb.pop, sa.append, sb.append, sa.extend, sb.extend
    while sa:
        x: Any = popa()
        y: Any = popb()
        if not (x._mask & _OPEN):
            if x is y:
                continue
            return False  # a variable-free node is alpha-equal only to itself
        m = get(x)
        if m is not None:
            if m is y:
                continue
            if x._mask & BINDER_BITS and type(x) is not Var:
                return None
            return False
        k = type(x)
        if k is not type(y) or not (y._mask & _OPEN):
            return False
        if k is Call:
            xa, ya = x.args, y.args
            if len(xa) != len(ya) or ((x.attrs is not y.attrs or sp.a2b) and teq(x.attrs, y.attrs) < 0):
                return False
            ox, oy = x.op, y.op
            if ox is not oy or ox._mask & _OPEN:
                pusha(ox)
                pushb(oy)
            a2b[x] = y
            exta(xa)
            extb(ya)
        elif k is Tuple:
            xa, ya = x.fields, y.fields
            if len(xa) != len(ya):
                return False
            a2b[x] = y
            exta(xa)
            extb(ya)
        elif k is TupleGetItem:
            if x.index != y.index:
                return False
            a2b[x] = y
            pusha(x.tuple_value)
            pushb(y.tuple_value)
        elif k is Function or k is Let:
            if k is Function:
                ps, qs = x.params, y.params
                if len(ps) != len(qs):
                    return False
                if x is a:
                    if sp.bind(x, y, 0) is None:  # the root's symbols: bound for the whole walk
                        return False
                elif _new_binders(x, sp.a2b) or _new_binders(y, sp.b2a):
                    return None  # symbols of its own: scoped, the general walk's business
                if (x.attrs is not y.attrs or x.ret_type is not y.ret_type or sp.a2b
                        or any(p.type_annotation is not q.type_annotation for p, q in zip(ps, qs))) \
                        and any(teq(ta, tb) < 0 for ta, tb in (
                            (x.attrs, y.attrs), (x.ret_type, y.ret_type),
                            *[(p.type_annotation, q.type_annotation) for p, q in zip(ps, qs)])):
                    return False
                pusha(x.body)
                pushb(y.body)
            else:
                ps, qs = (x.var,), (y.var,)
                if ((x.var.type_annotation is not y.var.type_annotation or sp.a2b)
                        and teq(x.var.type_annotation, y.var.type_annotation) < 0) or \
                        _binds_in_value(x) != _binds_in_value(y):
                    return False
                pusha(x.body)
                pushb(y.body)
                pusha(x.value)
                pushb(y.value)
            for p, q in zip(ps, qs):
                if p in a2b or q in b2a:
                    return None  # a variable bound twice: not the certified shape
                a2b[p] = q
                b2a[q] = p
            a2b[x] = y
        elif k is If:
            a2b[x] = y
            exta((x.false_branch, x.true_branch, x.cond))
            extb((y.false_branch, y.true_branch, y.cond))
        else:  # a variable met before its binder, or a kind this walk does not know
            return None
    return True


def _parallel_walk(a: Expr, b: Expr, map_free_vars: bool, syms: _SymPairs | None = None) -> bool:
    """Exact, iterative, depth-first comparison under a scoped bijection of bound vars.

    One pair of mutable maps (a-var -> (b-var, level) and back), updated on entering a
    binder pair and undone on leaving it.  As in :func:`_alpha_walk`, each compared pair
    yields (L, open): a pair found equal is not compared again under the same binding of
    levels up to L (exactly the same scope, if it involved a free variable).  Bound symbols
    (see "symbols" above) are paired the same way, in ``syms``; a pair whose own types involve
    a bound symbol depends on the level of its binder.
    """
    sp = _SymPairs() if syms is None else syms
    teq = sp.eq
    free_a2b: dict[Node, Node] = {}
    free_b2a: dict[Node, Node] = {}
    a2b: dict[Node, tuple[Node, int]] = {}
    b2a: dict[Node, tuple[Node, int]] = {}
    undo: list[Any] = []
    inst: list[int] = [0]
    shadows: list[int] = []
    counter = 0
    seen: dict[tuple[Node, Node], tuple[int, int, int]] = {}
    vals: list[tuple[int, bool]] = []
    pushv = vals.append
    stack: list[Any] = [(a, b)]
    push = stack.append
    pop = stack.pop
    while stack:
        item = pop()
        if len(item) != 2:  # (code, ...) of 3 or 4 fields; a pair to compare has 2
            code = item[0]
            if code == _ENTER:
                _, ps, qs = item
                level = len(inst)
                counter += 1
                inst.append(counter)
                shadow = False
                for p, q in zip(ps, qs):
                    op_, oq = a2b.get(p), b2a.get(q)
                    if op_ is not None or oq is not None:
                        shadow = True
                    undo.append((p, q, op_, oq))
                    a2b[p] = (q, level)
                    b2a[q] = (p, level)
                if shadow:
                    shadows.append(level)
            elif code == _SEXIT:
                sp.unbind(item[1])
            elif code == _EXIT:
                for _ in range(item[1]):
                    p, q, op_, oq = undo.pop()
                    if op_ is None:
                        del a2b[p]
                    else:
                        a2b[p] = op_
                    if oq is None:
                        del b2a[q]
                    else:
                        b2a[q] = oq
                if shadows and shadows[-1] == len(inst) - 1:
                    shadows.pop()
                inst.pop()
            else:  # _COMPUTE: all children of the pair are equal
                _, pair, nk, binder, lv = item
                opn = False
                if nk:
                    for cl, co in vals[-nk:]:
                        if cl > lv:
                            lv = cl
                        opn = opn or co
                    del vals[-nk:]
                if binder and lv >= len(inst):
                    lv = len(inst) - 1
                seen[pair] = (lv, -1 if opn else inst[lv], inst[-1])
                pushv((lv, opn))
            continue
        x, y = item
        if x is y and not (x._mask & _OPEN):
            pushv((0, False))
            continue
        k = type(x)
        if k is not type(y):
            return False
        if k is Var:
            mx = a2b.get(x)
            my = b2a.get(y)
            if mx is not None or my is not None:
                if mx is None or my is None or mx[0] is not y or my[0] is not x:
                    return False
                pushv((mx[1], False))
                continue
            pushv((0, True))
            if not map_free_vars:
                if x is not y:
                    return False
                continue
            fx = free_a2b.get(x)
            fy = free_b2a.get(y)
            if fx is None and fy is None:
                ta, tb = x.type_annotation, y.type_annotation
                if (ta is not tb or sp.a2b) and teq(ta, tb) < 0:
                    return False
                free_a2b[x] = y
                free_b2a[y] = x
            elif fx is not y or fy is not x:
                return False
            continue
        if not (x._mask & _OPEN) or not (y._mask & _OPEN):
            return False  # a variable-free node is alpha-equal only to itself
        rec = seen.get(item)
        if rec is not None:
            lv, at, where = rec
            cur = len(inst) - 1
            if (where == inst[cur] if at < 0 else
                    lv <= cur and inst[lv] == at and (not shadows or shadows[-1] <= lv)):
                pushv((lv, at < 0))
                continue
        if k is Call:
            if len(x.args) != len(y.args):
                return False
            slv = 0
            if x.attrs is not y.attrs or sp.a2b:
                slv = teq(x.attrs, y.attrs)
                if slv < 0:
                    return False
            fn = type(x.op) is not Op
            if (not fn or type(y.op) is Op) and x.op is not y.op:
                return False
            push((_COMPUTE, item, len(x.args) + fn, False, slv))
            for c, d in zip(reversed(x.args), reversed(y.args)):
                push((c, d))
            if fn:
                push((x.op, y.op))
        elif k is Tuple:
            if len(x.fields) != len(y.fields):
                return False
            push((_COMPUTE, item, len(x.fields), False, 0))
            for c, d in zip(reversed(x.fields), reversed(y.fields)):
                push((c, d))
        elif k is TupleGetItem:
            if x.index != y.index:
                return False
            push((_COMPUTE, item, 1, False, 0))
            push((x.tuple_value, y.tuple_value))
        elif k is If:
            push((_COMPUTE, item, 3, False, 0))
            push((x.false_branch, y.false_branch))
            push((x.true_branch, y.true_branch))
            push((x.cond, y.cond))
        elif k is Function:
            ps, qs = x.params, y.params
            if len(ps) != len(qs):
                return False
            pairs = sp.bind(x, y, len(inst))  # the symbols they bind, at the level of their params
            if pairs is None:
                return False
            slv = 0
            if (x.attrs is not y.attrs or x.ret_type is not y.ret_type or sp.a2b
                    or any(p.type_annotation is not q.type_annotation for p, q in zip(ps, qs))):
                for ta, tb in ((x.attrs, y.attrs), (x.ret_type, y.ret_type),
                               *[(p.type_annotation, q.type_annotation) for p, q in zip(ps, qs)]):
                    r = teq(ta, tb)
                    if r < 0:
                        return False
                    if r > slv:
                        slv = r
            push((_COMPUTE, item, 1, True, slv))
            if pairs:
                push((_SEXIT, pairs, None))
            push((_EXIT, len(ps), None))
            push((x.body, y.body))
            push((_ENTER, ps, qs))
        elif k is Let:
            slv = 0
            if x.var.type_annotation is not y.var.type_annotation or sp.a2b:
                slv = teq(x.var.type_annotation, y.var.type_annotation)
                if slv < 0:
                    return False
            rx = _binds_in_value(x)
            if rx != _binds_in_value(y):
                return False
            push((_COMPUTE, item, 2, True, slv))
            push((_EXIT, 1, None))
            push((x.body, y.body))
            if rx:
                push((x.value, y.value))
                push((_ENTER, (x.var,), (y.var,)))
            else:
                push((_ENTER, (x.var,), (y.var,)))
                push((x.value, y.value))
        else:  # any other kind with variables below, from its declaration (Constant, Op and
            # GlobalVar carry no variables: handled above)
            xs, ys = x.children(), y.children()
            if len(xs) != len(ys) or shape_key(x) != shape_key(y):
                return False
            push((_COMPUTE, item, len(xs), False, 0))
            for c, d in zip(reversed(xs), reversed(ys)):
                push((c, d))
    return True
