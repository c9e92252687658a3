// The public API of this page's own origin, signed in with an API key kept in sessionStorage
// only (gone with the tab). Every failure is the API's own envelope, kept as the API words it.
const KEY = "loopsense.apiKey";

export class ApiError extends Error {
  constructor(status, envelope) {
    const error = (envelope && envelope.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "HTTP_" + status;
    this.details = error.details || [];
    this.next = error.next || "";
  }
}

export const session = {
  key: () => sessionStorage.getItem(KEY),
  signIn: (key) => sessionStorage.setItem(KEY, key),
  signOut: () => sessionStorage.removeItem(KEY),
};

export async function call(method, path, body, { key = session.key(), headers = {} } = {}) {
  const init = { method, headers: { Authorization: `Bearer ${key}`, ...headers },
                 cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, { error: { code: "NETWORK", message: "the API could not be reached" } });
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

export const get = (path, options) => call("GET", path, undefined, options);
export const put = (path, body) => call("PUT", path, body);
export const post = (path, body, headers) => call("POST", path, body, { headers });

export function query(params) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") q.set(name, value);
  }
  const text = q.toString();
  return text ? "?" + text : "";
}

export function newKey() {
  return "dash-" + crypto.randomUUID();
}
