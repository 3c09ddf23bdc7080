"""Helpers shared by type relations."""

from __future__ import annotations

import typing as _t
from collections.abc import Sequence

from ..errors import TypeCheckError
from ..ir.dims import Any, Dim, DimLike, broadcast, dim_bounds, dim_str, dims_equal
from ..ir.types import TensorType, TupleType, Type


def fail(msg: str) -> TypeCheckError:
    """A TypeCheckError for a relation (the checker adds op, node and shapes)."""
    return TypeCheckError(msg)


def tensor(t: Type, what: str = "input") -> TensorType:
    """``t`` as a TensorType, or a TypeCheckError."""
    if type(t) is not TensorType:
        hint = ("; a list or tuple passed to a builder becomes one tuple expression: pass the tensors as "
                "separate arguments" if type(t) is TupleType else "")
        raise fail(f"{what} must be a tensor, got {t}{hint}")
    return t


def same_dtype(types: Sequence[TensorType]) -> str:
    """The common dtype of ``types``, or a TypeCheckError."""
    dts = {t.dtype for t in types}
    if len(dts) != 1:
        raise fail(f"dtypes differ: {', '.join(t.dtype for t in types)}")
    return types[0].dtype


def shape_str(shape: Sequence[DimLike]) -> str:
    """A shape as the text shows it: ``(1, 3)``, ``(n, 3)``, ``(?,)``."""
    items = [str(d) if type(d) is int else dim_str(d, 40) for d in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def unify_dims(a: DimLike, b: DimLike) -> DimLike | None:
    """Two dimensions that must be equal at run time (matmul's inner dimensions, concatenate's
    other axes): the better-known one, or None if they are provably different.

    ``?`` unifies with anything (the other side is kept); two dimensions whose equality is
    unknown (``n`` and ``m``) are accepted, keeping the simpler one (an int, else fewer
    terms; either is right whenever the program runs)."""
    if a is b:
        return a
    if type(a) is int and type(b) is int:
        return a if a == b else None
    if a is Any:
        return b
    if b is Any:
        return a
    eq = dims_equal(a, b)
    if eq is False:
        return None
    if type(a) is int:
        return a
    if type(b) is int:
        return b
    x, y = _t.cast(Dim, a), _t.cast(Dim, b)
    return min(x, y, key=lambda d: (len(getattr(d, "terms", ())), d.id))


def provably_less(a: DimLike, b: int) -> bool:
    """Whether ``a < b`` for every binding of ``a``'s symbols (False when unknown)."""
    if type(a) is int:
        return a < b
    hi = dim_bounds(a)[1]
    return hi is not None and hi < b


def broadcast_shapes(a: Sequence[DimLike], b: Sequence[DimLike]) -> tuple[DimLike, ...]:
    """Numpy broadcasting of two shapes (symbolic dimensions by :func:`pyir.ir.dims.broadcast`),
    or a TypeCheckError."""
    out: list[DimLike] = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x is y or x == y or y == 1:  # == for ints (512 is not 512), identity for dims
            out.append(x)
        elif x == 1:
            out.append(y)
        elif type(x) is int and type(y) is int:
            raise fail(f"shapes {shape_str(a)} and {shape_str(b)} do not broadcast")
        else:
            try:
                out.append(broadcast(x, y))
            except TypeCheckError:
                raise fail(f"shapes {shape_str(a)} and {shape_str(b)} do not broadcast") from None
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
