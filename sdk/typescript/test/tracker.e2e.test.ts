/**
 * The run tracker against a real `loopsense serve` (started by tests/sdk/test_typescript_sdk.py;
 * skipped without it): a looping agent is nudged then stopped; a polling agent is never nudged;
 * with the server stopped, then slowed past the tracker's timeout (a loopback proxy here), each
 * step resolves within the timeout plus a margin, degraded, at most maxPending are kept (the
 * oldest dropped, counted), and once back everything kept arrives once (the server's count);
 * calls made at once are each answered within the timeout from their own call.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";

import { AgentLoopDetected, Client } from "@loopsense/sdk";
import type { StepAnswer, Tracker } from "@loopsense/sdk";

const env = process.env;
const skip = env.LOOPSENSE_TEST_TRACKER_KEY ? false : "no server (run tests/sdk/test_typescript_sdk.py)";
const UPSTREAM = env.LOOPSENSE_BASE_URL ?? "";
// A tenant of its own, on a plan whose rate limit these fast steps never reach: the other test
// files run beside this one and share the development tenant's requests per second.
const apiKey = env.LOOPSENSE_TEST_TRACKER_KEY;
const TIMEOUT_MS = 300;
// Beyond the timeout on a loaded machine; still short of what the bound must catch: a 900 ms
// answer, and the fourth of four queued 180 ms answers (about 780 ms before the bound).
const MARGIN_MS = 400;

/** A loopback proxy: down() closes its port, slow(ms) holds each answer, up() forwards again. */
class FaultProxy {
  port = 0;
  delayMs = 0;
  #server: Server | null = null;

