"""schemathesis against a running `loopsense serve`, driven by the committed OpenAPI document:
a few examples of every route (valid ones and ones the document rejects), each answer checked:
no 5xx but the documented retryable ones, the status and content type the document lists, the
answer (every refusal in the envelope) valid against its schema, and no answer echoing what the
caller sent (spec/platform.md, Data handling) but the stateful surfaces' reads of what was
stored: the words of the submitted strings that the service never says by itself, against the
words of the answer (whole words, so a short common value neither passes nor fails by chance).
Bounded: a fixed seed, EXAMPLES examples per route and mode, no shrinking, no example database.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from loopsense.errors import ERRORS
from loopsense.platform.contract.routes import DOCUMENT
from loopsense.validation import _ISSUES

ROOT = Path(__file__).resolve().parents[2]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))  # per route (more to hunt, not to keep)
STATEFUL_EXAMPLES = int(os.environ.get("FUZZ_STATEFUL", "8"))  # scenarios of the runs flow
TEXT = DOCUMENT.read_text(encoding="utf-8")
WORD = re.compile(r"\w+")
MIN_WORD = 6  # shorter words are too common to tell an echo from a coincidence


def words(text: str) -> set[str]:
    return set(WORD.findall(text.casefold()))


# What the service says by itself (schemathesis also sends strings it read in the document and
# in earlier answers): the document, every refusal's issues and `next`, the playbooks' text and
# the dashboard's files (package data, served as they are).
OURS = words("\n".join([
    TEXT, *_ISSUES.values(), *(kind.next for kind in ERRORS.values()),
    *(p.read_text(encoding="utf-8") for p in (ROOT / "shared/loopsense/playbooks").glob("*.md")),
    *(p.read_text(encoding="utf-8", errors="replace")
      for p in (ROOT / "functions/dashboard/site").rglob("*") if p.is_file())]))
SCHEMA = schemathesis.openapi.from_dict(json.loads(TEXT))
OPERATIONS = {f"{op.method.upper()} {op.path}": op
              for op in (result.ok() for result in SCHEMA.get_all_operations())}
# The documented retryable 5xx: the store or the server busy, a timeout; never a crash.
ALLOWED_5XX = {503, 504}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def submitted(case: Any) -> set[str]:
    """The words of the strings a caller sent that no answer may carry: MIN_WORD characters or
    more, not a number nor one repeated character, and not a word the service says by itself."""
    sent = [*(_strings(case.body) if not isinstance(case.body, bytes) else ()),
            *_strings(case.path_parameters or {}), *_strings(case.query or {})]
    return {w for value in sent for w in words(value) if len(w) >= MIN_WORD and w not in OURS
            and not re.fullmatch(r"\d+|(.)\1*", w)}


def answered(text: str) -> set[str]:
    """The words of an answer: of its JSON strings (keys too) as decoded, so that an escape
    (\\u00e9) hides nothing; of its text when it is not JSON."""
    try:
        return {w for item in _strings(json.loads(text)) for w in words(item)}
    except ValueError:
        return words(text)


# Answers that carry what the caller stored, by design (spec/platform.md: stateful surfaces):
# their 2xx answers read it back.
STATEFUL = ("/v1/runs", "/v1/executions", "/v1/failure-groups")


def echoed(route: str, case: Any, status: int, text: str) -> set[str]:
    """The submitted words an answer carries (none may, but a stateful read's)."""
    if status < 400 and route.split(" ")[1].startswith(STATEFUL):
        return set()
    return submitted(case) & answered(text)


def check_no_echo(route: str, case: Any, response: Any) -> None:
    quoted = echoed(route, case, response.status_code, response.text)
    assert not quoted, f"{route} {response.status_code} quotes {len(quoted)} submitted word(s)"


@pytest.fixture(scope="module")
def base(server) -> str:
    return str(server.url)


@pytest.fixture(scope="module")
def headers(operator) -> dict[str, str]:
    """A tenant of its own on a plan whose rate limit the fuzz never reaches: on the development
    tenant's 50 requests/s most answers would be 429s, checking little."""
    operator.set_plan("fuzz-unlimited", credits=10**9, rps=100_000)
    _, key = operator.new_tenant("fuzz-unlimited")
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("route", sorted(OPERATIONS))
def test_every_route_answers_as_documented(route: str, base: str,
                                          headers: dict[str, str]) -> None:
    operation = OPERATIONS[route]
    checked = []

    @seed(22)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(GenerationMode.POSITIVE)
           | operation.as_strategy(GenerationMode.NEGATIVE))
    def run(case: Any) -> None:
        response = case.call(base_url=base, headers=headers, timeout=30)
        if response.status_code in ALLOWED_5XX and "Retry-After" in response.headers:
            return  # documented and retryable (the shared machine's store or server busy)
        case.validate_response(response, checks=CHECKS)
        check_no_echo(route, case, response)
        checked.append(response.status_code)

    run()
    assert checked, "every answer was a retryable 5xx: nothing was checked"


