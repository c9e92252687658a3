"""similar_call on the labelled quality set (tests/data/loops_quality.json) at default thresholds.

Precision and recall are counted two ways (docs/skills/loops.md, "Quality"):

- events: an llm_call is a predicted positive when it is in a fired similar_call finding, an
  expected positive when it is in an expected cluster; micro-averaged over all executions.
- findings: a fired finding is correct when it matches an expected cluster of its execution
  with Jaccard overlap >= 0.5 (each cluster matched once).

The targets were precision >= 0.95 and recall >= 0.90. Recall meets it; precision does not,
because of two executions whose messages are, lexically, a loop: a bulk job whose items differ
only by a number (a counter to the detector) and an iterative retrieval whose context grows by
one chunk per step. spec/loops.md lists both under "When it should not be used". The misses
are short paraphrases without shared context (a lexical vector cannot see that "Why was my card
declined?" and "Checkout keeps declining my card" ask the same) and one re-ask that adds a new
demand. The exact list of executions the detector gets wrong is pinned below, so that any
change of behaviour on the set shows up here and in the docs.
"""

from __future__ import annotations

import json
from itertools import chain
from pathlib import Path
from typing import Any

import pytest

from loopsense.skills.loops import run

DATA = Path(__file__).resolve().parents[1] / "data" / "loops_quality.json"

# Measured on this set (docs/skills/loops.md records them); the floors catch regressions.
EVENT_PRECISION, EVENT_RECALL = 0.938, 0.938
FINDING_PRECISION, FINDING_RECALL = 0.941, 0.941
KNOWN_WRONG = {
    "bulk-order-ids": "false positive: items differ only by a number (spec: run items apart)",
    "rag-accumulating": "false positive: each step repeats the growing context (spec: tune)",
    "paraphrase-short-chat": "missed: short paraphrases share too few character 4-grams",
    "paraphrase-short-support": "missed: short paraphrases share too few character 4-grams",
    "email-tone-drift": "partly missed: the 4th re-ask adds a new demand (distance 0.23)",
}
SPEC_LIMITATIONS = {"bulk-order-ids", "rag-accumulating"}


def load() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def predicted(execution: dict[str, Any]) -> list[list[int]]:
    out = run(execution["input"])
    return sorted(f["eventIndices"] for f in out["findings"] if f["sub"] == "similar_call")


def score(data: list[dict[str, Any]]) -> dict[str, Any]:
    tp = fp = fn = 0
    found_ok = found_all = expected_ok = expected_all = 0
    wrong = set()
    for execution in data:
        pred, expected = predicted(execution), execution["expected"]["similar_call"]
        p, e = set(chain.from_iterable(pred)), set(chain.from_iterable(expected))
        tp, fp, fn = tp + len(p & e), fp + len(p - e), fn + len(e - p)
        unmatched = [set(c) for c in expected]
        for cluster in map(set, pred):
            match = next((c for c in unmatched if len(c & cluster) / len(c | cluster) >= 0.5),
                         None)
            if match is not None:
                unmatched.remove(match)
                found_ok += 1
        found_all += len(pred)
        expected_ok += len(expected) - len(unmatched)
        expected_all += len(expected)
        if pred != sorted(expected):
            wrong.add(execution["id"])
    return {
        "event_precision": tp / (tp + fp), "event_recall": tp / (tp + fn),
        "finding_precision": found_ok / found_all, "finding_recall": expected_ok / expected_all,
        "wrong": wrong,
    }


@pytest.fixture(scope="module")
def scores() -> dict[str, Any]:
    return score(load())


def test_the_set_is_big_and_varied_enough():
    data = load()
    kinds = {ex["kind"] for ex in data}
    assert len(data) >= 40
    assert {"retry", "reformulation", "paraphrase", "negative"} <= kinds
    assert sum(1 for ex in data if ex["kind"] == "negative") >= 20
    assert len({ex["id"] for ex in data}) == len(data)


def test_recall_meets_the_target(scores):
    print(f"\nsimilar_call on {DATA.name}: events P={scores['event_precision']:.3f} "
          f"R={scores['event_recall']:.3f}; findings P={scores['finding_precision']:.3f} "
          f"R={scores['finding_recall']:.3f}")
    assert scores["event_recall"] >= 0.90
    assert scores["finding_recall"] >= 0.90


def test_precision_is_as_measured_and_below_target_only_for_the_spec_limitations(scores):
    assert scores["event_precision"] >= EVENT_PRECISION - 0.0005
    assert scores["finding_precision"] >= FINDING_PRECISION - 0.0005
    without = score([ex for ex in load() if ex["id"] not in SPEC_LIMITATIONS])
    assert without["event_precision"] >= 0.95
    assert without["finding_precision"] >= 0.95


def test_the_executions_it_gets_wrong_are_the_documented_ones(scores):
    assert scores["wrong"] == set(KNOWN_WRONG)
    assert scores["event_recall"] >= EVENT_RECALL - 0.0005
    assert scores["finding_recall"] >= FINDING_RECALL - 0.0005
