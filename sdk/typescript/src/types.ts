// The API's request and answer types, as they travel on the wire: generated from its
// OpenAPI document by `scripts/openapi` (loopsense_local.sdk_types) in the loopsense
// repository; do not edit.

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface AffectedExecution {
  executionId: string;
  firedAt: string;
}

export interface AgentReset {
  agentId: string;
  segmentStart: number;
}

/** One agent of GET /v1/runs/{runId}: its whole signal. */
export interface AgentView {
  agentId: string;
  createdAt: string | null;
  lastActivity: string | null;
  recommendation: Recommendation | null;
  role: string | null;
  segmentStart: number;
  sequence: number;
  signal: Signal | null;
}

export interface Batch {
  events: LoopsEvent[];
  seq?: number | null;
}

export interface BatchAnswer {
  accepted: number;
  duplicate: boolean;
  executionId: string;
  fired: string[];
  seq: number;
}

export interface Billing {
  credits: number;
}

export interface BreakAnswer {
  agentsReset: string[];
  broken: true;
  retention: Retention;
  runId: string;
  snapshotId: string;
  summary: BreakSummary;
}

export interface BreakBody {
  agentId?: string | null;
  reason: string;
}

export interface BreakSummary {
  entries: number;
  reason: string;
}

export interface BriefingItem {
  createdAt: string;
  entries?: number;
  id: string;
  score: number;
  type: "lesson" | "snapshot";
}

export interface ConfigAnswer {
  config: Record<string, unknown>;
  retention: Retention;
  runId: string;
}

export interface ContextAnswer {
  context_block: string;
  items: BriefingItem[];
  max_token_budget: number;
  runId: string;
  tokens: number;
}

export interface ContextBody {
  max_token_budget?: number;
  query: string;
}

export interface Credits {
  quota: number;
  used: number;
}

export interface EndAnswer {
  alreadyEnded: boolean;
  ended: true;
  executionId: string;
  fired: string[];
}

export interface EndBody {
  durationMs?: number | null;
}

export interface EventsPage {
  events: RunEvent[];
  next: string | null;
  runId: string;
}

export interface FailureGroupDetail {
  canonicalState: string | null;
  executions: AffectedExecution[];
  group: FailureGroupView;
  playbook: Playbook;
  timeline: GroupDay[];
}

export interface FailureGroupView {
  class: "loops" | "semantic_loop" | "tool_calls";
  executions: number;
  firstSeen: string;
  lastSeen: string;
  playbook: string;
  severity: "critical" | "info" | "warning";
  signature: string;
  sub: string;
}

export interface FailureGroupsPage {
  items: FailureGroupView[];
  nextCursor: string | null;
}

/** An execute ``output`` too large to inline: GET ``downloadUrl`` before ``expiresAt`` for the output's JSON, ``bytes`` long, exactly what ``output`` would have held. */
export interface FileOutput {
  bytes: number;
  downloadUrl: string;
  expiresAt: string;
  fileRef: string;
  method: "GET";
}

/** POST /v1/files: a fileRef, and where to PUT its bytes before ``expiresAt``. */
export interface FileUpload {
  expiresAt: string;
  fileRef: string;
  maxBytes: number;
  method: "PUT";
  uploadUrl: string;
}

export interface Flagged {
  severity: "critical" | "warning";
  step: number;
}

export interface GroupDay {
  day: string;
  executions: number;
}

export interface Lesson {
  createdAt: string;
  kind: "fact" | "lesson" | "loop_detected" | "replaced_by_restore";
  lessonId: string;
  snapshotId?: string;
  tags: string[];
  text: string;
}

export interface LessonAdded {
  createdAt: string;
  kind: "fact" | "lesson" | "loop_detected" | "replaced_by_restore";
  lessonId: string;
  retention: Retention;
  runId: string;
  snapshotId?: string;
  tags: string[];
  text: string;
}

export interface LessonBody {
  kind?: string;
  tags?: string[];
  text: string;
}

export interface LessonsPage {
  lessons: Lesson[];
  next: string | null;
  runId: string;
}

