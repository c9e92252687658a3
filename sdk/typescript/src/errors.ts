/**
 * Typed errors: one class per platform code family (spec/platform.md, Errors), so callers can
 * `catch (e) { if (e instanceof RateLimitError) ... }`. Every error carries the envelope's
 * fields; `retryable` is always the server's own flag (a class is a family, not a promise).
 */

export interface ErrorDetail {
  path: string;
  issue: string;
}

export interface LoopsenseErrorInit {
  code: string;
  message: string;
  /** HTTP status; null when no response was received (ConnectionError). */
  status: number | null;
  retryable: boolean;
  next?: string | null;
  details?: ErrorDetail[];
  requestId?: string | null;
  /** Seconds from the Retry-After header, when the server sent one. */
  retryAfter?: number | null;
  /** How many requests were made for this call before it gave up. */
  attempts?: number;
  cause?: unknown;
}

export class LoopsenseError extends Error {
  readonly code: string;
  readonly status: number | null;
  readonly retryable: boolean;
  readonly next: string | null;
  readonly details: ErrorDetail[];
  readonly requestId: string | null;
  readonly retryAfter: number | null;
  attempts: number;

  constructor(init: LoopsenseErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.retryable = init.retryable;
    this.next = init.next ?? null;
    this.details = init.details ?? [];
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.attempts = init.attempts ?? 1;
  }
}

/** 400: VALIDATION_ERROR, a skill's input errors (LOOP_EVENTS_INVALID, RUN_STEPS_INVALID), RUN_BATCH_INVALID, TIME_BUDGET_ABOVE_PLAN_CAP. */
export class ValidationError extends LoopsenseError {}
/** 401 UNAUTHORIZED: no key, a malformed, unknown or revoked key. */
export class AuthenticationError extends LoopsenseError {}
/** 403 SKILL_NOT_ACCESSIBLE (key scope), SKILL_NOT_AVAILABLE_FOR_PLAN. */
export class PermissionDeniedError extends LoopsenseError {}
/** 403 SKILL_NOT_ACCESSIBLE: the key is not granted this skill. */
export class SkillNotAccessibleError extends PermissionDeniedError {}
/** 403 SKILL_NOT_AVAILABLE_FOR_PLAN: the tenant's plan does not include this skill. */
export class SkillNotAvailableForPlanError extends PermissionDeniedError {}
/** 404 SKILL_NOT_FOUND, ROUTE_NOT_FOUND, PLAYBOOK_NOT_FOUND, RUN_AGENT_NOT_FOUND, RUN_MEMORY_NOT_FOUND,
 * RUN_SNAPSHOT_NOT_FOUND; 405 METHOD_NOT_ALLOWED. */
export class NotFoundError extends LoopsenseError {}
/** 404 SKILL_NOT_FOUND: no such skill, or no such version. */
export class SkillNotFoundError extends NotFoundError {}
/** 404 RUN_AGENT_NOT_FOUND: the run has no such agent (never registered, or expired). */
export class RunAgentNotFoundError extends NotFoundError {}
/** 409 IDEMPOTENCY_KEY_REUSED (not retryable), IDEMPOTENCY_IN_PROGRESS, RUN_WRITE_CONFLICT (retryable),
 * RUN_MEMORY_FULL (not retryable: delete entries or circuit-break). */
export class ConflictError extends LoopsenseError {}
/** 409 IDEMPOTENCY_KEY_REUSED: the same key with another body (not retryable). */
export class IdempotencyKeyReusedError extends ConflictError {}
/** 409 IDEMPOTENCY_IN_PROGRESS: the first request with this key is still running (retryable). */
export class IdempotencyInProgressError extends ConflictError {}
/** 409 RUN_WRITE_CONFLICT: concurrent step batches of one agent kept winning the race; retryable
 * with the same Idempotency-Key (no step is applied twice). */
export class RunWriteConflictError extends ConflictError {}
/** 429: too many requests, credits used up, or too many events in one call. Check `retryable`:
 * the event limits are not (split the input instead). */
export class RateLimitError extends LoopsenseError {}
/** 429 TENANT_RATE_LIMITED: above the plan's requests per second. */
export class TenantRateLimitedError extends RateLimitError {}
/** 429 QUOTA_EXCEEDED: the period's credits are used up; Retry-After is the time to the reset. */
export class QuotaExceededError extends RateLimitError {}
/** 429 LOOP_EVENT_LIMIT_EXCEEDED and the like: too many events or bytes in one call (not retryable). */
export class EventLimitExceededError extends RateLimitError {}
/** 429 RUN_STEP_LIMIT_EXCEEDED: more than 5,000 steps or 2 MiB in one agent.run_monitor call
 * (not retryable: send fewer, or use the runs API). */
export class RunStepLimitExceededError extends EventLimitExceededError {}
/** 503 PLAN_ELIGIBILITY_UNAVAILABLE, SERVER_BUSY (and other 502/503 answers). */
export class UnavailableError extends LoopsenseError {}
/** 504 EXECUTION_TIMEOUT: the skill did not finish within its time budget. */
export class ExecutionTimeoutError extends LoopsenseError {}
/** 500 INTERNAL_ERROR: nothing was charged. */
export class InternalError extends LoopsenseError {}
/** No HTTP answer: the connection failed, or the request timed out (code REQUEST_TIMEOUT).
 * Retryable: execute's Idempotency-Key makes a retry safe. */
