// Partners of the developer portal (docs/portal.md): invite one (the link
// shown once), the partners' accounts and the pending invites, each with
// Revoke. Every call is an admin API call about the portal.
import { all, post, del, path, ApiError } from "../api.js";
import { h, table, field, onSubmit, action, confirmed, showStatus, showError, when } from "../dom.js";
import { links } from "../links.js";

/** #/partners: GetPortalAccounts, GetPortalInvites, CreatePortalInvite, DeletePortalAccount, DeletePortalInvites. */
export async function list(ctx) {
  let accounts, invites;
  try {
    [accounts, invites] = await Promise.all([all("/portal/accounts"), all("/portal/invites")]);
  } catch (err) {
    if (err instanceof ApiError && err.status === 400 && /not supported/.test(err.detail || "")) {
      return {
        title: "Partners",
        body: [h("p", {}, "The developer portal is not set up on this admin node: set TOLLGATE_PORTAL_URL (docs/portal.md) to invite partners.")],
      };
    }
    throw err;
  }
  const plans = await all("/usageplans");
  const planName = new Map(plans.map((p) => [p.id, p.name]));
  const planLinks = (ids) => (ids || []).map((id, i) => [i ? ", " : "", h("a", { href: links.plan(id) }, planName.get(id) || id)]);
  const accountRows = accounts.map((a) => [
    a.email,
    h("a", { href: links.keysOf(a.customerId), "aria-label": `API keys of ${a.customerId}` }, a.customerId),
    planLinks(a.usagePlanIds),
    when(a.createdDate),
    confirmed("Revoke", `Revoke the portal account of ${a.email}?`, "The partner can no longer sign in; their sessions end at once. Their API keys keep working until you disable or delete them.", async () => {
      await del(path`/portal/accounts/${a.email}`);
      showStatus(`The portal account of ${a.email} is revoked.`);
      ctx.refresh();
    }, { class: "danger small", "aria-label": `Revoke account ${a.email}` }),
  ]);
  const inviteRows = invites.map((i) => [
    i.email,
    i.customerId,
    planLinks(i.usagePlanIds),
    new Date(i.expiresAt).toISOString().replace("T", " ").slice(0, 16) + " UTC",
    confirmed("Revoke", `Revoke the pending invite of ${i.email}?`, "Its link stops working.", async () => {
      await del(path`/portal/invites/${i.email}`);
      showStatus(`The invite of ${i.email} is revoked.`);
      ctx.refresh();
    }, { class: "danger small", "aria-label": `Revoke invite ${i.email}` }),
  ]);
  return {
    title: "Partners",
    body: [
      h("p", {}, "Partners sign in to the developer portal, read the API references, and create, rotate and revoke their own API keys in the usage plans you allow."),
      inviteForm(plans, ctx),
      table({ caption: "Partner accounts", columns: ["Email", "Customer ID", "Usage plans", "Created", "Revoke"], rows: accountRows, empty: "No partner has an account yet." }),
      table({ caption: "Pending invites", columns: ["Email", "Customer ID", "Usage plans", "Expires", "Revoke"], rows: inviteRows, empty: "No pending invites." }),
    ],
  };
}

/** The invite form: email, customer ID, the plans the partner's keys may be in; the link is shown once. */
function inviteForm(plans, ctx) {
  const boxes = plans.map((p) => field({ label: p.name, name: "plan:" + p.id, type: "checkbox" }));
  const form = h("form", { class: "panel", "aria-label": "Invite a partner" },
    h("h2", {}, "Invite a partner"),
    h("div", { class: "grid" },
      field({ label: "Email", name: "email", type: "email", required: true, autocomplete: "off" }),
      field({ label: "Customer ID", name: "customerId", required: true, hint: "Every key the partner creates gets it; they see only keys with it." })),
    h("fieldset", {}, h("legend", {}, "Usage plans the partner's keys may be in"),
      boxes.length ? boxes : h("p", {}, "Create a usage plan first.")),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Invite")));
  return onSubmit(form, async (v) => {
    const usagePlanIds = plans.filter((p) => v["plan:" + p.id]).map((p) => p.id);
    if (!usagePlanIds.length) {
      showError("Choose at least one usage plan.");
      return;
    }
    const out = await post("/portal/invites", { email: v.email, customerId: v.customerId, usagePlanIds });
    const link = field({ label: "Invite link", name: "inviteLink", readonly: true, value: out.url, autocomplete: "off", spellcheck: "false" });
    const shown = h("section", { class: "panel", "aria-labelledby": "invite-link" },
      h("h2", { id: "invite-link", tabindex: "-1" }, `Invite for ${v.email}`),
      h("p", { class: "warning" }, `This is the only time the link is shown: send it to the partner. It works once, until ${out.expiresAt.replace("T", " ").replace("Z", " UTC")}.`),
      h("div", { class: "secret" }, link),
      h("div", { class: "actions" }, action("Back to partners", async () => ctx.refresh(), { class: "secondary" })));
    form.replaceWith(shown);
    showStatus(`${v.email} is invited.`);
    shown.querySelector("h2").focus();
  });
}
