"""Skills that exist only for tests of the local server (`loopsense serve --test-skills`).

`test.sleep` sleeps `ms` milliseconds and answers `{"slept": ms}`: it is team-only (so hobby gets
SKILL_NOT_AVAILABLE_FOR_PLAN) and has a 300 ms budget (so a long sleep is EXECUTION_TIMEOUT).
`test.crash` raises on every input: a skill with a bug (INTERNAL_ERROR, nothing charged).
`test.large` answers the numbers 0..`count`-1: an output as large as asked (docs/files.md).
"""

from __future__ import annotations

import time
from typing import Any

from loopsense.errors import validation_error
from loopsense.platform.access.catalog import Skill, register

SLEEP = Skill(key="test.sleep", version="1.0.0", cost=1,
              plans=frozenset({"team", "enterprise"}), function="TestSleepFunction",
              module=__name__, timeout_ms=300)


CRASH = Skill(key="test.crash", version="1.0.0", cost=1,
              plans=frozenset({"team", "enterprise"}), function="TestCrashFunction",
              module="loopsense_local.test_crash", timeout_ms=300)


LARGE = Skill(key="test.large", version="1.0.0", cost=1,
              plans=frozenset({"team", "enterprise"}), function="TestLargeFunction",
              module="loopsense_local.test_large", timeout_ms=5_000)


def run(raw: Any, tenant_thresholds: Any = None) -> dict[str, Any]:
    ms = raw.get("ms") if isinstance(raw, dict) else None
    if not isinstance(ms, int) or isinstance(ms, bool) or not 0 <= ms <= 5_000:
        raise validation_error("input.ms", "must be an integer from 0 to 5000")
    time.sleep(ms / 1000)
    return {"slept": ms}


def install() -> None:
    register(SLEEP)
    register(CRASH)
    register(LARGE)
