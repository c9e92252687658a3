/**
 * The Vercel AI SDK (`@loopsense/sdk/vercel-ai`; ai 5, 6 and 7, spec/integrations.md): the hooks
 * of `generateText` / `streamText` (and `ToolLoopAgent`) that report each step to a run tracker
 * and apply its policy.
 *
 *     import { LoopsenseHooks } from "@loopsense/sdk/vercel-ai";
 *
 *     const hooks = new LoopsenseHooks(client.runs.track({ runId, agentId: "ari", policy: "stop" }));
 *     const result = await generateText(hooks.wrap({ model, tools, prompt, stopWhen: stepCountIs(20) }));
 *     if (hooks.stopped) console.log(hooks.stopped.reason);
 *
 * `wrap(options)` gives back the caller's options with loopsense's hooks added to their own
 * (theirs run first, and still run):
 * - `onStepFinish` (v7's `onStepEnd`; both are set, each version calls one) reports each tool
 *   result and tool error of the step, in order; a step with no tool call is a `message` step
 *   (the monologue rule). The SDK awaits it before it decides on the next step.
 * - `prepareStep` appends the nudge of the step before as a user message to the next model call's
 *   input. v5 and v6 use those messages for that call only, v7 keeps them for the calls after, so
 *   a nudge already in the input is not added again.
 * - `stopWhen`: loopsense's condition is added to the caller's (generateText's default, one
 *   step, is kept when they give none; `wrap` cannot tell a `ToolLoopAgent`'s options from
 *   generateText's, so give the agent its `stopWhen`, e.g. `stepCountIs(20)`, its own default):
 *   with policy `stop`, a break (after a nudge) ends the run gracefully (`stopped` holds the
 *   `AgentLoopDetected`). `stop: "raise"` instead rejects the call with it, thrown from the next
 *   `prepareStep` (a throw in `onStepFinish` is swallowed on v6 and v7); a break on the run's
 *   last step has no next one, so the call resolves and `stopped` holds it.
 *
 * Nothing else ever reaches the agent: the tracker answers within its timeout, degraded when the
 * service is slow or down, and a failing report is dropped. Importing this module imports no `ai`
 * package: the options are typed by the caller's own version.
 */
import { AgentLoopDetected } from "../tracker.js";
import type { StepAnswer, Tracker } from "../tracker.js";
import type { JsonValue } from "../types.js";

/** What precedes loopsense's text in what the model reads. */
export const PREFIX = "[loopsense] ";

/** The parts of a step result this adapter reads (the same in ai 5, 6 and 7). */
interface StepPart {
  type: string;
  toolName?: string;
  input?: unknown;
  output?: unknown;
  error?: unknown;
  preliminary?: boolean;
}

interface StepLike {
  content?: readonly StepPart[];
  text?: string;
}

interface Message {
  role: string;
  content: unknown;
}

type Hook = (event: never) => unknown;
type StopCondition = (options: { steps: readonly unknown[] }) => boolean | PromiseLike<boolean>;

export interface LoopsenseHooksOptions {
  /** How a `stop` tracker's break ends the run: "end" (default; stopWhen, the result is returned)
   * or "raise" (the call rejects with AgentLoopDetected). */
  stop?: "end" | "raise";
}

export class LoopsenseHooks {
  readonly tracker: Tracker;
  readonly stop: "end" | "raise";
  /** The break that stopped the run (policy stop), or null. */
  stopped: AgentLoopDetected | null = null;
  /** The nudge the next model call gets, from the last step's answers (null: none). */
  nudge: string | null = null;
  /** The last answer of the tracker, or null before the first step. */
  last: StepAnswer | null = null;

  constructor(tracker: Tracker, options: LoopsenseHooksOptions = {}) {
    const stop = options.stop ?? "end";
    if (stop !== "end" && stop !== "raise") throw new RangeError('stop must be "end" or "raise"');
    this.tracker = tracker;
    this.stop = stop;
  }

