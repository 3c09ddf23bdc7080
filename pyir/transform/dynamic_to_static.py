"""``DynamicToStatic``: turn dynamic operators whose shape arguments are known into static ones.

In rounds, until nothing changes:

* closed computations over constants are folded (:class:`FoldConstant`; shape
  arithmetic such as ``concatenate(shape_of(x)[:1], [12])`` becomes a constant);
* ``shape_of(x)`` where ``x``'s type has a static shape becomes that constant;
* a ``dyn.*`` call whose shape arguments are constants becomes the static operator
  (``dyn.reshape(x, [2, 3])`` -> ``reshape(x, newshape=(2, 3))``; the table is
  :data:`pyir.op.dyn.TO_STATIC`), so its output type is static again and the next
  round can see the shapes that depend on it.

After :class:`BindShapes`, a program exported with dynamic shapes becomes the static
program ``FoldConstant`` and ``FuseOps`` expect.  Lineage: each static call derives from the
dynamic call it replaces, each folded constant from what it folds.

Example (``tests/golden/DynamicToStatic/docstring.txt``, run by ``tests/test_golden.py``)::

    # before
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = shape_of(%x);
      %1 = dyn.ones(%0);
      %2 = add(%x, %1);
      %3 = dyn.reshape(%2, tensor([3, 2], int64));
      nn.relu(%3)
    }

    # after DynamicToStatic() (the ones, now closed, are folded)
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = add(%x, meta[Constant][0]);
      %1 = reshape(%0, newshape=[3, 2]);
      nn.relu(%1)
    }
    #[metadata]
    meta[Constant][0] = float32 (2, 3) "AACAPwAAgD8AAIA/AACAPwAAgD8AAIA/"
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import PyIRError
from ..ir.expr import Call, Expr, Function, Op, const
from ..ir.lineage import eliminate
from ..ir.module import Module
from ..ir.node import Node
from ..ir.traverse import post_order
from ..ir.types import TensorType
from ..op.dyn import TO_STATIC
from ..rewrite.functor import Derivations, Rewriter, RoundLineage
from .base import FunctionPass
from .fold_constant import FoldConstant

__all__ = ["DynamicToStatic"]

_SHAPE_OF = Op("shape_of")
_MASK = _SHAPE_OF._mask
for _op in TO_STATIC:
    _MASK |= _op._mask


class _Static(Rewriter):
    def __init__(self) -> None:
        super().__init__()
        self.measured: list[Node] = []  # the arguments of the shape_of calls made constants

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & _MASK)

    def visit_Call(self, call: Call) -> Expr:
        op = call.op
        if op is _SHAPE_OF:
            try:
                t = call.args[0].checked_type
            except PyIRError:
                return call
            if type(t) is TensorType and t.static:
                self.measured.append(call.args[0])  # may be used by nothing else now
                return const(np.asarray(t.shape, dtype=call.attrs["dtype"]))
            return call
        to_static = TO_STATIC.get(op)  # type: ignore[call-overload]
        if to_static is None:
            return call
        try:
            new = to_static(call)
        except PyIRError:  # e.g. a shape constant the static operator rejects: leave it dynamic
            return call
        if new is None:
            return call
        d = Derivations()
        if d:  # the shape arguments that became attributes: the static call derives from them too
            kept = set(new.children())
            for a in call.args:
                if a not in kept:
                    d.derive(new, a)
        return new


@dataclasses.dataclass(frozen=True)
class DynamicToStatic(FunctionPass):
    """Replace ``shape_of`` of static shapes by constants and ``dyn.*`` calls with constant
    shape arguments by static operators, folding the shape computations in between, until a
    round changes nothing (at most ``max_rounds``).  A function without ``shape_of`` or a
    dynamic operator is returned as it is (nothing folded)."""

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    max_rounds: int = 16

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """``func`` with its dynamic operators made static where their arguments are known."""
        if not func._mask & _MASK:  # no shape_of and no dynamic operator: nothing to do
            return func
        fold = FoldConstant()
        measured: list[Node] = []
        # every round's edges point at the ids before the first round (a node a round makes may
        # come back, hash-consed, as the result of a later round)
        lineage = RoundLineage()
        for _ in range(self.max_rounds):
            folded = lineage.run(lambda f: fold.transform_function(f, mod, name), func)
            st = _Static()
            new = lineage.run(st.visit, folded)
            measured += st.measured
            if new is folded:
                break
            func = new
        else:
            folded = func
        lineage.finish()
        if measured:  # an expression only measured by shape_of is gone: say so
            alive = set(post_order(folded))
            gone = [n for n in dict.fromkeys(measured) if n not in alive]
            if gone:
                eliminate(*gone)
        return folded
