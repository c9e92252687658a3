// The dashboard: sign-in, a hash router over the four views, nothing else. Each view renders
// into <main> and may return a stop function (its timers) called when the route changes.
import { ApiError, get, session } from "./api.js";
import { announce, errorBox, h, mount } from "./dom.js";
import { groupDetail, groupList } from "./views/groups.js";
import { runDetail, runList } from "./views/runs.js";
import { settingsView } from "./views/settings.js";
import { usageView } from "./views/usage.js";

const ROUTES = [
  [/^#\/groups\/(.+)$/, (m) => groupDetail(decodeURIComponent(m[1])), "#/groups"],
  [/^#\/runs\/(.+)$/, (m) => runDetail(decodeURIComponent(m[1])), "#/runs"],
  [/^#\/runs$/, () => runList(), "#/runs"],
  [/^#\/settings$/, () => settingsView(), "#/settings"],
  [/^#\/usage$/, () => usageView(), "#/usage"],
  [/^(#\/groups)?$/, () => groupList(), "#/groups"],
];

let stop = null;

async function route() {
  if (stop) { stop(); stop = null; }
  const nav = document.getElementById("nav");
  if (!session.key()) {
    nav.hidden = true;
    signIn();
    return;
  }
  nav.hidden = false;
  const hash = location.hash || "#/groups";
  const [pattern, view, section] = ROUTES.find(([p]) => p.test(hash)) || ROUTES.at(-1);
  for (const link of nav.querySelectorAll("a")) {
    if (link.getAttribute("href") === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  try {
    stop = (await view(hash.match(pattern))) || null;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      session.signOut();
      signIn(error);
      return;
    }
    mount(h("h1", { text: "Something went wrong" }), errorBox(error));
  }
  // Focus to the new view, unless the user already moved it into the view (a view renders
  // before it has finished loading, and a key pressed meanwhile must reach what it focused).
  const main = document.getElementById("main");
  if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
}

function signIn(failure) {
  document.title = "Sign in - loopsense";
  const input = h("input", { id: "api-key", type: "password", autocomplete: "off",
                             required: true, spellcheck: "false",
                             "aria-describedby": "api-key-hint" });
  const problem = h("div", { id: "sign-in-problem" });
  if (failure) problem.append(errorBox(failure, "Sign-in failed. "));
  const form = h("form", { class: "card signin", novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    problem.replaceChildren();
    if (!key) {
      problem.append(h("div", { class: "error", role: "alert",
                                text: "Enter an API key (ls_...)." }));
      input.focus();
      return;
    }
    try {
      await get("/v1/detector-thresholds", { key });  // any valid key of a tenant may read it
    } catch (error) {
      problem.append(errorBox(error, "Sign-in failed. "));
      input.focus();
      return;
    }
    session.signIn(key);
    announce("Signed in");
    if (!location.hash || location.hash === "#/") location.hash = "#/groups";
    else route();
  } },
  h("h1", { text: "Sign in" }),
  h("div", { class: "field" },
    h("label", { for: "api-key", text: "API key" }),
    input,
    h("span", { id: "api-key-hint", class: "hint",
                text: "Kept in this browser tab only (sessionStorage), sent to this API only." })),
  problem,
  h("button", { type: "submit", class: "primary", text: "Sign in" }));
  mount(form);
  input.focus();
}

document.getElementById("sign-out").addEventListener("click", () => {
  session.signOut();
  announce("Signed out");
  route();
});
window.addEventListener("hashchange", route);
route();