export interface ListedAgent {
  agentId: string;
  createdAt: string | null;
  lastActivity: string | null;
  recommendation: Recommendation | null;
  role: string | null;
  segmentStart: number;
  sequence: number;
  signal: SignalSummary | null;
}

/** Validated as plain dicts: twice as fast as 5,000 model instances (benchmarks/). */
export interface LoopDetectEvent {
  action: string;
  outcome?: string | null;
  stateFingerprint?: string | null;
  target?: string | null;
}

export interface LoopDetectInput {
  events: LoopDetectEvent[];
  repeatThreshold?: number;
  similarity?: "ACTION_TARGET" | "EXACT";
  window?: number;
}

export interface LoopDetectOutput {
  confidence: "HIGH" | "MEDIUM" | "NONE";
  cycleLength: number;
  eventIndices: number[];
  loopDetected: boolean;
  repeatThreshold: number;
  similarity: "ACTION_TARGET" | "EXACT";
  spans: LoopDetectSpan[];
  window: number;
}

export interface LoopDetectSpan {
  cycleLength: number;
  end: number;
  repeats: number;
  start: number;
}

export interface LoopsAppliedThresholds {
  identical_call_min_repeats: number;
  similar_call_distance_threshold: number;
  similar_call_min_cluster_size: number;
  step_count_threshold: number;
  time_budget_ms: number;
}

/** A telemetry event. Fields other than these are the agent's own and are ignored. */
export interface LoopsEvent {
  embedding?: number[] | null;
  model?: string | null;
  timestamp?: JsonValue;
  type: string;
  user_message?: string | null;
}

export interface LoopsFinding {
  count?: number;
  distinctMessages?: number;
  durationMs?: number;
  durationSource?: "durationMs" | "startedAt/endedAt" | "timestamps";
  eventIndices: number[];
  playbook: "identical_call" | "similar_call" | "step_count" | "time_budget";
  signature: string;
  sub: "identical_call" | "similar_call" | "step_count" | "time_budget";
}

export interface LoopsInput {
  durationMs?: number | null;
  endedAt?: string | null;
  events: LoopsEvent[];
  startedAt?: string | null;
  thresholds?: LoopsThresholds | null;
}

export interface LoopsOutput {
  findings: LoopsFinding[];
  fired: boolean;
  stats: LoopsStats;
  thresholds: LoopsAppliedThresholds;
}

export interface LoopsStats {
  durationMs: number | null;
  durationSource: "durationMs" | "startedAt/endedAt" | "timestamps" | null;
  embeddingsIgnored: string | null;
  events: number;
  llmCalls: number;
  llmCallsSkipped: number;
  timeBudgetEvaluated: boolean;
  timeBudgetNotEvaluatedReason: string | null;
  timestamps: number;
  timestampsOutOfOrder: number;
  vectors: "embedding" | "lexical" | null;
}

/** Per-call overrides; values are checked by skills.thresholds (types and bounds). */
export interface LoopsThresholds {
  identical_call_min_repeats?: JsonValue;
  similar_call_distance_threshold?: JsonValue;
  similar_call_min_cluster_size?: JsonValue;
  step_count_threshold?: JsonValue;
  time_budget_ms?: JsonValue;
}

export interface MemoryDeleted {
  deleted: true;
  key: string;
  runId: string;
}

export interface MemoryEntry {
  key: string;
  retention: Retention;
  runId: string;
  updatedAt: string;
  value: JsonValue;
}

export interface MemoryPage {
  count: number;
  entries: Record<string, unknown>;
  next: string | null;
  runId: string;
}

export interface MemorySet {
  created: boolean;
  key: string;
  retention: Retention;
  runId: string;
}

