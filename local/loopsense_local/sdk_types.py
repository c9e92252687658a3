"""The SDKs' request and answer types, generated from the API's OpenAPI document
(loopsense/platform/contract/openapi.json): Python TypedDicts (sdk/python: the SDK has no
runtime dependencies, and a TypedDict is a plain dict at run time) and TypeScript interfaces
(sdk/typescript). Written by `scripts/openapi` after the document; tests/sdk/test_sdk_types.py
fails when a committed file differs from what this writes.

One schema, one type, named as the document names it; then the names the SDKs' users import
(PUBLIC), as aliases of those. The JSON Schema the document uses is a small subset (objects,
arrays, unions, enums, consts, scalars, maps), which is why this is a generator of our own
(docs/decisions.md). Deterministic: every list sorted, no clock, no paths.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1].parent
PYTHON = ROOT / "sdk/python/src/loopsense_sdk/types.py"
TYPESCRIPT = ROOT / "sdk/typescript/src/types.ts"
REF = "#/components/schemas/"
# Schemas of the document's own (the error envelope, OTLP's bodies, the document itself) that
# the SDKs decode elsewhere or never: no type.
SKIPPED = ("Any", "ErrorEnvelope", "ExecuteAnswer", "ExecuteRequest", "OpenApiDocument",
           "OtlpStatus", "OtlpSuccess")
# The names the SDKs exported before their types were generated, kept for their users: each
# names a schema, or one property's type ("Schema.property"), or a union ("A | B").
SHARED = {
    "DetectorThreshold": "ThresholdView",
    "DetectorThresholds": "ThresholdsAnswer",
    "DetectorThresholdsUpdate": "ThresholdsPatch",
    "EventsAccepted": "BatchAnswer",
    "ExecutionEnded": "EndAnswer",
    "FailureGroup": "FailureGroupView",
    "FailureGroupDay": "GroupDay",
    "FailureGroupExecution": "AffectedExecution",
    "FailureGroupPage": "FailureGroupsPage",
    "RunAgentView": "AgentView",
    "RunFinding": "MonitorFinding",
    "RunMonitorConfig": "SkillMonitorConfig",
    "RunPage": "RunsPage",
    "RunRecommendation": "Recommendation",
    "RunRule": "MonitorFinding.rule",
    "RunSignal": "Signal",
    "RunStep": "Step",
    "RunSummary": "RunListed",
    "RunTimelineEntry": "TimelineEntry",
    "RunTimelineFinding": "TimelineFinding",
    "RunToolPolicy": "ToolConfig",
    "Severity": "FailureGroupView.severity",
    "TelemetryEvent": "LoopsEvent | SemanticLoopEvent",
    "TimeBudgetConfig": "TimeBudgetAnswer",
    "Usage": "UsageAnswer",
    "UsageCredits": "Credits",
}
PUBLIC_PYTHON = SHARED
PUBLIC_TYPESCRIPT = {
    **SHARED,
    "Briefing": "ContextAnswer",
    "CircuitBreak": "BreakAnswer",
    "DurationSource": "LoopsStats.durationSource",
    "FailureGroupClass": "FailureGroupView.class",
    "LoopSimilarity": "LoopDetectOutput.similarity",
    "LoopSpan": "LoopDetectSpan",
    "LoopsSub": "LoopsFinding.sub",
    "MemoryWrite": "MemorySet",
    "Restore": "RestoreAnswer",
    "RunAction": "Recommendation.action",
    "RunAgent": "Registered",
    "RunConfig": "ConfigAnswer",
    "RunReset": "ResetAnswer",
    "RunSeverity": "MonitorFinding.severity",
    "SignalResult": "SignalAnswer | MonitorOff",
    "StepsResult": "StepsAnswer | MonitorOff",
}


def _name(ref: str) -> str:
    return ref.removeprefix(REF)


def _identifier(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key)


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\W]+", text) if part)


class Types:
    """The document's schemas as named types: objects (with their nested objects named
    Parent + Property) and aliases of everything else."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.schemas: dict[str, dict[str, Any]] = document["components"]["schemas"]
        self.objects: dict[str, dict[str, Any]] = {}
        self.aliases: dict[str, dict[str, Any]] = {}
        for name, schema in sorted(self.schemas.items()):
            if name not in SKIPPED:
                self._collect(name, schema)
        self.objects.update(self.file_inputs())
        self.objects = dict(sorted(self.objects.items()))

    def _collect(self, name: str, schema: dict[str, Any]) -> None:
        if schema.get("type") == "object" and "properties" in schema:
            self.objects[name] = schema
            for key, sub in sorted(schema["properties"].items()):
                if sub.get("type") == "object" and "properties" in sub:
                    self._collect(name + _camel(key), sub)
        else:
            self.aliases[name] = schema

    def nested(self, parent: str, key: str, schema: dict[str, Any]) -> str | None:
        if schema.get("type") == "object" and "properties" in schema:
            return parent + _camel(key)
        return None

    def property_schema(self, path: str) -> dict[str, Any]:
        name, key = path.split(".")
        found: dict[str, Any] = self.schemas[name]["properties"][key]
        return found

    def skills(self) -> list[tuple[str, str, str]]:
        """(skill key, its input schema, its output schema), from POST /v1/execute's bodies."""
        inputs = {v["properties"]["skillKey"]["const"]: _name(v["properties"]["input"]["oneOf"][0]
                                                                ["$ref"])
                  for v in self.schemas["ExecuteRequest"]["oneOf"]}
        # an output is the skill's, or a FileOutput when too large to inline (docs/files.md)
        outputs = {v["properties"]["skillKey"]["const"]: _name(v["properties"]["output"]["oneOf"][0]
                                                                 ["$ref"])
                   for v in self.schemas["ExecuteAnswer"]["oneOf"]}
        return [(key, inputs[key], outputs[key]) for key in sorted(inputs)]

    def file_inputs(self) -> dict[str, dict[str, Any]]:
        """Each skill's input by file (docs/files.md): its events (run_monitor: steps) in the
        file ``fileRef`` names, its other parameters beside it."""
        made = {}
        for _, name, _ in self.skills():
            schema = self.schemas[name]
            properties = {k: v for k, v in schema["properties"].items()
                          if k not in ("events", "steps")}
            made[name.removesuffix("Input") + "FileInput"] = {
                **schema, "properties": {**properties, **self.schemas["FileInput"]["properties"]},
                "required": ["fileRef"],
                "description": f"{name} by file: its events in the file `fileRef` names "
                               "(Client.upload), its other parameters beside it."}
        return made