  async up(): Promise<void> {
    this.delayMs = 0;
    if (this.#server !== null) return;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(
          ([k]) => !["host", "content-length", "connection"].includes(k))) as Record<string, string>;
        const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
        void fetch(UPSTREAM + (req.url ?? ""), { method: req.method ?? "GET", headers, body }).then(async (answer) => {
          const text = await answer.text();
          const delay = this.delayMs;
          setTimeout(() => {
            res.writeHead(answer.status, { "Content-Type": "application/json" });
            res.end(text);
          }, delay);
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async down(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async slow(ms: number): Promise<void> {
    await this.up();
    this.delayMs = ms;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
}

const looping = (tracker: Tracker): Promise<StepAnswer> =>
  tracker.toolCall("export_status", { job: 42 }, { result: { state: "pending" } });

async function timed(tracker: Tracker, steps: number): Promise<{ answers: StepAnswer[]; slowest: number }> {
  const answers: StepAnswer[] = [];
  let slowest = 0;
  for (let i = 0; i < steps; i++) {
    const start = performance.now();
    answers.push(await tracker.toolCall("search", { q: `hotel ${i}` }, { result: i }));
    slowest = Math.max(slowest, performance.now() - start);
  }
  return { answers, slowest };
}

async function sequence(runId: string): Promise<number | undefined> {
  const answer = await new Client({ baseUrl: UPSTREAM, apiKey }).runs.signal(runId, { agentId: "ari" });
  return "sequence" in answer ? answer.sequence : undefined; // undefined: the monitor is off
}

describe("the run tracker against a real server", { skip }, () => {
  test("a looping agent is nudged, then stopped", async () => {
    const tracker = new Client({ baseUrl: UPSTREAM, apiKey }).runs.track({ runId: `trk:${randomUUID()}`, agentId: "ari", policy: "stop" });
    const answers: StepAnswer[] = [];
    let stopped: unknown;
    try {
      for (let i = 0; i < 20; i++) answers.push(await looping(tracker));
    } catch (error) {
      stopped = error;
    }
    assert.ok(stopped instanceof AgentLoopDetected, String(stopped));
    assert.match(stopped.reason, /export_status/);
    const first = answers.findIndex((a) => a.action === "nudge");
    assert.ok(first > 0 && answers.slice(0, first).every((a) => a.action === "continue" && !a.degraded));
    assert.match(answers[first]?.inject ?? "", /export_status/);
    assert.ok(answers.length < 10);
  });

  test("observe never interferes; a polling agent is never nudged", async () => {
    const client = new Client({ baseUrl: UPSTREAM, apiKey });
    const observer = client.runs.track({ runId: `trk:${randomUUID()}`, agentId: "ari", policy: "observe" });
    const observed: StepAnswer[] = [];
    for (let i = 0; i < 10; i++) observed.push(await looping(observer));
    assert.ok(observed.some((a) => a.action === "break") && observed.every((a) => a.inject === null));
    const poller = client.runs.track({ runId: `trk:${randomUUID()}`, agentId: "poll", policy: "stop" });
    const polled: StepAnswer[] = [];
    for (let pct = 0; pct < 100; pct += 8) polled.push(await poller.toolCall("job_status", { job: 7 }, { result: { done_pct: pct } }));
    polled.push(await poller.toolCall("job_result", { job: 7 }, { result: { rows: 12 } }));
    polled.push(await poller.message("The export finished: 12 rows."));
    assert.deepEqual(polled.map((a) => a.action), polled.map(() => "continue"));
  });

  test("down, then slow, then back: bounded steps, everything delivered once", async () => {
    const proxy = new FaultProxy();
    await proxy.up();
    const runId = `trk:${randomUUID()}`;
    const client = new Client({ baseUrl: proxy.url, apiKey, backoffBaseMs: 50, backoffMaxMs: 200 });
    const tracker = client.runs.track({ runId, agentId: "ari", timeoutMs: TIMEOUT_MS });
    try {
      assert.ok((await timed(tracker, 3)).answers.every((a) => !a.degraded));
      await proxy.down();
      let phase = await timed(tracker, 20);
      assert.ok(phase.answers.every((a) => a.degraded && a.action === "continue"));
      assert.ok(phase.slowest < TIMEOUT_MS + MARGIN_MS, String(phase.slowest));
      assert.equal(tracker.pending, 20);
      await proxy.slow(TIMEOUT_MS * 3);
      phase = await timed(tracker, 10);
      assert.ok(phase.answers.every((a) => a.degraded));
      assert.ok(phase.slowest < TIMEOUT_MS + MARGIN_MS, String(phase.slowest));
      await proxy.up();
      await new Promise((resolve) => setTimeout(resolve, 250));
      const last = await tracker.toolCall("search", { q: "last" }, { result: "last" });
      assert.equal(last.degraded, false);
      assert.deepEqual([tracker.pending, tracker.dropped, tracker.refused, tracker.sent], [0, 0, 0, 34]);
      assert.equal(await sequence(runId), 34);

      // Calls made at once, the service answering in a bit less than the timeout: each is
      // answered within its own timeout from its call, not after the calls queued before it.
      await proxy.slow(TIMEOUT_MS * 0.6);
      const start = performance.now();
      const together = await Promise.all([0, 1, 2, 3].map(async (i) => {
        const answer = await tracker.toolCall("search", { q: `together ${i}` }, { result: i });
        return { answer, ms: performance.now() - start };
      }));
      assert.ok(together.every((t) => t.ms < TIMEOUT_MS + MARGIN_MS), JSON.stringify(together.map((t) => t.ms)));
      assert.ok(together.some((t) => t.answer.degraded));
      await proxy.up();
      assert.equal(await tracker.flush(5_000), true);
      assert.deepEqual([tracker.pending, tracker.dropped, tracker.refused], [0, 0, 0]);
      assert.equal(await sequence(runId), 38); // each step once, also those sent again after a lost answer

      // A flush shorter than the backoff after a failure tries once at once (the exit flush).
      const patient = new Client({ baseUrl: proxy.url, apiKey, backoffBaseMs: 30_000, backoffMaxMs: 30_000 });
      const once = patient.runs.track({ runId: `trk:${randomUUID()}`, agentId: "ari", timeoutMs: TIMEOUT_MS });
      await proxy.down();
      assert.equal((await looping(once)).degraded, true);
      await proxy.up();
      assert.equal(await once.flush(2_000), true);
      assert.equal(await sequence(once.runId), 1);

      const bounded = client.runs.track({ runId: `trk:${randomUUID()}`, agentId: "ari", timeoutMs: TIMEOUT_MS, maxPending: 5 });
      await proxy.down();
      await timed(bounded, 8);
      assert.deepEqual([bounded.pending, bounded.dropped], [5, 3]);
      await proxy.up();
      assert.equal(await bounded.flush(5_000), true);
      assert.equal(await sequence(bounded.runId), 5);
    } finally {
      await proxy.down();
    }
  });
});
