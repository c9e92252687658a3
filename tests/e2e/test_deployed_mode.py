"""The HTTP suites against a deployed stack: with LOOPSENSE_BASE_URL and LOOPSENSE_API_KEY set, the
`server` fixture uses that base URL and key and starts nothing, and what needs operator access
or the local server skips with its reason. Proven here by running a subset of tests/e2e in a
child pytest against a separately started `loopsense serve` (no test skills, as on AWS) passed as
the "deployed" stack.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.e2e.server import NEEDS_LOCAL, NEEDS_OPERATOR, start_server
from tests.infra.test_template import REPO_ROOT

SUBSET = ("tests/e2e/test_loops_http.py", "tests/e2e/test_platform_contract.py",
          "tests/e2e/test_serve_smoke.py")


def test_a_subset_of_the_e2e_suite_passes_against_a_deployed_base_url():
    stack = start_server()  # skips when this run is itself against a deployed stack
    try:
        env = {**os.environ, "LOOPSENSE_BASE_URL": stack.url + "/",
               "LOOPSENSE_API_KEY": "ls_local_development_key_0001"}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p",
                               "no:cacheprovider", *SUBSET], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
    finally:
        printed = stack.stop()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = re.search(r"(\d+) passed, (\d+) skipped", done.stdout)
    assert summary and int(summary[1]) >= 20 and int(summary[2]) >= 1, done.stdout[-2000:]
    assert NEEDS_OPERATOR in done.stdout  # operator tests skip, saying why
    assert "starts a local `loopsense serve` of its own" in done.stdout  # test_serve_smoke
    assert NEEDS_LOCAL in done.stdout  # test.sleep calls skip: no test skills on a stack
    # The child's calls reached this server (it started none of its own).
    assert printed.count('"message":"execute"') >= 20
