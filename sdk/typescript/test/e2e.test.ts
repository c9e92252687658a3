/**
 * Against a real `loopsense serve --test-skills`, started by tests/sdk/test_typescript_sdk.py,
 * which passes (env):
 *   LOOPSENSE_BASE_URL, LOOPSENSE_API_KEY   the server and the dev key (team plan)
 *   LOOPSENSE_TEST_SCOPED_KEY               a key of the dev tenant granted agent.loops only
 *   LOOPSENSE_TEST_HOBBY_KEY                a hobby tenant's key (test.sleep is team-only)
 *   LOOPSENSE_TEST_QUOTA_KEY                a tenant whose plan's credits are used up
 *   LOOPSENSE_TEST_RETRY_KEY                a fresh tenant, used only by the charged-once tests
 *   LOOPSENSE_TEST_REPORT                   a file to write the charged execution ids to; the
 *                                           wrapper then checks the tenant's usage against them
 * Without LOOPSENSE_TEST_SCOPED_KEY these tests are skipped (the wrapper asserts none was).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, test } from "node:test";

import {
  AuthenticationError, Client, ConnectionError, ExecutionTimeoutError,
  LoopsenseError, NotFoundError, QuotaExceededError, RateLimitError,
  UnavailableError, ValidationError, semanticSignature, RequestTimeoutError, SkillNotAccessibleError,
  SkillNotAvailableForPlanError, IdempotencyKeyReusedError,
} from "@loopsense/sdk";
import type { ClientOptions, FileOutput, LoopsOutput, SemanticLoopOutput } from "@loopsense/sdk";

const env = process.env;
const skip = env.LOOPSENSE_TEST_SCOPED_KEY ? false : "no server (run tests/sdk/test_typescript_sdk.py)";
const URL_ = env.LOOPSENSE_BASE_URL ?? "";
const LOOP = { events: [{ action: "search" }, { action: "click" }, { action: "search" },
  { action: "click" }, { action: "search" }, { action: "click" }] };
const charged: string[] = [];

const client = (options: ClientOptions = {}): Client => new Client({ baseUrl: URL_, ...options });

async function rejectsWith<T extends LoopsenseError>(
  call: Promise<unknown>, Class: new (...args: never[]) => T, code: string, status: number | null,
): Promise<T> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof Class, `expected ${Class.name}, got ${String(error)}`);
    assert.ok(error instanceof LoopsenseError);
    assert.equal(error.code, code, error.message);
    assert.equal(error.status, status);
    if (status !== null) {
      assert.equal(typeof error.next, "string");
      assert.equal(typeof error.requestId, "string");
    }
    return error;
  }
  assert.fail(`expected ${Class.name} ${code}`);
}

/** A proxy in front of the server: `decide(n)` for the n-th request (1-based). */
interface Proxy { url: string; keys: (string | undefined)[]; upstreamBodies: string[]; close(): Promise<void> }
type Decision = "forward" | "hang" | { status: number; body: unknown; retryAfter?: string; forwardFirst?: boolean };

