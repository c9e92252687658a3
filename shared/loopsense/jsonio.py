"""JSON in and out, the same way everywhere: strict parsing, byte-stable serialization."""

from __future__ import annotations

import json
from typing import Any

from loopsense.errors import validation_error


def _reject_constant(name: str) -> Any:
    raise ValueError("non-finite number")


def loads(raw: bytes | str, path: str = "body") -> Any:
    """Parse JSON; NaN/Infinity and nesting past Python's recursion limit are rejected."""
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise validation_error(path, "is nested too deeply") from None
    except (ValueError, UnicodeDecodeError):
        # json.JSONDecodeError is a ValueError; its message quotes the input, so drop it.
        raise validation_error(path, "is not valid JSON") from None


def dumps(value: Any) -> str:
    """The one serialization of responses: insertion order kept, so equal input, equal bytes."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