/** ``config`` without the thresholds (checked by name, against their bounds). */
export interface MonitorConfig {
  condensation_limit?: number;
  content_chunk_chars?: number;
  content_repeats?: number;
  cycle_repeats?: number;
  cycle_window?: number;
  disabled_rules?: ("condensation_loop" | "content_loop" | "cycle" | "drift" | "error_streak" | "monologue" | "novelty" | "repeated_call" | "repeated_query" | "run_repeated_call" | "same_result" | "similar_call" | "stagnation" | "state_revisit")[];
  drift_threshold?: number;
  error_streak?: number;
  history_size?: number;
  ignore_keys?: string[];
  monologue_limit?: number;
  monologue_run?: number;
  monologue_similar?: number;
  novelty_floor?: number;
  novelty_window?: number;
  nudges_before_break?: number;
  poll_warn?: number;
  repeat_critical?: number;
  repeat_warn?: number;
  reset_on_repeated_user_message?: boolean;
  reset_on_user_message?: boolean;
  revisit_threshold?: number;
  run_repeat_warn?: number;
  same_result_warn?: number;
  similar_args?: number;
  similar_critical?: number;
  similar_warn?: number;
  stagnation_threshold?: number;
  tools?: Record<string, ToolConfig>;
}

export interface MonitorFinding {
  count: number;
  rationale: string;
  rule: "condensation_loop" | "content_loop" | "cycle" | "drift" | "error_streak" | "monologue" | "novelty" | "repeated_call" | "repeated_query" | "run_repeated_call" | "same_result" | "similar_call" | "stagnation" | "state_revisit";
  severity: "critical" | "warning";
  stepIndices: number[];
}

/** A step batch or a signal while the tenant's monitor is off: nothing stored or charged. */
export interface MonitorOff {
  accepted?: number;
  agentId: string;
  monitor_disabled: true;
  runId: string;
  signal?: null;
}

export interface Playbook {
  markdown: string;
  name: string;
  title: string;
}

export interface Recommendation {
  action: "break" | "continue" | "nudge";
  nudge?: string;
}

export interface Registered {
  agentId: string;
  objectiveDimensions: number | null;
  retention: Retention;
  role: string | null;
  runId: string;
  sequence: number;
}

export interface Registration {
  agentId: string;
  objectiveEmbedding?: number[] | null;
  role?: string | null;
}

export interface Replaced {
  entries: number;
  snapshotId: string;
}

export interface ResetAnswer {
  reset: AgentReset[];
  runId: string;
}

export interface ResetBody {
  agentId?: string | null;
}

export interface RestoreAnswer {
  entries: number;
  replaced: Replaced;
  restored: true;
  retention: Retention;
  runId: string;
  snapshotId: string;
}

export interface Retention {
  days: number;
  expiresAt: string;
}

export interface Routing {
  loops: "critical" | "info" | "warning";
  semantic_loop: "critical" | "info" | "warning";
  tool_calls: "critical" | "info" | "warning";
}

export interface RunDetail {
  agents: AgentView[];
  config: Record<string, unknown> | null;
  lastActivity: string | null;
  retention: Retention;
  runId: string;
}

export interface RunEvent {
  agentIds?: string[];
  at: string;
  entries?: number;
  reason?: string;
  replacedSnapshotId?: string;
  seq: number;
  snapshotId: string;
  type: "CIRCUIT_BROKEN" | "MEMORY_RESTORED";
}

export interface RunListed {
  agents: ListedAgent[];
  lastActivity: string | null;
  runId: string;
}

export interface RunMonitorInput {
  config?: SkillMonitorConfig | null;
  steps: Step[];
}

export interface RunMonitorOutput {
  confidence: number;
  drift_score: number;
  ever_flagged: Record<string, Flagged>;
  findings: MonitorFinding[];
  first_flagged: number | null;
  is_drifting: boolean;
  is_looping: boolean;
  is_novelty_starved: boolean;
  is_stuck: boolean;
  loop_score: number;
  novelty_score: number;
  rationale: string;
  recommendation: Recommendation;
  segmentStart: number;
  source: "rule";
  steps: number;
  timeline: TimelineEntry[];
}

export interface RunsPage {
  items: RunListed[];
  nextCursor: string | null;
}

/** A telemetry event. Checkpoints' ``name`` and ``metadata`` are checked in ``parse``: a field of the same name on another event type is not this skill's business. */
export interface SemanticLoopEvent {
  metadata?: JsonValue;
  name?: JsonValue;
  type: string;
}

export interface SemanticLoopGroup {
  count: number;
  eventIndices: number[];
  hash: string;
  signature: string;
}

