// APIs and stages: the list of APIs, and one API's resources, methods,
// stages and deployment.
import { all, get, patch, post, path } from "../api.js";
import { h, table, field, onSubmit, action, confirmed, showStatus, onOff, when } from "../dom.js";
import { apiMethods, stagesOf, stageDefaults, inherited } from "../data.js";
import { links } from "../links.js";

/** #/apis: every API with its stages (GetRestApis, GetStages). */
export async function list() {
  const apis = await all("/restapis");
  const stages = await Promise.all(apis.map((a) => stagesOf(a.id)));
  const rows = apis.map((a, i) => [
    h("a", { href: links.api(a.id) }, a.name),
    h("code", {}, a.id),
    a.description || "",
    stages[i].length ? stages[i].map((s, j) => [j ? ", " : "", h("a", { href: links.stage(a.id, s.stageName) }, s.stageName)]) : "none",
    when(a.createdDate),
  ]);
  return {
    title: "APIs",
    body: [
      h("p", {}, "Create APIs and their resources with the AWS CLI, an SDK or an OpenAPI import; here you see them, deploy them and change their stages' throttles and caches."),
      table({ caption: "APIs", columns: ["Name", "ID", "Description", "Stages", "Created"], rows, empty: "No APIs yet." }),
    ],
  };
}

/** #/apis/{id}: resources and methods, stages, and the deploy form. */
export async function detail(apiId, ctx) {
  const [api, methods, stages] = await Promise.all([get(path`/restapis/${apiId}`), apiMethods(apiId), stagesOf(apiId)]);
  return {
    title: `API ${api.name}`,
    crumbs: [h("a", { href: links.apis() }, "All APIs"), " / ", api.name],
    body: [
      h("p", {}, api.description || "", " ", h("span", { class: "hint" }, "ID ", h("code", {}, api.id))),
      h("h2", {}, "Resources and methods"),
      h("p", { class: "hint" }, "Method changes reach traffic when the API is deployed to a stage."),
      methodsTable(apiId, methods, ctx),
      h("h2", {}, "Stages"),
      stagesTable(apiId, stages),
      h("h2", {}, "Deploy"),
      deployForm(apiId, stages, ctx),
    ],
  };
}

/**
 * "none", or, for a method an authorizer or AWS_IAM secures, "closed" and
 * its authorizationType: tollgate refuses every call of it
 * (docs/migrating-from-aws.md, "Authorizers"); update-method sets NONE.
 */
function authorizationText(method) {
  const type = method.authorizationType || "NONE";
  if (type === "NONE") return "none";
  return [h("span", { class: "tag off" }, "closed"), " ", type, method.authorizerId ? [" ", h("code", {}, method.authorizerId)] : ""];
}

/**
 * "Open" for a closed method: UpdateMethod authorizationType NONE, after
 * confirming; it serves calls once the API is deployed.
 */
function openButton(apiId, m, ctx) {
  return confirmed("Open", `Open ${m.verb} ${m.path}?`,
    `Its ${m.method.authorizationType} authorization is dropped: once the API is deployed, the gateway serves every call of it (with an API key when the method requires one).`,
    async () => {
      await patch(path`/restapis/${apiId}/resources/${m.resourceId}/methods/${m.verb}`,
        [{ op: "replace", path: "/authorizationType", value: "NONE" }]);
      showStatus(`${m.verb} ${m.path} is open once the API is deployed.`);
      ctx.refresh();
    }, { class: "danger small", "aria-label": `Open ${m.verb} ${m.path}` });
}

function methodsTable(apiId, methods, ctx) {
  const rows = methods.map((m) => {
    const integ = m.method.methodIntegration;
    const required = !!m.method.apiKeyRequired;
    return [
      `${m.verb} ${m.path}`,
      authorizationText(m.method),
      onOff(required),
      integ ? [integ.type, integ.uri ? [" ", h("code", {}, integ.uri)] : ""] : "none",
      integ && integ.cacheKeyParameters && integ.cacheKeyParameters.length ? h("code", {}, integ.cacheKeyParameters.join(", ")) : "none",
      [action(required ? "Do not require key" : "Require key", async () => {
        await patch(path`/restapis/${apiId}/resources/${m.resourceId}/methods/${m.verb}`,
          [{ op: "replace", path: "/apiKeyRequired", value: String(!required) }]);
        showStatus(`${m.verb} ${m.path} ${required ? "no longer requires" : "now requires"} an API key once the API is deployed.`);
        ctx.refresh();
      }, { class: "secondary small", "aria-label": `${required ? "Do not require" : "Require"} an API key for ${m.verb} ${m.path}` }),
      (m.method.authorizationType || "NONE") === "NONE" ? "" : [" ", openButton(apiId, m, ctx)]],
    ];
  });
  return table({ caption: "Resources and methods", columns: ["Method", "Authorization", "API key required", "Integration", "Cache key parameters", "Change"], rows, empty: "This API has no methods." });
}

function stagesTable(apiId, stages) {
  const rows = stages.map((s) => {
    const d = stageDefaults(s);
    return [
      h("a", { href: links.stage(apiId, s.stageName) }, s.stageName),
      h("code", {}, s.deploymentId),
      s.cacheClusterEnabled ? `on (${s.cacheClusterSize} GB)` : "off",
      inherited(d.throttlingRateLimit) === "inherit" && inherited(d.throttlingBurstLimit) === "inherit" ? "the account's"
        : `rate ${inherited(d.throttlingRateLimit)}, burst ${inherited(d.throttlingBurstLimit)}`,
      d.cachingEnabled ? `on, TTL ${d.cacheTtlInSeconds} s` : "off",
      when(s.lastUpdatedDate),
    ];
  });
  return table({ caption: "Stages", columns: ["Stage", "Deployment", "Cache cluster", "Stage throttle", "Caching", "Updated"], rows, empty: "No stages: deploy the API to create one." });
}

const NEW_STAGE = "+new"; // no stage name holds "+"

/** Deploy: CreateDeployment with the picked (or a new) stageName. */
function deployForm(apiId, stages, ctx) {
  const options = stages.map((s) => [s.stageName, s.stageName]).concat([[NEW_STAGE, "New stage…"]]);
  const stageField = field({ label: "Stage", name: "stage", options, value: stages.length ? stages[0].stageName : NEW_STAGE });
  const newName = field({ label: "New stage name", name: "newStage", hint: "Letters, digits, - and _ (up to 128)." });
  const select = stageField.querySelector("select");
  const sync = () => (newName.hidden = select.value !== NEW_STAGE);
  select.addEventListener("change", sync);
  sync();
  const form = h("form", { class: "panel", "aria-label": "Deploy" },
    h("div", { class: "grid" }, stageField, newName, field({ label: "Deployment description", name: "description" })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Deploy")));
  return onSubmit(form, async (v) => {
    const stageName = v.stage === NEW_STAGE ? v.newStage : v.stage;
    const d = await post(path`/restapis/${apiId}/deployments`, { stageName, description: v.description });
    showStatus(`Deployed: deployment ${d.id} now serves stage ${stageName}.`);
    ctx.refresh();
  });
}
