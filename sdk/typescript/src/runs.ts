/**
 * `client.runs`: the stateful runs API (/v1/runs/{runId}/...): the run monitor (docs/runs.md),
 * working memory, lessons, events, the circuit break, snapshots, restore and the briefing
 * (docs/recover.md); the same surface as the Python SDK's `client.runs`.
 *
 *     const signal = await client.runs.signal(runId, { agentId: "ari" });
 *     if (signal.signal.is_looping) await client.runs.circuitBreak(runId, { reason: "loop" });
 *
 * Each method is one request (the listings follow the pages to the end) with execute()'s rules:
 * typed errors, retries of what the server marks retryable within the deadline, and for steps,
 * circuitBreak and restore one Idempotency-Key per call (a random UUID unless given), sent again
 * on each retry, so a retry after a lost answer is applied and charged once. The other writes
 * are idempotent by nature (register is an upsert, config and putMemory PUTs); addLesson is not.
 * Answers are the wire JSON, typed (types.ts).
 */
import { randomUUID } from "node:crypto";

import type { Client } from "./client.js";
import * as R from "./routes.js";
import type { Route } from "./routes.js";
import { Tracker } from "./tracker.js";
import type { TrackOptions } from "./tracker.js";
import type {
  Briefing, CircuitBreak, JsonValue, Lesson, MemoryWrite, Restore, RunAgent, RunConfig, RunEvent,
  RunMonitorConfig, RunReset, RunStep, SignalResult, StepsResult, RunPage, RunSummary, RunDetail,
} from "./types.js";

/** Options every runs call takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface KeyedOptions extends CallOptions {
  /** Default: a new random UUID per call, reused by its retries. */
  idempotencyKey?: string;
}

const PAGE = 1000;

export class Runs {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** A run tracker for one agent (tracker.ts): each step answered within `timeoutMs`, never
   * rejecting into the agent but, with policy "stop", AgentLoopDetected after a nudge. */
  track(options: TrackOptions): Tracker {
    return new Tracker(this.#client, options);
  }

  /** Register (or update) an agent: its role and objective (for drift). Keeps its state. */
  async register(runId: string, options: { agentId: string; role?: string; objectiveEmbedding?: number[] } & CallOptions): Promise<RunAgent> {
    const body: Record<string, unknown> = { agentId: options.agentId };
    if (options.role !== undefined) body.role = options.role;
    if (options.objectiveEmbedding !== undefined) body.objectiveEmbedding = options.objectiveEmbedding;
    return (await this.#call(R.RUN_AGENTS, runId, { body, signal: options.signal })) as RunAgent;
  }

  /** A batch of one agent's steps (1..500, in order); the verdict after the last. `agentId`
   * fills in the steps that have none. */
  async steps(runId: string, steps: RunStep[], options: { agentId?: string } & KeyedOptions = {}): Promise<StepsResult> {
    const batch = steps.map((step) => (options.agentId === undefined ? step : { agentId: options.agentId, ...step }));
    return (await this.#call(R.RUN_STEPS, runId, {
      body: { steps: batch }, idempotencyKey: options.idempotencyKey ?? randomUUID(), signal: options.signal,
    })) as StepsResult;
  }

