// Runs: the live runs (GET /v1/runs, newest activity first) with each agent's signal and
// recommendation, and a run (GET /v1/runs/{runId}): its agents' findings with their rationale,
// its config, and its event log (GET .../events, polled: breaks and restores show up on their
// own). A circuit break and a restore are started from here, each after a confirmation.
import { get, newKey, post, query } from "../api.js";
import { announce, badge, confirmAction, errorBox, h, mount, table, when } from "../dom.js";

const LIST_REFRESH_MS = 5000;
const EVENTS_REFRESH_MS = 2000;

function time(iso) {
  return h("time", { datetime: iso, text: when(iso) });
}

function action(recommendation) {
  const name = (recommendation && recommendation.action) || "continue";
  return badge("sig-" + name, name);
}

function flags(signal) {
  if (!signal) return h("span", { class: "hint", text: "monitor off" });
  const raised = [["is_looping", "looping"], ["is_stuck", "stuck"], ["is_drifting", "drifting"],
                  ["is_novelty_starved", "novelty-starved"]].filter(([k]) => signal[k]);
  return raised.length ? raised.map(([, text]) => badge("sev-warning", text))
    : h("span", { class: "ok", text: "no pathology" });
}

function runRows(items) {
  return items.flatMap((run) => run.agents.map((agent, i) => h("tr", {
    "data-run": run.runId, "data-agent": agent.agentId },
    i === 0 ? h("td", { rowspan: String(run.agents.length) },
                h("a", { href: "#/runs/" + encodeURIComponent(run.runId), class: "mono",
                         text: run.runId })) : null,
    i === 0 ? h("td", { rowspan: String(run.agents.length) }, time(run.lastActivity)) : null,
    h("td", { class: "mono", text: agent.agentId }),
    h("td", { class: "num", text: String(agent.sequence) }),
    h("td", {}, flags(agent.signal)),
    h("td", {}, action(agent.recommendation)))));
}

export async function runList() {
  document.title = "Runs - loopsense";
  let cursor = null;
  let items = [];
  let paged = false;  // "Load more" was used: the refresh would drop the pages read
  const holder = h("div", { id: "runs" });
  const more = h("div", { class: "actions" });
  const render = (page, append) => {
    items = append ? items.concat(page.items) : page.items;
    cursor = page.nextCursor;
    holder.replaceChildren(items.length
      ? table("Live runs, most recent activity first",
              ["Run", "Last activity", "Agent", "Steps#", "Signal", "Recommendation"],
              runRows(items))
      : h("p", { class: "notice", id: "no-runs", text: "No live run." }));
    more.replaceChildren(cursor ? h("button", { type: "button", text: "Load more",
      onclick: async () => {
        paged = true;
        render(await get("/v1/runs" + query({ limit: 50, cursor })), true);
      } }) : "");
  };
  render(await get("/v1/runs" + query({ limit: 50 })), false);
  mount(h("h1", { text: "Runs" }),
        h("p", { class: "hint", text: "Refreshes every few seconds, until more runs are loaded." }),
        holder, more);
  const timer = setInterval(async () => {
    if (paged) return;
    try { render(await get("/v1/runs" + query({ limit: 50 })), false); } catch { /* next tick */ }
  }, LIST_REFRESH_MS);
  return () => clearInterval(timer);
}

function agentCard(agent) {
  const signal = agent.signal;
  const findings = (signal && signal.findings) || [];
  return h("section", { class: "card", "data-agent": agent.agentId,
                        "aria-label": "Agent " + agent.agentId },
    h("h3", {}, "Agent ", h("span", { class: "mono", text: agent.agentId }),
      agent.role ? ` (${agent.role})` : ""),
    h("dl", { class: "kv" },
      h("dt", { text: "Steps" }), h("dd", { text: String(agent.sequence) }),
      h("dt", { text: "Segment starts at" }), h("dd", { text: String(agent.segmentStart) }),
      h("dt", { text: "Last activity" }), h("dd", {}, time(agent.lastActivity)),
      h("dt", { text: "Signal" }), h("dd", {}, flags(signal)),
      signal ? [h("dt", { text: "Loop score" }), h("dd", { text: String(signal.loop_score) })]
        : null,
      h("dt", { text: "Recommendation" }),
      h("dd", { class: "recommendation" }, action(agent.recommendation),
        agent.recommendation && agent.recommendation.nudge
          ? h("p", { class: "nudge", text: agent.recommendation.nudge }) : null)),
    findings.length ? table(`Findings of ${agent.agentId}`,
      ["Rule", "Severity", "Count#", "Rationale"],
      findings.map((f) => h("tr", {}, h("td", { class: "mono", text: f.rule }),
        h("td", {}, badge("sev-" + f.severity, f.severity)),
        h("td", { class: "num", text: String(f.count) }),
        h("td", { class: "rationale", text: f.rationale }))))
      : h("p", { class: "hint", text: "No finding stands." }));
}

