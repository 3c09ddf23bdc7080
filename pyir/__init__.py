"""pyir: a compiler IR of hash-consed, immutable nodes and persistent modules."""

from . import op, testing, transform
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .expr import (
                   Call,
                   Constant,
                   Expr,
                   Function,
                   GlobalVar,
                   If,
                   Let,
                   Op,
                   Tuple,
                   TupleGetItem,
                   Var,
                   as_expr,
                   const,
                   var,
)
from .functor import ExprMutator, ExprVisitor, rebuild, rewrite, substitute
from .interp import evaluate
from .lineage import derive, eliminate
from .module import Module
from .node import Attrs, Node, live_node_count
from .printer import astext
from .traverse import count_nodes, free_vars, post_order, pre_order
from .typecheck import infer_type
from .types import FuncType, TensorType, TupleType, Type

__version__ = "0.1.0"

__all__ = [
    *_errors_all,
    "op", "Node", "Attrs", "live_node_count",
    "Type", "TensorType", "TupleType", "FuncType",
    "Expr", "Var", "GlobalVar", "Constant", "Op", "Call", "Tuple", "TupleGetItem", "Function",
    "Let", "If", "var", "const", "as_expr", "Module", "astext", "infer_type",
    "post_order", "pre_order", "count_nodes", "free_vars",
    "ExprVisitor", "ExprMutator", "rewrite", "substitute", "rebuild", "derive", "eliminate",
    "testing", "transform", "evaluate",
]
