"""Frontends: importers from other model formats into pyir modules.

``from_onnx`` imports an ONNX model (``pip install "pyir[onnx]"``); onnx itself is
imported lazily, so ``import pyir`` works without it.
"""

from . import (
    _onnx_index,  # noqa: F401  (indexing, image, vision and control-flow converters)
    _onnx_ops,  # noqa: F401  (registers the operator converters)
)
from .onnx import FrontendError, from_onnx, onnx_sources

__all__ = ["FrontendError", "from_onnx", "onnx_sources"]
