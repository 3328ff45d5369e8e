// The audit log: who changed what, through which door (GET /audit), newest
// first, filtered by actor and resource, one page at a time, and an export
// of every matching entry as JSON lines (GET /audit/export).
import { page, query, call, authHeaders } from "../api.js";
import { h, table, field, onSubmit, action, showStatus } from "../dom.js";

const PAGE = 50;

/** #/audit?actor=&resource=&position= */
export async function list(ctx) {
  const actor = ctx.query.get("actor") || "";
  const resource = ctx.query.get("resource") || "";
  const { items, position } = await page("/audit" + query({ actor, resource }), PAGE, ctx.query.get("position"));
  const filter = onSubmit(h("form", { class: "panel inline", role: "search", "aria-label": "Filter the audit log" },
    field({ label: "Actor", name: "actor", value: actor, hint: "A credential's name or access key id." }),
    field({ label: "Resource", name: "resource", value: resource, hint: "An ARN or a path such as /usageplans/abc123; its sub-resources match too." }),
    h("button", { type: "submit", class: "secondary" }, "Apply filter")),
  async (v) => ctx.navigate("#/audit" + query(v), { keepMessages: false }));
  const rows = items.map((e) => [
    e.time.replace("T", " ").replace("Z", " UTC"),
    e.actor,
    h("span", { class: "tag" }, e.source),
    e.operation,
    h("code", {}, e.resource),
    h("code", { class: "change" }, JSON.stringify(e.change)),
  ]);
  const next = position ? h("a", { href: "#/audit" + query({ actor, resource, position }), class: "button secondary" }, "Next page") : null;
  const exportButton = action("Export", async () => {
    const text = await exportText(query({ actor, resource }));
    const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    const a = h("a", { href: url, download: "tollgate-audit.jsonl" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    showStatus("Audit log exported as tollgate-audit.jsonl.");
  }, { class: "secondary" });
  return {
    title: "Audit",
    body: [
      h("p", {}, "Every change through the admin API, the console, imports, config apply, the portal and key rotation, with who made it. Secrets and key values are never recorded."),
      filter,
      h("div", { class: "actions" }, exportButton),
      table({ caption: "Audit log", columns: ["Time", "Actor", "Source", "Operation", "Resource", "Change"], rows, empty: actor || resource ? "No entry matches the filter." : "No change recorded yet." }),
      h("div", { class: "actions" }, next),
    ],
  };
}

/** GET /audit/export as text (the export is JSON lines, not one JSON value). */
async function exportText(q) {
  const res = await fetch("/audit/export" + q, { headers: authHeaders(), cache: "no-store" });
  if (!res.ok) {
    await call("GET", "/audit/export" + q); // throws the API's error in words
  }
  return res.text();
}
