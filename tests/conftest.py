"""Shared fixtures: the 10**6-deep chain every operation must survive, built once."""

from __future__ import annotations

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
