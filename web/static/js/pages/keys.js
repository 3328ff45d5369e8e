// API keys: the filtered list, "Create API key" (the value shown once),
// and one key: edit (its expiry and own quota calendar too), enable or
// disable, rotate with an overlap (the new value shown once), its usage
// plans (each quota as the key runs it), delete.
import { all, get, patch, post, del, page, path, query } from "../api.js";
import { h, confirmed, table, field, onSubmit, action, showStatus, showError, onOff, when, linkButton, throttleText, quotaText, keyQuota } from "../dom.js";
import { links } from "../links.js";

const PAGE = 50;

/** #/keys?name=&customerId=&position=: GetApiKeys, one page at a time. */
export async function list(ctx) {
  const name = ctx.query.get("name") || "";
  const customerId = ctx.query.get("customerId") || "";
  const { items, position } = await page("/apikeys" + query({ name, customerId }), PAGE, ctx.query.get("position"));
  const filter = onSubmit(h("form", { class: "panel inline", role: "search", "aria-label": "Filter API keys" },
    field({ label: "Filter", name: "name", value: name, hint: "Keys whose name starts with this text." }),
    field({ label: "Customer ID", name: "customerId", value: customerId }),
    h("button", { type: "submit", class: "secondary" }, "Apply filter")),
  async (v) => ctx.navigate("#/keys" + query(v), { keepMessages: false }));
  const rows = items.map((k) => [
    h("a", { href: links.key(k.id) }, k.name || k.id),
    h("code", {}, k.id),
    onOff(k.enabled, "enabled", "disabled"),
    k.customerId || "",
    when(k.createdDate),
    expiryText(k.expiresAt),
    toggle(k, ctx),
  ]);
  const next = position ? linkButton("#/keys" + query({ name, customerId, position }), "Next page", "button secondary") : null;
  return {
    title: "API keys",
    body: [
      h("div", { class: "actions" }, linkButton(links.newKey(), "Create API key")),
      filter,
      table({ caption: "API keys", columns: ["Name", "ID", "State", "Customer ID", "Created", "Expires", "Change"], rows, empty: name || customerId ? "No API key matches the filter." : "No API keys yet." }),
      h("div", { class: "actions" }, next),
    ],
  };
}

/** "2027-01-31 00:00 UTC" for an RFC 3339 expiry, "never" without one. */
function expiryText(expiresAt) {
  return expiresAt ? new Date(expiresAt).toISOString().replace("T", " ").slice(0, 16) + " UTC" : "never";
}

/** The "Expires at" field: an RFC 3339 time, empty for never. */
function expiryField(value) {
  return field({ label: "Expires at", name: "expiresAt", value: value || "", autocomplete: "off", placeholder: "2027-01-31T00:00:00Z",
    hint: "An RFC 3339 time (UTC with Z, or an offset): from then on every gateway refuses the key with reason expired. Empty: it never expires." });
}

/** An "Enable"/"Disable" button for key k (UpdateApiKey /enabled). */
function toggle(k, ctx) {
  const verb = k.enabled ? "Disable" : "Enable";
  return action(verb, async () => {
    await patch(path`/apikeys/${k.id}`, [{ op: "replace", path: "/enabled", value: String(!k.enabled) }]);
    showStatus(`API key ${k.name} ${k.enabled ? "disabled" : "enabled"}.`);
    ctx.refresh();
  }, { class: "secondary small", "aria-label": `${verb} ${k.name || k.id}` });
}

