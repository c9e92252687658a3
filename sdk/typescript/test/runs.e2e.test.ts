/**
 * client.runs and the other routes against a real `loopsense serve`, started by
 * tests/sdk/test_typescript_sdk.py (env as in e2e.test.ts; skipped without it).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import { Client, NotFoundError, RunAgentNotFoundError } from "@loopsense/sdk";
import type { RunStep } from "@loopsense/sdk";

const env = process.env;
const skip = env.LOOPSENSE_TEST_SCOPED_KEY ? false : "no server (run tests/sdk/test_typescript_sdk.py)";
const CALL: RunStep = { kind: "tool_call", action: "export_status", args: { job: 42 }, result: { state: "pending" }, outcome: "neutral" };

describe("runs against a real server", { skip }, () => {
  const client = new Client({ baseUrl: env.LOOPSENSE_BASE_URL ?? "" });
  const runs = client.runs;

  test("runs are listed newest activity first and read with their recommendation; usage", async () => {
    const run = `ts-read-${randomUUID().slice(0, 8)}`;
    for (let i = 0; i < 6; i++) await runs.steps(run, [CALL], { agentId: "ari" });
    const page = await runs.list({ limit: 1 });
    assert.equal(page.items[0]?.runId, run);
    const listed: string[] = [];
    for await (const summary of runs.all({ pageSize: 2 })) listed.push(summary.runId);
    assert.ok(listed.includes(run) && new Set(listed).size === listed.length);
    const detail = await runs.get(run);
    const signal = await runs.signal(run, { agentId: "ari" });
    assert.deepEqual(detail.agents[0]?.recommendation, signal.signal?.recommendation);
    await assert.rejects(runs.get(`${run}-none`), NotFoundError);
    const usage = await client.usage();
    assert.equal(usage.days.length, 30);
    assert.ok((usage.days.at(-1)?.bySkill["runs.steps"] ?? 0) >= 6);
  });

  test("a repeated call is nudged; signal re-reads it; break and restore keep memory", async () => {
    const run = `ts:${randomUUID().slice(0, 12)}`;
    const agent = await runs.register(run, { agentId: "ari", role: "support" });
    assert.deepEqual([agent.runId, agent.agentId, agent.sequence], [run, "ari", 0]);
    let last;
    for (let i = 0; i < 6; i++) last = await runs.steps(run, [CALL], { agentId: "ari" });
    const on = last && "recommendation" in last ? last : undefined; // the monitor is on
    assert.equal(on?.recommendation.action, "nudge");
    assert.match(on?.recommendation.nudge ?? "", /export_status/);
    const signal = await runs.signal(run, { agentId: "ari" });
    assert.ok(signal.signal?.is_looping);
    assert.deepEqual(signal.signal?.recommendation, on?.recommendation);
    await assert.rejects(runs.signal(run, { agentId: "nobody" }), RunAgentNotFoundError);

    await runs.putMemory(run, "plan", { step: 3 });
    assert.deepEqual(await runs.getMemory(run, "plan"), { step: 3 });
    await runs.addLesson(run, "the export endpoint is slow; poll less", { tags: ["export"] });
    const broken = await runs.circuitBreak(run, { reason: "repeated_tool_call", agentId: "ari" });
    assert.equal(broken.summary.entries, 1);
    assert.deepEqual(await runs.memory(run), {});
    assert.deepEqual(await runs.snapshot(run, broken.snapshotId), { plan: { step: 3 } });
    const restored = await runs.restore(run, broken.snapshotId);
    assert.equal(restored.entries, 1);
    assert.deepEqual(await runs.memory(run), { plan: { step: 3 } });
    await runs.deleteMemory(run, "plan");
    await assert.rejects(runs.getMemory(run, "plan"), NotFoundError);
    const lessons = await runs.lessons(run);
    assert.ok(lessons.some((l) => l.kind === "lesson"));
    assert.ok((await runs.events(run)).some((e) => e.type === "CIRCUIT_BROKEN"));
    const briefing = await runs.context(run, { query: "export", maxTokenBudget: 500 });
    assert.ok(briefing.tokens <= 500);
    assert.equal((await runs.reset(run)).reset[0]?.agentId, "ari");
    assert.equal((await runs.config(run, { repeat_warn: 5 })).config.repeat_warn, 5);
  });

  test("settings, telemetry and a playbook", async () => {
    const thresholds = await client.settings.detectorThresholds();
    assert.ok("revisit_threshold" in thresholds.thresholds);
    assert.ok((await client.settings.timeBudget()).max_time_budget_ms > 0);
    assert.ok(["critical", "warning", "info"].includes((await client.settings.severityRouting()).loops ?? ""));
    assert.ok(((await client.settings.telemetrySettings()).telemetry_retention_days ?? 0) > 0);
    const execution = `ts-${randomUUID().slice(0, 12)}`;
    const added = await client.executions.events(execution, [{ type: "step" }], { idempotencyKey: execution });
    const again = await client.executions.events(execution, [{ type: "step" }], { idempotencyKey: execution });
    assert.deepEqual([added.accepted, added.duplicate, again.duplicate], [1, false, true]);
    assert.equal((await client.executions.end(execution)).ended, true);
    assert.equal((await client.playbook("identical_call")).name, "identical_call");
    const page = await client.failureGroups.list({ limit: 1 });
    assert.ok(Array.isArray(page.items));
    await assert.rejects(client.failureGroups.get("loops/identical_call_00000000"), NotFoundError);
  });

  test("ids holding ':' (sent percent-encoded) reach their run and execution", async () => {
    const run = `ts:colon:${randomUUID().slice(0, 8)}`;
    assert.equal((await runs.putMemory(run, "plan:step", { n: 1 })).created, true);
    assert.deepEqual(await runs.getMemory(run, "plan:step"), { n: 1 });
    const telemetry = client.telemetry(`ts:colon-${randomUUID().slice(0, 8)}`, { batchSize: 2 });
    for (let i = 0; i < 3; i++) telemetry.event("step");
    assert.equal(await telemetry.end(), true);
    assert.equal(telemetry.dropped, 0);
  });
});
