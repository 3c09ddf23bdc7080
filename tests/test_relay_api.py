"""Coming from Relay (issue 14, item 6): the most used Relay Python APIs and what each is in
pyir, checked (every "same" or "renamed" entry exists under its pyir name), and the APIs added
for Relay users: ``all_vars``, ``detect_feature``, ``well_formed``, ``ExprFunctor``,
``ScopeBuilder``, ``PassContext(opt_level=, config=)`` and ``mod[name] = f`` pointing to
``with_function``."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.analysis import all_vars, bound_vars, detect_feature, free_type_vars, free_vars, well_formed
from pyir.transform import DeadCodeElimination, EliminateCommonSubexpr, FoldConstant, InferType, Sequential
from pyir.transform.base import OPT_LEVELS, PassContext, register_pass_config

# (Relay API, status, pyir name ("" when missing), the difference in one line)
RELAY_APIS: list[tuple[str, str, str, str]] = [
    ("relay.var", "same", "pyir.var",
     "var(name, shape=..., dtype=...) or var(name, type); each call is a new variable"),
    ("relay.const", "same", "pyir.const",
     "ints are int32 and floats float32, as Relay; const(0.0) is const(0.0)"),
    ("relay.Function", "same", "pyir.Function", "attributes as a dict; the body's type is inferred"),
    ("relay.Call", "same", "pyir.Call", "attributes as a dict, normalized by the operator's schema"),
    ("relay.Let", "same", "pyir.Let", ""),
    ("relay.If", "same", "pyir.If", ""),
    ("relay.Tuple", "same", "pyir.Tuple", ""),
    ("relay.TupleGetItem", "same", "pyir.TupleGetItem", ""),
    ("relay.GlobalVar", "same", "pyir.GlobalVar", ""),
    ("relay.op.get", "renamed", "pyir.Op",
     "Op(name) is the operator node; pyir.op.get_op_def(name) its definition"),
    ("tvm.IRModule.from_expr", "renamed", "pyir.Module.from_expr", "IRModule is Module"),
    ("tvm.IRModule.__getitem__", "same", "pyir.Module.__getitem__", "by name or GlobalVar"),
    ("tvm.IRModule.__setitem__", "differs", "pyir.Module.with_function",
     "modules are immutable: mod = mod.with_function(name, f); mod[name] = f raises ImmutableError"),
    ("tvm.IRModule.update_func", "differs", "pyir.Module.with_function",
     "raises ImmutableError pointing there"),
    ("tvm.IRModule.update", "differs", "pyir.Module.with_functions", "raises ImmutableError pointing there"),
    ("tvm.IRModule.astext", "same", "pyir.Module.astext", ""),
    ("tvm.IRModule.get_global_var", "same", "pyir.Module.get_global_var", ""),
    ("relay.transform.InferType", "same", "pyir.transform.InferType", "types are also inferred on demand"),
    ("relay.transform.FoldConstant", "same", "pyir.transform.FoldConstant", ""),
    ("relay.transform.FuseOps", "same", "pyir.transform.FuseOps", "identical groups share one function"),
    ("relay.transform.DefuseOps", "same", "pyir.transform.DefuseOps", ""),
    ("relay.transform.DeadCodeElimination", "same", "pyir.transform.DeadCodeElimination", ""),
    ("relay.transform.SimplifyInference", "same", "pyir.transform.SimplifyInference", ""),
    ("relay.transform.SimplifyExpr", "same", "pyir.transform.SimplifyExpr", ""),
    ("relay.transform.EliminateCommonSubexpr", "same", "pyir.transform.EliminateCommonSubexpr",
     "hash-consing already merges identical subexpressions"),
    ("relay.transform.ToANormalForm", "same", "pyir.transform.ToANormalForm", ""),
    ("relay.transform.ToGraphNormalForm", "same", "pyir.transform.ToGraphNormalForm", ""),
    ("relay.transform.ToBasicBlockNormalForm", "same", "pyir.transform.ToBasicBlockNormalForm", ""),
    ("relay.transform.Inline", "same", "pyir.transform.Inline", ""),
    ("relay.transform.DynamicToStatic", "same", "pyir.transform.DynamicToStatic", ""),
    ("tvm.transform.Sequential", "same", "pyir.transform.Sequential",
     "gates passes by the context's opt_level"),
    ("tvm.transform.PassContext", "differs", "pyir.transform.PassContext",
     "opt_level=None (the default) gates nothing; config keys are checked; record_lineage="),
    ("relay.transform.function_pass", "differs", "pyir.transform.function_pass",
     "decorates a function (func, mod, name) -> func; passes are frozen dataclasses"),
    ("tvm.transform.module_pass", "differs", "pyir.transform.module_pass", "decorates a function mod -> mod"),
    ("relay.analysis.free_vars", "same", "pyir.analysis.free_vars", ""),
    ("relay.analysis.bound_vars", "same", "pyir.analysis.bound_vars", ""),
    ("relay.analysis.all_vars", "same", "pyir.analysis.all_vars", ""),
    ("relay.analysis.free_type_vars", "differs", "pyir.analysis.free_type_vars",
     "always []: pyir's types have no type variables"),
    ("relay.analysis.detect_feature", "differs", "pyir.analysis.detect_feature",
     "a frozenset of TVM's feature names (\"fGraph\", ...), not a Feature enum"),
    ("relay.analysis.well_formed", "same", "pyir.analysis.well_formed", ""),
    ("relay.ExprFunctor", "differs", "pyir.ExprFunctor",
     "children are computed first, eagerly, iteratively; self.visit(child) is a lookup"),
    ("relay.ExprVisitor", "differs", "pyir.ExprVisitor", "hooks visit_Call(...) by kind, never recurse"),
    ("relay.ExprMutator", "differs", "pyir.ExprMutator",
     "a hook receives the node with its children rewritten"),
    ("relay.ScopeBuilder", "same", "pyir.ScopeBuilder", ""),
    ("tvm.ir.structural_equal", "renamed", "pyir.alpha_equal",
     "pyir.structural_equal is identity (hash-consing: equal structure is one object)"),
    ("tvm.ir.structural_hash", "renamed", "pyir.alpha_hash",
     "pyir.structural_hash comes from the content id"),
    ("relay.create_executor().evaluate", "renamed", "pyir.evaluate", "a numpy reference interpreter"),
    ("tvm.relay.parse / fromtext", "renamed", "pyir.parse", "TVM's text form: helper relaytext"),
    ("relay.frontend.from_onnx", "differs", "pyir.frontend.from_onnx",
     "returns the module; weights are constants"),
    ("relay.concatenate", "same", "pyir.op.concatenate", "one tuple argument, as Relay"),
    ("relay.nn.pad", "same", "pyir.op.nn.pad", "pad_value is an input, as Relay"),
    ("relay.take", "same", "pyir.op.take", "axis=None flattens, as Relay"),
    ("relay.nn.batch_matmul", "same", "pyir.op.nn.batch_matmul",
     "transpose_b=True by default, as Relay's Python"),
    ("relay.annotation.on_device", "renamed", "pyir.op.on_device", "the device is a string attribute"),
    ("relay.mod", "same", "pyir.op.mod", "truncated, as Relay (floor_mod is Python's %)"),
    ("relay.dataflow_pattern.wildcard / is_op / is_constant", "same", "pyir.wildcard",
     "helper relaypat: the rest"),
    ("relay.build / relay.build_module", "missing", "", "out of scope: pyir does not generate code"),
    ("relay.transform.ConvertLayout / AlterOpLayout", "missing", "", "layout passes are not implemented"),
    ("relay.transform.ToMixedPrecision", "missing", "", "not implemented"),
]


def _resolve(path: str) -> object:
    """The object a dotted pyir path names (a module, then attributes)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise AssertionError(path)


