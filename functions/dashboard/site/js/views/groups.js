// Failure groups: the table (GET /v1/failure-groups, newest lastSeen first, by class and
// severity) and a group's detail (GET /v1/failure-groups/{signature}): its playbook (markdown
// rendered by marked, sanitized by DOMPurify), affected executions per day, the recent
// executions and, for semantic_loop, the canonical state being revisited.
import { get, query } from "../api.js";
import { barChart } from "../chart.js";
import { badge, h, mount, table, when } from "../dom.js";

const filters = { class: "", severity: "" };

function time(iso) {
  return h("time", { datetime: iso, text: when(iso) });
}

function select(id, label, options, value, onchange) {
  return h("div", { class: "field" },
    h("label", { for: id, text: label }),
    h("select", { id, onchange: (e) => onchange(e.target.value) },
      options.map(([v, text]) => h("option", { value: v, selected: v === value }, text))));
}

function row(group) {
  return h("tr", { "data-signature": group.signature },
    h("td", { text: group.class }),
    h("td", {}, h("a", { href: "#/groups/" + encodeURIComponent(group.signature),
                         class: "mono", text: group.signature })),
    h("td", {}, badge("sev-" + group.severity, group.severity)),
    h("td", { class: "num", text: String(group.executions) }),
    h("td", {}, time(group.firstSeen)),
    h("td", {}, time(group.lastSeen)));
}

export async function groupList() {
  document.title = "Failure groups - loopsense";
  const first = await get("/v1/failure-groups" + query({ limit: 100, ...filters }));
  const rows = first.items.map(row);
  const view = table("Failure groups, most recently seen first",
    ["Class", "Signature", "Severity", "Executions#", "First seen", "Last seen"], rows);
  const body = view.querySelector("tbody");
  const more = h("div", { class: "actions" });
  const showMore = (cursor) => {
    more.replaceChildren();
    if (!cursor) return;
    more.append(h("button", { type: "button", text: "Load more", onclick: async () => {
      const page = await get("/v1/failure-groups" + query({ limit: 100, ...filters, cursor }));
      body.append(...page.items.map(row));
      showMore(page.nextCursor);
    } }));
  };
  showMore(first.nextCursor);
  const refilter = (name) => (value) => { filters[name] = value; groupList(); };
  mount(
    h("h1", { text: "Failure groups" }),
    h("div", { class: "filters" },
      select("filter-class", "Class", [["", "All classes"], ["loops", "loops"],
                                       ["semantic_loop", "semantic_loop"],
                                       ["tool_calls", "tool_calls"]],
             filters.class, refilter("class")),
      select("filter-severity", "Severity", [["", "All severities"], ["critical", "critical"],
                                             ["warning", "warning"], ["info", "info"]],
             filters.severity, refilter("severity"))),
    first.items.length ? view
      : h("p", { class: "notice", id: "no-groups",
                 text: "No failure group yet: none of your executions has fired a detector." }),
    more);
}

export function renderMarkdown(markdown) {
  const html = window.marked.parse(markdown, { async: false, gfm: true });
  const safe = window.DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
  const box = h("div", { class: "playbook" });
  box.innerHTML = safe;  // sanitized just above: the only HTML this page takes from the API
  for (const heading of box.querySelectorAll("h1, h2, h3, h4, h5, h6")) {
    // the page has its own h1: the playbook's headings go one level down
    const level = Math.min(6, Number(heading.tagName[1]) + 1);
    const lower = h("h" + level, {}, ...heading.childNodes);
    heading.replaceWith(lower);
  }
  for (const code of box.querySelectorAll("pre")) {
    code.tabIndex = 0;  // a code block may scroll sideways: reachable by keyboard
  }
  return box;
}

function timeline(detail) {
  // executions per day, from the group's first day to today (days without any shown as 0)
  const counts = new Map((detail.timeline || []).map((d) => [d.day, d.executions]));
  const days = [...counts.keys()].sort();
  if (!days.length) return [];
  const points = [];
  const end = new Date(Math.max(Date.parse(days.at(-1)), Date.parse(detail.group.lastSeen)));
  const start = new Date(Math.min(Date.parse(days[0]), end.getTime() - 6 * 86400000));
  start.setUTCHours(0, 0, 0, 0);  // a week at least: one day alone makes no time axis
  for (let d = start; d <= end; d.setUTCDate(d.getUTCDate() + 1)) {
    const day = d.toISOString().slice(0, 10);
    points.push([day, counts.get(day) || 0]);
  }
  return points;
}

export async function groupDetail(signature) {
  const detail = await get("/v1/failure-groups/" + encodeURIComponent(signature));
  const group = detail.group;
  document.title = `${group.signature} - loopsense`;
  const executions = detail.executions.map((e) => h("tr", {},
    h("td", { class: "mono", text: e.executionId }), h("td", {}, time(e.firedAt))));
  mount(
    h("p", {}, h("a", { href: "#/groups", text: "All failure groups" })),
    h("h1", {}, "Failure group ", h("code", { text: group.signature })),
    h("dl", { class: "kv card", id: "group-facts" },
      h("dt", { text: "Class" }), h("dd", { text: group.class }),
      h("dt", { text: "Detector" }), h("dd", { text: group.sub }),
      h("dt", { text: "Severity" }), h("dd", {}, badge("sev-" + group.severity, group.severity)),
      h("dt", { text: "Executions" }), h("dd", { text: String(group.executions) }),
      h("dt", { text: "First seen" }), h("dd", {}, time(group.firstSeen)),
      h("dt", { text: "Last seen" }), h("dd", {}, time(group.lastSeen))),
    group.class === "semantic_loop" ? [
      h("h2", { text: "Canonical state being revisited" }),
      detail.canonicalState === null
        ? h("p", { class: "notice", text: "No longer kept (the telemetry retention passed)." })
        : h("pre", { class: "card mono", id: "canonical-state", tabindex: "0",
                     text: pretty(detail.canonicalState) })] : null,
    h("h2", { text: "Affected executions per day" }),
    h("div", { id: "group-chart" }, barChart("Executions that fired this group, per day (UTC)",
                                              timeline(detail), "executions")),
    h("h2", { text: "Recent executions" }),
    table("The most recent affected executions", ["Execution", "Fired at"], executions),
    h("section", { id: "playbook", "aria-label": "Playbook " + detail.playbook.name },
      renderMarkdown(detail.playbook.markdown)));
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}
