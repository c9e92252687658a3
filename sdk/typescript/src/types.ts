/** Input and output types of the v1 skills (docs/skills/*.md). */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

// ---- agent.loop_detect ----------------------------------------------------------------------

export interface LoopDetectEvent {
  action: string;
  target?: string | null;
  stateFingerprint?: string | null;
  outcome?: string | null;
}

export type LoopSimilarity = "EXACT" | "ACTION_TARGET";

export interface LoopDetectInput {
  /** 2..5,000 events. */
  events: LoopDetectEvent[];
  /** 2..200, default 20: the longest cycle length searched. */
  window?: number;
  /** 2..20, default 3: consecutive copies required. */
  repeatThreshold?: number;
  /** Default EXACT. */
  similarity?: LoopSimilarity;
}

export interface LoopSpan {
  start: number;
  end: number;
  cycleLength: number;
  repeats: number;
}

export interface LoopDetectOutput {
  loopDetected: boolean;
  similarity: LoopSimilarity;
  window: number;
  repeatThreshold: number;
  /** 0 when no loop is found. */
  cycleLength: number;
  confidence: "HIGH" | "MEDIUM" | "NONE";
  eventIndices: number[];
  spans: LoopSpan[];
}

// ---- agent.semantic_loop --------------------------------------------------------------------

/** A checkpoint (read) or any other telemetry event (skipped and counted). */
export interface SemanticLoopEvent {
  type: string;
  name?: string;
  /** Any JSON value; a checkpoint without metadata hashes as `{}`. */
  metadata?: JsonValue;
  [field: string]: unknown;
}

export interface SemanticLoopInput {
  /** 1..5,000 events. */
  events: SemanticLoopEvent[];
  thresholds?: { revisit_threshold?: number };
  /** Up to 64 keys dropped at any depth before hashing (matched after lowercasing). */
  ignoreKeys?: string[];
}

export interface SemanticLoopGroup {
  /** `semantic_loop:<first 8 hex of hash>`; semanticSignature(metadata) computes it locally. */
  signature: string;
  hash: string;
  count: number;
  eventIndices: number[];
}

export interface SemanticLoopOutput {
  fired: boolean;
  revisitThreshold: number;
  checkpoints: number;
  skipped: number;
  groups: SemanticLoopGroup[];
}

// ---- agent.loops ----------------------------------------------------------------------------

export interface LoopsEvent {
  /** `llm_call` is read; every other type only counts as a step. */
  type: string;
  /** ISO-8601 date-time or epoch milliseconds. */
  timestamp?: string | number;
  model?: string | null;
  user_message?: string | null;
  /** Your own vector of the message: 1..8,192 finite numbers. */
  embedding?: number[];
  [field: string]: unknown;
}

export interface LoopsThresholds {
  step_count_threshold?: number;
  identical_call_min_repeats?: number;
  similar_call_distance_threshold?: number;
  similar_call_min_cluster_size?: number;
  time_budget_ms?: number;
}

export interface LoopsInput {
  /** 1..10,000 events, in the order they happened. */
  events: LoopsEvent[];
  durationMs?: number;
  /** Together with endedAt, instead of durationMs. */
  startedAt?: string;
  endedAt?: string;
  thresholds?: LoopsThresholds;
}

export type LoopsSub = "step_count" | "identical_call" | "similar_call" | "time_budget";
export type DurationSource = "durationMs" | "startedAt/endedAt" | "timestamps";

export interface LoopsFinding {
  signature: string;
  sub: LoopsSub;
  eventIndices: number[];
  playbook: LoopsSub;
  /** step_count, identical_call, similar_call. */
  count?: number;
  /** similar_call. */
  distinctMessages?: number;
  /** time_budget. */
  durationMs?: number;
  durationSource?: DurationSource;
}

export interface LoopsStats {
  events: number;
  llmCalls: number;
  llmCallsSkipped: number;
  vectors: "lexical" | "embedding" | null;
  embeddingsIgnored: string | null;
  timestamps: number;
  timestampsOutOfOrder: number;
  durationMs: number | null;
  durationSource: DurationSource | null;
  timeBudgetEvaluated: boolean;
  timeBudgetNotEvaluatedReason: string | null;
}

export interface LoopsOutput {
  fired: boolean;
  findings: LoopsFinding[];
  stats: LoopsStats;
  thresholds: Required<LoopsThresholds>;
}

// ---- agent.run_monitor (and the runs API, which answers with the same signal) --------------