def test_the_table_names_pyir_apis_that_exist() -> None:
    assert len(RELAY_APIS) >= 48
    assert {s for _, s, _, _ in RELAY_APIS} <= {"same", "renamed", "differs", "missing"}
    for relay, status, name, note in RELAY_APIS:
        if status == "missing":
            assert not name and note, relay
            continue
        assert callable(_resolve(name)), (relay, name)
        if status in ("renamed", "differs"):
            assert note, relay  # every deliberate difference says what it is


# -- analyses --------------------------------------------------------------------------------------


def test_all_vars_free_bound_well_formed() -> None:
    x, y, t = pyir.var("x", shape=(2,)), pyir.var("y", shape=(2,)), pyir.var("t")
    body = pyir.Let(t, op.add(x, y), op.multiply(t, x))
    f = pyir.Function([x], body)
    assert free_vars(f) == [y]
    assert set(bound_vars(f)) == {x, t}
    assert set(all_vars(f)) == {x, y, t} and len(all_vars(f)) == 3
    assert well_formed(f)
    assert not well_formed(pyir.Tuple([pyir.Function([x], x), pyir.Function([x], op.exp(x))]))  # bound twice
    assert free_type_vars(f) == []
    with pytest.raises(pyir.PyIRError):
        free_type_vars(3)  # type: ignore[arg-type]


