"""Typed signatures of the operator builders, derived from the operator declarations.

The builders ``register_op`` returns take ``(*args, **kw)``; this module gives them
their real signatures without adding a call layer:

* for mypy and editors, ``pyir/op/_signatures.py`` is GENERATED from the registry:
  one ``Protocol`` per operator whose ``__call__`` takes the tensors positionally and
  the attributes as typed keywords with their defaults, returning ``Call``.  ``nn.py``
  and ``tensor.py`` annotate each builder with it (``conv2d: _sig.NnConv2d = ...``),
  importing the module under ``TYPE_CHECKING`` only, so runtime is unchanged;
* at runtime, :func:`attach` sets each builder's ``__signature__``, so
  ``inspect.signature`` and ``help()`` show the same signature.

After adding or changing an operator, regenerate the file (``tests/test_typing.py``
fails while it is stale)::

    python -m pyir.op._gen_signatures
"""

from __future__ import annotations

import inspect
from types import ModuleType

from .registry import REQUIRED, AttrSpec, OpDef, get_op_def

__all__ = ["INPUT_NAMES", "attach", "attr_type", "input_names", "protocol_name", "signature_of"]

# Names of the positional inputs where the default by arity (``data``; ``lhs, rhs``)
# does not say what they are.  Inputs are positional-only: names are documentation.
INPUT_NAMES: dict[str, tuple[str, ...]] = {
    "where": ("condition", "lhs", "rhs"),
    "take": ("data", "indices"),
    "nn.conv2d": ("data", "weight"),
    "nn.dense": ("data", "weight"),
    "nn.bias_add": ("data", "bias"),
    "nn.prelu": ("data", "alpha"),
    "nn.batch_norm": ("data", "gamma", "beta", "moving_mean", "moving_var"),
    "nn.layer_norm": ("data", "gamma", "beta"),
}

# The type (an alias of the generated file) a caller may pass for each attribute kind:
# what ``AttrSpec.convert`` accepts.
_KIND_TYPES: dict[str, str] = {
    "int": "Int", "float": "Float", "bool": "Bool", "str": "str", "ints": "Ints",
    "floats": "Floats", "dtype": "DType", "int?": "Int | None", "ints?": "Ints | None",
    "float?": "Float | None", "any": "object",
}

# Attributes of kind "any" whose canonicalizer accepts a narrower type.
_ATTR_TYPES: dict[tuple[str, str], str] = {
    ("nn.conv2d", "out_dtype"): "DType | None",
    ("nn.dense", "out_dtype"): "DType | None",
}



class _Ann(str):
    """An annotation shown as written (``inspect`` would quote a plain string)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def protocol_name(op: str) -> str:
    """The generated protocol's name: ``nn.conv2d`` -> ``NnConv2d``, ``add`` -> ``Add``."""
    return "".join(p[:1].upper() + p[1:] for part in op.split(".") for p in part.split("_"))


def input_names(odef: OpDef) -> tuple[str, ...]:
    """Names of the positional inputs (``()`` when variadic)."""
    n = odef.num_inputs
    if n is None:
        return ()
    names = INPUT_NAMES.get(odef.name)
    if names is not None and len(names) == n:
        return names
    return ("data",) if n == 1 else ("lhs", "rhs") if n == 2 else tuple(f"input{i}" for i in range(n))


def attr_type(odef: OpDef, spec: AttrSpec) -> str:
    """The annotation of attribute ``spec`` of ``odef``."""
    return _ATTR_TYPES.get((odef.name, spec.name)) or _KIND_TYPES[spec.kind]


def signature_of(odef: OpDef) -> inspect.Signature:
    """The builder's signature: inputs positional-only, attributes keyword-only."""
    pos = inspect.Parameter.POSITIONAL_ONLY
    params = [inspect.Parameter(n, pos, annotation=_Ann("ExprLike")) for n in input_names(odef)]
    if odef.num_inputs is None:
        params.append(inspect.Parameter("data", inspect.Parameter.VAR_POSITIONAL,
                                        annotation=_Ann("ExprLike")))
    kw = inspect.Parameter.KEYWORD_ONLY
    for spec in odef.attrs:
        default = inspect.Parameter.empty if spec.default is REQUIRED else spec.default
        params.append(inspect.Parameter(spec.name, kw, default=default,
                                        annotation=_Ann(attr_type(odef, spec))))
    return inspect.Signature(params, return_annotation=_Ann("Call"))


def attach(module: ModuleType) -> None:
    """Give each builder in ``module.__all__`` its ``__signature__`` and ``__module__`` (a
    builder written by hand with Relay's signature, marked ``relay_signature``, keeps its own)."""
    for name in module.__all__:
        b = getattr(module, name)
        if not getattr(b, "relay_signature", False):
            b.__signature__ = signature_of(get_op_def(b.op.name))
        b.__module__ = module.__name__
