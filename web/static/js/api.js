// The admin API client. Every call is an operation of the admin REST API
// (Amazon API Gateway's wire format, the same the AWS CLI uses), sent with
// "Authorization: Bearer <token>". The token lives in sessionStorage only:
// never in a URL, a cookie or local storage.

const TOKEN_KEY = "tollgate.adminToken";

/** The operator's bearer token for this browser tab. */
export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY) || "",
  signIn: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Refusals of the token itself: the console signs out on these. */
const AUTH_ERRORS = new Set(["MissingAuthenticationTokenException", "UnrecognizedClientException"]);

/** A refused or failed call; message is in words, for the operator. */
export class ApiError extends Error {
  constructor(status, type, detail, retryAfter) {
    super(describe(status, type, detail, retryAfter));
    this.status = status;
    this.type = type;
    this.detail = detail;
  }
  /** True when the token was refused (403 from authentication). */
  get unauthorized() {
    return this.status === 403 && AUTH_ERRORS.has(this.type);
  }
}

function describe(status, type, detail, retryAfter) {
  const what = {
    0: "The admin API could not be reached",
    400: "The admin API refused the request",
    403: "The admin token was refused",
    404: "Not found",
    409: "Conflict",
    413: "The request is too large",
    429: "Too many requests",
    503: "The admin API is unavailable for now",
  }[status] || "The admin API answered with an error";
  let text = detail ? `${what}: ${detail}` : `${what}.`;
  if (retryAfter) text += ` Retry in ${retryAfter} s.`;
  if (status) text += ` (HTTP ${status}${type ? " " + type : ""})`;
  return text;
}

/**
 * path`/restapis/${id}/stages/${name}` builds a request path with every
 * interpolated value percent-encoded as one path segment.
 */
export function path(strings, ...values) {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]) : ""), "");
}

/** query({a: 1, b: ""}) is "?a=1" (empty values left out). */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

/**
 * The headers of every call: the bearer token, and the door the audit log
 * records for the console's changes.
 */
export function authHeaders(token = session.token()) {
  return { Authorization: "Bearer " + token, Accept: "application/json", "X-Tollgate-Source": "console" };
}

let onUnauthorized = () => {};

/** Sets what happens when the API refuses the token (sign-in again). */
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

/**
 * Sends one call; resolves with the parsed JSON body (or null). opts.token
 * replaces the session's token (sign-in checks a token before keeping it;
 * a refusal then does not sign out).
 */
export async function call(method, url, body, opts = {}) {
  const token = opts.token === undefined ? session.token() : opts.token;
  const headers = authHeaders(token);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  } catch (e) {
    throw new ApiError(0, "", e.message);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { message: text.slice(0, 200) };
  }
  if (!res.ok) {
    const err = new ApiError(res.status, res.headers.get("x-amzn-ErrorType") || "", data && data.message, res.headers.get("Retry-After"));
    if (err.unauthorized && opts.token === undefined) onUnauthorized(err);
    throw err;
  }
  return data;
}

export const get = (url) => call("GET", url);
export const post = (url, body) => call("POST", url, body === undefined ? {} : body);
export const del = (url) => call("DELETE", url);

/** PATCH with AWS's patch operations; nothing is sent when ops is empty. */
export async function patch(url, ops) {
  if (!ops.length) return null;
  return call("PATCH", url, { patchOperations: ops });
}

/** Every item of a paged list, following "position" (500 per page). */
export async function all(url) {
  const items = [];
  let position = "";
  do {
    const sep = url.includes("?") ? "&" : "?";
    const page = await get(url + sep + "limit=500" + (position ? "&position=" + encodeURIComponent(position) : ""));
    items.push(...((page && page.item) || []));
    position = (page && page.position) || "";
  } while (position);
  return items;
}

/** One page of a list: {items, position}. */
export async function page(url, limit, position) {
  const sep = url.includes("?") ? "&" : "?";
  const p = await get(url + sep + "limit=" + limit + (position ? "&position=" + encodeURIComponent(position) : ""));
  return { items: (p && p.item) || [], position: (p && p.position) || "" };
}
