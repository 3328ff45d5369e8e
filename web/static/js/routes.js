// The console's pages by hash path. Each page is async (...params, ctx)
// and resolves to {title, crumbs?, body: Node[], focus?, cleanup?}.
import * as apis from "./pages/apis.js";
import * as stage from "./pages/stage.js";
import * as rules from "./pages/rules.js";
import * as plans from "./pages/plans.js";
import * as plan from "./pages/plan.js";
import * as keys from "./pages/keys.js";
import * as usage from "./pages/usage.js";
import * as audit from "./pages/audit.js";
import * as alerts from "./pages/alerts.js";
import * as domains from "./pages/domains.js";
import * as partners from "./pages/partners.js";

const seg = "([^/]+)";
const at = (...parts) => new RegExp("^/" + parts.join("/") + "$");

/** Routes in match order; section names the navigation link to mark. */
export const routes = [
  { pattern: at("apis"), section: "apis", title: "APIs", page: apis.list },
  { pattern: at("apis", seg), section: "apis", title: "API", page: apis.detail },
  { pattern: at("apis", seg, "stages", seg), section: "apis", title: "Stage", page: stage.detail },
  { pattern: at("apis", seg, "stages", seg, "methods", seg, seg), section: "apis", title: "Method settings", page: stage.method },
  { pattern: at("apis", seg, "stages", seg, "rules", "new"), section: "apis", title: "Create rule", page: rules.create },
  { pattern: at("apis", seg, "stages", seg, "rules", seg), section: "apis", title: "Rule", page: rules.detail },
  { pattern: at("plans"), section: "plans", title: "Usage plans", page: plans.list },
  { pattern: at("plans", "new"), section: "plans", title: "Create usage plan", page: plans.create },
  { pattern: at("plans", seg), section: "plans", title: "Usage plan", page: plan.detail },
  { pattern: at("plans", seg, "stages", seg, seg), section: "plans", title: "Method throttles", page: plan.methodThrottles },
  { pattern: at("keys"), section: "keys", title: "API keys", page: keys.list },
  { pattern: at("keys", "new"), section: "keys", title: "Create API key", page: keys.create },
  { pattern: at("keys", seg), section: "keys", title: "API key", page: keys.detail },
  { pattern: at("partners"), section: "partners", title: "Partners", page: partners.list },
  { pattern: at("usage"), section: "usage", title: "Usage", page: usage.page },
  { pattern: at("alerts"), section: "alerts", title: "Alerts", page: alerts.list },
  { pattern: at("domains"), section: "domains", title: "Domain names", page: domains.list },
  { pattern: at("audit"), section: "audit", title: "Audit", page: audit.list },
];
