/**
 * The client without a server: backoff, retry decisions, the deadline, error mapping, typing.
 * fetch, sleep, random and the clock are injected (they are ordinary client options).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  AuthenticationError, Client, ConflictError, ConnectionError, ExecutionTimeoutError,
  InternalError, LoopsenseError, NotFoundError, PermissionDeniedError, QuotaExceededError,
  RateLimitError, UnavailableError, ValidationError, backoffDelay, EventLimitExceededError,
  RunAgentNotFoundError, RunStepLimitExceededError, RunWriteConflictError,
  IdempotencyInProgressError, IdempotencyKeyReusedError, SkillNotAccessibleError,
  SkillNotAvailableForPlanError, SkillNotFoundError, TenantRateLimitedError, RequestTimeoutError, errorFromResponse,
  parseRetryAfter,
} from "@loopsense/sdk";
import type { ClientOptions, LoopDetectOutput } from "@loopsense/sdk";

const OK = {
  executionId: "e-1", skillKey: "agent.loop_detect", skillVersion: "1.0.0",
  output: { loopDetected: true }, billing: { credits: 1 },
};

function envelope(code: string, status: number, retryable: boolean, retryAfter?: number): Response {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
  return new Response(JSON.stringify({
    error: { code, message: `${code} message`, retryable, next: "do this", details: [{ path: "input.x", issue: "bad" }] },
    requestId: "req-1",
  }), { status, headers });
}

interface Harness {
  client: Client;
  requests: { url: string; headers: Headers; body: string }[];
  sleeps: number[];
  clock: { now: number };
}

/** A client whose fetch answers from `answers` in turn; sleep advances a fake clock. */
function harness(answers: (() => Response | Promise<Response>)[], options: ClientOptions = {}): Harness {
  const requests: Harness["requests"] = [];
  const sleeps: number[] = [];
  const clock = { now: 0 };
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    requests.push({ url: String(url), headers: new Headers(init?.headers), body: String(init?.body) });
    const next = answers[Math.min(requests.length, answers.length) - 1];
    assert.ok(next, "no answer scripted");
    return next();
  };
  const client = new Client({
    apiKey: "ls_test", baseUrl: "http://loopsense.invalid/", fetch: fetch as typeof globalThis.fetch,
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.now += ms;
    },
    random: () => 0.5, now: () => clock.now, ...options,
  });
  return { client, requests, sleeps, clock };
}

describe("backoffDelay: exponential, full jitter, capped, at least Retry-After", () => {
  const options = (r: number) => ({ backoffBaseMs: 200, backoffMaxMs: 5000, random: () => r });
  test("the cap doubles per retry up to the max", () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, options(0.999999))),
      [1, 2, 4, 8, 16, 25, 25].map((x) => Math.min(x * 200, 5000) * 0.999999));
  });
  test("full jitter: anywhere from 0 to the cap", () => {
    assert.equal(backoffDelay(3, options(0)), 0);
    assert.equal(backoffDelay(3, options(0.5)), 400);
  });
  test("Retry-After is a floor", () => {
    assert.equal(backoffDelay(1, options(0.5), 2), 2000);
    assert.equal(backoffDelay(6, options(0.9), 1), 4500);
    assert.equal(backoffDelay(1, options(0.5), null), 100);
  });
  test("parseRetryAfter: seconds or an HTTP date", () => {
    assert.equal(parseRetryAfter("3"), 3);
    assert.equal(parseRetryAfter(null), null);
    assert.equal(parseRetryAfter("soon"), null);
    assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4_000), 6);
  });
});