async function proxy(decide: (n: number) => Decision): Promise<Proxy> {
  const keys: (string | undefined)[] = [];
  const upstreamBodies: string[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const forward = async (req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: Headers; text: string }> => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string" && !["host", "content-length", "connection"].includes(name)) headers[name] = value;
    }
    const answer = await fetch(URL_ + (req.url ?? "/"), { method: req.method ?? "POST", headers, body });
    const text = await answer.text();
    upstreamBodies.push(text);
    return { status: answer.status, headers: answer.headers, text };
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      keys.push(req.headers["idempotency-key"] as string | undefined);
      const decision = decide(keys.length);
      if (decision === "hang") return; // never answers
      void (async () => {
        if (decision === "forward") {
          const answer = await forward(req, Buffer.concat(chunks));
          const headers: Record<string, string> = { "Content-Type": "application/json" };
          const retryAfter = answer.headers.get("retry-after");
          if (retryAfter) headers["Retry-After"] = retryAfter;
          res.writeHead(answer.status, headers).end(answer.text);
          return;
        }
        if (decision.forwardFirst) await forward(req, Buffer.concat(chunks)); // done upstream, answer lost
        const headers: Record<string, string> = { "Content-Type": "application/json" };
        if (decision.retryAfter !== undefined) headers["Retry-After"] = decision.retryAfter;
        res.writeHead(decision.status, headers).end(JSON.stringify(decision.body));
      })().catch((error: unknown) => res.writeHead(599).end(String(error)));
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`, keys, upstreamBodies,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

function envelope(code: string, retryable: boolean): unknown {
  return { error: { code, message: "injected by the test proxy", retryable, next: "retry after Retry-After", details: [] }, requestId: "proxy" };
}

after(() => {
  if (env.LOOPSENSE_TEST_REPORT) writeFileSync(env.LOOPSENSE_TEST_REPORT, JSON.stringify({ charged }));
});

describe("a successful call of each skill", { skip }, () => {
  test("agent.loop_detect, with the key and URL from the environment", async () => {
    const answer = await new Client().execute("agent.loop_detect", LOOP);
    assert.equal(answer.skillKey, "agent.loop_detect");
    assert.equal(answer.skillVersion, "1.0.0");
    assert.match(answer.executionId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(answer.billing, { credits: 1 });
    assert.equal(answer.output.loopDetected, true);
    assert.equal(answer.output.cycleLength, 2);
    assert.deepEqual(answer.output.spans, [{ start: 0, end: 5, cycleLength: 2, repeats: 3 }]);
  });

  test("agent.semantic_loop: the server's signature is semanticSignature(metadata)", async () => {
    const metadata = { userId: 7, Plan: "  Retry Search  " };
    const { output } = await client().execute("agent.semantic_loop", {
      events: [
        { type: "checkpoint", name: "plan", metadata },
        { type: "tool_call", name: "search" },
        { type: "checkpoint", name: "replan", metadata: { USERID: 7.0, plan: "retry search", at: 1 } },
        { type: "checkpoint", metadata: { userid: 7, PLAN: "Retry search\u3000", AT: 2 } },
      ],
      ignoreKeys: ["at"],
    }, { version: "1.0.0" });
    const typed: SemanticLoopOutput = output;
    assert.equal(typed.fired, true);
    assert.deepEqual([typed.checkpoints, typed.skipped], [3, 1]);
    assert.equal(typed.groups[0]?.signature, semanticSignature(metadata));
    assert.equal(typed.groups[0]?.signature, semanticSignature({ userId: 7, plan: "RETRY SEARCH", at: 9 }, { ignoreKeys: ["AT"] }));
    assert.deepEqual(typed.groups[0]?.eventIndices, [0, 2, 3]);
  });

  test("agent.loops, with the key scoped to it", async () => {
    const message = "Extract the invoice total as JSON.";
    const { output } = await client({ apiKey: env.LOOPSENSE_TEST_SCOPED_KEY }).execute("agent.loops", {
      events: [1, 2, 3].map(() => ({ type: "llm_call", model: "gpt-4o", user_message: message })),
      durationMs: 5000,
    });
    const typed: LoopsOutput = output;
    assert.equal(typed.fired, true);
    assert.deepEqual(typed.findings.map((f) => f.sub), ["identical_call"]);
    assert.equal(typed.stats.llmCalls, 3);
    assert.equal(typed.thresholds.identical_call_min_repeats, 3);
  });
});

describe("files (docs/files.md)", { skip }, () => {
  test("upload, then execute by ref: the inline answer; the ref is used once", async () => {
    const ref = await client().upload(LOOP.events);
    assert.match(ref, /^file_[0-9a-f]{32}$/);
    const byRef = await client().execute("agent.loop_detect", { fileRef: ref, repeatThreshold: 2 });
    const inline = await client().execute("agent.loop_detect", { ...LOOP, repeatThreshold: 2 });
    assert.deepEqual(byRef.output, inline.output);
    const lines = LOOP.events.map((event) => JSON.stringify(event)).join("\n");
    const again = await client().execute("agent.loop_detect", { fileRef: await client().upload(lines) });
    assert.deepEqual(again.output.eventIndices, [0, 1, 2, 3, 4, 5]);
    await rejectsWith(client().execute("agent.loop_detect", { fileRef: ref }), ValidationError,
      "LOOP_EVENTS_INVALID", 400);
  });

  test("an output too large to inline is fetched for you, or handed over; never with the key", async () => {
    const sent: { url: string; auth: boolean }[] = [];
    const recording: typeof fetch = async (url, init) => {
      sent.push({ url: String(url), auth: "Authorization" in ((init?.headers ?? {}) as Record<string, string>) });
      return fetch(url, init);
    };
    const large = client({ fetch: recording, timeoutMs: 60_000, deadlineMs: 120_000 });
    const fetched = await large.executeAny("test.large", { count: 900_000 });
    const output = fetched.output as { count: number; numbers: number[] };
    assert.equal(output.count, 900_000);
    assert.equal(output.numbers.length, 900_000);
    assert.equal(output.numbers[899_999], 899_999);
    const kept = (await large.executeAny("test.large", { count: 900_000 }, { fetchOutput: false }))
      .output as FileOutput;
    assert.deepEqual(Object.keys(kept).sort(), ["bytes", "downloadUrl", "expiresAt", "fileRef", "method"]);
    const download = await fetch(kept.downloadUrl);
    assert.deepEqual(JSON.parse(await download.text()), output);
    const outside = sent.filter((s) => !s.url.startsWith(URL_));
    assert.equal(outside.length, 1);
    assert.ok(outside.every((s) => !s.auth) && sent.filter((s) => s.url.startsWith(URL_)).every((s) => s.auth));
  });
});

describe("each error family as its typed error", { skip }, () => {
  test("401 AuthenticationError", async () => {
    await rejectsWith(client({ apiKey: "ls_not_a_real_key_000000000000" }).execute("agent.loop_detect", LOOP),
      AuthenticationError, "UNAUTHORIZED", 401);
  });
  test("403 PermissionDeniedError: key scope, and plan", async () => {
    await rejectsWith(client({ apiKey: env.LOOPSENSE_TEST_SCOPED_KEY }).execute("agent.loop_detect", LOOP),
      SkillNotAccessibleError, "SKILL_NOT_ACCESSIBLE", 403);
    await rejectsWith(client({ apiKey: env.LOOPSENSE_TEST_HOBBY_KEY }).executeAny("test.sleep", { ms: 1 }),
      SkillNotAvailableForPlanError, "SKILL_NOT_AVAILABLE_FOR_PLAN", 403);
  });
  test("404 NotFoundError", async () => {
    await rejectsWith(client().executeAny("agent.no_such_skill", {}), NotFoundError, "SKILL_NOT_FOUND", 404);
  });
  test("400 ValidationError: the platform's and a skill's code, with details", async () => {
    const error = await rejectsWith(client().execute("agent.loop_detect", { events: [{ action: "a" }] }),
      ValidationError, "LOOP_EVENTS_INVALID", 400);
    assert.equal(error.retryable, false);
    assert.equal(error.details[0]?.path, "input.events");
    await rejectsWith(client().execute("agent.loop_detect", { events: LOOP.events, window: 1 }),
      ValidationError, "VALIDATION_ERROR", 400);
  });
  test("409 ConflictError: one Idempotency-Key, two bodies", async () => {
    const idempotencyKey = `ts-sdk-${Date.now()}-${Math.random()}`;
    await client().execute("agent.loop_detect", LOOP, { idempotencyKey });
    await rejectsWith(client().execute("agent.loop_detect", { ...LOOP, window: 3 }, { idempotencyKey }),
      IdempotencyKeyReusedError, "IDEMPOTENCY_KEY_REUSED", 409);
  });
  test("429 QuotaExceededError (a RateLimitError), thrown at once: Retry-After is past the deadline", async () => {
    const started = performance.now();
    const error = await rejectsWith(client({ apiKey: env.LOOPSENSE_TEST_QUOTA_KEY }).execute("agent.loop_detect", LOOP),
      QuotaExceededError, "QUOTA_EXCEEDED", 429);
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.retryable, true);
    assert.ok((error.retryAfter ?? 0) > 60, `Retry-After ${error.retryAfter}`);
    assert.equal(error.attempts, 1);
    // Had it slept, it would have taken Retry-After: that is the bound, not a clock guess.
    assert.ok(performance.now() - started < (error.retryAfter ?? 0) * 1000);
  });
  test("504 ExecutionTimeoutError (test.sleep past its 300 ms budget)", async () => {
    const error = await rejectsWith(client({ maxAttempts: 1 }).executeAny("test.sleep", { ms: 1500 }),
      ExecutionTimeoutError, "EXECUTION_TIMEOUT", 504);
    assert.equal(error.retryable, true);
  });
  test("503 UnavailableError after maxAttempts, one Idempotency-Key throughout", async () => {
    const p = await proxy(() => ({ status: 503, body: envelope("PLAN_ELIGIBILITY_UNAVAILABLE", true), retryAfter: "0" }));
    try {
      const error = await rejectsWith(client({ baseUrl: p.url, maxAttempts: 3, backoffBaseMs: 5 }).execute("agent.loop_detect", LOOP),
        UnavailableError, "PLAN_ELIGIBILITY_UNAVAILABLE", 503);
      assert.equal(error.attempts, 3);
      assert.equal(p.keys.length, 3);
      assert.equal(new Set(p.keys).size, 1);
    } finally {
      await p.close();
    }
  });
  test("ConnectionError when nothing listens", async () => {
    const p = await proxy(() => "forward");
    const url = p.url;
    await p.close();
    const error = await rejectsWith(client({ baseUrl: url, maxAttempts: 2, backoffBaseMs: 5 }).execute("agent.loop_detect", LOOP),
      ConnectionError, "CONNECTION_ERROR", null);
    assert.equal(error.retryable, true);
    assert.equal(error.attempts, 2);
  });
});

describe("retries that succeed are charged once", { skip }, () => {
  test("a 429 TENANT_RATE_LIMITED, then the call goes through (Retry-After: 1 honoured)", async () => {
    const p = await proxy((n) => n === 1
      ? { status: 429, body: envelope("TENANT_RATE_LIMITED", true), retryAfter: "1" } : "forward");
    try {
      const started = performance.now();
      const answer = await client({ baseUrl: p.url, apiKey: env.LOOPSENSE_TEST_RETRY_KEY }).execute("agent.loop_detect", LOOP);
      assert.ok(performance.now() - started >= 1000, "waited Retry-After");
      assert.equal(p.keys.length, 2);
      assert.equal(p.keys[0], p.keys[1]);
      charged.push(answer.executionId);
    } finally {
      await p.close();
    }
  });

  test("the first answer is lost (done upstream, 503 to the client): the retry is a free replay", async () => {
    const p = await proxy((n) => n === 1
      ? { status: 503, body: envelope("PLAN_ELIGIBILITY_UNAVAILABLE", true), retryAfter: "1", forwardFirst: true }
      : "forward");
    try {
      const answer = await client({ baseUrl: p.url, apiKey: env.LOOPSENSE_TEST_RETRY_KEY }).execute("agent.loop_detect", LOOP);
      assert.equal(p.keys.length, 2);
      assert.ok(p.keys[0] && p.keys[0] === p.keys[1], "one Idempotency-Key for both attempts");
      assert.equal(p.upstreamBodies.length, 2); // the server saw both requests...
      assert.equal(p.upstreamBodies[1], p.upstreamBodies[0]); // ...and replayed the first answer
      assert.equal(answer.executionId, JSON.parse(p.upstreamBodies[0] ?? "{}").executionId);
      charged.push(answer.executionId);
    } finally {
      await p.close();
    }
  });
});

describe("the deadline", { skip }, () => {
  test("a server that never answers: REQUEST_TIMEOUT at the deadline, not at timeoutMs", async () => {
    const p = await proxy(() => "hang");
    try {
      const started = performance.now();
      const error = await rejectsWith(client({ baseUrl: p.url, timeoutMs: 10_000, deadlineMs: 600 }).execute("agent.loop_detect", LOOP),
        RequestTimeoutError, "REQUEST_TIMEOUT", null);
      const elapsed = performance.now() - started;
      assert.ok(elapsed >= 550 && elapsed < 10_000, `${elapsed} ms`); // the deadline, not timeoutMs
      assert.equal(error.attempts, 1);
    } finally {
      await p.close();
    }
  });
  test("retryable 504s stop when the next wait would pass the deadline", async () => {
    const error = await rejectsWith(client({ deadlineMs: 1200, maxAttempts: 50 }).executeAny("test.sleep", { ms: 1500 }),
      ExecutionTimeoutError, "EXECUTION_TIMEOUT", 504);
    assert.equal(error.attempts, 1); // 504 + Retry-After 1 s: the wait would end past 1.2 s
  });
});
