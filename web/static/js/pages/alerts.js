// Quota alerts: the thresholds of plans' quotas that keys crossed, once
// per key and period (GET /alerts), newest first, with the state of each
// one's quota.threshold webhook; filtered by plan, key or customer.
import { page, query, all } from "../api.js";
import { h, table, field, onSubmit } from "../dom.js";
import { links } from "../links.js";

const PAGE = 50;

/** "2026-12-02 03:04 UTC" of an RFC 3339 time. */
const utc = (s) => s.replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC");

/** #/alerts?planId=&keyId=&customerId=&position= */
export async function list(ctx) {
  const f = { planId: ctx.query.get("planId") || "", keyId: ctx.query.get("keyId") || "", customerId: ctx.query.get("customerId") || "" };
  const [{ items, position }, plans] = await Promise.all([page("/alerts" + query(f), PAGE, ctx.query.get("position")), all("/usageplans")]);
  const planName = new Map(plans.map((p) => [p.id, p.name]));
  const filter = onSubmit(h("form", { class: "panel inline", role: "search", "aria-label": "Filter the alerts" },
    field({ label: "Usage plan", name: "planId", options: [["", "All plans"], ...plans.map((p) => [p.id, p.name])], value: f.planId }),
    field({ label: "API key ID", name: "keyId", value: f.keyId }),
    field({ label: "Customer ID", name: "customerId", value: f.customerId }),
    h("button", { type: "submit", class: "secondary" }, "Apply filter")),
  async (v) => ctx.navigate("#/alerts" + query(v), { keepMessages: false }));
  const rows = items.map((a) => [
    utc(a.time),
    h("a", { href: links.plan(a.planId) }, planName.get(a.planId) || a.planId),
    a.scope === "customer" && !a.keyId ? "all its keys" : h("a", { href: links.key(a.keyId) }, a.keyId),
    a.customerId || "",
    `${a.threshold} %`,
    `${a.used} of ${a.limit}`,
    `${utc(a.periodStart)} to ${utc(a.periodEnd)}`,
    h("span", { class: "tag" }, a.delivery.state),
    a.delivery.state === "delivered" ? utc(a.delivery.deliveredAt) : [`${a.delivery.attempts} ${a.delivery.attempts === 1 ? "try" : "tries"}`, a.delivery.lastError ? ": " + a.delivery.lastError : ""].join(""),
  ]);
  const next = position ? h("a", { href: "#/alerts" + query({ ...f, position }), class: "button secondary" }, "Next page") : null;
  const any = f.planId || f.keyId || f.customerId;
  return {
    title: "Alerts",
    body: [
      h("p", {}, "Each alert threshold a key's quota (or a customer's, with tollgate:customer-quota) crossed, once per key or customer and quota period (a plan's tollgate:alerts tag or alerts field), and its signed quota.threshold webhook to TOLLGATE_WEBHOOK_URL."),
      filter,
      table({ caption: "Quota alerts", columns: ["Time", "Usage plan", "API key", "Customer", "Threshold", "Used", "Period", "Webhook", "Delivery"], rows,
        empty: any ? "No alert matches the filter." : "No alert yet." }),
      h("div", { class: "actions" }, next),
    ],
  };
}
