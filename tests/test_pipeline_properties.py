"""Random programs through random pass pipelines: the invariant bundle.

For every drawn program and pipeline: the input module is unchanged (ids and
text), the output means the same under the interpreter, every output node
either existed in the input or has origins, and every origin is an input id.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyir
from pyir.testing import check_pass, programs
from pyir.transform import (
    DeadCodeElimination,
    DefuseOps,
    EliminateCommonSubexpr,
    FoldConstant,
    FuseOps,
    InferType,
    Inline,
    Sequential,
    SimplifyExpr,
    SimplifyInference,
    ToANormalForm,
    ToBasicBlockNormalForm,
    ToGraphNormalForm,
)

PASSES = [InferType(), SimplifyInference(), FoldConstant(), SimplifyExpr(), EliminateCommonSubexpr(),
          DeadCodeElimination(), FuseOps(), DefuseOps(), ToANormalForm(), ToBasicBlockNormalForm(),
          ToGraphNormalForm(), Inline()]


def _all_nodes(mod):
    return pyir.post_order(list(mod.functions().values()))


@settings(max_examples=40, deadline=None)
@given(programs(), st.lists(st.sampled_from(PASSES), min_size=1, max_size=6))
def test_random_pipelines_keep_input_meaning_and_lineage(mod, passes):
    """Input unchanged, meaning unchanged, lineage complete, through random pipelines."""
    out = check_pass(Sequential(passes), mod, idempotent=False)
    if out is not mod:
        input_ids = {n.id for n in _all_nodes(mod)}
        for n in _all_nodes(out):  # origins through the whole pipeline reach the input
            assert n.id in input_ids or (out.origins(n) and out.origins(n) <= input_ids)


@settings(max_examples=25, deadline=None)
@given(programs(), st.sampled_from(PASSES))
def test_every_pass_is_idempotent_or_converges(mod, p):
    """Running a pass on its own output changes nothing (same module object)."""
    once = p(mod)
    assert p(once) is once


def test_standard_pipeline_on_models_keeps_meaning():
    """The whole standard pipeline keeps the meaning of the ResNet and transformer models."""
    pipeline = Sequential([InferType(), SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(),
                           DefuseOps(), ToANormalForm(), EliminateCommonSubexpr(), ToGraphNormalForm(),
                           DeadCodeElimination()])
    for mod in (pyir.testing.resnet(3), pyir.testing.transformer_block()):
        out = check_pass(pipeline, mod, idempotent=False)
        assert [r.name for r in out.pass_records][:1] == ["InferType"]


def test_basic_block_normal_form_leaves_a_conv_module_untouched():
    """The case reported against other IRs: ToBasicBlockNormalForm must not touch its input."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.const(np.ones((4, 3, 3, 3), "float32"))
    mod = pyir.Module.from_expr(pyir.op.nn.relu(pyir.op.nn.conv2d(x, w, padding=(1, 1))))
    text, ids = mod.astext(), [n.id for n in _all_nodes(mod)]
    ToBasicBlockNormalForm()(mod)
    ToBasicBlockNormalForm()(ToANormalForm()(mod))
    assert mod.astext() == text and [n.id for n in _all_nodes(mod)] == ids


@pytest.mark.parametrize("p", [ToBasicBlockNormalForm(), Inline(), EliminateCommonSubexpr(),
                               DeadCodeElimination()], ids=lambda p: p.name)
def test_remaining_passes_survive_the_deep_chain(p, deep_chain):
    """Passes without a deep test of their own take the 10^6-deep chain (nothing to change)."""
    assert p(deep_chain) is deep_chain


def test_lineage_ending_in_a_substituted_parameter():
    """Hypothesis found it: FuseOps -> SimplifyExpr -> DefuseOps on ``x + 0f``.  SimplifyExpr
    rewrites the fused body ``%p + 0f`` to ``%p`` (the constant's lineage ends in the variable),
    then DefuseOps substitutes the argument for ``%p``: the constant was consumed into a
    variable, which the forward lineage check accepts in intermediate modules too."""
    x = pyir.var("p0", shape=(4,))
    c = pyir.const(np.float32(0.0))
    for body in (pyir.op.add(x, c), pyir.op.nn.relu(pyir.op.add(x, c))):
        mod = pyir.Module.from_expr(body)
        out = check_pass(Sequential([FuseOps(), SimplifyExpr(), DefuseOps()]), mod, idempotent=False)
        assert out["main"].body is (x if body.op is pyir.Op("add") else pyir.op.nn.relu(x))
