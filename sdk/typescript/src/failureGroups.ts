/**
 * `client.failureGroups`: the failure groups of the tenant's telemetry (docs/failure-groups.md):
 * executions that fired the same signature, newest lastSeen first, with their playbook.
 *
 *     for await (const group of client.failureGroups.all({ class: "loops" })) console.log(group.signature);
 */
import type { Client } from "./client.js";
import { FAILURE_GROUP, FAILURE_GROUPS } from "./routes.js";
import type { FailureGroup, FailureGroupClass, FailureGroupDetail, FailureGroupPage, Severity } from "./types.js";

export interface FailureGroupFilter {
  class?: FailureGroupClass;
  /** The tenant's routing of the class. */
  severity?: Severity;
  signal?: AbortSignal;
}

export class FailureGroups {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** One page (`limit` 1..100, default 50); `nextCursor` continues it (null: the last). */
  async list(options: FailureGroupFilter & { limit?: number; cursor?: string } = {}): Promise<FailureGroupPage> {
    return (await this.#client.request(FAILURE_GROUPS, {
      query: { limit: options.limit, cursor: options.cursor, class: options.class, severity: options.severity },
      signal: options.signal,
    })) as FailureGroupPage;
  }

  /** Every group, following the pages. */
  async *all(options: FailureGroupFilter & { pageSize?: number } = {}): AsyncGenerator<FailureGroup> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.list({ ...options, limit: options.pageSize ?? 100, cursor });
      yield* page.items;
      if (page.nextCursor === null) return;
      cursor = page.nextCursor;
    }
  }

  /** A group, its 20 most recent executions, its playbook and (semantic_loop) the revisited
   * state; NotFoundError (FAILURE_GROUP_NOT_FOUND) for one this tenant lacks. */
  async get(signature: string, signal?: AbortSignal): Promise<FailureGroupDetail> {
    return (await this.#client.request(FAILURE_GROUP, { params: { signature }, signal })) as FailureGroupDetail;
  }
}