export interface SemanticLoopInput {
  events: SemanticLoopEvent[];
  ignoreKeys?: string[];
  thresholds?: SemanticLoopThresholds | null;
}

export interface SemanticLoopOutput {
  checkpoints: number;
  fired: boolean;
  groups: SemanticLoopGroup[];
  revisitThreshold: number;
  skipped: number;
}

export interface SemanticLoopThresholds {
  revisit_threshold?: JsonValue;
}

export interface SeverityRouting {
  loops?: "critical" | "info" | "warning";
  semantic_loop?: "critical" | "info" | "warning";
  tool_calls?: "critical" | "info" | "warning";
}

export interface Signal {
  confidence: number;
  drift_score: number;
  ever_flagged: Record<string, Flagged>;
  findings: MonitorFinding[];
  first_flagged: number | null;
  is_drifting: boolean;
  is_looping: boolean;
  is_novelty_starved: boolean;
  is_stuck: boolean;
  loop_score: number;
  novelty_score: number;
  rationale: string;
  recommendation: Recommendation;
  source: "rule";
}

export interface SignalAnswer {
  agentId: string;
  monitor_disabled: false;
  retention: Retention;
  runId: string;
  segmentStart: number;
  sequence: number;
  signal: Signal;
}

/** The signal without its findings and recommendation (a listing of runs shows it). */
export interface SignalSummary {
  confidence: number;
  drift_score: number;
  ever_flagged: Record<string, Flagged>;
  first_flagged: number | null;
  is_drifting: boolean;
  is_looping: boolean;
  is_novelty_starved: boolean;
  is_stuck: boolean;
  loop_score: number;
  novelty_score: number;
  rationale: string;
  source: "rule";
}

/** ``config`` without the thresholds (checked by name, against their bounds). */
export interface SkillMonitorConfig {
  condensation_limit?: number;
  content_chunk_chars?: number;
  content_repeats?: number;
  cycle_repeats?: number;
  cycle_window?: number;
  disabled_rules?: ("condensation_loop" | "content_loop" | "cycle" | "drift" | "error_streak" | "monologue" | "novelty" | "repeated_call" | "repeated_query" | "run_repeated_call" | "same_result" | "similar_call" | "stagnation" | "state_revisit")[];
  drift_threshold?: number;
  error_streak?: number;
  history_size?: number;
  ignore_keys?: string[];
  monologue_limit?: number;
  monologue_run?: number;
  monologue_similar?: number;
  novelty_floor?: number;
  novelty_window?: number;
  nudges_before_break?: number;
  objective_embedding?: number[] | null;
  poll_warn?: number;
  repeat_critical?: number;
  repeat_warn?: number;
  reset_on_repeated_user_message?: boolean;
  reset_on_user_message?: boolean;
  revisit_threshold?: number;
  run_repeat_warn?: number;
  same_result_warn?: number;
  similar_args?: number;
  similar_critical?: number;
  similar_warn?: number;
  stagnation_threshold?: number;
  tools?: Record<string, ToolConfig>;
}

export interface SnapshotPage {
  agentIds?: string[];
  createdAt: string;
  entries: Record<string, unknown>;
  kind: "loop_detected" | "replaced_by_restore";
  next: string | null;
  reason?: string;
  restoredFrom?: string;
  retention: Retention;
  runId: string;
  snapshotId: string;
}

/** Validated as plain dicts (5,000 model instances cost twice as much, benchmarks/). */
export interface Step {
  action?: string;
  agentId?: string;
  args?: JsonValue;
  embedding?: number[];
  kind: string;
  metadata?: JsonValue;
  model?: string;
  outcome?: "error" | "negative" | "neutral" | "positive" | null;
  result?: JsonValue;
  text?: string;
}

export interface StepBatch {
  steps: Step[];
}

export interface StepSignals {
  drift_score: number;
  novelty_score: number;
  repeated: boolean;
  stagnant: boolean;
}

export interface StepsAnswer {
  accepted: number;
  agentId: string;
  billing: Billing;
  executionId: string;
  findings: MonitorFinding[];
  firstIndex: number;
  recommendation: Recommendation;
  retention: Retention;
  runId: string;
  segmentStart: number;
  sequence: number;
  signals: StepSignals;
}

