"""template.yaml: lints clean (cfn-lint, sam validate --lint), builds (sam build, no Docker),
and agrees with the skill catalog. The tools come from the venv that runs these tests.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml
from packaging.requirements import Requirement
from packaging.version import Version

from loopsense.platform.access.catalog import SKILLS

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "template.yaml"
BIN = Path(sys.executable).parent

# Functions that are part of the platform, not a skill (the router, the authorizer, admin...).
# Every other AWS::Serverless::Function must be a skill in the catalog.
PLATFORM_FUNCTIONS: frozenset[str] = frozenset({"AuthorizerFunction", "ExecuteFunction",
                                               "PlaybooksFunction", "SettingsFunction",
                                               "DashboardFunction", "ContractFunction",
                                               "UsageFunction",
                                               "RunsFunction", "TelemetryIngestFunction",
                                               "TelemetryOtlpFunction",
                                               "TelemetrySweeperFunction",
                                               "FailureGroupsFunction"})

LAYER = "SharedLayer"
NUMPY_CEILING = Version("2.3")  # 2.3+ has only manylinux_2_28 wheels; Lambda py3.11 is glibc 2.26
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024  # function + all layers


def _tool(name: str) -> str:
    path = BIN / name
    assert path.is_file(), (
        f"{name} is not installed next to {sys.executable}; run `pip install -e .[dev]` "
        "(scripts/test does)"
    )
    return str(path)


def _tool_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(SAM_CLI_TELEMETRY="0", AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1")
    env.setdefault("AWS_ACCESS_KEY_ID", "testing")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    # sam build (python3.11 BuildMethod) runs `python3.11` from PATH. When these tests run in
    # a 3.11 venv, that interpreter is the natural one; put its bin first.
    if sys.version_info[:2] == (3, 11):
        env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return env


def _run(args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=REPO_ROOT,
        env=_tool_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cfn_yaml.load(str(TEMPLATE))  # understands !Ref, !GetAtt, !Sub
    return loaded


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return _resources(template, "AWS::Serverless::Function")


def _prop(template: dict[str, Any], function: dict[str, Any], name: str) -> Any:
    """A function property as deployed: its own value, else the Globals value."""
    own = function.get("Properties", {})
    if name in own:
        return own[name]
    return template.get("Globals", {}).get("Function", {}).get(name)


# ---- (a) and (b): the linters ---------------------------------------------------------------


def test_cfn_lint_reports_nothing():
    result = _run([_tool("cfn-lint"), "--format", "parseable", str(TEMPLATE)], timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "", (
        f"cfn-lint exit {result.returncode}:\n{result.stdout}\n{result.stderr}"
    )


def test_sam_validate_lint_passes():
    result = _run([_tool("sam"), "validate", "--lint", "--template", str(TEMPLATE)], timeout=300)
    assert result.returncode == 0, f"sam validate --lint:\n{result.stdout}\n{result.stderr}"
    assert "is a valid SAM Template" in result.stdout + result.stderr


# ---- (c): the build -------------------------------------------------------------------------


def _dist_version(site: Path, name: str) -> Version:
    infos = sorted(site.glob(f"{name}-*.dist-info"))
    assert len(infos) == 1, f"expected one {name} dist-info in the layer, found {infos}"
    for line in (infos[0] / "METADATA").read_text(encoding="utf-8").splitlines():
        if line.startswith("Version:"):
            return Version(line.split(":", 1)[1].strip())
    raise AssertionError(f"no Version in {infos[0]}/METADATA")


def _tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.slow
def test_sam_build_layer_has_loopsense_and_a_lambda_compatible_numpy(built, template):
    site = built / LAYER / "python"
    assert (site / "loopsense" / "__init__.py").is_file()
    assert not (site / "python").exists(), "layer content nested twice (/opt/python/python)"
    assert (site / "numpy" / "__init__.py").is_file()
    assert _dist_version(site, "numpy") < NUMPY_CEILING
    # The wheel must run on Amazon Linux 2 (glibc 2.26): manylinux2014/_2_17, never _2_28.
    wheel = next(site.glob("numpy-*.dist-info")) / "WHEEL"
    tags = [
        ln.split(":", 1)[1].strip()
        for ln in wheel.read_text().splitlines()
        if ln.startswith("Tag:")
    ]
    assert tags and all("x86_64" in t and "manylinux_2_28" not in t for t in tags), tags
    for name in _functions(template):
        assert (built / name / "app.py").is_file(), f"{name} was not built"
        total = _tree_size(built / name) + _tree_size(built / LAYER)
        assert total < LAMBDA_UNZIPPED_LIMIT, f"{name} + layer unzipped = {total} bytes"


# ---- (d): template and catalog agree --------------------------------------------------------


def test_every_skill_has_a_function_with_its_logical_id(template):
    functions = _functions(template)
    for skill in SKILLS:
        assert skill.function in functions, f"{skill.key}: no {skill.function} in template.yaml"
        assert functions[skill.function]["Properties"]["CodeUri"] == f"functions/{skill.name}/"
        code_dir = REPO_ROOT / functions[skill.function]["Properties"]["CodeUri"]
        assert (code_dir / "app.py").is_file(), f"{skill.key}: {code_dir}/app.py is missing"


def test_every_function_is_a_skill_or_an_allowlisted_platform_function(template):
    skill_functions = {s.function for s in SKILLS}
    assert len(skill_functions) == len(SKILLS), "two skills share one function"
    assert not skill_functions & PLATFORM_FUNCTIONS
    strays = set(_functions(template)) - skill_functions - PLATFORM_FUNCTIONS
    assert not strays, f"functions neither in the catalog nor in PLATFORM_FUNCTIONS: {strays}"
    assert set(_functions(template)) >= PLATFORM_FUNCTIONS, "allowlisted function missing"


def test_skill_handlers_run_the_skill_they_are_deployed_as(template, lambda_module):
    functions = _functions(template)
    for skill in SKILLS:
        code_dir = (REPO_ROOT / functions[skill.function]["Properties"]["CodeUri"]).resolve()
        module = lambda_module(code_dir.relative_to(REPO_ROOT / "functions").as_posix())
        assert callable(module.lambda_handler)
        assert skill == module.SKILL, f"{code_dir} runs {module.SKILL.key}, not {skill.key}"


def test_every_function_directory_is_deployed(template):
    deployed = {
        (REPO_ROOT / f["Properties"]["CodeUri"]).resolve() for f in _functions(template).values()
    }
    on_disk = {p.parent.resolve() for p in (REPO_ROOT / "functions").glob("*/app.py")}
    assert on_disk <= deployed, f"not in template.yaml: {sorted(on_disk - deployed)}"


def test_functions_share_the_layer_and_the_runtime_settings(template):
    globals_ = template["Globals"]["Function"]
    assert globals_["Runtime"] == "python3.11"
    assert globals_["Architectures"] == ["x86_64"]
    assert globals_["Tracing"] == "Active"
    env = globals_["Environment"]["Variables"]
    assert env["POWERTOOLS_SERVICE_NAME"] == "loopsense"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "Loopsense"
    # Responses and error messages can hold caller data: never put them in traces.
    assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
    assert env["POWERTOOLS_TRACER_CAPTURE_ERROR"] == "false"

    layer = template["Resources"][LAYER]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"].rstrip("/") == "shared"
    assert layer["Metadata"]["BuildMethod"] == "python3.11"
    assert "python3.11" in layer["Properties"]["CompatibleRuntimes"]
    assert not (REPO_ROOT / "shared" / "python").exists(), "layer content goes directly in shared/"

    for name, function in _functions(template).items():
        assert _prop(template, function, "Handler") == "app.lambda_handler", name
        assert {"Ref": LAYER} in (_prop(template, function, "Layers") or []), name


def test_skill_functions_have_no_extra_permissions_and_a_retained_log_group(template):
    log_groups = _resources(template, "AWS::Logs::LogGroup").values()
    for skill in SKILLS:
        function = template["Resources"][skill.function]
        # Basic execution + X-Ray (from Tracing) only: a stateless skill touches nothing else.
        for extra in ("Policies", "Role", "Events", "FunctionUrlConfig"):
            assert _prop(template, function, extra) is None, f"{skill.function} has {extra}"
        names = [g["Properties"].get("LogGroupName") for g in log_groups]
        assert {"Fn::Sub": f"/aws/lambda/${{{skill.function}}}"} in names, skill.function
    for group in log_groups:
        assert "RetentionInDays" in group["Properties"]


def test_outputs_expose_the_function_and_layer_arns(template):
    values = [o["Value"] for o in template["Outputs"].values()]
    assert {"Ref": LAYER} in values
    for skill in SKILLS:
        assert {"Fn::GetAtt": [skill.function, "Arn"]} in values
        assert {"Ref": skill.function} in values  # its name: what the router invokes


def test_layer_requirements_pin_numpy_below_2_3():
    lines = (REPO_ROOT / "shared" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    reqs = [Requirement(ln) for ln in (s.split("#", 1)[0].strip() for s in lines) if ln]
    numpy = [r for r in reqs if r.name == "numpy"]
    assert numpy, "shared/requirements.txt does not name numpy"
    assert not any(numpy[0].specifier.contains(v) for v in ("2.3.0", "2.3.5", "2.4.0")), (
        f"numpy{numpy[0].specifier} admits 2.3+, which sam build cannot resolve for python3.11"
    )


def test_router_can_invoke_every_skill_by_name_and_nothing_else(template):
    from loopsense.platform.execute.invoke import function_env_name

    router = template["Resources"]["ExecuteFunction"]["Properties"]
    variables = router["Environment"]["Variables"]
    statements = [s for p in router["Policies"] for s in p["Statement"]]
    invokable = [r for s in statements if s["Action"] == "lambda:InvokeFunction"
                 for r in s["Resource"]]
    assert sorted(str(r) for r in invokable) == sorted(
        str({"Fn::GetAtt": [s.function, "Arn"]}) for s in SKILLS)
    for skill in SKILLS:
        assert variables[function_env_name(skill)] == {"Ref": skill.function}


def store_readers(template: dict[str, Any]) -> set[str]:
    """The functions whose handler builds on the store: app.py imports loopsense.platform.wiring
    (accounts, platform, tenant_settings), which reads every table's name from the environment."""
    readers = set()
    for name, function in _functions(template).items():
        app = REPO_ROOT / function["Properties"]["CodeUri"] / "app.py"
        imported = {node.module for node in ast.walk(ast.parse(app.read_text(encoding="utf-8")))
                    if isinstance(node, ast.ImportFrom)}
        if "loopsense.platform.wiring" in imported:
            readers.add(name)
    return readers


