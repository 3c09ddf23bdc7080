"""``SimplifyInference``: lower training-only operators for inference.

* ``nn.batch_norm(x, gamma, beta, mean, var)`` becomes the tuple
  ``(x * scale + shift, mean, var)`` with, per channel on ``axis``,
  ``scale = gamma / sqrt(var + epsilon)`` and ``shift = beta - mean * scale``
  (gamma left out when ``scale=False``, beta when ``center=False``); the
  per-channel vectors are broadcast with ``expand_dims`` (``(C,)`` to
  ``(C, 1, 1)`` for axis 1 of a rank-4 tensor).  A ``TupleGetItem`` of such a
  tuple becomes the field itself, so ``bn.0`` is the affine expression and
  ``bn.1``/``bn.2`` are the moving mean/variance inputs.  The scale and shift
  are closed subgraphs when the parameters are constants, so a following
  :class:`~pyir.transform.fold_constant.FoldConstant` folds them.
* ``nn.dropout(x)`` becomes ``x``.

``nn.layer_norm`` is kept (its statistics depend on the data).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..analysis.typecheck import TypeContext
from ..errors import TypeCheckError
from ..ir.expr import Call, Expr, Function, Op, Tuple, TupleGetItem, const
from ..ir.module import Module
from ..ir.node import Node
from ..ir.types import TensorType, TupleType
from ..op import add, divide, expand_dims, multiply, negative, sqrt, subtract
from ..rewrite.functor import Rewriter
from .base import FunctionPass

__all__ = ["SimplifyInference"]

_BATCH_NORM = Op("nn.batch_norm")
_DROPOUT = Op("nn.dropout")
_MASK = _BATCH_NORM._mask | _DROPOUT._mask


def _lower_batch_norm(call: Call, data_type: TensorType) -> Expr:
    """``(x * scale + shift, mean, var)`` for a batch_norm call whose data has ``data_type``."""
    x, gamma, beta, mean, var = call.args
    attrs = call.attrs
    ndim = data_type.ndim
    axis = attrs["axis"] % ndim
    dtype = data_type.dtype
    eps = const(np.asarray(attrs["epsilon"], dtype=dtype))
    std = sqrt(add(var, eps))
    scale = divide(gamma, std) if attrs["scale"] else divide(const(np.asarray(1.0, dtype=dtype)), std)
    scaled_mean = multiply(mean, scale)
    shift = subtract(beta, scaled_mean) if attrs["center"] else negative(scaled_mean)
    trailing = ndim - axis - 1
    if trailing:
        scale = expand_dims(scale, axis=1, num_newaxis=trailing)
        shift = expand_dims(shift, axis=1, num_newaxis=trailing)
    return Tuple([add(multiply(x, scale), shift), mean, var])


class _Lower(Rewriter):
    def __init__(self, func: Function, types: TypeContext) -> None:
        super().__init__()
        self.func = func
        self.types = types
        self.lowered: set[Node] = set()  # tuples made from batch_norm calls
        self.typed = False

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & _MASK)

    def _data_type(self, original: Call) -> TensorType:
        if not self.typed:  # type the whole function once: context-dependent types land in mod's cache
            self.types.check(self.func)
            self.typed = True
        t = self.types.type_of(original)
        if not isinstance(t, TupleType) or not isinstance(t.fields[0], TensorType):
            raise TypeCheckError(f"nn.batch_norm: expected a tuple type with a tensor first, got {t!r}")
        return t.fields[0]

    def visit_Call(self, call: Call) -> Expr:
        op = call.op
        if op is _DROPOUT:
            return call.args[0]
        if op is _BATCH_NORM:
            new = _lower_batch_norm(call, self._data_type(self.original))
            self.lowered.add(new)
            return new
        return call

    def visit_TupleGetItem(self, item: TupleGetItem) -> Expr:
        tv = item.tuple_value
        if tv in self.lowered:
            return tv.fields[item.index]  # type: ignore[attr-defined]
        return item


@dataclasses.dataclass(frozen=True)
class SimplifyInference(FunctionPass):
    """Rewrite ``nn.batch_norm`` into a per-channel multiply-add and drop ``nn.dropout``.

    Lineage is recorded automatically: the affine expression derives from the
    batch_norm call and from the ``.0`` item it replaces.

    Example (``tests/golden/SimplifyInference/docstring.txt``, run by
    ``tests/test_golden.py``; with constant parameters, FoldConstant then folds
    the scale and shift)::

        # before
        def @main(%x: Tensor[(1, 2, 3, 3), float32], %gamma: Tensor[(2), float32], %beta: Tensor[(2), float32], %mean: Tensor[(2), float32], %var: Tensor[(2), float32]) {
          %0 = nn.batch_norm(%x, %gamma, %beta, %mean, %var);
          %1 = %0.0;
          nn.dropout(%1)
        }

        # after SimplifyInference()
        def @main(%x: Tensor[(1, 2, 3, 3), float32], %gamma: Tensor[(2), float32], %beta: Tensor[(2), float32], %mean: Tensor[(2), float32], %var: Tensor[(2), float32]) {
          %0 = add(%var, 1e-05f);
          %1 = sqrt(%0);
          %2 = divide(%gamma, %1);
          %3 = expand_dims(%2, axis=1, num_newaxis=2);
          %4 = multiply(%x, %3);
          %5 = multiply(%mean, %2);
          %6 = subtract(%beta, %5);
          %7 = expand_dims(%6, axis=1, num_newaxis=2);
          add(%4, %7)
        }
    """  # noqa: E501 (printed lines of the example)

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """Lower batch_norm and dropout in ``func`` (``func`` itself if it has none)."""
        if not func._mask & _MASK:
            return func
        return _Lower(func, TypeContext.of(mod)).visit(func)
