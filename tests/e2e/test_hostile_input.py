"""Issue 25's defects, each over HTTP against `loopsense serve` started from the runtime-only
install (.venv-runtime, as `./scripts/serve` installs it: no dev extras): Unicode digits in
query numbers, lone surrogates and non-finite numbers in bodies, OTLP's error paths, tool names
in validation errors, percent-encoded ids. Every refusal is the envelope, never retryable,
never quoting the caller's values."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsense_local import operator as ops
from tests.e2e.server import RUNTIME_BIN, Operator, Response, Server, start_server

MARK = "customer_4711_export"  # submitted content: must never come back


@pytest.fixture(scope="module")
def runtime() -> Iterator[Server]:
    """The runtime-only server; its dev key's tenant on a plan without a practical rate limit
    (these tests send a few hundred requests a second)."""
    running = start_server(bin_dir=RUNTIME_BIN)
    operator = Operator(running.store())
    operator.set_plan("hostile-input", credits=1_000_000, rps=100_000)
    ops.set_tenant_plan(operator.accounts, "dev", "hostile-input")
    yield running
    running.stop()


def refused(answer: Response, status: int, code: str, path: str | None = None) -> dict[str, Any]:
    """The answer is the envelope with ``code``, not retryable, naming ``path``; no marker."""
    assert answer.status == status, answer.body
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert error["retryable"] is False and "retry-after" not in answer.lower_headers()
    if path is not None:
        assert error["details"][0]["path"] == path, error
    assert MARK.encode() not in answer.body
    return dict(error)


def get(server: Server, path: str) -> Response:
    return server.request(b"", method="GET", path=path)


def test_the_runtime_install_has_no_dev_extras() -> None:
    """What makes the other tests here meaningful: the server's venv lacks the dev tools."""
    done = subprocess.run([str(RUNTIME_BIN / "python"), "-c", "import pytest"],
                          capture_output=True, timeout=60, check=False)
    assert done.returncode != 0


# ---- 4. OTLP's error paths on a served install -----------------------------------------------

def otlp(server: Server, body: bytes, content_type: str | None, key: bool = True) -> Response:
    headers = {"Content-Type": content_type} if content_type else {}
    answer = server.request(body, path="/v1/traces", headers=headers,
                            key=None if not key else "ls_local_development_key_0001")
    return answer


def status_of(answer: Response) -> Status:
    status = Status()
    status.ParseFromString(answer.body)
    return status


def test_otlp_error_paths_answer_in_otlp_shape(runtime: Server) -> None:
    # urllib sends its own form Content-Type when none is given: an empty value stands for none.
    cases = [
        (otlp(runtime, b"\x0a\x02", ""), 400, 3),  # no Content-Type
        (otlp(runtime, b"\xff\xff\xff\xff", "application/x-protobuf"), 400, 3),  # undecodable
        (otlp(runtime, ExportTraceServiceRequest().SerializeToString(),
              "application/x-protobuf", key=False), 401, 16),  # no key
        (otlp(runtime, b"{", "application/json"), 400, 3),
    ]
    for answer, http_status, rpc_code in cases:
        assert answer.status == http_status, answer.body
        if answer.lower_headers()["content-type"].startswith("application/json"):
            assert json.loads(answer.body)["code"] == rpc_code
        else:
            assert status_of(answer).code == rpc_code
    assert "ModuleNotFoundError" not in runtime.printed()
    assert "crashed" not in runtime.printed()


# ---- 1. numbers in the query string: ASCII digits only ----------------------------------------

UNICODE_DIGITS = ["%C2%B2", "%EF%BC%95", "%D9%A5", "1%C2%B9", "%E0%A5%A7"]  # ² ５ ٥ 1¹ १


@pytest.fixture(scope="module")
def snapshot_id(runtime: Server) -> str:
    answer = runtime.request({"reason": "fuzz"}, path="/v1/runs/digits/circuit-break")
    assert answer.status == 200, answer.body
    return str(answer.json()["snapshotId"])


@pytest.mark.parametrize("digits", UNICODE_DIGITS)
def test_a_unicode_digit_is_not_a_number(runtime: Server, snapshot_id: str, digits: str) -> None:
    for path, name in [("/v1/runs/digits/memory?limit=", "limit"),
                       ("/v1/runs/digits/lessons?limit=", "limit"),
                       ("/v1/runs/digits/events?limit=", "limit"),
                       ("/v1/runs/digits/events?after=", "after"),
                       (f"/v1/runs/digits/snapshots/{snapshot_id}?limit=", "limit"),
                       ("/v1/failure-groups?limit=", "limit")]:
        refused(get(runtime, path + digits), 400, "VALIDATION_ERROR", name)
        assert get(runtime, path + "5").status == 200, path