def test_detect_feature() -> None:
    x = pyir.var("x", shape=(2,))
    assert detect_feature(x) == {"fVar"}
    a = op.add(x, x)
    assert detect_feature(pyir.Function([x], op.exp(a))) == {"fFunction", "fVar", "fCall", "fOp"}
    shared = pyir.Function([x], op.multiply(a, op.exp(a)))  # a is used twice: a graph, not a tree
    assert "fGraph" in detect_feature(shared)
    t, g = pyir.var("t"), pyir.var("g")
    prog = pyir.Function([x], pyir.Let(t, pyir.Tuple([x, pyir.const(1.0)]), pyir.If(
        pyir.const(True), pyir.TupleGetItem(t, 0), x)))
    assert detect_feature(prog) == {"fFunction", "fVar", "fLet", "fTuple", "fConstant", "fIf",
                                    "fTupleGetItem"}
    n = pyir.var("n", shape=(), dtype="int32")
    rec = pyir.Function([n], pyir.Call(g, [n]))  # a let-bound function calling itself
    assert "fLetRec" in detect_feature(pyir.Let(g, rec, pyir.Call(g, [pyir.const(1)])))
    mod = pyir.Module({"main": pyir.Function([x], pyir.Call(pyir.GlobalVar("h"), [x])),
                       "h": pyir.Function([y := pyir.var("y", shape=(2,))], y)})
    assert "fGlobalVar" in detect_feature(mod)
    assert FEATURES_ARE_TVMS <= set(pyir.analysis.FEATURES)


FEATURES_ARE_TVMS = {"fVar", "fGlobalVar", "fConstant", "fTuple", "fTupleGetItem", "fFunction", "fOp",
                     "fCall", "fLet", "fIf", "fRefCreate", "fRefRead", "fRefWrite", "fConstructor", "fMatch",
                     "fGraph", "fLetRec"}


class _Depth(pyir.ExprFunctor):
    def visit_var(self, v: pyir.Var) -> int:
        return 0

    def visit_constant(self, c: pyir.Constant) -> int:
        return 0

    def visit_op(self, o: pyir.Op) -> int:
        return 0

    def visit_function(self, f: pyir.Function) -> int:
        return self.visit(f.body)

    def visit_call(self, c: pyir.Call) -> int:
        return 1 + max(self.visit(a) for a in c.args)


def test_detect_feature_all_vars_functor_deep(deep_chain: pyir.Module) -> None:
    """No recursion by depth: the 10^6-deep chain through the new analyses and the functor."""
    f = deep_chain["main"]
    assert detect_feature(f) == {"fFunction", "fVar", "fCall", "fOp", "fConstant"}  # no fGraph: x, 1 atomic
    assert _Depth().visit(f) == 10**6  # (all_vars and well_formed are post_order and scope_info,
    # which the deep suite runs already)


def test_detect_feature_and_functor_at_depth() -> None:
    """The same at 10^4 depth in the quick run."""
    x = pyir.var("x", shape=(2,))
    e: pyir.Expr = x
    for _ in range(10_000):
        e = op.exp(e)
    assert detect_feature(e) == {"fVar", "fCall", "fOp"}
    assert _Depth().visit(e) == 10_000



# -- ExprFunctor, ScopeBuilder --------------------------------------------------------------------


def test_expr_functor_dispatch_and_missing_hook() -> None:
    class Show(pyir.ExprFunctor):
        def visit_var(self, v: pyir.Var) -> str:
            return v.name_hint

        def visit_constant(self, c: pyir.Constant) -> str:
            return str(c.data.item())

        def visit_op(self, o: pyir.Op) -> str:
            return o.name

        def visit_call(self, c: pyir.Call) -> str:
            return f"{self.visit(c.op)}({', '.join(self.visit(a) for a in c.args)})"

        def visit_tuple(self, t: pyir.Tuple) -> str:
            return "(" + ", ".join(self.visit(f) for f in t.fields) + ")"

        def visit_tuple_getitem(self, g: pyir.TupleGetItem) -> str:
            return f"{self.visit(g.tuple_value)}.{g.index}"

    x = pyir.var("x", shape=(2,))
    e = pyir.TupleGetItem(pyir.Tuple([op.add(x, pyir.const(1.0)), x]), 0)
    assert Show().visit(e) == "(add(x, 1.0), x).0"
    with pytest.raises(pyir.WellFormedError, match="visit_function"):
        Show().visit(pyir.Function([x], x))
    from pyir.rewrite.expr_functor import hook_name

    assert hook_name(pyir.GlobalVar) == "visit_global_var" and hook_name(pyir.If) == "visit_if"


