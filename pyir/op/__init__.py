"""Operators: the registry and the operator builders.

``pyir.op.add(a, b)``, ``pyir.op.nn.conv2d(x, w, strides=(2, 2))``, ...
Each builder returns an interned :class:`pyir.Call`.
"""

from . import (
    _signature,
    annotation,
    bitwise,
    dyn,
    image,
    index,
    math,
    memory,
    nn,
    qnn,
    qnn_relay,
    relay_like,
    relay_misc,
    shape,
    tensor,
    vm,
)
from .annotation import *  # noqa: F403
from .annotation import __all__ as _annotation_all
from .bitwise import *  # noqa: F403
from .bitwise import __all__ as _bitwise_all
from .index import *  # noqa: F403
from .index import __all__ as _index_all
from .math import *  # noqa: F403
from .math import __all__ as _math_all
from .registry import AttrSpec, OpDef, OpPattern, get_op_def, list_ops, register_op
from .relay_like import *  # noqa: F403
from .relay_like import __all__ as _relay_like_all
from .relay_misc import *  # noqa: F403
from .relay_misc import __all__ as _relay_misc_all
from .shape import *  # noqa: F403
from .shape import __all__ as _shape_all
from .tensor import *  # noqa: F403
from .tensor import __all__ as _tensor_all

# Every module of operator builders, written once: the typed signatures (_gen_signatures), the
# tests and the attach loop below read this tuple. A new family adds its module here (and, if its
# builders live at ``pyir.op.NAME`` rather than ``pyir.op.family.NAME``, star-imports it above).
BUILDER_MODULES = (nn, tensor, shape, image, dyn, qnn, bitwise, math, index, annotation, relay_misc, memory,
                   vm, relay_like, qnn_relay)

for _m in BUILDER_MODULES:
    _signature.attach(_m)

__all__ = ["nn", "image", "dyn", "qnn", "qnn_relay", "annotation", "memory", "vm", "AttrSpec", "OpDef",
           "OpPattern", "get_op_def", "list_ops", "register_op", *_tensor_all, *_shape_all, *_bitwise_all,
           *_math_all, *_index_all, *_annotation_all, *_relay_misc_all, *_relay_like_all]
