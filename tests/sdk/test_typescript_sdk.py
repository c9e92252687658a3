"""The TypeScript SDK (sdk/typescript) built with npm and tested with `node --test` against a real
`loopsense serve --test-skills`.

This test installs the npm dev dependencies (`npm ci`, skipped while node_modules matches
package-lock.json), builds, sets up tenants and keys for the node tests, runs `npm test` with
their URLs and keys in the environment, and checks afterwards that the retries the node tests
made were charged once each (their execution ids against the tenant's usage records).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from loopsense.core.canonical import CanonicalError, canonical_json
from loopsense_local import operator as ops
from tests.e2e.server import DEV_KEY, Operator, Server
from tests.sdk.npm import NPM, ROOT, install_and_build, node_test_summary, run

VECTORS = ROOT / "spec" / "vectors" / "canonical.json"  # the project's own copy
LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}

pytestmark = pytest.mark.skipif(NPM is None, reason="npm is not installed")


def server_cases() -> list[dict[str, str]]:
    """JSON texts and the canonical form the server's own canonical.py gives them: floats around
    every rounding boundary and across exponents, big integers, Unicode casing and whitespace."""
    import random

    rng = random.Random(7)
    values: list[Any] = []
    for _ in range(3000):
        values.append(rng.uniform(-1, 1) * 10 ** rng.randint(-12, 25))
    for cents in range(-2000, 2000):
        values.extend([cents / 1000, cents / 1000 + 0.005, cents * 1.001])
    values += [2**53 + 1, -(2**70), 10**40, 1e16, 1e15 + 0.5, 5e-324, 1.7976931348623157e308]
    alphabet = ("aZ09 \t\n\u00a0\u2003\u3000\u0085\u1680\u200a\u2028\u202f\u205f\ufeff\u001c\u001f"
                "\u00c5\u00df\u0130\u03a3\u039f\u0394\u0301\u00e9\u1e9e\u0149\u01c5\u2126\u212a"
                "\U0001f600\uffff\ue000\u4e2d\u0000\u007f\"\\")
    for _ in range(1500):
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        values.append({key: text, key.upper(): [text.upper(), rng.random()], "ΟΔΟΣ " + text: 1})
    cases = []
    for i, value in enumerate(values):
        source = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        try:
            canonical = canonical_json(json.loads(source))
        except CanonicalError as error:
            canonical = f"<{error.issue}>"
        cases.append({"name": f"case {i}", "input": source, "canonical": canonical})
    return cases


def test_typescript_sdk(server: Server, operator: Operator, tmp_path: Path) -> None:
    install_and_build()

    scoped = ops.issue_key(operator.accounts, "dev", ["agent.loops"])["apiKey"]
    _, hobby = operator.new_tenant("hobby")
    tiny_plan = "ts-sdk-tiny-" + uuid.uuid4().hex[:6]
    operator.set_plan(tiny_plan, credits=1, rps=100)
    _, spent = operator.new_tenant(tiny_plan)
    assert server.execute("agent.loop_detect", LOOP, key=spent).status == 200  # the one credit
    retry_tenant, retry_key = operator.new_tenant("team")
    fast_plan = "ts-sdk-fast-" + uuid.uuid4().hex[:6]  # tracker steps outpace team's 50/s
    operator.set_plan(fast_plan, credits=1_000_000, rps=100_000)
    _, tracker_key = operator.new_tenant(fast_plan)

    extra = tmp_path / "server_cases.json"
    extra.write_text(json.dumps({"vectors": server_cases()}), encoding="utf-8")
    report = tmp_path / "report.json"
    done = run(NPM or "npm", "test", timeout=120, env={
        "LOOPSENSE_BASE_URL": server.url,
        "LOOPSENSE_API_KEY": DEV_KEY,
        "LOOPSENSE_TEST_SCOPED_KEY": scoped,
        "LOOPSENSE_TEST_HOBBY_KEY": hobby,
        "LOOPSENSE_TEST_QUOTA_KEY": spent,
        "LOOPSENSE_TEST_RETRY_KEY": retry_key,
        "LOOPSENSE_TEST_TRACKER_KEY": tracker_key,
        "LOOPSENSE_TEST_REPORT": str(report),
        "LOOPSENSE_VECTORS": str(VECTORS),
        "LOOPSENSE_EXTRA_VECTORS": str(extra),
    })
    output = done.stdout + done.stderr
    summary = node_test_summary(output)
    assert summary.get("fail") == 0 and summary.get("skipped") == 0, output[-20_000:]
    assert summary.get("pass", 0) >= 90, summary  # every test ran

    # Each retried call the node tests made is charged exactly once.
    charged = json.loads(report.read_text())["charged"]
    assert len(charged) == 2, charged
    usage = operator.usage(retry_tenant)
    assert (usage["used"], usage["calls"]) == (2, 2), usage
    assert sorted(r["executionId"] for r in usage["records"]) == sorted(charged)


def test_npm_test_fails_and_counts_the_failure_when_the_vectors_are_missing(tmp_path: Path) -> None:
    """`npm test` alone (no server): its exit status and its summary agree, also when a file it
    needs is missing (a throw while collecting a suite used to be "not ok" yet "fail 0")."""
    install_and_build()
    assert NPM is not None
    done = run(NPM, "test", check=False, timeout=120,
               env={"LOOPSENSE_VECTORS": str(tmp_path / "missing.json")})
    summary = node_test_summary(done.stdout)
    assert done.returncode != 0 and summary.get("fail", 0) >= 1, summary
