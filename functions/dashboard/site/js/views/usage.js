// Usage (GET /v1/usage): credits used this period against the plan's, and calls per day for
// the last 30 days, per skill.
import { get } from "../api.js";
import { barChart } from "../chart.js";
import { h, mount, table } from "../dom.js";

export async function usageView() {
  document.title = "Usage - loopsense";
  const usage = await get("/v1/usage");
  const share = usage.credits.quota ? Math.min(1, usage.credits.used / usage.credits.quota) : 1;
  const perDay = usage.days.map((d) => [d.day, d.calls]);
  const skills = [...new Set(usage.days.flatMap((d) => Object.keys(d.bySkill)))].sort();
  mount(
    h("h1", { text: "Usage" }),
    h("section", { class: "card", "aria-labelledby": "credits-title" },
      h("h2", { id: "credits-title", text: `Credits this period (${usage.period})` }),
      h("p", { id: "credits", text: `${usage.credits.used} of ${usage.credits.quota} credits ` +
                                    `used on plan ${usage.plan}` }),
      h("div", { class: "meter", role: "meter", "aria-valuemin": "0",
                 "aria-valuemax": String(usage.credits.quota),
                 "aria-valuenow": String(usage.credits.used), "aria-labelledby": "credits" },
        h("span", { style: null, "data-share": String(share) }))),
    h("h2", { text: "Calls per day, last 30 days" }),
    h("div", { id: "usage-chart" }, barChart("Charged calls per day (UTC)", perDay, "calls")),
    h("h2", { text: "Per skill" }),
    table("Charged calls per skill and day", ["Day", ...skills.map((s) => s + "#")],
      usage.days.filter((d) => d.calls).map((d) => h("tr", {}, h("td", { text: d.day }),
        skills.map((s) => h("td", { class: "num", text: String(d.bySkill[s] || 0) }))))));
  const bar = document.querySelector(".meter > span");
  bar.style.width = `${Math.round(share * 100)}%`;  // CSSOM: allowed by the page's CSP
}
