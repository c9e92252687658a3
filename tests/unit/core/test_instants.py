"""One timestamp format for everything the API writes (core.instants.stamp), and every form
written before it still read."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from loopsense.core.instants import parse_iso, stamp

RFC3339_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_a_stamp_is_rfc3339_utc_with_milliseconds_and_z():
    moment = datetime(2026, 12, 1, 21, 5, 9, 123_456, tzinfo=UTC)
    assert stamp(moment) == "2026-12-01T21:05:09.123Z"
    assert stamp(datetime(2026, 12, 1, 21, 5, 9, tzinfo=UTC)) == "2026-12-01T21:05:09.000Z"
    assert RFC3339_MS_Z.match(stamp(moment))


def test_epoch_milliseconds_and_datetimes_stamp_alike_and_other_offsets_become_utc():
    moment = datetime(2026, 3, 12, 9, 14, 3, 512_000, tzinfo=UTC)
    assert stamp(int(moment.timestamp() * 1000)) == stamp(moment) == "2026-03-12T09:14:03.512Z"
    east = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert stamp(east) == stamp(moment)


def test_what_was_stored_before_reads_as_the_same_instant():
    ms = parse_iso("2026-11-29T12:00:00.000Z")
    for old in ("2026-11-29T12:00:00+00:00", "2026-11-29T12:00:00.000+00:00",
                "2026-11-29T12:00:00Z"):
        assert parse_iso(old) == ms
    assert parse_iso(stamp(ms)) == ms  # type: ignore[arg-type]
