/**
 * Streaming telemetry of one execution (spec/failure_groups.md, "Ingestion"):
 * `client.telemetry(executionId)`, the same surface as the Python SDK's.
 *
 *     const telemetry = client.telemetry("run-42");
 *     telemetry.llmCall("gpt-4o-mini", prompt);
 *     telemetry.toolCall("search", { q: "hotels" });
 *     telemetry.checkpoint("plan", { goal, step });
 *     await telemetry.end({ durationMs: 75_000 });   // flushes, then POST .../end
 *
 * Recording never waits on the network and never throws: events go into a bounded buffer
 * (`maxBuffered`; beyond it new events are dropped and counted in `dropped`) that one drain loop
 * sends in order, in batches of up to `batchSize` (POST /v1/executions/{id}/events), at least
 * every `flushIntervalMs`. Each batch has its own Idempotency-Key, kept across its retries, so a
 * batch is applied once. While the service is slow or down the batch waits and is retried; a
 * batch the service refuses (400, 401, 409 ended...) is dropped and counted. Events carry their
 * time (epoch ms) unless given one. Before the process exits, what is buffered gets a last,
 * bounded flush. Nothing of the events is ever logged.
 */
import { randomUUID } from "node:crypto";

import type { Client } from "./client.js";
import { LoopsenseError } from "./errors.js";
import { EXECUTION_END, EXECUTION_EVENTS } from "./routes.js";
import type { EventsAccepted, ExecutionEnded } from "./types.js";

/** `client.executions`: the ingestion routes one request at a time (Telemetry sends through
 * these). */
export class Executions {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** Add a batch of 1..500 events; the same batch again (same Idempotency-Key, a random UUID per
   * call unless given, or the same seq) is acknowledged as a duplicate and counted once. */
  async events(executionId: string, events: Record<string, unknown>[],
    options: { seq?: number; idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<EventsAccepted> {
    const body: Record<string, unknown> = { events };
    if (options.seq !== undefined) body.seq = options.seq;
    return (await this.#client.request(EXECUTION_EVENTS, {
      params: { executionId }, body, idempotencyKey: options.idempotencyKey ?? randomUUID(), signal: options.signal,
    })) as EventsAccepted;
  }

  /** Mark the execution finished; a second end answers alreadyEnded. */
  async end(executionId: string, options: { durationMs?: number; signal?: AbortSignal } = {}): Promise<ExecutionEnded> {
    const body = options.durationMs === undefined ? {} : { durationMs: options.durationMs };
    return (await this.#client.request(EXECUTION_END, { params: { executionId }, body, signal: options.signal })) as ExecutionEnded;
  }
}

export interface TelemetryOptions {
  /** Events per batch, 1..500. Default 50. */
  batchSize?: number;
  /** Send what is buffered at least this often (ms). Default 1,000. */
  flushIntervalMs?: number;
  /** Events kept while they cannot be sent; more are dropped. Default 10,000. */
  maxBuffered?: number;
}

const MAX_BATCH = 500;
const EXIT_FLUSH_MS = 2_000;

type Event = Record<string, unknown> & { type: string };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => {
  setTimeout(resolve, ms).unref?.();
});

export class Telemetry {
  readonly executionId: string;
  /** Events lost: the buffer was full, or their batch was refused by the service. */
  dropped = 0;
  readonly #client: Client;
  readonly #batchSize: number;
  readonly #intervalMs: number;
  readonly #maxBuffered: number;
  #buffer: Event[] = [];
  #draining: Promise<void> | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #closed = false;
  readonly #onExit = (): void => {
    process.removeListener("beforeExit", this.#onExit);
    void this.flush(EXIT_FLUSH_MS);
  };