def test_scope_builder() -> None:
    c = pyir.var("c", shape=(), dtype="bool")
    x = pyir.var("x", shape=(2,))
    sb = pyir.ScopeBuilder()
    t = sb.let(("t", pyir.TensorType((2,))), op.exp(x))
    with sb.if_scope(c):
        u = sb.let("u", op.add(t, t))
        sb.ret(u)
    with sb.else_scope():
        sb.ret(op.negative(t))
    f = pyir.Function([c, x], sb.get())
    assert isinstance(f.body, pyir.Let) and f.body.var is t and isinstance(f.body.body, pyir.If)
    v = np.array([0.0, 1.0], "float32")
    m = pyir.Module.from_expr(f)
    np.testing.assert_allclose(pyir.evaluate(m, np.array(True), v), 2 * np.exp(v), rtol=1e-6)
    np.testing.assert_allclose(pyir.evaluate(m, np.array(False), v), -np.exp(v), rtol=1e-6)
    deep = pyir.ScopeBuilder()
    last: pyir.Expr = x
    for i in range(5_000):
        last = deep.let(f"v{i}", op.exp(last))
    deep.ret(last)
    assert pyir.count_nodes(deep.get()) > 5_000
    bad = pyir.ScopeBuilder()
    with pytest.raises(pyir.WellFormedError, match="ret"):
        bad.get()
    with pytest.raises(pyir.WellFormedError, match="else_scope must follow"):
        with bad.else_scope():
            pass
    with bad.if_scope(c):
        bad.ret(x)
    with pytest.raises(pyir.WellFormedError, match="without its else_scope"):
        bad.get()
    with pytest.raises(pyir.WellFormedError, match="twice"):
        once = pyir.ScopeBuilder()
        once.ret(x)
        once.ret(x)


# -- PassContext, modules -------------------------------------------------------------------------


def _cse_and_fold_module() -> pyir.Module:
    x = pyir.var("x", shape=(2,))
    c = op.add(pyir.const(np.ones(2, "float32")), pyir.const(np.ones(2, "float32")))
    return pyir.Module.from_expr(pyir.Function([x], op.multiply(op.add(x, c), x)))


def test_pass_context_opt_level_gates_sequential() -> None:
    mod = _cse_and_fold_module()
    seq = Sequential([InferType(), FoldConstant(), EliminateCommonSubexpr(), DeadCodeElimination()])
    assert FoldConstant.opt_level == 2 == OPT_LEVELS["FoldConstant"] and EliminateCommonSubexpr.opt_level == 3
    every = seq(mod)  # outside any context: every pass runs (pyir's default)
    assert "FoldConstant" in [r.name for r in every.pass_records]
    with PassContext(opt_level=1):  # FoldConstant (2) and CSE (3) skipped; InferType (0) and DCE (1) run
        assert "FoldConstant" not in [r.name for r in seq(mod).pass_records]
        assert FoldConstant()(mod) is not mod  # a pass called directly always runs, as in TVM
    with PassContext(opt_level=1, required_pass=["FoldConstant"]):
        assert seq(mod)["main"] is every["main"]
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        assert "FoldConstant" not in [r.name for r in seq(mod).pass_records]
    with PassContext(opt_level=2):
        assert seq(mod)["main"] is every["main"]
    with pytest.raises(pyir.PassError, match="opt_level"):
        PassContext(opt_level=-1)


def test_pass_context_config_reaches_passes() -> None:
    seen = []

    @pyir.transform.module_pass
    def ReadsConfig(mod: pyir.Module) -> pyir.Module:
        seen.append(PassContext.current().get_config("relay.FuseOps.max_depth", 256))
        return mod

    mod = _cse_and_fold_module()
    ReadsConfig(mod)
    with PassContext(opt_level=3, config={"relay.FuseOps.max_depth": 10}):
        ReadsConfig(mod)
    assert seen == [256, 10]
    with pytest.raises(pyir.PassError, match="unknown config key"):
        PassContext(config={"relay.FuseOps.max_dpth": 3})
    with pytest.raises(pyir.PassError, match="takes a int"):
        PassContext(config={"relay.FuseOps.max_depth": "3"})
    register_pass_config("mytool.level", int)
    with PassContext(config={"mytool.level": 2}) as ctx:
        assert ctx.get_config("mytool.level") == 2


def test_module_item_assignment_points_to_with_function() -> None:
    mod = _cse_and_fold_module()
    f = mod["main"]
    with pytest.raises(pyir.ImmutableError, match=r"with_function\('main', f\)"):
        mod["main"] = f
    with pytest.raises(pyir.ImmutableError, match="with_function"):
        mod.update_func(pyir.GlobalVar("main"), f)
    with pytest.raises(pyir.ImmutableError, match="without_function"):
        del mod["main"]
    with pytest.raises(pyir.ImmutableError, match="with_functions"):
        mod.update(mod)
    assert mod.with_function("g", f)["g"] is f and "g" not in mod