/** #/keys/new: CreateApiKey, optionally CreateUsagePlanKey; the value is shown once. */
export async function create(ctx) {
  const plans = await all("/usageplans");
  const form = h("form", { class: "panel", "aria-label": "Create API key" },
    h("div", { class: "grid" },
      field({ label: "Name", name: "name", required: true }),
      field({ label: "Description", name: "description" }),
      field({ label: "Customer ID", name: "customerId", hint: "Your own reference for the partner (optional)." }),
      field({ label: "Usage plan", name: "plan", options: [["", "None"], ...plans.map((p) => [p.id, p.name])] }),
      field({ label: "Custom value", name: "value", autocomplete: "off", hint: "20 to 128 letters and digits. Leave empty to generate a random one." }),
      expiryField("")),
    field({ label: "Enabled", name: "enabled", type: "checkbox", value: true }),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create")));
  const body = [form];
  const view = { title: "Create API key", crumbs: [h("a", { href: links.keys() }, "All API keys"), " / new"], body, focus: form.querySelector("input") };
  onSubmit(form, async (v) => {
    const k = await post("/apikeys", { name: v.name, description: v.description, customerId: v.customerId, enabled: v.enabled, value: v.value || undefined, expiresAt: v.expiresAt || undefined });
    const created = createdView(k);
    form.replaceWith(created);
    showStatus(`API key ${k.name} created.`);
    created.querySelector("h2").focus();
    if (v.plan) {
      try {
        await post(path`/usageplans/${v.plan}/keys`, { keyId: k.id, keyType: "API_KEY" });
        showStatus(`API key ${k.name} created and added to usage plan ${plans.find((p) => p.id === v.plan).name}.`);
      } catch (err) {
        showError(err);
      }
    }
  });
  return view;
}

/**
 * The one view of a key's new value (created, or rotated: then until
 * says when the previous value stops working), with a copy button.
 */
function createdView(k, until) {
  const valueField = field({ label: "API key value", name: "keyValue", readonly: true, value: k.value, autocomplete: "off", spellcheck: "false" });
  const input = valueField.querySelector("input");
  const copy = h("button", { type: "button", class: "secondary" }, "Copy");
  copy.addEventListener("click", async () => {
    input.select();
    try {
      await navigator.clipboard.writeText(k.value);
      showStatus("The API key value is on the clipboard.");
    } catch {
      showError("The browser refused the clipboard: the value is selected, copy it with the keyboard.");
    }
  });
  return h("section", { class: "panel", "aria-labelledby": "created-key" },
    h("h2", { id: "created-key", tabindex: "-1" }, until === undefined ? `API key ${k.name}` : `New value of API key ${k.name}`),
    h("p", { class: "warning" }, "This is the only time the value is shown: tollgate keeps only a hash of it. Copy it now and give it to the partner, who sends it in the x-api-key header."),
    until === undefined ? null : h("p", {}, until ? `The previous value keeps working until ${expiryText(until)}, then every gateway refuses it.` : "The previous value no longer works."),
    h("div", { class: "secret" }, valueField, copy),
    h("p", {}, "ID ", h("code", {}, k.id), " · ", h("a", { href: links.key(k.id) }, "Open the key"), " · ", h("a", { href: links.newKey() }, "Create another")));
}

/** #/keys/{id}: edit, usage plans, delete. The value is never shown again. */
export async function detail(keyId, ctx) {
  const url = path`/apikeys/${keyId}`;
  const [k, plans, allPlans] = await Promise.all([get(url), all("/usageplans" + query({ keyId })), all("/usageplans")]);
  const form = onSubmit(h("form", { class: "panel", "aria-label": "API key settings" },
    h("div", { class: "grid" },
      field({ label: "Name", name: "name", value: k.name, required: true }),
      field({ label: "Description", name: "description", value: k.description || "" }),
      field({ label: "Customer ID", name: "customerId", value: k.customerId || "" }),
      expiryField(k.expiresAt),
      field({ label: "Quota anchor of the key", name: "quotaAnchor", value: k.quotaAnchor || "",
        hint: "The key's own quota periods start at local midnight of this day on every plan: 1-28 or last (MONTH plans), MON-SUN (WEEK plans). Empty: the tag tollgate:quota-anchor, else the plan's." }),
      field({ label: "Quota time zone of the key", name: "quotaTimeZone", value: k.quotaTimeZone || "",
        hint: "An IANA zone such as Asia/Tokyo for the key's own periods. Empty: the tag tollgate:quota-timezone, else the plan's. Its customer's budget keeps the plan's periods." })),
    field({ label: "Enabled", name: "enabled", type: "checkbox", value: k.enabled }),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"))),
  async (v) => {
    const ops = [];
    for (const f of ["name", "description", "customerId"]) {
      if (v[f] !== (k[f] || "")) ops.push({ op: "replace", path: "/" + f, value: v[f] });
    }
    for (const f of ["quotaAnchor", "quotaTimeZone"]) {
      if (v[f] !== (k[f] || "")) ops.push(v[f] ? { op: "replace", path: "/" + f, value: v[f] } : { op: "remove", path: "/" + f });
    }
    if (v.enabled !== k.enabled) ops.push({ op: "replace", path: "/enabled", value: String(v.enabled) });
    if (v.expiresAt !== (k.expiresAt || "")) ops.push(v.expiresAt ? { op: "replace", path: "/expiresAt", value: v.expiresAt } : { op: "remove", path: "/expiresAt" });
    await patch(url, ops);
    showStatus(ops.length ? `API key ${v.name} saved.` : "Nothing changed.");
    ctx.refresh();
  });
  const remove = confirmed("Delete API key", `Delete API key ${k.name}?`, "Requests with its value are refused from then on. This cannot be undone.", async () => {
    await del(url);
    showStatus(`API key ${k.name} deleted.`);
    ctx.navigate(links.keys());
  });
  return {
    title: `API key ${k.name}`,
    crumbs: [h("a", { href: links.keys() }, "All API keys"), " / ", k.name || k.id],
    body: [
      h("p", {}, "ID ", h("code", {}, k.id), ` · created ${when(k.createdDate)} · `, onOff(k.enabled, "enabled", "disabled"),
        ` · expires ${expiryText(k.expiresAt)} · the value was shown once, when the key was created or rotated`),
      form,
      h("h2", {}, "Rotate"),
      rotateForm(k),
      h("h2", {}, "Usage plans"),
      keyPlans(k, plans, allPlans, ctx),
      h("h2", {}, "Delete"),
      h("div", { class: "actions" }, remove),
    ],
  };
}

/**
 * The rotation form (RotateApiKey): a new value shown once, the old one
 * working for the chosen overlap. The idempotency token is drawn with the
 * form, so a second submit (a double click, a lost answer) rotates once
 * and shows the same value.
 */
function rotateForm(k) {
  // crypto.randomUUID needs a secure context; getRandomValues does not.
  const token = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  const form = h("form", { class: "panel inline", "aria-label": "Rotate API key" },
    field({ label: "The old value keeps working for", name: "overlap", value: "600",
      options: [["0", "no time: it stops at once"], ["600", "10 minutes"], ["3600", "1 hour"], ["86400", "1 day"], ["604800", "7 days"]] }),
    h("button", { type: "submit" }, "Rotate"));
  return onSubmit(form, async (v) => {
    const out = await post(path`/apikeys/${k.id}/rotate`, { overlapSeconds: Number(v.overlap), idempotencyToken: token });
    const shown = createdView({ ...k, value: out.value }, Number(v.overlap) ? out.previousValueExpiresAt : "");
    form.replaceWith(shown);
    showStatus(`API key ${k.name} rotated.`);
    shown.querySelector("h2").focus();
  });
}

/** Plan p's quota for key k, "(the key's own calendar)" when it sets one. */
function keyQuotaText(p, k) {
  const { quota, tags, own } = keyQuota(p, k);
  return quotaText(quota, tags) + (own ? " (the key's own calendar)" : "");
}

function keyPlans(k, plans, allPlans, ctx) {
  const rows = plans.map((p) => [
    h("a", { href: links.plan(p.id) }, p.name),
    throttleText(p.throttle, p),
    keyQuotaText(p, k),
    h("a", { href: links.usage({ plan: p.id, key: k.id }) }, "Usage chart"),
    confirmed("Remove", `Remove API key ${k.name} from usage plan ${p.name}?`, null, async () => {
      await del(path`/usageplans/${p.id}/keys/${k.id}`);
      showStatus(`API key ${k.name} removed from usage plan ${p.name}.`);
      ctx.refresh();
    }, { class: "danger small", "aria-label": `Remove from ${p.name}` }),
  ]);
  const inPlan = new Set(plans.map((p) => p.id));
  const options = allPlans.filter((p) => !inPlan.has(p.id)).map((p) => [p.id, p.name]);
  const add = options.length ? onSubmit(h("form", { class: "panel inline", "aria-label": "Add to usage plan" },
    field({ label: "Usage plan", name: "plan", options }),
    h("button", { type: "submit" }, "Add to plan")),
  async (v) => {
    await post(path`/usageplans/${v.plan}/keys`, { keyId: k.id, keyType: "API_KEY" });
    showStatus(`API key ${k.name} added to usage plan ${allPlans.find((p) => p.id === v.plan).name}.`);
    ctx.refresh();
  }) : null;
  return [table({ caption: "Usage plans of the key", columns: ["Usage plan", "Throttle", "Quota", "Usage", "Remove"], rows, empty: "The key is in no usage plan: it can call no API stage that requires a key." }), add];
}
