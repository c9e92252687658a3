/**
 * client.telemetry(executionId) without a server: batching in order, one Idempotency-Key per
 * batch kept across its retries, a refused batch dropped, a bounded buffer, end(), and no
 * exception ever reaching the caller. fetch and sleep are injected client options.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Client } from "@loopsense/sdk";

interface Sent { url: string; key: string | null; body: { events?: { type: string; [k: string]: unknown }[] } }

function scripted(statuses: number[]): { client: Client; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    sent.push({ url: String(url), key: headers.get("Idempotency-Key"), body: JSON.parse(String(init?.body)) });
    const status = statuses[Math.min(sent.length, statuses.length) - 1] ?? 200;
    const body = status < 300 ? { fired: [] } : {
      error: { code: status === 503 ? "PLAN_ELIGIBILITY_UNAVAILABLE" : "EXECUTION_EVENTS_INVALID",
        message: "m", retryable: status === 503, next: "n", details: [] }, requestId: "r" };
    return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  };
  const client = new Client({
    apiKey: "ls_test", baseUrl: "http://loopsense.invalid", fetch: fetch as typeof globalThis.fetch,
    maxAttempts: 1, sleep: async () => undefined, random: () => 0,
  });
  return { client, sent };
}

describe("client.telemetry", () => {
  test("events go out in order, in batches, each batch with its own key", async () => {
    const { client, sent } = scripted([200]);
    const telemetry = client.telemetry("run 1", { batchSize: 2, flushIntervalMs: 5 });
    telemetry.llmCall("m", "hello", { timestamp: 1 });
    telemetry.toolCall("search", { q: "x" });
    telemetry.checkpoint("plan", { step: 1 });
    telemetry.event("message");
    telemetry.checkpoint();
    assert.equal(await telemetry.end({ durationMs: 5 }), true);
    const batches = sent.filter((s) => s.url.endsWith("/events"));
    assert.deepEqual(batches.map((b) => b.body.events?.map((e) => e.type)),
      [["llm_call", "tool_call"], ["checkpoint", "message"], ["checkpoint"]]);
    assert.equal(new Set(batches.map((b) => b.key)).size, 3);
    assert.ok(batches.every((b) => b.url === "http://loopsense.invalid/v1/executions/run%201/events"));
    assert.deepEqual(batches[0]?.body.events?.[0], { timestamp: 1, model: "m", user_message: "hello", type: "llm_call" });
    assert.deepEqual(batches[1]?.body.events?.[0]?.metadata, { step: 1 });
    const end = sent[sent.length - 1];
    assert.equal(end?.url, "http://loopsense.invalid/v1/executions/run%201/end");
    assert.deepEqual(end?.body, { durationMs: 5 });
    assert.equal(telemetry.dropped, 0);
  });

  test("a batch that fails retryably is sent again with the same key", async () => {
    const { client, sent } = scripted([503, 503, 200]);
    const telemetry = client.telemetry("r", { batchSize: 1 });
    telemetry.event("x");
    assert.equal(await telemetry.flush(5_000), true);
    assert.equal(sent.length, 3);
    assert.equal(new Set(sent.map((s) => s.key)).size, 1);
    assert.equal(telemetry.dropped, 0);
    telemetry.close();
  });

  test("a refused batch is dropped and counted, not retried", async () => {
    const { client, sent } = scripted([400, 200]);
    const telemetry = client.telemetry("r", { batchSize: 1 });
    telemetry.event("x");
    telemetry.event("y");
    assert.equal(await telemetry.flush(5_000), true);
    assert.equal(sent.length, 2);
    assert.equal(telemetry.dropped, 1);
    telemetry.close();
  });

  test("the buffer is bounded and recording never throws while the service is down", async () => {
    const { client } = scripted([503]);
    const telemetry = client.telemetry("down", { batchSize: 2, maxBuffered: 3, flushIntervalMs: 5 });
    for (let i = 0; i < 10; i++) telemetry.llmCall("m", "again");
    assert.ok(telemetry.dropped >= 7);
    assert.equal(await telemetry.flush(50), false);
    assert.equal(await telemetry.end({ timeoutMs: 20 }), false);
  });

  test("options are checked", () => {
    const { client } = scripted([200]);
    assert.throws(() => client.telemetry("x", { batchSize: 501 }), RangeError);
    assert.throws(() => client.telemetry("x", { flushIntervalMs: 0 }), RangeError);
  });
});