  /** The options of generateText / streamText / ToolLoopAgent with loopsense's hooks added. */
  wrap<T extends object>(options: T): T {
    const own = options as Record<string, unknown>;
    // Each version calls one of the two; the caller's hook of that name runs (or their other one).
    const theirFinish = (own.onStepFinish ?? own.onStepEnd) as Hook | undefined;
    const theirEnd = (own.onStepEnd ?? own.onStepFinish) as Hook | undefined;
    const theirPrepare = own.prepareStep as Hook | undefined;
    const theirStop = own.stopWhen as StopCondition | StopCondition[] | undefined;
    const after = (theirs: Hook | undefined) => async (step: StepLike): Promise<void> => {
      try {
        await theirs?.(step as never);
      } finally {
        await this.onStepFinish(step);
      }
    };
    const prepareStep = async (args: { messages: readonly Message[] }): Promise<unknown> => {
      const theirs = (await theirPrepare?.(args as never)) as { messages?: readonly Message[] } | undefined;
      const messages = this.prepareMessages(theirs?.messages ?? args.messages);
      return messages === null ? theirs : { ...theirs, messages };
    };
    const stopWhen = [...(theirStop === undefined ? [firstStep] : [theirStop].flat()), this.stopWhen];
    return { ...options, onStepFinish: after(theirFinish), onStepEnd: after(theirEnd), prepareStep, stopWhen } as T;
  }

  /** loopsense's stop condition (in `wrap`'s stopWhen): true once the tracker broke the run. */
  readonly stopWhen: StopCondition = () => this.stop === "end" && this.stopped !== null;

  /** Report one step's tool results and errors (or its text) to the tracker. Never rejects. */
  async onStepFinish(step: StepLike): Promise<void> {
    const nudges: string[] = [];
    let calls = 0;
    for (const part of step.content ?? []) {
      if (part.type === "tool-result" && !part.preliminary) {
        calls += 1;
        await this.#report(() => this.tracker.toolCall(part.toolName ?? "tool", json(part.input), { result: json(part.output) }), nudges);
      } else if (part.type === "tool-error") {
        calls += 1;
        await this.#report(() => this.tracker.toolCall(part.toolName ?? "tool", json(part.input), {
          result: { error: errorText(part.error) }, outcome: "error",
        }), nudges);
      }
    }
    if (calls === 0 && step.text) await this.#report(() => this.tracker.message(step.text ?? ""), nudges);
    this.nudge = nudges.length > 0 ? [...new Set(nudges)].join("\n") : null;
  }

  /** The next model call's messages with the pending nudge, or null when they stay as they are.
   * With `stop: "raise"`, throws the break instead. */
  prepareMessages(messages: readonly Message[]): Message[] | null {
    if (this.stop === "raise" && this.stopped !== null) throw this.stopped;
    if (this.nudge === null) return null;
    const text = PREFIX + this.nudge;
    if (messages.some((m) => m.role === "user" && m.content === text)) return null; // v7 kept it
    return [...messages, { role: "user", content: text }];
  }

  async #report(step: () => Promise<StepAnswer>, nudges: string[]): Promise<void> {
    try {
      const answer = await step();
      this.last = answer;
      if (answer.inject) nudges.push(answer.inject);
    } catch (error) {
      if (error instanceof AgentLoopDetected) this.stopped ??= error;
      // anything else is the tracker's to count; the agent goes on
    }
  }
}

/** The SDK's default stopWhen (`stepCountIs(1)`), kept when the caller gives none. */
const firstStep: StopCondition = ({ steps }) => steps.length === 1;

/** A value as JSON (what the tracker hashes); not JSON: its text. */
function json(value: unknown): JsonValue | undefined {
  if (value === undefined) return undefined;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : (JSON.parse(text) as JsonValue);
  } catch {
    return String(value);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
