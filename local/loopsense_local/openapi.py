"""The API's OpenAPI 3.1 document, generated from the code: template.yaml's HTTP API routes (the
ones the local gateway serves too), each feature's CONTRACTS (platform/http/contract.py), the
pydantic models the routes validate with, and the catalog (skills, their codes and thresholds,
plans). Written by `scripts/openapi` to loopsense/platform/contract/openapi.json, which the stack
and `loopsense serve` answer at GET /openapi.json; tests/unit/test_openapi.py fails when the
committed file differs from what this builds.

Local tooling only: it imports every feature (which no Lambda does) and reads template.yaml.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from loopsense.errors import ERRORS
from loopsense.platform.access.answers import Billing
from loopsense.platform.execute.files import FILE_REF, REF_FIELD, FileOutput
from loopsense.platform.http.contract import AUTHORIZED_ERRORS, Contract
from loopsense_local.gateway import template_routes
from loopsense_local.tables import load_template

# Every feature module that declares CONTRACTS beside its ROUTES.
FEATURES = (
    "loopsense.platform.execute.pipeline",
    "loopsense.platform.runs.routes",
    "loopsense.platform.telemetry.routes",
    "loopsense.platform.settings.routes",
    "loopsense.platform.usage.routes",
    "loopsense.platform.playbooks.routes",
    "loopsense.platform.dashboard.files",
    "loopsense.platform.contract.routes",
)
REF = "#/components/schemas/{model}"
# Any route may answer it locally: `loopsense serve` at its concurrency limit.
EVERY_ROUTE_ERRORS = ("INTERNAL_ERROR", "SERVER_BUSY")
HEADERS: dict[str, Any] = {
    "X-Request-Id": {"description": "this request's id (also `requestId` in an error)",
                     "schema": {"type": "string"}},
    "Retry-After": {"description": "seconds to wait before retrying (retryable errors)",
                    "schema": {"type": "integer", "minimum": 0}},
}


def contracts() -> dict[str, Contract]:
    found: dict[str, Contract] = {}
    for name in FEATURES:
        found.update(importlib.import_module(name).CONTRACTS)
    return found


def _model(ref: str) -> Any:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _skill_models() -> list[tuple[Any, Any, Any]]:
    """(skill, its input model, its output model): `<Name>Input`, `<Name>Output` of the skill's
    module (docs/adding-a-skill.md)."""
    from loopsense.platform.access.catalog import SKILLS

    out = []
    for skill in SKILLS:
        module = importlib.import_module(skill.module)
        name = _camel(skill.name)
        if not hasattr(module, f"{name}Output"):
            raise ValueError(f"{skill.module} has no {name}Output: its answer's shape")
        out.append((skill, getattr(module, f"{name}Input"), getattr(module, f"{name}Output")))
    return out


def _threshold_schema(threshold: Any) -> dict[str, Any]:
    kind = {bool: "boolean", int: "integer", float: "number"}[threshold.kind]
    schema: dict[str, Any] = {"type": kind, "default": threshold.default}
    if kind != "boolean":
        schema.update(minimum=threshold.low, maximum=threshold.high)
    return schema


def _catalog_schemas(skills: list[tuple[Any, Any, Any]]) -> dict[str, Any]:
    """The bodies whose rules live in the catalog and the features' constants, not a model."""
    from loopsense.core.monitor.config import THRESHOLD_SPECS
    from loopsense.platform.telemetry.failure_groups import CLASSES, RETENTION, SEVERITIES
    from loopsense.skills.run_monitor import Settings
    from loopsense.skills.thresholds import THRESHOLDS

    settings = TypeAdapter(Settings).json_schema(ref_template=REF)
    objective = settings["properties"].pop("objective_embedding")  # set per agent here
    nested = settings.pop("$defs", {})  # its TypedDicts (ToolConfig): components of their own
    monitor = {**settings, "title": "MonitorConfig", "properties": {
        **settings["properties"],
        **{spec[0]: _threshold_schema(THRESHOLDS[spec[0]]) for spec in THRESHOLD_SPECS}}}
    nullable = {name: {"anyOf": [_threshold_schema(t), {"type": "null"}],
                       "description": f"used by {_used_by(name)}"}
                for name, t in sorted(THRESHOLDS.items())}
    return {
        "ExecuteRequest": {"oneOf": [{
            "type": "object", "additionalProperties": False, "required": ["skillKey", "input"],
            "properties": {"skillKey": {"const": skill.key},
                           "version": {"const": skill.version},
                           "input": {"oneOf": [{"$ref": REF.format(model=model.__name__)},
                                               {"$ref": REF.format(model="FileInput")}]}},
            "title": f"Execute {skill.key}"} for skill, model, _ in skills]},
        # docs/files.md: the skill's events in a file POST /v1/files made, its other
        # parameters beside the ref
        "FileInput": {"type": "object", "required": [REF_FIELD], "title": "FileInput",
                      "properties": {REF_FIELD: {"type": "string",
                                                 "pattern": f"^{FILE_REF.pattern}$"}}},
        "ExecuteAnswer": {"oneOf": [{
            "type": "object", "additionalProperties": False,
            "required": ["executionId", "skillKey", "skillVersion", "output", "billing"],
            "properties": {
                "executionId": {"type": "string", "format": "uuid"},
                "skillKey": {"const": skill.key}, "skillVersion": {"const": skill.version},
                # docs/files.md: an output too large to inline is a FileOutput
                "output": {"oneOf": [{"$ref": REF.format(model=output.__name__)},
                                     {"$ref": REF.format(model="FileOutput")}]},
                "billing": {"$ref": REF.format(model="Billing")}},
            "title": f"Answer of {skill.key}"} for skill, _, output in skills]},
        "ThresholdsPatch": {"type": "object", "additionalProperties": False,
                            "properties": nullable},
        "TimeBudgetPatch": {"type": "object", "additionalProperties": False,
                            "required": ["time_budget_ms"],
                            "properties": {"time_budget_ms": nullable["time_budget_ms"]}},
        **nested,
        "MonitorConfig": monitor,
        # agent.run_monitor's ``config``: a run's, with the objective (stateless: per call)
        "SkillMonitorConfig": {**monitor, "title": "SkillMonitorConfig", "properties": {
            **monitor["properties"], "objective_embedding": objective}},
        "SeverityRouting": {"type": "object", "additionalProperties": False, "properties": {
            cls: {"enum": list(SEVERITIES)} for cls in CLASSES}},
        "TelemetrySettings": {"type": "object", "additionalProperties": False, "properties": {
            name: {"type": "integer", "minimum": low, "maximum": high, "default": default}
            for name, (_, low, high, default) in RETENTION.items()}},
        "OtlpStatus": {
            "type": "object", "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                           "details": {"type": "array"}},
            "description": "OTLP's refusal (google.rpc.Status, as JSON here): the envelope's "
                           "code leads the message"},
        "OtlpSuccess": {
            "type": "object", "additionalProperties": False,
            "properties": {"partialSuccess": {
                "type": "object", "additionalProperties": False, "properties": {
                    "rejectedSpans": {"type": "string", "pattern": "^[0-9]+$"},
                    "rejectedLogRecords": {"type": "string", "pattern": "^[0-9]+$"},
                    "errorMessage": {"type": "string"}}}},
            "description": "OTLP's export answer (ExportTraceServiceResponse or "
                           "ExportLogsServiceResponse, as JSON: int64s are strings)"},
        "OpenApiDocument": {
            "type": "object", "required": ["openapi", "info", "paths", "components"],
            "properties": {"openapi": {"type": "string", "pattern": "^3\\.1\\."}},
            "description": "an OpenAPI 3.1 document: this one"},
        "Empty": {"type": "object", "additionalProperties": False, "maxProperties": 0},
        "Any": {"description": "any JSON value"},
        "ErrorEnvelope": {
            "type": "object", "additionalProperties": False, "required": ["error", "requestId"],
            "properties": {"requestId": {"type": "string"}, "error": {
                "type": "object", "additionalProperties": False,
                "required": ["code", "message", "retryable", "next", "details"],
                "properties": {
                    "code": {"enum": sorted(ERRORS)},
                    "message": {"type": "string"}, "retryable": {"type": "boolean"},
                    "next": {"type": "string"},
                    "details": {"type": "array", "items": {
                        "type": "object", "additionalProperties": False,
                        "required": ["path", "issue"],
                        "properties": {"path": {"type": "string"},
                                       "issue": {"type": "string"}}}}}}},
            "description": "every refusal, of every route: messages and details name fields "
                           "and limits, never the caller's values"},
    }


