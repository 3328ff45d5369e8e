// tollgate console: reads the admin API with a bearer token.
"use strict";
const $ = (id) => document.getElementById(id);

async function get(path) {
  const res = await fetch(path, { headers: { Authorization: "Bearer " + $("token").value } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(path + ": " + res.status + " " + (body.message || ""));
  return body;
}

async function all(path) {
  let items = [], position = "";
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await get(path + (position ? sep + "position=" + encodeURIComponent(position) : ""));
    items = items.concat(page.item || []);
    position = page.position || "";
  } while (position);
  return items;
}

function fill(table, rows) {
  const tbody = $(table).querySelector("tbody");
  tbody.replaceChildren();
  for (const cells of rows) {
    const tr = document.createElement("tr");
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = c;
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
}

async function load() {
  $("error").textContent = "";
  sessionStorage.setItem("tollgate-token", $("token").value);
  try {
    const apis = await all("/restapis");
    const apiRows = [];
    for (const a of apis) {
      const stages = await get("/restapis/" + a.id + "/stages");
      apiRows.push([a.id, a.name, (stages.item || []).map((s) => s.stageName).join(", ")]);
    }
    fill("apis", apiRows);
    const plans = await all("/usageplans");
    fill("plans", plans.map((p) => [
      p.id, p.name,
      p.throttle ? p.throttle.rateLimit + "/" + p.throttle.burstLimit : "none",
      p.quota ? p.quota.limit + " per " + p.quota.period : "none",
      (p.apiStages || []).map((s) => s.apiId + ":" + s.stage).join(", "),
    ]));
    const keys = await all("/apikeys");
    fill("keys", keys.map((k) => [k.id, k.name, String(k.enabled), k.customerId || ""]));
  } catch (e) {
    $("error").textContent = e.message;
  }
}

$("token").value = sessionStorage.getItem("tollgate-token") || "";
$("load").addEventListener("click", load);
