// Usage: a daily chart of used against the quota for a plan and key over a
// chosen range (GetUsage), and a live view of this node's admitted,
// throttled and quota-refused requests per stage (its /metrics).
import { all, get, path, query } from "../api.js";
import { h, table, field, onSubmit, showError, quotaText, keyQuota, unitsOf, countText, when, planTags } from "../dom.js";
import { plot, COLORS } from "../chart.js";
import { fetchTotals, rates } from "../metrics.js";
import { links } from "../links.js";

const DAY = 86400;
const MAX_DAYS = 90; // GetUsage's longest range
const LIVE_EVERY_MS = 2000;
const LIVE_POINTS = 90;

/** "YYYY-MM-DD" of a Date, in UTC (usage days are UTC days). */
const isoDay = (d) => d.toISOString().slice(0, 10);

/** #/usage?plan=&key=&from=&to=. */
export async function page(ctx) {
  const [plans, apis] = await Promise.all([all("/usageplans"), all("/restapis")]);
  const apiNames = new Map(apis.map((a) => [a.id, a.name]));
  const today = new Date();
  const sel = {
    plan: ctx.query.get("plan") || (plans[0] && plans[0].id) || "",
    key: ctx.query.get("key") || "",
    from: ctx.query.get("from") || isoDay(new Date(today.getTime() - 6 * DAY * 1000)),
    to: ctx.query.get("to") || isoDay(today),
  };
  const plan = plans.find((p) => p.id === sel.plan);
  const keys = plan ? await all(path`/usageplans/${plan.id}/keys`) : [];
  if (!ctx.query.has("key") && keys.length === 1) sel.key = keys[0].id; // a plan's only key: its quota applies
  const cleanups = [];
  const body = [pickForm(plans, keys, sel, ctx)];
  if (!plans.length) body.push(h("p", {}, "No usage plans yet: ", h("a", { href: links.newPlan() }, "create one"), "."));
  // read before the usage section, whose chart is drawn on the next frame once the page is shown
  const customers = plan && planTags(plan)["tollgate:customer-quota"] !== undefined ? await customersSection(plan, keys) : [];
  if (plan) body.push(...(await usageSection(plan, keys, sel, cleanups)), ...customers);
  body.push(liveSection(apiNames, cleanups));
  return { title: "Usage", body, cleanup: () => cleanups.forEach((f) => f()) };
}

