"""The DynamoDB tables, by their logical ids in template.yaml, and creating them from it.

template.yaml is the single definition of every table's keys, indexes and TTL: the local server
and the tests create their tables from it, so the two never drift.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import yaml

from loopsense.settings import Settings, env_name

# template.yaml logical id -> the Settings field (and LOOPSENSE_* variable) holding its name.
TABLES: dict[str, str] = {
    "TenantsTable": "tenants_table",
    "ApiKeysTable": "api_keys_table",
    "PlansTable": "plans_table",
    "UsageTable": "usage_table",
    "RateLimitsTable": "rate_limits_table",
    "IdempotencyTable": "idempotency_table",
    "TelemetryTable": "telemetry_table",
    "RunsTable": "runs_table",
}


def local_table_name(field_name: str) -> str:
    """The name a local store gives a table: tenants_table -> loopsense-tenants."""
    return "loopsense-" + field_name.removesuffix("_table").replace("_", "-")


def use_local_tables(environ: MutableMapping[str, str] = os.environ) -> None:
    """Name every table for a local store (the embedded one, moto, a test's), unless the
    environment already names it: on Lambda the template names them, and nothing defaults."""
    for field_name in TABLES.values():
        environ.setdefault(env_name(field_name), local_table_name(field_name))


REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "template.yaml"


class _TemplateLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short-form tags (!Ref, !GetAtt, !Sub...) read as plain data."""


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {suffix: value}


_TemplateLoader.add_multi_constructor("!", _any_tag)


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return dict(yaml.load(handle, Loader=_TemplateLoader))  # noqa: S506 - SafeLoader subclass


def table_definitions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::DynamoDB::Table"
    }


def create_tables(client: Any, settings: Settings, template: dict[str, Any] | None = None) -> None:
    """Create every table of the template that does not exist yet, add the indexes a table
    kept from an earlier version lacks, and turn its TTL on where the template does and the
    table has it off (idempotent)."""
    existing = set(client.list_tables().get("TableNames", []))
    for logical_id, props in table_definitions(template or load_template()).items():
        name = getattr(settings, TABLES[logical_id])
        if name not in existing:
            _create_table(client, name, props)
        else:
            _add_indexes(client, name, props)
        ttl = props.get("TimeToLiveSpecification")
        if not (ttl and ttl.get("Enabled")):
            continue
        status = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if status["TimeToLiveStatus"] != "ENABLED":
            client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )


def _add_indexes(client: Any, name: str, props: dict[str, Any]) -> None:
    """The template's global secondary indexes the table does not have yet (a data dir made
    before they existed): created, with their keys' attribute definitions."""
    have = {i["IndexName"] for i in client.describe_table(TableName=name)["Table"]
            .get("GlobalSecondaryIndexes", [])}
    missing = [i for i in props.get("GlobalSecondaryIndexes", []) if i["IndexName"] not in have]
    for index in missing:  # DynamoDB takes one index creation per UpdateTable
        keys = {k["AttributeName"] for k in index["KeySchema"]}
        client.update_table(
            TableName=name, GlobalSecondaryIndexUpdates=[{"Create": index}],
            AttributeDefinitions=[d for d in props["AttributeDefinitions"]
                                  if d["AttributeName"] in keys])


def _create_table(client: Any, name: str, props: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {
        "TableName": name,
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if "GlobalSecondaryIndexes" in props:
        kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    client.create_table(**kwargs)
