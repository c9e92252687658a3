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

// ---- the map execute() is typed by ----------------------------------------------------------

export interface SkillMap {
  "agent.loop_detect": { input: LoopDetectInput; output: LoopDetectOutput };
  "agent.semantic_loop": { input: SemanticLoopInput; output: SemanticLoopOutput };
  "agent.loops": { input: LoopsInput; output: LoopsOutput };
}

export type SkillKey = keyof SkillMap;

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