# --------------------------------------------------------------------------------------------
# Python


@dataclass(frozen=True)
class Spelling:
    """How a language writes the types the walk finds."""

    literal: Callable[[list[Any]], str]  # the values of an enum or a const
    map: str  # of string keys: "{}" is the values' type
    array: Callable[[str], str]
    scalars: dict[str, str]
    anything: str  # a schema of no type: any JSON value
    open_value: str  # the values of a map the schema does not type


PY = Spelling(
    literal=lambda values: "Literal[" + ", ".join(
        repr(v) if isinstance(v, bool) else json.dumps(v) for v in values) + "]",
    map="dict[str, {}]", array=lambda item: f"list[{item}]",
    scalars={"string": "str", "integer": "int", "number": "float", "boolean": "bool",
             "null": "None"}, anything="Any", open_value="Any")
TS = Spelling(
    literal=lambda values: " | ".join(json.dumps(v) for v in values),
    map="Record<string, {}>", array=lambda item: f"({item})[]" if " " in item else f"{item}[]",
    scalars={"string": "string", "integer": "number", "number": "number",
             "boolean": "boolean", "null": "null"}, anything="JsonValue", open_value="unknown")


def _hint(spell: Spelling, schema: dict[str, Any], parent: str = "", key: str = "",
          types: Types | None = None) -> str:
    """The type of ``schema`` (the property ``key`` of ``parent``: a nested object's name)."""
    if "$ref" in schema:
        return _name(schema["$ref"])
    if "const" in schema:
        return spell.literal([schema["const"]])
    if "enum" in schema:
        return spell.literal(schema["enum"])
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return " | ".join(dict.fromkeys(_hint(spell, s, parent, key, types)
                                            for s in schema[union]))
    kind = schema.get("type")
    if kind == "object":
        named = types.nested(parent, key, schema) if types else None
        if named:
            return named
        extra = schema.get("additionalProperties")
        value = (_hint(spell, extra, parent, key, types) if isinstance(extra, dict)
                 else spell.open_value)
        return spell.map.format(value)
    if kind == "array":
        return spell.array(_hint(spell, schema.get("items", {}), parent, key, types))
    return spell.scalars.get(kind or "", spell.anything)