def test_after_is_at_most_ten_ascii_digits(runtime: Server) -> None:
    assert get(runtime, "/v1/runs/digits/events?after=9999999999").status == 200
    error = refused(get(runtime, "/v1/runs/digits/events?after=12345678901"), 400,
                    "VALIDATION_ERROR", "after")
    assert "10 digits" in error["message"]


# ---- 2 and 3. one JSON policy: finite numbers, Unicode text -----------------------------------

SURROGATE = b'"\\ud800' + MARK.encode() + b'"'  # valid JSON, not Unicode text
RAW_SURROGATE = b'"\xed\xa0\x80' + MARK.encode() + b'"'  # the same as (CESU) bytes
BIG = b"1e400"  # valid JSON, not a finite number


def events_of(value: bytes, field: str = "type") -> bytes:
    return b'{"events": [{"type": "tool_call", "' + field.encode() + b'": ' + value + b"}]}"


@pytest.mark.parametrize("body", [
    events_of(SURROGATE), events_of(RAW_SURROGATE), events_of(SURROGATE, "model"),
    events_of(SURROGATE, "user_message"), events_of(b'{"k": ' + SURROGATE + b"}", "metadata"),
    events_of(b'{"\\udc00": 1}', "metadata"), events_of(BIG, "x"), events_of(b"-1e400", "x"),
    events_of(b"NaN", "x")])
def test_a_telemetry_batch_of_non_unicode_or_non_finite_values_is_invalid(
        runtime: Server, body: bytes) -> None:
    answer = runtime.request(body, path="/v1/executions/fuzz-1/events")
    refused(answer, 400, "EXECUTION_EVENTS_INVALID", "body")


@pytest.mark.parametrize("body", [BIG, SURROGATE, RAW_SURROGATE, b'{"a": [' + BIG + b"]}"])
def test_a_memory_value_that_can_never_be_stored_is_a_validation_error(
        runtime: Server, body: bytes) -> None:
    answer = runtime.request(body, method="PUT", path="/v1/runs/r1/memory/k")
    refused(answer, 400, "VALIDATION_ERROR", "value")
    refused(get(runtime, "/v1/runs/r1/memory/k"), 404, "RUN_MEMORY_NOT_FOUND")


def test_an_escaped_surrogate_pair_is_text(runtime: Server) -> None:
    answer = runtime.request(b'"\\ud83d\\ude00"', method="PUT", path="/v1/runs/r1/memory/emoji")
    assert answer.status == 200, answer.body
    assert get(runtime, "/v1/runs/r1/memory/emoji").json()["value"] == "\U0001f600"


@pytest.mark.parametrize(("path", "template"), [
    ("/v1/runs/u1/steps", b'{"agentId": "a", "kind": "llm_call", "text": %s}'),
    ("/v1/runs/u1/steps", b'{"agentId": "a", "kind": "llm_call", "model": %s}'),
    ("/v1/runs/u1/lessons", b'{"text": %s}'),
    ("/v1/runs/u1/circuit-break", b'{"reason": %s}'),
    ("/v1/runs/u1/context", b'{"query": %s}'),
    ("/v1/runs/u1/agents", b'{"agentId": "a", "role": %s}'),
    ("/v1/execute", b'{"skillKey": "agent.loop_detect", "input": {"events": [{"action": %s}, '
                    b'{"action": "a"}]}}'),
])
def test_every_text_the_api_takes_follows_one_unicode_policy(
        runtime: Server, path: str, template: bytes) -> None:
    error = refused(runtime.request(template % SURROGATE, path=path), 400, "VALIDATION_ERROR",
                    "body")
    assert error["details"][0]["issue"] == "contains a string that is not valid Unicode"
    ok = runtime.request(template % b'"fine \\ud83d\\ude00"', path=path)
    assert ok.status == 200, ok.body


# ---- 5. tool names are the caller's: never echoed ---------------------------------------------

