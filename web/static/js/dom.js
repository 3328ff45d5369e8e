// DOM helpers: elements built with properties and text nodes only (never
// HTML parsed from strings, no inline style), real tables with header
// cells, labelled form fields, a confirmation dialog and the status and
// error regions.

let ids = 0;
/** A fresh element id with prefix. */
export const uid = (prefix) => `${prefix}-${++ids}`;

/**
 * h("a", {href: "#/x", class: "button"}, "text", child) builds an element.
 * Attribute values false/null/undefined are left out; "on" maps event
 * names to listeners; "text" sets textContent; "props" sets properties.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "text") el.textContent = v;
    else if (k === "props") Object.assign(el, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** A link styled as a button. */
export const linkButton = (href, text, cls = "button") => h("a", { href, class: cls }, text);

/**
 * table({caption, columns, rows, empty}) is a scrollable region holding a
 * <table>: a caption, <th scope="col"> headers, and rows whose first cell
 * is a <th scope="row">. A column is a name or {name, num: true}; a cell is
 * text, a Node or an array of those.
 */
export function table({ caption, columns, rows, empty }) {
  const cols = columns.map((c) => (typeof c === "string" ? { name: c } : c));
  const wrap = h("div", { class: "table-wrap", role: "region", "aria-label": caption, tabindex: "0" });
  if (!rows.length && empty) {
    wrap.append(h("p", { class: "empty" }, empty));
    return wrap;
  }
  const head = h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.name)));
  const body = rows.map((cells) =>
    h("tr", {}, cells.map((cell, i) => h(i === 0 ? "th" : "td", { scope: i === 0 ? "row" : null, class: cols[i] && cols[i].num ? "num" : null }, cell))),
  );
  wrap.append(h("table", {}, h("caption", {}, caption), h("thead", {}, head), h("tbody", {}, body)));
  return wrap;
}

/**
 * field({label, name, type, value, hint, options, ...inputAttrs}) is a
 * labelled control: <label for> and an input, a <select> (options: [[value,
 * text]]), a <textarea> (type "textarea") or a checkbox (type "checkbox",
 * value boolean). The hint is tied with aria-describedby.
 */
export function field({ label, name, type = "text", value, hint, options, ...rest }) {
  const id = uid(name || "f");
  const hintEl = hint ? h("p", { class: "hint", id: id + "-hint" }, hint) : null;
  const common = { id, name, "aria-describedby": hintEl ? id + "-hint" : null, ...rest };
  let control;
  if (type === "checkbox") {
    control = h("input", { ...common, type, props: { checked: !!value } });
    return h("div", { class: "field check" }, control, h("label", { for: id }, label), hintEl);
  }
  if (options) {
    control = h("select", common, options.map(([v, text]) => h("option", { value: v }, text)));
    control.value = value === undefined || value === null ? "" : String(value);
  } else if (type === "textarea") {
    control = h("textarea", common);
    control.value = value || "";
  } else {
    control = h("input", { ...common, type });
    control.value = value === undefined || value === null ? "" : String(value);
  }
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl);
}

/** The values of a form's named controls (checkboxes as booleans). */
export function values(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    out[el.name] = el.type === "checkbox" ? el.checked : el.value.trim();
  }
  return out;
}

/**
 * onSubmit(form, fn): runs async fn(values) on submit with the submit
 * buttons disabled, showing a failure in the error region.
 */
export function onSubmit(form, fn) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const buttons = [...form.querySelectorAll("button")];
    buttons.forEach((b) => (b.disabled = true));
    clearMessages();
    try {
      await fn(values(form), e.submitter);
    } catch (err) {
      showError(err);
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  });
  return form;
}