export type RunRule =
  | "repeated_call" | "cycle" | "error_streak" | "monologue" | "content_loop"
  | "repeated_query" | "stagnation" | "condensation_loop" | "drift" | "novelty"
  | "similar_call" | "same_result" | "state_revisit" | "run_repeated_call";
export type RunSeverity = "warning" | "critical";
export type RunAction = "continue" | "nudge" | "break";

/** One step of an agent's run. No other fields (the runs API requires agentId). */
export interface RunStep {
  /** "tool_call", "llm_call", "message", "user_message", "thought", "recall", ... */
  kind: string;
  /** One agent per call. */
  agentId?: string;
  /** The tool's name: required for a tool_call. */
  action?: string;
  args?: JsonValue;
  /** Only its canonical hash is used. */
  result?: JsonValue;
  outcome?: "positive" | "negative" | "neutral" | "error" | null;
  model?: string;
  text?: string;
  /** A checkpoint's state. */
  metadata?: JsonValue;
  /** 1..4,096 numbers, the same length in every step. */
  embedding?: number[];
}

export interface RunToolPolicy {
  /** Never counted. */
  exempt?: boolean;
  /** Always polling: warning at poll_warn, never critical. */
  poll?: boolean;
  repeat_warn?: number;
  repeat_critical?: number;
  poll_warn?: number;
  similar_warn?: number;
  similar_critical?: number;
  same_result_warn?: number;
  run_repeat_warn?: number;
  /** Any result repeated to differing arguments counts (same_result). */
  same_result?: boolean;
  ignore_keys?: string[];
}

/** Overrides the tenant's settings (docs/skills/run_monitor.md, config: bounds there). */
export interface RunMonitorConfig {
  repeat_warn?: number;
  repeat_critical?: number;
  poll_warn?: number;
  cycle_window?: number;
  cycle_repeats?: number;
  error_streak?: number;
  monologue_limit?: number;
  content_chunk_chars?: number;
  content_repeats?: number;
  stagnation_threshold?: number;
  condensation_limit?: number;
  drift_threshold?: number;
  novelty_window?: number;
  novelty_floor?: number;
  history_size?: number;
  nudges_before_break?: number;
  similar_warn?: number;
  similar_critical?: number;
  similar_args?: number;
  same_result_warn?: number;
  revisit_threshold?: number;
  run_repeat_warn?: number;
  monologue_similar?: number;
  monologue_run?: number;
  /** Up to 256 tools. */
  tools?: Record<string, RunToolPolicy>;
  disabled_rules?: RunRule[];
  reset_on_user_message?: boolean;
  reset_on_repeated_user_message?: boolean;
  /** Up to 64 volatile keys. */
  ignore_keys?: string[];
  /** Stateless only: the runs API registers the objective per agent. */
  objective_embedding?: number[];
}

export interface RunMonitorInput {
  /** 1..5,000 steps, at most 2 MiB. */
  steps: RunStep[];
  config?: RunMonitorConfig | null;
}

export interface RunFinding {
  rule: RunRule;
  severity: RunSeverity;
  count: number;
  rationale: string;
  stepIndices: number[];
}

export interface RunRecommendation {
  action: RunAction;
  /** nudge and break: the text to inject. */
  nudge?: string;
}

/** The monitor's verdict: agent.run_monitor's output holds it, the runs API's signal answers it. */
export interface RunSignal {
  is_looping: boolean;
  is_stuck: boolean;
  is_drifting: boolean;
  is_novelty_starved: boolean;
  /** 0..1. */
  loop_score: number;
  /** 0..2, -1 when unknown. */
  drift_score: number;
  /** 0..1. */
  novelty_score: number;
  /** 0..1. */
  confidence: number;
  source: "rule";
  rationale: string;
  findings: RunFinding[];
  recommendation: RunRecommendation;
}

export interface RunTimelineEntry {
  index: number;
  findings: { rule: RunRule; severity: RunSeverity }[];
  action: RunAction;
}

export interface RunMonitorOutput extends RunSignal {
  steps: number;
  /** The first step of the current segment. */
  segmentStart: number;
  /** Every step that had findings. */
  timeline: RunTimelineEntry[];
}

// ---- the map execute() is typed by ----------------------------------------------------------

export interface SkillMap {
  "agent.loop_detect": { input: LoopDetectInput; output: LoopDetectOutput };
  "agent.semantic_loop": { input: SemanticLoopInput; output: SemanticLoopOutput };
  "agent.loops": { input: LoopsInput; output: LoopsOutput };
  "agent.run_monitor": { input: RunMonitorInput; output: RunMonitorOutput };
}

