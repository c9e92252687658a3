// Settings: detector thresholds and the run monitor's (GET/PUT /v1/detector-thresholds),
// severity routing (/v1/severity-routing), retention (/v1/telemetry-settings). Every value
// shows its bounds; a save sends what changed, and a refusal is shown as the API words it.
import { get, put } from "../api.js";
import { announce, errorBox, h, mount, table } from "../dom.js";

const RUNS = (name, t) => t.used_by === "agent.run_monitor" || name === "monitor_disabled"
  || name === "run_retention_days";

function bounds(t) {
  if (t.type === "boolean") return "true or false";
  return `${t.min} to ${t.max}, ${t.type}`;
}

function input(name, t) {
  const id = "t-" + name;
  if (t.type === "boolean") {
    return h("input", { id, type: "checkbox", checked: Boolean(t.value), "data-name": name,
                        "aria-describedby": id + "-bounds" });
  }
  return h("input", { id, type: "text", inputmode: t.type === "integer" ? "numeric" : "decimal",
                      value: String(t.value), "data-name": name, "data-initial": String(t.value),
                      "aria-describedby": id + "-bounds", autocomplete: "off" });
}

function parse(text) {
  const trimmed = text.trim();
  if (trimmed === "") return null;  // back to the default
  const number = Number(trimmed);
  return Number.isFinite(number) ? number : trimmed;  // not a number: the API says why
}

function changes(form, thresholds) {
  const body = {};
  for (const el of form.querySelectorAll("input[data-name]")) {
    const name = el.dataset.name;
    if (el.type === "checkbox") {
      if (el.checked !== Boolean(thresholds[name].value)) body[name] = el.checked;
    } else if (el.value !== el.dataset.initial) {
      body[name] = parse(el.value);
    }
  }
  return body;
}

function thresholdForm(id, title, names, thresholds, onSaved) {
  const result = h("div", { id: id + "-result" });
  const rows = names.map((name) => {
    const t = thresholds[name];
    return h("tr", {},
      h("th", { scope: "row" }, h("label", { for: "t-" + name, class: "mono", text: name })),
      h("td", { "data-label": "Value" }, input(name, t)),
      h("td", { id: `t-${name}-bounds`, "data-label": "Bounds", text: bounds(t) }),
      h("td", { "data-label": "Default", text: String(t.default) }),
      h("td", { "data-label": "Used by", text: t.used_by || "" }));
  });
  const form = h("form", { id, class: "card settings-table", novalidate: true,
                           onsubmit: async (event) => {
    event.preventDefault();
    result.replaceChildren();
    const body = changes(form, thresholds);
    if (!Object.keys(body).length) {
      result.append(h("p", { class: "notice", role: "status", text: "Nothing changed." }));
      return;
    }
    try {
      const saved = await put("/v1/detector-thresholds", body);
      onSaved(saved, `${title}: saved ${Object.keys(body).join(", ")}.`);
    } catch (error) {
      result.append(errorBox(error, "Not saved. "));
    }
  } },
  h("h2", { text: title }),
  table(title + ": value, bounds, default",
        ["Name", "Value", "Bounds", "Default", "Used by"], rows),
  result,
  h("div", { class: "actions" }, h("button", { type: "submit", class: "primary",
                                               text: "Save " + title.toLowerCase() })));
  return form;
}

function routingForm(routing) {
  const result = h("div", { id: "routing-result" });
  const fields = Object.entries(routing).map(([cls, severity]) => h("div", { class: "field" },
    h("label", { for: "route-" + cls, text: cls }),
    h("select", { id: "route-" + cls, "data-class": cls },
      ["critical", "warning", "info"].map((s) => h("option", { value: s,
                                                               selected: s === severity }, s)))));
  const form = h("form", { id: "routing", class: "card", onsubmit: async (event) => {
    event.preventDefault();
    result.replaceChildren();
    const body = {};
    for (const el of form.querySelectorAll("select")) body[el.dataset.class] = el.value;
    try {
      await put("/v1/severity-routing", body);
      result.append(h("p", { class: "ok", role: "status", text: "Severity routing saved." }));
    } catch (error) {
      result.append(errorBox(error, "Not saved. "));
    }
  } },
  h("h2", { text: "Severity routing" }),
  h("p", { class: "hint", text: "The severity every failure group of a class is shown with." }),
  h("div", { class: "filters" }, fields), result,
  h("div", { class: "actions" }, h("button", { type: "submit", class: "primary",
                                               text: "Save routing" })));
  return form;
}

function retentionForm(retention) {
  const limits = { telemetry_retention_days: [1, 365, "raw telemetry"],
                   group_retention_days: [1, 730, "failure groups and their counts"] };
  const result = h("div", { id: "retention-result" });
  const fields = Object.entries(limits).map(([name, [low, high, what]]) =>
    h("div", { class: "field" },
      h("label", { for: "r-" + name, class: "mono", text: name }),
      h("input", { id: "r-" + name, type: "text", inputmode: "numeric", "data-name": name,
                   value: String(retention[name]), "aria-describedby": `r-${name}-bounds` }),
      h("span", { id: `r-${name}-bounds`, class: "hint",
                  text: `days of ${what}: ${low} to ${high}, integer` })));
  const form = h("form", { id: "retention", class: "card", novalidate: true,
                           onsubmit: async (event) => {
    event.preventDefault();
    result.replaceChildren();
    const body = {};
    for (const el of form.querySelectorAll("input")) body[el.dataset.name] = parse(el.value);
    try {
      await put("/v1/telemetry-settings", body);
      result.append(h("p", { class: "ok", role: "status", text: "Retention saved." }));
    } catch (error) {
      result.append(errorBox(error, "Not saved. "));
    }
  } },
  h("h2", { text: "Telemetry retention" }),
  h("div", { class: "filters" }, fields), result,
  h("div", { class: "actions" }, h("button", { type: "submit", class: "primary",
                                               text: "Save retention" })));
  return form;
}

export async function settingsView(message) {
  document.title = "Settings - loopsense";
  const [answer, routing, retention] = await Promise.all([
    get("/v1/detector-thresholds"), get("/v1/severity-routing"),
    get("/v1/telemetry-settings")]);
  const thresholds = answer.thresholds;
  const names = Object.keys(thresholds);
  const saved = (_, text) => { settingsView(text); announce(text); };
  mount(
    h("h1", { text: "Settings" }),
    h("p", { class: "hint", text: `Plan ${answer.plan}. An empty value goes back to the ` +
                                  "default. Changes apply to new executions and steps." }),
    message ? h("p", { class: "ok", role: "status", id: "saved", text: message }) : null,
    thresholdForm("detectors", "Detector thresholds",
                  names.filter((n) => !RUNS(n, thresholds[n])), thresholds, saved),
    thresholdForm("run-monitor", "Run monitor",
                  names.filter((n) => RUNS(n, thresholds[n])), thresholds, saved),
    routingForm(routing),
    retentionForm(retention));
}