export class ConnectionError extends LoopsenseError {}
/** No answer within the per-request timeout (or the call's deadline): code REQUEST_TIMEOUT. */
export class RequestTimeoutError extends ConnectionError {}

type ErrorClass = new (init: LoopsenseErrorInit) => LoopsenseError;

/** Every code the API answers with (shared/loopsense/errors.py), by family. */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = {
  VALIDATION_ERROR: ValidationError,
  UNAUTHORIZED: AuthenticationError,
  SKILL_NOT_ACCESSIBLE: SkillNotAccessibleError,
  SKILL_NOT_AVAILABLE_FOR_PLAN: SkillNotAvailableForPlanError,
  SKILL_NOT_FOUND: SkillNotFoundError,
  ROUTE_NOT_FOUND: NotFoundError,
  METHOD_NOT_ALLOWED: NotFoundError,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReusedError,
  IDEMPOTENCY_IN_PROGRESS: IdempotencyInProgressError,
  TENANT_RATE_LIMITED: TenantRateLimitedError,
  QUOTA_EXCEEDED: QuotaExceededError,
  PLAN_ELIGIBILITY_UNAVAILABLE: UnavailableError,
  SERVER_BUSY: UnavailableError,
  EXECUTION_TIMEOUT: ExecutionTimeoutError,
  INTERNAL_ERROR: InternalError,
  LOOP_EVENTS_INVALID: ValidationError,
  LOOP_EVENT_LIMIT_EXCEEDED: EventLimitExceededError,
  SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED: EventLimitExceededError,
  LOOPS_EVENT_LIMIT_EXCEEDED: EventLimitExceededError,
  TIME_BUDGET_ABOVE_PLAN_CAP: ValidationError,
  PLAYBOOK_NOT_FOUND: NotFoundError,
  RUN_STEPS_INVALID: ValidationError,
  RUN_STEP_LIMIT_EXCEEDED: RunStepLimitExceededError,
  RUN_BATCH_INVALID: ValidationError,
  RUN_AGENT_NOT_FOUND: RunAgentNotFoundError,
  RUN_WRITE_CONFLICT: RunWriteConflictError,
  RUN_MEMORY_NOT_FOUND: NotFoundError,
  RUN_SNAPSHOT_NOT_FOUND: NotFoundError,
  RUN_MEMORY_FULL: ConflictError,

  // telemetry ingestion and failure groups (client.telemetry, GET /v1/failure-groups)
  EXECUTION_EVENTS_INVALID: ValidationError,
  EXECUTION_EVENT_LIMIT_EXCEEDED: EventLimitExceededError,
  EXECUTION_ENDED: ConflictError,
  EXECUTION_BATCH_OUT_OF_ORDER: ConflictError,
  EXECUTION_NOT_FOUND: NotFoundError,
  FAILURE_GROUP_NOT_FOUND: NotFoundError,
  RUN_NOT_FOUND: NotFoundError,
};

/** The family of each HTTP status, for a code the SDK does not know yet (any other 5xx: InternalError). */
export const STATUS_CLASSES: Readonly<Record<number, ErrorClass>> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  405: NotFoundError,
  409: ConflictError,
  413: ValidationError,
  422: ValidationError,
  429: RateLimitError,
  500: InternalError,
  502: UnavailableError,
  503: UnavailableError,
  504: ExecutionTimeoutError,
};

/** The class for a code the SDK does not know yet: by HTTP status. */
export function errorClassForStatus(status: number): ErrorClass {
  return STATUS_CLASSES[status] ?? (status >= 500 ? InternalError : LoopsenseError);
}

/** Statuses retried when the answer is not a loopsense envelope (a proxy's 502 page). */
function retryableStatus(status: number): boolean {
  return [408, 429, 500, 502, 503, 504].includes(status);
}

/** Retry-After in seconds (delta-seconds or an HTTP date), or null. */
export function parseRetryAfter(header: string | null | undefined, nowMs = Date.now()): number | null {
  if (header === null || header === undefined) return null;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, (date - nowMs) / 1000);
}

/** The typed error for an HTTP answer that is not a success. */
export function errorFromResponse(status: number, body: string, headers: Headers): LoopsenseError {
  const retryAfter = parseRetryAfter(headers.get("retry-after"));
  let envelope: unknown;
  try {
    envelope = JSON.parse(body);
  } catch {
    envelope = undefined;
  }
  const error = (envelope as { error?: unknown } | undefined)?.error;
  if (error !== null && typeof error === "object" && typeof (error as { code?: unknown }).code === "string") {
    const e = error as {
      code: string; message?: unknown; retryable?: unknown; next?: unknown; details?: unknown;
    };
    const requestId = (envelope as { requestId?: unknown }).requestId;
    const Class = ERROR_CLASSES[e.code] ?? errorClassForStatus(status);
    return new Class({
      code: e.code,
      message: typeof e.message === "string" ? e.message : e.code,
      status,
      retryable: typeof e.retryable === "boolean" ? e.retryable : retryableStatus(status),
      next: typeof e.next === "string" ? e.next : null,
      details: Array.isArray(e.details) ? (e.details as ErrorDetail[]) : [],
      requestId: typeof requestId === "string" ? requestId : headers.get("x-request-id"),
      retryAfter,
    });
  }
  const Class = errorClassForStatus(status);
  return new Class({
    code: `HTTP_${status}`,
    message: `HTTP ${status} without a loopsense error envelope`,
    status,
    retryable: retryableStatus(status),
    requestId: headers.get("x-request-id"),
    retryAfter,
  });
}
