// One usage plan: edit it (UpdateUsagePlan), its API stages and their
// per-method throttles, its keys (CreateUsagePlanKey, DeleteUsagePlanKey)
// and delete it.
import { all, get, patch, post, del, path } from "../api.js";
import { h, confirmed, table, field, onSubmit, showStatus, onOff, linkButton, throttleText, costOf, customerQuotaText, unitsOf, planTags } from "../dom.js";
import { apisWithStages, apiMethods, settingKey } from "../data.js";
import { planFields, throttleOf, quotaOf, alertsOf } from "./plans.js";
import { links } from "../links.js";

/** #/plans/{id}. */
export async function detail(planId, ctx) {
  const url = path`/usageplans/${planId}`;
  const [plan, planKeys, keys, apis] = await Promise.all([get(url), all(url + "/keys"), all("/apikeys"), apisWithStages()]);
  const apiName = new Map(apis.map(({ api }) => [api.id, api.name]));
  const form = onSubmit(h("form", { class: "panel", "aria-label": "Usage plan settings" },
    planFields(plan), h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"))),
  async (v) => {
    const ops = planOps(plan, v);
    await patch(url, ops);
    showStatus(ops.length ? `Usage plan ${v.name} saved.` : "Nothing changed.");
    ctx.refresh();
  });
  const remove = confirmed("Delete usage plan", `Delete usage plan ${plan.name}?`, "Its keys lose the plan's access to its API stages. This cannot be undone.", async () => {
    await del(url);
    showStatus(`Usage plan ${plan.name} deleted.`);
    ctx.navigate(links.plans());
  });
  return {
    title: `Usage plan ${plan.name}`,
    crumbs: [h("a", { href: links.plans() }, "All usage plans"), " / ", plan.name],
    body: [
      h("p", {}, "ID ", h("code", {}, plan.id), " · ", h("a", { href: links.usage({ plan: plan.id }) }, "See this plan's usage")),
      form,
      h("h2", {}, "Cost and customer budget"),
      costSection(plan),
      h("h2", {}, "API stages"),
      stagesSection(plan, apis, apiName, ctx),
      h("h2", {}, "API keys"),
      keysSection(plan, planKeys, keys, ctx),
      h("h2", {}, "Delete"),
      h("div", { class: "actions" }, remove),
    ],
  };
}

/**
 * What a request of the plan costs and the budget its customers share,
 * from its cost fields and tags (docs/cost.md), each with the field or
 * tag that sets it (a field wins over its tag).
 */
function costSection(plan) {
  const tags = plan.tags || {};
  const cost = plan.cost || {};
  const c = costOf(plan);
  const code = (name, value) => [h("code", {}, name), " = ", h("code", {}, String(value))];
  const by = (fields, tagName) => {
    const f = fields.find(([, v]) => v !== undefined && v !== null && v !== "" && !(Array.isArray(v) && !v.length));
    if (f) return ["field ", code(f[0], Array.isArray(f[1]) ? f[1].join("+") : f[1])];
    return tags[tagName] !== undefined ? ["tag ", code(tagName, tags[tagName])] : [h("code", {}, tagName), " not set"];
  };
  const rows = [
    ["Cost per request", c.settled ? `settled after the response from ${c.basis}` : c.basis,
      by([["cost.weight", cost.weight], ["cost.header", cost.header], ["cost.json", cost.json]], "tollgate:cost")],
    ["Reserved when decided", c.settled ? `${c.reserve} ${c.reserve === "1" ? "unit" : "units"}` : "no reservation: the weight is charged when the request is decided",
      by([["cost.reserve", cost.reserve]], "tollgate:cost-reserve")],
    ["A response without the cost", c.settled ? `costs ${c.ifMissing}` : "not applicable", by([["cost.ifMissing", cost.ifMissing]], "tollgate:cost-if-missing")],
    ["Customer quota", customerQuotaText(plan), by([["customerQuota.limit", plan.customerQuota && plan.customerQuota.limit]], "tollgate:customer-quota")],
  ];
  return [
    table({ caption: "Cost and customer budget of the plan", columns: ["Setting", "Value", "Set by"], rows }),
    h("p", { class: "hint" }, "Set with the plan's fields cost and customerQuota, or its tags (aws apigateway tag-resource); a field wins over its tag. With a cost, the quota and the plan's throttles count units; a customer quota is shared by every key with the same customer ID. ",
      planTags(plan)["tollgate:customer-quota"] !== undefined ? h("a", { href: links.usage({ plan: plan.id }) }, "See the customers' budgets") : null),
  ];
}

/** UpdateUsagePlan operations turning plan p into form values v. */
function planOps(p, v) {
  const ops = [];
  const replace = (op, value) => ops.push({ op: "replace", path: op, value: String(value) });
  if (v.name !== p.name) replace("/name", v.name);
  if (v.description !== (p.description || "")) replace("/description", v.description);
  const t = throttleOf(v);
  if (!t && p.throttle) ops.push({ op: "remove", path: "/throttle" });
  if (t && (!p.throttle || t.rateLimit !== p.throttle.rateLimit)) replace("/throttle/rateLimit", t.rateLimit);
  if (t && (!p.throttle || t.burstLimit !== p.throttle.burstLimit)) replace("/throttle/burstLimit", t.burstLimit);
  const q = quotaOf(v);
  if (!q && p.quota) ops.push({ op: "remove", path: "/quota" });
  for (const f of q ? ["limit", "period", "offset", "anchor", "timeZone"] : []) {
    if (!p.quota || q[f] !== (p.quota[f] ?? "")) replace("/quota/" + f, q[f]);
  }
  const alerts = alertsOf(v).join(",");
  if (alerts !== (p.alerts || []).join(",")) {
    if (alerts) replace("/alerts", alerts);
    else ops.push({ op: "remove", path: "/alerts" });
  }
  return ops;
}

function stagesSection(plan, apis, apiName, ctx) {
  const url = path`/usageplans/${plan.id}`;
  const rows = plan.apiStages.map((s) => {
    const label = `${apiName.get(s.apiId) || s.apiId} / ${s.stage}`;
    const throttles = Object.entries(s.throttle || {}).map(([k, t]) => `${k}: ${throttleText(t, plan)}`);
    const costs = Object.entries(s.methodCosts || {}).map(([k, n]) => `${k}: ${n} ${n === 1 ? "unit" : "units"}`);
    return [
      label,
      throttles.length ? throttles.join("; ") : "none",
      costs.length ? costs.join("; ") : "the plan's",
      h("a", { href: links.planStage(plan.id, s.apiId, s.stage), "aria-label": `Method throttles of ${label}` }, "Method throttles"),
      confirmed("Remove", `Remove ${label} from usage plan ${plan.name}?`, "Keys of this plan can no longer call that stage through it.", async () => {
        await patch(url, [{ op: "remove", path: "/apiStages", value: `${s.apiId}:${s.stage}` }]);
        showStatus(`${label} removed from usage plan ${plan.name}.`);
        ctx.refresh();
      }, { class: "danger small", "aria-label": `Remove ${label}` }),
    ];
  });
  const inPlan = new Set(plan.apiStages.map((s) => `${s.apiId}:${s.stage}`));
  const options = apis.flatMap(({ api, stages }) => stages.map((s) => [`${api.id}:${s.stageName}`, `${api.name} / ${s.stageName}`]))
    .filter(([v]) => !inPlan.has(v));
  const add = options.length ? onSubmit(h("form", { class: "panel inline", "aria-label": "Add API stage" },
    field({ label: "API stage", name: "stage", options }),
    h("button", { type: "submit" }, "Add stage")),
  async (v) => {
    await patch(url, [{ op: "add", path: "/apiStages", value: v.stage }]);
    showStatus(`API stage added to usage plan ${plan.name}.`);
    ctx.refresh();
  }) : null;
  return [table({ caption: "API stages of the plan", columns: ["API stage", "Method throttles", "Method costs", "Edit", "Remove"], rows, empty: "The plan covers no API stage yet." }), add];
}

function keysSection(plan, planKeys, keys, ctx) {
  const url = path`/usageplans/${plan.id}/keys`;
  const byId = new Map(keys.map((k) => [k.id, k]));
  const rows = planKeys.map((pk) => {
    const k = byId.get(pk.id) || { id: pk.id, name: pk.name };
    return [
      h("a", { href: links.key(k.id) }, k.name || k.id),
      h("code", {}, k.id),
      onOff(k.enabled, "enabled", "disabled"),
      confirmed("Remove", `Remove API key ${k.name} from usage plan ${plan.name}?`, "The key can no longer call this plan's stages through it.", async () => {
        await del(path`/usageplans/${plan.id}/keys/${k.id}`);
        showStatus(`API key ${k.name} removed from usage plan ${plan.name}.`);
        ctx.refresh();
      }, { class: "danger small", "aria-label": `Remove ${k.name || k.id}` }),
    ];
  });
  const inPlan = new Set(planKeys.map((k) => k.id));
  const options = keys.filter((k) => !inPlan.has(k.id)).map((k) => [k.id, `${k.name} (${k.id})`]);
  const add = options.length ? onSubmit(h("form", { class: "panel inline", "aria-label": "Add API key" },
    field({ label: "API key", name: "key", options }),
    h("button", { type: "submit" }, "Add key")),
  async (v) => {
    await post(url, { keyId: v.key, keyType: "API_KEY" });
    showStatus(`API key added to usage plan ${plan.name}.`);
    ctx.refresh();
  }) : h("p", { class: "hint" }, "Every API key is in this plan already, or there are none: ", linkButton(links.newKey(), "create an API key", "")) ;
  return [table({ caption: "API keys of the plan", columns: ["Name", "ID", "State", "Remove"], rows, empty: "No API key is in this plan yet." }), add];
}

/** #/plans/{id}/stages/{apiId}/{stage}: per-method throttles of one API stage. */
export async function methodThrottles(planId, apiId, stage, ctx) {
  const url = path`/usageplans/${planId}`;
  const [plan, api, methods] = await Promise.all([get(url), get(path`/restapis/${apiId}`), apiMethods(apiId)]);
  const as = plan.apiStages.find((s) => s.apiId === apiId && s.stage === stage);
  if (!as) throw new Error(`Usage plan ${plan.name} does not cover stage ${stage} of API ${api.name}.`);
  const current = as.throttle || {};
  const u = unitsOf(plan);
  const rows = methods.map((m) => {
    const name = `${m.verb} ${m.path}`;
    const t = current[`${m.path}/${m.verb}`] || {};
    const input = (kind, value, attrs) => h("input", { type: "number", min: "0", name: `${kind}:${settingKey(m.path, m.verb)}`, "aria-label": `${name} ${kind === "rate" ? u.units + " per second" : "burst"}`, ...attrs, props: { value: value ?? "" } });
    return [name, input("rate", t.rateLimit, { step: "any" }), input("burst", t.burstLimit, { step: "1" })];
  });
  const form = onSubmit(h("form", { "aria-label": "Method throttles" },
    table({ caption: `Method throttles of ${api.name} / ${stage}`, columns: ["Method", `${u.Units} per second`, "Burst"], rows, empty: "This API has no methods." }),
    h("p", { class: "hint" }, "A method with a throttle gets its own token bucket per key instead of the plan's; leave both empty to use the plan's."),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"))),
  async (v) => {
    const ops = methodThrottleOps(apiId, stage, methods, current, v);
    await patch(url, ops);
    showStatus(ops.length ? "Method throttles saved." : "Nothing changed.");
    ctx.refresh();
  });
  return {
    title: `Method throttles: ${api.name} / ${stage}`,
    crumbs: [h("a", { href: links.plans() }, "All usage plans"), " / ", h("a", { href: links.plan(planId) }, plan.name), " / ", `${api.name} / ${stage}`],
    body: [form],
  };
}

/** UpdateUsagePlan operations for the per-method throttle inputs v. */
function methodThrottleOps(apiId, stage, methods, current, v) {
  const ops = [];
  for (const m of methods) {
    const key = settingKey(m.path, m.verb);
    const base = `/apiStages/${apiId}:${stage}/throttle/${key}`;
    const before = current[`${m.path}/${m.verb}`];
    const rate = v["rate:" + key];
    const burst = v["burst:" + key];
    if (rate === "" && burst === "") {
      if (before) ops.push({ op: "remove", path: base });
      continue;
    }
    if (!before || Number(rate || 0) !== before.rateLimit) ops.push({ op: "replace", path: base + "/rateLimit", value: String(Number(rate || 0)) });
    if (!before || Number(burst || 0) !== before.burstLimit) ops.push({ op: "replace", path: base + "/burstLimit", value: String(Number(burst || 0)) });
  }
  return ops;
}
