"""``Module``: an immutable, persistent mapping of global names to functions.

A module also carries the lineage side-table and the pass history (both
persistent), so a pass returns a new module sharing everything it did not
change.  ``copy.copy(mod) is mod``; updates return new modules.
"""

from __future__ import annotations

import contextlib
import difflib
import weakref
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pyrsistent import PMap, PVector, pmap, pvector

from ..errors import ImmutableError, InternalError, PyIRError, TypeCheckError, WellFormedError
from . import hooks
from .adt import Constructor, TypeData
from .answers import FindResult, History, Listing, Origins, Table, table_rows
from .expr import Call, Expr, Function, GlobalVar, Let, Op, Var
from .lineage import _id_of, module_index
from .lineage import find as _find
from .lineage import history as _history
from .lineage import origins as _origins
from .node import F_FUNC, F_LET, F_VAR, Node, gc_paused
from .traverse import binders_of, count_nodes, free_vars, global_vars, scope_info
from .types import FuncType, Type

__all__ = ["Module"]


def _name(key: str | GlobalVar) -> str:
    if type(key) is GlobalVar:
        return key.name_hint
    if isinstance(key, str):
        return GlobalVar(key).name_hint  # the same rules as global names (non-empty, valid Unicode)
    raise WellFormedError(f"module keys are names or GlobalVars, got {key!r}")


