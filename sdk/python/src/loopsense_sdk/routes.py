"""Every route of the loopsense API this SDK calls: one ``Route`` per (method, path), used by the
method that calls it, so the list cannot differ from what the SDK sends. A test compares
``ROUTES`` with the service's own routes (template.yaml, the local gateway) and fails on drift.

Adding a route: a constant here, a method that calls ``send(ROUTE.path(...), ...)``, its types
in loopsense_sdk.types.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

__all__ = ["ROUTES", "Route"]


@dataclass(frozen=True)
class Route:
    method: str
    template: str  # "/v1/runs/{runId}/memory/{key}", as the service names it

    def path(self, **params: str) -> str:
        """The path with each ``{name}`` filled by one quoted segment (``/`` quoted too: a
        failure-group signature holds one). A missing or extra parameter is a bug: KeyError."""
        names = re.findall(r"\{(\w+)\}", self.template)
        if sorted(names) != sorted(params):
            raise KeyError(f"{self.template} takes {names}")
        return re.sub(r"\{(\w+)\}",
                      lambda m: urllib.parse.quote(params[m.group(1)], safe=":"), self.template)


EXECUTE = Route("POST", "/v1/execute")
FILES = Route("POST", "/v1/files")
PLAYBOOK = Route("GET", "/v1/playbooks/{name}")

# runs (docs/runs.md, docs/recover.md)
RUN_AGENTS = Route("POST", "/v1/runs/{runId}/agents")
RUN_STEPS = Route("POST", "/v1/runs/{runId}/steps")
RUN_SIGNAL = Route("GET", "/v1/runs/{runId}/signal")
RUN_RESET = Route("POST", "/v1/runs/{runId}/reset")
RUN_CONFIG = Route("PUT", "/v1/runs/{runId}/config")
RUN_MEMORY_PUT = Route("PUT", "/v1/runs/{runId}/memory/{key}")
RUN_MEMORY_GET = Route("GET", "/v1/runs/{runId}/memory/{key}")
RUN_MEMORY_DELETE = Route("DELETE", "/v1/runs/{runId}/memory/{key}")
RUN_MEMORY = Route("GET", "/v1/runs/{runId}/memory")
RUN_LESSONS_ADD = Route("POST", "/v1/runs/{runId}/lessons")
RUN_LESSONS = Route("GET", "/v1/runs/{runId}/lessons")
RUN_EVENTS = Route("GET", "/v1/runs/{runId}/events")
RUN_CIRCUIT_BREAK = Route("POST", "/v1/runs/{runId}/circuit-break")
RUN_SNAPSHOT = Route("GET", "/v1/runs/{runId}/snapshots/{snapshotId}")
RUN_RESTORE = Route("POST", "/v1/runs/{runId}/snapshots/{snapshotId}/restore")
RUN_CONTEXT = Route("POST", "/v1/runs/{runId}/context")

# telemetry and failure groups (docs/failure-groups.md)
EXECUTION_EVENTS = Route("POST", "/v1/executions/{executionId}/events")
EXECUTION_END = Route("POST", "/v1/executions/{executionId}/end")
TRACES = Route("POST", "/v1/traces")
LOGS = Route("POST", "/v1/logs")
FAILURE_GROUPS = Route("GET", "/v1/failure-groups")
FAILURE_GROUP = Route("GET", "/v1/failure-groups/{signature}")

# tenant settings (docs/failure-groups.md, docs/thresholds.md)
SEVERITY_ROUTING_GET = Route("GET", "/v1/severity-routing")
SEVERITY_ROUTING_PUT = Route("PUT", "/v1/severity-routing")
TELEMETRY_SETTINGS_GET = Route("GET", "/v1/telemetry-settings")
TELEMETRY_SETTINGS_PUT = Route("PUT", "/v1/telemetry-settings")
DETECTOR_THRESHOLDS_GET = Route("GET", "/v1/detector-thresholds")
DETECTOR_THRESHOLDS_PUT = Route("PUT", "/v1/detector-thresholds")
TIME_BUDGET_GET = Route("GET", "/v1/me/time-budget-config")
TIME_BUDGET_PUT = Route("PUT", "/v1/me/time-budget-config")

# reading runs, usage (docs/runs.md "Reading runs", docs/dashboard.md)
RUNS_LIST = Route("GET", "/v1/runs")
RUN_GET = Route("GET", "/v1/runs/{runId}")
USAGE = Route("GET", "/v1/usage")

ROUTES: tuple[Route, ...] = tuple(sorted(
    (value for value in list(globals().values()) if isinstance(value, Route)),
    key=lambda r: (r.template, r.method)))
