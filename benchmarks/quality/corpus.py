"""The quality corpus's generator (benchmarks/quality/LABELS.md: the labelling rule).

    .venv/bin/python benchmarks/quality/corpus.py          # writes benchmarks/quality/corpus.json

Deterministic: one seed, the same file every time (a test checks it). Each trace is
``{"id", "shape", "label", "steps"}``, its steps as POST /v1/runs/{id}/steps takes them (each
with its ``agentId``), the label its shape's, by construction.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEED = 20_261_202
PER_SHAPE = 22  # 14 shapes x 22 = 308 traces
OUT = Path(__file__).with_name("corpus.json")
Step = dict[str, Any]

CITIES = ["lyon", "porto", "graz", "leeds", "turku", "gdansk", "bilbao", "malmo", "cork"]
TOPICS = ["population", "rainfall", "tram network", "university", "harbour", "museum"]
FILES = ["src/app.py", "src/db.py", "src/api/routes.py", "tests/test_api.py", "README.md",
         "pyproject.toml", "src/models/user.py", "src/utils/dates.py", "docs/setup.md"]
STOP = ["of", "in", "the", "for"]


def call(agent: str, tool: str, args: dict[str, Any], result: Any,
         outcome: str = "positive") -> Step:
    return {"agentId": agent, "kind": "tool_call", "action": tool, "args": args,
            "result": result, "outcome": outcome}


def say(agent: str, text: str) -> Step:
    return {"agentId": agent, "kind": "message", "text": text}


def user(agent: str, text: str) -> Step:
    return {"agentId": agent, "kind": "user_message", "text": text}


def filler(rng: random.Random, agent: str, n: int) -> list[Step]:
    """Healthy steps of a coding or research agent: distinct reads, notes, thoughts."""
    out: list[Step] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            path = f"{rng.choice(FILES)}"
            line = rng.randrange(1, 400)
            out.append(call(agent, "read_file", {"path": path, "start": line},
                            {"lines": [f"line {line + i}: ..." for i in range(3)],
                             "durationMs": rng.randrange(5, 90)}))
        elif r < 0.75:
            out.append(say(agent, f"Noted step {rng.randrange(10_000)}."))
        else:
            out.append({"agentId": agent, "kind": "thought", "text": "planning the next step"})
    return out


def framed(rng: random.Random, agent: str, body: list[Step]) -> list[Step]:
    return [user(agent, "Please look into this task."), *filler(rng, agent, rng.randrange(2, 6)),
            *body, *filler(rng, agent, rng.randrange(0, 4))]


# Looping shapes ------------------------------------------------------------------------------

def exact_repeat(rng: random.Random) -> list[Step]:
    path = rng.choice(FILES)
    pattern = rng.choice(["TODO", "def main", "import os", "class User"])
    n = rng.randrange(6, 12)
    return framed(rng, "a", [call("a", "grep", {"pattern": pattern, "path": path},
                                  {"matches": [], "durationMs": rng.randrange(3, 40)},
                                  "neutral") if rng.random() < 0.5 else
                             call("a", "grep", {"pattern": pattern, "path": path},
                                  {"matches": [f"{path}:12"], "durationMs": 7})
                             for _ in range(1)] * n)


def cycle(rng: random.Random) -> list[Step]:
    path = rng.choice(FILES)
    block = [call("a", "read_file", {"path": path}, {"text": "def f():\n    return 1"}),
             call("a", "run_tests", {"target": "tests/"}, {"failed": 2, "passed": 40},
                  "negative")]
    if rng.random() < 0.5:
        block.append(call("a", "list_dir", {"path": "src"}, {"entries": ["app.py", "db.py"]}))
    body: list[Step] = []
    for _ in range(rng.randrange(3, 6)):
        body.extend(dict(s) for s in block)
    return framed(rng, "a", body)


def near_duplicate(rng: random.Random) -> list[Step]:
    city, topic, year = rng.choice(CITIES), rng.choice(TOPICS), rng.choice(["2019", "2020"])
    words = [city, topic, year]
    answer = {"results": [{"title": f"{city} {topic}", "snippet": "no figure for that year"}]}
    body = []
    for _ in range(rng.randrange(6, 10)):
        rng.shuffle(words)
        query = " ".join(words[:1] + ([rng.choice(STOP)] if rng.random() < 0.5 else [])
                         + words[1:])
        body.append(call("a", "web_search", {"query": query}, answer))
    return framed(rng, "a", body)


def same_empty_answer(rng: random.Random) -> list[Step]:
    tool = rng.choice(["search_docs", "search", "query_kb"])
    empty = rng.choice([{"results": []}, {"hits": 0, "items": []}, [], {"matches": None}])
    body = [call("a", tool, {"query": f"{rng.choice(TOPICS)} {rng.choice(CITIES)} {i}"},
                 empty, "neutral") for i in range(rng.randrange(7, 12))]
    return framed(rng, "a", body)


def continue_loop(rng: random.Random) -> list[Step]:
    pattern = rng.choice(["FIXME", "deprecated", "raise ValueError"])
    grep = call("a", "grep", {"pattern": pattern, "path": "src"}, {"matches": ["src/db.py:88"]})
    body: list[Step] = []
    for _ in range(rng.randrange(3, 6)):
        body.extend(dict(grep) for _ in range(rng.randrange(2, 4)))
        body.append(say("a", "I will keep looking."))
        body.append(user("a", "continue"))
    return framed(rng, "a", body)


def across_agents(rng: random.Random) -> list[Step]:
    path = rng.choice(FILES)
    fetch = {"path": path}
    content = {"text": f"contents of {path}", "size": rng.randrange(100, 9000)}
    agents = ["manager", *[f"worker-{i}" for i in range(rng.randrange(2, 4))]]
    out: list[Step] = []
    for agent in agents:
        out.extend(filler(rng, agent, rng.randrange(1, 3)))
        out.extend(call(agent, "fetch_file", fetch, content)
                   for _ in range(rng.randrange(1, 3)))
    return out


def state_revisit(rng: random.Random) -> list[Step]:
    page = {"url": f"https://shop.example/cart/{rng.randrange(99)}", "title": "Cart",
            "items": rng.randrange(1, 5)}
    actions = ["click", "scroll", "type", "hover", "press_key"]
    body: list[Step] = []
    for i in range(rng.randrange(6, 10)):
        act = rng.choice(actions)
        body.append(call("a", act, {"target": f"#el-{i}", "value": f"v{i}"}, {"ok": True,
                                                                              "step": i}))
        body.append({"agentId": "a", "kind": "checkpoint", "metadata": page})
    return framed(rng, "a", body)


# Healthy look-alikes -------------------------------------------------------------------------

def polling(rng: random.Random) -> list[Step]:
    job = rng.randrange(1000)
    body = [call("a", "job_status", {"job": job}, {"state": "queued"})]
    done = 0
    for _ in range(rng.randrange(6, 14)):  # stops once done: polling on would be waste
        done = min(100, done + rng.randrange(5, 30))
        body.append(call("a", "job_status", {"job": job},
                         {"state": "running" if done < 100 else "done", "progress": done}))
        if done == 100:
            break
    return framed(rng, "a", body)


def batch_job(rng: random.Random) -> list[Step]:
    ids = rng.sample(range(10_000), rng.randrange(8, 20))
    return framed(rng, "a", [call("a", "process_invoice", {"id": i},
                                  {"status": "ok", "id": i}) for i in ids])


def pagination(rng: random.Random) -> list[Step]:
    table = rng.choice(["orders", "users", "tickets"])
    body = [call("a", "list_rows", {"table": table, "page": p},
                 {"rows": [f"{table}-{p * 20 + i}" for i in range(3)], "page": p})
            for p in range(1, rng.randrange(6, 14))]
    return framed(rng, "a", body)


def test_fix_test(rng: random.Random) -> list[Step]:
    failing = rng.randrange(3, 7)
    body: list[Step] = []
    while failing >= 0:
        body.append(call("a", "run_tests", {"target": "tests/"},
                         {"failed": failing, "passed": 40 - failing},
                         "negative" if failing else "positive"))
        if failing:
            body.append(call("a", "edit_file", {"path": rng.choice(FILES),
                                                "patch": f"fix {failing}"}, {"applied": True,
                                                                              "hunk": failing}))
        failing -= 1
    return framed(rng, "a", body)


def progressive_retrieval(rng: random.Random) -> list[Step]:
    city, topic = rng.choice(CITIES), rng.choice(TOPICS)
    terms = [city, topic, "statistics", "official", "2020", "census office", "table"]
    body = [call("a", "web_search", {"query": " ".join(terms[:k])},
                 {"results": [{"title": f"{' '.join(terms[:k])} result {j}"} for j in range(2)]})
            for k in range(1, rng.randrange(5, len(terms) + 1))]
    return framed(rng, "a", body)


def hub_browsing(rng: random.Random) -> list[Step]:
    hub = {"url": "https://shop.example/search?q=lamp", "title": "Results"}
    body: list[Step] = []
    for i in range(rng.randrange(4, 8)):
        body.append(call("a", "click", {"target": f"#result-{i}"}, {"ok": True, "step": i}))
        body.append({"agentId": "a", "kind": "checkpoint",
                     "metadata": {"url": f"https://shop.example/item/{i}", "title": f"Lamp {i}"}})
        body.append(call("a", "go_back", {"step": i}, {"ok": True, "step": i}))
        body.append({"agentId": "a", "kind": "checkpoint", "metadata": hub})
    return framed(rng, "a", body)


def team_split(rng: random.Random) -> list[Step]:
    files = rng.sample(FILES, 6)
    agents = ["manager", "worker-0", "worker-1"]
    out: list[Step] = []
    for n, agent in enumerate(agents):
        for path in files[n * 2:n * 2 + 2]:
            out.append(call(agent, "fetch_file", {"path": path},
                            {"text": f"contents of {path}", "size": len(path) * 31}))
        out.extend(filler(rng, agent, 2))
    return out


LOOPING: dict[str, Callable[[random.Random], list[Step]]] = {
    "exact_repeat": exact_repeat, "cycle": cycle, "near_duplicate": near_duplicate,
    "same_empty_answer": same_empty_answer, "continue_loop": continue_loop,
    "across_agents": across_agents, "state_revisit": state_revisit}
HEALTHY: dict[str, Callable[[random.Random], list[Step]]] = {
    "polling": polling, "batch_job": batch_job, "pagination": pagination,
    "test_fix_test": test_fix_test, "progressive_retrieval": progressive_retrieval,
    "hub_browsing": hub_browsing, "team_split": team_split}


def corpus() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    traces = []
    for label, shapes in (("looping", LOOPING), ("healthy", HEALTHY)):
        for shape, make in shapes.items():
            for n in range(PER_SHAPE):
                traces.append({"id": f"{shape}-{n:02d}", "shape": shape, "label": label,
                               "steps": make(rng)})
    return traces


def text() -> str:
    return json.dumps({"seed": SEED, "traces": corpus()}, sort_keys=True, indent=None,
                      separators=(",", ":")) + "\n"


if __name__ == "__main__":
    OUT.write_text(text())
    print(f"wrote {OUT.name}: {len(corpus())} traces")
    sys.exit(0)