@pytest.mark.parametrize(("policy", "path"), [
    ({"exempt": 3}, "config.tools.<tool>.exempt"),
    ({"poll": "yes"}, "config.tools.<tool>.poll"),
    ({"unknown": True}, "config.tools.<tool>"),
    ({"ignore_keys": [3]}, "config.tools.<tool>.ignore_keys.0"),
    ({"repeat_warn": 1}, "config.tools.<tool>.repeat_warn"),
    (7, "config.tools.<tool>"),
])
def test_tool_policy_errors_name_the_tool_by_placeholder(
        runtime: Server, policy: Any, path: str) -> None:
    config = {"tools": {MARK: policy}}
    answer = runtime.request(config, method="PUT", path="/v1/runs/r1/config")
    refused(answer, 400, "VALIDATION_ERROR", path)
    steps = [{"kind": "tool_call", "action": "a"}] * 2
    answer = runtime.execute("agent.run_monitor", {"steps": steps, "config": config})
    refused(answer, 400, "VALIDATION_ERROR", f"input.{path}")


# ---- 6. percent-encoded ids are the ids ------------------------------------------------------

def test_percent_encoded_path_ids_are_decoded_once(runtime: Server) -> None:
    events = {"events": [{"type": "step"}]}
    assert runtime.request(events, path="/v1/executions/run%3A42/events").status == 200
    again = runtime.request(events, path="/v1/executions/run:42/events")
    assert again.json()["seq"] == 1  # the same execution, raw or encoded
    assert runtime.request({"value": 1}, method="PUT",
                           path="/v1/runs/run%3A1/memory/plan%3Astep").status == 200
    memory = get(runtime, "/v1/runs/run:1/memory").json()
    assert (memory["runId"], memory["entries"]) == ("run:1", {"plan:step": {"value": 1}})
    # decoded once: %253A is the id "run%3A1", which the id pattern refuses
    refused(get(runtime, "/v1/runs/run%253A1/memory"), 400, "VALIDATION_ERROR", "runId")


# ---- the bounded fuzz: every route x each kind of hostile value -------------------------------

FUZZ = "FUZZMARK7Q"  # in every hostile value; never in an answer or a log line
SNAP = "1796165309695-233d281b"
PARAMS = {"runId": "fz-run", "key": "fz-key", "snapshotId": SNAP, "executionId": "fz-exec",
          "signature": "loops%2Fidentical_call_00000000", "name": "identical_call",
          "proxy": "index.html"}
# A valid body of each route taking one; each of its leaves is replaced by the hostile values.
BODIES: dict[str, Any] = {
    "POST /v1/execute": {"skillKey": "agent.loop_detect",
                         "input": {"events": [{"action": "a"}, {"action": "b"}]}},
    "POST /v1/executions/{executionId}/events": {"events": [{"type": "tool_call", "name": "x"}]},
    "POST /v1/executions/{executionId}/end": {"durationMs": 5},
    "POST /v1/runs/{runId}/agents": {"agentId": "a", "role": "r"},
    "POST /v1/runs/{runId}/steps": {"agentId": "a", "kind": "tool_call", "action": "x",
                                    "text": "t"},
    "POST /v1/runs/{runId}/reset": {"agentId": "a"},
    "PUT /v1/runs/{runId}/config": {"repeat_warn": 5, "tools": {"t": {"poll": True}}},
    "PUT /v1/runs/{runId}/memory/{key}": {"v": "x"},
    "POST /v1/runs/{runId}/lessons": {"text": "t", "tags": ["x"]},
    "POST /v1/runs/{runId}/circuit-break": {"reason": "r", "agentId": "a"},
    "POST /v1/runs/{runId}/snapshots/{snapshotId}/restore": {},
    "POST /v1/runs/{runId}/context": {"query": "q", "max_token_budget": 100},
    "PUT /v1/severity-routing": {"loops": "warning"},
    "PUT /v1/telemetry-settings": {"telemetry_retention_days": 7},
    "PUT /v1/detector-thresholds": {"revisit_threshold": 3},
    "PUT /v1/me/time-budget-config": {"max_time_budget_ms": 60_000},
    "POST /v1/traces": {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "s"}]}]}]},
    "POST /v1/logs": {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {}}]}]}]},
}
S = '"\\ud800' + FUZZ + '"'  # JSON text of a lone surrogate
LEAVES = [  # JSON texts put in place of a leaf
    S, "1e400", "-1e400", "NaN", '{"' + FUZZ + '": 1e400}', '{"\\udfff' + FUZZ + '": 1}',
    "[" * 3000 + '"' + FUZZ + '"' + "]" * 3000,  # deeper than any parser here takes
    '"' + FUZZ + "x" * 70_000 + '"',  # longer than any text field takes
    "1" * 5000,  # an integer too long to read
]
IDS = [FUZZ + "%2Fx", FUZZ + "%00", "%ED%A0%80" + FUZZ, FUZZ + "%252F", "%C2%B2" + FUZZ,
       FUZZ + "x" * 300, FUZZ + "%3F%23", "%E2%80%AE" + FUZZ]
