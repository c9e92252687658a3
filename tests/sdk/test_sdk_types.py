"""The SDKs' types are generated from the API's OpenAPI document (loopsense_local.sdk_types,
run by scripts/openapi): regenerated into a temporary folder, each committed file is the same
bytes; the generator is deterministic; and the names the SDKs exported before the generation
are still exported (as aliases where the document names the type otherwise)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import loopsense_sdk

from loopsense.platform.contract.routes import DOCUMENT
from loopsense_local import sdk_types

REPO = Path(__file__).resolve().parents[2]
# What sdk/typescript/src/index.ts and loopsense_sdk/__init__.py exported before the types
# were generated (a user's import must keep working).
KEPT_PYTHON = ("Billing", "DetectorThreshold", "DetectorThresholds", "DetectorThresholdsUpdate",
               "EventsAccepted", "ExecuteResponse", "ExecutionEnded", "FailureGroup",
               "FailureGroupDay", "FailureGroupDetail", "FailureGroupExecution",
               "FailureGroupPage", "FileOutput", "FileUpload", "LoopDetectEvent",
               "LoopDetectFileInput", "LoopsFileInput", "RunMonitorFileInput",
               "SemanticLoopFileInput", "LoopDetectInput",
               "LoopDetectOutput", "LoopDetectSpan", "LoopsFinding", "LoopsInput", "LoopsOutput",
               "LoopsStats", "LoopsThresholds", "Playbook", "RunAgentView", "RunDetail",
               "RunFinding", "RunMonitorConfig", "RunMonitorInput", "RunMonitorOutput",
               "RunPage", "RunRecommendation", "RunRule", "RunSignal", "RunStep", "RunSummary",
               "RunTimelineEntry", "RunTimelineFinding", "RunToolPolicy", "SemanticLoopGroup",
               "SemanticLoopInput", "SemanticLoopOutput", "SemanticLoopThresholds", "Severity",
               "SeverityRouting", "SkillKey", "TelemetryEvent", "TelemetrySettings",
               "TimeBudgetConfig", "Usage", "UsageDay")
KEPT_TYPESCRIPT = ("JsonValue", "LoopDetectEvent", "LoopSimilarity", "LoopDetectInput",
                   "LoopSpan", "LoopDetectOutput", "SemanticLoopEvent", "SemanticLoopInput",
                   "SemanticLoopGroup", "SemanticLoopOutput", "LoopsEvent", "LoopsThresholds",
                   "LoopsInput", "LoopsSub", "DurationSource", "LoopsFinding", "LoopsStats",
                   "LoopsOutput", "RunRule", "RunSeverity", "RunAction", "RunStep",
                   "RunToolPolicy", "RunMonitorConfig", "RunMonitorInput", "RunFinding",
                   "RunRecommendation", "RunSignal", "RunTimelineEntry", "RunMonitorOutput",
                   "SkillMap", "SkillKey", "SkillInput", "SkillOutput", "Billing",
                   "ExecuteResponse", "Retention", "RunAgent", "StepsResult", "SignalResult",
                   "RunReset", "RunConfig", "MemoryWrite", "Lesson", "RunEvent", "CircuitBreak",
                   "Restore", "Briefing", "EventsAccepted", "ExecutionEnded", "Severity",
                   "FailureGroupClass", "FailureGroup", "FailureGroupPage", "Playbook",
                   "FailureGroupDetail", "SeverityRouting", "TelemetrySettings",
                   "DetectorThreshold", "DetectorThresholds", "DetectorThresholdsUpdate",
                   "TimeBudgetConfig", "RunAgentView", "RunSummary", "RunPage", "RunDetail",
                   "FileUpload", "Usage", "FileInput", "FileOutput")


def test_the_committed_types_are_what_the_document_generates(tmp_path):
    for written in sdk_types.write(tmp_path):
        committed = REPO / written.relative_to(tmp_path)
        assert written.read_bytes() == committed.read_bytes(), (
            f"{committed.relative_to(REPO)} is stale: run scripts/openapi")


def test_the_generator_is_deterministic_and_follows_the_document():
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    first = sdk_types.typescript(document)
    assert first == sdk_types.typescript(json.loads(json.dumps(document)))
    # a schema the document gains is a type in both SDKs, a property it drops is gone
    document["components"]["schemas"]["UsageDay"]["properties"].pop("bySkill")
    document["components"]["schemas"]["Extra"] = {
        "type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    python, typescript = sdk_types.python(document), sdk_types.typescript(document)
    assert "class Extra(TypedDict):\n    n: int" in python
    assert "export interface Extra {\n  n: number;\n}" in typescript
    day = re.search(r"export interface UsageDay \{[^}]*\}", typescript)
    assert day and "bySkill" not in day.group(0)


def test_the_names_users_imported_are_still_exported():
    assert set(KEPT_PYTHON) <= set(dir(loopsense_sdk))
    generated = (REPO / "sdk/typescript/src/types.ts").read_text(encoding="utf-8")
    exported = set(re.findall(r"^export (?:interface|type) (\w+)", generated, re.MULTILINE))
    assert set(KEPT_TYPESCRIPT) <= exported, sorted(set(KEPT_TYPESCRIPT) - exported)
    assert "export type * from \"./types.js\";" in (
        REPO / "sdk/typescript/src/index.ts").read_text(encoding="utf-8")
