"""Helpers shared by type relations."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import TypeCheckError
from ..ir.types import TensorType, TupleType, Type


def fail(msg: str) -> TypeCheckError:
    """A TypeCheckError for a relation (the checker adds op, node and shapes)."""
    return TypeCheckError(msg)


def tensor(t: Type, what: str = "input") -> TensorType:
    """``t`` as a TensorType, or a TypeCheckError."""
    if type(t) is not TensorType:
        raise fail(f"{what} must be a tensor, got {t}")
    return t


def same_dtype(types: Sequence[TensorType]) -> str:
    """The common dtype of ``types``, or a TypeCheckError."""
    dts = {t.dtype for t in types}
    if len(dts) != 1:
        raise fail(f"dtypes differ: {', '.join(t.dtype for t in types)}")
    return types[0].dtype


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """Numpy broadcasting of two shapes, or a TypeCheckError."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise fail(f"shapes {tuple(a)} and {tuple(b)} do not broadcast")
    return tuple(reversed(out))


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``, negative counted from the end."""
    if not -ndim <= axis < max(ndim, 1):
        raise fail(f"{what} {axis} out of range for rank {ndim}")
    return axis % ndim if ndim else 0


def tuple_of(t: Type) -> TupleType:
    """``t`` as a TupleType, or a TypeCheckError."""
    if type(t) is not TupleType:
        raise fail(f"expected a tuple, got {t}")
    return t
