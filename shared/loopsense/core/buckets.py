"""The size buckets of agent.loops' signatures (spec/loops.md): largest lower bound that fits."""

from __future__ import annotations

# (lower bound, label), largest first.
STEP_BUCKETS: tuple[tuple[int, str], ...] = (
    (5_000, "5000+"), (500, "500+"), (100, "100+"), (50, "50+"), (10, "10+"),
)
DURATION_BUCKETS_MS: tuple[tuple[int, str], ...] = (
    (3_600_000, "1h+"), (600_000, "10m+"), (60_000, "60s+"), (10_000, "10s+"), (1_000, "1s+"),
)


def step_bucket(count: int) -> str:
    """``10+`` for 10..49 ... ``5000+``; any count under 10 (a lowered threshold) is ``2+``."""
    for low, label in STEP_BUCKETS:
        if count >= low:
            return label
    return "2+"


def step_buckets_crossed(before: int, after: int, threshold: int) -> list[str]:
    """The step_count buckets an execution enters when its event count goes from ``before`` to
    ``after`` (streaming fires each bucket once, as its boundary is crossed), smallest first:
    the threshold's own bucket when the count reaches the threshold, then every bucket whose
    lower bound, above the threshold, is reached."""
    labels = [step_bucket(threshold)] if before < threshold <= after else []
    for low, label in reversed(STEP_BUCKETS):
        if max(before, threshold) < low <= after:
            labels.append(label)
    return labels


def duration_bucket(duration_ms: int) -> str:
    """``1s+`` ... ``1h+``. time_budget_ms is at least 1,000, so a firing duration is >= 1 s;
    a shorter one (never reported by the skill) is also ``1s+``."""
    for low, label in DURATION_BUCKETS_MS:
        if duration_ms >= low:
            return label
    return "1s+"