export type SkillKey = keyof SkillMap;

/** A skill's input by file (Client.upload): its events (agent.run_monitor: its steps) in the file
 * the ref names, its other parameters beside it (docs/files.md). */
export type FileInput<I> = Omit<I, "events" | "steps"> & { fileRef: string };

/** A v1 skill's input type; `unknown` for other skill keys (Client.executeAny). */
export type SkillInput<K extends string> = K extends SkillKey ? SkillMap[K]["input"] : unknown;
/** A v1 skill's output type; `unknown` for other skill keys (Client.executeAny). */
export type SkillOutput<K extends string> = K extends SkillKey ? SkillMap[K]["output"] : unknown;

export interface Billing {
  credits: number;
}

/** The 200 answer of POST /v1/execute. */
export interface ExecuteResponse<K extends string = string> {
  executionId: string;
  skillKey: K;
  skillVersion: string;
  output: SkillOutput<K>;
  billing: Billing;
}

// ---- the runs API (docs/runs.md, docs/recover.md) -------------------------------------------

export interface Retention {
  days: number;
  /** ISO-8601, UTC. */
  expiresAt: string;
}

/** POST /v1/runs/{runId}/agents. */
export interface RunAgent {
  runId: string;
  agentId: string;
  role?: string | null;
  objectiveDimensions?: number | null;
  /** Steps applied so far (registering again keeps the state). */
  sequence: number;
  retention?: Retention;
}

/** POST /v1/runs/{runId}/steps: the verdict after the batch's last step. While the monitor is
 * off (`monitor_disabled`) only `accepted` is meaningful. */
export interface StepsResult {
  runId: string;
  agentId: string;
  accepted: number;
  monitor_disabled?: boolean;
  signals?: { repeated: boolean; stagnant: boolean; drift_score: number; novelty_score: number };
  findings?: RunFinding[];
  recommendation?: RunRecommendation;
  firstIndex?: number;
  sequence?: number;
  segmentStart?: number;
  executionId?: string;
  billing?: Billing;
  retention?: Retention;
}

/** GET /v1/runs/{runId}/signal: the agent's verdict now (re-reading it counts nothing). */
export interface SignalResult {
  runId: string;
  agentId: string;
  monitor_disabled?: boolean;
  signal: RunSignal;
  sequence?: number;
  segmentStart?: number;
  retention?: Retention;
}

/** POST /v1/runs/{runId}/reset. */
export interface RunReset {
  runId: string;
  reset: { agentId: string; segmentStart: number }[];
}

/** PUT /v1/runs/{runId}/config. */
export interface RunConfig {
  runId: string;
  config: RunMonitorConfig;
  retention?: Retention;
}

/** PUT /v1/runs/{runId}/memory/{key}. */
export interface MemoryWrite {
  runId: string;
  key: string;
  /** false: it replaced the key's value. */
  created: boolean;
  retention?: Retention;
}

/** A lesson: the agent's own (kind `lesson`) or a snapshot's (`loop_detected`,
 * `replaced_by_restore`). */
export interface Lesson {
  lessonId: string;
  kind: string;
  text: string;
  tags: string[];
  createdAt: string;
  snapshotId?: string | null;
}

/** One entry of the run's event log: `seq`, `type`, `at` and its details. */
export interface RunEvent {
  seq: number;
  type: string;
  at: string;
  [detail: string]: unknown;
}

/** POST /v1/runs/{runId}/circuit-break. */
export interface CircuitBreak {
  runId: string;
  broken: boolean;
  snapshotId: string;
  summary: { entries: number; reason: string };
  agentsReset?: string[];
  retention?: Retention;
}

/** POST /v1/runs/{runId}/snapshots/{snapshotId}/restore. */
export interface Restore {
  runId: string;
  snapshotId: string;
  entries: number;
  replaced: { snapshotId: string; entries: number };
  retention?: Retention;
}

/** POST /v1/runs/{runId}/context: the briefing of a fresh attempt. */
export interface Briefing {
  runId: string;
  context_block: string;
  items: { type: string; id: string; tokens: number; [field: string]: unknown }[];
  tokens: number;
  max_token_budget: number;
}

// ---- telemetry ingestion and failure groups (docs/failure-groups.md) ------------------------

