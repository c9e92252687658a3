"""The monitor's state: incremental == batch (through JSON between steps, as the runs API
stores it), bounded, deterministic; reset is a reset point."""

from __future__ import annotations

import json
import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from loopsense.core.canonical import WHITE_SPACE, canonical_string
from loopsense.core.monitor.monitor import evaluate, inspect, new_state, observe, reset
from loopsense.core.monitor.steps import normal_text
from tests.unit.monitor_traces import answers, call, chunk, config, say, step

SENTENCE = "Streaming the same sentence again and again for the test. "


def mixed_trace(seed: int, n: int = 400) -> list[dict]:
    rng = random.Random(seed)
    kinds = [
        lambda: call(rng.choice("abc"), {"q": rng.randint(0, 2)}, {"r": rng.randint(0, 1)},
                     rng.choice(["positive", "negative", "neutral", None])),
        lambda: say(rng.choice(["same", "other", "third"])),
        lambda: chunk(SENTENCE[: rng.randint(5, 40)]),
        lambda: step("recall", text=rng.choice(["q1", "q2"])),
        lambda: step("condensation"),
        lambda: step("thought", text="t"),
        lambda: step("user_message", text="u") if rng.random() < 0.1 else step("checkpoint",
                                                                               metadata={"s": 1}),
        lambda: call("v", {"x": 1}, embedding=[rng.random() for _ in range(4)]),
    ]
    return [rng.choice(kinds)() for _ in range(n)]


def test_incremental_with_json_round_trips_equals_one_pass():
    cfg = config(objective=[1.0, 0.0, 0.0, 0.0], history_size=30)
    for seed in range(5):
        trace = mixed_trace(seed)
        direct = [a.signal() for a in answers(trace, cfg)]
        stored = [a.signal() for a in answers(trace, cfg, round_trip=True)]
        assert direct == stored
        assert any(s["findings"] for s in direct)  # the traces do exercise the rules


def test_the_state_is_json_and_bounded():
    cfg = config(history_size=10)
    state = new_state()
    sizes = []
    for i, s in enumerate(mixed_trace(1, 2_000)):
        state, _ = observe(state, s, cfg)
        assert json.loads(json.dumps(state)) == state
        if i % 100 == 99:
            sizes.append(len(json.dumps(state)))
    assert len(state["entries"]) <= 10 and max(sizes) < 8_000


def test_same_input_same_bytes():
    trace = mixed_trace(3)
    a = json.dumps([x.signal() for x in answers(trace)])
    b = json.dumps([x.signal() for x in answers(trace)])
    assert a == b


def test_reset_starts_the_signals_afresh():
    cfg = config()
    state = new_state()
    for s in [call("status", {"id": 1}, {"s": "p"})] * 7:
        state, answer = observe(state, s, cfg)
    assert answer.recommendation["action"] == "break"
    reset(state)
    assert evaluate(state, cfg).findings == [] and state["next"] == 7
    state, answer = observe(state, call("status", {"id": 1}, {"s": "p"}), cfg)
    assert answer.findings == [] and answer.index == 7


def test_inspect_answers_like_the_last_step_without_changing_the_state():
    cfg = config()
    state = new_state()
    for s in [call("status", {"id": 1}, {"s": "p"})] * 6:
        state, answer = observe(state, s, cfg)
    before = json.dumps(state)
    again = inspect(state, cfg)
    assert again.signal() == answer.signal() and json.dumps(state) == before
    assert again.signals() == {"repeated": True, "stagnant": False, "drift_score": -1,
                               "novelty_score": 0.0}
    assert inspect(new_state(), cfg).signal()["recommendation"] == {"action": "continue"}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from([*WHITE_SPACE, *"\x1c\x1f\u200b aZé."]), max_size=12))
def test_texts_collapse_white_space_runs_exactly(text: str) -> None:
    """normal_text skips its regex for printable text without double spaces: the same answer
    as the regex always (U+001C..U+001F and U+200B are not White_Space, and stay)."""
    assert normal_text(text) == re.sub(f"[{re.escape(WHITE_SPACE)}]+", " ",
                                       canonical_string(text))
