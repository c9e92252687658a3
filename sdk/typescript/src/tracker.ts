/**
 * The run tracker (spec/integrations.md): `client.runs.track({ runId, agentId, policy })` turns an
 * agent's steps into runs-API steps and answers each with the monitor's verdict; the same
 * behaviour as the Python SDK's tracker.
 *
 *     const tracker = client.runs.track({ runId: "run-42", agentId: "ari", policy: "stop" });
 *     const answer = await tracker.toolCall("export_status", { job: 42 }, { result: { state: "pending" } });
 *     if (answer.inject) messages.push(answer.inject); // the nudge to put in front of the model
 *
 * Policies: `observe` records and returns the signals (`inject` stays null); `nudge` sets `inject`
 * to the recommendation's nudge (on nudge and on break); `stop` nudges first, then rejects with
 * `AgentLoopDetected` when the recommendation is `break` (a break before any nudge of this
 * tracker is answered as a nudge once).
 *
 * Never blocking, never rejecting into the agent (AgentLoopDetected aside): each step gets
 * `timeoutMs` (default 2,000) in all from the moment it is called, one attempt, also when it
 * waits behind another call of the same tracker (calls are sent one at a time, in order). When the service is slow, failing or down the
 * step resolves `continue` with `degraded: true` and is kept to send later; after a failure no
 * request is made until the client's backoff has passed (steps are only kept meanwhile). Kept
 * steps go first, in order, with the next step or `flush()`; at most `maxPending` (default
 * 10,000) are kept, the oldest dropped first and counted in `dropped`. A batch whose answer was
 * lost is sent again with its own Idempotency-Key (applied once); dropping it drops it whole. A
 * batch refused for good (400, 401, 403) is dropped and counted in `refused`.
 */
import { randomUUID } from "node:crypto";

import type { Client } from "./client.js";
import { LoopsenseError } from "./errors.js";
import { RUN_CIRCUIT_BREAK, RUN_SIGNAL, RUN_STEPS } from "./routes.js";
import type {
  CircuitBreak, JsonValue, RunAction, RunFinding, RunRecommendation, RunStep, SignalResult, StepsResult,
} from "./types.js";

export type Policy = "observe" | "nudge" | "stop";

export interface TrackOptions {
  runId: string;
  agentId: string;
  /** Default "nudge". */
  policy?: Policy;
  /** The whole step's budget (ms). Default 2,000. */
  timeoutMs?: number;
  /** Steps kept while the service is away; beyond it the oldest are dropped. Default 10,000. */
  maxPending?: number;
}

/** The verdict after one step. */
export interface StepAnswer {
  action: RunAction;
  recommendation: RunRecommendation;
  /** What the policy says to put in front of the model: the nudge, or null. */
  inject: string | null;
  findings: RunFinding[];
  /** The service did not answer in time: `continue`, and the step is kept to send later. */
  degraded: boolean;
  /** The batch's whole answer, when there was one. */
  result: StepsResult | null;
}

/** Rejected by a `stop` tracker when the monitor recommends break after a nudge. */
export class AgentLoopDetected extends Error {
  readonly answer: StepAnswer;
  readonly reason: string;

  constructor(answer: StepAnswer) {
    const reason = answer.recommendation.nudge ?? "loopsense: the agent is looping";
    super(reason);
    this.name = "AgentLoopDetected";
    this.answer = answer;
    this.reason = reason;
  }
}

const POLICIES: readonly Policy[] = ["observe", "nudge", "stop"];
const MAX_BATCH = 500;
const CONTINUE: RunRecommendation = { action: "continue" };
const degraded = (): StepAnswer => ({
  action: "continue", recommendation: CONTINUE, inject: null, findings: [], degraded: true, result: null,
});
const sleep = (ms: number): Promise<void> => new Promise((resolve) => {
  setTimeout(resolve, ms).unref?.();
});

type Step = Record<string, unknown>;

