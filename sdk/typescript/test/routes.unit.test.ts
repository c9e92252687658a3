/**
 * Every route in ROUTES is called by one of the client's methods, with its method and path
 * (ROUTES itself is compared with the service's routes by tests/sdk/test_sdk_routes.py).
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, ROUTES, routePath } from "@loopsense/sdk";

function answerFor(path: string): unknown {
  if (/\/(memory|snapshots\/[^/]+)(\?|$)/.test(path)) return { entries: {}, next: null };
  if (/\/lessons\?/.test(path)) return { lessons: [], next: null };
  if (/\/events\?/.test(path)) return { events: [], next: null };
  if (path.startsWith("/v1/failure-groups?")) return { items: [], nextCursor: null };
  if (path.startsWith("/v1/runs?")) return { items: [], nextCursor: null };
  if (/\/memory\//.test(path)) return { value: 1 };
  return {};
}

test("every route is called by a method, with its method and path", async () => {
  const patterns = ROUTES.map((r) => ({
    route: r, re: new RegExp("^" + r.template.replace(/\{\w+\}/g, "[^/?]+") + "(\\?.*)?$"),
  }));
  const called = new Set<string>();
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const path = String(url).replace("http://loopsense.invalid", "");
    const hit = patterns.find((p) => p.route.method === init?.method && p.re.test(path));
    assert.ok(hit, `${init?.method} ${path} is not in ROUTES`);
    called.add(`${hit.route.method} ${hit.route.template}`);
    return new Response(JSON.stringify(answerFor(path)), { status: 200 });
  };
  const client = new Client({ apiKey: "k", baseUrl: "http://loopsense.invalid", fetch: fetch as typeof globalThis.fetch });
  const { runs, settings } = client;
  await client.execute("agent.loop_detect", { events: [{ action: "a" }, { action: "a" }] });
  await client.playbook("identical_call");
  await client.newFile();
  await client.exportTraces({ resourceSpans: [] });
  await client.exportLogs({ resourceLogs: [] });
  await runs.register("r:1", { agentId: "ari" });
  await runs.steps("r:1", [{ kind: "message", text: "hi" }], { agentId: "ari" });
  await runs.signal("r:1", { agentId: "ari" });
  await runs.reset("r:1");
  await runs.config("r:1", { repeat_warn: 4 });
  await runs.putMemory("r:1", "k", 1);
  await runs.getMemory("r:1", "k");
  await runs.deleteMemory("r:1", "k");
  await runs.memory("r:1");
  await runs.addLesson("r:1", "t");
  await runs.lessons("r:1");
  await runs.events("r:1");
  await runs.circuitBreak("r:1", { reason: "r" });
  await runs.snapshot("r:1", "s");
  await runs.restore("r:1", "s");
  await runs.context("r:1", { query: "q" });
  await client.executions.events("e1", [{ type: "step" }]);
  await client.executions.end("e1");
  await client.failureGroups.list();
  await client.failureGroups.get("loops/identical_call_00000000");
  await settings.severityRouting();
  await settings.setSeverityRouting({ semantic_loop: "info" });
  await settings.telemetrySettings();
  await settings.setTelemetrySettings({ group_retention_days: 30 });
  await settings.detectorThresholds();
  await settings.setDetectorThresholds({ revisit_threshold: 4 });
  await settings.timeBudget();
  await settings.setTimeBudget(null);
  await runs.list({ limit: 5 });
  await runs.get("r:1");
  await client.usage();
  assert.deepEqual([...called].sort(), ROUTES.map((r) => `${r.method} ${r.template}`).sort());
});

test("a path parameter is one segment; a run id's ':' is kept", () => {
  const [group] = ROUTES.filter((r) => r.template === "/v1/failure-groups/{signature}");
  assert.ok(group);
  assert.equal(routePath(group, { signature: "loops/x_1" }), "/v1/failure-groups/loops%2Fx_1");
  const [signal] = ROUTES.filter((r) => r.template === "/v1/runs/{runId}/signal");
  assert.ok(signal);
  assert.equal(routePath(signal, { runId: "sdk:a b" }), "/v1/runs/sdk:a%20b/signal");
  assert.throws(() => routePath(signal, {}), /needs runId/);
});

test("steps, circuitBreak and restore send one Idempotency-Key per call; reads none", async () => {
  const keys: (string | null)[] = [];
  const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    keys.push(new Headers(init?.headers).get("Idempotency-Key"));
    return new Response("{}", { status: 200 });
  };
  const client = new Client({ apiKey: "k", baseUrl: "http://loopsense.invalid", fetch: fetch as typeof globalThis.fetch });
  await client.runs.steps("r", [{ kind: "message" }], { agentId: "a", idempotencyKey: "mine" });
  await client.runs.circuitBreak("r", { reason: "x" });
  await client.runs.signal("r", { agentId: "a" });
  assert.equal(keys[0], "mine");
  assert.match(keys[1] ?? "", /^[0-9a-f-]{36}$/);
  assert.equal(keys[2], null);
});
