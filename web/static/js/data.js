// Reads shared by several pages, each made of admin API operations.
import { all, get, path } from "./api.js";

/**
 * The methods of API apiId, sorted by path then verb:
 * [{resourceId, path, verb, method}] where method is AWS's Method with its
 * methodIntegration (GetResources with embed=methods).
 */
export async function apiMethods(apiId) {
  const resources = await all(path`/restapis/${apiId}/resources` + "?embed=methods");
  const out = [];
  for (const r of resources) {
    for (const [verb, m] of Object.entries(r.resourceMethods || {})) {
      out.push({ resourceId: r.id, path: r.path, verb, method: m });
    }
  }
  return out.sort((a, b) => a.path.localeCompare(b.path) || a.verb.localeCompare(b.verb));
}

/** The stages of API apiId (GetStages; not paged, as AWS). */
export async function stagesOf(apiId) {
  const res = await get(path`/restapis/${apiId}/stages`);
  return (res && res.item) || [];
}

/**
 * Every API with its stages: [{api, stages}] (GetRestApis, then GetStages
 * for each API).
 */
export async function apisWithStages() {
  const apis = await all("/restapis");
  const stages = await Promise.all(apis.map((a) => stagesOf(a.id)));
  return apis.map((api, i) => ({ api, stages: stages[i] }));
}

/**
 * The methodSettings key of a resource path and verb, as AWS escapes it:
 * every "/" written "~1" ("/pets/{petId}", "GET" → "~1pets~1{petId}/GET").
 */
export const settingKey = (resourcePath, verb) => resourcePath.replaceAll("/", "~1") + "/" + verb;

/** "GET /pets" for a method. */
export const methodName = (verb, resourcePath) => `${verb} ${resourcePath}`;

/** A stage's stage-wide settings entry ("*\/*"), or {} when none. */
export const stageDefaults = (stage) => (stage.methodSettings && stage.methodSettings["*/*"]) || {};

/** "inherit" for an unset (-1 or absent) throttle field, else the value. */
export const inherited = (v) => (v === undefined || v === null || v < 0 ? "inherit" : String(v));