describe("errors: by code, then by status", () => {
  const cases: [string, number, boolean, Function][] = [
    ["VALIDATION_ERROR", 400, false, ValidationError],
    ["LOOP_EVENTS_INVALID", 400, false, ValidationError],
    ["LOOPS_EVENT_LIMIT_EXCEEDED", 429, false, EventLimitExceededError],
    ["UNAUTHORIZED", 401, false, AuthenticationError],
    ["SKILL_NOT_ACCESSIBLE", 403, false, SkillNotAccessibleError],
    ["SKILL_NOT_AVAILABLE_FOR_PLAN", 403, false, SkillNotAvailableForPlanError],
    ["SKILL_NOT_FOUND", 404, false, SkillNotFoundError],
    ["ROUTE_NOT_FOUND", 404, false, NotFoundError],
    ["IDEMPOTENCY_KEY_REUSED", 409, false, IdempotencyKeyReusedError],
    ["IDEMPOTENCY_IN_PROGRESS", 409, true, IdempotencyInProgressError],
    ["TENANT_RATE_LIMITED", 429, true, TenantRateLimitedError],
    ["QUOTA_EXCEEDED", 429, true, QuotaExceededError],
    ["PLAN_ELIGIBILITY_UNAVAILABLE", 503, true, UnavailableError],
    ["EXECUTION_TIMEOUT", 504, true, ExecutionTimeoutError],
    ["INTERNAL_ERROR", 500, true, InternalError],
    ["RUN_STEPS_INVALID", 400, false, ValidationError],
    ["RUN_STEP_LIMIT_EXCEEDED", 429, false, RunStepLimitExceededError],
    ["RUN_BATCH_INVALID", 400, false, ValidationError],
    ["RUN_AGENT_NOT_FOUND", 404, false, RunAgentNotFoundError],
    ["RUN_WRITE_CONFLICT", 409, true, RunWriteConflictError],
    ["SOME_NEW_SKILL_CODE", 400, false, ValidationError],
    ["SOME_NEW_LIMIT", 429, false, RateLimitError],
  ];
  for (const [code, status, retryable, Class] of cases) {
    test(`${code} ${status} -> ${Class.name}`, async () => {
      const error = errorFromResponse(status, await envelope(code, status, retryable, 7).text(),
        new Headers({ "Retry-After": "7" }));
      assert.ok(error instanceof Class && error instanceof LoopsenseError);
      assert.equal(error.name, Class.name);
      assert.deepEqual([error.code, error.status, error.retryable, error.next, error.requestId, error.retryAfter],
        [code, status, retryable, "do this", "req-1", 7]);
      assert.deepEqual(error.details, [{ path: "input.x", issue: "bad" }]);
    });
  }
  test("families: the per-code classes extend their family", () => {
    assert.ok(QuotaExceededError.prototype instanceof RateLimitError);
    assert.ok(EventLimitExceededError.prototype instanceof RateLimitError);
    assert.ok(SkillNotAccessibleError.prototype instanceof PermissionDeniedError);
    assert.ok(SkillNotFoundError.prototype instanceof NotFoundError);
    assert.ok(IdempotencyKeyReusedError.prototype instanceof ConflictError);
    assert.ok(RequestTimeoutError.prototype instanceof ConnectionError);
    assert.ok(RunStepLimitExceededError.prototype instanceof EventLimitExceededError);
    assert.ok(RunAgentNotFoundError.prototype instanceof NotFoundError);
    assert.ok(RunWriteConflictError.prototype instanceof ConflictError);
  });
  test("a body that is not an envelope: by status", () => {
    const error = errorFromResponse(502, "<html>bad gateway</html>", new Headers());
    assert.ok(error instanceof UnavailableError);
    assert.deepEqual([error.code, error.retryable], ["HTTP_502", true]);
    assert.equal(errorFromResponse(418, "", new Headers()).retryable, false);
  });
});

