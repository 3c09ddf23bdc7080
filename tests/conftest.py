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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark as ``slow`` the 10**6-deep tests and the real-model imports (deselect: -m "not slow")."""
    slow = pytest.mark.slow
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if (fixtures & _SLOW_FIXTURES or _SLOW_NAME.search(item.name)
                or item.path.name in _SLOW_MODULES):
            item.add_marker(slow)
