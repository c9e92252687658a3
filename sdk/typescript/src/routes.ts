/**
 * Every route of the loopsense API this SDK calls: one Route per (method, path), used by the
 * method that calls it, so the list cannot differ from what the SDK sends. A test compares
 * ROUTES with the service's own routes (template.yaml, the local gateway) and fails on drift.
 * Adding a route: a constant here, a method that calls `client.request(ROUTE, ...)`, its types
 * in types.ts.
 */

export interface Route {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  /** "/v1/runs/{runId}/memory/{key}", as the service names it. */
  readonly template: string;
}

const route = (method: Route["method"], template: string): Route => Object.freeze({ method, template });

/** The path with each `{name}` filled by one encoded segment (`/` encoded: a failure-group
 * signature holds one; `:` kept, a run id character). A missing parameter throws. */
export function routePath(r: Route, params: Record<string, string> = {}): string {
  return r.template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`${r.template} needs ${name}`);
    return encodeURIComponent(value).replace(/%3A/gi, ":");
  });
}

export const EXECUTE = route("POST", "/v1/execute");
export const FILES = route("POST", "/v1/files");
export const PLAYBOOK = route("GET", "/v1/playbooks/{name}");

// runs (docs/runs.md, docs/recover.md)
export const RUN_AGENTS = route("POST", "/v1/runs/{runId}/agents");
export const RUN_STEPS = route("POST", "/v1/runs/{runId}/steps");
export const RUN_SIGNAL = route("GET", "/v1/runs/{runId}/signal");
export const RUN_RESET = route("POST", "/v1/runs/{runId}/reset");
export const RUN_CONFIG = route("PUT", "/v1/runs/{runId}/config");
export const RUN_MEMORY_PUT = route("PUT", "/v1/runs/{runId}/memory/{key}");
export const RUN_MEMORY_GET = route("GET", "/v1/runs/{runId}/memory/{key}");
export const RUN_MEMORY_DELETE = route("DELETE", "/v1/runs/{runId}/memory/{key}");
export const RUN_MEMORY = route("GET", "/v1/runs/{runId}/memory");
export const RUN_LESSONS_ADD = route("POST", "/v1/runs/{runId}/lessons");
export const RUN_LESSONS = route("GET", "/v1/runs/{runId}/lessons");
export const RUN_EVENTS = route("GET", "/v1/runs/{runId}/events");
export const RUN_CIRCUIT_BREAK = route("POST", "/v1/runs/{runId}/circuit-break");
export const RUN_SNAPSHOT = route("GET", "/v1/runs/{runId}/snapshots/{snapshotId}");
export const RUN_RESTORE = route("POST", "/v1/runs/{runId}/snapshots/{snapshotId}/restore");
export const RUN_CONTEXT = route("POST", "/v1/runs/{runId}/context");

// telemetry and failure groups (docs/failure-groups.md)
export const EXECUTION_EVENTS = route("POST", "/v1/executions/{executionId}/events");
export const EXECUTION_END = route("POST", "/v1/executions/{executionId}/end");
export const TRACES = route("POST", "/v1/traces");
export const LOGS = route("POST", "/v1/logs");
export const FAILURE_GROUPS = route("GET", "/v1/failure-groups");
export const FAILURE_GROUP = route("GET", "/v1/failure-groups/{signature}");

// tenant settings (docs/failure-groups.md, docs/thresholds.md)
export const SEVERITY_ROUTING_GET = route("GET", "/v1/severity-routing");
export const SEVERITY_ROUTING_PUT = route("PUT", "/v1/severity-routing");
export const TELEMETRY_SETTINGS_GET = route("GET", "/v1/telemetry-settings");
export const TELEMETRY_SETTINGS_PUT = route("PUT", "/v1/telemetry-settings");
export const DETECTOR_THRESHOLDS_GET = route("GET", "/v1/detector-thresholds");
export const DETECTOR_THRESHOLDS_PUT = route("PUT", "/v1/detector-thresholds");
export const TIME_BUDGET_GET = route("GET", "/v1/me/time-budget-config");
export const TIME_BUDGET_PUT = route("PUT", "/v1/me/time-budget-config");

// reading runs, usage (docs/runs.md "Reading runs", docs/dashboard.md)
export const RUNS_LIST = route("GET", "/v1/runs");
export const RUN_GET = route("GET", "/v1/runs/{runId}");
export const USAGE = route("GET", "/v1/usage");

export const ROUTES: readonly Route[] = Object.freeze([
  EXECUTE, FILES, PLAYBOOK, RUN_AGENTS, RUN_STEPS, RUN_SIGNAL, RUN_RESET, RUN_CONFIG, RUN_MEMORY_PUT,
  RUN_MEMORY_GET, RUN_MEMORY_DELETE, RUN_MEMORY, RUN_LESSONS_ADD, RUN_LESSONS, RUN_EVENTS,
  RUN_CIRCUIT_BREAK, RUN_SNAPSHOT, RUN_RESTORE, RUN_CONTEXT, EXECUTION_EVENTS, EXECUTION_END,
  TRACES, LOGS, FAILURE_GROUPS, FAILURE_GROUP, SEVERITY_ROUTING_GET, SEVERITY_ROUTING_PUT,
  TELEMETRY_SETTINGS_GET, TELEMETRY_SETTINGS_PUT, DETECTOR_THRESHOLDS_GET, DETECTOR_THRESHOLDS_PUT,
  TIME_BUDGET_GET, TIME_BUDGET_PUT, RUNS_LIST, RUN_GET, USAGE,
]);
