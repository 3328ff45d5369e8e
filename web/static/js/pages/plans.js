// Usage plans: the list (with each plan's keys) and "Create usage plan".
import { all, post, path } from "../api.js";
import { h, table, field, onSubmit, showStatus, linkButton, throttleText, quotaText, alertsText, costText, customerQuotaText, unitsOf, periodStartText, planTags } from "../dom.js";
import { apisWithStages } from "../data.js";
import { links } from "../links.js";

/** #/plans: GetUsagePlans, GetRestApis (for names), and GetUsagePlanKeys for each plan. */
export async function list() {
  const [plans, apis] = await Promise.all([all("/usageplans"), all("/restapis")]);
  const apiName = new Map(apis.map((a) => [a.id, a.name]));
  const keys = await Promise.all(plans.map((p) => all(path`/usageplans/${p.id}/keys`)));
  const rows = plans.map((p, i) => [
    h("a", { href: links.plan(p.id) }, p.name),
    h("code", {}, p.id),
    throttleText(p.throttle, p),
    quotaText(p.quota, planTags(p)),
    costText(p),
    customerQuotaText(p),
    alertsText(p),
    p.apiStages.length ? p.apiStages.map((s) => `${apiName.get(s.apiId) || s.apiId} / ${s.stage}`).join(", ") : "none",
    keys[i].length ? keys[i].map((k, j) => [j ? ", " : "", h("a", { href: links.key(k.id) }, k.name || k.id)]) : "none",
  ]);
  return {
    title: "Usage plans",
    body: [
      h("div", { class: "actions" }, linkButton(links.newPlan(), "Create usage plan")),
      table({ caption: "Usage plans", columns: ["Name", "ID", "Throttle", "Quota", "Cost per request", "Customer quota", "Alerts", "API stages", "API keys"], rows, empty: "No usage plans yet." }),
    ],
  };
}

/**
 * The name, description, throttle and quota fields of plan p (empty for a
 * new plan). An empty rate and burst mean no throttle; an empty quota
 * limit means no quota. The hints speak in the plan's units (requests, or
 * units with a cost) and name where its periods start.
 */
export function planFields(p = {}) {
  const t = p.throttle || {};
  const q = p.quota || {};
  const u = unitsOf(p);
  return [
    h("div", { class: "grid" },
      field({ label: "Name", name: "name", value: p.name || "", required: true }),
      field({ label: "Description", name: "description", value: p.description || "" })),
    h("fieldset", {}, h("legend", {}, "Throttle"),
      h("p", { class: "hint" }, "Token bucket per API key. Leave both empty for no throttle."),
      h("div", { class: "grid" },
        field({ label: "Rate limit", name: "rate", type: "number", min: "0", step: "any", value: t.rateLimit ?? "", hint: `${u.Units} per second.` }),
        field({ label: "Burst limit", name: "burst", type: "number", min: "0", step: "1", value: t.burstLimit ?? "", hint: `${u.Units} at once.` }))),
    h("fieldset", {}, h("legend", {}, "Quota"),
      h("p", { class: "hint" }, `${u.Units} per key per period (${periodStartText(q, p.tags)}). Leave the limit empty for no quota.`),
      h("div", { class: "grid" },
        field({ label: "Quota limit", name: "limit", type: "number", min: "0", step: "1", value: q.limit ?? "" }),
        field({ label: "Quota period", name: "period", options: [["DAY", "DAY"], ["WEEK", "WEEK"], ["MONTH", "MONTH"]], value: q.period || "DAY" }),
        field({ label: "Quota offset", name: "offset", type: "number", min: "0", step: "1", value: q.offset ?? 0,
          hint: "The day each period starts: WEEK 0-6 (0 is Sunday), MONTH 0-27 (0 is the 1st), DAY 0." }),
        field({ label: "Quota anchor", name: "anchor", value: q.anchor || "",
          hint: "Or start each period at local midnight of a day: 1-28 or last (MONTH), MON-SUN (WEEK); offset 0. Empty: the tag tollgate:quota-anchor, if any." }),
        field({ label: "Quota time zone", name: "timeZone", value: q.timeZone || "",
          hint: "An IANA zone such as Asia/Tokyo whose local midnight starts the periods. Empty: the tag tollgate:quota-timezone, else UTC." }),
        field({ label: "Alerts", name: "alerts", value: (p.alerts || []).join(","),
          hint: "Percentages of the quota that send a quota.threshold webhook once per key and period, e.g. 80,90,100. Empty: the tag tollgate:alerts, if any." }))),
  ];
}

/** The alert percentages of form values v, as numbers (empty for none). */
export function alertsOf(v) {
  return (v.alerts || "").split(",").map((x) => x.trim()).filter(Boolean).map(Number);
}

/** The throttle of form values v, or undefined for none. */
export function throttleOf(v) {
  if (v.rate === "" && v.burst === "") return undefined;
  return { rateLimit: Number(v.rate || 0), burstLimit: Number(v.burst || 0) };
}

/** The quota of form values v, or undefined for none. */
export function quotaOf(v) {
  if (v.limit === "") return undefined;
  return { limit: Number(v.limit), period: v.period, offset: Number(v.offset || 0), anchor: v.anchor || "", timeZone: v.timeZone || "" };
}

/** #/plans/new: CreateUsagePlan, with API stages picked from every API. */
export async function create(ctx) {
  const apis = await apisWithStages();
  const choices = apis.flatMap(({ api, stages }) => stages.map((s) =>
    field({ label: `${api.name} / ${s.stageName}`, name: `stage:${api.id}:${s.stageName}`, type: "checkbox", value: false })));
  const form = h("form", { class: "panel", "aria-label": "Create usage plan" },
    planFields(),
    h("fieldset", {}, h("legend", {}, "API stages"),
      choices.length ? choices : h("p", { class: "hint" }, "No stages yet: deploy an API first, or add stages later.")),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create")));
  onSubmit(form, async (v) => {
    const apiStages = Object.entries(v).filter(([k, on]) => k.startsWith("stage:") && on).map(([k]) => {
      const [, apiId, stage] = k.split(":");
      return { apiId, stage };
    });
    const p = await post("/usageplans", { name: v.name, description: v.description, throttle: throttleOf(v), quota: quotaOf(v), alerts: alertsOf(v), apiStages });
    showStatus(`Usage plan ${p.name} created (ID ${p.id}).`);
    ctx.navigate(links.plan(p.id));
  });
  return {
    title: "Create usage plan",
    crumbs: [h("a", { href: links.plans() }, "All usage plans"), " / new"],
    body: [form],
    focus: form.querySelector("input"),
  };
}
