"""`test.crash` (loopsense_local.test_skills): a skill with a bug, for the fault tests."""

from __future__ import annotations

from typing import Any


def run(raw: Any, tenant_thresholds: Any = None) -> dict[str, Any]:
    raise RuntimeError("test.crash crashes by design")
