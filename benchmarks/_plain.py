"""Plain ``__slots__`` records holding the same fields as pyir's nodes: the construction
baseline that bench_build.py and bench_vs_tvm.py build side by side with pyir."""

from __future__ import annotations

__all__ = ["PCall", "PConstant", "PFunction", "PModule", "POp", "PTensorType", "PVar"]


class PTensorType:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype


class PVar:
    __slots__ = ("name_hint", "type_annotation")

    def __init__(self, name_hint, type_annotation):
        self.name_hint = name_hint
        self.type_annotation = type_annotation


class PConstant:
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


class POp:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class PCall:
    __slots__ = ("op", "args", "attrs")

    def __init__(self, op, args, attrs):
        self.op = op
        self.args = args
        self.attrs = attrs


class PFunction:
    __slots__ = ("params", "body")

    def __init__(self, params, body):
        self.params = params
        self.body = body


class PModule:
    __slots__ = ("functions",)

    def __init__(self, functions):
        self.functions = functions