  /** The agent's verdict now: RunAgentNotFoundError if the run has no such agent. */
  async signal(runId: string, options: { agentId: string } & CallOptions): Promise<SignalResult> {
    return (await this.#call(R.RUN_SIGNAL, runId, { query: { agentId: options.agentId }, signal: options.signal })) as SignalResult;
  }

  /** A reset point for one agent, or for every agent of the run. */
  async reset(runId: string, options: { agentId?: string } & CallOptions = {}): Promise<RunReset> {
    const body = options.agentId === undefined ? {} : { agentId: options.agentId };
    return (await this.#call(R.RUN_RESET, runId, { body, signal: options.signal })) as RunReset;
  }

  /** Set the run's config (replaces the previous one; applies from each agent's next step). */
  async config(runId: string, config: RunMonitorConfig, options: CallOptions = {}): Promise<RunConfig> {
    return (await this.#call(R.RUN_CONFIG, runId, { body: config, signal: options.signal })) as RunConfig;
  }

  // working memory and lessons ------------------------------------------------------------------
  /** Store a JSON value of at most 32 KiB under `key`. */
  async putMemory(runId: string, key: string, value: JsonValue, options: CallOptions = {}): Promise<MemoryWrite> {
    return (await this.#call(R.RUN_MEMORY_PUT, runId, { params: { key }, body: value, signal: options.signal })) as MemoryWrite;
  }

  /** The value under `key`; NotFoundError (RUN_MEMORY_NOT_FOUND) if there is none. */
  async getMemory(runId: string, key: string, options: CallOptions = {}): Promise<JsonValue> {
    const answer = (await this.#call(R.RUN_MEMORY_GET, runId, { params: { key }, signal: options.signal })) as { value: JsonValue };
    return answer.value;
  }

  /** Delete `key`; NotFoundError (RUN_MEMORY_NOT_FOUND) if there is none. */
  async deleteMemory(runId: string, key: string, options: CallOptions = {}): Promise<void> {
    await this.#call(R.RUN_MEMORY_DELETE, runId, { params: { key }, signal: options.signal });
  }

  /** All of working memory, `{key: value}` in key order. */
  async memory(runId: string, options: CallOptions = {}): Promise<Record<string, JsonValue>> {
    return this.#entries(R.RUN_MEMORY, runId, {}, options.signal);
  }

  /** Add a lesson (it outlives circuit breaks). Not idempotent: a retry may store it twice. */
  async addLesson(runId: string, text: string, options: { tags?: string[]; kind?: string } & CallOptions = {}): Promise<Lesson> {
    return (await this.#call(R.RUN_LESSONS_ADD, runId, {
      body: { text, tags: options.tags ?? [], kind: options.kind ?? "lesson" }, signal: options.signal,
    })) as Lesson;
  }

  /** Every lesson of the run, oldest first. */
  async lessons(runId: string, options: CallOptions = {}): Promise<Lesson[]> {
    const out: Lesson[] = [];
    for await (const page of this.#pages(R.RUN_LESSONS, runId, {}, options.signal)) out.push(...(page.lessons as Lesson[]));
    return out;
  }

  /** The run's event log, oldest first. */
  async events(runId: string, options: CallOptions = {}): Promise<RunEvent[]> {
    const out: RunEvent[] = [];
    for await (const page of this.#pages(R.RUN_EVENTS, runId, {}, options.signal)) out.push(...(page.events as RunEvent[]));
    return out;
  }

  // the circuit break, snapshots, the briefing ---------------------------------------------------
  /** Snapshot working memory, clear it, reset the agent's (or every agent's) monitor and log
   * CIRCUIT_BROKEN, as one atomic step. */
  async circuitBreak(runId: string, options: { reason: string; agentId?: string } & KeyedOptions): Promise<CircuitBreak> {
    const body: Record<string, unknown> = { reason: options.reason };
    if (options.agentId !== undefined) body.agentId = options.agentId;
    return (await this.#call(R.RUN_CIRCUIT_BREAK, runId, {
      body, idempotencyKey: options.idempotencyKey ?? randomUUID(), signal: options.signal,
    })) as CircuitBreak;
  }

  /** The working memory a break (or a restore) saved, `{key: value}` in key order. */
  async snapshot(runId: string, snapshotId: string, options: CallOptions = {}): Promise<Record<string, JsonValue>> {
    return this.#entries(R.RUN_SNAPSHOT, runId, { snapshotId }, options.signal);
  }

  /** Replace working memory with the snapshot's; the replaced memory is kept as a snapshot. */
  async restore(runId: string, snapshotId: string, options: KeyedOptions = {}): Promise<Restore> {
    return (await this.#call(R.RUN_RESTORE, runId, {
      params: { snapshotId }, body: {}, idempotencyKey: options.idempotencyKey ?? randomUUID(), signal: options.signal,
    })) as Restore;
  }

  /** The briefing of a fresh attempt within `maxTokenBudget` tokens (default 1,500). */
  async context(runId: string, options: { query: string; maxTokenBudget?: number } & CallOptions): Promise<Briefing> {
    return (await this.#call(R.RUN_CONTEXT, runId, {
      body: { query: options.query, max_token_budget: options.maxTokenBudget ?? 1500 }, signal: options.signal,
    })) as Briefing;
  }

  // reading runs (docs/runs.md, "Reading runs") ------------------------------------------------
  /** One page of the tenant's live runs, newest activity first (`limit` 1..50, default 20),
   * each with its agents' signal and recommendation; `nextCursor` continues it. */
  async list(options: { limit?: number; cursor?: string } & CallOptions = {}): Promise<RunPage> {
    return (await this.#client.request(R.RUNS_LIST, {
      query: { limit: options.limit, cursor: options.cursor }, signal: options.signal,
    })) as RunPage;
  }

  /** Every live run, following the pages. */
  async *all(options: { pageSize?: number } & CallOptions = {}): AsyncGenerator<RunSummary> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.list({ limit: options.pageSize ?? 50, cursor, signal: options.signal });
      yield* page.items;
      if (page.nextCursor === null) return;
      cursor = page.nextCursor;
    }
  }

  /** A run: each live agent's full signal (findings with their rationale) and recommendation,
   * and its config; NotFoundError (RUN_NOT_FOUND) when it has no live agent. */
  async get(runId: string, options: CallOptions = {}): Promise<RunDetail> {
    return (await this.#call(R.RUN_GET, runId, { signal: options.signal })) as RunDetail;
  }

  async *#pages(route: Route, runId: string, params: Record<string, string>, signal?: AbortSignal): AsyncGenerator<Record<string, unknown>> {
    let query: Record<string, string | number> = { limit: PAGE };
    for (;;) {
      const page = (await this.#call(route, runId, { params, query, signal })) as Record<string, unknown>;
      yield page;
      if (page.next === null || page.next === undefined) return;
      query = { limit: PAGE, after: String(page.next) };
    }
  }

  async #entries(route: Route, runId: string, params: Record<string, string>, signal?: AbortSignal): Promise<Record<string, JsonValue>> {
    const entries: Record<string, JsonValue> = {};
    for await (const page of this.#pages(route, runId, params, signal)) Object.assign(entries, page.entries);
    return entries;
  }

  #call(route: Route, runId: string, options: {
    params?: Record<string, string>; query?: Record<string, string | number>; body?: unknown;
    idempotencyKey?: string; signal?: AbortSignal | undefined;
  }): Promise<unknown> {
    return this.#client.request(route, { ...options, params: { runId, ...(options.params ?? {}) } });
  }
}
