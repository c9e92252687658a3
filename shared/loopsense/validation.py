"""Turning pydantic's errors into VALIDATION_ERROR details that never echo the caller's input.

Pydantic's own messages are mostly safe, but some quote the input (union tags, unknown keys in
the location), so every detail is rebuilt here from the error type and the schema's limits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import pydantic
from pydantic import ConfigDict

from loopsense.errors import Detail, LoopsenseError, validation_error

# Ids a caller picks that travel in paths and keys (runId, executionId): 1..128 of A-Z a-z 0-9
# . _ : - (no '#', the stores' key separator; nothing a path would need to encode but ':').
SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Agent ids and Idempotency-Keys: 1..128 printable ASCII characters, no spaces.
PRINTABLE_ID = re.compile(r"^[\x21-\x7e]{1,128}$")

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


def _path(prefix: str, loc: Iterable[Any], error_type: str,
          keys: Mapping[str, str] | None = None) -> str:
    parts = [str(p) for p in loc]
    if error_type == "extra_forbidden":
        # The last element is the caller's unknown key: name the object, not the key.
        parts = parts[:-1]
    for at, part in enumerate(parts[:-1]):
        if keys and part in keys:  # a map keyed by the caller (tools): its placeholder instead
            parts[at + 1] = keys[part]
            break
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
# Every answer shape (the OpenAPI document's answers, the SDKs' types): no key it does not name.
ANSWER = ConfigDict(extra="forbid")
Model = TypeVar("Model", bound=pydantic.BaseModel)


def validate(model: type[Model], raw: Any, prefix: str = "input",
             keys: Mapping[str, str] | None = None) -> Model:
    """``raw`` as ``model``, or VALIDATION_ERROR with details that never echo the input:
    ``keys`` names the fields that are maps keyed by the caller, and the placeholder their
    keys are named by in a path (``{"tools": "<tool>"}``: ``config.tools.<tool>.exempt``)."""
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise from_pydantic(exc, prefix, keys) from None


def from_pydantic(exc: pydantic.ValidationError, prefix: str = "input",
                  keys: Mapping[str, str] | None = None) -> LoopsenseError:
    details: list[Detail] = []
    seen: set[tuple[str, str]] = set()
    for error in exc.errors(include_url=False, include_input=False, include_context=True):
        detail = (_path(prefix, error["loc"], error["type"], keys), _issue(error))
        if detail not in seen:
            seen.add(detail)
            details.append(Detail(*detail))
    details.sort(key=lambda d: (d.path, d.issue))
    first = details[0] if details else Detail(prefix, "is not valid")
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return LoopsenseError("VALIDATION_ERROR", f"{first.path}: {first.issue}{more}", details)


# A number that arrives as text (a query parameter, a header): ASCII digits only. str.isdigit()
# and int() also take '²', fullwidth and Arabic-Indic digits (and int() then fails on some).
_DIGITS = re.compile(r"[0-9]{1,20}")


def is_digits(raw: str) -> bool:
    """Whether ``raw`` is 1 to 20 ASCII digits: the one rule for a number written as text."""
    return _DIGITS.fullmatch(raw) is not None


def ascii_int(raw: str, path: str, low: int, high: int, issue: str | None = None) -> int:
    """``raw`` (ASCII digits) as an int from ``low`` to ``high``, else VALIDATION_ERROR naming
    ``path`` and the range (or ``issue``), never the value."""
    if not is_digits(raw) or not low <= int(raw) <= high:
        raise validation_error(path, issue or f"must be an integer from {low} to {high}")
    return int(raw)
