"""`test.large` (loopsense_local.test_skills): a skill whose output can pass the inline response
size (6 MB), which no v1 skill's does, for the tests of outputs answered by fileRef."""

from __future__ import annotations

from typing import Any

from loopsense.errors import validation_error

MAX_COUNT = 2_000_000  # about 16 MB of output


def run(raw: Any, tenant_thresholds: Any = None) -> dict[str, Any]:
    count = raw.get("count") if isinstance(raw, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_COUNT:
        raise validation_error("input.count", f"must be an integer from 0 to {MAX_COUNT}")
    return {"count": count, "numbers": list(range(count))}
