"""Benchmark: what one call of each route costs on AWS, counted on its hot path.

Run from the repository root (deterministic counts; the durations vary with the machine):

    .venv/bin/python benchmarks/bench_route_costs.py

The local gateway (template.yaml's routes, the functions' own handlers, the authorizer first)
in this process, on the embedded DynamoDB, its client wrapped to count every request and to ask
each for ReturnConsumedCapacity=TOTAL (the engine counts it by DynamoDB's rules:
loopsense_local/dynamodb/capacity.py). Each route is called once to warm it (a run, an agent,
a memory entry exist), then once more, counted: the DynamoDB requests by operation and by
function (the authorizer's, the route's), the read and write units, the Lambda invocations
(the authorizer, the route's function, and the skill's function for execute) and the route
handler's duration here.

It prints the table docs/costs.md is made of, and the cost per million calls at the prices
stated there (PRICES below, with their date).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

# us-east-1 list prices, on-demand, read 2026-12-02 (DynamoDB's since its 2024-11-01 reduction).
PRICES = {
    "dynamodb_write_unit": 0.625 / 1e6, "dynamodb_read_unit": 0.125 / 1e6,
    "lambda_request": 0.20 / 1e6, "lambda_gb_s": 0.0000166667,  # x86_64, template.yaml's
    "http_api_request": 1.00 / 1e6,
}
STORE_S = 0.005  # what one DynamoDB request is taken to last, from a Lambda in its region
MEMORY_GB = {"authorizer": 0.5, "function": 0.5, "skill": 1769 / 1024}  # template MemorySize
LOOP = {"events": [{"action": a} for a in "abcabcabcd"]}
STEPS = [{"agentId": "ari", "kind": "tool_call", "action": "export_status", "args": {"job": 42},
          "result": "pending", "outcome": "neutral"}] * 5
LLM = [{"type": "llm_call", "model": "m", "user_message": "find a hotel in Paris"},
       {"type": "tool_call", "name": "search"}]
RUN = "/v1/runs/costs"

# (label, method, path, query, body, Idempotency-Key)
ROUTES: list[tuple[str, str, str, str, Any, str | None]] = [
    ("execute agent.loop_detect", "POST", "/v1/execute", "",
     {"skillKey": "agent.loop_detect", "input": LOOP}, None),
    ("execute, with an Idempotency-Key", "POST", "/v1/execute", "",
     {"skillKey": "agent.loop_detect", "input": LOOP}, "k"),
    ("execute, replayed (same key)", "POST", "/v1/execute", "",
     {"skillKey": "agent.loop_detect", "input": LOOP}, "k"),
    ("POST runs/{id}/steps (5 steps)", "POST", f"{RUN}/steps", "", {"steps": STEPS}, None),
    ("GET runs/{id}/signal", "GET", f"{RUN}/signal", "agentId=ari", None, None),
    ("PUT runs/{id}/memory/{key}", "PUT", f"{RUN}/memory/status", "", {"v": "pending"}, None),
    ("GET runs/{id}/memory/{key}", "GET", f"{RUN}/memory/status", "", None, None),
    ("POST runs/{id}/lessons", "POST", f"{RUN}/lessons", "", {"text": "retry the export"},
     None),
    ("POST runs/{id}/context", "POST", f"{RUN}/context", "",
     {"query": "export", "max_token_budget": 500}, None),
    ("POST runs/{id}/circuit-break", "POST", f"{RUN}/circuit-break", "",
     {"reason": "costs", "agentId": "ari"}, None),
    ("GET runs/{id}", "GET", RUN, "", None, None),
    ("GET runs", "GET", "/v1/runs", "", None, None),
    ("POST executions/{id}/events (2 events)", "POST", "/v1/executions/costs/events", "",
     {"events": LLM}, None),
    ("GET usage", "GET", "/v1/usage", "", None, None),
    ("GET detector-thresholds", "GET", "/v1/detector-thresholds", "", None, None),
    ("GET playbooks/{name}", "GET", "/v1/playbooks/identical_call", "", None, None),
]


METERED = ("get_item", "put_item", "update_item", "delete_item", "query", "scan",
           "batch_get_item", "batch_write_item", "transact_write_items")


class Counting:
    """The in-process client, counting requests and the units each consumed, by phase."""

    def __init__(self, client: Any) -> None:
        self.client, self.phase = client, "function"
        self.calls: Counter[tuple[str, str]] = Counter()
        self.units = Counter[str]()

    def reset(self) -> None:
        self.calls.clear()
        self.units.clear()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            self.calls[(self.phase, name)] += 1
            metered = name in METERED
            answer = method(**kwargs, **({"ReturnConsumedCapacity": "TOTAL"} if metered else {}))
            found = answer.get("ConsumedCapacity") or []
            for entry in found if isinstance(found, list) else [found]:
                kind = "write" if name in ("put_item", "update_item", "delete_item",
                                           "transact_write_items", "batch_write_item") else "read"
                self.units[kind] += entry["CapacityUnits"]
            return answer

        return call


def main() -> None:
    from loopsense.observability import logger
    from loopsense_local import serve
    from loopsense_local.embedded import EmbeddedDynamoDB

    logger.setLevel("WARNING")
    embedded = EmbeddedDynamoDB("127.0.0.1", 0).start()
    counting = Counting(embedded.client())
    from loopsense.store.dynamo import serve_in_process

    os.environ["LOOPSENSE_SKILL_INVOKER"] = "inprocess"
    serve._configure_environment(serve.ServeOptions(), embedded.endpoint)  # noqa: SLF001
    serve_in_process(embedded.endpoint, counting)  # every client of this process counts
    serve.seed(serve.ServeOptions())  # the dev tenant and its key
    from loopsense_local.gateway import Gateway

    gateway = Gateway()
    authorize = gateway.authorizer

    def counted_authorizer(event: Any, context: Any) -> Any:
        counting.phase = "authorizer"
        try:
            return authorize(event, context)
        finally:
            counting.phase = "function"

    gateway.authorizer = counted_authorizer
    rows = []
    for label, method, path, query, body, key in ROUTES:
        headers = {"authorization": f"Bearer {serve.DEV_API_KEY}",
                   "content-type": "application/json"}
        if key:
            headers["idempotency-key"] = key
        data = json.dumps(body).encode() if body is not None else b""
        if not label.startswith("execute, replayed"):
            gateway.handle(method, path, query, headers, data)  # warm: the run and items exist
            if key:
                headers["idempotency-key"] = key + "-counted"
        elif key:
            headers["idempotency-key"] = key + "-counted"
        before = snapshot(embedded.client())
        counting.reset()
        durations = []
        started = time.perf_counter()
        answer = gateway.handle(method, path, query, headers, data)
        durations.append(time.perf_counter() - started)
        assert answer["statusCode"] < 300, (label, answer["statusCode"], answer.get("body"))
        authorizer = sum(n for (phase, _), n in counting.calls.items() if phase == "authorizer")
        function = sum(n for (phase, _), n in counting.calls.items() if phase == "function")
        ops = Counter[str]()
        for (_, op), n in counting.calls.items():
            ops[op] += n
        lambdas = 2 + (1 if path == "/v1/execute" and "replayed" not in label else 0)
        after = snapshot(embedded.client())
        added = {k: v for k, v in after.items() if k not in before}
        kept = sorted({k[0] for k, expires in added.items() if not expires})
        rows.append((label, authorizer, function, dict(sorted(ops.items())),
                     counting.units["read"], counting.units["write"], lambdas,
                     statistics.median(durations), len(added),
                     sum(1 for e in added.values() if e), kept))
    embedded.stop()
    print("route | DynamoDB requests (authorizer + function) | by operation | RRU | WRU | "
          "Lambda invocations | handler ms here | $ per million calls: DynamoDB + Lambda + "
          "HTTP API = total | items added (with TTL) | kept without TTL in")
    for label, a, f, ops, rru, wru, lambdas, seconds, new, expiring, kept in rows:
        dynamo = 1e6 * (rru * PRICES["dynamodb_read_unit"] + wru * PRICES["dynamodb_write_unit"])
        lam = 1e6 * (lambdas * PRICES["lambda_request"] + duration_cost(seconds, a, f, lambdas))
        api = 1e6 * PRICES["http_api_request"]
        print(f"{label} | {a} + {f} = {a + f} | {ops} | {rru:g} | {wru:g} | {lambdas} | "
              f"{seconds * 1e3:.1f} | {dynamo:.2f} + {lam:.2f} + {api:.2f} = "
              f"{dynamo + lam + api:.2f} | {new} ({expiring}) | {', '.join(kept) or '-'}")


def snapshot(client: Any) -> dict[tuple[str, str], bool]:
    """Every item of every table: (table, key) -> whether it carries an expiry (TTL)."""
    found = {}
    for table in client.list_tables()["TableNames"]:
        keys = [k["AttributeName"] for k in
                client.describe_table(TableName=table)["Table"]["KeySchema"]]
        ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        attribute = ttl.get("AttributeName")
        page: dict[str, Any] = {"TableName": table}
        while True:
            answer = client.scan(**page)
            for item in answer.get("Items", []):
                key = json.dumps([item[k] for k in keys], sort_keys=True)
                found[(table, key)] = attribute is not None and attribute in item
            if "LastEvaluatedKey" not in answer:
                break
            page["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    return found


def duration_cost(seconds: float, authorizer: int, function: int, lambdas: int) -> float:
    """The functions' billed GB-seconds (per ms, at least 1 ms): each DynamoDB request waited
    for STORE_S (an estimate: DynamoDB's single-digit milliseconds), plus the handler's time
    measured here for the route's function; 1 ms of compute for the authorizer; the skill's
    function (execute) the handler's time (its compute is most of it)."""
    cost = (0.001 + authorizer * STORE_S) * MEMORY_GB["authorizer"]
    cost += (seconds + function * STORE_S) * MEMORY_GB["function"]
    if lambdas == 3:
        cost += max(0.001, seconds) * MEMORY_GB["skill"]
    return cost * PRICES["lambda_gb_s"]


if __name__ == "__main__":
    main()
