"""Annotation operators, as Relay has them: ``on_device`` and ``device_copy``.

Both are the identity on values and types: ``on_device(e, virtual_device=...)`` says where ``e``
is computed (``constrain_body``) or where its result lives (``constrain_result``);
``device_copy(e, src_virtual_device=..., dst_virtual_device=...)`` moves a value between devices.
pyir has one device (the interpreter), so both evaluate to their input; they are kept in the
program as annotations:

* their pattern kind is ``OPAQUE``, so FuseOps never fuses across them (TVM's FuseOps treats
  ``on_device`` the same way: an annotation the fuser does not fuse);
* FoldConstant does not fold them away (an ``on_device`` around a constant stays, as in TVM);
* dead-code elimination drops one only when its value is unused, like any pure call.

A virtual device is a string attribute (``""``: unconstrained, TVM's ``FullyUnconstrained``);
the text parser keeps TVM's ``meta[VirtualDevice][i]`` reference (or a device name such as
``"cuda:0"``) as that string.  :data:`ANNOTATION_OPS` names the operators passes treat as
annotations.

Every type relation accepts symbolic and unknown dimensions (:mod:`pyir.ir.dims`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..ir.node import Attrs
from ..ir.types import Type
from .registry import AttrSpec, OpPattern, register_op

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["on_device", "device_copy"]


def _identity_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    return types[0]  # any type: a tensor, a tuple, a function value


def _identity(attrs: Attrs, x: object) -> object:
    return x


def _copy(attrs: Attrs, x: object) -> object:
    return np.array(x, copy=True) if isinstance(x, np.ndarray) else x


on_device: _sig.OnDevice = register_op(
    "on_device", num_inputs=1, type_rel=_identity_rel, compute=_identity, pattern=OpPattern.OPAQUE,
    doc="Annotate ``data`` with the device it is computed on (an identity the passes keep).",
    attrs=(AttrSpec("virtual_device", "str", "", "the device ('' unconstrained; TVM text keeps "
                    "its meta[VirtualDevice][i] reference)"),
           AttrSpec("constrain_result", "bool", False, "the result is on the device"),
           AttrSpec("constrain_body", "bool", True, "the body is computed on the device")))

device_copy: _sig.DeviceCopy = register_op(
    "device_copy", num_inputs=1, type_rel=_identity_rel, compute=_copy, pattern=OpPattern.OPAQUE,
    doc="Copy ``data`` from one device to another (an identity on values, kept by the passes).",
    attrs=(AttrSpec("src_virtual_device", "str", "", "the source device"),
           AttrSpec("dst_virtual_device", "str", "", "the destination device")))

ANNOTATION_OPS = frozenset({"on_device", "device_copy"})
"""Operators that annotate a value without changing it: FoldConstant keeps them, FuseOps does
not fuse them (their pattern is OPAQUE)."""

NON_COMPUTATIONAL_OPS = frozenset({"on_device"})
"""Operators that compute nothing (TVM's ``TNonComputational``): TVM's FuseOps leaves such a call
in place rather than wrapping it in a primitive function of its own (``device_copy`` does copy,
so it gets one)."""
