"""schemathesis against a running `loopsense serve`, driven by the committed OpenAPI document:
a few examples of every route (valid ones and ones the document rejects), each answer checked:
no 5xx but the documented retryable ones, the status and content type the document lists, the
answer (every refusal in the envelope) valid against its schema, and no refusal nor stateless
answer echoing a string the caller sent (spec/platform.md, Data handling). Bounded: a fixed
seed, EXAMPLES examples per route and mode, no shrinking, no example database.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
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

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))  # per route (more to hunt, not to keep)
STATEFUL_EXAMPLES = int(os.environ.get("FUZZ_STATEFUL", "8"))  # scenarios of the runs flow
TEXT = DOCUMENT.read_text(encoding="utf-8")
# What answers say by themselves (schemathesis also sends strings it read in earlier answers):
# the document, the issues and `next`s of every refusal.
OURS = "\n".join([TEXT, *_ISSUES.values(), *(kind.next for kind in ERRORS.values())])
SCHEMA = schemathesis.openapi.from_dict(json.loads(TEXT))
OPERATIONS = {f"{op.method.upper()} {op.path}": op
              for op in (result.ok() for result in SCHEMA.get_all_operations())}
# Answers that carry what the caller stored, by design (spec/platform.md: stateful surfaces).
STATEFUL = ("/v1/runs", "/v1/executions", "/v1/failure-groups")
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
    """The strings a caller sent that no answer may quote: 8 characters or more, not digits or
    one repeated character, and not a name the document itself uses (field names, enums)."""
    sent = [*(_strings(case.body) if not isinstance(case.body, bytes) else ()),
            *_strings(case.path_parameters or {}), *_strings(case.query or {})]
    return {s for s in sent if len(s.strip()) >= 8 and s not in OURS
            and not re.fullmatch(r"[\d\s.,:-]*|(.)\1*", s)}


def check_no_echo(route: str, case: Any, response: Any) -> None:
    if response.status_code < 400 and (route.split(" ")[1].startswith(STATEFUL)
                                       or route.split(" ")[0] != "POST"):
        return  # stored content read back, or a read of the tenant's own settings
    body = response.text
    for value in submitted(case):
        assert json.dumps(value)[1:-1] not in body and value not in body, (
            f"{route} {response.status_code} quotes a submitted value")


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
