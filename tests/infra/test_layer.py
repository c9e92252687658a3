"""What `sam build` deploys: the layer holds the runtime code only, and each function's handler
runs from the build output alone.

The layer's python/ is shared/loopsense (nothing from local/: no CLI, no gateway, no embedded
store, no PyYAML) plus exactly what shared/requirements.txt installs. Then each function is
imported and invoked with its events/ file in a clean interpreter (`python -I -S`: no site
packages) whose sys.path is Lambda's: the function's directory, the layer's python/, and the
runtime's own boto3/botocore (Lambda's python3.11 runtime ships them). It is the closest stand-in
for `sam local invoke` where Docker is absent. The functions that read the store get the
template's own Environment (table names resolved to a local store's) and an embedded DynamoDB
on loopback; with no store reachable the router answers the enveloped 503.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from loopsense.settings import Settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client
from loopsense_local.embedded import FAKE_AWS_ENV, EmbeddedDynamoDB
from loopsense_local.tables import TABLES, create_tables, local_table_name
from tests.infra.test_template import LAYER, REPO_ROOT, TEMPLATE, _functions, _prop

pytestmark = pytest.mark.slow  # every test here needs the `built` sam build

DEV_KEY = "ls_local_development_key_0001"
# What Lambda's python3.11 runtime provides besides the standard library (/var/runtime).
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
# Never in the layer: the local tooling and what only it needs.
LOCAL_ONLY = ("loopsense_local", "yaml", "moto", "cfnlint", "samcli", "pytest")

DRIVER = r"""
import json, sys
function_dir, layer, runtime, event_path = sys.argv[1:5]
sys.path[:0] = [function_dir, layer, runtime]

class Context:  # the attributes Powertools reads from a LambdaContext
    function_name = "loopsense-layer-test"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:loopsense-layer-test"
    aws_request_id = "00000000-0000-4000-8000-00000000beef"
    def get_remaining_time_in_millis(self):
        return 10_000

import app
init = sorted({m.split(".")[0] for m in sys.modules})
with open(event_path, encoding="utf-8") as handle:
    answer = app.lambda_handler(json.load(handle), Context())
import loopsense
print("ANSWER " + json.dumps({
    "answer": answer,
    "loopsense": loopsense.__file__,
    "init": init,
    "modules": sorted({m.split(".")[0] for m in sys.modules}),
}))
"""


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cfn_yaml.load(str(TEMPLATE))
    return loaded


@pytest.fixture(scope="module")
def site(built: Path) -> Path:
    return built / LAYER / "python"


def link_runtime(here: Path) -> Path:
    """``here`` made to stand for /var/runtime: links to this venv's boto3, botocore and theirs."""
    venv_site = Path(__import__("boto3").__file__).parents[1]
    for name in RUNTIME_PACKAGES:
        source = venv_site / name if (venv_site / name).is_dir() else venv_site / f"{name}.py"
        assert source.exists(), f"{name} is not installed in the test venv"
        (here / source.name).symlink_to(source)
    return here


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return link_runtime(tmp_path_factory.mktemp("runtime"))


# ---- what the layer holds -----------------------------------------------------------------------
def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_layer_package_is_shared_loopsense_and_nothing_local(site: Path):
    assert _files(site / "loopsense") == _files(REPO_ROOT / "shared" / "loopsense")
    for name in LOCAL_ONLY:
        assert not (site / name).exists() and not (site / f"{name}.py").exists(), name
    assert not list(site.glob("PyYAML-*")) and not list(site.glob("loopsense-*.dist-info"))
    assert not (site / "local").exists()


def _metadata(dist_info: Path) -> Any:
    return Parser().parsestr((dist_info / "METADATA").read_text(encoding="utf-8"))


