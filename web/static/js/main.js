// The console's entry point: sign-in, the hash router and the page frame.
// Routes are "#/section/..." fragments; they carry ids, never the token.
import { session, whenUnauthorized, call } from "./api.js";
import { h, field, onSubmit, clearMessages, showError } from "./dom.js";
import { routes } from "./routes.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signOut = document.getElementById("sign-out");

let view = { seq: 0, cleanup: null };

/** Parses location.hash into a path and query parameters. */
function parseHash() {
  const raw = location.hash.startsWith("#/") ? location.hash.slice(1) : "/apis";
  const [p, q] = raw.split("?");
  return { path: p, query: new URLSearchParams(q || "") };
}

/** Finds the route of path; params are the decoded captures. */
function match(p) {
  for (const r of routes) {
    const m = r.pattern.exec(p);
    if (m) return { route: r, params: m.slice(1).map(decodeURIComponent) };
  }
  return null;
}

/** Renders the page of the current hash (or sign-in without a token). */
async function render({ keepMessages = false } = {}) {
  if (view.cleanup) view.cleanup();
  const seq = ++view.seq;
  view.cleanup = null;
  if (!keepMessages) clearMessages();
  const signedIn = !!session.token();
  nav.hidden = signOut.hidden = !signedIn;
  if (!signedIn) return show(seq, signInView());
  const { path, query } = parseHash();
  const found = match(path);
  markNav(found ? found.route.section : "");
  if (!found) return show(seq, { title: "Not found", body: [h("p", {}, "There is no console page at " + path + ".")] });
  main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  const ctx = { query, refresh: () => render({ keepMessages: true }), navigate, isCurrent: () => seq === view.seq };
  try {
    show(seq, await found.route.page(...found.params, ctx));
  } catch (err) {
    if (seq !== view.seq) return;
    show(seq, { title: found.route.title || "Error", body: [] });
    showError(err);
  }
}

/** Puts a page {title, crumbs, body, cleanup} in <main> if still current. */
function show(seq, page) {
  if (seq !== view.seq) {
    if (page.cleanup) page.cleanup();
    return;
  }
  view.cleanup = page.cleanup || null;
  const h1 = h("h1", { tabindex: "-1" }, page.title);
  const body = page.body.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false);
  main.replaceChildren(page.crumbs ? h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, page.crumbs) : "", h1, ...body);
  document.title = page.title + " · tollgate console";
  if (page.focus) page.focus.focus();
  else if (document.activeElement === document.body || !main.contains(document.activeElement)) h1.focus();
}

/** Marks the navigation link of section with aria-current="page". */
function markNav(section) {
  for (const a of nav.querySelectorAll("a")) {
    if (a.dataset.section === section) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

/** Goes to hash; renders even when the hash does not change. */
function navigate(hash, { keepMessages = true } = {}) {
  if (location.hash === hash) render({ keepMessages });
  else {
    pendingKeep = keepMessages;
    location.hash = hash;
  }
}
let pendingKeep = false;

/** The sign-in form: the token is checked with GetAccount, then kept. */
function signInView() {
  const tokenField = field({ label: "Admin token", name: "token", type: "password", autocomplete: "off", required: true,
    hint: "TOLLGATE_ADMIN_TOKEN of this admin node. It is kept in this tab's session storage only." });
  const form = onSubmit(h("form", { class: "panel" }, tokenField, h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in"))),
    async ({ token }) => {
      try {
        await call("GET", "/account", undefined, { token }); // GetAccount: refused tokens are not kept
      } catch (err) {
        if (err.type !== "AccessDeniedException") throw err; // a valid token whose role may not read the account
      }
      session.signIn(token);
      render();
    });
  return { title: "Sign in", body: [h("p", {}, "Sign in with the admin API's bearer token."), form], focus: form.querySelector("input") };
}

whenUnauthorized((err) => {
  session.signOut();
  render().then(() => showError(err.message + " Sign in again."));
});

signOut.addEventListener("click", () => {
  session.signOut();
  render();
});

document.querySelector(".skip").addEventListener("click", (e) => {
  e.preventDefault();
  main.focus();
});

window.addEventListener("hashchange", () => {
  const keep = pendingKeep;
  pendingKeep = false;
  render({ keepMessages: keep });
});
render();