def test_every_table_is_known_to_settings_and_named_to_every_function_that_reads_the_store(
        template):
    from loopsense.settings import TABLE_FIELDS, env_name
    from loopsense_local.tables import TABLES

    tables = _resources(template, "AWS::DynamoDB::Table")
    assert set(tables) == set(TABLES)
    assert sorted(TABLES.values()) == sorted(TABLE_FIELDS)
    for logical_id in tables:
        assert tables[logical_id]["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    readers = store_readers(template)
    assert readers == {"AuthorizerFunction", "ExecuteFunction", "RunsFunction", "SettingsFunction",
                       "TelemetryIngestFunction", "TelemetryOtlpFunction",
                       "TelemetrySweeperFunction", "FailureGroupsFunction", "UsageFunction"}
    for name, function in _functions(template).items():
        variables = (_prop(template, function, "Environment") or {}).get("Variables", {})
        named = {v: variables[v] for v in variables if v.endswith("_TABLE")}
        expected = ({env_name(field): {"Ref": logical_id} for logical_id, field in TABLES.items()}
                    if name in readers else {})
        assert named == expected, f"{name}: its table variables are not the template's tables"


def test_counters_and_idempotency_records_expire_by_ttl(template):
    tables = _resources(template, "AWS::DynamoDB::Table")
    for logical_id in ("RateLimitsTable", "IdempotencyTable", "UsageTable", "RunsTable"):
        assert tables[logical_id]["Properties"]["TimeToLiveSpecification"]["Enabled"] is True


def test_the_api_routes_execute_through_the_authorizer(template):
    api = template["Resources"]["Api"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "KeyAuthorizer"
    assert api["Auth"]["Authorizers"]["KeyAuthorizer"]["Identity"]["ReauthorizeEvery"] == 0
    events = template["Resources"]["ExecuteFunction"]["Properties"]["Events"]
    assert events["Execute"]["Properties"]["Path"] == "/v1/execute"
    assert "ApiUrl" in template["Outputs"]


def test_each_skill_function_times_out_at_its_catalog_budget(template):
    for skill in SKILLS:
        function = template["Resources"][skill.function]
        assert _prop(template, function, "Timeout") * 1000 == skill.timeout_ms, skill.key


def test_the_runs_function_may_run_as_long_as_the_http_api_waits(template):
    """A restore copies up to 10,000 entries: 29 s, API Gateway's integration limit (longer,
    and the gateway answers outside the envelope)."""
    runs = template["Resources"]["RunsFunction"]
    assert _prop(template, runs, "Timeout") == 29


def test_the_runs_function_uses_only_its_tables_and_the_actions_it_calls(template):
    """Least privilege: the runs table for its reads and (transactional) writes, the plan rows,
    the charge (its shard read with the agent, a full one's move read by Query) and the rate
    counter; nothing else, on nothing else."""
    runs = template["Resources"]["RunsFunction"]["Properties"]
    statements = [s for p in runs["Policies"] for s in p["Statement"]]
    granted = {str(s["Resource"]): sorted([s["Action"]] if isinstance(s["Action"], str)
                                          else s["Action"]) for s in statements}
    assert all(s["Effect"] == "Allow" for s in statements)
    assert granted == {
        str({"Fn::GetAtt": ["RunsTable", "Arn"]}): sorted([
            "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:BatchWriteItem",
            "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]),
        str({"Fn::Sub": "${RunsTable.Arn}/index/byActivity"}): ["dynamodb:Query"],
        str({"Fn::GetAtt": ["PlansTable", "Arn"]}): ["dynamodb:GetItem"],
        str({"Fn::GetAtt": ["UsageTable", "Arn"]}): sorted([
            "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:Query",
            "dynamodb:UpdateItem"]),
        str({"Fn::GetAtt": ["RateLimitsTable", "Arn"]}): ["dynamodb:UpdateItem"],
    }
    paths = {(e["Properties"]["Method"], e["Properties"]["Path"])
             for e in runs["Events"].values()}
    assert paths == {("POST", "/v1/runs/{runId}/agents"), ("POST", "/v1/runs/{runId}/steps"),
                     ("GET", "/v1/runs/{runId}/signal"), ("POST", "/v1/runs/{runId}/reset"),
                     ("PUT", "/v1/runs/{runId}/config"),
                     *{(m, "/v1/runs/{runId}/memory/{key}") for m in ("PUT", "GET", "DELETE")},
                     ("GET", "/v1/runs/{runId}/memory"), ("POST", "/v1/runs/{runId}/lessons"),
                     ("GET", "/v1/runs/{runId}/lessons"), ("GET", "/v1/runs/{runId}/events"),
                     ("POST", "/v1/runs/{runId}/circuit-break"),
                     ("GET", "/v1/runs/{runId}/snapshots/{snapshotId}"),
                     ("POST", "/v1/runs/{runId}/snapshots/{snapshotId}/restore"),
                     ("POST", "/v1/runs/{runId}/context"), ("GET", "/v1/runs"),
                     ("GET", "/v1/runs/{runId}")}
    table = template["Resources"]["RunsTable"]["Properties"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["pk", "sk"]
    # GET /v1/runs: the tenant's agent items by last write, keys only (no Scan, no bodies)
    [index] = table["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "byActivity"
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["apk", "ask"]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert table["TimeToLiveSpecification"]["AttributeName"] == "expiresAt"


# ---- the files' bucket (docs/files.md, docs/security.md) --------------------------------------
BUCKET_ARN = {"Fn::GetAtt": ["FilesBucket", "Arn"]}
OBJECTS_ARN = {"Fn::Sub": "${FilesBucket.Arn}/*"}


def test_the_files_bucket_is_private_encrypted_and_keeps_a_file_its_day(template):
    from loopsense.platform.execute.files import FILE_LIFE_S

    bucket = template["Resources"]["FilesBucket"]["Properties"]
    rule = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True}
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    expiry = [r for r in bucket["LifecycleConfiguration"]["Rules"] if r["Status"] == "Enabled"]
    # the router refuses a file past FILE_LIFE_S; S3 removes it after the same day
    assert [r["ExpirationInDays"] * 86400 for r in expiry] == [FILE_LIFE_S]
    assert "Prefix" not in expiry[0] and "Filter" not in expiry[0]  # every object


def _bucket_denials(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    policies = [r["Properties"] for r in _resources(template, "AWS::S3::BucketPolicy").values()
                if r["Properties"]["Bucket"] == {"Ref": "FilesBucket"}]
    assert len(policies) == 1, "the files' bucket has one policy"
    statements = policies[0]["PolicyDocument"]["Statement"]
    assert all(s["Effect"] == "Deny" and s["Principal"] == "*" for s in statements), \
        "the bucket policy only denies, to everyone: the grants are the router role's"
    return {s["Sid"]: s for s in statements}


def test_the_files_bucket_refuses_plain_http_and_anything_but_sigv4_to_anyone(template):
    denials = _bucket_denials(template)
    for sid, condition in (("DenyWithoutTls", {"Bool": {"aws:SecureTransport": "false"}}),
                           ("DenyOtherThanSigV4", {"StringNotEquals": {
                               "s3:signatureversion": "AWS4-HMAC-SHA256"}})):
        assert denials[sid]["Action"] == "s3:*", sid
        assert denials[sid]["Resource"] == [BUCKET_ARN, OBJECTS_ARN], sid  # bucket and objects
        assert denials[sid]["Condition"] == condition, sid


def test_only_the_router_touches_objects_and_no_signature_outlives_an_url(template):
    from loopsense.platform.execute.files import URL_TTL_S

    denials = _bucket_denials(template)
    stale = denials["DenySignaturesOlderThanAnUrl"]
    assert (stale["Action"], stale["Resource"]) == ("s3:*", OBJECTS_ARN)
    assert stale["Condition"] == {"NumericGreaterThan": {"s3:signatureAge": URL_TTL_S * 1000}}
    others = denials["OnlyTheRouterTouchesObjects"]
    assert others["Resource"] == OBJECTS_ARN
    assert {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"} <= set(others["Action"])
    assert others["Condition"] == {"ArnNotEquals": {
        "aws:PrincipalArn": {"Fn::GetAtt": ["ExecuteFunctionRole", "Arn"]}}}
    # ... and the router is the one function whose role names the bucket
    granted = {name for name, function in _functions(template).items()
               if "FilesBucket" in str(function["Properties"].get("Policies", ""))}
    assert granted == {"ExecuteFunction"}