def _py(schema: dict[str, Any], parent: str = "", key: str = "", types: Types | None = None
        ) -> str:
    return _hint(PY, schema, parent, key, types)


def _docstring(schema: dict[str, Any], indent: str) -> list[str]:
    text = schema.get("description")
    if not text:
        return []
    text = " ".join(text.split()).replace('"""', "'''").replace("\\", "\\\\")
    return [f'{indent}"""{text}"""', ""]


def _py_object(name: str, schema: dict[str, Any], types: Types) -> list[str]:
    required = set(schema.get("required", ()))
    fields = []
    for key, sub in sorted(schema["properties"].items()):
        hint = _py(sub, name, key, types)
        fields.append((key, hint if key in required else f"NotRequired[{hint}]"))
    if all(_identifier(key) for key, _ in fields):
        lines = [f"class {name}(TypedDict):", *_docstring(schema, "    ")]
        lines += [f"    {key}: {hint}" for key, hint in fields] or ["    pass"]
        return lines
    # A key Python cannot spell as a name ("class"): the functional form, hints as strings.
    lines = [f"{name} = TypedDict({name!r}, {{"]
    lines += [f"    {key!r}: {hint!r}," for key, hint in fields]
    return [*lines, "})"]


def python(document: dict[str, Any]) -> str:
    types = Types(document)
    out = [
        '"""The API\'s request and answer types, as they travel on the wire (camelCase kept):',
        "generated from its OpenAPI document by `scripts/openapi` (loopsense_local.sdk_types)",
        "in the loopsense repository; do not edit. TypedDicts: plain dicts at run time",
        "(``json.dumps`` them, index them), checked by mypy/pyright. The runs API's answers are",
        'also dataclasses of their own (loopsense_sdk.runs), built from these."""',
        "",
        "# ruff: noqa: E501",
        "from __future__ import annotations",
        "",
        "from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar",
        "",
    ]
    names = sorted({*types.objects, *types.aliases, *PUBLIC_PYTHON, "ExecuteResponse",
                    "SkillKey"})
    out += ["__all__ = [", *[f"    {n!r}," for n in names], "]", ""]
    skills = types.skills()
    out += ["SkillKey = Literal[" + ", ".join(json.dumps(k) for k, _, _ in skills) + "]",
            'OutputT = TypeVar("OutputT")', "", ""]
    for name, schema in sorted(types.objects.items()):
        out += [*_py_object(name, schema, types), "", ""]
    out += ["class ExecuteResponse(TypedDict, Generic[OutputT]):",
            '    """The 200 answer of ``POST /v1/execute``; ``output`` is the skill\'s own: '
            + ", ".join(f"{o} ({k})" for k, _, o in skills) + '."""', "",
            "    billing: Billing", "    executionId: str", "    output: OutputT",
            "    skillKey: SkillKey", "    skillVersion: str", "", ""]
    aliases = _aliases(PY, types, PUBLIC_PYTHON)
    out += _ordered_aliases(aliases, lambda name, hint: f"{name} = {hint}")
    return "\n".join(out).rstrip("\n") + "\n"


def _aliases(spell: Spelling, types: Types, public: dict[str, str]) -> dict[str, str]:
    """The document's non-object schemas, then the public names (a "Schema.property" names
    that property's type)."""
    aliases = {name: _hint(spell, schema, name, "", types)
               for name, schema in types.aliases.items()}
    for name, target in public.items():
        aliases[name] = (_hint(spell, types.property_schema(target), "", "", types)
                         if "." in target else target)
    return aliases


