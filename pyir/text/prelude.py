"""The Relay prelude (``prelude.rly``, next to this module): ``List`` / ``Option`` / ``Tree`` and
the usual functions over them (``hd``, ``tl``, ``nth``, ``update``, ``length``, ``map``,
``foldl``, ``foldr``, ``concat``, ``filter``, ``rev``, ``zip``, ``range``, ``sum``, ``get_or``,
``omap``, ``head_opt``, ``size``, ``tmap``, ``id``, ``compose``, ``flip``), written in TVM's Relay
text and parsed by :func:`pyir.parse`.

>>> import pyir
>>> p = pyir.prelude()
>>> sorted(p.type_definitions())
['List', 'Option', 'Tree']
>>> str(p.global_type("map"))
'fn (fn (A) -> B, List[A]) -> List[B]'
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import WellFormedError
from ..ir.module import Module
from .parser import parse

__all__ = ["prelude", "prelude_text", "with_prelude"]

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prelude.rly")
_cache: dict[str, Module] = {}


def prelude_text() -> str:
    """The prelude's Relay text."""
    with open(_PATH, encoding="utf-8") as f:
        return f.read()


def prelude() -> Module:
    """The prelude as a module (parsed once per process; modules are immutable)."""
    m = _cache.get("mod")
    if m is None:
        m = _cache["mod"] = parse(prelude_text())
    return m


def with_prelude(mod: Module | None = None, **functions: Any) -> Module:
    """``mod`` (or the given functions) with the prelude's type definitions and functions added;
    a function of ``mod`` named like a prelude function is an error (WellFormedError)."""
    p = prelude()
    funcs = dict(p.functions())
    types = dict(p.type_definitions())
    if mod is not None:
        for name, f in mod.items():
            if name in funcs:
                raise WellFormedError(f"@{name} is a prelude function: rename it")
            funcs[name] = f
        for name, td in mod.type_definitions().items():
            if name in types and types[name] is not td:
                raise WellFormedError(f"type {name} is a prelude type: rename it")
            types[name] = td
    for name, f in functions.items():
        if name in funcs:
            raise WellFormedError(f"@{name} is a prelude function: rename it")
        funcs[name] = f
    return Module(funcs, list(types.values()))
