// Rate-limit rules of a stage (a tollgate extension of the admin API,
// /restapis/{id}/stages/{name}/ratelimitrules): the list on the stage page,
// "Create rule" and one rule's page (UpdateRateLimitRule with AWS patch
// operations, DeleteRateLimitRule).
import { all, get, post, patch, del, path } from "../api.js";
import { h, table, field, onSubmit, showStatus, linkButton, confirmed } from "../dom.js";
import { apiMethods } from "../data.js";
import { links } from "../links.js";

/** Each algorithm's parameters, as the admin API names them. */
const PARAMS = {
  TOKEN_BUCKET: ["rateLimit", "burstLimit"],
  SLIDING_WINDOW: ["limit", "windowSeconds"],
  FIXED_WINDOW: ["limit", "windowSeconds"],
  CONCURRENCY: ["limit"],
  LEAKY_BUCKET: ["rateLimit", "burstLimit", "maxDelayMillis"],
};

/** Form fields of the parameters: label, input attributes, hint. */
const PARAM_FIELDS = {
  rateLimit: { label: "Rate limit", step: "any", hint: "Requests per second." },
  burstLimit: { label: "Burst limit", step: "1", hint: "TOKEN_BUCKET: the bucket's size. LEAKY_BUCKET: how many requests may wait at once." },
  limit: { label: "Limit", step: "1", hint: "Requests per window (SLIDING_WINDOW, FIXED_WINDOW) or in flight at once (CONCURRENCY)." },
  windowSeconds: { label: "Window (seconds)", step: "1", min: "1", hint: "Length of the window." },
  maxDelayMillis: { label: "Max delay (ms)", step: "1", max: "30000", hint: "The longest a request waits for its turn; past it, 429." },
};