class Module:
    """An immutable module: ``Module({"main": f, "helper": g})``.

    Functions call each other through ``GlobalVar(name)``.  Iteration yields
    names in sorted order with ``main`` first.
    """

    __slots__ = ("_cache", "_funcs", "_history", "_types")
    _funcs: PMap
    _history: PVector
    _cache: dict[str, Any]
    _types: PMap  # name -> TypeData: the module's type definitions (``type List[A] {...}``)

    def __init__(self, functions: Mapping[str | GlobalVar, Function] | None = None,
                 types: Iterable[TypeData] | Mapping[str, TypeData] | None = None) -> None:
        funcs: dict[str, Function] = {}
        for k, f in (functions or {}).items():
            if not isinstance(f, Function):
                raise WellFormedError(f"module entry {k!r} must be a Function, got {type(f).__name__}")
            funcs[_name(k)] = f
        _check_functions(funcs, funcs)
        pm = pmap(funcs)
        _init(self, pm, pvector())
        if types:
            object.__setattr__(self, "_types", _type_map(types))
        if len(funcs) > 1:
            self._cache["owners"] = _build_owners(pm)

    @classmethod
    def from_expr(cls, expr: Expr, name: str = "main") -> Module:
        """A module whose ``main`` is ``expr`` (wrapped in a Function over its free vars,
        in first-use order).  A Function is taken as it is, so it must be closed."""
        if not isinstance(expr, Expr):
            raise WellFormedError(f"Module.from_expr takes an expression, got {type(expr).__name__}")
        if not isinstance(expr, Function):
            expr = Function(free_vars(expr), expr)
        return cls({name: expr})

    # -- immutability -----------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"modules are immutable (cannot set {name!r}); use with_function")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"modules are immutable (cannot delete {name!r})")

    def __setitem__(self, key: str | GlobalVar, value: Any) -> None:  # Relay's mod[name] = f
        name = _name(key)
        raise ImmutableError(f"modules are immutable (cannot set mod[{name!r}]): use "
                             f"mod = mod.with_function({name!r}, f), which returns a new module")

    def __delitem__(self, key: str | GlobalVar) -> None:
        name = _name(key)
        raise ImmutableError(f"modules are immutable (cannot delete mod[{name!r}]): use "
                             f"mod = mod.without_function({name!r})")

    def update_func(self, key: str | GlobalVar, func: Any) -> None:
        """Relay's in-place update: an ImmutableError pointing to :meth:`with_function`."""
        name = _name(key)
        raise ImmutableError(f"modules are immutable (no update_func): use "
                             f"mod = mod.with_function({name!r}, f), which returns a new module")

    def update(self, other: Any = None) -> None:
        """Relay's in-place update: an ImmutableError pointing to :meth:`with_functions`."""
        raise ImmutableError("modules are immutable (no update): use "
                             "mod = mod.with_functions({name: f, ...}), which returns a new module")

    def __copy__(self) -> Module:
        return self

    def __deepcopy__(self, memo: Any) -> Module:
        return self

    def __reduce__(self) -> Any:  # replaced by the serializer's copyreg registration
        raise InternalError("pickling modules is provided by pyir.serialize (import pyir)")

    # -- mapping --------------------------------------------------------------------
    def __getitem__(self, key: str | GlobalVar) -> Function:
        name = _name(key)
        try:
            return self._funcs[name]
        except KeyError:
            raise WellFormedError(f"module has no function @{name}; it has {self.names()}") from None

    def __contains__(self, key: object) -> bool:
        if type(key) is GlobalVar:
            key = key.name_hint
        elif not isinstance(key, str):
            return False
        return key in self._funcs

    def names(self) -> list[str]:
        """Function names: ``main`` first, then sorted."""
        return sorted(self._funcs, key=lambda n: (n != "main", n))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._funcs)

    def items(self) -> list[tuple[str, Function]]:
        """``(name, function)`` pairs in ``names()`` order."""
        return [(n, self._funcs[n]) for n in self.names()]

    def functions(self) -> PMap:
        """The persistent name -> Function map."""
        return self._funcs

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar for a function of this module."""
        if name not in self._funcs:
            raise WellFormedError(f"module has no function @{name}")
        return GlobalVar(name)

    # -- type definitions (ADTs) ------------------------------------------------------------
    def type_definitions(self) -> PMap:
        """The persistent name -> :class:`~pyir.ir.adt.TypeData` map of the module's type
        definitions (``type List[A] { Cons(A, List[A]), Nil }``)."""
        return self._types

    def type_definition(self, name: str | Any) -> TypeData:
        """The definition of the type ``name`` (a str or a GlobalTypeVar)."""
        key = name if isinstance(name, str) else getattr(name, "name_hint", name)
        td = self._types.get(key)
        if td is None:
            raise WellFormedError(f"module has no type definition {key}; it has {sorted(self._types)}")
        return td

    def constructor(self, name: str) -> Constructor:
        """The constructor ``name`` of one of the module's type definitions."""
        for td in self._types.values():
            for c in td.constructors:
                if c.name_hint == name:
                    return c
        raise WellFormedError(f"module has no constructor {name}")

    def with_type_definition(self, td: TypeData) -> Module:
        """A new module with the type definition ``td`` added (or replacing the one of its name)."""
        if type(td) is not TypeData:
            raise WellFormedError(f"a type definition must be a TypeData, got {type(td).__name__}")
        name = td.header.name_hint
        if self._types.get(name) is td:
            return self
        m = self._derive(self._funcs)
        object.__setattr__(m, "_types", self._types.set(name, td))
        return m

    # -- functional updates --------------------------------------------------------------
    def _derive(self, funcs: PMap, history: PVector | None = None) -> Module:
        m = object.__new__(Module)
        _init(m, funcs, self._history if history is None else history)
        object.__setattr__(m, "_types", self._types)
        if funcs is self._funcs and "owners" in self._cache:  # same functions: same owner index
            m._cache["owners"] = self._cache["owners"]
        return m

    def with_function(self, name: str | GlobalVar, func: Function) -> Module:
        """A new module with ``name`` bound to ``func`` (this module is unchanged)."""
        if not isinstance(func, Function):
            raise WellFormedError(f"module entries must be Functions, got {type(func).__name__}")
        n = _name(name)
        if self._funcs.get(n) is func:
            return self
        funcs = self._funcs.set(n, func)
        old = self._funcs.get(n)
        _check_functions(funcs, (n,))
        return self._with_owners(self._derive(funcs), [] if old is None else [old], [(n, func)])

    def without_function(self, name: str | GlobalVar) -> Module:
        """A new module without ``name``."""
        n = _name(name)
        if n not in self._funcs:
            raise WellFormedError(f"module has no function @{n}")
        return self._with_owners(self._derive(self._funcs.remove(n)), [self._funcs[n]], [])

    def with_functions(self, updates: Mapping[str, Function | None] | Mapping[GlobalVar, Function | None]
                       ) -> Module:
        """Batch update: map names (or GlobalVars) to new functions, or to None to remove them."""
        ev: Any = self._funcs.evolver()
        changed: list[str] = []
        for key, f in updates.items():
            k = _name(key)
            if f is None:
                if k in ev:
                    del ev[k]
            elif not (k in ev and ev[k] is f):
                if not isinstance(f, Function):
                    raise WellFormedError(f"module entries must be Functions, got {type(f).__name__}")
                ev[k] = f
                changed.append(k)
        if not ev.is_dirty():
            return self
        funcs = ev.persistent()
        _check_functions(funcs, [k for k in changed if k in funcs])
        old = self._funcs
        touched = {_name(key) for key in updates}
        removed = [old[k] for k in touched if k in old and funcs.get(k) is not old[k]]
        added = [(k, funcs[k]) for k in touched if k in funcs and old.get(k) is not funcs[k]]
        return self._with_owners(self._derive(funcs), removed, added)

    def _with_owners(self, m: Module, removed: list[Function], added: list[tuple[str, Function]]) -> Module:
        """Give the derived module ``m`` its variable-owner index, updated from this module's in
        time linear in the changed functions (a WellFormedError if a variable would be bound in
        two functions by different binders)."""
        if len(m._funcs) < 2:
            return m
        index = self._cache.get("owners")
        m._cache["owners"] = (_build_owners(m._funcs) if index is None
                              else _update_owners(index, m._funcs, removed, added))
        return m

    # -- types ---------------------------------------------------------------------------------
    def _type_cache(self) -> dict[Node, Type]:
        c = self._cache.get("types")
        if c is None:
            c = self._cache["types"] = {}
        return c

    def _let_binders(self) -> dict[Var, Node]:
        """The let that bound each unannotated variable typed through this module's cache."""
        c = self._cache.get("let_binders")
        if c is None:
            c = self._cache["let_binders"] = {}
        return c

    def global_type(self, gv: GlobalVar | str) -> Type:
        """The FuncType of global function ``gv`` (inferred if not annotated)."""
        name = _name(gv)
        memo: dict[str, Type] = self._cache.setdefault("global_types", {})
        t = memo.get(name)
        if t is not None:
            return t
        if name not in self._funcs:
            raise TypeCheckError(f"@{name} is not a function of this module (it has {self.names()})")
        for fname in self._call_order(name):
            if fname in memo:
                continue
            f = self[fname]
            if f.ret_type is not None and all(p.type_annotation is not None for p in f.params):
                memo[fname] = FuncType([p.type_annotation for p in f.params], f.ret_type)  # type: ignore[misc]
            else:
                memo[fname] = hooks.infer_type(f, self)
        return memo[name]

    def _call_order(self, root: str) -> list[str]:
        """Functions to type before ``root``: callees first; unannotated cycles raise."""
        def needs_body(fn: str) -> bool:
            f = self[fn]
            return f.ret_type is None

        order: list[str] = []
        state: dict[str, int] = {}
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            fn, done = stack.pop()
            if done:
                state[fn] = 2
                order.append(fn)
                continue
            if state.get(fn) == 2:
                continue
            state[fn] = 1
            stack.append((fn, True))
            if not needs_body(fn):
                continue
            for g in global_vars(self[fn]):
                callee = g.name_hint
                if callee not in self._funcs:
                    raise TypeCheckError(f"@{fn} calls @{callee}, which is not in the module")
                st = state.get(callee)
                if st == 1 and needs_body(callee):
                    raise TypeCheckError(f"@{callee} is recursive: give it a return type annotation")
                if st is None:
                    stack.append((callee, False))
        return order

    def type_of(self, expr: Expr) -> Type:
        """The type of an expression of this module (global calls resolved here)."""
        return hooks.infer_type(expr, self)

    # -- lineage and history (see pyir.ir.lineage) ----------------------------------------------------
    @property
    def pass_records(self) -> PVector:
        """The :class:`~pyir.ir.lineage.PassRecord` of every pass that produced this module, oldest first."""
        return self._history

    def find(self, expr_or_id: Any) -> FindResult:
        """Expressions of this module that are, or were derived from, ``expr_or_id``
        (an expression of any earlier module of the pipeline, or its id); empty if eliminated.

        A :class:`~pyir.ir.answers.FindResult`: a list of the hits (sorted by id) that also
        describes them (``rows()``, a text and an HTML table: name in ``print(mod)``, function,
        kind, operator, type) and names the ``representative``, the hit that plays the
        original's role (the conv inside a fused function, not the call of that function)."""
        return FindResult(_find(self, expr_or_id), self, _id_of(expr_or_id))

    def origins(self, expr_or_id: Any, since: int = 0) -> Origins:
        """The root origin ids (before the first recorded pass, or before pass record
        number ``since``) that ``expr_or_id`` came from.

        An :class:`~pyir.ir.answers.Origins`: a set of ids that resolves them to nodes of the
        original module (``nodes()``, while it is alive) and to what a frontend recorded
        (``sources()``, ``source_names()``: ONNX node names), with a text and an HTML table."""
        q = _id_of(expr_or_id)
        return _origins(self, q, since, lambda ids: Origins(ids, self, q, since))

    def history(self, expr_or_id: Any) -> History:
        """The steps (pass name, before id, after id, the rewrite rule that fired) that led to
        ``expr_or_id``, or that carried it forward from an earlier module (``after`` None:
        eliminated).  A :class:`~pyir.ir.answers.History`: a list of
        :class:`~pyir.ir.lineage.Step` shown as a table of short before -> after snippets."""
        return History(_history(self, expr_or_id), self, _id_of(expr_or_id))

    def node_by_id(self, node_id: bytes) -> Expr | None:
        """The expression of this module with id ``node_id``, or None."""
        return module_index(self).get(node_id)  # type: ignore[return-value]

    # -- text and navigation -----------------------------------------------------------------------
    def astext(self, *, show_types: bool = False, **kw: Any) -> str:
        """Relay-like text of the whole module (see :func:`pyir.text.printer.astext`; options
        ``order``, ``show_meta_data``, ``inline_limit``).  ``show_types=True`` types the module
        first and prints each binding's type as a comment (``/* ty=... */``)."""
        if show_types:
            self._typed()
        return hooks.astext(self, show_types=show_types, **kw)

    def __str__(self) -> str:
        return hooks.astext(self, show_meta_data=False, order="top-down")

    def _typed(self) -> None:
        """Type every function (the types are cached on the nodes); ill-typed ones stay untyped."""
        for name in self.names():
            with contextlib.suppress(PyIRError):
                hooks.infer_type(self._funcs[name], self)

    def _printed(self) -> tuple[str, list[Any]]:
        """``str(self)`` and the printer's ``(node, function, label, line)`` entries (built once)."""
        got = self._cache.get("printed")
        if got is None:
            entries: list[Any] = []
            with gc_paused():
                text = hooks.astext(self, show_meta_data=False, order="top-down", names_out=entries)
            got = self._cache["printed"] = (text, entries)
        return got

    def _labels(self) -> tuple[dict[str, dict[str, Node]], dict[Node, tuple[str, str]]]:
        """function -> label -> node, and node -> (function, label) of its first printed binding."""
        got = self._cache.get("labels")
        if got is None:
            by_fn: dict[str, dict[str, Node]] = {}
            first: dict[Node, tuple[str, str]] = {}
            entries = self._printed()[1]
            with gc_paused():
                for n, fn, label, _line in entries:
                    labels = by_fn.get(fn)
                    if labels is None:
                        labels = by_fn[fn] = {}
                    if label not in labels:
                        labels[label] = n
                    if n not in first:
                        first[n] = (fn, label)
            got = self._cache["labels"] = (by_fn, first)
        return got

    def _where(self, node: Node) -> str | None:
        """The function in which ``node`` is first printed (None: it is not printed)."""
        hit = self._labels()[1].get(node)
        return None if hit is None else hit[0]

    def _node_count(self) -> int:
        return len(module_index(self))

    def _post_order(self) -> Iterable[Node]:
        return module_index(self).values()

    def _depths(self) -> dict[Node, int]:
        """node -> how many functions enclose it within its module function (the deepest, for a
        node met at several depths); built once, iteratively."""
        got = self._cache.get("depths")
        if got is None:
            got = {}
            for f in self._funcs.values():  # (only the hits' candidates need it: small answers)
                stack: list[tuple[Node, int]] = [(f.body, 0)]
                while stack:
                    n, d = stack.pop()
                    if got.get(n, -1) >= d:
                        continue
                    got[n] = d
                    inner = d + 1 if type(n) is Function else d
                    stack.extend((c, inner) for c in n.children())
            self._cache["depths"] = got
        return got

    def name_of(self, node: Any, function: str | None = None) -> str:
        """The name of ``node`` (an expression or its id) in ``print(mod)`` (``mod.show()``):
        ``%3`` for the bindings of ``@main``, ``@f:%3`` for those of another function ``f``.

        Bindings are numbered in print order per function, variables keep their (uniquified)
        name hints, functions are ``@f``; a node printed without a name of its own is named by
        where it stands: a let's value by its variable (``%x``), the result of a scope by the
        scope and ``.return`` (``@main.return``, ``%1.return`` for the body of the function bound
        to ``%1``, ``%4.then.return``).  Names are stable for one module (the printer is
        deterministic); :meth:`node_at` is the inverse."""
        n = node if isinstance(node, Node) else module_index(self).get(_id_of(node))
        by_fn, first = self._labels()
        if function is not None:
            fn = _name(function)
            label = next((lab for lab, m in by_fn.get(fn, {}).items() if m is n), None)
        else:
            hit = first.get(n) if n is not None else None
            fn, label = hit if hit is not None else ("", None)
        if label is None:
            what = hooks.short_repr(node) if isinstance(node, Node) else f"{node!r:.80}"
            raise WellFormedError(f"{what} is not printed in this module"
                                  + (f" (in @{function})" if function else ""))
        return label if fn == "main" or label.startswith("@") else f"@{fn}:{label}"

    def node_at(self, name: str, function: str | None = None) -> Node:
        """The node printed as ``name`` in ``print(mod)`` (see :meth:`name_of`): ``"%3"`` (in
        ``function``, by default ``@main``, else the one function that has it), ``"@f:%3"``,
        ``"@f"`` (the function), ``"@main.return"``."""
        if not isinstance(name, str):
            raise WellFormedError(f"node_at takes a printed name such as '%3', got {name!r:.80}")
        by_fn, _first = self._labels()
        label = name.strip()
        if function is None and label.startswith("@") and ":" in label:
            fn_text, label = label.split(":", 1)
            function = fn_text[1:]
        if function is not None:
            fns = [_name(function)]
        elif label.startswith("@"):
            fns = [label[1:].split(".", 1)[0] if label[1:].split(".", 1)[0] in by_fn else "main"]
        else:
            fns = (["main"] if label in by_fn.get("main", {})
                   else [f for f in self.names() if label in by_fn.get(f, {})])
        if len(fns) == 1 and label in by_fn.get(fns[0], {}):
            return by_fn[fns[0]][label]
        if len(fns) > 1:
            shown = ", ".join("@" + f for f in fns)
            raise WellFormedError(f"{name!r} is printed in several functions ({shown}): say which, e.g. "
                                  f"'@{fns[0]}:{label}'")
        pool = sorted(by_fn.get(fns[0], {}) if fns else {lab for d in by_fn.values() for lab in d})
        close = difflib.get_close_matches(label, pool, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if label[1:].isdigit() and label.startswith("%"):
            k = sum(1 for lab in pool if lab[1:].isdigit())
            hint = f"; did you mean one of %0 ... %{k - 1}?" if k else "; it binds no %N"
        where = f" in @{fns[0]}" if fns else ""
        raise WellFormedError(f"no node is printed as {name!r}{where}{hint}")

    def show(self, highlight: Any = None, *, show_types: bool = False) -> Listing:
        """``print(mod)``'s text as a displayable :class:`~pyir.ir.answers.Listing` whose text marks
        (``>>``) and HTML colours the lines of the ``highlight`` nodes (nodes, ids, or an answer
        such as ``mod.find(x)``); ``show_types`` adds each binding's type."""
        text, entries = self._printed()
        if show_types:
            self._typed()
            text = hooks.astext(self, show_meta_data=False, order="top-down", show_types=True)
        marked: set[int] = set()
        missing = 0
        if highlight is not None:
            want: set[Node] = set()
            items = [highlight] if isinstance(highlight, (Node, bytes, str)) else list(highlight)
            idx = module_index(self)
            for h in items:
                n = h if isinstance(h, Node) else idx.get(_id_of(h))
                if n is None:
                    missing += 1
                else:
                    want.add(n)
            found: set[Node] = set()
            for n, _fn, _label, line in entries:
                if n in want:
                    marked.add(line)
                    found.add(n)
            missing += len(want - found)
        return Listing(self, text, marked, missing)

    def tabular(self, function: str | GlobalVar = "main") -> Table:
        """A table of ``function``'s bindings in print order, like ``torch.fx``'s ``print_tabular``:
        name, operator, arguments, type, attributes, origins (a text and an HTML form)."""
        name = _name(function)
        if name not in self._funcs:
            raise WellFormedError(f"module has no function @{name}; it has {self.names()}")
        self._typed()
        return table_rows(self, name)

    def __repr__(self) -> str:
        names = self.names()
        shown = ", ".join("@" + n for n in names[:8]) + (", ..." if len(names) > 8 else "")
        return f"<Module [{shown}] {count_nodes(list(self._funcs.values()))} nodes>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


# Functions already found well-formed on their own (nodes are immutable: the answer never changes).
_closed_checked: weakref.WeakSet[Function] = weakref.WeakSet()


def _closed_without_inner_binders(f: Function) -> bool:
    """True if ``f``'s body has no Let or Function and uses only ``f``'s parameters.

    Such a function binds each variable once (its parameters are distinct), so it is
    well-formed; anything else (False) takes the general scope walk.  (The check of every
    module built, so its loop does as little as it can per node: one set holds the
    parameters and the nodes met, so a child already met or a parameter costs one lookup
    when it is popped; an operator call's args go onto the stack in one C step; a subgraph
    without variables, by its mask, is not entered.)
    """
    body = f.body
    if body._mask & (F_LET | F_FUNC):
        return False
    seen: set[Node] = set(f.params)
    if type(body) is Var:
        return body in seen
    add = seen.add
    stack: list[Node] = [body]
    pop = stack.pop
    while stack:
        n = pop()
        if n in seen:
            continue
        if type(n) is Call and type(n.op) is Op:
            add(n)
            stack += n.args
        elif type(n) is Var:  # not a parameter
            return False
        elif n._mask & F_VAR:
            add(n)
            stack += n.children()
    return True


def _inner_function_ok(fn: Function, bound: set[Var], inner: set[Var]) -> bool:
    """Whether ``fn``, met inside a function being checked, is closed without inner binders
    (a primitive function of FuseOps: checked once, and remembered) and binds parameters
    bound neither in ``bound`` (the enclosing function's parameters and lets) nor by another
    inner function (``inner``, which receives ``fn``'s parameters).  Callers meet each
    function node once: one node met at several places is one binder."""
    if fn.body._mask & (F_LET | F_FUNC):
        return False
    if fn not in _closed_checked:
        if not _closed_without_inner_binders(fn):
            return False
        _closed_checked.add(fn)
    for p in fn.params:
        if p in bound or p in inner:
            return False
        inner.add(p)
    return True


def _closed_with_closed_functions(f: Function) -> bool:
    """True if ``f``'s body has no Let, uses (outside inner functions) only ``f``'s parameters,
    and every function inside it is closed without inner binders (as FuseOps makes them) and
    binds its own parameters (:func:`_inner_function_ok`).  Such a function is well-formed;
    anything else (False) takes the general scope walk, which names the error.  The walk
    does not enter the inner functions."""
    body = f.body
    if body._mask & F_LET:
        return False
    params = set(f.params)
    return _uses_bound(body, params, set(), set())


def _uses_bound(e: Node, bound: set[Var], seen: set[Node], inner: set[Var]) -> bool:
    """Whether every variable in ``e`` (which holds no Let) is in ``bound`` or inside a closed
    inner function (:func:`_inner_function_ok`, its parameters into ``inner``); ``seen``
    remembers the non-variable nodes already found fine (``bound`` only grows)."""
    if e._mask & F_LET:
        return False
    if type(e) is Var:
        return e in bound
    stack: list[Node] = [e]
    pop = stack.pop
    add = seen.add
    while stack:  # the loop of _closed_without_inner_binders
        n = pop()
        if n in seen:
            continue
        if type(n) is Call and type(n.op) is Op:
            add(n)
            stack += n.args
        elif type(n) is Var:  # looked up where it is used
            if n not in bound:
                return False
        elif type(n) is Function:
            add(n)
            if not _inner_function_ok(n, bound, inner):
                return False
        elif n._mask & F_VAR:
            add(n)
            stack += n.children()
    return True


def _closed_let_spine(f: Function) -> bool:
    """True if ``f``'s body is a chain of lets (A-normal form, basic blocks) whose values and
    final expression hold no Let, and no function but closed ones without inner binders (as
    FuseOps makes them), each let binding a new variable and every use bound above it.  Such
    a function is well-formed; the check keeps one set of the bound variables (and of the
    few compound nodes met inside values), a fraction of the general scope walk's memory on
    a 10^6-deep let chain."""
    bound = set(f.params)
    if len(bound) != len(f.params):
        return False
    seen: set[Node] = set()
    inner: set[Var] = set()  # the parameters of the inner functions
    n: Node = f.body
    while type(n) is Let:
        let: Let = n
        v = let.var
        if v in bound or v in inner or not _uses_bound(let.value, bound, seen, inner):
            return False
        bound.add(v)
        n = let.body
    return _uses_bound(n, bound, seen, inner)


def _check_functions(funcs: Mapping[str, Function], changed: Iterable[str]) -> None:
    """Raise WellFormedError unless the module's functions are well-formed.

    Each changed function must be closed (no free variables) and bind each of
    its variables by one binder node.  Linear in the changed functions.  (Across
    the module, a variable must not be bound in two functions by different binder
    nodes -- hash-consing would make the nodes below it one node with two meanings,
    and two types: the module's variable-owner index checks that, see
    ``_build_owners``.)
    """
    for name in changed:
        f = funcs[name]
        if f in _closed_checked:
            continue
        # the common cases, each in one plain walk: no inner binders, a chain of lets, or
        # closed inner functions (a fused body)
        mask = f.body._mask
        if (_closed_without_inner_binders(f) if not mask & (F_LET | F_FUNC) else
                _closed_with_closed_functions(f) if not mask & F_LET else _closed_let_spine(f)):
            _closed_checked.add(f)
            continue
        info = scope_info(f)
        if info.twice is not None:
            v, a, b = info.twice
            raise WellFormedError(f"@{name}: variable %{v.name_hint} is bound twice (by {type(a).__name__} "
                                  f"#{a.id.hex()[:8]} and {type(b).__name__} #{b.id.hex()[:8]}); "
                                  "use a fresh pyir.var for each binding")
        if info.free:
            more = ", ..." if len(info.free) > 8 else ""
            shown = ", ".join("%" + v.name_hint for v in info.free[:8]) + more
            raise WellFormedError(f"@{name} has {len(info.free)} free variable(s): {shown}; a module "
                                  "function must bind every variable it uses (make them parameters, e.g. "
                                  "with Module.from_expr)")
        _closed_checked.add(f)


# The variable-owner index of a module with several functions: each variable bound in it maps
# to (its binder node, the number of distinct function nodes binding it there), with the number of
# names holding each function node.  Kept in the module's cache and updated from the parent's on
# every functional update, so building a module one ``with_function`` at a time is linear.
Owners = tuple[PMap, PMap]


def _conflict(funcs: Mapping[str, Function], v: Var, first: Node, other: Node, name: str) -> WellFormedError:
    where = [n for n in sorted(funcs) if n != name and any(
        w is v and b is first for w, b in binders_of(funcs[n]))]  # the error path only
    a, b = sorted([where[0] if where else "?", name])
    ba, bb = (first, other) if a != name else (other, first)
    return WellFormedError(f"variable %{v.name_hint} is bound in @{a} and in @{b} (by "
                           f"{type(ba).__name__} #{ba.id.hex()[:8]} and {type(bb).__name__} "
                           f"#{bb.id.hex()[:8]}); use a fresh pyir.var for each binding, in each function")


def _add_function(owners: Any, refs: Any, funcs: Mapping[str, Function], name: str, f: Function) -> None:
    c = refs[f] if f in refs else 0  # noqa: SIM401 (a pmap evolver has no .get)
    refs[f] = c + 1
    if c:  # one function node under two names: its binders are shared, not repeated
        return
    for v, binder in binders_of(f):
        if v in owners:
            prev, k = owners[v]
            if prev is not binder:
                raise _conflict(funcs, v, prev, binder, name)
            owners[v] = (prev, k + 1)
        else:
            owners[v] = (binder, 1)


def _build_owners(funcs: PMap) -> Owners:
    owners: dict[Var, tuple[Node, int]] = {}
    refs: dict[Function, int] = {}
    for name in sorted(funcs):
        _add_function(owners, refs, funcs, name, funcs[name])
    return pmap(owners), pmap(refs)


def _update_owners(index: Owners, funcs: PMap, removed: list[Function],
                   added: list[tuple[str, Function]]) -> Owners:
    owners, refs = index[0].evolver(), index[1].evolver()
    for f in removed:
        c = refs[f]
        if c > 1:
            refs[f] = c - 1
            continue
        del refs[f]
        for v, _binder in binders_of(f):
            b, k = owners[v]
            if k > 1:
                owners[v] = (b, k - 1)
            else:
                del owners[v]
    for name, f in sorted(added, key=lambda kv: kv[0]):
        _add_function(owners, refs, funcs, name, f)
    return owners.persistent(), refs.persistent()


_NO_TYPES: PMap = pmap()


def _type_map(types: Iterable[TypeData] | Mapping[str, TypeData]) -> PMap:
    """The name -> TypeData map of a module's type definitions (checked: TypeData values, one
    per name, constructor names unique across the module)."""
    tds = list(types.values()) if isinstance(types, Mapping) else list(types)
    out: dict[str, TypeData] = {}
    ctors: dict[str, str] = {}
    for td in tds:
        if type(td) is not TypeData:
            raise WellFormedError(f"module type definitions must be TypeData, got {type(td).__name__}")
        name = td.header.name_hint
        if name in out and out[name] is not td:
            raise WellFormedError(f"type {name} is defined twice")
        out[name] = td
        for c in td.constructors:
            other = ctors.setdefault(c.name_hint, name)
            if other != name:
                raise WellFormedError(f"constructor {c.name_hint} is defined by types {other} and {name}")
    return pmap(out)


def _init(m: Module, funcs: PMap, history: PVector) -> None:
    object.__setattr__(m, "_types", _NO_TYPES)
    object.__setattr__(m, "_funcs", funcs)
    object.__setattr__(m, "_history", history)
    object.__setattr__(m, "_cache", {})


def iter_functions(mod: Module) -> Iterable[tuple[str, Function]]:
    """``(name, function)`` pairs of ``mod``."""
    return mod.items()
