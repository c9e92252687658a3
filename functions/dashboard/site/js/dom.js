// Elements built from text only: nothing from the API is ever parsed as HTML here (the one
// exception, a playbook's markdown, goes through DOMPurify in views/groups.js).
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "text") el.textContent = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name in el && typeof value !== "string") el[name] = value;
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function mount(...children) {
  const main = document.getElementById("main");
  main.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined
                                                          && c !== false && c !== ""));
  return main;
}

export function announce(text) {
  document.getElementById("status").textContent = text;
}

export function errorBox(error, prefix = "") {
  const box = h("div", { class: "error", role: "alert" },
    h("strong", { text: prefix + (error.code ? `${error.code}: ` : "") }), error.message);
  if (error.details && error.details.length) {
    box.append(h("ul", {}, error.details.map((d) => h("li", {}, h("code", { text: d.path }),
      ": ", d.issue))));
  }
  return box;
}

export function badge(kind, text) {
  return h("span", { class: `badge ${kind}` }, text);
}

export function table(caption, headers, rows, label) {
  return h("div", { class: "scroll", role: "region", "aria-label": label || caption,
                    tabindex: "0" },
    h("table", {},
      h("caption", { text: caption }),
      h("thead", {}, h("tr", {}, headers.map((name) => h("th", {
        scope: "col", class: name.endsWith("#") ? "num" : null }, name.replace(/#$/, ""))))),
      h("tbody", {}, rows)));
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().replace("T", " ").slice(0, 19);
}

const dialog = () => document.getElementById("confirm");

export function confirmAction(title, text, ok) {
  const box = dialog();
  box.querySelector("#confirm-title").textContent = title;
  box.querySelector("#confirm-text").textContent = text;
  box.querySelector("#confirm-ok").textContent = ok;
  box.returnValue = "";
  return new Promise((resolve) => {
    box.addEventListener("close", () => resolve(box.returnValue === "ok"), { once: true });
    box.showModal();
  });
}