describe("execute: retries", () => {
  test("a 503 then a 200: one Idempotency-Key for both, Retry-After honoured", async () => {
    const h = harness([() => envelope("PLAN_ELIGIBILITY_UNAVAILABLE", 503, true, 1), () => Response.json(OK)]);
    const answer = await h.client.execute("agent.loop_detect", { events: [{ action: "a" }, { action: "a" }] });
    assert.equal(answer.executionId, "e-1");
    assert.equal(h.requests.length, 2);
    const keys = h.requests.map((r) => r.headers.get("idempotency-key"));
    assert.match(keys[0] ?? "", /^[0-9a-f-]{36}$/);
    assert.equal(keys[0], keys[1]);
    assert.deepEqual(h.sleeps, [1000]);
    assert.equal(h.requests[0]?.url, "http://loopsense.invalid/v1/execute");
    assert.equal(h.requests[0]?.headers.get("authorization"), "Bearer ls_test");
    assert.deepEqual(JSON.parse(h.requests[0]?.body ?? ""), {
      skillKey: "agent.loop_detect", input: { events: [{ action: "a" }, { action: "a" }] },
    });
  });

  test("each logical call gets its own key; a given key and version are sent", async () => {
    const h = harness([() => Response.json(OK)]);
    await h.client.execute("agent.loop_detect", { events: [] });
    await h.client.execute("agent.loop_detect", { events: [] });
    await h.client.execute("agent.loop_detect", { events: [] }, { idempotencyKey: "mine", version: "1.0.0" });
    const keys = h.requests.map((r) => r.headers.get("idempotency-key"));
    assert.notEqual(keys[0], keys[1]);
    assert.equal(keys[2], "mine");
    assert.equal(JSON.parse(h.requests[2]?.body ?? "").version, "1.0.0");
  });

  test("non-retryable errors are thrown at once", async () => {
    const h = harness([() => envelope("VALIDATION_ERROR", 400, false)]);
    await assert.rejects(h.client.execute("agent.loop_detect", { events: [] }),
      (e: unknown) => e instanceof ValidationError && e.attempts === 1);
    assert.equal(h.requests.length, 1);
    assert.deepEqual(h.sleeps, []);
  });

  test("maxAttempts bounds the requests; backoff grows with full jitter", async () => {
    const h = harness([() => envelope("INTERNAL_ERROR", 500, true)], { maxAttempts: 4, random: () => 1 });
    await assert.rejects(h.client.executeAny("x.y", {}), (e: unknown) => e instanceof InternalError && e.attempts === 4);
    assert.equal(h.requests.length, 4);
    assert.deepEqual(h.sleeps, [200, 400, 800]);
    assert.equal(new Set(h.requests.map((r) => r.headers.get("idempotency-key"))).size, 1);
  });

  test("a wait that would pass the deadline is not taken: the error is thrown", async () => {
    const h = harness([() => envelope("QUOTA_EXCEEDED", 429, true, 86_400)], { deadlineMs: 30_000 });
    await assert.rejects(h.client.executeAny("x.y", {}), (e: unknown) => e instanceof QuotaExceededError && e.attempts === 1);
    assert.deepEqual(h.sleeps, []);
  });

  test("the deadline stops retries that each would fit", async () => {
    const h = harness([() => envelope("TENANT_RATE_LIMITED", 429, true, 1)], { deadlineMs: 3_500, maxAttempts: 100 });
    await assert.rejects(h.client.executeAny("x.y", {}), RateLimitError);
    assert.deepEqual(h.sleeps, [1000, 1000, 1000]);
    assert.ok(h.clock.now < 3_500);
  });

  test("network failures are ConnectionErrors, retried", async () => {
    const h = harness([() => Promise.reject(new TypeError("fetch failed")), () => Response.json(OK)],
      { random: () => 0.25 });
    const answer = await h.client.execute("agent.loop_detect", { events: [] });
    assert.equal(answer.billing.credits, 1);
    assert.deepEqual(h.sleeps, [50]);
  });

  test("a request that hangs is aborted at timeoutMs (REQUEST_TIMEOUT), then retried", async () => {
    let calls = 0;
    const fetch = (_url: unknown, init?: RequestInit): Promise<Response> => {
      calls++;
      if (calls > 1) return Promise.resolve(Response.json(OK));
      return new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      });
    };
    const client = new Client({ apiKey: "k", baseUrl: "http://x.invalid", timeoutMs: 50, fetch: fetch as typeof globalThis.fetch, sleep: async () => {} });
    const answer = await client.execute("agent.loop_detect", { events: [] });
    assert.equal(answer.executionId, "e-1");
    assert.equal(calls, 2);
  });

  test("the caller's AbortSignal stops the call with its reason, without retries", async () => {
    const h = harness([() => envelope("INTERNAL_ERROR", 500, true)]);
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await assert.rejects(h.client.executeAny("x.y", {}, { signal: controller.signal }), /stop/);
    assert.equal(h.requests.length, 0);
  });

  test("options are checked; the environment gives the defaults", () => {
    assert.throws(() => new Client({ apiKey: "k", maxAttempts: 0 }), RangeError);
    assert.throws(() => new Client({ apiKey: "k", timeoutMs: -1 }), RangeError);
    const saved = { ...process.env };
    try {
      process.env.LOOPSENSE_BASE_URL = "http://from-env.invalid:9/";
      process.env.LOOPSENSE_API_KEY = "k-env";
      const client = new Client();
      assert.equal(client.baseUrl, "http://from-env.invalid:9");
      assert.deepEqual([client.timeoutMs, client.maxAttempts, client.deadlineMs, client.backoffBaseMs, client.backoffMaxMs],
        [10_000, 4, 30_000, 200, 5_000]);
    } finally {
      for (const name of ["LOOPSENSE_BASE_URL", "LOOPSENSE_API_KEY"]) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });

  test("no API key (argument or LOOPSENSE_API_KEY) is refused at construction", () => {
    const saved = process.env.LOOPSENSE_API_KEY;
    delete process.env.LOOPSENSE_API_KEY;
    try {
      assert.throws(() => new Client(), /LOOPSENSE_API_KEY/);
      assert.throws(() => new Client({ apiKey: "" }), TypeError);
    } finally {
      if (saved !== undefined) process.env.LOOPSENSE_API_KEY = saved;
    }
  });

  test("a 2xx whose body is not JSON is a LoopsenseError (INVALID_RESPONSE), not retried", async () => {
    const h = harness([() => new Response("<html>ok</html>", { status: 200 })]);
    await assert.rejects(h.client.execute("agent.loop_detect", { events: [] }), (e: unknown) =>
      e instanceof LoopsenseError && e.code === "INVALID_RESPONSE" && e.status === 200 && !e.retryable);
    assert.equal(h.requests.length, 1);
  });
});

