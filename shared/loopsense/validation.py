"""Turning pydantic's errors into VALIDATION_ERROR details that never echo the caller's input.

Pydantic's own messages are mostly safe, but some quote the input (union tags, unknown keys in
the location), so every detail is rebuilt here from the error type and the schema's limits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import pydantic
from pydantic import ConfigDict

from loopsense.errors import Detail, LoopsenseError

_ISSUES: dict[str, str] = {
    "missing": "is required",
    "extra_forbidden": "contains a field that is not allowed",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "bool_type": "must be a boolean",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "too_short": "must have at least {min_length} items",
    "too_long": "must have at most {max_length} items",
    "string_too_short": "must have at least {min_length} characters",
    "string_too_long": "must have at most {max_length} characters",
    "literal_error": "must be one of {expected}",
}


def _path(prefix: str, loc: Iterable[Any], error_type: str) -> str:
    parts = [str(p) for p in loc]
    if error_type == "extra_forbidden":
        # The last element is the caller's unknown key: name the object, not the key.
        parts = parts[:-1]
    # No prefix: the envelope, whose own errors (not an object, unknown field) name the body.
    return ".".join([prefix, *parts]) if prefix else ".".join(parts) or "body"


def _issue(error: Any) -> str:
    template = _ISSUES.get(error["type"], "is not valid")
    try:
        return template.format(**(error.get("ctx") or {}))
    except (KeyError, IndexError):
        return template.split(" {")[0]


# Every input schema: unknown fields rejected, no coercion ("20" is not 20).
STRICT = ConfigDict(extra="forbid", strict=True)
Model = TypeVar("Model", bound=pydantic.BaseModel)


def validate(model: type[Model], raw: Any, prefix: str = "input") -> Model:
    """``raw`` as ``model``, or VALIDATION_ERROR with details that never echo the input."""
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise from_pydantic(exc, prefix) from None


def from_pydantic(exc: pydantic.ValidationError, prefix: str = "input") -> LoopsenseError:
    details: list[Detail] = []
    seen: set[tuple[str, str]] = set()
    for error in exc.errors(include_url=False, include_input=False, include_context=True):
        detail = (_path(prefix, error["loc"], error["type"]), _issue(error))
        if detail not in seen:
            seen.add(detail)
            details.append(Detail(*detail))
    details.sort(key=lambda d: (d.path, d.issue))
    first = details[0] if details else Detail(prefix, "is not valid")
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return LoopsenseError("VALIDATION_ERROR", f"{first.path}: {first.issue}{more}", details)
