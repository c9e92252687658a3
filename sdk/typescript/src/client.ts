/// <reference types="node" preserve="true" />
// The public types use Node's globals (fetch, Headers, AbortSignal): @types/node is a peer.
import { randomUUID } from "node:crypto";

import { ConnectionError, LoopsenseError, RequestTimeoutError, errorFromResponse } from "./errors.js";
import { FailureGroups } from "./failureGroups.js";
import { EXECUTE, FILES, LOGS, PLAYBOOK, TRACES, USAGE, routePath } from "./routes.js";
import type { Route } from "./routes.js";
import { Runs } from "./runs.js";
import { Settings } from "./settings.js";
import { Executions, Telemetry } from "./telemetry.js";
import type { TelemetryOptions } from "./telemetry.js";
import type {
  ExecuteResponse, FileInput, FileOutput, FileUpload, Playbook, SkillKey, SkillMap, Usage,
} from "./types.js";

export const DEFAULT_BASE_URL = "http://127.0.0.1:3000";
export const SDK_VERSION = "0.1.0";

export interface ClientOptions {
  /** Default: process.env.LOOPSENSE_API_KEY; required (the constructor throws without one). */
  apiKey?: string;
  /** Default: process.env.LOOPSENSE_BASE_URL, else http://127.0.0.1:3000 (`loopsense serve`). */
  baseUrl?: string;
  /** One request's timeout (ms). Default 10,000. */
  timeoutMs?: number;
  /** Requests per execute, the first included. Default 4; 1 disables retries. */
  maxAttempts?: number;
  /** Total time for one execute, all attempts and waits included (ms). Default 30,000. */
  deadlineMs?: number;
  /** Backoff before retry n (n = 1, 2, ...): uniform in [0, min(max, base * 2^(n-1))]. */
  backoffBaseMs?: number;
  /** Default 5,000. */
  backoffMaxMs?: number;
  /** Default: the global fetch (Node 18+). */
  fetch?: typeof fetch;
  /** How to wait between attempts. Default: setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  /** Random numbers in [0, 1) for the jitter. Default: Math.random. */
  random?: () => number;
  /** Milliseconds clock for the deadline. Default: performance.now. */
  now?: () => number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface ExecuteOptions {
  /** The skill version (default: the skill's current version). */
  version?: string;
  /** Default: a new random UUID per execute, reused by its retries. */
  idempotencyKey?: string;
  /** Cancels the call (no further attempts); the abort reason is thrown. */
  signal?: AbortSignal;
  /** An output too large to inline (a FileOutput) is downloaded from its pre-signed URL and put
   * in its place. Default true; false: the FileOutput as the server answered it. */
  fetchOutput?: boolean;
}

/** One call of `Client.request`. */
export interface RequestOptions {
  /** The route's `{name}` parameters. */
  params?: Record<string, string>;
  /** Query parameters (undefined values left out). */
  query?: Record<string, string | number | undefined>;
  /** A JSON body (undefined: none). */
  body?: unknown;
  /** Sent on every attempt of this call: a retry after a lost answer is applied once. */
  idempotencyKey?: string;
  /** Cancels the call (no further attempts); the abort reason is thrown. */
  signal?: AbortSignal;
  /** This call's deadline (ms, attempts and waits included); default the client's. */
  deadlineMs?: number;
  /** This call's attempts; default the client's (the run tracker uses 1). */
  maxAttempts?: number;
}

export interface BackoffOptions {
  backoffBaseMs: number;
  backoffMaxMs: number;
  random: () => number;
}

/**
 * The wait before retry `retry` (1 for the first retry): exponential backoff with full jitter,
 * `random() * min(max, base * 2^(retry-1))`, and at least the server's Retry-After.
 */
export function backoffDelay(retry: number, options: BackoffOptions, retryAfterSeconds?: number | null): number {
  const cap = Math.min(options.backoffMaxMs, options.backoffBaseMs * 2 ** Math.max(0, retry - 1));
  const jittered = options.random() * cap;
  const floor = retryAfterSeconds === null || retryAfterSeconds === undefined ? 0 : retryAfterSeconds * 1000;
  return Math.max(jittered, floor);
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function positive(name: string, value: number, integer = false): number {
  if (!Number.isFinite(value) || value < 0 || (integer && (!Number.isInteger(value) || value < 1))) {
    throw new RangeError(`${name} must be a ${integer ? "positive integer" : "non-negative number"}`);
  }
  return value;
}

export class Client {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  readonly deadlineMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly #apiKey: string;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;
  readonly #headers: Record<string, string>;
  /** The stateful runs API (runs.ts). */
  readonly runs: Runs;
  /** Telemetry ingestion, one batch per call (`telemetry()` buffers in the background). */
  readonly executions: Executions;
  readonly failureGroups: FailureGroups;
  /** Severity routing, retention, detector thresholds, the time budget. */
  readonly settings: Settings;

  constructor(options: ClientOptions = {}) {
    const env = typeof process === "undefined" ? {} : process.env;
    const apiKey = options.apiKey ?? env.LOOPSENSE_API_KEY;
    if (!apiKey) throw new TypeError("no API key: pass { apiKey } or set LOOPSENSE_API_KEY");
    this.#apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? env.LOOPSENSE_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.timeoutMs = positive("timeoutMs", options.timeoutMs ?? 10_000);
    this.maxAttempts = positive("maxAttempts", options.maxAttempts ?? 4, true);
    this.deadlineMs = positive("deadlineMs", options.deadlineMs ?? 30_000);
    this.backoffBaseMs = positive("backoffBaseMs", options.backoffBaseMs ?? 200);
    this.backoffMaxMs = positive("backoffMaxMs", options.backoffMaxMs ?? 5_000);
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? (() => performance.now());
    this.#headers = { ...(options.headers ?? {}) };
    this.runs = new Runs(this);
    this.executions = new Executions(this);
    this.failureGroups = new FailureGroups(this);
    this.settings = new Settings(this);
  }

  /**
   * Runs a skill: POST /v1/execute. Retries retryable errors (the server's `retryable` flag, and
   * connection failures) with backoff, within maxAttempts and deadlineMs, all with one
   * Idempotency-Key so that a retry is never charged twice. Throws a LoopsenseError subclass.
   * Typed for the v1 skills (SkillMap): another key does not compile; see executeAny.
   */
  async execute<K extends SkillKey>(
    skillKey: K,
    input: SkillMap[K]["input"] | FileInput<SkillMap[K]["input"]>,
    options: ExecuteOptions = {},
  ): Promise<ExecuteResponse<K>> {
    return (await this.#execute(skillKey, input, options)) as ExecuteResponse<K>;
  }

  /** execute() for any skill key, untyped (`output: unknown`): a skill newer than this SDK. */
  async executeAny(skillKey: string, input: unknown, options: ExecuteOptions = {}): Promise<ExecuteResponse> {
    return (await this.#execute(skillKey, input, options)) as ExecuteResponse;
  }

  async #execute(skillKey: string, input: unknown, options: ExecuteOptions): Promise<unknown> {
    const envelope: Record<string, unknown> = { skillKey, input };
    if (options.version !== undefined) envelope.version = options.version;
    const answer = (await this.request(EXECUTE, {
      body: envelope, idempotencyKey: options.idempotencyKey ?? randomUUID(), signal: options.signal,
    })) as { output?: unknown };
    if (options.fetchOutput !== false && isFileOutput(answer.output)) {
      // too large to inline: the output's JSON at its pre-signed URL (docs/files.md)
      answer.output = parseAnswer(await this.#send("GET", answer.output.downloadUrl, undefined,
        this.#outsideHeaders(), options.signal));
    }
    return answer;
  }

  /**
   * Uploads an input's events for `execute(skill, { fileRef, ...params })` in place of inline ones:
   * POST /v1/files, then a PUT of `data` to its pre-signed URL (an array: its events as one JSON
   * array; text or bytes as they are, a JSON array or JSON Lines; at most 2 MiB). Returns the
   * fileRef, good for one successful execute within a day.
   */
  async upload(data: readonly unknown[] | string | Uint8Array, signal?: AbortSignal): Promise<string> {
    const made = await this.newFile(signal);
    const body = typeof data === "string" || data instanceof Uint8Array ? data : JSON.stringify(data);
    await this.#send(made.method, made.uploadUrl, body, this.#outsideHeaders(), signal);
    return made.fileRef;
  }

  /** GET /v1/playbooks/{name}: what to do about a finding (its `playbook`). */
  async playbook(name: string, signal?: AbortSignal): Promise<Playbook> {
    return (await this.request(PLAYBOOK, { params: { name }, signal })) as Playbook;
  }

  /** GET /v1/usage: this period's credits against the plan's, and the charged calls of each of
   * the last 30 days (UTC), per skill. */
  async usage(signal?: AbortSignal): Promise<Usage> {
    return (await this.request(USAGE, { signal })) as Usage;
  }

  /** POST /v1/files: a `fileRef` and a short-lived pre-signed `uploadUrl`; PUT the events there
   * (a JSON array or JSON Lines, at most 2 MiB), then `execute(skill, { fileRef })` in place of
   * inline events. */
  async newFile(signal?: AbortSignal): Promise<FileUpload> {
    return (await this.request(FILES, { body: {}, signal })) as FileUpload;
  }

  /**
   * POST /v1/traces: an OTLP/HTTP export in OTLP JSON (`{resourceSpans: [...]}`), for a pipeline
   * that already holds one (an OpenTelemetry exporter needs no SDK). OTLP's `{partialSuccess}`.
   */
  async exportTraces(exportJson: unknown, signal?: AbortSignal): Promise<Record<string, unknown>> {
    return (await this.request(TRACES, { body: exportJson, signal })) as Record<string, unknown>;
  }

  /**
   * POST /v1/logs: an OTLP/HTTP log export in OTLP JSON (`{resourceLogs: [...]}`): the GenAI
   * events carrying the messages of the spans sent to exportTraces, joined to them by trace and
   * span id. OTLP's `{partialSuccess}`.
   */
  async exportLogs(exportJson: unknown, signal?: AbortSignal): Promise<Record<string, unknown>> {
    return (await this.request(LOGS, { body: exportJson, signal })) as Record<string, unknown>;
  }

  /**
   * One call of a route with this client's retries, deadline and (when given) one
   * Idempotency-Key for all attempts: the answer's JSON. Throws a LoopsenseError subclass.
   */
  async request(route: Route, options: RequestOptions = {}): Promise<unknown> {
    let path = routePath(route, options.params);
    const query = Object.entries(options.query ?? {}).filter(
      (entry): entry is [string, string | number] => entry[1] !== undefined);
    if (query.length > 0) path += "?" + new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)])).toString();
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers = this.#requestHeaders(options.idempotencyKey);
    return parseAnswer(await this.#send(route.method, path, body, headers, options.signal, {
      deadlineMs: options.deadlineMs ?? this.deadlineMs, maxAttempts: options.maxAttempts ?? this.maxAttempts,
    }));
  }

  /**
   * Streaming telemetry of one execution, sent in the background (failure groups):
   * `checkpoint`, `llmCall`, `toolCall`, `event`, then `end()`. See telemetry.ts.
   */
  telemetry(executionId: string, options: TelemetryOptions = {}): Telemetry {
    return new Telemetry(this, executionId, options);
  }

  /**
   * POSTs a JSON body to an API path with this client's retries, deadline and (when given) one
   * Idempotency-Key for all attempts; the answer's JSON. Throws a LoopsenseError subclass.
   */
  async postJson(path: string, body: unknown, idempotencyKey?: string): Promise<unknown> {
    return parseAnswer(await this.#send("POST", path, JSON.stringify(body), this.#requestHeaders(idempotencyKey)));
  }

  /** The wait before retry `retry` (1 for the first), as the client's own retries wait. */
  retryDelay(retry: number, retryAfterSeconds?: number | null): number {
    return backoffDelay(retry, {
      backoffBaseMs: this.backoffBaseMs, backoffMaxMs: this.backoffMaxMs, random: this.#random,
    }, retryAfterSeconds);
  }

  /** A pre-signed URL's headers: its signature is its credential, so no API key goes with it. */
  #outsideHeaders(): Record<string, string> {
    return { "User-Agent": `loopsense-sdk-typescript/${SDK_VERSION}` };
  }

  #requestHeaders(idempotencyKey?: string): Record<string, string> {
    const headers: Record<string, string> = {
      ...this.#headers,
      "Content-Type": "application/json",
      Accept: "application/json",
      "User-Agent": `loopsense-sdk-typescript/${SDK_VERSION}`,
    };
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    headers.Authorization = `Bearer ${this.#apiKey}`;
    return headers;
  }

  /** `path`: the API's (from "/"), or a whole pre-signed URL. */
  async #send(
    method: string, path: string, body: string | Uint8Array | undefined, headers: Record<string, string>, signal?: AbortSignal,
    limits: { deadlineMs: number; maxAttempts: number } = { deadlineMs: this.deadlineMs, maxAttempts: this.maxAttempts },
  ): Promise<Answer> {
    const started = this.#now();
    const deadline = started + limits.deadlineMs;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      let error: LoopsenseError;
      try {
        return await this.#attempt(method, path, body, headers, deadline, signal);
      } catch (caught) {
        if (!(caught instanceof LoopsenseError)) throw caught;
        error = caught;
      }
      error.attempts = attempt;
      if (!error.retryable || attempt >= limits.maxAttempts) throw error;
      const wait = backoffDelay(attempt, {
        backoffBaseMs: this.backoffBaseMs, backoffMaxMs: this.backoffMaxMs, random: this.#random,
      }, error.retryAfter);
      if (this.#now() + wait >= deadline) throw error; // the wait alone would pass the deadline
      await this.#sleep(wait);
    }
  }

  async #attempt(
    method: string, path: string, body: string | Uint8Array | undefined, headers: Record<string, string>, deadline: number, signal?: AbortSignal,
  ): Promise<Answer> {
    const remaining = deadline - this.#now();
    const budget = Math.min(this.timeoutMs, remaining);
    if (budget <= 0) {
      throw new RequestTimeoutError({
        code: "REQUEST_TIMEOUT", message: `no time left within the ${this.deadlineMs} ms deadline`,
        status: null, retryable: true,
      });
    }
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => controller.abort(TIMED_OUT), budget);
    try {
      const response = await this.#fetch(path.startsWith("/") ? this.baseUrl + path : path, {
        method, headers, body, signal: controller.signal,
      });
      const text = await response.text();
      if (response.ok) return { status: response.status, text };
      throw errorFromResponse(response.status, text, response.headers);
    } catch (caught) {
      if (caught instanceof LoopsenseError) throw caught;
      signal?.throwIfAborted();
      if (controller.signal.aborted && controller.signal.reason === TIMED_OUT) {
        const byDeadline = budget < this.timeoutMs;
        throw new RequestTimeoutError({
          code: "REQUEST_TIMEOUT",
          message: byDeadline
            ? `the request did not finish within the ${this.deadlineMs} ms deadline`
            : `the request did not finish within ${this.timeoutMs} ms`,
          status: null, retryable: true, cause: caught,
        });
      }
      throw new ConnectionError({
        code: "CONNECTION_ERROR",
        message: `could not reach ${this.baseUrl}: ${describe(caught)}`,
        status: null, retryable: true, cause: caught,
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

interface Answer { status: number; text: string }

function isFileOutput(output: unknown): output is FileOutput {
  return typeof output === "object" && output !== null && "fileRef" in output && "downloadUrl" in output;
}

/** A 2xx answer's JSON; a body that is not JSON is a LoopsenseError (INVALID_RESPONSE). */
function parseAnswer({ status, text }: Answer): unknown {
  try {
    return JSON.parse(text);
  } catch (caught) {
    throw new LoopsenseError({
      code: "INVALID_RESPONSE", message: `a ${status} answer whose body is not JSON`,
      status, retryable: false, cause: caught,
    });
  }
}

const TIMED_OUT = Symbol("loopsense request timeout");

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? cause.message : "";
    return detail ? `${error.message} (${detail})` : error.message;
  }
  return String(error);
}
