"""pyir: a compiler IR of hash-consed, immutable nodes and persistent modules,
with lineage that follows expressions through every pass.

>>> import pyir
>>> x = pyir.var("x", shape=(2, 2))
>>> pyir.op.nn.relu(x) is pyir.op.nn.relu(x)
True
"""

from . import display, op, progress, report, testing, transform, viz
from .analysis.diff import Diff, diff
from .analysis.equality import alpha_equal, alpha_hash, structural_equal, structural_hash
from .analysis.interp import evaluate
from .analysis.typecheck import infer_type
from .errors import (
    AlphaEqualityError,
    AttrError,
    EvaluationError,
    FinalKindError,
    FrontendError,
    GraphvizNotFoundError,
    IllTypedProgramError,
    ImmutableError,
    InternalError,
    LineageError,
    ParseError,
    PassError,
    PatternError,
    PyIRError,
    RewriteLoopError,
    SerializationError,
    StoreError,
    TypeCheckError,
    UnknownOpError,
    WellFormedError,
)
from .ir import adt, dims
from .ir.dims import Any, Dim, sym
from .ir.expr import (
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
from .ir.lineage import PassRecord, Step, derive, eliminate
from .ir.module import Module
from .ir.node import Attrs, Node, live_node_count
from .ir.traverse import count_nodes, free_vars, post_order, pre_order
from .ir.types import FuncType, TensorType, TupleType, Type
from .parallel import map_pipeline
from .rewrite.expr_functor import ExprFunctor
from .rewrite.functor import ExprMutator, ExprVisitor, rebuild, rewrite, substitute
from .rewrite.pattern import (
    Match,
    Pattern,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from .rewrite.pattern_rewrite import Rule, rewrite_rules
from .rewrite.scope_builder import ScopeBuilder
from .serialize import dumps, from_json, load, loads, save, to_json
from .store import Store
from .summaries import Summary, summary
from .text.parser import parse, parse_expr, parse_type
from .text.prelude import prelude, with_prelude
from .text.printer import astext
from .transform.cache import PassCache
from .transform.pattern_rewrite import PatternRewrite

display.install()

__version__ = "0.1.0"

__all__ = [
    # errors
    "PyIRError", "ImmutableError", "AttrError", "UnknownOpError", "TypeCheckError", "WellFormedError",
    "EvaluationError", "PassError", "RewriteLoopError", "LineageError", "ParseError",
    "SerializationError", "PatternError", "FinalKindError", "FrontendError", "GraphvizNotFoundError",
    "InternalError", "AlphaEqualityError", "IllTypedProgramError", "StoreError",
    # nodes, types, expressions
    "op", "Node", "Attrs", "live_node_count",
    "Type", "TensorType", "TupleType", "FuncType", "dims", "Dim", "sym", "Any",
    "Expr", "Var", "GlobalVar", "Constant", "Op", "Call", "Tuple", "TupleGetItem", "Function",
    "Let", "If", "var", "const", "as_expr", "Module",
    # analysis and traversal
    "infer_type", "post_order", "pre_order", "count_nodes", "free_vars",
    # rewriting
    "ExprVisitor", "ExprMutator", "ExprFunctor", "ScopeBuilder", "rewrite", "substitute", "rebuild",
    "Pattern", "Match", "wildcard", "is_op", "is_expr", "is_constant", "is_var", "is_tuple",
    "is_tuple_get_item", "Rule", "rewrite_rules", "PatternRewrite", "PassCache",
    # lineage
    "derive", "eliminate", "PassRecord", "Step",
    # evaluation, text, serialization
    "evaluate", "astext", "parse", "parse_expr", "parse_type", "prelude", "with_prelude", "adt",
    "dumps", "loads", "save", "load", "to_json", "from_json", "Store",
    # equality, diff, display
    "structural_equal", "structural_hash", "alpha_equal", "alpha_hash", "diff", "Diff",
    "display", "report", "viz", "testing", "transform", "summary", "Summary", "progress",
    # many models, in-process or on Dask (pyir[dask])
    "map_pipeline",
]