export class Tracker {
  readonly runId: string;
  readonly agentId: string;
  readonly policy: Policy;
  readonly timeoutMs: number;
  readonly maxPending: number;
  /** Steps lost: over maxPending while the service was away. */
  dropped = 0;
  /** Steps of batches the service refused for good. */
  refused = 0;
  /** Steps the service acknowledged. */
  sent = 0;
  readonly #client: Client;
  #inflight: { steps: Step[]; key: string } | null = null;
  #unsent: Step[] = [];
  #failures = 0;
  #retryAt = 0;
  #nudged = false;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(client: Client, options: TrackOptions) {
    const policy = options.policy ?? "nudge";
    if (!POLICIES.includes(policy)) throw new RangeError(`policy must be one of ${POLICIES.join(", ")}`);
    const timeoutMs = options.timeoutMs ?? 2_000;
    const maxPending = options.maxPending ?? 10_000;
    if (!(timeoutMs > 0) || !(maxPending >= 1)) throw new RangeError("timeoutMs and maxPending must be positive");
    this.#client = client;
    this.runId = options.runId;
    this.agentId = options.agentId;
    this.policy = policy;
    this.timeoutMs = timeoutMs;
    this.maxPending = maxPending;
  }

  /** Steps kept to send (the service did not take them yet). */
  get pending(): number {
    return this.#unsent.length + (this.#inflight?.steps.length ?? 0);
  }

  // ---- steps ----------------------------------------------------------------------------------
  /** A tool call with its arguments and result (only their canonical hashes are used). */
  toolCall(action: string, args?: JsonValue, options: { result?: JsonValue; outcome?: RunStep["outcome"] } = {}): Promise<StepAnswer> {
    const step: Step = { kind: "tool_call", action };
    if (args !== undefined) step.args = args;
    if (options.result !== undefined) step.result = options.result;
    if (options.outcome !== undefined) step.outcome = options.outcome;
    return this.step(step);
  }

  llmCall(model: string, text: string): Promise<StepAnswer> {
    return this.step({ kind: "llm_call", model, text });
  }

  /** The agent talking (no tool call): the monologue rule. */
  message(text: string): Promise<StepAnswer> {
    return this.step({ kind: "message", text });
  }

  /** The user's turn: a reset point. */
  userMessage(text: string): Promise<StepAnswer> {
    return this.step({ kind: "user_message", text });
  }

  /** A chunk of a streamed message (the content_loop rule). */
  textChunk(text: string): Promise<StepAnswer> {
    return this.step({ kind: "text_chunk", text });
  }

  /** Any runs-API step; the verdict after it, per the policy. */
  step(step: RunStep | Step): Promise<StepAnswer> {
    return this.#serial(this.timeoutMs, degraded, async (left) => {
      this.#keep({ ...step, agentId: this.agentId });
      const result = await this.#deliver(left());
      if (result === null || this.pending > 0) return degraded();
      const answer = this.#answer(result);
      if (answer.action === "break" && this.policy === "stop") throw new AgentLoopDetected(answer);
      return answer;
    });
  }

  /** The agent's verdict now (kept steps are sent first); null when degraded. */
  signal(): Promise<SignalResult | null> {
    return this.#serial(this.timeoutMs, () => null, async (left) => {
      if ((await this.#deliver(left())) === null && this.pending > 0) return null;
      try {
        return (await this.#client.request(RUN_SIGNAL, {
          params: { runId: this.runId }, query: { agentId: this.agentId }, deadlineMs: left(), maxAttempts: 1,
        })) as SignalResult;
      } catch {
        return null;
      }
    });
  }

  /** Snapshot and clear working memory, reset this agent's monitor; null when degraded. */
  circuitBreak(reason: string): Promise<CircuitBreak | null> {
    return this.#serial(this.timeoutMs, () => null, async (left) => {
      await this.#deliver(left());
      try {
        const broken = (await this.#client.request(RUN_CIRCUIT_BREAK, {
          params: { runId: this.runId }, body: { reason, agentId: this.agentId }, idempotencyKey: randomUUID(),
          deadlineMs: left(),
        })) as CircuitBreak;
        this.#nudged = false;
        return broken;
      } catch {
        return null;
      }
    });
  }

  /** Send what is kept, for at most `timeoutMs`, waiting out the backoff when it ends in time,
   * else trying once at once (a backoff longer than the flush would otherwise keep everything
   * even when the service is back); false if some is still kept. Never rejects. */
  flush(timeoutMs = 10_000): Promise<boolean> {
    return this.#serial(timeoutMs, () => false, async (remaining) => {
      let forced = false;
      while (this.pending > 0) {
        const left = remaining();
        if (left <= 0) return false;
        const wait = this.#retryAt - performance.now();
        if (wait > 0) {
          if (wait < left) {
            await sleep(wait);
            continue;
          }
          if (forced) return false;
          forced = true; // one attempt, not a retry loop
          this.#retryAt = performance.now();
        }
        await this.#deliver(Math.min(this.timeoutMs, left));
      }
      return true;
    });
  }

  // ---- internals ------------------------------------------------------------------------------
  /** One operation at a time, in call order (steps are sent in the order they were recorded),
   * each answered within `budgetMs` of its call: queued behind a slow one, it resolves
   * `fallback()` when its time is up (it still runs when its turn comes, with what is left of its
   * budget, so its step is kept in order). `left()` is what is left of the budget. */
  #serial<T>(budgetMs: number, fallback: () => T, operation: (left: () => number) => Promise<T>): Promise<T> {
    const end = performance.now() + budgetMs;
    const left = (): number => Math.max(0, end - performance.now());
    const turn = (): Promise<T> => operation(left);
    const run = this.#queue.then(turn, turn);
    this.#queue = run.catch(() => undefined);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(fallback()), budgetMs);
    });
    return Promise.race([run, late]).finally(() => clearTimeout(timer));
  }

  #keep(step: Step): void {
    this.#unsent.push(step);
    while (this.pending > this.maxPending) { // the oldest go first
      if (this.#inflight !== null) {
        this.dropped += this.#inflight.steps.length;
        this.#inflight = null;
      } else {
        this.#unsent.shift();
        this.dropped += 1;
      }
    }
  }

  async #deliver(budgetMs: number): Promise<StepsResult | null> {
    if (performance.now() < this.#retryAt) return null;
    const end = performance.now() + budgetMs;
    let result: StepsResult | null = null;
    while (this.#inflight !== null || this.#unsent.length > 0) {
      if (this.#inflight === null) {
        this.#inflight = { steps: this.#unsent.splice(0, MAX_BATCH), key: randomUUID() };
      }
      const left = end - performance.now();
      if (left <= 0) return null;
      const batch = this.#inflight;
      try {
        result = (await this.#client.request(RUN_STEPS, {
          params: { runId: this.runId }, body: { steps: batch.steps }, idempotencyKey: batch.key,
          deadlineMs: left, maxAttempts: 1,
        })) as StepsResult;
        this.sent += batch.steps.length;
      } catch (error) {
        if (error instanceof LoopsenseError && error.retryable) {
          this.#failures += 1;
          this.#retryAt = performance.now() + this.#client.retryDelay(this.#failures, error.retryAfter);
          return null;
        }
        this.refused += batch.steps.length; // refused for good: never retried
      }
      this.#inflight = null;
      this.#failures = 0;
    }
    return result;
  }

  #answer(result: StepsResult): StepAnswer {
    const on = "recommendation" in result ? result : null; // null: the monitor is off
    let recommendation = on?.recommendation ?? CONTINUE;
    if (recommendation.action === "break" && this.policy === "stop" && !this.#nudged) {
      recommendation = { ...recommendation, action: "nudge" }; // nudge first
    }
    let inject: string | null = null;
    if (this.policy !== "observe" && recommendation.action !== "continue") {
      inject = recommendation.nudge ?? null;
      this.#nudged = true;
    }
    return {
      action: recommendation.action, recommendation, inject, findings: on?.findings ?? [], degraded: false, result,
    };
  }
}
