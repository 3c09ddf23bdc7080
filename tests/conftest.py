"""Shared fixtures (the 10**6-deep chain every operation must survive, built once), the
``slow`` marker and the ``--fuzz-long`` option.

``python3 -m pytest -m "not slow"`` is the quick development subset: it leaves out the 10**6-deep
runs and the real-model imports, which the full run (CI) keeps.
"""

from __future__ import annotations

import os
import re

import pytest

import pyir

DEPTH = 10**6


@pytest.fixture(scope="session")
def deep_chain() -> pyir.Module:
    """``main(x)``: a 10**6-deep chain of elementwise calls (built once per session)."""
    return pyir.testing.elementwise_chain(DEPTH)


@pytest.fixture(scope="session")
def deep_anf(deep_chain) -> pyir.Module:
    """The A-normal form of ``deep_chain``: a 10**6-deep let chain."""
    return pyir.transform.ToANormalForm()(deep_chain)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the structure-aware fuzz tests as a long campaign (see tests/_fuzz.py)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--fuzz-long"):
        os.environ["PYIR_FUZZ_LONG"] = "1"  # read by tests/_fuzz.py when the fuzz modules import


_SLOW_FIXTURES = {"deep_chain", "deep_anf"}
_SLOW_NAME = re.compile(r"deep|million|10_?6")
_SLOW_MODULES = {"test_onnx_models.py", "test_examples_onnx.py"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark as ``slow`` the 10**6-deep tests and the real-model imports (deselect: -m "not slow"),
    and group the tests into the work units that pytest-xdist schedules (``--dist loadgroup``).

    A work unit runs on one worker.  Each file is one unit (its module fixtures and caches, e.g.
    the mypy run of test_typing.py or the ONNX reference outputs of test_onnx_models.py, are
    computed once), except that each 10**6-deep test is a unit of its own: a file's deep tests
    can then run on different workers (the deep chains are session fixtures, built once per
    worker).  The slow units come first (``--no-loadscope-reorder`` keeps this order), so that
    the long tests start at once and the short files fill in around them instead of one long
    test starting last and running alone.
    """
    slow = pytest.mark.slow
    heavy: list[pytest.Item] = []
    rest: list[pytest.Item] = []
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        deep = bool(fixtures & _SLOW_FIXTURES or _SLOW_NAME.search(item.name))
        slow_module = item.path.name in _SLOW_MODULES
        if deep or slow_module:
            item.add_marker(slow)
        group = item.nodeid if deep and not slow_module else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        (heavy if deep or slow_module else rest).append(item)
    items[:] = heavy + rest
