"""How much the structure-aware fuzz tests run: bounded by default, long on request.

The default run (every CI run) draws ``FUZZ_EXAMPLES`` mutations per fuzz test.  A long
campaign: ``pytest tests -k fuzz --fuzz-long`` (``FUZZ_LONG_EXAMPLES`` per test), or set
``PYIR_FUZZ_EXAMPLES=<n>`` for any other budget.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_DEFAULT_EXAMPLES = 150
FUZZ_LONG_EXAMPLES = 20_000


def _examples() -> int:
    n = os.environ.get("PYIR_FUZZ_EXAMPLES")
    if n:
        return int(n)
    return FUZZ_LONG_EXAMPLES if os.environ.get("PYIR_FUZZ_LONG") else FUZZ_DEFAULT_EXAMPLES


FUZZ_EXAMPLES = _examples()

#: Settings for a fuzz test: the budget above, no deadline (shared, noisy machines).
fuzz_settings = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    database=None,
)