QUERIES = ["limit=%C2%B2" + FUZZ, "limit=%EF%BC%95", "limit=%D9%A5", "limit=1e400",
           "limit=" + "9" * 5000, "after=%EF%BC%95" + FUZZ, "after=" + FUZZ,
           "agentId=%ED%A0%80" + FUZZ, "cursor=" + FUZZ, "limit=-1&after=%00" + FUZZ]


def _leaf_paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict) and value:
        return [p for k, v in value.items() for p in _leaf_paths(v, (*at, k))]
    if isinstance(value, list) and value:
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*at, i))]
    return [at]


def _with_leaf(body: Any, path: tuple[Any, ...], text: str) -> bytes:
    """``body`` as JSON with the leaf at ``path`` replaced by the JSON text ``text``."""
    hole = "\x00HOLE\x00"
    copy = json.loads(json.dumps(body))
    if not path:
        return text.encode("utf-8", "surrogatepass")
    node = copy
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = hole
    return json.dumps(copy).replace(json.dumps(hole), text).encode("utf-8", "surrogatepass")


LISTINGS = ("/v1/runs", "/v1/runs/{runId}/memory", "/v1/runs/{runId}/lessons",
            "/v1/runs/{runId}/events", "/v1/runs/{runId}/snapshots/{snapshotId}",
            "/v1/failure-groups")  # the routes that read ?limit


def _fill(template: str, **given: str) -> str:
    """``template``'s {params}: ``given`` ones, else PARAMS's valid ones."""
    return re.sub(r"\{(\w+)\+?\}", lambda m: given.get(m[1], PARAMS[m[1]]), template)


def _fuzz_requests() -> list[tuple[str, str, bytes | None, bool]]:
    """(method, path, body, refused): ``refused`` unless the hostile value may be taken as it
    is (a query parameter the route does not read, a long text where no limit applies)."""
    from loopsense_local.gateway import template_routes
    from loopsense_local.tables import load_template

    cases: list[tuple[str, str, bytes | None, bool]] = []
    for route in template_routes(load_template()):
        method, template = route.route_key.split(" ", 1)
        names = re.findall(r"\{(\w+)\+?\}", template)
        fill = partial(_fill, template)
        for name in names:
            cases += [(method, fill(**{name: hostile}), None, name != "proxy") for hostile in IDS]
        if method in ("POST", "PUT"):
            body = BODIES.get(route.route_key, {})
            for path in _leaf_paths(body)[:4]:
                cases += [(method, fill(), _with_leaf(body, path, text), text != LEAVES[7])
                          for text in LEAVES]
        else:
            cases += [(method, f"{fill()}?{query}", None,
                       template in LISTINGS and query.startswith("limit=")) for query in QUERIES]
    return cases


def test_fuzz_every_route_answers_hostile_values_in_the_envelope(runtime: Server) -> None:
    cases = _fuzz_requests()
    assert len(cases) > 500  # every route, every kind (bounded: a few seconds)
    for method, path, body, must_refuse in cases:
        answer = runtime.request(body if body is not None else b"", method=method, path=path)
        where = f"{method} {path[:120]} {(body or b'')[:80]!r}"
        assert answer.status < 500, (where, answer.body[:300])
        assert FUZZ.encode() not in answer.body, where
        assert answer.status >= 400 or not must_refuse, where
        if answer.status < 400:
            continue
        if path.startswith(("/v1/traces", "/v1/logs")):  # OTLP's own error body
            assert {"code", "message"} <= answer.json().keys(), where
            continue
        error = answer.json()["error"]
        assert {"code", "message", "retryable", "next", "details"} <= error.keys(), where
        assert error["retryable"] is False, where
    printed = runtime.printed()
    assert FUZZ not in printed and "crashed" not in printed