class Sent:
    """A case as the checks read it."""

    def __init__(self, body: Any = None, path: dict[str, str] | None = None) -> None:
        self.body, self.path_parameters, self.query = body, path or {}, {}


def test_the_echo_check_finds_a_submitted_word_and_no_coincidence() -> None:
    """The check can fail: a submitted word in any answer but a stateful read is found, in a
    JSON string or in an escape; a short or common word, one the service says itself, or a
    number is no echo; a refusal quoting a stored value is one."""
    case = Sent({"events": [{"action": "qzvx-kestrelwing", "target": "search"}], "note": "ok"})
    assert echoed("POST /v1/execute", case, 400, '{"issue": "no qzvx-kestrelwing"}') == {
        "kestrelwing"}  # whole words: "qzvx" is too short to count
    assert echoed("GET /v1/usage", Sent(path={"x": "Zéphyrinette"}), 200,
                  '{"a": "z\\u00e9phyrinette"}') == {"zéphyrinette"}  # a GET's 2xx too
    # No coincidence: the words it says itself ("target", "search"), a word inside another
    # ("kestrelwings" is not "kestrelwing"), numbers and one repeated character
    assert echoed("POST /v1/execute", case, 200,
                  '{"target": "search", "k": "kestrelwings"}') == set()
    assert echoed("POST /v1/execute", Sent({"n": "123456789", "m": "aaaaaaaa"}), 200,
                  '{"count": 123456789, "k": "aaaaaaaa"}') == set()
    stored = Sent(path={"runId": "run-kept-plovercrest"})
    assert echoed("GET /v1/runs/{runId}", stored, 200, '{"runId": "run-kept-plovercrest"}') == set()
    assert echoed("GET /v1/runs/{runId}", stored, 404, '{"m": "no run-kept-plovercrest"}') == {
        "plovercrest"}  # a refusal of a stateful route is checked


def test_the_runs_flow_follows_the_documents_links(base: str, headers: dict[str, str]) -> None:
    """Stateful: schemathesis chains the runs routes by the document's links (register or
    steps -> signal, circuit break -> restore and snapshot of the same run), checking every
    answer as above."""
    runs = SCHEMA.include(path_regex="^/v1/runs/")

    class Runs(runs.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": base, "headers": headers, "timeout": 30}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            if response.status_code in ALLOWED_5XX and "Retry-After" in response.headers:
                return
            case.validate_response(response, checks=CHECKS)
            check_no_echo(f"{case.method.upper()} {case.path}", case, response)
            seen.add((case.path, response.status_code))

    seen: set[tuple[str, int]] = set()
    Runs.run(settings=settings(max_examples=STATEFUL_EXAMPLES, stateful_step_count=6,
                               deadline=None, database=None, derandomize=True,
                               phases=[Phase.explicit, Phase.generate],
                               suppress_health_check=list(HealthCheck)))
    # The links were followed: a break answered, then a restore of the snapshot it made.
    assert {("/v1/runs/{runId}/circuit-break", 200),
            ("/v1/runs/{runId}/snapshots/{snapshotId}/restore", 200)} <= seen, sorted(seen)
