export { Client, backoffDelay, DEFAULT_BASE_URL, SDK_VERSION } from "./client.js";
export type { BackoffOptions, ClientOptions, ExecuteOptions, RequestOptions } from "./client.js";
export { Executions, Telemetry } from "./telemetry.js";
export { Runs } from "./runs.js";
export { AgentLoopDetected, Tracker } from "./tracker.js";
export type { Policy, StepAnswer, TrackOptions } from "./tracker.js";
export type { CallOptions, KeyedOptions } from "./runs.js";
export { FailureGroups } from "./failureGroups.js";
export type { FailureGroupFilter } from "./failureGroups.js";
export { Settings } from "./settings.js";
export { ROUTES, routePath } from "./routes.js";
export type { Route } from "./routes.js";
export type { TelemetryOptions } from "./telemetry.js";
export {
  AuthenticationError, ConflictError, ConnectionError, ERROR_CLASSES, ExecutionTimeoutError,
  InternalError, LoopsenseError, NotFoundError, PermissionDeniedError, QuotaExceededError,
  RateLimitError, UnavailableError, ValidationError, SkillNotAccessibleError,
  SkillNotAvailableForPlanError, SkillNotFoundError, IdempotencyKeyReusedError,
  IdempotencyInProgressError, TenantRateLimitedError, EventLimitExceededError, RequestTimeoutError,
  RunAgentNotFoundError, RunStepLimitExceededError, RunWriteConflictError, STATUS_CLASSES, errorClassForStatus, errorFromResponse,
  parseRetryAfter,
} from "./errors.js";
export type { ErrorDetail, LoopsenseErrorInit } from "./errors.js";
export {
  CanonicalError, MAX_DEPTH, MAX_KEY_LENGTH, canonicalFloat, canonicalHash, canonicalHashJson,
  canonicalize, canonicalizeJson, canonicalKey, canonicalString, compareCodePoints, quote,
  semanticSignature, semanticSignatureJson,
} from "./canonical.js";
export type { CanonicalOptions } from "./canonical.js";
export type * from "./types.js";