export interface TelemetryRetention {
  group_retention_days: number;
  telemetry_retention_days: number;
}

export interface TelemetrySettings {
  group_retention_days?: number;
  telemetry_retention_days?: number;
}

export interface ThresholdView {
  configured: number | boolean | null;
  default: number | boolean;
  max: number | boolean | null;
  min: number | boolean | null;
  type: "boolean" | "integer" | "number";
  used_by: string;
  value: number | boolean;
}

export interface ThresholdViews {
  condensation_limit: ThresholdView;
  content_chunk_chars: ThresholdView;
  content_repeats: ThresholdView;
  cycle_repeats: ThresholdView;
  cycle_window: ThresholdView;
  drift_threshold: ThresholdView;
  error_streak: ThresholdView;
  history_size: ThresholdView;
  identical_call_min_repeats: ThresholdView;
  monitor_disabled: ThresholdView;
  monologue_limit: ThresholdView;
  monologue_run: ThresholdView;
  monologue_similar: ThresholdView;
  novelty_floor: ThresholdView;
  novelty_window: ThresholdView;
  nudges_before_break: ThresholdView;
  poll_warn: ThresholdView;
  repeat_critical: ThresholdView;
  repeat_warn: ThresholdView;
  revisit_threshold: ThresholdView;
  run_repeat_warn: ThresholdView;
  run_retention_days: ThresholdView;
  same_result_warn: ThresholdView;
  similar_args: ThresholdView;
  similar_call_distance_threshold: ThresholdView;
  similar_call_min_cluster_size: ThresholdView;
  similar_critical: ThresholdView;
  similar_warn: ThresholdView;
  stagnation_threshold: ThresholdView;
  step_count_threshold: ThresholdView;
  time_budget_ms: ThresholdView;
}

export interface ThresholdsAnswer {
  plan: string;
  thresholds: ThresholdViews;
}

export interface ThresholdsPatch {
  condensation_limit?: number | null;
  content_chunk_chars?: number | null;
  content_repeats?: number | null;
  cycle_repeats?: number | null;
  cycle_window?: number | null;
  drift_threshold?: number | null;
  error_streak?: number | null;
  history_size?: number | null;
  identical_call_min_repeats?: number | null;
  monitor_disabled?: boolean | null;
  monologue_limit?: number | null;
  monologue_run?: number | null;
  monologue_similar?: number | null;
  novelty_floor?: number | null;
  novelty_window?: number | null;
  nudges_before_break?: number | null;
  poll_warn?: number | null;
  repeat_critical?: number | null;
  repeat_warn?: number | null;
  revisit_threshold?: number | null;
  run_repeat_warn?: number | null;
  run_retention_days?: number | null;
  same_result_warn?: number | null;
  similar_args?: number | null;
  similar_call_distance_threshold?: number | null;
  similar_call_min_cluster_size?: number | null;
  similar_critical?: number | null;
  similar_warn?: number | null;
  stagnation_threshold?: number | null;
  step_count_threshold?: number | null;
  time_budget_ms?: number | null;
}

export interface TimeBudgetAnswer {
  clamped: boolean;
  configured_time_budget_ms: number | null;
  default_time_budget_ms: number;
  max_time_budget_ms: number;
  plan: string;
  time_budget_ms: number;
}

export interface TimeBudgetPatch {
  time_budget_ms: number | null;
}

export interface TimelineEntry {
  action: "break" | "continue" | "nudge";
  findings: TimelineFinding[];
  index: number;
}

export interface TimelineFinding {
  rule: "condensation_loop" | "content_loop" | "cycle" | "drift" | "error_streak" | "monologue" | "novelty" | "repeated_call" | "repeated_query" | "run_repeated_call" | "same_result" | "similar_call" | "stagnation" | "state_revisit";
  severity: "critical" | "warning";
  stepIndices: number[];
}

export interface ToolConfig {
  exempt?: boolean;
  ignore_keys?: string[];
  poll?: boolean;
  poll_warn?: JsonValue;
  repeat_critical?: JsonValue;
  repeat_warn?: JsonValue;
  run_repeat_warn?: JsonValue;
  same_result?: boolean;
  same_result_warn?: JsonValue;
  similar_critical?: JsonValue;
  similar_warn?: JsonValue;
}

