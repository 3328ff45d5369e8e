// Hash links of the console's pages. Ids and names are percent-encoded as
// single segments; a link never carries the token.
const seg = encodeURIComponent;

export const links = {
  apis: () => "#/apis",
  api: (apiId) => `#/apis/${seg(apiId)}`,
  stage: (apiId, stage) => `#/apis/${seg(apiId)}/stages/${seg(stage)}`,
  method: (apiId, stage, resourcePath, verb) => `#/apis/${seg(apiId)}/stages/${seg(stage)}/methods/${seg(resourcePath)}/${seg(verb)}`,
  newRule: (apiId, stage) => `#/apis/${seg(apiId)}/stages/${seg(stage)}/rules/new`,
  rule: (apiId, stage, ruleId) => `#/apis/${seg(apiId)}/stages/${seg(stage)}/rules/${seg(ruleId)}`,
  plans: () => "#/plans",
  newPlan: () => "#/plans/new",
  plan: (planId) => `#/plans/${seg(planId)}`,
  planStage: (planId, apiId, stage) => `#/plans/${seg(planId)}/stages/${seg(apiId)}/${seg(stage)}`,
  keys: () => "#/keys",
  newKey: () => "#/keys/new",
  key: (keyId) => `#/keys/${seg(keyId)}`,
  keysOf: (customerId) => "#/keys?" + new URLSearchParams({ customerId }).toString(),
  usage: (params = {}) => {
    const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v)).toString();
    return "#/usage" + (q ? "?" + q : "");
  },
};
