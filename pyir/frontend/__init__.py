"""Frontends: importers from other model formats into pyir modules.

``from_onnx`` imports an ONNX model (``pip install "pyir[onnx]"``); onnx itself is
imported lazily, so ``import pyir`` works without it.
"""

# importing these modules registers their converters (pyir.frontend.onnx.CONVERTERS)
from . import (  # noqa: F401
    _onnx_index,  # indexing, image, vision and control flow
    _onnx_math,  # math: trigonometry, mod, cumulative, einsum, trilu, signal
    _onnx_nn,  # neural-network converters: attention, norms, losses, RNNs
    _onnx_ops,  # the core table: elementwise, shapes, convolutions, pools, reductions
    _onnx_quant,  # casts, quantization, bit operators
)
from .onnx import FrontendError, from_onnx, onnx_sources

__all__ = ["FrontendError", "from_onnx", "onnx_sources"]
