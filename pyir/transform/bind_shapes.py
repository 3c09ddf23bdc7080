"""``BindShapes``: give symbolic dimensions values.

Every type annotation in the module (parameters, let variables, return types, nested
functions) has its symbols replaced by the given values (:func:`pyir.ir.dims.substitute`:
``n * 3`` with ``n = 2`` is ``6``); the types of everything else follow by inference.
Symbols are identified by name within a module, so one binding reaches every function.
Symbols not bound stay symbolic.  Lineage: every rebuilt variable and node derives from
the one it replaces.

Example (``tests/golden/BindShapes/docstring.txt``, run by ``tests/test_golden.py``)::

    # before
    def @main(%x: Tensor[(batch, 3), float32], %y: Tensor[(batch * 2, 3), float32]) {
      %0 = (%x, %x);
      %1 = concatenate(%0);
      add(%1, %y)
    }

    # after BindShapes(bindings={"batch": 4})
    def @main(%x: Tensor[(4, 3), float32], %y: Tensor[(8, 3), float32]) {
      %0 = (%x, %x);
      %1 = concatenate(%0);
      add(%1, %y)
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..errors import PassError, PyIRError
from ..ir.dims import DimLike, Sym, as_dim, substitute
from ..ir.expr import Expr, Function, Var
from ..ir.module import Module
from ..ir.node import Node
from ..ir.types import FuncType, TensorType, TupleType, Type
from ..rewrite.functor import Rewriter
from .base import FunctionPass

__all__ = ["BindShapes", "substitute_type"]


def substitute_type(t: Type, bindings: Mapping[str, DimLike], memo: dict[Type, Type] | None = None) -> Type:
    """``t`` with the symbols named in ``bindings`` replaced in every tensor shape (iterative)."""
    memo = {} if memo is None else memo
    stack: list[tuple[Type, bool]] = [(t, False)]
    while stack:
        x, ready = stack.pop()
        if x in memo:
            continue
        if type(x) is TensorType:
            memo[x] = x if x.static else TensorType(tuple(substitute(d, bindings) for d in x.shape), x.dtype)
            continue
        kids: tuple[Type, ...] = (x.fields if type(x) is TupleType
                                  else (*x.arg_types, x.ret_type) if type(x) is FuncType
                                  else ())
        if not ready:
            stack.append((x, True))
            stack.extend((k, False) for k in kids if k not in memo)
            continue
        if type(x) is TupleType:
            memo[x] = TupleType([memo[k] for k in kids])
        elif type(x) is FuncType:
            memo[x] = FuncType([memo[k] for k in kids[:-1]], memo[kids[-1]])
        else:
            memo[x] = x
    return memo[t]


class _Bind(Rewriter):
    def __init__(self, bindings: Mapping[str, DimLike]) -> None:
        super().__init__()
        self.bindings = bindings
        self.types: dict[Type, Type] = {}

    def should_visit(self, node: Node) -> bool:
        return True

    def visit_Var(self, v: Var) -> Expr:
        t = v.type_annotation
        if t is None:
            return v
        nt = substitute_type(t, self.bindings, self.types)
        return v if nt is t else Var(v.name_hint, nt)

    def visit_Function(self, f: Function) -> Expr:
        if f.ret_type is None:
            return f
        nt = substitute_type(f.ret_type, self.bindings, self.types)
        return f if nt is f.ret_type else Function(f.params, f.body, nt, f.attrs)


def _bindings(given: Any) -> tuple[tuple[str, DimLike], ...]:
    try:
        items = list(dict(given).items())
    except (TypeError, ValueError):
        raise PassError(f"BindShapes takes a mapping of symbol names to dimensions, got {given!r:.80}"
                        ) from None
    out = []
    for k, v in items:
        name = k.name if type(k) is Sym else k
        if type(name) is not str:
            raise PassError(f"BindShapes: keys are symbol names or symbols, got {k!r:.80}")
        try:
            Sym(name)
            d = as_dim(v, f"BindShapes value of {name!r}")
        except PyIRError as e:
            raise PassError(f"BindShapes: {e}") from None
        out.append((name, d))
    return tuple(sorted(out, key=lambda kv: kv[0]))


@dataclasses.dataclass(frozen=True)
class BindShapes(FunctionPass):
    """Substitute symbolic dimensions by name: ``BindShapes({"batch": 1, "sequence": 128})``.

    Values are dimensions (usually ints; a symbol or expression renames or relates symbols).
    """

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    bindings: tuple[tuple[str, DimLike], ...] = ()
    include_primitive = True

    def __init__(self, bindings: Mapping[Any, Any] | Any = ()) -> None:
        object.__setattr__(self, "bindings", _bindings(bindings))

    def options(self) -> str:
        return "bindings={" + ", ".join(f"{k!r}: {v}" for k, v in self.bindings) + "}"

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` with the bound symbols substituted in its annotations."""
        if not self.bindings:
            return func
        return _Bind(dict(self.bindings)).visit(func)