describe("types", () => {
  test("execute is typed per skill (checked by tsc)", async () => {
    const h = harness([() => Response.json(OK)]);
    const { output } = await h.client.execute("agent.loop_detect", { events: [{ action: "a" }], window: 5 });
    const typed: LoopDetectOutput = output; // the output type follows the skill key
    assert.equal(typed.loopDetected, true);
    const cycleLength: number = output.cycleLength; // 0 when nothing is found, never null
    assert.equal(cycleLength, undefined); // (the scripted answer has no cycleLength)
    // @ts-expect-error: a misspelt skill key does not compile (executeAny takes any key)
    await h.client.execute("agent.loop_detec", { events: [] });
    // @ts-expect-error: a skill's input is checked against that skill's type
    await h.client.execute("agent.semantic_loop", { events: [{ action: "a" }] });
    // @ts-expect-error: agent.loop_detect events need an action
    await h.client.execute("agent.loop_detect", { events: [{ target: "x" }] });
    // @ts-expect-error: unknown similarity
    await h.client.execute("agent.loop_detect", { events: [], similarity: "FUZZY" });
    await h.client.execute("agent.loop_detect", { fileRef: "file_x", window: 5 }); // by file
    // @ts-expect-error: a fileRef is text
    await h.client.execute("agent.loop_detect", { fileRef: 7 });
    // @ts-expect-error: beside a fileRef, the skill's own parameters only
    await h.client.execute("agent.loop_detect", { fileRef: "file_x", windw: 5 });
    // @ts-expect-error: agent.loops thresholds have their own names
    await h.client.execute("agent.loops", { events: [], thresholds: { revisit_threshold: 3 } });
    const run = await h.client.execute("agent.run_monitor", {
      steps: [{ kind: "tool_call", action: "a", args: { q: 1 }, outcome: "error" }],
      config: { repeat_warn: 5, tools: { a: { poll: true } }, disabled_rules: ["novelty"] },
    });
    const looping: boolean | undefined = run.output.is_looping; // RunMonitorOutput
    assert.equal(looping, undefined); // (the scripted answer is loop_detect's)
    // @ts-expect-error: agent.run_monitor config names are the settings' names
    await h.client.execute("agent.run_monitor", { steps: [{ kind: "thought" }], config: { repeat_warning: 5 } });
    // @ts-expect-error: disabled_rules name rules
    await h.client.execute("agent.run_monitor", { steps: [], config: { disabled_rules: ["loops"] } });
    const other = await h.client.executeAny("test.sleep", { ms: 1 }); // any key: unknown output
    const unknownOutput: unknown = other.output;
    assert.ok(unknownOutput);
  });
});