const ALGORITHMS = Object.keys(PARAMS);
const MODES = [["ENFORCE", "Enforce"], ["SHADOW", "Shadow (only report)"]];
const METHODS = ["*", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

const rulesUrl = (apiId, stage) => path`/restapis/${apiId}/stages/${stage}/ratelimitrules`;

/** "limit 10 per 60 s" and the like, for the list. */
export function paramsText(r) {
  switch (r.algorithm) {
    case "TOKEN_BUCKET": return `${r.rateLimit}/s, burst ${r.burstLimit}`;
    case "LEAKY_BUCKET": return `${r.rateLimit}/s, burst ${r.burstLimit}, wait up to ${r.maxDelayMillis} ms`;
    case "CONCURRENCY": return `${r.limit} at once`;
    default: return `${r.limit} per ${r.windowSeconds} s`;
  }
}

/** The stage page's section: the rules table and "Create rule". */
export async function section(apiId, stage) {
  const rules = await all(rulesUrl(apiId, stage));
  rules.sort((a, b) => a.name.localeCompare(b.name));
  const rows = rules.map((r) => [
    h("a", { href: links.rule(apiId, stage, r.id), "aria-label": `Edit rule ${r.name}` }, r.name),
    `${r.httpMethod} ${r.resourcePath}`,
    r.keyBy.length ? r.keyBy.join(", ") : "every caller together",
    `${r.algorithm}: ${paramsText(r)}`,
    r.mode === "SHADOW" ? "shadow" : "enforce",
  ]);
  return [
    h("h2", {}, "Rate-limit rules"),
    h("p", { class: "hint" }, "Limits by client address, API key, header or query parameter. Changes apply at once."),
    h("div", { class: "actions" }, linkButton(links.newRule(apiId, stage), "Create rule")),
    table({ caption: "Rate-limit rules", columns: ["Rule", "Applies to", "Key by", "Algorithm", "Mode"], rows, empty: "This stage has no rate-limit rules." }),
  ];
}

/** The rule form's fields for rule r ({} for a new one) and the API's resource paths. */
function ruleFields(r, paths) {
  const algorithm = field({ label: "Algorithm", name: "algorithm", options: ALGORITHMS.map((a) => [a, a]), value: r.algorithm || "TOKEN_BUCKET" });
  const params = Object.entries(PARAM_FIELDS).map(([name, f]) => {
    const { label, hint, ...attrs } = f;
    return [name, field({ label, name, type: "number", min: "0", value: r[name] ?? "", hint, ...attrs })];
  });
  const select = algorithm.querySelector("select");
  const sync = () => params.forEach(([name, el]) => (el.hidden = !PARAMS[select.value].includes(name)));
  select.addEventListener("change", sync);
  sync();
  return [
    h("div", { class: "grid" },
      field({ label: "Name", name: "name", value: r.name || "", required: true,
        hint: "Names the rule in the RateLimit-Policy and RateLimit response headers." }),
      field({ label: "Resource path", name: "resourcePath", options: [["*", "* (every resource)"], ...paths.map((p) => [p, p])], value: r.resourcePath || "*" }),
      field({ label: "HTTP method", name: "httpMethod", options: METHODS.map((m) => [m, m === "*" ? "* (every method)" : m]), value: r.httpMethod || "*" }),
      field({ label: "Key by", name: "keyBy", value: (r.keyBy || []).join(", "),
        hint: "Comma-separated: ip, apiKey, header:<name>, query:<name>. Each combination of values is counted on its own; empty counts every caller together." }),
      algorithm,
      params.map(([, el]) => el),
      field({ label: "Mode", name: "mode", options: MODES, value: r.mode || "ENFORCE",
        hint: "Shadow decides and counts, logs what it would refuse, and lets every request through." })),
  ];
}

/** keyBy of the form's text. */
const keyList = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

/** The API's resource paths, sorted. */
async function resourcePaths(apiId) {
  const methods = await apiMethods(apiId);
  return [...new Set(methods.map((m) => m.path))].sort();
}

/** #/apis/{id}/stages/{name}/rules/new: CreateRateLimitRule. */
export async function create(apiId, stage, ctx) {
  const [api, paths] = await Promise.all([get(path`/restapis/${apiId}`), resourcePaths(apiId)]);
  const form = h("form", { class: "panel", "aria-label": "Create rule" }, ruleFields({}, paths),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create")));
  onSubmit(form, async (v) => {
    const body = { name: v.name, resourcePath: v.resourcePath, httpMethod: v.httpMethod, keyBy: keyList(v.keyBy), algorithm: v.algorithm, mode: v.mode };
    for (const p of PARAMS[v.algorithm]) if (v[p] !== "") body[p] = Number(v[p]);
    const r = await post(rulesUrl(apiId, stage), body);
    showStatus(`Rule ${r.name} created.`);
    ctx.navigate(links.stage(apiId, stage));
  });
  return {
    title: `Create rule on stage ${stage}`,
    crumbs: crumbs(api, apiId, stage, "new rule"),
    body: [form],
    focus: form.querySelector("input"),
  };
}

function crumbs(api, apiId, stage, last) {
  return [h("a", { href: links.apis() }, "All APIs"), " / ", h("a", { href: links.api(apiId) }, api.name), " / ",
    h("a", { href: links.stage(apiId, stage) }, stage), " / ", last];
}

/**
 * UpdateRateLimitRule operations turning rule r into form values v: the
 * algorithm first (the API drops parameters it does not take), then each
 * changed field; an emptied parameter is removed (the API then names it).
 */
function ruleOps(r, v) {
  const ops = [];
  if (v.algorithm !== r.algorithm) ops.push({ op: "replace", path: "/algorithm", value: v.algorithm });
  for (const f of ["name", "resourcePath", "httpMethod", "mode"]) {
    if (v[f] !== r[f]) ops.push({ op: "replace", path: "/" + f, value: v[f] });
  }
  const keys = keyList(v.keyBy).join(",");
  if (keys !== r.keyBy.join(",")) ops.push({ op: "replace", path: "/keyBy", value: keys });
  for (const p of PARAMS[v.algorithm]) {
    if (v[p] === String(r[p] ?? "") && v.algorithm === r.algorithm) continue;
    ops.push(v[p] === "" ? { op: "remove", path: "/" + p } : { op: "replace", path: "/" + p, value: v[p] });
  }
  return ops;
}

/** #/apis/{id}/stages/{name}/rules/{ruleId}: one rule, edited or deleted. */
export async function detail(apiId, stage, ruleId, ctx) {
  const url = rulesUrl(apiId, stage) + path`/${ruleId}`;
  const [api, r, paths] = await Promise.all([get(path`/restapis/${apiId}`), get(url), resourcePaths(apiId)]);
  const form = h("form", { class: "panel", "aria-label": `Rule ${r.name}` }, ruleFields(r, paths),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")));
  onSubmit(form, async (v) => {
    const ops = ruleOps(r, v);
    const saved = await patch(url, ops);
    showStatus(ops.length ? `Rule ${saved.name} saved.` : "Nothing changed.");
    ctx.refresh();
  });
  const remove = confirmed("Delete rule", `Delete rule ${r.name} of stage ${stage}?`, "Its limit stops applying at once.", async () => {
    await del(url);
    showStatus(`Rule ${r.name} deleted.`);
    ctx.navigate(links.stage(apiId, stage));
  });
  return {
    title: `Rule ${r.name}`,
    crumbs: crumbs(api, apiId, stage, r.name),
    body: [h("p", {}, "Changes apply at once. Counters carry over unless the algorithm or the key changes."), form, h("div", { class: "actions" }, remove)],
  };
}
