"""Relay's memory-lowering internals: ``memory.alloc_storage``, ``memory.alloc_tensor`` and
``memory.kill``, as the VM's memory planning writes them.

They exist so that lowered programs (TVM's text after ``ManifestAlloc``) parse, type-check,
print and serialize; pyir does not lower programs itself.  Typing rule (pyir's decision, since
its types have no ``Storage``): a storage is modelled as a 1-D ``uint8`` tensor of unknown
length, ``Tensor[(?,), uint8]``; ``alloc_tensor`` has the type its ``const_shape`` or
``assert_shape`` attribute says (``?`` dimensions of the shape argument's length when neither
is given); ``kill`` gives the empty tuple, as in Relay.  ``alloc_tensor`` also takes a storage
typed with TVM's opaque ``Storage`` type (``extern type Storage`` of ``core.rly``: a parameter
``%sto: Storage[]``), whatever module declares it.  The interpreter runs them functionally:
an allocation is a fresh zero-filled array, ``kill`` does nothing.

Relay's ``alloc_tensor`` keeps ``const_shape`` as a constant; pyir keeps it as ints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.adt import GlobalTypeVar, TypeCall
from ..ir.dims import Any as ANY_DIM
from ..ir.node import Attrs
from ..ir.types import TensorType, TupleType, Type
from ._rel import fail, shape_str, tensor
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["alloc_storage", "alloc_tensor", "kill"]

STORAGE_TYPE = TensorType((ANY_DIM,), "uint8")
"""The type pyir gives a storage (see the module's docstring)."""


def _int_scalar(t: Type, what: str) -> TensorType:
    s = tensor(t, what)
    if s.ndim != 0 or s.dtype not in ("int64", "int32"):
        raise fail(f"{what} must be an integer scalar, got {s}")
    return s


def _alloc_storage_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _int_scalar(types[0], "size")
    tensor(types[1], "shape")
    _int_scalar(types[2], "alignment")
    return STORAGE_TYPE


alloc_storage: _sig.MemoryAllocStorage = register_op(
    "memory.alloc_storage", num_inputs=3, type_rel=_alloc_storage_rel,
    compute=lambda attrs, size, shape, alignment: np.zeros(int(size), np.uint8), pattern=OpPattern.OPAQUE,
    doc="Allocate ``size`` bytes of storage (a lowering internal; typed ``Tensor[(?,), uint8]``).",
    attrs=(AttrSpec("dtype", "dtype", "float32", "the dtype the storage is meant for"),
           AttrSpec("virtual_device", "str", "", "the device ('' unconstrained)")))


def _storage(t: Type) -> None:
    """``t`` must be a storage: pyir's model (a tensor) or TVM's opaque ``Storage[]``."""
    if type(t) is TypeCall and t.func.name_hint == "Storage" and not t.args:
        return
    if type(t) is GlobalTypeVar and t.name_hint == "Storage":
        return
    if type(t) is not TensorType and str(t) not in ("Storage[]", "Storage"):  # (however it is declared)
        raise fail(f"storage must be a storage (Storage[] or {STORAGE_TYPE}), got {t}")


def _alloc_tensor_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _storage(types[0])
    _int_scalar(types[1], "offset")
    shape = tensor(types[2], "shape")
    if shape.ndim > 1:
        raise fail(f"shape must be a 1-D tensor, got {shape_str(shape.shape)}")
    given = attrs["const_shape"] if attrs["const_shape"] is not None else attrs["assert_shape"]
    if given is not None:
        rank = shape.shape[0] if shape.ndim else 0
        if type(rank) is int and rank != len(given):
            raise fail(f"the shape argument holds {rank} dimensions, the attribute {len(given)}")
        return TensorType(given, attrs["dtype"])
    if shape.ndim and type(shape.shape[0]) is int:
        return TensorType((ANY_DIM,) * shape.shape[0], attrs["dtype"])
    raise fail("alloc_tensor needs const_shape or assert_shape when the shape's rank is unknown")


def _alloc_tensor(attrs: Attrs, storage: Any, offset: Any, shape: np.ndarray) -> np.ndarray:
    return np.zeros(tuple(int(d) for d in np.asarray(shape).reshape(-1)), attrs["dtype"])


alloc_tensor: _sig.MemoryAllocTensor = register_op(
    "memory.alloc_tensor", num_inputs=3, type_rel=_alloc_tensor_rel, compute=_alloc_tensor,
    pattern=OpPattern.OPAQUE,
    doc="Allocate a tensor in ``storage`` at ``offset`` (a lowering internal; a fresh array here).",
    attrs=(AttrSpec("dtype", "dtype", "float32"), AttrSpec("const_shape", "ints?", None),
           AttrSpec("assert_shape", "ints?", None)))

kill: _sig.MemoryKill = register_op(
    "memory.kill", num_inputs=1, type_rel=lambda types, attrs: TupleType([]),
    compute=lambda attrs, x: (), pattern=OpPattern.OPAQUE,
    doc="Mark the end of a value's lifetime (a lowering internal; gives the empty tuple).")
