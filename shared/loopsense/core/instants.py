"""Instants as integer epoch milliseconds: ISO-8601 text or epoch-millisecond numbers, and
the one format of every timestamp the API writes (``stamp``).

Pure: no clock, no time zone database (offsets are read from the text; text without an offset
is UTC). Sub-millisecond digits are truncated, so every duration is a whole number of ms.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

# Epoch ms of 0001-01-01 .. 9999-12-31T23:59:59.999Z: what datetime can represent.
MIN_MS = -62_135_596_800_000
MAX_MS = 253_402_300_799_999
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DAY_S = 86_400


def parse_iso(text: str) -> int | None:
    """Epoch ms of an ISO-8601 date-time (``2026-03-12T09:14:03.512Z``, ``...+05:30``,
    ``2026-03-12 09:14:03``, a bare date), or None when it is not one.

    Accepts what Python 3.11's ``datetime.fromisoformat`` accepts (extended and basic
    formats, ``Z``); a text without an offset is read as UTC.
    """
    if not 8 <= len(text) <= 64 or not text.isascii():
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        delta = moment - _EPOCH
    except OverflowError:  # an offset that pushes the instant out of datetime's range
        return None
    return delta.days * 86_400_000 + delta.seconds * 1_000 + delta.microseconds // 1_000


def from_epoch_ms(value: int | float) -> int | None:
    """Whole epoch ms of a number of epoch ms (fractions truncated toward -inf), or None when it
    is not finite or outside the years 1..9999."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = math.floor(value)
    if not MIN_MS <= value <= MAX_MS:
        return None
    return int(value)


def stamp(moment: datetime | int) -> str:
    """RFC 3339 in UTC with milliseconds and ``Z`` (``2026-03-12T09:14:03.512Z``): every
    timestamp the API writes. ``moment``: an aware datetime, or epoch milliseconds. Values
    stored before in other ISO-8601 forms are still read (``parse_iso`` reads them all)."""
    if isinstance(moment, int):
        moment = datetime.fromtimestamp(moment / 1000, UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
