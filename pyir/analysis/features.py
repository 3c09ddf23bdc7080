"""Relay's program analyses by their Relay names: ``all_vars``, ``free_vars``, ``bound_vars``,
``free_type_vars``, ``detect_feature`` and ``well_formed``.

Every walk is iterative (a 10^6-deep program is fine) and visits each distinct node once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import PyIRError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Let, Op, Var
from ..ir.module import Module
from ..ir.node import Node
from ..ir.traverse import bound_vars, expr_children, free_vars, post_order, scope_info
from ..ir.types import Type

__all__ = ["all_vars", "free_vars", "bound_vars", "free_type_vars", "detect_feature", "well_formed",
           "FEATURES"]

FEATURES = ("fVar", "fGlobalVar", "fConstant", "fTuple", "fTupleGetItem", "fFunction", "fOp", "fCall",
            "fLet", "fIf", "fRefCreate", "fRefRead", "fRefWrite", "fConstructor", "fMatch", "fGraph",
            "fLetRec")
"""TVM's feature names (``tvm.relay.analysis.Feature``): one per node kind (a kind pyir gains
later is ``"f" + its class name``), ``fGraph`` when a non-atomic node is shared (used twice: a
DAG rather than a tree), ``fLetRec`` when a let binds a function that refers to itself."""

_ATOMIC = (Var, GlobalVar, Constant, Op)


def _roots(a: Expr | Module | Iterable[Expr]) -> list[Expr]:
    if isinstance(a, Module):
        return [f for _, f in a.items()]
    if isinstance(a, Node):
        return [a]
    return list(a)


def all_vars(expr: Expr) -> list[Var]:
    """Every variable of ``expr``, free and bound, each once, in post-order (children first,
    left to right), as Relay's ``all_vars``."""
    return [n for n in post_order(expr) if type(n) is Var]


def free_type_vars(expr: Expr | Type) -> list[object]:
    """The type variables of ``expr`` not bound by it: pyir's types have no type variables
    (monomorphic), so the list is empty; an input that is neither raises."""
    if not isinstance(expr, Node):
        raise PyIRError(f"free_type_vars takes an expression or a type, got {type(expr).__name__}")
    return []


def _feature(n: Node) -> str:
    name = type(n).__name__
    if name == "TupleGetItem":
        return "fTupleGetItem"
    return "f" + re.sub(r"^(Ref)(Create|Read|Write)$", r"\1\2", name)


def detect_feature(a: Expr | Module | Iterable[Expr], b: Module | None = None) -> frozenset[str]:
    """The set of features (names of :data:`FEATURES`) the program uses: ``a`` an expression, a
    module (every function) or several expressions, and ``b`` an optional module whose
    functions are added (Relay's ``detect_feature(a, b)``)."""
    roots = _roots(a) + (_roots(b) if b is not None else [])
    found: set[str] = set()
    seen: set[int] = set()
    stack: list[Node] = list(reversed(roots))
    while stack:
        n = stack.pop()
        key = id(n)
        if key in seen:
            if not isinstance(n, _ATOMIC):
                found.add("fGraph")
            continue
        seen.add(key)
        found.add(_feature(n))
        if type(n) is Call and type(n.op) is Op:  # (an operator callee is not among the children)
            found.add("fOp")
        if type(n) is Let and type(n.value) is Function and n.var in free_vars(n.value):
            found.add("fLetRec")
        for c in reversed(expr_children(n)):
            if not isinstance(c, Type):
                stack.append(c)
    return frozenset(found)


def well_formed(expr: Expr) -> bool:
    """Whether every variable of ``expr`` is bound at most once (Relay's ``well_formed``; pyir's
    modules check this, and closedness, on every construction)."""
    return scope_info(expr).twice is None
