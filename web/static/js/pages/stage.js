// A stage: its settings, stage-wide and per-method throttles and cache
// settings (UpdateStage), cache key parameters (UpdateIntegration),
// "Flush cache" (FlushStageCache) and its rate-limit rules (rules.js).
import { get, patch, del, path } from "../api.js";
import { h, confirmed, table, field, onSubmit, showStatus, onOff, when } from "../dom.js";
import { apiMethods, settingKey, stageDefaults, inherited } from "../data.js";
import { links } from "../links.js";
import { section as rulesSection } from "./rules.js";

/** Cache cluster sizes in GB, as AWS offers them. */
const CACHE_SIZES = ["0.5", "1.6", "6.1", "13.5", "28.4", "58.2", "118", "237"];

/** #/apis/{id}/stages/{name}. */
export async function detail(apiId, stageName, ctx) {
  const [api, st, methods, rules] = await Promise.all([
    get(path`/restapis/${apiId}`), get(path`/restapis/${apiId}/stages/${stageName}`), apiMethods(apiId), rulesSection(apiId, stageName)]);
  const url = path`/restapis/${apiId}/stages/${stageName}`;
  const flush = confirmed("Flush cache", `Flush the cache of stage ${stageName}?`, "Every gateway node misses the cache until the entries are filled again.", async () => {
    await del(url + "/cache/data");
    showStatus(`The cache of stage ${stageName} was flushed.`);
  });
  return {
    title: `Stage ${stageName}`,
    crumbs: [h("a", { href: links.apis() }, "All APIs"), " / ", h("a", { href: links.api(apiId) }, api.name), " / ", stageName],
    body: [
      h("p", {}, `Deployment `, h("code", {}, st.deploymentId), `, updated ${when(st.lastUpdatedDate)}. Stage settings apply at once, without a deployment.`),
      h("div", { class: "actions" }, flush),
      stageForm(url, st, ctx),
      h("h2", {}, "Method settings"),
      h("p", { class: "hint" }, "Per-method entries override the stage settings above; inherit means the stage's (or the account's) value."),
      methodSettingsTable(apiId, st, methods),
      rules,
    ],
  };
}