def _ordered_aliases(aliases: dict[str, str], line: Callable[[str, str], str]) -> list[str]:
    """Aliases after what they name (Python evaluates them at once): by dependency, then
    name."""
    done: list[str] = []
    pending = dict(sorted(aliases.items()))
    while pending:
        ready = [n for n, hint in pending.items()
                 if not any(re.search(rf"\b{other}\b", hint) for other in pending if other != n)]
        if not ready:
            raise ValueError(f"aliases that name each other: {sorted(pending)}")
        for name in ready:
            done.append(line(name, pending.pop(name)))
    return done


# --------------------------------------------------------------------------------------------
# TypeScript


def _ts(schema: dict[str, Any], parent: str = "", key: str = "", types: Types | None = None
        ) -> str:
    return _hint(TS, schema, parent, key, types)


def _jsdoc(schema: dict[str, Any], indent: str) -> list[str]:
    text = schema.get("description")
    return [f"{indent}/** {' '.join(text.split()).replace('*/', '* /')} */"] if text else []


def typescript(document: dict[str, Any]) -> str:
    types = Types(document)
    out = [
        "// The API's request and answer types, as they travel on the wire: generated from its",
        "// OpenAPI document by `scripts/openapi` (loopsense_local.sdk_types) in the loopsense",
        "// repository; do not edit.",
        "",
        "/** Any JSON value. */",
        "export type JsonValue = string | number | boolean | null | JsonValue[] | "
        "{ [key: string]: JsonValue };",
        "",
    ]
    for name, schema in sorted(types.objects.items()):
        if name.endswith("FileInput"):  # FileInput<I> below says each
            continue
        required = set(schema.get("required", ()))
        out += [*_jsdoc(schema, ""), f"export interface {name} {{"]
        for key, sub in sorted(schema["properties"].items()):
            spelled = key if re.fullmatch(r"[A-Za-z_$][\w$]*", key) else json.dumps(key)
            out.append(f"  {spelled}{'' if key in required else '?'}: "
                       f"{_ts(sub, name, key, types)};")
        out += ["}", ""]
    skills = types.skills()
    out += ["/** The skills POST /v1/execute runs: each one's input and output. */",
            "export interface SkillMap {",
            *[f"  {json.dumps(k)}: {{ input: {i}; output: {o} }};" for k, i, o in skills],
            "}", "",
            "export type SkillKey = keyof SkillMap;",
            "/** A skill's input by file (Client.upload): its events (agent.run_monitor: its "
            "steps) in the file",
            " * the ref names, its other parameters beside it (docs/files.md). */",
            'export type FileInput<I> = Omit<I, "events" | "steps"> & { fileRef: string };',
            "/** A v1 skill's input type; `unknown` for other skill keys (Client.executeAny). */",
            'export type SkillInput<K extends string> = K extends SkillKey ? SkillMap[K]["input"]'
            " : unknown;",
            "/** A v1 skill's output type; `unknown` for other skill keys (Client.executeAny). */",
            "export type SkillOutput<K extends string> = K extends SkillKey ? "
            'SkillMap[K]["output"] : unknown;', "",
            "/** The 200 answer of POST /v1/execute. */",
            "export interface ExecuteResponse<K extends string = string> {",
            "  billing: Billing;", "  executionId: string;", "  output: SkillOutput<K>;",
            "  skillKey: K;", "  skillVersion: string;", "}", ""]
    aliases = _aliases(TS, types, PUBLIC_TYPESCRIPT)
    out += [f"export type {name} = {hint};" for name, hint in sorted(aliases.items())]
    return "\n".join(out).rstrip("\n") + "\n"


def render(document: dict[str, Any] | None = None) -> dict[Path, str]:
    """Each generated file and its text, from ``document`` (default: the committed one)."""
    if document is None:
        from loopsense.platform.contract.routes import DOCUMENT

        document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    return {PYTHON: python(document), TYPESCRIPT: typescript(document)}


def write(root: Path = ROOT) -> list[Path]:
    """Write the generated files under ``root`` (a temporary copy in the drift test)."""
    written = []
    for path, text in render().items():
        target = root / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


__all__ = ["python", "render", "typescript", "write"]


if __name__ == "__main__":
    for path in write():
        print(f"wrote {path.relative_to(ROOT)}")
