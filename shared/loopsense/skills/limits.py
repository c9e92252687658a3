"""Limits every skill applies the same way."""

from __future__ import annotations

import json
from typing import Any

from loopsense.errors import validation_error


def input_size(raw: Any) -> int:
    """UTF-8 bytes of ``input`` as compact JSON: the size the 2 MB style limits speak of."""
    return len(json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode())


def check_input_size(raw: Any, limit: int, code: str) -> None:
    if not isinstance(raw, dict):
        raise validation_error("input", "must be an object")
    try:
        size = input_size(raw)
    except RecursionError:
        raise validation_error("input", "is nested too deeply") from None
    if size > limit:
        raise validation_error("input", f"must be at most {limit} bytes as JSON", code)
