"""Limits every skill applies the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pydantic_core

from loopsense.errors import validation_error

# Imported for its side effect: the catalog declares each skill's own error codes (every skill
# module imports this one, so a skill run on its own knows its codes too).
from loopsense.platform.access import catalog  # noqa: F401


def input_size(raw: Any) -> int:
    """UTF-8 bytes of ``input`` as compact JSON: the size the 2 MB style limits speak of.

    pydantic-core's serializer is 3-4x faster than json.dumps for this (benchmarks/).
    """
    return len(pydantic_core.to_json(raw))


def objects_input_size(raw: dict[str, Any], field: str, key_counts: Mapping[str, int],
                       values: str) -> int:
    """``input_size(raw)`` when ``raw[field]`` is a list of flat objects, each with at least
    one key and only strings for values, without serializing each object (5,000 events: about
    a third of the time): ``key_counts`` says in how many objects each key occurs, ``values`` is
    every value concatenated (JSON escapes character by character: its escapes are theirs)."""
    objects = len(raw[field])
    pairs = sum(key_counts.values())
    keys = sum(count * len(pydantic_core.to_json(key)) for key, count in key_counts.items())
    return (input_size({**raw, field: []})  # the rest, with "[]" for the list
            + max(objects - 1, 0) + 2 * objects  # commas between the objects, their braces
            + (pairs - objects) + keys + pairs  # commas between pairs, '"key":'
            + 2 * pairs + len(pydantic_core.to_json(values)) - 2)  # the quoted values


def check_event_count(raw: Any, limit: int, code: str, field: str = "events") -> None:
    """More than ``limit`` events is the skill's own limit error, before validating them all."""
    events = raw.get(field) if isinstance(raw, dict) else None
    if isinstance(events, list) and len(events) > limit:
        raise validation_error(f"input.{field}", f"must have at most {limit} {field}", code)


def check_input_size(raw: Any, limit: int, code: str,
                     measure: Callable[[Any], int] = input_size) -> None:
    """``measure`` is ``input_size`` or a faster way to the same number."""
    if not isinstance(raw, dict):
        raise validation_error("input", "must be an object")
    try:
        size = measure(raw)
    except (RecursionError, ValueError) as exc:  # PydanticSerializationError is a ValueError
        if isinstance(exc, RecursionError) or "depth exceeded" in str(exc):
            raise validation_error("input", "is nested too deeply") from None
        # e.g. a lone surrogate ("\ud800"): a valid JSON escape, but not Unicode text.
        raise validation_error("input", "contains a string that is not valid Unicode") from None
    if size > limit:
        raise validation_error("input", f"must be at most {limit} bytes as JSON", code)
