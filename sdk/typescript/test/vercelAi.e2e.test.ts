/**
 * The Vercel AI SDK adapter with the real `ai` package of each major version (5, 6, 7: the npm
 * aliases ai5/ai6/ai7 of the dev dependencies) and its own mock model (`ai/test`'s
 * MockLanguageModelV2/V3/V4), through a real `loopsense serve` (started by
 * tests/sdk/test_typescript_sdk.py; skipped without it): a looping agent is nudged (the model's
 * next input carries the nudge) then stopped, by stopWhen or by a rejection; a polling agent that
 * finishes is never nudged; the caller's own hooks still run, and every step arrives once.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import * as ai5 from "ai5";
import * as ai5test from "ai5/test";
import * as ai6 from "ai6";
import * as ai6test from "ai6/test";
import * as ai7 from "ai7";
import * as ai7test from "ai7/test";

import { AgentLoopDetected, Client } from "@loopsense/sdk";
import type { Policy } from "@loopsense/sdk";
import { LoopsenseHooks, PREFIX } from "@loopsense/sdk/vercel-ai";

const env = process.env;
const skip = env.LOOPSENSE_TEST_TRACKER_KEY ? false : "no server (run tests/sdk/test_typescript_sdk.py)";
const client = new Client({ baseUrl: env.LOOPSENSE_BASE_URL, apiKey: env.LOOPSENSE_TEST_TRACKER_KEY ?? "none" });

// One script drives three versions: their modules are typed loosely here (`any`), but for the
// last test, which type-checks against ai 7's own types.
interface Version {
  major: number;
  ai: any;
  Mock: any;
  simulateReadableStream: any;
}
const VERSIONS: Version[] = [
  { major: 5, ai: ai5, Mock: ai5test.MockLanguageModelV2, simulateReadableStream: ai5test.simulateReadableStream },
  { major: 6, ai: ai6, Mock: ai6test.MockLanguageModelV3, simulateReadableStream: ai6test.simulateReadableStream },
  { major: 7, ai: ai7, Mock: ai7test.MockLanguageModelV4, simulateReadableStream: ai7test.simulateReadableStream },
];

type Call = { name: string; input: unknown } | string; // a tool call, or the final text

/** The model's scripted turns (the same answer shapes the research probes used per version). */
function scripted(v: Version, turns: (n: number) => Call): any {
  const usage = v.major >= 6
    ? { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } }
    : { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  const finish = (reason: string): unknown => (v.major >= 6 ? { unified: reason, raw: reason } : reason);
  let calls = 0;
  const generate = (): any => {
    calls += 1;
    const turn = turns(calls);
    return typeof turn === "string"
      ? { content: [{ type: "text", text: turn }], finishReason: finish("stop"), usage, warnings: [] }
      : { content: [{ type: "tool-call", toolCallId: `call_${calls}`, toolName: turn.name, input: JSON.stringify(turn.input) }],
          finishReason: finish("tool-calls"), usage, warnings: [] };
  };
  return new v.Mock({
    doGenerate: async () => generate(),
    doStream: async () => {
      const answer = generate();
      const parts: unknown[] = [{ type: "stream-start", warnings: [] }];
      for (const c of answer.content) {
        parts.push(...(c.type === "text"
          ? [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: c.text }, { type: "text-end", id: "t" }]
          : [c]));
      }
      parts.push({ type: "finish", finishReason: answer.finishReason, usage: answer.usage });
      return { stream: v.simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) };
    },
  });
}

const inputs = (model: any): string[] => [...model.doGenerateCalls, ...model.doStreamCalls].map((c: any) => JSON.stringify(c.prompt));

function tools(v: Version, results: (name: string) => unknown): any {
  const schema = v.ai.jsonSchema({ type: "object", properties: { job: { type: "number" } }, required: ["job"] });
  const make = (name: string) => v.ai.tool({ description: name, inputSchema: schema, execute: async () => results(name) });
  return { export_status: make("export_status"), job_status: make("job_status"), job_result: make("job_result") };
}

function track(policy: Policy): LoopsenseHooks["tracker"] {
  return client.runs.track({ runId: `vercel:${randomUUID()}`, agentId: "ari", policy });
}

async function sequence(hooks: LoopsenseHooks): Promise<number | undefined> {
  const answer = await client.runs.signal(hooks.tracker.runId, { agentId: "ari" });
  return "sequence" in answer ? answer.sequence : undefined; // undefined: the monitor is off
}

async function run(v: Version, mode: "generate" | "stream", options: Record<string, unknown>): Promise<any> {
  if (mode === "generate") return v.ai.generateText(options);
  const streamed = v.ai.streamText(options);
  await streamed.consumeStream();
  return { steps: await streamed.steps, text: await streamed.text };
}