/** The stage's own fields and its "*\/*" method settings, saved with one UpdateStage. */
function stageForm(url, st, ctx) {
  const d = stageDefaults(st);
  const form = h("form", { class: "panel", "aria-label": "Stage settings" },
    h("div", { class: "grid" },
      field({ label: "Description", name: "description", value: st.description || "" }),
      field({ label: "Rate limit", name: "rate", type: "number", min: "0", step: "any", value: num(d.throttlingRateLimit),
        hint: "Requests per second for each method; empty inherits the account's." }),
      field({ label: "Burst limit", name: "burst", type: "number", min: "0", step: "1", value: num(d.throttlingBurstLimit),
        hint: "Token bucket size; empty inherits the account's." }),
      field({ label: "Cache TTL (seconds)", name: "ttl", type: "number", min: "0", max: "3600", step: "1", value: d.cacheTtlInSeconds ?? 300 }),
      field({ label: "Cache cluster size (GB)", name: "size", options: CACHE_SIZES.map((s) => [s, s]), value: st.cacheClusterSize || "0.5" })),
    h("fieldset", {}, h("legend", {}, "Cache"),
      field({ label: "Cache cluster enabled", name: "cluster", type: "checkbox", value: st.cacheClusterEnabled }),
      field({ label: "Caching enabled", name: "caching", type: "checkbox", value: !!d.cachingEnabled,
        hint: "Caches GET responses of every method; per-method settings can differ." })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")));
  return onSubmit(form, async (v) => {
    const ops = [];
    if (v.description !== (st.description || "")) ops.push({ op: "replace", path: "/description", value: v.description });
    if (v.cluster !== !!st.cacheClusterEnabled) ops.push({ op: "replace", path: "/cacheClusterEnabled", value: String(v.cluster) });
    if (v.cluster && v.size !== (st.cacheClusterSize || "0.5")) ops.push({ op: "replace", path: "/cacheClusterSize", value: v.size });
    ops.push(...settingOps("/*/*", d, v));
    await patch(url, ops);
    showStatus(ops.length ? "Stage settings saved." : "Nothing changed.");
    ctx.refresh();
  });
}

/** A throttle field's form value: "" for inherit (-1 or absent). */
const num = (v) => (v === undefined || v === null || v < 0 ? "" : String(v));

/**
 * UpdateStage operations turning method settings entry before (prefix
 * "/*\/*" or "/~1pets/GET") into form values v: an emptied throttle field
 * is removed (back to inherit), a changed one replaced.
 */
function settingOps(prefix, before, v) {
  const ops = [];
  const throttle = (name, field) => {
    if (v[name] === num(before[field])) return;
    ops.push(v[name] === "" ? { op: "remove", path: `${prefix}/throttling/${name === "rate" ? "rateLimit" : "burstLimit"}` }
      : { op: "replace", path: `${prefix}/throttling/${name === "rate" ? "rateLimit" : "burstLimit"}`, value: v[name] });
  };
  throttle("rate", "throttlingRateLimit");
  throttle("burst", "throttlingBurstLimit");
  if (v.caching !== !!before.cachingEnabled) ops.push({ op: "replace", path: `${prefix}/caching/enabled`, value: String(v.caching) });
  if (v.ttl !== String(before.cacheTtlInSeconds ?? 300)) ops.push({ op: "replace", path: `${prefix}/caching/ttlInSeconds`, value: v.ttl });
  return ops;
}

function methodSettingsTable(apiId, st, methods) {
  const rows = methods.map((m) => {
    const ms = st.methodSettings[settingKey(m.path, m.verb)];
    const name = `${m.verb} ${m.path}`;
    return [
      name,
      ms ? inherited(ms.throttlingRateLimit) : "inherit",
      ms ? inherited(ms.throttlingBurstLimit) : "inherit",
      ms ? onOff(ms.cachingEnabled, `on, TTL ${ms.cacheTtlInSeconds} s`, "off") : "stage",
      h("a", { href: links.method(apiId, st.stageName, m.path, m.verb), "aria-label": `Edit ${name}` }, "Edit"),
    ];
  });
  return table({ caption: "Method settings", columns: ["Method", "Rate limit", "Burst limit", "Caching", "Edit"], rows, empty: "This API has no methods." });
}

/** #/apis/{id}/stages/{name}/methods/{path}/{verb}: one method's settings. */
export async function method(apiId, stageName, resourcePath, verb, ctx) {
  const [api, st, methods] = await Promise.all([
    get(path`/restapis/${apiId}`), get(path`/restapis/${apiId}/stages/${stageName}`), apiMethods(apiId)]);
  const m = methods.find((x) => x.path === resourcePath && x.verb === verb);
  const name = `${verb} ${resourcePath}`;
  if (!m) throw new Error(`API ${api.name} has no method ${name}.`);
  const url = path`/restapis/${apiId}/stages/${stageName}`;
  const key = settingKey(resourcePath, verb);
  const d = stageDefaults(st);
  const ms = st.methodSettings[key] || { cachingEnabled: !!d.cachingEnabled, cacheTtlInSeconds: d.cacheTtlInSeconds ?? 300 };
  const integ = m.method.methodIntegration;
  const params = (integ && integ.cacheKeyParameters) || [];
  const form = h("form", { class: "panel", "aria-label": `Settings of ${name}` },
    h("div", { class: "grid" },
      field({ label: "Rate limit", name: "rate", type: "number", min: "0", step: "any", value: num(ms.throttlingRateLimit),
        hint: `Requests per second; empty inherits the stage's (${inherited(d.throttlingRateLimit)}).` }),
      field({ label: "Burst limit", name: "burst", type: "number", min: "0", step: "1", value: num(ms.throttlingBurstLimit),
        hint: `Empty inherits the stage's (${inherited(d.throttlingBurstLimit)}).` }),
      field({ label: "Cache TTL (seconds)", name: "ttl", type: "number", min: "0", max: "3600", step: "1", value: ms.cacheTtlInSeconds ?? 300 })),
    field({ label: "Caching enabled", name: "caching", type: "checkbox", value: !!ms.cachingEnabled }),
    integ ? field({ label: "Cache key parameters", name: "params", type: "textarea", value: params.join("\n"),
      hint: "One per line, such as method.request.querystring.q or method.request.header.Accept. They belong to the method's integration: they reach traffic when the API is deployed." }) : null,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")));
  onSubmit(form, async (v) => {
    const ops = settingOps("/" + key, ms, v);
    await patch(url, ops);
    const changed = integ ? await saveKeyParameters(apiId, m, params, v.params) : false;
    showStatus(ops.length || changed ? `Settings of ${name} saved.` : "Nothing changed.");
    ctx.refresh();
  });
  const reset = st.methodSettings[key] ? confirmed("Remove method settings", `Remove the settings of ${name} on stage ${stageName}?`, "The method then follows the stage settings.", async () => {
    await patch(url, [{ op: "remove", path: "/" + key }]);
    showStatus(`${name} now follows the stage settings.`);
    ctx.navigate(links.stage(apiId, stageName));
  }) : null;
  return {
    title: `${name} on stage ${stageName}`,
    crumbs: [h("a", { href: links.apis() }, "All APIs"), " / ", h("a", { href: links.api(apiId) }, api.name), " / ",
      h("a", { href: links.stage(apiId, stageName) }, stageName), " / ", name],
    body: [form, h("div", { class: "actions" }, reset)],
  };
}

/** UpdateIntegration adding and removing cache key parameters; true when something changed. */
async function saveKeyParameters(apiId, m, before, text) {
  const after = text.split(/\s+/).filter(Boolean);
  const ops = [
    ...after.filter((p) => !before.includes(p)).map((p) => ({ op: "add", path: "/cacheKeyParameters/" + p })),
    ...before.filter((p) => !after.includes(p)).map((p) => ({ op: "remove", path: "/cacheKeyParameters/" + p })),
  ];
  await patch(path`/restapis/${apiId}/resources/${m.resourceId}/methods/${m.verb}/integration`, ops);
  return ops.length > 0;
}
