"""Structure-aware fuzzing of the binary and JSON loaders (issue 10, items 1-3, 12, 13).

Valid payloads of a few seed modules are decoded into their sections (binary) or
parsed (JSON), mutated where the decoder looks (ints, strings, kinds, lengths,
bytes; JSON values, ids, entries), and re-assembled with the checksum recomputed,
so mutations reach the decoder.  The oracle: every payload either raises
SerializationError or loads into objects that are canonical
(:func:`pyir.testing.assert_canonical`), well-formed, re-serializable stably, and
that type-check or fail with pyir errors only.  Budget: see ``tests/_fuzz.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.testing import assert_canonical

# -- assert_canonical -------------------------------------------------------------------------------


def test_assert_canonical_accepts_built_modules():
    """issue 10 item 1: the oracle accepts whatever the constructors built."""
    assert_canonical(pyir.testing.resnet(1))
    assert_canonical(pyir.testing.transformer_block())
    assert_canonical(op.nn.relu(pyir.var("x", shape=(2,))))
    assert_canonical(pyir.testing.elementwise_chain(10**5))  # iterative: any depth


def test_assert_canonical_rejects_a_non_normalized_call():
    """issue 10 item 1: a Call whose attributes skipped the op schema is reported."""
    x = pyir.var("x", shape=(1, 2, 4, 4))
    w = pyir.const(np.ones((2, 2, 3, 3), "float32"))
    bad = pyir.Call(pyir.Op("nn.conv2d"), (x, w),
                    op.nn.conv2d(x, w).attrs.with_(padding=(1, 1)), _checked=True)
    with pytest.raises(AssertionError, match="not canonical"):
        assert_canonical(pyir.Module({"main": pyir.Function([x], op.nn.relu(bad))}))
    with pytest.raises(AssertionError):
        assert_canonical("not a node")
