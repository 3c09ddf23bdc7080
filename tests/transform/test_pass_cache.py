"""PassCache (issue 16 item 3): incremental pipeline re-runs with the lineage of a real run."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyir
from pyir import op
from pyir.errors import PassError
from pyir.ir.expr import Call, Function, GlobalVar
from pyir.ir.traverse import post_order
from pyir.transform import (
    DeadCodeElimination,
    DefuseOps,
    EliminateCommonSubexpr,
    FoldConstant,
    FuseOps,
    InferType,
    Inline,
    PassCache,
    PassContext,
    PatternRewrite,
    Sequential,
    SimplifyExpr,
    SimplifyInference,
    TimingInstrument,
    ToANormalForm,
    ToBasicBlockNormalForm,
    ToGraphNormalForm,
    standard_pipeline,
)
from pyir.transform.cache import DictBackend

N_FUNCS = 4


def _leaf(i: int, extra: bool = False) -> Function:
    f = pyir.testing.resnet(1, channels=4, size=4, seed=i)["main"]
    if extra:  # an edit: an identity SimplifyExpr removes (a rule fires) around the output
        body = op.multiply(f.body, pyir.const(1.0))
        f = Function(f.params, body)
    return f


def _module() -> pyir.Module:
    x = pyir.var("x", shape=(1, 3, 4, 4))
    funcs = {f"f{i}": _leaf(i) for i in range(N_FUNCS)}
    body: Any = Call(GlobalVar("f0"), [x])
    for i in range(1, N_FUNCS):
        body = op.add(body, Call(GlobalVar(f"f{i}"), [x]))
    funcs["main"] = Function([x], body)
    return pyir.Module(funcs)


def _fields(r: Any) -> tuple[Any, ...]:
    return (r.name, r.options, list(r.edges), r.removed, dict(r.sources or {}), r.rules(), r.rule_names)


def assert_same_run(a: pyir.Module, b: pyir.Module) -> None:
    """``a`` and ``b`` are the same result: functions (objects, hence ids), text, records."""
    assert a.names() == b.names()
    assert all(a[n] is b[n] for n in a.names())
    assert a.astext() == b.astext()
    assert [_fields(r) for r in a.pass_records] == [_fields(r) for r in b.pass_records]


def _queries(before: pyir.Module, out: pyir.Module) -> list[Any]:
    """find / origins / history answers for every node of the input (sampled) and the output."""
    ins = post_order(list(before.functions().values()))[::7]
    outs = post_order(list(out.functions().values()))[::7]
    return ([sorted(n.id for n in out.find(x)) for x in ins]
            + [sorted(out.origins(y)) for y in outs]
            + [[(s.pass_name, s.before, s.after, s.rule) for s in out.history(y)] for y in outs])


@pytest.fixture(scope="module")
def mod() -> pyir.Module:
    return _module()


@pytest.fixture(scope="module")
def uncached(mod: pyir.Module) -> pyir.Module:
    return standard_pipeline()(mod)


def test_hit_and_miss_per_function(mod: pyir.Module, uncached: pyir.Module) -> None:
    c = PassCache()
    before = pyir.testing.snapshot(mod)
    cold = standard_pipeline()(mod, cache=c)
    # 6 function-scoped passes x 5 functions, and DeadCodeElimination (module scope) once
    assert c.stats() == {"hits": 0, "misses": 6 * 5 + 1, "bad": 0}
    assert len(c.backend) == 31
    warm = standard_pipeline()(mod, cache=c)
    assert c.stats() == {"hits": 31, "misses": 31, "bad": 0}
    assert pyir.testing.snapshot(mod) == before  # the input is unchanged
    assert_same_run(cold, uncached)
    assert_same_run(warm, uncached)
    assert _queries(mod, warm) == _queries(mod, uncached)


def test_edited_function_reruns_only_it(mod: pyir.Module, monkeypatch: pytest.MonkeyPatch) -> None:
    c = PassCache()
    standard_pipeline()(mod, cache=c)
    edited = mod.with_function("f2", _leaf(2, extra=True))
    ran: dict[str, list[Any]] = {"SimplifyExpr": [], "FuseOps": []}
    simplify, fuse = SimplifyExpr.transform_function, FuseOps.fuse_function

    def count_simplify(self: Any, func: Function, m: pyir.Module, name: str) -> Function:
        ran["SimplifyExpr"].append(name)
        return simplify(self, func, m, name)

    def count_fuse(self: Any, func: Function, m: pyir.Module, *a: Any) -> Function:
        ran["FuseOps"].append(func)
        return fuse(self, func, m, *a)

    monkeypatch.setattr(SimplifyExpr, "transform_function", count_simplify)
    monkeypatch.setattr(FuseOps, "fuse_function", count_fuse)
    c.hits = c.misses = 0
    out = standard_pipeline()(edited, cache=c)
    # the edited leaf only, once per pass (main's key holds the types of its callees, unchanged);
    # DeadCodeElimination (module scope) runs again
    assert ran["SimplifyExpr"] == ["f2"]
    assert len(ran["FuseOps"]) == 1
    assert c.misses == 6 + 1 and c.hits == 6 * 4
    monkeypatch.undo()
    ref = standard_pipeline()(edited)
    assert_same_run(out, ref)
    assert any(r.rule_names for r in ref.pass_records)  # the edit made a rule fire: replayed too
    assert _queries(edited, out) == _queries(edited, ref)
    # a warm run of the edited module runs nothing
    c.hits = c.misses = 0
    assert_same_run(standard_pipeline()(edited, cache=c), ref)
    assert c.misses == 0


def test_an_edit_that_changes_a_type_reruns_the_callers(mod: pyir.Module) -> None:
    c = PassCache()
    standard_pipeline()(mod, cache=c)
    f = _leaf(3)
    edited = mod.with_function("f3", Function(f.params, op.reshape(f.body, newshape=(10,))))  # (10,)
    c.hits = c.misses = 0
    out = standard_pipeline()(edited, cache=c)
    assert c.misses == 6 * 2 + 1  # f3 and main (it adds f3's result), and DCE
    assert_same_run(out, standard_pipeline()(edited))


class _Cached:
    """The standard pipeline through ``cache``, as a pass for ``check_pass``."""

    name = "standard_pipeline (cached)"

    def __init__(self, cache: PassCache) -> None:
        self.cache = cache

    def __call__(self, m: pyir.Module) -> pyir.Module:
        return standard_pipeline()(m, cache=self.cache)


def test_check_pass_on_cached_results(mod: pyir.Module, uncached: pyir.Module) -> None:
    c = PassCache()
    p = _Cached(c)
    cold = pyir.testing.check_pass(p, mod, idempotent=False)
    warm = pyir.testing.check_pass(p, mod, idempotent=False)
    assert c.hits > 0
    assert_same_run(warm, uncached)
    assert_same_run(cold, uncached)


def test_options_and_context_change_is_a_miss(mod: pyir.Module) -> None:
    c = PassCache()
    pipe = Sequential([SimplifyInference(), SimplifyExpr(), FuseOps()])
    pipe(mod, cache=c)
    assert c.misses == 15  # 3 passes x 5 functions
    other = Sequential([SimplifyInference(), SimplifyExpr(max_steps=7), FuseOps()])
    misses = []
    for p, ctx in [(other, PassContext()),  # SimplifyExpr's option: its 5 entries (FuseOps's input is
                   # the same functions: it hits)
                   (pipe, PassContext(config={"relay.FuseOps.max_depth": 2})),  # the context: all
                   (pipe, PassContext(opt_level=1)),
                   (pipe, PassContext(record_lineage=False))]:
        with ctx:
            c.hits = c.misses = 0
            got = p(mod, cache=c)
            ref = p(mod)
        assert_same_run(got, ref)
        misses.append(c.misses)
    assert misses == [5, 15, 15, 15]


def test_uncacheable_options_just_run(mod: pyir.Module) -> None:
    rule = pyir.Rule(pyir.is_op("nn.relu")(pyir.wildcard()), lambda m: None, name="noop")
    c = PassCache()
    pipe = Sequential([PatternRewrite(rules=(rule,)), FuseOps()])
    assert_same_run(pipe(mod, cache=c), pipe(mod))
    assert c.misses == 5  # FuseOps only: PatternRewrite's rule is not plain data


def test_corrupted_entries_are_misses_with_a_warning(mod: pyir.Module, uncached: pyir.Module) -> None:
    backend = DictBackend()
    standard_pipeline()(mod, cache=backend)  # a backend given directly is wrapped in a PassCache
    keys = sorted(backend.entries)
    assert len(keys) == 31
    good = dict(backend.entries)
    swapped = good[keys[1]]
    for i, k in enumerate(keys):
        v = good[k]
        backend.entries[k] = [v[: len(v) // 2], v[:8] + bytes(8) + v[16:], b"junk", swapped][i % 4]
    backend.entries[keys[1]] = good[keys[2]]  # a valid entry of another key
    c = PassCache(backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = standard_pipeline()(mod, cache=c)
    assert_same_run(out, uncached)
    assert c.bad == 31 and c.hits == 0
    unusable = [w for w in caught if w.category is RuntimeWarning and "pass cache entry" in str(w.message)]
    assert len(unusable) == 31
    assert backend.entries == good  # each was written again, as the real run made it
    c2 = PassCache(backend)
    assert_same_run(standard_pipeline()(mod, cache=c2), uncached)
    assert c2.stats() == {"hits": 31, "misses": 0, "bad": 0}


def test_bad_backend_is_a_pass_error() -> None:
    with pytest.raises(PassError, match="cache_load"):
        PassCache(object())
    with pytest.raises(PassError):
        standard_pipeline()(_module(), cache={})


def test_module_scope_passes(mod: pyir.Module) -> None:
    m = mod.with_function("f1", mod["f1"].with_attrs(Inline=1))
    pipe = Sequential([Inline(), DeadCodeElimination(), InferType()])
    c = PassCache()
    ref = pipe(m)
    assert "f1" not in ref and [r.name for r in ref.pass_records] == ["Inline", "InferType"]
    assert_same_run(pipe(m, cache=c), ref)
    c.hits = c.misses = 0
    assert_same_run(pipe(m, cache=c), ref)
    assert c.misses == 0 and c.hits > 0


def test_a_single_pass_and_instruments(mod: pyir.Module) -> None:
    c = PassCache()
    ref = SimplifyInference()(mod)
    assert_same_run(SimplifyInference()(mod, cache=c), ref)
    t1, t2 = TimingInstrument(), TimingInstrument()
    with PassContext(instruments=[t1]):
        standard_pipeline()(mod)
    with PassContext(instruments=[t2]):
        standard_pipeline()(mod, cache=c)
        standard_pipeline()(mod, cache=c)
    assert [n for n, _ in t2.timings] == 2 * [n for n, _ in t1.timings]  # hits are pass runs too


_PASSES = [SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(), DefuseOps(), ToANormalForm(),
           ToGraphNormalForm(), DeadCodeElimination(), EliminateCommonSubexpr(), InferType(),
           ToBasicBlockNormalForm(), Inline()]


def _caller(g: Function) -> Function:
    """``@w``: calls ``@g`` with its own parameters (so its key holds ``@g``'s type)."""
    ps = [pyir.var(f"w{i}", shape=pyir.testing.PROGRAM_SHAPE) for i in range(len(g.params))]
    return Function(ps, op.add(Call(GlobalVar("g"), ps), pyir.const(1.0)))


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(pyir.testing.programs(max_steps=8), pyir.testing.programs(max_steps=8),
       pyir.testing.programs(max_steps=8), st.lists(st.sampled_from(_PASSES), min_size=1, max_size=6))
def test_random_programs_and_pipelines(a: pyir.Module, b: pyir.Module, e: pyir.Module,
                                       passes: list[Any]) -> None:
    """Random programs through random pipelines, cached twice, equal the uncached run; so does the
    cached run of an edit (``@g`` replaced, ``@w`` calling it)."""
    mod = pyir.Module({"main": a["main"], "g": b["main"], "w": _caller(b["main"])})
    pipe = Sequential(passes)
    ref = pipe(mod)
    c = PassCache()
    assert_same_run(pipe(mod, cache=c), ref)
    first = c.misses
    assert_same_run(pipe(mod, cache=c), ref)
    assert c.misses == first  # the second run hit every time
    g = e["main"]
    w = mod["w"] if len(g.params) == len(b["main"].params) else _caller(g)
    edited = mod.with_functions({"g": g, "w": w})
    assert_same_run(pipe(edited, cache=c), pipe(edited))