/** A button that runs async fn, showing a failure in the error region. */
export function action(text, fn, attrs = {}) {
  const b = h("button", { type: "button", ...attrs }, text);
  b.addEventListener("click", async () => {
    b.disabled = true;
    clearMessages();
    try {
      await fn();
    } catch (err) {
      showError(err);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

/**
 * confirmed(text, question, details, fn, attrs) is an action button that
 * runs async fn only after the operator answers "Confirm" to question.
 */
export function confirmed(text, question, details, fn, attrs = {}) {
  return action(text, async () => {
    if (await confirm(question, details)) await fn();
  }, { class: "danger", ...attrs });
}

/**
 * confirm(question, details) opens a modal dialog with "Confirm" and
 * "Cancel" and resolves true only on Confirm. Escape cancels; focus
 * starts on Cancel and returns to where it was.
 */
export function confirm(question, details) {
  return new Promise((resolve) => {
    const before = document.activeElement;
    const titleId = uid("confirm");
    const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
    const ok = h("button", { type: "button", class: "danger" }, "Confirm");
    const dlg = h("dialog", { "aria-labelledby": titleId },
      h("p", { id: titleId }, h("strong", {}, question)),
      details ? h("p", {}, details) : null,
      h("div", { class: "actions" }, ok, cancel));
    const close = (answer) => {
      dlg.close();
      dlg.remove();
      if (before && before.focus) before.focus();
      resolve(answer);
    };
    ok.addEventListener("click", () => close(true));
    cancel.addEventListener("click", () => close(false));
    dlg.addEventListener("cancel", (e) => {
      e.preventDefault();
      close(false);
    });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

/** Shows a success message in the status region. */
export function showStatus(text) {
  document.getElementById("status").textContent = text;
}

/** Shows an error, in words, in the alert region. */
export function showError(err) {
  document.getElementById("error").textContent = err && err.message ? err.message : String(err);
}

/** Empties the status and error regions. */
export function clearMessages() {
  document.getElementById("status").textContent = "";
  document.getElementById("error").textContent = "";
}

/** A yes/no tag. */
export const onOff = (on, yes = "yes", no = "no") => h("span", { class: on ? "tag on" : "tag off" }, on ? yes : no);

/** Formats epoch seconds as a UTC date and time. */
export function when(epoch) {
  if (!epoch) return "";
  return new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

/**
 * "2/s, burst 5" for an AWS throttle object, or "none"; "2 units/s, burst
 * 5" for a throttle of plan p when it has a cost (its throttles count units).
 */
export function throttleText(t, p) {
  if (!t) return "none";
  return `${t.rateLimit}${p && unitsOf(p).units === "units" ? " units" : ""}/s, burst ${t.burstLimit}`;
}

/**
 * Plan p's tags with its native cost fields in place of the tags they
 * stand for, field by field, as the server reads them (docs/cost.md,
 * "Native fields"): cost (weight, header or json; reserve; ifMissing) and
 * customerQuota.
 */
export function planTags(p = {}) {
  const out = { ...(p.tags || {}) };
  const c = p.cost || {};
  if (c.weight !== undefined && c.weight !== null) out["tollgate:cost"] = String(c.weight);
  else if (c.header) out["tollgate:cost"] = "header:" + c.header;
  else if (c.json && c.json.length) out["tollgate:cost"] = "json:" + c.json.join("+");
  if (c.reserve !== undefined && c.reserve !== null) out["tollgate:cost-reserve"] = String(c.reserve);
  if (c.ifMissing) out["tollgate:cost-if-missing"] = c.ifMissing;
  if (p.customerQuota) out["tollgate:customer-quota"] = String(p.customerQuota.limit);
  return out;
}

/**
 * What plan p's limits count, from its cost (planTags) (docs/cost.md):
 * "units" when a request can cost other than 1, else "requests". unit is
 * the singular.
 */
export function unitsOf(p = {}) {
  const cost = (planTags(p)["tollgate:cost"] || "").trim();
  return cost && cost !== "1" ? { units: "units", unit: "unit", Units: "Units" } : { units: "requests", unit: "request", Units: "Requests" };
}

/** "1 unit" / "2 units" in plan p's units. */
export function countText(n, p) {
  const u = unitsOf(p);
  return `${n} ${n === 1 ? u.unit : u.units}`;
}

/** A quota anchor in words: "day 15", "the last day", "MON". */
const anchorText = (anchor) => (/^\d+$/.test(anchor) ? "day " + anchor : anchor === "last" ? "the last day" : anchor);

/**
 * Where quota q's periods start, in words ("UTC", "the 15th, Asia/Tokyo"),
 * from its fields or, where they are empty, plan tags
 * (tollgate:quota-anchor, tollgate:quota-timezone).
 */
export function periodStartText(q = {}, tags = {}) {
  const anchor = q.anchor || tags["tollgate:quota-anchor"];
  const zone = q.timeZone || tags["tollgate:quota-timezone"] || "UTC";
  if (anchor) return `from ${anchorText(anchor)} at midnight ${zone}`;
  if (q.offset) return `offset ${q.offset}, ${zone}`;
  return zone;
}

/** Whether anchor fits a quota period: 1..28 or last (MONTH), MON..SUN (WEEK). */
const anchorFits = (anchor, period) => (period === "MONTH" ? /^([1-9]|1\d|2[0-8]|last)$/i.test(anchor)
  : period === "WEEK" && /^(MON|TUE|WED|THU|FRI|SAT|SUN)$/i.test(anchor));

/**
 * Plan p's quota as key k runs it, as the server's plans.KeyCalendar does
 * (docs/usage.md, "A key's own anchor and zone"): the key's anchor (its
 * field quotaAnchor, else its tag tollgate:quota-anchor) in place of the
 * plan's anchor and offset where it fits the period, its zone (quotaTimeZone,
 * else tollgate:quota-timezone) in place of the plan's. Returns {quota,
 * tags, own}: the quota to show with quotaText(quota, tags), and whether the
 * key sets its own calendar.
 */
export function keyQuota(p, k = {}) {
  const tags = planTags(p);
  const kt = k.tags || {};
  const anchor = k.quotaAnchor || kt["tollgate:quota-anchor"];
  const zone = k.quotaTimeZone || kt["tollgate:quota-timezone"];
  if (!p.quota || (!anchor && !zone)) return { quota: p.quota, tags, own: false };
  const q = { ...p.quota, anchor: p.quota.anchor || tags["tollgate:quota-anchor"] || "",
    timeZone: p.quota.timeZone || tags["tollgate:quota-timezone"] || "" };
  if (anchor && anchorFits(anchor, q.period)) Object.assign(q, { anchor, offset: 0 });
  if (zone) q.timeZone = zone;
  return { quota: q, tags, own: true };
}

/**
 * "1000 per DAY" (with its offset, or its anchor and time zone) for an AWS
 * quota object, or "none"; "1000 units per DAY" on a plan with a cost.
 * tags, a plan's, supply the anchor and zone the quota's fields leave
 * empty (tollgate:quota-anchor, tollgate:quota-timezone).
 */
export function quotaText(q, tags = {}) {
  if (!q) return "none";
  const anchor = q.anchor || tags["tollgate:quota-anchor"];
  const zone = q.timeZone || tags["tollgate:quota-timezone"];
  const u = unitsOf({ tags });
  let s = `${q.limit} ${u.units === "units" ? "units " : ""}per ${q.period}`;
  if (anchor) s += ` from ${anchorText(anchor)}`;
  else if (q.offset) s += ` (offset ${q.offset})`;
  if (zone && zone !== "UTC") s += `, ${zone}`;
  return s;
}

/**
 * What one request of plan p costs, from its cost fields and tags
 * (planTags; docs/cost.md):
 * basis in words (a weight, "2 units per request", or where a settled
 * cost is read, "response header X-Tokens", "JSON usage.total_tokens"),
 * and for a settled cost the reservation and what a response without it
 * costs ("0" or "the reservation (N)").
 */
export function costOf(p = {}) {
  const tags = planTags(p);
  const cost = (tags["tollgate:cost"] || "1").trim();
  const settled = cost.match(/^(header|json):(.+)$/);
  if (!settled) return { basis: `${cost} ${cost === "1" ? "unit" : "units"} per request`, settled: false };
  const reserve = tags["tollgate:cost-reserve"] || "1";
  return {
    basis: settled[1] === "header" ? `response header ${settled[2]}` : `JSON ${settled[2].split("+").join(" + ")}`,
    settled: true,
    reserve,
    ifMissing: tags["tollgate:cost-if-missing"] === "0" ? "0" : `the reservation (${reserve})`,
  };
}

/** costOf(p) in one line, for a table cell. */
export function costText(p = {}) {
  const c = costOf(p);
  return c.settled ? `settled from ${c.basis}; reserves ${c.reserve}; without it: ${c.ifMissing}` : c.basis;
}

/** Plan p's customer quota (customerQuota, or tollgate:customer-quota) in words, or "none". */
export function customerQuotaText(p = {}) {
  const n = planTags(p)["tollgate:customer-quota"];
  if (n === undefined || n === "") return "none";
  return `${countText(Number(n), p)} per customer per ${p.quota ? p.quota.period : "period"}`;
}

/** A plan's alert percentages ("80, 90, 100 %"), from its field or tag, or "none". */
export function alertsText(p) {
  const a = p.alerts && p.alerts.length ? p.alerts : (p.tags && p.tags["tollgate:alerts"] || "").split(",").map((x) => x.trim()).filter(Boolean);
  return a.length ? a.join(", ") + " %" : "none";
}