def _used_by(name: str) -> str:
    from loopsense.platform.access.catalog import used_by

    return used_by(name)


def _errors(route: str, contract: Contract, authorized: bool) -> list[str]:
    codes = set(contract.errors) | set(EVERY_ROUTE_ERRORS)
    if authorized:
        codes |= set(AUTHORIZED_ERRORS)
    if route == "POST /v1/execute":
        from loopsense.platform.access.catalog import SKILLS

        codes |= {code for skill in SKILLS for code in skill.errors}
    unknown = codes - set(ERRORS)
    if unknown:
        raise ValueError(f"{route} declares unknown codes {sorted(unknown)}")
    return sorted(codes)


def _error_responses(codes: list[str], otlp: bool = False) -> dict[str, Any]:
    """Per status its codes; OTLP's routes answer them as OTLP's google.rpc.Status."""
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(ERRORS[code].status, []).append(code)
    out: dict[str, Any] = {}
    for status, found in sorted(by_status.items()):
        retryable = [code for code in found if ERRORS[code].retryable]
        lines = [f"- `{code}`{' (retryable)' if ERRORS[code].retryable else ''}: "
                 f"{ERRORS[code].next}" for code in found]
        headers = {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
        if retryable:
            headers["Retry-After"] = {"$ref": "#/components/headers/Retry-After"}
        out[str(status)] = {
            "description": "\n".join(lines),
            "headers": headers,
            "content": {"application/x-protobuf": {"schema": {"type": "string"}},
                        "application/json": {"schema": {
                            "$ref": REF.format(model="OtlpStatus")}}} if otlp else
            {"application/json": {"schema": {"allOf": [
                {"$ref": REF.format(model="ErrorEnvelope")},
                {"properties": {"error": {"properties": {"code": {"enum": found}}}}}]}}}}
    return out


def _body_schema(contract: Contract, schemas: dict[str, Any]) -> dict[str, Any] | None:
    if contract.body:
        refs = [schemas[ref] for ref in contract.body]
        return refs[0] if len(refs) == 1 else {"anyOf": refs}
    if contract.body_schema == "Otlp":
        return {"type": "string", "contentMediaType": "application/x-protobuf"}
    return {"$ref": REF.format(model=contract.body_schema)} if contract.body_schema else None


def _path_patterns() -> dict[str, str]:
    """The ids a path carries, by parameter name: the patterns the code checks them with."""
    from loopsense.platform.runs.monitor import RUN_ID
    from loopsense.platform.runs.recover import ID, KEY
    from loopsense.platform.telemetry.ingest import EXECUTION_ID

    return {"runId": RUN_ID.pattern, "executionId": EXECUTION_ID.pattern, "key": KEY.pattern,
            "snapshotId": ID.pattern}


def _operation(route: Any, contract: Contract, schemas: dict[str, Any]) -> dict[str, Any]:
    method, path = route.route_key.split(" ", 1)
    patterns = _path_patterns()
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True,
         "schema": {"type": "string", "minLength": 1,
                    **({"pattern": patterns[name]} if name in patterns else {})}}
        for name in re.findall(r"\{(\w+)\+?\}", path)]
    params += [{"name": name, "in": "query", "required": False, "description": what,
                "schema": {"type": "string"}} for name, what in contract.query]
    if contract.idempotent:
        params.append({"$ref": "#/components/parameters/Idempotency-Key"})
    operation: dict[str, Any] = {
        "operationId": _operation_id(route.route_key), "summary": contract.summary,
        "tags": [path.split("/")[2] if path.startswith("/v1/") else "public"],
    }
    if params:
        operation["parameters"] = params
    if not route.authorized:
        operation["security"] = []
    body = _body_schema(contract, schemas)
    if body is not None:
        media = "application/json" if contract.body_schema != "Otlp" else contract.media
        content = {media: {"schema": body}}
        if contract.body_schema == "Otlp":
            content["application/json"] = {"schema": {"type": "object"}}
        operation["requestBody"] = {"required": contract.body_schema not in ("Empty",) and
                                    route.route_key.split(" ")[0] != "DELETE", "content": content}
    answer: dict[str, Any]
    if contract.body_schema == "Otlp":
        answer = {"application/x-protobuf": {"schema": {"type": "string"}},
                  "application/json": {"schema": {"$ref": REF.format(model="OtlpSuccess")}}}
    elif contract.media == "application/json":
        answer = {"application/json": {"schema": _answer_schema(route.route_key, contract,
                                                                 schemas)}}
    else:
        answer = {contract.media: {"schema": {"type": "string"}}}
    ok: dict[str, Any] = {"description": "OK", "content": answer, "headers": {
        "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
        if contract.media == "application/json" else {}}
    if contract.links:
        ok["links"] = {_operation_id(target): {"operationId": _operation_id(target),
                                               "parameters": dict(params)}
                       for target, params in contract.links}
    operation["responses"] = {
        str(contract.status): ok,
        **_error_responses(_errors(route.route_key, contract, route.authorized),
                           contract.body_schema == "Otlp"),
    }
    return operation


def _answer_schema(route_key: str, contract: Contract, schemas: dict[str, Any]
                   ) -> dict[str, Any]:
    """A JSON route's 2xx answer: its Contract's model, or a schema the document builds."""
    if route_key == "POST /v1/execute":
        return {"$ref": REF.format(model="ExecuteAnswer")}
    if contract.answer is None:
        raise ValueError(f"{route_key} declares no answer (Contract.answer)")
    if ":" not in contract.answer:
        return {"$ref": REF.format(model=contract.answer)}
    return schemas[contract.answer]


def _operation_id(route_key: str) -> str:
    method, path = route_key.split(" ", 1)
    words = [w for w in re.split(r"[/{}+\-.]", path) if w and w != "v1"]
    return method.lower() + "".join(w[0].upper() + w[1:] for w in words) or method.lower()


def document() -> dict[str, Any]:
    """The whole document: deterministic (sorted keys when written), no clock, no paths."""
    from loopsense.platform.access.catalog import SKILLS

    routes = template_routes(load_template())
    declared = contracts()
    keys = {route.route_key for route in routes}
    if keys != set(declared):
        raise ValueError(f"routes without a contract: {sorted(keys - set(declared))}; "
                         f"contracts of no route: {sorted(set(declared) - keys)}")
    skills = _skill_models()
    refs = sorted({ref for c in declared.values() for ref in (*(c.body or ()), c.answer)
                   if ref and ":" in ref})
    adapters: list[tuple[str, JsonSchemaMode, TypeAdapter[Any]]] = [
        (ref, "validation", TypeAdapter(_model(ref))) for ref in refs]
    adapters += [(model.__name__, "validation", TypeAdapter(model))
                 for _, model, _ in skills]
    adapters += [(output.__name__, "serialization", TypeAdapter(output))
                 for _, _, output in skills]
    adapters.append(("Billing", "serialization", TypeAdapter(Billing)))  # ExecuteAnswer's
    adapters.append(("FileOutput", "serialization", TypeAdapter(FileOutput)))  # and its output's
    top, defs = TypeAdapter.json_schemas(adapters, ref_template=REF)
    schemas = {ref: top[(ref, "validation")] for ref in refs}
    built, catalog = defs.get("$defs", {}), _catalog_schemas(skills)
    if set(built) & set(catalog):
        raise ValueError(f"models named like the document's own schemas: "
                         f"{sorted(set(built) & set(catalog))}")
    components = {**built, **catalog}
    # agent.run_monitor's config is a dict to its model (thresholds are checked by name): the
    # document says what it holds
    components["RunMonitorInput"]["properties"]["config"] = {"anyOf": [
        {"$ref": REF.format(model="SkillMonitorConfig")}, {"type": "null"}], "default": None}
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        method, path = route.route_key.split(" ", 1)
        # OpenAPI has no greedy {name+}: API Gateway's rest-of-the-path is one parameter here.
        paths.setdefault(path.replace("+}", "}"), {})[method.lower()] = _operation(
            route, declared[route.route_key], schemas)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "loopsense",
            "version": "1",
            "description": (
                "Detects stuck AI agents. Every answer is JSON; every refusal is the one error "
                "envelope (components.schemas.ErrorEnvelope) with the codes each route lists. "
                "Skills: " + ", ".join(f"{s.key} {s.version}" for s in SKILLS) + "."),
        },
        "servers": [{"url": "http://127.0.0.1:3000", "description": "loopsense serve"}],
        "security": [{"apiKey": []}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "securitySchemes": {"apiKey": {
                "type": "http", "scheme": "bearer", "bearerFormat": "ls_...",
                "description": "an API key: 'Authorization: Bearer ls_...'"}},
            "headers": HEADERS,
            "parameters": {"Idempotency-Key": {
                "name": "Idempotency-Key", "in": "header", "required": False,
                "description": "a repeat within 24 hours with the same body answers the first "
                               "answer, charged once",
                "schema": {"type": "string", "pattern": r"^[\x21-\x7e]{1,128}$"}}},
            "schemas": dict(sorted(components.items())),
        },
    }


def _sorted_enums(node: Any) -> Any:
    """Every ``enum`` of strings sorted. Python's typing caches a union by equality, and
    ``Literal["a", "b"] == Literal["b", "a"]``: a model built after another module spelled the
    same literal in another order would otherwise change the document with the import order."""
    if isinstance(node, dict):
        return {key: sorted(value) if key == "enum" and isinstance(value, list)
                and all(isinstance(v, str) for v in value)
                else _sorted_enums(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_sorted_enums(value) for value in node]
    return node


def render() -> str:
    """The document as committed: sorted keys and enums, two-space indents, a final newline."""
    return json.dumps(_sorted_enums(document()), indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def write(path: Path | None = None) -> Path:
    from loopsense.platform.contract.routes import DOCUMENT

    target = path or DOCUMENT
    target.write_text(render(), encoding="utf-8")
    return target


__all__ = ["contracts", "document", "render", "write"]


if __name__ == "__main__":
    print(f"wrote {write().name}")
