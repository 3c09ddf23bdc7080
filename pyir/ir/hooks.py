"""Upward conveniences, registered by the layers that provide them.

The core data classes cannot import the layers above them (the printer, type
inference, the notebook display), yet a few conveniences users rely on live on
core objects: ``str(expr)`` and ``repr(expr)``, ``str(type)``, ``expr.checked_type``,
``mod.astext()``, ``mod.type_of(e)``, a diff's HTML view.  Each is a slot of this
module that the providing layer fills when it is imported (``import pyir``
imports every layer, so they are always filled for users).  This is the whole
allow-list: a test walks pyir's imports and fails on any upward import.

Pickling is wired the same way from above: the serializer registers its
reducers with :mod:`copyreg`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InternalError

__all__ = ["register", "astext", "short_repr", "type_str", "type_repr", "infer_type", "diff_html"]


def _unset(name: str, provider: str) -> Callable[..., Any]:
    def missing(*args: Any, **kw: Any) -> Any:
        raise InternalError(f"{name} is provided by {provider}, which has not been imported "
                            "(import pyir)")

    missing.__name__ = name
    return missing


# slot name -> the module that registers it
PROVIDERS = {
    "astext": "pyir.text.printer",       # str(expr), mod.astext()
    "short_repr": "pyir.text.printer",   # repr(expr)
    "type_str": "pyir.text.printer",     # str(type)
    "type_repr": "pyir.text.printer",    # repr(type)
    "infer_type": "pyir.analysis.typecheck",  # expr.checked_type, mod.type_of, mod.global_type
    "diff_html": "pyir.display",    # Diff._repr_html_
}

astext: Callable[..., str] = _unset("astext", PROVIDERS["astext"])
short_repr: Callable[[Any], str] = _unset("short_repr", PROVIDERS["short_repr"])
type_str: Callable[[Any], str] = _unset("type_str", PROVIDERS["type_str"])
type_repr: Callable[[Any], str] = _unset("type_repr", PROVIDERS["type_repr"])
infer_type: Callable[..., Any] = _unset("infer_type", PROVIDERS["infer_type"])
diff_html: Callable[[Any], str] = _unset("diff_html", PROVIDERS["diff_html"])


def register(**impls: Callable[..., Any]) -> None:
    """Fill hook slots (called once by each providing module at import time)."""
    g = globals()
    for name, fn in impls.items():
        if name not in PROVIDERS:
            raise InternalError(f"no hook slot named {name!r}")
        g[name] = fn