  constructor(client: Client, executionId: string, options: TelemetryOptions = {}) {
    const batchSize = options.batchSize ?? 50;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) {
      throw new RangeError(`batchSize must be an integer from 1 to ${MAX_BATCH}`);
    }
    const intervalMs = options.flushIntervalMs ?? 1_000;
    const maxBuffered = options.maxBuffered ?? 10_000;
    if (!(intervalMs > 0) || !(maxBuffered >= 1)) {
      throw new RangeError("flushIntervalMs and maxBuffered must be positive");
    }
    this.executionId = executionId;
    this.#client = client;
    this.#batchSize = batchSize;
    this.#intervalMs = intervalMs;
    this.#maxBuffered = maxBuffered;
    process.on("beforeExit", this.#onExit);
  }

  // ---- recording (never waits, never throws) --------------------------------------------------
  /** Any event: `type` plus its fields (`timestamp` defaults to now, epoch ms). */
  event(type: string, fields: Record<string, unknown> = {}): void {
    if (this.#closed || this.#buffer.length >= this.#maxBuffered) {
      this.dropped += 1;
      return;
    }
    this.#buffer.push({ timestamp: Date.now(), ...fields, type });
    if (this.#buffer.length >= this.#batchSize) {
      this.#drain();
    } else if (this.#timer === null && this.#draining === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#drain();
      }, this.#intervalMs);
      this.#timer.unref?.();
    }
  }

  llmCall(model: string, userMessage: string, fields: Record<string, unknown> = {}): void {
    this.event("llm_call", { ...fields, model, user_message: userMessage });
  }

  toolCall(name: string, args?: unknown, fields: Record<string, unknown> = {}): void {
    this.event("tool_call", args === undefined ? { ...fields, name } : { ...fields, name, arguments: args });
  }

  /** A checkpoint for agent.semantic_loop: `state` becomes `metadata`. */
  checkpoint(name?: string, state: Record<string, unknown> = {}): void {
    this.event("checkpoint", name === undefined ? { metadata: state } : { name, metadata: state });
  }

  // ---- flushing -------------------------------------------------------------------------------
  /** Resolves true once everything recorded so far is sent (or dropped), false after
   * `timeoutMs` with some still waiting (the service is slow or down). Never rejects. */
  async flush(timeoutMs = 10_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.#buffer.length > 0 || this.#draining !== null) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const draining = this.#drain();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), left);
      });
      const outcome = await Promise.race([draining.then(() => "done" as const), timedOut]);
      clearTimeout(timer);
      if (outcome === "timeout") return false;
    }
    return true;
  }

  /** Flush, mark the execution finished (similar_call and time_budget are evaluated then), and
   * stop. Resolves false if the flush or the end did not get through; never rejects. */
  async end(options: { durationMs?: number; timeoutMs?: number } = {}): Promise<boolean> {
    const flushed = await this.flush(options.timeoutMs ?? 10_000);
    this.close();
    if (!flushed) return false;
    try {
      await this.#client.executions.end(this.executionId, { durationMs: options.durationMs });
      return true;
    } catch {
      return false;
    }
  }

  /** Stop: what is still buffered is not sent. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    process.removeListener("beforeExit", this.#onExit);
  }

  // ---- the drain loop -------------------------------------------------------------------------
  #drain(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#draining === null) {
      this.#draining = this.#send().finally(() => {
        this.#draining = null;
      });
    }
    return this.#draining;
  }

  async #send(): Promise<void> {
    while (this.#buffer.length > 0 && !this.#closed) {
      const batch = this.#buffer.slice(0, this.#batchSize);
      const key = randomUUID();
      for (let failures = 0; ; failures++) {
        try {
          await this.#client.executions.events(this.executionId, batch, { idempotencyKey: key });
          break;
        } catch (error) {
          if (error instanceof LoopsenseError && error.retryable && !this.#closed) {
            await sleep(this.#client.retryDelay(failures + 1, error.retryAfter));
            continue; // the same batch, the same key
          }
          this.dropped += batch.length; // refused for good (or closed): never retried
          break;
        }
      }
      this.#buffer.splice(0, batch.length);
    }
  }
}