def test_the_layer_installs_its_requirements_and_their_dependencies_only(site: Path):
    """Every distribution in the layer is reached from shared/requirements.txt by Requires-Dist
    (markers evaluated for python3.11 on Linux, extras followed), and every requirement is there."""
    dists = {canonicalize_name(_metadata(d)["Name"]): d for d in site.glob("*.dist-info")}
    lines = (REPO_ROOT / "shared" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    todo = [Requirement(ln) for ln in (s.split("#", 1)[0].strip() for s in lines) if ln]
    environment = {**default_environment(), "python_version": "3.11", "sys_platform": "linux",
                   "platform_system": "Linux", "platform_machine": "x86_64"}
    followed: set[tuple[str, frozenset[str]]] = set()  # (distribution, extras) walked
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        assert name in dists, f"{requirement} is not installed in the layer"
        assert requirement.specifier.contains(_metadata(dists[name])["Version"],
                                              prereleases=True), requirement
        extras = frozenset({""} | set(requirement.extras))
        if (name, extras) in followed:
            continue
        followed.add((name, extras))
        for raw in _metadata(dists[name]).get_all("Requires-Dist") or []:
            dependency = Requirement(raw)
            if dependency.marker is None or any(
                    dependency.marker.evaluate({**environment, "extra": e}) for e in extras):
                todo.append(dependency)
    installed = {name for name, _ in followed}
    assert set(dists) == installed, f"in the layer but never required: {set(dists) - installed}"
    assert "boto3" not in dists  # the runtime's own


# ---- each handler, from the build output alone ---------------------------------------------------
@contextmanager
def seeded_store() -> Iterator[str]:
    """An embedded DynamoDB on loopback with the template's tables and the development tenant."""
    embedded = EmbeddedDynamoDB("127.0.0.1", 0).start()
    try:
        config = Settings(dynamodb_endpoint=embedded.endpoint)
        create_tables(make_client(config), config)
        accounts = Accounts(Dynamo(make_client(config)), config)
        now = datetime.now(UTC).isoformat()
        accounts.create_tenant("dev", "team", now)
        accounts.issue_key("dev", ("*",), now, secret=DEV_KEY)
        yield embedded.endpoint
    finally:
        embedded.stop()


@pytest.fixture(scope="module")
def store() -> Iterator[str]:
    with seeded_store() as endpoint:
        yield endpoint


def deployed_environment(template: dict[str, Any], function: dict[str, Any]) -> dict[str, str]:
    """The function's environment as the template declares it (Globals, then its own), with
    each table's !Ref resolved to the name a local store gives it."""
    env: dict[str, str] = {}
    declared = [template["Globals"]["Function"].get("Environment", {}),
                function["Properties"].get("Environment", {})]
    for section in declared:
        for name, value in section.get("Variables", {}).items():
            if isinstance(value, dict):
                ref = value["Ref"]
                value = local_table_name(TABLES[ref]) if ref in TABLES else ref
            env[name] = str(value)
    return env


def invoke(built: Path, runtime: Path, logical_id: str, template: dict[str, Any],
           extra_env: dict[str, str], flags: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the function's handler answered to its event, and the top-level modules loaded by
    its import (``init``) and after the call (``modules``); ``stderr`` holds what it wrote."""
    function = template["Resources"][logical_id]
    event = REPO_ROOT / "events" / f"{Path(function['Properties']['CodeUri']).name}.json"
    env = {"PATH": os.environ.get("PATH", ""), **FAKE_AWS_ENV, "POWERTOOLS_TRACE_DISABLED": "1",
           **deployed_environment(template, function), **extra_env}
    done = subprocess.run(
        [sys.executable, "-I", "-S", *flags, "-c", DRIVER, str(built / logical_id),
         str(built / LAYER / "python"), str(runtime), str(event)],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    answers = [ln for ln in done.stdout.splitlines() if ln.startswith("ANSWER ")]
    assert done.returncode == 0 and answers, f"{logical_id}:\n{done.stdout}\n{done.stderr}"
    found: dict[str, Any] = json.loads(answers[0].removeprefix("ANSWER "))
    assert Path(found["loopsense"]).is_relative_to(built / LAYER / "python")
    assert not set(found["modules"]) & set(LOCAL_ONLY), found["modules"]
    return {**found, "stderr": done.stderr}


def store_environment(template: dict[str, Any], logical_id: str, endpoint: str) -> dict[str, str]:
    """What a function needs to run here: the local store, if it reads one, and the skills run
    in-process (there is no Lambda to invoke)."""
    reads = "Environment" in template["Resources"][logical_id]["Properties"]
    return ({"LOOPSENSE_DYNAMODB_ENDPOINT": endpoint, "LOOPSENSE_SKILL_INVOKER": "inprocess"}
            if reads else {})


@pytest.fixture(scope="module")
def invoked(built, runtime, template, store) -> dict[str, dict[str, Any]]:
    """Each function run once on its event from the build output (see ``invoke``)."""
    return {name: invoke(built, runtime, name, template, store_environment(template, name, store))
            for name in _functions(template)}


def test_every_function_answers_its_event_from_the_build_output(invoked, template):
    answers = {name: found["answer"] for name, found in invoked.items()}
    for name in _functions(template):
        assert _prop(template, template["Resources"][name], "Handler") == "app.lambda_handler"

    authorized = answers.pop("AuthorizerFunction")
    assert authorized["isAuthorized"] is True and authorized["context"]["tenantId"] == "dev"
    executed = answers.pop("ExecuteFunction")
    assert executed["statusCode"] == 200, executed
    body = json.loads(executed["body"])
    assert body["output"]["loopDetected"] is True and body["billing"] == {"credits": 1}
    assert answers.pop("SettingsFunction")["statusCode"] == 200
    used = answers.pop("UsageFunction")
    assert used["statusCode"] == 200 and len(json.loads(used["body"])["days"]) == 30, used
    page = answers.pop("DashboardFunction")  # the site's files are in the function's folder
    assert page["statusCode"] == 200 and page["headers"]["Content-Encoding"] == "gzip", page
    assert answers.pop("RunsFunction")["statusCode"] == 200
    contract = answers.pop("ContractFunction")  # the committed document, read at cold start
    assert contract["statusCode"] == 200 and json.loads(contract["body"])["openapi"], contract
    playbook = answers.pop("PlaybooksFunction")
    assert playbook["statusCode"] == 200 and json.loads(playbook["body"])["name"]
    ingested = answers.pop("TelemetryIngestFunction")
    assert ingested["statusCode"] == 200 and json.loads(ingested["body"])["fired"], ingested
    exported = answers.pop("TelemetryOtlpFunction")  # opentelemetry-proto: its own requirements
    assert exported["statusCode"] == 200 and exported["isBase64Encoded"] is True, exported
    assert answers.pop("FailureGroupsFunction")["statusCode"] == 200
    assert answers.pop("TelemetrySweeperFunction") == {"swept": 0}  # nothing idle yet
    for name, answer in answers.items():  # the skills: invoked directly by the router
        assert "output" in answer and "error" not in answer, (name, answer)


def test_the_router_without_a_reachable_store_answers_the_enveloped_503(built, runtime,
                                                                        template):
    nowhere = {"LOOPSENSE_DYNAMODB_ENDPOINT": "http://127.0.0.1:9",
               "LOOPSENSE_STORE_TIMEOUT_S": "0.5", "LOOPSENSE_SKILL_INVOKER": "inprocess"}
    answer = invoke(built, runtime, "ExecuteFunction", template, nowhere)["answer"]
    assert answer["statusCode"] == 503
    error = json.loads(answer["body"])["error"]
    assert (error["code"], error["retryable"]) == ("PLAN_ELIGIBILITY_UNAVAILABLE", True)
    assert int(answer["headers"]["Retry-After"]) >= 1


# ---- what each function imports -----------------------------------------------------------------
# The heavy packages of the layer, and the functions that need each (their imports at cold start
# and first call). Any other function importing one pays for it at every cold start.
HEAVY = ("numpy", "pydantic", "pydantic_core", "google", "opentelemetry")
NEEDS: dict[str, set[str]] = {
    # the detectors: numpy's search and embeddings; pydantic validates their input
    "LoopDetectFunction": {"numpy", "pydantic", "pydantic_core"},
    "RunMonitorFunction": {"numpy", "pydantic", "pydantic_core"},
    "LoopsFunction": {"numpy", "pydantic", "pydantic_core"},
    "SemanticLoopFunction": {"pydantic", "pydantic_core"},
    "RunsFunction": {"numpy", "pydantic", "pydantic_core"},  # the monitor on every step batch
    # the router validates the request envelope; the skills run in their own functions
    "ExecuteFunction": {"pydantic", "pydantic_core"},
    # a batch's and an end's body; numpy for the tool_calls class (the run monitor's cycle rule),
    # only when an execution is evaluated (not by these events)
    "TelemetryIngestFunction": {"pydantic", "pydantic_core"},
    "TelemetryOtlpFunction": {"pydantic", "pydantic_core", "google", "opentelemetry"},
    # the ingestion service (its body models come with it) and the failure groups read by it
    "TelemetrySweeperFunction": {"pydantic", "pydantic_core"},
    "FailureGroupsFunction": {"pydantic", "pydantic_core"},
    "AuthorizerFunction": set(),
    "SettingsFunction": set(),
    "PlaybooksFunction": set(),
    "DashboardFunction": set(),
    "ContractFunction": set(),
    "UsageFunction": set(),
}


def test_each_function_imports_the_heavy_packages_it_needs_and_no_other(invoked):
    assert set(NEEDS) == set(invoked)
    for name, found in invoked.items():
        # Here the router runs the skill in-process (no Lambda to invoke): its call's imports
        # are the skill's function's; its own are those of its cold start.
        loaded = found["init"] if name == "ExecuteFunction" else found["modules"]
        assert set(HEAVY) & set(loaded) == NEEDS[name], name
