/**
 * `client.settings`: the tenant's own settings, each a GET and an all-or-nothing PUT that answers
 * the new full set (docs/failure-groups.md, docs/thresholds.md). PUTs are idempotent by nature,
 * so they are retried like reads.
 */
import type { Client } from "./client.js";
import * as R from "./routes.js";
import type { Route } from "./routes.js";
import type {
  DetectorThresholds, DetectorThresholdsUpdate, SeverityRouting, TelemetrySettings, TimeBudgetConfig,
} from "./types.js";

export class Settings {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  #call(route: Route, body?: unknown): Promise<unknown> {
    return this.#client.request(route, { body });
  }

  /** The severity each failure-group class is reported with (default warning). */
  async severityRouting(): Promise<SeverityRouting> {
    return (await this.#call(R.SEVERITY_ROUTING_GET)) as SeverityRouting;
  }

  async setSeverityRouting(routing: SeverityRouting): Promise<SeverityRouting> {
    return (await this.#call(R.SEVERITY_ROUTING_PUT, routing)) as SeverityRouting;
  }

  /** How long raw telemetry and failure groups are kept (days). */
  async telemetrySettings(): Promise<TelemetrySettings> {
    return (await this.#call(R.TELEMETRY_SETTINGS_GET)) as TelemetrySettings;
  }

  async setTelemetrySettings(settings: TelemetrySettings): Promise<TelemetrySettings> {
    return (await this.#call(R.TELEMETRY_SETTINGS_PUT, settings)) as TelemetrySettings;
  }

  /** Every threshold: the value applied today, its default and bounds, your setting. */
  async detectorThresholds(): Promise<DetectorThresholds> {
    return (await this.#call(R.DETECTOR_THRESHOLDS_GET)) as DetectorThresholds;
  }

  /** Any subset by name (null: back to the default); one bad name or value and nothing changes. */
  async setDetectorThresholds(thresholds: DetectorThresholdsUpdate): Promise<DetectorThresholds> {
    return (await this.#call(R.DETECTOR_THRESHOLDS_PUT, thresholds)) as DetectorThresholds;
  }

  /** The time budget agent.loops applies: yours or the default, clamped to the plan's cap. */
  async timeBudget(): Promise<TimeBudgetConfig> {
    return (await this.#call(R.TIME_BUDGET_GET)) as TimeBudgetConfig;
  }

  /** null: back to the default; above the plan's cap: TIME_BUDGET_ABOVE_PLAN_CAP. */
  async setTimeBudget(timeBudgetMs: number | null): Promise<TimeBudgetConfig> {
    return (await this.#call(R.TIME_BUDGET_PUT, { time_budget_ms: timeBudgetMs })) as TimeBudgetConfig;
  }
}
