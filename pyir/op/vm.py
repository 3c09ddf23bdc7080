"""Relay's VM-lowering internals: ``vm.shape_of``, ``vm.reshape_tensor``, ``vm.shape_func``,
``vm.invoke_tvm_op`` and ``call_lowered``, as TVM's lowering writes them.

They exist so that lowered programs parse, type-check, print and serialize; pyir does not lower
programs itself.  Types follow Relay: ``vm.shape_of`` a 1-D integer tensor, ``vm.reshape_tensor``
its ``newshape``, ``vm.shape_func`` and ``vm.invoke_tvm_op`` (which write into their output
buffers) the empty tuple, ``call_lowered(f, (args...))`` the result type of ``f``.  The
interpreter runs ``vm.shape_of`` and ``vm.reshape_tensor``; the other three stand for calls
into compiled code and raise an ``EvaluationError`` (evaluate the program before lowering).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EvaluationError
from ..ir.node import Attrs
from ..ir.types import FuncType, TensorType, TupleType, Type
from ._rel import fail, tensor, tuple_of
from .registry import AttrSpec, OpPattern, register_op
from .tensor import _infer_reshape_dims

if TYPE_CHECKING:  # the builders' typed signatures (generated, see _signature.py)
    from . import _signatures as _sig

__all__ = ["shape_of", "reshape_tensor", "shape_func", "invoke_tvm_op", "call_lowered"]


def _compiled(name: str) -> Any:
    def compute(attrs: Attrs, *args: Any) -> Any:
        raise EvaluationError(f"{name} calls compiled code: pyir evaluates programs before lowering")
    return compute


shape_of: _sig.VmShapeOf = register_op(
    "vm.shape_of", num_inputs=1,
    type_rel=lambda types, attrs: TensorType((tensor(types[0], "data").ndim,), attrs["dtype"]),
    compute=lambda attrs, x: np.asarray(x.shape, dtype=attrs["dtype"]), pattern=OpPattern.OPAQUE,
    doc="The shape of ``data`` as a 1-D tensor (the VM's instruction).",
    attrs=(AttrSpec("dtype", "dtype", "int64"),))


def _reshape_tensor_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    d, s = tensor(types[0], "data"), tensor(types[1], "shape")
    if s.ndim != 1:
        raise fail(f"shape must be a 1-D tensor, got {s}")
    return TensorType(_infer_reshape_dims(d.shape, attrs["newshape"]), d.dtype)


reshape_tensor: _sig.VmReshapeTensor = register_op(
    "vm.reshape_tensor", num_inputs=2, type_rel=_reshape_tensor_rel,
    compute=lambda attrs, x, shape: x.reshape(tuple(int(d) for d in shape)), pattern=OpPattern.OPAQUE,
    doc="Reshape ``data`` to the run-time ``shape`` (the VM's instruction; ``newshape`` is its type).",
    attrs=(AttrSpec("newshape", "ints"),))


def _func_and_tuples(types: tuple[Type, ...], name: str) -> None:
    if type(types[0]) is not FuncType:
        raise fail(f"{name}: the first argument must be a function, got {types[0]}")
    for t, what in zip(types[1:], ("inputs", "outputs")):
        if type(t) is not TupleType:
            tensor(t, what)


def _shape_func_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _func_and_tuples(types, "vm.shape_func")
    return TupleType([])


shape_func: _sig.VmShapeFunc = register_op(
    "vm.shape_func", num_inputs=3, type_rel=_shape_func_rel, compute=_compiled("vm.shape_func"),
    pattern=OpPattern.OPAQUE,
    doc="Run the shape function ``func`` on ``inputs`` into ``outputs`` (a lowering internal).",
    attrs=(AttrSpec("is_input", "ints?", None, "per input: 1 when its data (not its shape) is used"),))


def _invoke_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    _func_and_tuples(types, "vm.invoke_tvm_op")
    return TupleType([])


invoke_tvm_op: _sig.VmInvokeTvmOp = register_op(
    "vm.invoke_tvm_op", num_inputs=3, type_rel=_invoke_rel, compute=_compiled("vm.invoke_tvm_op"),
    pattern=OpPattern.OPAQUE,
    doc="Call the primitive function ``func`` on ``inputs`` into ``outputs`` (a lowering internal).")


def _call_lowered_rel(types: tuple[Type, ...], attrs: Attrs) -> Type:
    f = types[0]
    if type(f) is not FuncType:
        raise fail(f"call_lowered: the first argument must be a function, got {f}")
    args = tuple_of(types[1])
    if len(args.fields) != len(f.arg_types):
        raise fail(f"call_lowered: the function takes {len(f.arg_types)} arguments, got {len(args.fields)}")
    for i, (a, p) in enumerate(zip(args.fields, f.arg_types)):
        if a is not p and type(a) is TensorType and type(p) is TensorType and (
                a.dtype != p.dtype or a.ndim != p.ndim):
            raise fail(f"call_lowered: argument {i} is {a}, the function takes {p}")
    return f.ret_type


call_lowered: _sig.CallLowered = register_op(
    "call_lowered", num_inputs=2, type_rel=_call_lowered_rel, compute=_compiled("call_lowered"),
    pattern=OpPattern.OPAQUE,
    doc="Call the lowered function ``func`` on the tuple ``inputs`` (a lowering internal).")