function eventDetails(event) {
  const parts = [];
  if (event.reason) parts.push("reason " + event.reason);
  if (event.snapshotId) parts.push("snapshot " + event.snapshotId);
  if (event.replacedSnapshotId) parts.push("replaced into " + event.replacedSnapshotId);
  if (event.agentIds && event.agentIds.length) parts.push("agents " + event.agentIds.join(", "));
  if (event.entries !== undefined) parts.push(event.entries + " entries");
  return parts.join("; ");
}

export async function runDetail(runId) {
  document.title = `Run ${runId} - loopsense`;
  const path = "/v1/runs/" + encodeURIComponent(runId);
  const agents = h("div", { id: "agents" });
  const config = h("div", { id: "config" });
  const notice = h("div", { id: "run-action-result" });
  const eventsBody = h("tbody", {});
  const eventsTable = h("div", { class: "scroll", role: "region", tabindex: "0",
                                 "aria-label": "Event log" },
    h("table", { id: "events" }, h("caption", { text: "Event log, oldest first" }),
      h("thead", {}, h("tr", {}, ["Seq", "Event", "At", "Details", "Action"].map(
        (name) => h("th", { scope: "col", text: name })))), eventsBody));
  let lastSeq = null;

  const renderRun = (run) => {
    agents.replaceChildren(...(run.agents.length ? run.agents.map(agentCard)
      : [h("p", { class: "notice", text: "No live agent in this run." })]));
    config.replaceChildren(run.config
      ? h("pre", { class: "card mono", tabindex: "0", text: JSON.stringify(run.config, null, 2) })
      : h("p", { class: "hint", text: "No run config: the tenant's settings apply." }));
  };

  const restore = async (snapshotId) => {
    const ok = await confirmAction("Restore working memory",
      `Replace this run's working memory with snapshot ${snapshotId}? The memory it replaces ` +
      "is kept as a snapshot of its own.", "Restore");
    if (!ok) return;
    notice.replaceChildren();
    try {
      const done = await post(`${path}/snapshots/${encodeURIComponent(snapshotId)}/restore`,
                              {}, { "Idempotency-Key": newKey() });
      const text = `Restored ${done.entries} entries from snapshot ${snapshotId}.`;
      notice.append(h("p", { class: "ok", role: "status", text }));
      announce(text);
      await pollEvents();
    } catch (error) {
      notice.append(errorBox(error, "Not restored. "));
    }
  };

  const eventRow = (event) => h("tr", { "data-seq": String(event.seq) },
    h("td", { class: "num", text: String(event.seq) }),
    h("td", { class: "mono", text: event.type }),
    h("td", {}, time(event.at)),
    h("td", { text: eventDetails(event) }),
    h("td", {}, event.snapshotId ? h("button", { type: "button", class: "restore",
      "data-snapshot": event.snapshotId, "aria-label": `Restore snapshot ${event.snapshotId}`,
      text: "Restore", onclick: () => restore(event.snapshotId) }) : ""));

  const pollEvents = async () => {
    let changed = false;
    for (let page = 0; page < 20; page++) {
      const answer = await get(`${path}/events` + query({ limit: 100, after: lastSeq }));
      eventsBody.append(...answer.events.map(eventRow));
      if (answer.events.length) {
        lastSeq = answer.events.at(-1).seq;
        changed = true;
      }
      if (!answer.next) break;
    }
    if (changed) renderRun(await get(path));
  };

  const reason = h("input", { id: "break-reason", type: "text", value: "dashboard",
                              maxlength: "64", "aria-describedby": "break-reason-hint" });
  const breakRun = async () => {
    const ok = await confirmAction("Circuit break",
      `Break run ${runId}? Its working memory becomes a snapshot, memory is emptied and every ` +
      "live agent's monitor is reset.", "Break");
    if (!ok) return;
    notice.replaceChildren();
    try {
      const done = await post(`${path}/circuit-break`, { reason: reason.value },
                              { "Idempotency-Key": newKey() });
      const text = `Circuit broken: snapshot ${done.snapshotId} holds ` +
                   `${done.summary.entries} entries.`;
      notice.append(h("p", { class: "ok", role: "status", text }));
      announce(text);
      await pollEvents();
    } catch (error) {
      notice.append(errorBox(error, "Not broken. "));
    }
  };

  renderRun(await get(path));
  mount(
    h("p", {}, h("a", { href: "#/runs", text: "All runs" })),
    h("h1", {}, "Run ", h("span", { class: "mono", text: runId })),
    h("h2", { text: "Agents" }), agents,
    h("h2", { text: "Circuit break" }),
    h("div", { class: "card" },
      h("div", { class: "field" }, h("label", { for: "break-reason", text: "Reason" }), reason,
        h("span", { id: "break-reason-hint", class: "hint", text: "1 to 64 characters" })),
      h("button", { type: "button", class: "danger", id: "break", text: "Circuit break",
                    onclick: breakRun }),
      notice),
    h("h2", { text: "Event log" }),
    h("p", { class: "hint", text: "Circuit breaks and restores; refreshes on its own." }),
    eventsTable,
    h("h2", { text: "Config" }), config);
  await pollEvents();
  const timer = setInterval(() => pollEvents().catch(() => {}), EVENTS_REFRESH_MS);
  return () => clearInterval(timer);
}
