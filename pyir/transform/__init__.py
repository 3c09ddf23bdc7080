"""Passes: the framework (``Pass``, ``Sequential``, ``PassContext``, instruments)
and the standard passes, one per module.

>>> import pyir
>>> from pyir.transform import FuseOps, DefuseOps, Sequential
>>> mod = pyir.testing.resnet(2)
>>> Sequential([FuseOps(), DefuseOps()])(mod)["main"] is mod["main"]
True
"""

from .base import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInstrument,
    PrintIRInstrument,
    Sequential,
    TimingInstrument,
    function_pass,
    module_pass,
)
from .bind_shapes import BindShapes
from .cache import PassCache
from .dead_code_elimination import DeadCodeElimination
from .defuse_ops import DefuseOps
from .dynamic_to_static import DynamicToStatic
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .fold_constant import FoldConstant
from .fuse_ops import FuseOps
from .infer_type import InferType
from .inline import Inline
from .pattern_rewrite import PatternRewrite
from .simplify_expr import SimplifyExpr
from .simplify_inference import SimplifyInference
from .to_a_normal_form import ToANormalForm
from .to_basic_block_normal_form import ToBasicBlockNormalForm
from .to_graph_normal_form import ToGraphNormalForm

__all__ = [
    "Pass", "ModulePass", "FunctionPass", "Sequential", "PassContext", "PassInstrument",
    "TimingInstrument", "PrintIRInstrument", "module_pass", "function_pass",
    "InferType", "SimplifyInference", "FoldConstant", "SimplifyExpr", "EliminateCommonSubexpr",
    "DeadCodeElimination", "FuseOps", "DefuseOps", "ToANormalForm", "ToBasicBlockNormalForm",
    "ToGraphNormalForm", "Inline", "PatternRewrite", "BindShapes", "DynamicToStatic",
    "standard_pipeline", "PassCache",
]


def standard_pipeline() -> Sequential:
    """The standard pipeline the ONNX tests and benchmarks run: SimplifyInference, FoldConstant,
    SimplifyExpr, FuseOps, ToANormalForm, ToGraphNormalForm, DeadCodeElimination."""
    return Sequential([SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(), ToANormalForm(),
                       ToGraphNormalForm(), DeadCodeElimination()])