for (const v of VERSIONS) {
  describe(`Vercel AI SDK ${v.major} against a real server`, { skip }, () => {
    for (const mode of ["generate", "stream"] as const) {
      test(`${mode}: a looping agent is nudged (its next input carries it), then stopped by stopWhen`, async () => {
        const model = scripted(v, () => ({ name: "export_status", input: { job: 42 } }));
        let executed = 0;
        const seen = { steps: 0, prepared: 0 };
        const due: (string | null)[] = []; // per model call: the nudge loopsense owes it
        const hooks = new LoopsenseHooks(track("stop"));
        const result = await run(v, mode, hooks.wrap({
          model, prompt: "export job 42", stopWhen: v.ai.stepCountIs(20),
          tools: tools(v, () => { executed += 1; return { state: "pending" }; }),
          onStepFinish: () => { seen.steps += 1; },   // the caller's own hooks still run
          prepareStep: () => { seen.prepared += 1; due.push(hooks.nudge); return undefined; },
        }));
        assert.ok(hooks.stopped instanceof AgentLoopDetected, String(hooks.stopped));
        assert.match(hooks.stopped.reason, /export_status/);
        const steps = result.steps.length;
        assert.ok(steps < 20 && steps === executed && seen.steps === steps && seen.prepared === steps, `${steps} ${executed} ${JSON.stringify(seen)}`);
        const prompts = inputs(model);
        const first = due.findIndex((nudge) => nudge !== null);
        assert.ok(first >= 2 && first < steps, `first nudge owed to call ${first} of ${steps}`);
        assert.match(prompts[first] ?? "", /\[loopsense\] You have called export_status \d+ times/);
        due.forEach((nudge, call) => {
          if (nudge !== null) assert.ok(prompts[call]?.includes(JSON.stringify(PREFIX + nudge).slice(1, -1)), `call ${call}`);
          // v5 and v6 keep prepareStep's messages for that call only; v7 keeps them for the next
          else assert.equal(prompts[call]?.includes(PREFIX), v.major >= 7 && call > first, `call ${call}`);
        });
        assert.equal(await sequence(hooks), steps); // each step reported once
      });
    }

    test("stop: \"raise\" rejects the call with the AgentLoopDetected, after the nudge", async () => {
      const model = scripted(v, () => ({ name: "export_status", input: { job: 42 } }));
      const hooks = new LoopsenseHooks(track("stop"), { stop: "raise" });
      await assert.rejects(v.ai.generateText(hooks.wrap({
        model, prompt: "export job 42", stopWhen: v.ai.stepCountIs(20), tools: tools(v, () => ({ state: "pending" })),
      })), (error: unknown) => error === hooks.stopped && error instanceof AgentLoopDetected);
      assert.ok(inputs(model).some((p) => p.includes(PREFIX)));
    });

    test("a polling agent whose job progresses, then finishes, is never nudged", async () => {
      let pct = 0;
      const model = scripted(v, (n) => (n <= 12 ? { name: "job_status", input: { job: 7 } }
        : n === 13 ? { name: "job_result", input: { job: 7 } } : "The export finished: 12 rows."));
      const hooks = new LoopsenseHooks(track("stop"));
      const result = await v.ai.generateText(hooks.wrap({
        model, prompt: "export job 7", stopWhen: v.ai.stepCountIs(30),
        tools: tools(v, (name) => (name === "job_status" ? { done_pct: (pct += 8) } : { rows: 12 })),
      }));
      assert.equal(result.text, "The export finished: 12 rows.");
      assert.equal(result.steps.length, 14);
      assert.equal(hooks.stopped, null);
      assert.equal(hooks.last?.action, "continue");
      assert.ok(inputs(model).every((p) => !p.includes(PREFIX)));
      assert.equal(await sequence(hooks), 14); // 13 tool calls and the final message
    });
  });
}

describe("Vercel AI SDK adapter without a server", () => {
  test("no stopWhen of the caller: the SDK's default (one step) is kept beside loopsense's", async () => {
    const v = VERSIONS[1] as Version;
    const model = scripted(v, () => ({ name: "export_status", input: { job: 42 } }));
    const offline = new Client({ baseUrl: "http://127.0.0.1:9", apiKey: "k" }).runs.track({ runId: "r", agentId: "a", timeoutMs: 200 });
    const hooks = new LoopsenseHooks(offline);
    const result = await v.ai.generateText(hooks.wrap({ model, prompt: "p", tools: tools(v, () => ({ state: "pending" })) }));
    assert.equal(result.steps.length, 1);
    assert.equal(hooks.last?.degraded, true); // the service is down: the agent went on
  });

  test("the caller's onStepFinish and onStepEnd, both given, each still runs in its own slot", async () => {
    const tracker = track("nudge");
    tracker.message = async () => degraded();
    const ran: string[] = [];
    const wrapped = new LoopsenseHooks(tracker).wrap({
      onStepFinish: () => { ran.push("finish"); }, onStepEnd: () => { ran.push("end"); },
    }) as unknown as { onStepFinish: (s: object) => Promise<void>; onStepEnd: (s: object) => Promise<void> };
    await wrapped.onStepFinish({ text: "a" });
    await wrapped.onStepEnd({ text: "b" });
    assert.deepEqual(ran, ["finish", "end"]);
  });

  test("a tool error is reported as an error step; the options keep their types (ai 7)", async () => {
    const model = scripted(VERSIONS[2] as Version, (n) => (n === 1 ? { name: "export_status", input: { job: 1 } } : "done"));
    const reported: unknown[] = [];
    const tracker = track("nudge");
    tracker.toolCall = async (action, args, options) => { reported.push({ action, args, ...options }); return degraded(); };
    tracker.message = async (text) => { reported.push({ text }); return degraded(); };
    const hooks = new LoopsenseHooks(tracker);
    const result = await ai7.generateText(hooks.wrap({
      model, prompt: "p", stopWhen: ai7.stepCountIs(3),
      tools: { export_status: ai7.tool({ inputSchema: ai7.jsonSchema<{ job: number }>({ type: "object" }), execute: async (): Promise<{ ok: true }> => { throw new Error("export service down"); } }) },
      onStepEnd: (step) => { assert.ok(Array.isArray(step.toolCalls)); }, // typed by ai 7
    }));
    assert.equal(result.text, "done");
    assert.deepEqual(reported, [{ action: "export_status", args: { job: 1 }, result: { error: "Error: export service down" }, outcome: "error" }, { text: "done" }]);
  });
});

function degraded(): Awaited<ReturnType<LoopsenseHooks["tracker"]["toolCall"]>> {
  return { action: "continue", recommendation: { action: "continue" }, inject: null, findings: [], degraded: true, result: null };
}
