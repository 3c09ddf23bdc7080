"""``Module``: an immutable, persistent mapping of global names to functions.

A module also carries the lineage side-table and the pass history (both
persistent), so a pass returns a new module sharing everything it did not
change.  ``copy.copy(mod) is mod``; updates return new modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pyrsistent import PMap, PVector, pmap, pvector

from .errors import ImmutableError, TypeCheckError, WellFormedError
from .expr import Expr, Function, GlobalVar
from .node import Node
from .traverse import check_binders
from .types import FuncType, Type

__all__ = ["Module"]


def _name(key: str | GlobalVar) -> str:
    if type(key) is GlobalVar:
        return key.name_hint
    if isinstance(key, str):
        return key
    raise WellFormedError(f"module keys are names or GlobalVars, got {key!r}")


class Module:
    """An immutable module: ``Module({"main": f, "helper": g})``.

    Functions call each other through ``GlobalVar(name)``.  Iteration yields
    names in sorted order with ``main`` first.
    """

    __slots__ = ("_cache", "_funcs", "_history")
    _funcs: PMap
    _history: PVector
    _cache: dict[str, Any]

    def __init__(self, functions: Mapping[str | GlobalVar, Function] | None = None) -> None:
        funcs: dict[str, Function] = {}
        for k, f in (functions or {}).items():
            if not isinstance(f, Function):
                raise WellFormedError(f"module entry {k!r} must be a Function, got {type(f).__name__}")
            check_binders(f)
            funcs[_name(k)] = f
        _init(self, pmap(funcs), pvector())

    @classmethod
    def from_expr(cls, expr: Expr, name: str = "main") -> Module:
        """A module whose ``main`` is ``expr`` (wrapped in a Function over its free vars)."""
        if not isinstance(expr, Function):
            from .traverse import free_vars

            expr = Function(free_vars(expr), expr)
        return cls({name: expr})

    # -- immutability -----------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"modules are immutable (cannot set {name!r}); use with_function")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"modules are immutable (cannot delete {name!r})")

    def __copy__(self) -> Module:
        return self

    def __deepcopy__(self, memo: Any) -> Module:
        return self

    def __reduce__(self) -> Any:
        from .serialize import _reduce_module

        return _reduce_module(self)

    # -- mapping --------------------------------------------------------------------
    def __getitem__(self, key: str | GlobalVar) -> Function:
        name = _name(key)
        try:
            return self._funcs[name]  # type: ignore[no-any-return]
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

    # -- functional updates --------------------------------------------------------------
    def _derive(self, funcs: PMap, history: PVector | None = None) -> Module:
        m = object.__new__(Module)
        _init(m, funcs, self._history if history is None else history)
        return m

    def with_function(self, name: str | GlobalVar, func: Function) -> Module:
        """A new module with ``name`` bound to ``func`` (this module is unchanged)."""
        if not isinstance(func, Function):
            raise WellFormedError(f"module entries must be Functions, got {type(func).__name__}")
        n = _name(name)
        if self._funcs.get(n) is func:
            return self
        check_binders(func)
        return self._derive(self._funcs.set(n, func))

    def without_function(self, name: str | GlobalVar) -> Module:
        """A new module without ``name``."""
        n = _name(name)
        if n not in self._funcs:
            raise WellFormedError(f"module has no function @{n}")
        return self._derive(self._funcs.remove(n))

    def with_functions(self, updates: Mapping[str, Function | None] | Mapping[GlobalVar, Function | None]
                       ) -> Module:
        """Batch update: map names (or GlobalVars) to new functions, or to None to remove them."""
        ev = self._funcs.evolver()
        for key, f in updates.items():
            k = _name(key)
            if f is None:
                if k in self._funcs:
                    del ev[k]
            elif self._funcs.get(k) is not f:
                if not isinstance(f, Function):
                    raise WellFormedError(f"module entries must be Functions, got {type(f).__name__}")
                check_binders(f)
                ev[k] = f
        if not ev.is_dirty():
            return self
        return self._derive(ev.persistent())

    # -- types ---------------------------------------------------------------------------------
    def _type_cache(self) -> dict[Node, Type]:
        c = self._cache.get("types")
        if c is None:
            c = self._cache["types"] = {}
        return c  # type: ignore[no-any-return]

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
                from .typecheck import infer_type

                memo[fname] = infer_type(f, self)
        return memo[name]

    def _call_order(self, root: str) -> list[str]:
        """Functions to type before ``root``: callees first; unannotated cycles raise."""
        from .traverse import global_vars

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
        from .typecheck import infer_type

        return infer_type(expr, self)

    # -- lineage and history (see pyir.lineage) ----------------------------------------------------
    @property
    def pass_records(self) -> PVector:
        """The :class:`~pyir.lineage.PassRecord` of every pass that produced this module, oldest first."""
        return self._history

    def find(self, expr_or_id: Any) -> list[Expr]:
        """Expressions of this module that are, or were derived from, ``expr_or_id``
        (an expression of any earlier module of the pipeline, or its id); empty if eliminated."""
        from .lineage import find

        return find(self, expr_or_id)  # type: ignore[return-value]

    def origins(self, expr_or_id: Any, since: int = 0) -> set[bytes]:
        """The root origin ids (before the first recorded pass, or before pass record
        number ``since``) that ``expr_or_id`` came from."""
        from .lineage import origins

        return origins(self, expr_or_id, since)

    def history(self, expr_or_id: Any) -> list[Any]:
        """The steps (pass name, before id, after id) that led to ``expr_or_id``, or that
        carried it forward from an earlier module (``after`` None: eliminated)."""
        from .lineage import history

        return history(self, expr_or_id)

    def node_by_id(self, node_id: bytes) -> Expr | None:
        """The expression of this module with id ``node_id``, or None."""
        from .lineage import module_index

        return module_index(self).get(node_id)  # type: ignore[return-value]

    # -- text --------------------------------------------------------------------------------------
    def astext(self, **kw: Any) -> str:
        """Relay-like text of the whole module (see :func:`pyir.printer.astext`)."""
        from .printer import astext

        return astext(self, **kw)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        from .traverse import count_nodes

        names = self.names()
        shown = ", ".join("@" + n for n in names[:8]) + (", ..." if len(names) > 8 else "")
        return f"<Module [{shown}] {count_nodes(list(self._funcs.values()))} nodes>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.astext(show_meta_data=False))


def _init(m: Module, funcs: PMap, history: PVector) -> None:
    object.__setattr__(m, "_funcs", funcs)
    object.__setattr__(m, "_history", history)
    object.__setattr__(m, "_cache", {})


def iter_functions(mod: Module) -> Iterable[tuple[str, Function]]:
    """``(name, function)`` pairs of ``mod``."""
    return mod.items()