export interface UsageAnswer {
  credits: Credits;
  days: UsageDay[];
  period: string;
  plan: string;
}

export interface UsageDay {
  bySkill: Record<string, number>;
  calls: number;
  day: string;
}

/** The skills POST /v1/execute runs: each one's input and output. */
export interface SkillMap {
  "agent.loop_detect": { input: LoopDetectInput; output: LoopDetectOutput };
  "agent.loops": { input: LoopsInput; output: LoopsOutput };
  "agent.run_monitor": { input: RunMonitorInput; output: RunMonitorOutput };
  "agent.semantic_loop": { input: SemanticLoopInput; output: SemanticLoopOutput };
}

export type SkillKey = keyof SkillMap;
/** A skill's input by file (Client.upload): its events (agent.run_monitor: its steps) in the file
 * the ref names, its other parameters beside it (docs/files.md). */
export type FileInput<I> = Omit<I, "events" | "steps"> & { fileRef: string };
/** A v1 skill's input type; `unknown` for other skill keys (Client.executeAny). */
export type SkillInput<K extends string> = K extends SkillKey ? SkillMap[K]["input"] : unknown;
/** A v1 skill's output type; `unknown` for other skill keys (Client.executeAny). */
export type SkillOutput<K extends string> = K extends SkillKey ? SkillMap[K]["output"] : unknown;

/** The 200 answer of POST /v1/execute. */
export interface ExecuteResponse<K extends string = string> {
  billing: Billing;
  executionId: string;
  output: SkillOutput<K>;
  skillKey: K;
  skillVersion: string;
}

export type Briefing = ContextAnswer;
export type CircuitBreak = BreakAnswer;
export type DetectorThreshold = ThresholdView;
export type DetectorThresholds = ThresholdsAnswer;
export type DetectorThresholdsUpdate = ThresholdsPatch;
export type DurationSource = "durationMs" | "startedAt/endedAt" | "timestamps" | null;
export type Empty = Record<string, unknown>;
export type EventsAccepted = BatchAnswer;
export type ExecutionEnded = EndAnswer;
export type FailureGroup = FailureGroupView;
export type FailureGroupClass = "loops" | "semantic_loop" | "tool_calls";
export type FailureGroupDay = GroupDay;
export type FailureGroupExecution = AffectedExecution;
export type FailureGroupPage = FailureGroupsPage;
export type LoopSimilarity = "ACTION_TARGET" | "EXACT";
export type LoopSpan = LoopDetectSpan;
export type LoopsSub = "identical_call" | "similar_call" | "step_count" | "time_budget";
export type MemoryWrite = MemorySet;
export type Restore = RestoreAnswer;
export type RunAction = "break" | "continue" | "nudge";
export type RunAgent = Registered;
export type RunAgentView = AgentView;
export type RunConfig = ConfigAnswer;
export type RunFinding = MonitorFinding;
export type RunMonitorConfig = SkillMonitorConfig;
export type RunPage = RunsPage;
export type RunRecommendation = Recommendation;
export type RunReset = ResetAnswer;
export type RunRule = "condensation_loop" | "content_loop" | "cycle" | "drift" | "error_streak" | "monologue" | "novelty" | "repeated_call" | "repeated_query" | "run_repeated_call" | "same_result" | "similar_call" | "stagnation" | "state_revisit";
export type RunSeverity = "critical" | "warning";
export type RunSignal = Signal;
export type RunStep = Step;
export type RunSummary = RunListed;
export type RunTimelineEntry = TimelineEntry;
export type RunTimelineFinding = TimelineFinding;
export type RunToolPolicy = ToolConfig;
export type Severity = "critical" | "info" | "warning";
export type SignalResult = SignalAnswer | MonitorOff;
export type StepsResult = StepsAnswer | MonitorOff;
export type TelemetryEvent = LoopsEvent | SemanticLoopEvent;
export type TimeBudgetConfig = TimeBudgetAnswer;
export type Usage = UsageAnswer;
export type UsageCredits = Credits;