/** Usage plan, API key and range; the key list follows the plan picked. */
function pickForm(plans, keys, sel, ctx) {
  const planField = field({ label: "Usage plan", name: "plan", options: plans.map((p) => [p.id, p.name]), value: sel.plan });
  const keyOptions = (ks) => [["", "All keys of the plan"], ...ks.map((k) => [k.id, `${k.name || k.id} (${k.id})`])];
  const keyField = field({ label: "API key", name: "key", options: keyOptions(keys), value: sel.key });
  planField.querySelector("select").addEventListener("change", async (e) => {
    try {
      const ks = await all(path`/usageplans/${e.target.value}/keys`);
      keyField.querySelector("select").replaceChildren(...keyOptions(ks).map(([v, t]) => h("option", { value: v }, t)));
    } catch (err) {
      showError(err);
    }
  });
  const form = h("form", { class: "panel", "aria-label": "Usage to show" },
    h("div", { class: "grid" }, planField, keyField,
      field({ label: "From", name: "from", type: "date", value: sel.from, required: true }),
      field({ label: "To", name: "to", type: "date", value: sel.to, required: true, hint: `UTC days, at most ${MAX_DAYS}.` })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Show usage")));
  return onSubmit(form, async (v) => ctx.navigate(links.usage(v), { keepMessages: false }));
}

/** The UTC day (epoch seconds at 00:00) that holds the instant iso. */
const dayOf = (iso) => Math.floor(Date.parse(iso) / 1000 / DAY) * DAY;

/** "YYYY-MM-DD HH:MM" of an RFC 3339 instant, in UTC. */
const minuteText = (iso) => new Date(iso).toISOString().slice(0, 16).replace("T", " ");

/**
 * The key's quota period per day of xs: requests, its admitted requests
 * from the period's start to the day's end (counted from the daily
 * figures, with the days before the range read too), and adjusted, what
 * the quota counts beyond them (UpdateUsage setting /remaining; negative
 * when it gave requests back). The period each day counts in is the one
 * GetUsage names (periods: anchors, time zones and offsets decided by the
 * server, on the limiter's clock). GetUsage's remaining is the quota's own
 * count, so the two differ only by adjustments.
 */
async function periodFigures(plan, keyId, xs, perKey, periods) {
  const q = plan.quota;
  const periodOf = new Map(xs.map((x, i) => [x, periods[i].start]));
  const first = dayOf(periods[0].start);
  const daily = new Map();
  if (first < xs[0]) {
    const before = await usage(plan.id, { from: isoDay(new Date(first * 1000)), to: isoDay(new Date((xs[0] - DAY) * 1000)), key: keyId });
    (before.values[keyId] || []).forEach(([n], i) => daily.set(first + i * DAY, n));
    before.periods.forEach((p, i) => periodOf.set(first + i * DAY, p.start));
  }
  perKey.forEach(([n], i) => daily.set(xs[i], n));
  const requests = [];
  const adjusted = [];
  let start = null;
  let sum = 0;
  for (let ts = first; ts <= xs[xs.length - 1]; ts += DAY) {
    const ps = periodOf.get(ts);
    if (ps !== start) [start, sum] = [ps, 0];
    sum += daily.get(ts) || 0;
    const i = (ts - xs[0]) / DAY;
    if (i < 0) continue;
    requests.push(sum);
    adjusted.push(q.limit - perKey[i][1] - Math.min(sum, q.limit));
  }
  return { requests, adjusted };
}

/**
 * GetUsage for the selection, every page of keys: values (keyId → [used
 * units, remaining] per day) and requests (keyId → requests per day,
 * tollgate's extension; a key without it counts one request per unit);
 * on a plan with a quota, periods (the quota period of each day, {start,
 * end}) and currentPeriod (the one holding the limiter's time now), also
 * tollgate's.
 */
async function usage(planId, sel) {
  const values = {};
  const requests = {};
  let position = "";
  let out;
  do {
    out = await get(path`/usageplans/${planId}/usage` + query({ startDate: sel.from, endDate: sel.to, keyId: sel.key, limit: 500, position }));
    Object.assign(values, out.values || {});
    Object.assign(requests, out.requests || {});
    position = out.position || "";
  } while (position);
  for (const [k, v] of Object.entries(values)) if (!requests[k]) requests[k] = v.map(([n]) => n);
  return { startDate: out.startDate, values, requests, periods: out.periods || [], currentPeriod: out.currentPeriod || null };
}

/** The chart, its caption and its data as a table. */
async function usageSection(plan, keys, sel, cleanups) {
  const u = await usage(plan.id, sel);
  const start = Date.parse(u.startDate + "T00:00:00Z") / 1000;
  const series = Object.values(u.values);
  const days = series.length ? series[0].length : Math.round((Date.parse(sel.to) - Date.parse(sel.from)) / 1000 / DAY) + 1;
  const xs = Array.from({ length: days }, (_, i) => start + i * DAY);
  const used = xs.map((_, i) => series.reduce((n, s) => n + s[i][0], 0));
  const requests = xs.map((_, i) => Object.values(u.requests).reduce((n, r) => n + (r[i] || 0), 0));
  const unit = unitsOf(plan);
  const key = sel.key ? keys.find((k) => k.id === sel.key) || { id: sel.key, name: sel.key } : null;
  const perKey = key && plan.quota && u.values[key.id];
  const period = perKey ? await periodFigures(plan, key.id, xs, perKey, u.periods) : null;
  const lines = [{ label: unit.units === "units" ? "Units used" : "Used", color: COLORS.used, bars: true }];
  const data = [xs, used];
  if (perKey) {
    lines.push({ label: "Quota limit", color: COLORS.quota, dash: [6, 4] });
    data.push(xs.map(() => plan.quota.limit));
    if (plan.quota.period !== "DAY") {
      lines.push({ label: `${unit.Units} this quota period`, color: COLORS.period });
      data.push(period.requests);
    }
    if (period.adjusted.some((a) => a !== 0)) {
      // the quota's count with the adjustments, as points apart from the requests
      lines.push({ label: "Counted by the quota after UpdateUsage", color: COLORS.adjusted, pointsOnly: true });
      data.push(period.adjusted.map((a, i) => (a !== 0 ? plan.quota.limit - perKey[i][1] : null)));
    }
  }
  const total = used.reduce((a, b) => a + b, 0);
  const totalRequests = requests.reduce((a, b) => a + b, 0);
  const who = key ? `API key ${key.name || key.id}` : `The ${series.length} ${series.length === 1 ? "key" : "keys"} of usage plan ${plan.name}`;
  const howMuch = unit.units === "units" ? `${countText(total, plan)} over ${totalRequests} ${totalRequests === 1 ? "request" : "requests"}` : countText(total, plan);
  // a selected key's own calendar (its fields and tags: the ApiKey's)
  const kq = keyQuota(plan, key ? await get(path`/apikeys/${key.id}`).catch(() => ({})) : {});
  let caption = `${who} used ${howMuch} from ${sel.from} to ${sel.to} (UTC). Quota: ${quotaText(kq.quota, kq.tags)}${kq.own ? " (the key's own calendar)" : ""}${key ? "" : " per key"}.`;
  if (u.currentPeriod) caption += ` The current quota period runs from ${minuteText(u.currentPeriod.start)} to ${minuteText(u.currentPeriod.end)} UTC (the limiter's clock).`;
  const adjustment = period ? period.adjusted[period.adjusted.length - 1] : 0;
  if (adjustment !== 0) {
    caption += ` UpdateUsage adjusted the quota period of ${isoDay(new Date(xs[xs.length - 1] * 1000))} by ${adjustment > 0 ? "+" : ""}${adjustment}: the quota counts ${plan.quota.limit - perKey[perKey.length - 1][1]} where the key ${unit.units === "units" ? "used" : "made"} ${countText(period.requests[period.requests.length - 1], plan)}.`;
  }
  const plotEl = h("div", { class: "plot", role: "img", "aria-label": `Daily ${unit.units} chart. ${caption}` });
  const figure = h("figure", { class: "chart", "aria-label": "Daily usage chart" }, plotEl, h("figcaption", {}, caption));
  requestAnimationFrame(() => {
    if (!plotEl.isConnected) return;
    const c = plot(plotEl, lines, data, { daily: true, yLabel: unit.units });
    cleanups.push(c.destroy);
  });
  return [h("h2", {}, `Usage of ${plan.name}`), figure, usageTable(xs, used, requests, perKey, period, plan)];
}

/**
 * The daily figures as a table; on a plan with a cost, the units used and
 * the requests side by side.
 */
function usageTable(xs, used, requests, perKey, period, plan) {
  const day = (x) => new Date(x * 1000).toISOString().slice(0, 10);
  const unit = unitsOf(plan);
  const cost = unit.units === "units";
  const columns = [{ name: "Day (UTC)" }, { name: cost ? "Units used" : "Used", num: true }];
  if (cost) columns.push({ name: "Requests", num: true });
  const periodColumn = perKey && plan.quota.period !== "DAY";
  if (periodColumn) columns.push({ name: `${unit.Units} this quota period`, num: true });
  if (perKey) columns.push({ name: "Adjusted by UpdateUsage", num: true }, { name: "Remaining at the end of the day", num: true });
  const rows = xs.map((x, i) => {
    const row = [day(x), String(used[i])];
    if (cost) row.push(String(requests[i]));
    if (periodColumn) row.push(String(period.requests[i]));
    if (perKey) row.push(period.adjusted[i] > 0 ? `+${period.adjusted[i]}` : String(period.adjusted[i]), String(perKey[i][1]));
    return row;
  });
  return table({ caption: "Daily usage", columns, rows });
}

/**
 * The customer budgets of a plan with a customer quota: for each customer
 * ID of the plan's keys, the units its keys used in the current period
 * against the limit (GET /usageplans/{id}/customers/{customerId}/usage).
 */
async function customersSection(plan, planKeys) {
  const inPlan = new Set(planKeys.map((k) => k.id));
  const keys = (await all("/apikeys")).filter((k) => inPlan.has(k.id));
  const byCustomer = new Map();
  const byName = (a, b) => (a.name || a.id).localeCompare(b.name || b.id);
  for (const k of keys.filter((k) => k.customerId).sort(byName)) byCustomer.set(k.customerId, [...(byCustomer.get(k.customerId) || []), k]);
  const customers = [...byCustomer.keys()].sort();
  const budgets = await Promise.all(customers.map((c) => get(path`/usageplans/${plan.id}/customers/${c}/usage`)));
  const rows = budgets.map((b, i) => [
    h("a", { href: links.keysOf(b.customerId) }, b.customerId),
    byCustomer.get(customers[i]).map((k, j) => [j ? ", " : "", h("a", { href: links.key(k.id) }, k.name || k.id)]),
    String(b.used),
    String(b.limit),
    String(b.remaining),
    h("meter", { min: "0", max: String(Math.max(1, b.limit)), value: String(Math.min(b.used, b.limit)), "aria-label": `${b.customerId}: ${b.used} of ${b.limit} used` },
      `${b.used} of ${b.limit}`),
    `${when(Date.parse(b.periodStart) / 1000)} to ${when(Date.parse(b.periodEnd) / 1000)}`,
  ]);
  const n = (name) => ({ name, num: true });
  const unit = unitsOf(plan);
  const alone = keys.filter((k) => !k.customerId).length;
  return [
    h("h2", {}, "Customer budgets"),
    h("p", { class: "hint" }, `Customer quota: ${countText(Number(planTags(plan)["tollgate:customer-quota"]), plan)} per ${plan.quota ? plan.quota.period : "period"}, shared by every key of the plan with the same customer ID, in the current period (on the limiter's clock).`,
      alone ? ` ${alone} ${alone === 1 ? "key has" : "keys have"} no customer ID: each is its own customer.` : ""),
    table({
      caption: "Customer budgets",
      columns: ["Customer", "API keys", n(`${unit.Units} used`), n("Limit"), n("Remaining"), "Used of the limit", "Current period"],
      rows,
      empty: "No key of this plan has a customer ID.",
    }),
  ];
}

/** The live view: /metrics read every 2 s while the page is open. */
function liveSection(apiNames, cleanups) {
  const tableSlot = h("div", {}, h("p", { class: "loading" }, "Reading this node's metrics…"));
  const plotEl = h("div", { class: "plot", role: "img", "aria-label": "Requests per second on this node: admitted, throttled and quota-refused" });
  const state = { prev: null, prevAt: 0, xs: [], series: [[], [], []], chart: null, timer: 0, stopped: false };
  const tick = async () => {
    if (state.stopped) return;
    if (!document.hidden) {
      try {
        liveTick(state, await fetchTotals(), apiNames, tableSlot, plotEl);
      } catch (err) {
        tableSlot.replaceChildren(h("p", { role: "alert" }, `The live view cannot read this node's metrics: ${err.message}`));
      }
    }
    state.timer = setTimeout(tick, LIVE_EVERY_MS);
  };
  tick();
  cleanups.push(() => {
    state.stopped = true;
    clearTimeout(state.timer);
    if (state.chart) state.chart.destroy();
  });
  return h("section", { "aria-labelledby": "live-title" },
    h("h2", { id: "live-title" }, "Live traffic on this node"),
    h("p", { class: "hint" }, "Requests this node's gateway admitted, throttled and refused for quota since it started, and per second over the last reading, from its /metrics (tollgate_admitted_total, tollgate_throttled_total). Updated every 2 seconds."),
    tableSlot,
    h("figure", { class: "chart", "aria-label": "Live requests per second" }, plotEl, h("figcaption", {}, "Requests per second, all stages of this node.")));
}

/** One reading: the per-stage table and a point on the chart. */
function liveTick(state, totals, apiNames, tableSlot, plotEl) {
  if (totals === null) {
    tableSlot.replaceChildren(h("p", {}, "This node runs no gateway (role admin), so its /metrics has no traffic counters. Open the console of an all-in-one node, or read the gateway nodes' /metrics in Prometheus."));
    return;
  }
  const now = Date.now() / 1000;
  const r = state.prev ? rates(state.prev, totals, Math.max(0.001, now - state.prevAt)) : null;
  state.prev = totals;
  state.prevAt = now;
  tableSlot.replaceChildren(liveTable(totals, r, apiNames));
  if (!r) {
    plotEl.replaceChildren(h("p", { class: "loading" }, "The chart starts with the next reading."));
    return;
  }
  const sum = (f) => [...r.values()].reduce((n, v) => n + v[f], 0);
  state.xs.push(now);
  ["admitted", "throttled", "quota"].forEach((f, i) => state.series[i].push(sum(f)));
  if (state.xs.length > LIVE_POINTS) [state.xs, ...state.series].forEach((a) => a.shift());
  const data = [state.xs, ...state.series];
  if (state.chart) state.chart.update(data);
  else if (plotEl.isConnected) {
    plotEl.replaceChildren();
    state.chart = plot(plotEl, [
      { label: "Admitted/s", color: COLORS.admitted },
      { label: "Throttled/s", color: COLORS.throttled },
      { label: "Quota refused/s", color: COLORS.refused }], data, { height: 220, yLabel: "requests/s" });
  }
}

function liveTable(totals, r, apiNames) {
  const rate = (k, f) => (r && r.get(k) ? r.get(k)[f].toFixed(1) : "…");
  const rows = [...totals.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, t]) => [
    h("a", { href: links.stage(t.api, t.stage) }, `${apiNames.get(t.api) || t.api} / ${t.stage}`),
    String(t.admitted), String(t.throttled), String(t.quota),
    rate(k, "admitted"), rate(k, "throttled"), rate(k, "quota"),
  ]);
  const n = (name) => ({ name, num: true });
  return table({
    caption: "Requests per stage on this node",
    columns: ["Stage", n("Admitted"), n("Throttled"), n("Quota refused"), n("Admitted/s"), n("Throttled/s"), n("Quota refused/s")],
    rows,
    empty: "No gateway traffic on this node since it started.",
  });
}
