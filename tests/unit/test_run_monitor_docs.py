"""docs/skills/run_monitor.md shows a worked example per rule: each input and the skill's real
answer, verbatim. This test keeps them true; ``python -m tests.unit.test_run_monitor_docs``
prints the blocks to paste after a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopsense.skills.run_monitor import run

DOC = Path(__file__).resolve().parents[2] / "docs" / "skills" / "run_monitor.md"


def _call(action: str, args: Any, result: Any = None, outcome: str | None = None,
          **extra: Any) -> dict[str, Any]:
    out = {"kind": "tool_call", "action": action, "args": args}
    if result is not None:
        out["result"] = result
    if outcome is not None:
        out["outcome"] = outcome
    return {**out, **extra}


SENTENCE = "Let me check the export status one more time to be sure. "
EXAMPLES: dict[str, dict[str, Any]] = {
    "repeated_call": {"steps": [
        _call("export_status", {"job": "exp-91"}, {"state": "pending", "durationMs": 40 + i})
        for i in range(6)]},
    "cycle": {"steps": [_call(a, {"q": "refund policy"}, {"hits": 0}) for _ in range(3)
                        for a in ("search", "open_result")]},
    "error_streak": {"steps": [_call("build", {"target": "api"}, {"error": f"line {i}"},
                                     "error") for i in (12, 14, 15)]},
    "monologue": {"steps": [{"kind": "message", "text": t} for t in
                            ("I will now fix the test.", "I will now  fix the test.",
                             "i will now fix the test.")]},
    "content_loop": {"steps": [{"kind": "text_chunk", "text": SENTENCE}] * 10},
    "repeated_query": {"steps": [{"kind": "recall", "text": t} for t in
                                 ("refund policy", "Refund policy", " refund  policy",
                                  "REFUND POLICY")]},
    "stagnation": {"steps": [_call(a, {}, {"error": "denied"}, "negative")
                             for a in ("read_file", "list_dir", "search")],
                   "config": {"disabled_rules": ["error_streak"]}},
    "condensation_loop": {"steps": [s for i in range(3) for s in (
        {"kind": "condensation"}, _call("read_file", {"path": f"src/{i}.py"}))][:-1],
        "config": {"condensation_limit": 3}},
    "drift": {"steps": [_call(f"browse_{i}", {}, embedding=[0.1, 0.9, 0.2]) for i in range(5)],
              "config": {"objective_embedding": [1.0, 0.0, 0.0]}},
    "novelty": {"steps": [_call(f"lookup_{i}", {}, embedding=[1.0, 0.01 * (i % 2), 0.0])
                          for i in range(6)]},
    "polling (no critical)": {"steps": [_call("job_status", {"job": 7}, {"progress": 5 * i})
                                        for i in range(15)]},
    "exempt tool": {"steps": [_call("heartbeat", {}, {"ok": True})] * 8,
                    "config": {"tools": {"heartbeat": {"exempt": True}}}},
    "similar_call": {"steps": [_call("web_search", {"query": q},
                                     {"results": [{"url": "https://example.org/lyon"}]})
                               for q in ("population of Lyon 2020", "Lyon population in 2020",
                                         "2020 population of Lyon France",
                                         "Lyon France population 2020")]},
    "same_result": {"steps": [_call("search_orders", {"customer": c}, {"orders": [], "total": 0})
                              for c in ("ann", "ann smith", "a. smith", "smith")]},
    "state_revisit": {"steps": [s for i in range(3) for s in (
        _call("click", {"selector": f"#next-{i}"}, {"ok": True}),
        {"kind": "checkpoint", "metadata": {"url": "/checkout", "step": "payment"}})]},
    "continue, continue": {"steps": [
        {"kind": "user_message", "text": "Find where the retry limit is set"},
        *[s for _ in range(3) for s in (
            *[_call("grep", {"pattern": "retry_limit", "path": "src"}, {"matches": []})] * 2,
            {"kind": "user_message", "text": "continue"})]]},
}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def blocks() -> str:
    out = []
    for name, raw in EXAMPLES.items():
        out.append(f"### {name}\n\n```json\n{dumps(raw)}\n```\n\n```json\n{dumps(run(raw))}\n```\n")
    return "\n".join(out)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_doc_shows_the_real_answer(name):
    text = DOC.read_text(encoding="utf-8")
    raw = EXAMPLES[name]
    assert f"```json\n{dumps(raw)}\n```\n\n```json\n{dumps(run(raw))}\n```" in text


@pytest.mark.parametrize("name", [n for n in EXAMPLES if " " not in n])
def test_each_rule_example_raises_its_rule(name):
    assert name in {f["rule"] for f in run(EXAMPLES[name])["findings"]}


if __name__ == "__main__":
    print(blocks())
