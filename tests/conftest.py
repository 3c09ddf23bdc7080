"""Shared fixtures: the 10**6-deep chain every operation must survive, built once."""

from __future__ import annotations

import os

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
