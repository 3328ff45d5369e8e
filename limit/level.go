package limit

// Level names the limit that refused a request. Limits are checked in the
// order of Request.Buckets, then the quota (docs/behaviour.md: plan or
// plan-method, stage, account, quota).
type Level uint8

// Levels of limits.
const (
	// LevelNone means nothing refused (the request was admitted).
	LevelNone Level = iota
	// LevelPlan is the usage plan's bucket of one API key.
	LevelPlan
	// LevelPlanMethod is the plan's per-key bucket for one method on one
	// stage; it replaces LevelPlan for that method.
	LevelPlanMethod
	// LevelStage is the stage's bucket for one method, shared by all callers.
	LevelStage
	// LevelAccount is the account bucket, shared by all traffic.
	LevelAccount
	// LevelQuota is the usage plan's quota of one API key.
	LevelQuota
	// LevelRule is a rate-limit rule (Decision.RefusedRule says which).
	LevelRule
	// LevelCustomer is the customer quota all keys of one customer share
	// in a usage plan (tollgate:customer-quota).
	LevelCustomer
)

// String returns the metric label value of l (tollgate_throttled_total's
// "level", docs/operations.md): "plan", "method", "stage", "account", "quota", "rule", "customer", and
// "none" for LevelNone or an unknown value.
func (l Level) String() string {
	switch l {
	case LevelPlan:
		return "plan"
	case LevelPlanMethod:
		return "method"
	case LevelStage:
		return "stage"
	case LevelAccount:
		return "account"
	case LevelQuota:
		return "quota"
	case LevelRule:
		return "rule"
	case LevelCustomer:
		return "customer"
	default:
		return "none"
	}
}

// PerKey reports whether l is the level of a bucket of one API key
// (LevelPlan or LevelPlanMethod: the caller's plan bucket, reported as
// Decision.Plan) rather than a shared one.
func (l Level) PerKey() bool { return l == LevelPlan || l == LevelPlanMethod }
