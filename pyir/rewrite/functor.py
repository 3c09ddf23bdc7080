"""The rewrite layer: visitors, mutators and the rewriter the passes are built on, without recursion.

Subclass :class:`ExprMutator` and define per-kind hooks (``visit_Call``,
``visit_Function``, ...).  A hook receives the node **with its children already
rewritten** (the very same node when nothing changed below it) and returns
its replacement; ``self.original`` is the node as it was in the input.  The
driver walks the DAG with an explicit stack, visits each distinct node once
(memoized by identity), children left to right before their parent, and
rebuilds a parent only when one of its children changed, so a mutator that
changes nothing returns its input object.

Inside a pass, every replacement is recorded in the lineage side-table
(new <- old, also for each node freshly created under the replacement: a node
the walk never met and no earlier replacement made; recorded when the walk ends).

>>> import pyir
>>> x = pyir.var("x", shape=(2,))
>>> class ReluToTanh(ExprMutator):
...     def visit_Call(self, call):
...         if call.op is pyir.Op("nn.relu"):
...             return pyir.op.tanh(call.args[0])
...         return call
>>> y = pyir.op.nn.relu(pyir.op.exp(x))
>>> ReluToTanh().visit(y) is pyir.op.tanh(pyir.op.exp(x))
True
>>> ExprMutator().visit(y) is y
True

Passes build on :class:`Rewriter`, an ExprMutator with the few extra controls
passes need: ``forward(node)`` (a node stands for another expression, e.g. a
dropped binding for its body, with no lineage edge), ``children(node)`` (the
order children are rewritten in), ``record_lineage = False`` (the pass records
its own edges through :class:`Derivations`, :func:`pyir.derive` and
:func:`pyir.eliminate`).  :class:`BindingRewriter` walks ``let`` bindings in
scope order for passes that keep or drop bindings depending on what is bound
around them (lexical scopes, memoized per scope).  :class:`Derivations` is the
cheap lineage handle for passes that assemble their result by hand, and
:class:`RoundLineage` composes the lineage of a rewrite run in rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from ..errors import WellFormedError
from ..ir.expr import Call, Expr, Let, Op, Var
from ..ir.kinds import KINDS, info
from ..ir.lineage import current_recorder, recording
from ..ir.node import F_LET, Node
from ..ir.traverse import _DONE, post_order

__all__ = ["ExprVisitor", "ExprMutator", "Rewriter", "BindingRewriter", "Derivations", "RoundLineage",
           "rewrite", "substitute", "rebuild"]

#: The expression kinds, from the registry: each has a ``visit_<Kind>`` hook.
_KINDS: tuple[type[Expr], ...] = tuple(k for k in KINDS.values() if issubclass(k, Expr))
#: kind -> its rebuild (children through a memo), derived from its declaration (Call's is
#: hand-tuned: an Op callee is kept, not looked up)
_REBUILD: dict[type, Callable[[Any, Any], Any]] = {k: info(k).rebuild for k in KINDS.values()}
#: the expression kinds without children (Var, GlobalVar, Constant, Op)
_LEAVES: tuple[type[Expr], ...] = tuple(k for k in _KINDS if not info(k).children)


def _hooks_of(cls: type, base: type) -> dict[type, Callable[..., Any]]:
    hooks = {}
    for k in _KINDS:
        fn = getattr(cls, "visit_" + k.__name__, None)
        if fn is not None and fn is not getattr(base, "visit_" + k.__name__, None):
            hooks[k] = fn
    return hooks


class ExprVisitor:
    """Visit each distinct node once, children before parents.

    Define ``visit_Call(self, call)`` etc.; ``visit(expr)`` drives the walk.
    Hooks never recurse: the walk is iterative and memoized.
    """

    _hooks: ClassVar[dict[type, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._hooks = _hooks_of(cls, ExprVisitor)

    def __init__(self) -> None:
        self.visited: set[Node] = set()

    def visit(self, expr: Expr) -> None:
        """Walk ``expr`` (nodes already visited by this visitor are skipped)."""
        hooks = self._hooks
        visited = self.visited
        for n in post_order(expr, stop=visited.__contains__):
            if n in visited:
                continue
            visited.add(n)
            h = hooks.get(type(n))
            if h is not None:
                h(self, n)


def rebuild(n: Node, memo: dict[Node, Any]) -> Any:
    """``n`` with its children replaced through ``memo`` (``n`` itself if none changed).

    Derived from the kind's declaration (:attr:`pyir.ir.kinds.KindInfo.rebuild`): annotations
    and scalars are kept, a variable a binder binds must stay a variable.
    """
    r = _REBUILD.get(type(n))
    if r is None:  # a kind imported after this module (pyir.ir.dims)
        r = info(type(n)).rebuild
    return r(n, memo)


# -- lineage handles of the rewrite layer -------------------------------------------------------


class Derivations:
    """The derivation edges of one rewrite inside a pass: a cheap handle for passes that
    assemble their result by hand (one edge costs about a list append).

    Equivalent to :func:`pyir.derive` per edge; false, and every method a no-op,
    outside a pass or when lineage recording is off.  ``mark()``/``rollback(mark)``
    drop the edges recorded since the mark (a rewrite that turned out to change
    nothing records nothing).
    """

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        rec = current_recorder()
        self._buf = rec.edges if rec is not None else None

    def __bool__(self) -> bool:
        return self._buf is not None

    def derive(self, new: Node, old: Node) -> None:
        """``new`` derives from ``old`` (nothing is recorded when they are the same node)."""
        if self._buf is not None and new is not old:
            self._buf.add(new.id, old.id)

    def id_adder(self) -> Callable[[bytes, bytes], None] | None:
        """For hot loops: a function ``add(new_id, old_id)`` recording one edge between the
        ids of two live nodes (unchecked), or None when nothing is recorded."""
        return self._buf.add if self._buf is not None else None

    def joined_adder(self) -> Callable[[bytes, bytes], None] | None:
        """For hot loops: a function ``add(new_id, old_ids)`` recording one edge from the
        concatenation of one or more old ids (of live nodes, unchecked), or None when nothing
        is recorded."""
        return self._buf.add_joined if self._buf is not None else None

    def derive_ids(self, new: Node, olds: bytes | tuple[bytes, ...]) -> None:
        """``new`` derives from the node(s) of id ``olds`` (one id, or a tuple of ids)."""
        if self._buf is not None:
            if type(olds) is bytes:
                self._buf.add(new.id, olds)
            else:
                self._buf.append((new.id, olds))  # type: ignore[arg-type]

    def mark(self) -> Any:
        """A position to :meth:`rollback` to."""
        return self._buf.mark() if self._buf is not None else None

    def rollback(self, mark: Any) -> None:
        """Drop every edge the running pass recorded since ``mark`` (by any means)."""
        if self._buf is not None and mark is not None:
            self._buf.rollback(mark)


class RoundLineage:
    """Lineage of a rewrite run in rounds (each round rewrites the previous round's
    output), recorded as if the whole run were one step: every new id derives from
    the ids before the first round.

    ``run(fn, arg)`` runs one round; ``finish()`` hands the composed edges (and the
    ids the rounds eliminated) to the running pass.  Outside a pass nothing is recorded.
    """

    def __init__(self) -> None:
        self.outer = current_recorder()
        self.rounds = 0
        self._single: Any = None  # the first round's recorder, while it is the only one
        self._back: dict[bytes, tuple[bytes, ...]] | None = None
        self._removed: list[bytes] = []

    def run(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """``fn(arg)`` as one round."""
        self.rounds += 1
        if self.outer is None:
            return fn(arg)
        with recording() as rec:
            out = fn(arg)
        self._removed.extend(rec.removed)
        if self.rounds == 1:
            self._single = rec
        else:
            if self._back is None:
                self._back = {}
                _compose(self._back, self._single.edges)
                self._single = None
            _compose(self._back, rec.edges)
        return out

    def finish(self) -> None:
        """Record the composed lineage in the running pass."""
        outer = self.outer
        if outer is None:
            return
        if self._single is not None:
            outer.edges.extend(self._single.edges)
        elif self._back:
            outer.edges.extend(self._back.items())
        if self._removed:
            outer.removed.extend(self._removed)


def _compose(back: dict[bytes, tuple[bytes, ...]], edges: Iterable[tuple[bytes, tuple[bytes, ...]]]) -> None:
    """Fold one round's edges into ``back`` so that every new id points to original ids.

    An id not in ``back`` is original (it stands for itself).  An old id that the round itself
    made (some edge of the round has it as new id) stands for what it stood for before the round
    and for what it was made from in the round, whatever the order the round recorded its edges
    in; a chain that comes back to an id on it (a self edge: a node of the input that goes on
    standing for itself) ends there, at the id as it was before the round."""
    rb: dict[bytes, list[bytes]] = {}
    for new, olds in edges:
        rb.setdefault(new, []).extend(olds)
    before = {k: back[k] for k in rb if k in back}  # origins from the earlier rounds

    def as_before(o: bytes) -> tuple[bytes, ...]:
        return before.get(o) or back.get(o) or (o,)

    out: dict[bytes, tuple[bytes, ...]] = {}
    for new, made_from in rb.items():
        acc: dict[bytes, None] = dict.fromkeys(before.get(new, ()))
        seen = {new}
        stack = list(reversed(made_from))
        while stack:
            o = stack.pop()
            if o in seen:  # a cycle back to an id of this chain: that id as it was before
                acc.update(dict.fromkeys(as_before(o)))
                continue
            if o in rb:  # made in this round too
                seen.add(o)
                if o in before:
                    acc.update(dict.fromkeys(before[o]))
                stack.extend(reversed(rb[o]))
                continue
            acc.update(dict.fromkeys(as_before(o)))
        out[new] = tuple(acc)
    back.update(out)


# -- the mutator --------------------------------------------------------------------------------



def _hook_result(mutator: Any, n: Node, result: Any, updated: Expr) -> Expr:
    """What a visit hook's return value stands for: None keeps ``updated``; anything but an
    expression is a WellFormedError naming the hook.  (Off the path of hooks that return
    ``updated`` itself.)"""
    if result is None:
        return updated
    if not isinstance(result, Expr):
        raise WellFormedError(f"{type(mutator).__name__}.visit_{type(n).__name__} returned {result!r}, "
                              "not an expression")
    return result

class ExprMutator:
    """Rewrite a DAG bottom-up; see the module docstring.

    ``should_visit(node)`` may return False to keep a whole subgraph as it is
    without walking it (e.g. ``not node._mask & interesting_ops``).  ``memo``
    maps each node walked to its result; entries put there before ``visit``
    are taken as given (that is how :func:`substitute` works).
    """

    _hooks: ClassVar[dict[type, Callable[..., Any]]] = {}
    #: leaf kinds without a hook (memoized as themselves without a visit), for the hooks ``_passive_for``
    _passive: ClassVar[frozenset[type]] = frozenset(_LEAVES)
    _passive_for: ClassVar[Any] = _hooks
    #: record new <- old for every replacement (inside a pass)
    record_lineage: ClassVar[bool] = True
    original: Any
    _produced: set[Node]  # new nodes already recorded (created on the first replacement)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._hooks = _hooks_of(cls, ExprMutator)

    def _leaves_without_hooks(self, hooks: dict[type, Any]) -> frozenset[type]:
        # computed once per hook table (a subclass may assign ``_hooks`` after its creation)
        cls = type(self)
        if cls.__dict__.get("_passive_for") is not hooks:
            cls._passive = frozenset(k for k in _LEAVES if k not in hooks)
            cls._passive_for = hooks
        return cls._passive

    def __init__(self) -> None:
        self.memo: dict[Node, Any] = {}
        self.original = None

    def should_visit(self, node: Node) -> bool:
        """False to keep ``node`` and everything below it unchanged, unwalked."""
        return True

    def visit(self, expr: Expr) -> Any:
        """The rewritten ``expr`` (the same object when nothing changed)."""
        r = self.memo.get(expr)
        if r is not None:
            return r
        self._walk([expr])
        return self.memo[expr]

    def visit_many(self, exprs: Iterable[Expr]) -> None:
        """Rewrite ``exprs`` in order, in one walk (cheaper than a visit each for many small
        roots); ``visit(e)`` then returns each result at once."""
        memo = self.memo
        todo = [e for e in exprs if e not in memo]
        if todo:
            self._walk(todo)

    def _walk(self, roots: list[Expr]) -> None:
        """Rewrite ``roots`` (not yet in ``memo``; the list becomes the walk's stack)."""
        memo = self.memo
        hooks = self._hooks
        h_call = hooks.get(Call)
        passive = self._leaves_without_hooks(hooks)
        skip = None if type(self).should_visit is ExprMutator.should_visit else self.should_visit
        rec = current_recorder() if self.record_lineage else None
        olds: list[Node] = []  # replacements, recorded once the walk is done (see _record)
        news: list[Node] = []
        stack: list[Any] = roots
        stack.reverse()  # the first root on top
        push = stack.append
        pop = stack.pop
        while stack:
            n = pop()
            if n is _OP_CALL:  # the hot path: an operator call whose arguments are done
                n = pop()
                args = n.args
                for a in args:  # rebuilt only when an argument changed
                    if memo[a] is not a:
                        updated = Call(n.op, tuple([memo[a] for a in args]), n.attrs, _checked=True)
                        break
                else:
                    updated = n
                if h_call is not None:
                    self.original = n
                    result = h_call(self, updated)
                    if result is not updated:
                        if result is None:
                            result = updated
                        elif not isinstance(result, Expr):
                            raise WellFormedError(f"{type(self).__name__}.visit_Call returned "
                                                  f"{result!r}, not an expression")
                else:
                    result = updated
                memo[n] = result
                if result is not n and rec is not None:
                    olds.append(n)
                    news.append(result)
                continue
            if n is _DONE:  # children done: process the node below the marker
                n = pop()
                k = type(n)
                updated = rebuild(n, memo)
                h = hooks.get(k)
                if h is not None:
                    self.original = n
                    result = h(self, updated)
                    if result is not updated:
                        result = _hook_result(self, n, result, updated)
                else:
                    result = updated
                memo[n] = result
                if result is not n and rec is not None:
                    olds.append(n)
                    news.append(result)
                continue
            if n in memo:
                continue
            if skip is not None and not skip(n):
                memo[n] = n
                continue
            k = type(n)
            if k is Call:
                op = n.op
                push(n)
                if type(op) is Op:
                    kids = n.args
                    push(_OP_CALL)
                else:
                    kids = (op, *n.args)
                    push(_DONE)
            elif k in passive:
                memo[n] = n
                continue
            else:
                kids = n.children()
                push(n)
                push(_DONE)  # two slots per pending node, no tuple
            # children pushed last first (left to right); leaves without hooks memoized at once
            nk = len(kids)
            if nk == 1:
                c = kids[0]
                if c not in memo:
                    if type(c) in passive:
                        memo[c] = c
                    else:
                        push(c)
            elif nk == 2:
                c = kids[1]
                if c not in memo:
                    if type(c) in passive:
                        memo[c] = c
                    else:
                        push(c)
                c = kids[0]
                if c not in memo:
                    if type(c) in passive:
                        memo[c] = c
                    else:
                        push(c)
            else:
                for c in reversed(kids):
                    if c not in memo:
                        if type(c) in passive:
                            memo[c] = c
                        else:
                            push(c)
        if olds:
            self._record(rec, olds, news)

    def _record(self, rec: Any, olds: list[Node], news: list[Node]) -> None:
        """Each replacement ``new`` and every node freshly created under it derive from ``old``.

        Recorded once the walk is done, so "fresh" does not depend on the visit order: a node
        under a replacement is fresh when the walk never met it (it is not in ``memo``) and no
        earlier replacement made it.
        """
        memo = self.memo
        produced: set[Node] | None = self.__dict__.get("_produced")
        if produced is None:
            produced = self._produced = set()
        add_one_old = rec.edges.add_one_old
        for i in range(len(olds)):
            new = news[i]
            ids = [new.id]
            if new in memo and type(new) is not Var:  # a node of the input (x + 0 -> x) goes on
                rec.edges.add(new.id, new.id)  # standing for itself (a variable is only a name)
            produced.add(new)
            stack = list(new.children())
            while stack:
                c = stack.pop()
                if c in memo or c in produced:
                    continue
                produced.add(c)
                ids.append(c.id)
                stack.extend(c.children())
            add_one_old(ids, olds[i].id)  # the compact buffer: one id per edge, no tuples


class Rewriter(ExprMutator):
    """The base of passes' rewrites: an :class:`ExprMutator` with three more controls.

    * ``forward(node)``: return an expression to make ``node`` stand for it — the
      result of ``node`` is the result of that expression (walked if needed), no
      hook runs for ``node`` and no lineage edge is recorded for it (the pass says
      what became of it: :func:`pyir.eliminate`, :func:`pyir.derive`).  A dropped
      ``let`` forwards to its body; a substituted variable to its value.  A node
      that forwards into an expression using it is an error (:meth:`cycle_error`).
    * ``children(node)``: the children of ``node`` to rewrite first, in that order
      (default ``node.children()``); a child left out is kept as it is in ``node``
      (e.g. ``()`` for a function whose body a pass does not enter).
    * ``record_lineage = False`` (class attribute): no automatic edges.

    Only the controls a subclass overrides cost anything.

    >>> import pyir
    >>> x = pyir.var("x", shape=(2,))
    >>> v = pyir.var("v")
    >>> class Inline(Rewriter):          # substitute let variables by their values
    ...     def forward(self, n):
    ...         if type(n) is pyir.Let:
    ...             return n.body
    ...         if n is v:
    ...             return e
    ...         return None
    >>> e = pyir.op.exp(x)
    >>> Inline().visit(pyir.Let(v, e, pyir.op.add(v, v))) is pyir.op.add(e, e)
    True
    """

    _general: ClassVar[bool] = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._general = cls.forward is not Rewriter.forward or cls.children is not Rewriter.children

    def forward(self, node: Node) -> Expr | None:
        """An expression ``node`` stands for (its result is that expression's), or None."""
        return None

    def children(self, node: Node) -> tuple[Node, ...]:
        """The children of ``node``, in the order they are rewritten."""
        return node.children()

    def cycle_error(self, node: Node) -> Exception:
        """The error for a node that forwards into an expression using it."""
        return WellFormedError(f"{type(self).__name__}: {node!r} stands for an expression that uses it")

    def _walk(self, roots: list[Expr]) -> None:
        if not self._general:
            super()._walk(roots)
            return
        memo = self.memo
        cls = type(self)
        hooks = self._hooks
        passive = self._leaves_without_hooks(hooks)
        skip = None if cls.should_visit is ExprMutator.should_visit else self.should_visit
        fwd = self.forward if cls.forward is not Rewriter.forward else None
        kids_of = self.children if cls.children is not Rewriter.children else None
        rec = current_recorder() if self.record_lineage else None
        active: set[Node] = set()  # nodes waiting for the expression they forward to
        olds: list[Node] = []
        news: list[Node] = []
        stack: list[Any] = roots
        stack.reverse()
        push = stack.append
        pop = stack.pop
        while stack:
            n = pop()
            if n is _DONE:
                n = pop()
                try:
                    updated = rebuild(n, memo)
                except KeyError:  # children() left some out: those are kept as they are
                    updated = rebuild(n, _Kept(memo))  # type: ignore[arg-type]
                h = hooks.get(type(n))
                if h is not None:
                    self.original = n
                    result = h(self, updated)
                    if result is not updated:
                        result = _hook_result(self, n, result, updated)
                else:
                    result = updated
                memo[n] = result
                if result is not n and rec is not None:
                    olds.append(n)
                    news.append(result)
                continue
            if n is _FORWARDED:
                t = pop()
                n = pop()
                memo[n] = memo[t]
                active.discard(n)
                continue
            if n in memo:
                continue
            if skip is not None and not skip(n):
                memo[n] = n
                continue
            if fwd is not None:
                t = fwd(n)
                if t is not None:
                    if n in active:
                        raise self.cycle_error(n)
                    r = memo.get(t)
                    if r is not None:
                        memo[n] = r
                        continue
                    if t not in n.children():  # a child cannot lead back to n: no need to watch
                        active.add(n)
                    push(n)
                    push(t)
                    push(_FORWARDED)
                    push(t)
                    continue
            if type(n) in passive:
                memo[n] = n
                continue
            kids = kids_of(n) if kids_of is not None else n.children()
            push(n)
            push(_DONE)
            if fwd is None:  # a leaf without a hook cannot forward: memoize it at once
                for c in reversed(kids):
                    if c not in memo:
                        if type(c) in passive:
                            memo[c] = c
                        else:
                            push(c)
            else:
                for c in reversed(kids):
                    if c not in memo:
                        push(c)
        if olds:
            self._record(rec, olds, news)


_FORWARDED: Any = object()  # stack marker: the node two slots below stands for the one just below
_OP_CALL: Any = object()  # stack marker: the node below is a call of an operator, its arguments done


class _Kept:
    """``memo`` where a node without an entry stands for itself."""

    __slots__ = ("memo",)

    def __init__(self, memo: dict[Node, Any]) -> None:
        self.memo = memo

    def __getitem__(self, n: Node) -> Any:
        return self.memo.get(n, n)


# -- scoped let rewriting -----------------------------------------------------------------------

# work-stack opcodes of BindingRewriter
_ENTER, _VALUE_DONE, _KEPT_EXIT, _DROPPED_EXIT, _EXIT = range(5)


class _Substitution(ExprMutator):
    """Substitution of dropped variables, memoized: the let-free parts of a BindingRewriter."""

    def __init__(self, mapping: dict[Node, Expr]) -> None:
        super().__init__()
        self.memo.update(mapping)

    def of(self, n: Expr) -> Expr:
        """The substituted ``n`` (cheap for a call whose arguments are unchanged)."""
        memo = self.memo
        r = memo.get(n)
        if r is not None:
            return r
        if type(n) is Call and type(n.op) is Op:
            for a in n.args:
                ra = memo.get(a)
                if ra is None:
                    if type(a) not in _LEAVES:  # a leaf without an entry stands for itself
                        break
                elif ra is not a:
                    break
            else:
                memo[n] = n
                return n
        return self.visit(n)


class BindingRewriter:
    """Rewrite the ``let`` bindings of an expression in scope order, with lexical scopes.

    Subclasses define ``bind(let, value)``: called for each ``let`` reached, in
    evaluation order, with its value already rewritten; it returns None to keep the
    binding (its body is then rewritten in a new scope, after which
    ``unbind(let, value)`` is called), or the expression that replaces the let's
    variable in its body (the binding is dropped and the let becomes its body).
    Let-free subexpressions are rewritten by substituting the dropped variables;
    nodes containing lets are memoized per scope, so a node reached from two scopes
    (an ``if`` branch and its context, say) is rewritten for each.  Iterative: a
    10^6-deep let chain is fine.

    Lineage (inside a pass): a rebuilt node derives from its original; a dropped
    binding's variable derives into its replacement and its let into the result of
    its body; substituted let-free nodes record as :class:`ExprMutator` does.
    """

    def bind(self, let: Let, value: Expr) -> Expr | None:
        """None to keep ``let`` (with its rewritten ``value``), or the replacement of its variable."""
        return None

    def unbind(self, let: Let, value: Expr) -> None:
        """Called after the body of a kept binding was rewritten."""

    def visit(self, root: Expr) -> Expr:
        """The rewritten ``root`` (the same object when nothing changed)."""
        d = Derivations()
        derive = d.derive
        # The innermost substitution is the one in use.  ``memo`` keeps, per let-containing node,
        # the scope it was last rewritten in, the result and, for a dropped let, the replacement
        # of its variable.  A let reached again in another scope and decided
        # otherwise gets a fresh substitution for its body: the memoized let-free nodes under it
        # were substituted for the other decision.
        subs: list[_Substitution] = [_Substitution({})]
        scope_subst: dict[Node, Expr] = {}  # variable -> replacement, for the bindings dropped in scope
        memo: dict[Node, tuple[Any, ...]] = {}
        scope = 0  # id of the current set of bindings in scope
        next_scope = 1
        results: list[Any] = []
        push_res = results.append
        stack: list[tuple[Any, ...]] = [(_ENTER, root)]
        push = stack.append
        pop = stack.pop
        while stack:
            frame = pop()
            code, n = frame[0], frame[1]
            if code == _ENTER:
                if not n._mask & F_LET:
                    push_res(subs[-1].of(n))
                    continue
                e = memo.get(n)
                if e is not None and e[0] == scope:
                    push_res(e[1])
                    continue
                if type(n) is Let:
                    push((_VALUE_DONE, n))
                    push((_ENTER, n.value))
                else:
                    kids = n.children()
                    push((_EXIT, n, scope, kids))
                    for c in reversed(kids):
                        push((_ENTER, c))
            elif code == _VALUE_DONE:
                value = results.pop()
                v = n.var
                repl = self.bind(n, value)
                if repl is None:
                    repl = v
                e = memo.get(n)  # (scope, result) if kept, (scope, result, replacement) if dropped
                fresh = e is not None and (e[2] if len(e) == 3 else v) is not repl  # decided otherwise
                sub = subs[-1]
                if fresh:
                    mapping = dict(scope_subst)
                    if repl is not v:
                        mapping[v] = repl
                    sub = _Substitution(mapping)
                    subs.append(sub)
                outer_scope = scope
                scope = next_scope
                next_scope += 1
                if repl is v:
                    push((_KEPT_EXIT, n, outer_scope, value, fresh))
                else:
                    sub.memo[v] = repl  # later uses of v become uses of its replacement,
                    sub.memo.setdefault(repl, repl)  # which is no new node (for the lineage)
                    scope_subst[v] = repl
                    derive(repl, v)
                    push((_DROPPED_EXIT, n, outer_scope, value, fresh))
                push((_ENTER, n.body))
            elif code == _KEPT_EXIT:
                _, _, outer_scope, value, fresh = frame
                body = results.pop()
                self.unbind(n, value)
                if fresh:
                    subs.pop()
                scope = outer_scope
                if value is n.value and body is n.body:
                    out = n
                else:
                    out = Let(n.var, value, body)
                    derive(out, n)
                memo[n] = (scope, out)
                push_res(out)
            elif code == _DROPPED_EXIT:
                _, _, outer_scope, value, fresh = frame
                body = results.pop()
                v = n.var
                repl = scope_subst.pop(v)
                if fresh:
                    subs.pop()
                scope = outer_scope
                derive(body, n)
                memo[n] = (scope, body, repl)
                push_res(body)
            else:  # _EXIT
                _, _, sc, kids = frame
                k = len(kids)
                new_kids = results[len(results) - k:] if k else []
                del results[len(results) - k:]
                out = rebuild(n, dict(zip(kids, new_kids)))
                derive(out, n)
                memo[n] = (sc, out)
                push_res(out)
        return results[0]


# -- functional forms ---------------------------------------------------------------------------


class _FnMutator(ExprMutator):
    def __init__(self, fn: Callable[[Expr], Expr | None]) -> None:
        super().__init__()
        self.fn = fn

    def visit_any(self, node: Expr) -> Expr:
        r = self.fn(node)
        return node if r is None else r


_FnMutator._hooks = dict.fromkeys(_KINDS, _FnMutator.visit_any)


def rewrite(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Any:
    """Functional post-order rewrite: ``fn`` sees each distinct node once, with its
    children already rewritten, and returns a replacement (or None to keep it).

    >>> import pyir
    >>> x = pyir.var("x", shape=(2,))
    >>> y = pyir.op.exp(pyir.op.exp(x))
    >>> z = rewrite(y, lambda n: pyir.op.log(n.args[0]) if isinstance(n, pyir.Call) else None)
    >>> pyir.astext(z).splitlines()[-1]
    'log(%0)'
    """
    return _FnMutator(fn).visit(expr)


class _Substitute(ExprMutator):
    def __init__(self, mapping: dict[Var, Expr]) -> None:
        super().__init__()
        self.memo.update(mapping)  # type: ignore[arg-type]


def substitute(expr: Expr, mapping: dict[Var, Expr]) -> Any:
    """Replace variables by expressions (e.g. parameters by arguments)."""
    return _Substitute(mapping).visit(expr)
