"""Shared fixtures (the 10**6-deep chain every operation must survive, built once), the
``slow`` marker and the ``--fuzz-long`` option.

``python3 -m pytest -m "not slow"`` is the quick development subset: it leaves out the 10**6-deep
runs and the real-model imports, which the full run (CI) keeps.
"""

from __future__ import annotations

import gc
import os
import re

import pytest

import pyir

DEPTH = 10**6


def _frozen(mod: pyir.Module) -> pyir.Module:
    """``mod``, its ~5x10**6 objects moved out of the cyclic collector's sight (``gc.freeze``).

    They live until the session ends, and every later full collection (each ``gc.collect()``
    of a test, each automatic one of a large test) would walk them again: ~2 s each (measured:
    test_node.py 25 s -> 8 s of CPU, the DCE file 40 s -> 18 s, once the chains are built
    early).  Garbage is collected first, so nothing collectable is frozen.
    """
    gc.collect()
    gc.freeze()
    return mod


@pytest.fixture(scope="session")
def deep_chain() -> pyir.Module:
    """``main(x)``: a 10**6-deep chain of elementwise calls (built once per session)."""
    return _frozen(pyir.testing.elementwise_chain(DEPTH))


@pytest.fixture(scope="session")
def deep_anf(deep_chain) -> pyir.Module:
    """The A-normal form of ``deep_chain``: a 10**6-deep let chain."""
    return _frozen(pyir.transform.ToANormalForm()(deep_chain))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the structure-aware fuzz tests as a long campaign (see tests/_fuzz.py)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--fuzz-long"):
        os.environ["PYIR_FUZZ_LONG"] = "1"  # read by tests/_fuzz.py when the fuzz modules import


_SLOW_FIXTURES = {"deep_chain", "deep_anf"}
_SLOW_NAME = re.compile(r"deep(?!copy)|million|10_?6")  # (not test_copy_and_deepcopy_...)
_SLOW_MODULES = {"test_onnx_models.py", "test_examples_onnx.py"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark as ``slow`` the 10**6-deep tests and the real-model imports (deselect: -m "not slow"),
    and run the slow tests first.

    pytest-xdist runs with ``--dist worksteal``: each worker starts on its half of this order and
    an idle worker takes half of the other's remaining tests, so the workers finish within about
    one test of each other.  With the long tests first, the last test running alone is a short
    one (with ``loadfile`` a file was one worker's, and the few-test files of deep tests, sorted
    last by test count, ran alone at the end).  The ``xdist_group`` marks (one per file, one per
    10**6-deep test) are used only under ``--dist loadgroup``.

    The tests that use ``deep_anf`` come last, after the quick ones: the second worker starts
    on that end (the quick tests, then these), the first one on the other slow tests, and an
    idle worker steals from the *end* of the other's queue -- the second worker finishes first
    and steals the first one's quick tests, so only one worker builds the 10**6 let chain
    (~20 s of CPU and ~1 GB, measured: ToANormalForm of the chain 18 s, the chain 2.6 s).
    A new test that takes ``deep_anf`` joins that group by itself.
    """
    slow = pytest.mark.slow
    heavy: list[pytest.Item] = []
    rest: list[pytest.Item] = []
    anf: list[pytest.Item] = []
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        deep = bool(fixtures & _SLOW_FIXTURES or _SLOW_NAME.search(item.name))
        slow_module = item.path.name in _SLOW_MODULES
        if deep or slow_module:
            item.add_marker(slow)
        group = item.nodeid if deep and not slow_module else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        (anf if "deep_anf" in fixtures else heavy if deep or slow_module else rest).append(item)
    items[:] = heavy + rest + anf