export interface EventsAccepted {
  executionId: string;
  seq: number;
  accepted: number;
  /** The same batch again (Idempotency-Key or seq): counted once. */
  duplicate: boolean;
  fired: string[];
}

export interface ExecutionEnded {
  executionId: string;
  ended: boolean;
  alreadyEnded: boolean;
  fired: string[];
}

export type Severity = "critical" | "warning" | "info";
export type FailureGroupClass = "loops" | "semantic_loop" | "tool_calls";

export interface FailureGroup {
  signature: string;
  class: FailureGroupClass;
  sub: string;
  /** The tenant's routing of the class, applied when read. */
  severity: Severity;
  executions: number;
  firstSeen: string;
  lastSeen: string;
  playbook: string;
}

export interface FailureGroupPage {
  items: FailureGroup[];
  nextCursor: string | null;
}

/** GET /v1/playbooks/{name}. */
export interface Playbook {
  name: string;
  title: string;
  markdown: string;
}

export interface FailureGroupDetail {
  group: FailureGroup;
  /** The 20 most recent. */
  executions: { executionId: string; firedAt: string }[];
  playbook: Playbook;
  canonicalState: string | null;
  /** Affected executions per day (UTC), oldest first. */
  timeline: { day: string; executions: number }[];
}

// ---- tenant settings (docs/failure-groups.md, docs/thresholds.md) ---------------------------

export interface SeverityRouting {
  loops?: Severity;
  semantic_loop?: Severity;
  tool_calls?: Severity;
}

export interface TelemetrySettings {
  /** 1..365. */
  telemetry_retention_days?: number;
  /** 1..730. */
  group_retention_days?: number;
}

export interface DetectorThreshold {
  value: number | boolean;
  default: number | boolean;
  min: number | boolean;
  max: number | boolean;
  type: "integer" | "number" | "boolean";
  /** Your own setting; null: the default applies. */
  configured: number | boolean | null;
  used_by: string;
}

export interface DetectorThresholds {
  plan: string;
  thresholds: Record<string, DetectorThreshold>;
}

/** A PUT /v1/detector-thresholds: any subset of the names; null goes back to the default. */
export type DetectorThresholdsUpdate = Record<string, number | boolean | null>;

export interface TimeBudgetConfig {
  time_budget_ms: number;
  max_time_budget_ms: number;
  plan: string;
  configured_time_budget_ms: number | null;
  default_time_budget_ms: number;
  clamped: boolean;
}

// ---- reading runs, usage (docs/runs.md "Reading runs", docs/dashboard.md) -------------------
export interface RunAgentView {
  agentId: string;
  role: string | null;
  /** Steps applied. */
  sequence: number;
  segmentStart: number;
  createdAt: string | null;
  lastActivity: string | null;
  /** The merged verdict (GET .../signal's `signal`; in a listing without its findings), null
   * while the monitor is off. */
  signal: Record<string, unknown> | null;
  recommendation: { action: "continue" | "nudge" | "break"; nudge?: string } | null;
}

export interface RunSummary {
  runId: string;
  lastActivity: string;
  agents: RunAgentView[];
}

/** GET /v1/runs: live runs, newest activity first. */
export interface RunPage {
  items: RunSummary[];
  nextCursor: string | null;
}

/** GET /v1/runs/{runId}: every live agent with its full signal, and the run's config. */
export interface RunDetail extends RunSummary {
  config: Record<string, unknown> | null;
  retention: { days: number; expiresAt: string };
}

/** GET /v1/usage: this period's credits against the plan's, the last 30 days' charged calls. */
/** An execute `output` too large to inline (over the 6 MB a response may carry): GET
 * `downloadUrl` before `expiresAt` for the output's JSON, `bytes` long. `execute` fetches it for
 * you; `executeAny(key, input, { fetchOutput: false })` hands it over as it is. */
export interface FileOutput {
  fileRef: string;
  downloadUrl: string;
  method: "GET";
  expiresAt: string;
  bytes: number;
}

/** POST /v1/files: a fileRef and where to PUT its bytes (a JSON array or JSON Lines, at most
 * `maxBytes`) before `expiresAt`; then `execute(skill, { fileRef })`. */
export interface FileUpload {
  fileRef: string;
  uploadUrl: string;
  method: "PUT";
  expiresAt: string;
  maxBytes: number;
}

export interface Usage {
  plan: string;
  period: string;
  credits: { used: number; quota: number };
  /** Oldest first, today (UTC) last. */
  days: { day: string; calls: number; bySkill: Record<string, number> }[];
}
