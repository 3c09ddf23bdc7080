"""Operators: the registry and the operator builders.

``pyir.op.add(a, b)``, ``pyir.op.nn.conv2d(x, w, strides=(2, 2))``, ...
Each builder returns an interned :class:`pyir.Call`.
"""

from . import _signature, nn, tensor
from .registry import AttrSpec, OpDef, OpPattern, get_op_def, list_ops, register_op
from .tensor import *  # noqa: F403
from .tensor import __all__ as _tensor_all

_signature.attach(nn)
_signature.attach(tensor)

__all__ = ["nn", "AttrSpec", "OpDef", "OpPattern", "get_op_def", "list_ops", "register_op",
           *_tensor_all]
