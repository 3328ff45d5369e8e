package admin

import (
	"math"
	"slices"
	"strings"

	"tollgate/plans"
)

// planPatch carries the state of one UpdateUsagePlan request across its
// operations: a quota created by this request must get a limit in it.
type planPatch struct {
	plan      *plans.UsagePlan
	newQuota  bool
	limitSeen bool
}

// patchUsagePlan applies ops to p, then validates the result as a whole.
// Paths: /name, /description, /throttle/rateLimit, /throttle/burstLimit
// (remove /throttle drops the throttle), /quota/limit, /quota/period,
// /quota/offset, /quota/anchor, /quota/timeZone (remove /quota drops the
// quota), /alerts ("80,90,100"; remove drops them), /cost/weight,
// /cost/header, /cost/json ("a.b+c.d"), /cost/reserve, /cost/ifMissing
// (remove /cost drops the cost field), /customerQuota/limit (remove
// /customerQuota drops it), add|remove /apiStages with value
// "apiId:stage",
// /apiStages/{apiId}:{stage}/throttle/{raw or ~1 path}/{METHOD}/rateLimit|burstLimit
// and /apiStages/{apiId}:{stage}/methodCosts/{raw or ~1 path}/{METHOD}.
func patchUsagePlan(p *plans.UsagePlan, ops []patchOp) error {
	pp := &planPatch{plan: p}
	if err := applyAll(ops, pp.apply); err != nil {
		return err
	}
	if pp.newQuota && !pp.limitSeen {
		return plans.Invalid("quota.limit", "quota.limit is required when a quota is added")
	}
	p.Normalize()
	return p.Validate()
}

// apply applies one operation.
func (pp *planPatch) apply(op patchOp) error {
	p := pp.plan
	switch op.Path {
	case "/name":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, &p.Name)
	case "/description":
		return setString(op, &p.Description)
	case "/throttle":
		if err := needOp(op, opRemove); err != nil {
			return err
		}
		p.Throttle = nil
		return nil
	case "/throttle/rateLimit", "/throttle/burstLimit":
		return pp.throttleField(op)
	case "/quota":
		if err := needOp(op, opRemove); err != nil {
			return err
		}
		p.Quota, pp.newQuota, pp.limitSeen = nil, false, false
		return nil
	case "/quota/limit", "/quota/period", "/quota/offset", "/quota/anchor", "/quota/timeZone":
		return pp.quotaField(op)
	case "/alerts":
		if op.Op == opRemove {
			p.Alerts = nil
			return nil
		}
		if err := needOp(op, opReplace, opAdd); err != nil {
			return err
		}
		a, err := plans.ParseAlerts(op.Value)
		if err != nil {
			return plans.Invalid("/alerts", "/alerts: %v", err)
		}
		p.Alerts = a
		return nil
	case "/apiStages":
		return pp.apiStages(op)
	case "/cost", "/customerQuota":
		if err := needOp(op, opRemove); err != nil {
			return err
		}
		if op.Path == "/cost" {
			p.CostSettings = nil
		} else {
			p.CustomerBudget = nil
		}
		return nil
	case "/customerQuota/limit":
		if err := needOp(op, opReplace, opAdd); err != nil {
			return err
		}
		if p.CustomerBudget == nil {
			p.CustomerBudget = &plans.CustomerQuota{}
		}
		return setInt32(op, &p.CustomerBudget.Limit)
	}
	if field, ok := strings.CutPrefix(op.Path, "/cost/"); ok {
		return pp.costField(op, field)
	}
	if rest, ok := strings.CutPrefix(op.Path, "/apiStages/"); ok {
		return pp.methodThrottle(op, rest)
	}
	return badPath(op)
}

// throttleField sets /throttle/rateLimit or /throttle/burstLimit, creating
// the throttle (missing fields 0) when the plan has none.
func (pp *planPatch) throttleField(op patchOp) error {
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	if pp.plan.Throttle == nil {
		pp.plan.Throttle = &plans.Throttle{}
	}
	return setThrottleField(pp.plan.Throttle, strings.TrimPrefix(op.Path, "/throttle/"), op)
}

// setThrottleField sets "rateLimit" (double) or "burstLimit" (int32) of t.
func setThrottleField(t *plans.Throttle, field string, op patchOp) error {
	switch field {
	case "rateLimit":
		return setDouble(op, &t.RateLimit)
	case "burstLimit":
		return setInt32(op, &t.BurstLimit)
	}
	return badPath(op)
}

// quotaField sets /quota/limit, /quota/period or /quota/offset, creating
// the quota when the plan has none.
func (pp *planPatch) quotaField(op patchOp) error {
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	if pp.plan.Quota == nil {
		pp.plan.Quota, pp.newQuota = &plans.Quota{}, true
	}
	q := pp.plan.Quota
	switch op.Path {
	case "/quota/limit":
		pp.limitSeen = true
		return setInt32(op, &q.Limit)
	case "/quota/offset":
		return setInt32(op, &q.Offset)
	case "/quota/anchor":
		q.Anchor = op.Value
		return nil
	case "/quota/timeZone":
		q.TimeZone = op.Value
		return nil
	}
	q.Period = op.Value
	return nil
}

// apiStages adds or removes the api stage named by op.Value ("apiId:stage").
func (pp *planPatch) apiStages(op patchOp) error {
	apiID, stage, ok := strings.Cut(op.Value, ":")
	if !ok || apiID == "" || stage == "" {
		return plans.Invalid("/apiStages", "value %q must be apiId:stage", op.Value)
	}
	i := pp.stageIndex(apiID, stage)
	switch op.Op {
	case opAdd:
		if i >= 0 {
			return plans.Invalid("/apiStages", "api stage %s is already in the plan", op.Value)
		}
		pp.plan.ApiStages = append(pp.plan.ApiStages, plans.ApiStage{ApiID: apiID, Stage: stage})
		return nil
	case opRemove:
		if i < 0 {
			return plans.Invalid("/apiStages", "api stage %s is not in the plan", op.Value)
		}
		pp.plan.ApiStages = slices.Delete(pp.plan.ApiStages, i, i+1)
		return nil
	}
	return badPath(op)
}

// stageIndex returns the index of (apiID, stage) in the plan, or -1.
func (pp *planPatch) stageIndex(apiID, stage string) int {
	return slices.IndexFunc(pp.plan.ApiStages, func(as plans.ApiStage) bool {
		return as.ApiID == apiID && as.Stage == stage
	})
}

// methodThrottle applies /apiStages/{apiId}:{stage}/throttle[/{path}/{METHOD}[/{field}]]
// (rest is the part after "/apiStages/"): replace sets a field (creating
// the method's throttle with missing fields 0), remove of a field sets it
// to 0, remove of {path}/{METHOD} drops the method's throttle and remove
// of /throttle drops them all.
func (pp *planPatch) methodThrottle(op patchOp, rest string) error {
	ref, sub, _ := strings.Cut(rest, "/")
	apiID, stage, _ := strings.Cut(ref, ":")
	i := pp.stageIndex(apiID, stage)
	if i < 0 {
		return plans.Invalid(op.Path, "%s: api stage %q is not in the plan", op.Path, ref)
	}
	as := &pp.plan.ApiStages[i]
	if sub == "methodCosts" || strings.HasPrefix(sub, "methodCosts/") {
		return methodCost(as, op, strings.TrimPrefix(strings.TrimPrefix(sub, "methodCosts"), "/"))
	}
	if sub == "throttle" {
		if err := needOp(op, opRemove); err != nil {
			return err
		}
		as.Throttle = nil
		return nil
	}
	key, ok := strings.CutPrefix(sub, "throttle/")
	if !ok || key == "" {
		return badPath(op)
	}
	field := ""
	if j := strings.LastIndexByte(key, '/'); j >= 0 && (key[j+1:] == "rateLimit" || key[j+1:] == "burstLimit") {
		key, field = key[:j], key[j+1:]
	}
	path, method, err := plans.ParseMethodThrottleKey(key)
	if err != nil {
		return plans.Invalid(op.Path, "%s: %s", op.Path, plans.ErrorMessage(err))
	}
	return setMethodThrottle(as, path+"/"+method, field, op, pp.plan.Throttle)
}

// setMethodThrottle applies op to the per-method throttle key of as. A
// throttle this op creates takes the field it does not set from
// newMethodThrottle.
func setMethodThrottle(as *plans.ApiStage, key, field string, op patchOp, planThrottle *plans.Throttle) error {
	t, exists := as.Throttle[key]
	switch {
	case field == "" && op.Op == opRemove:
		if !exists {
			return plans.Invalid(op.Path, "%s: no throttle is set for %s", op.Path, key)
		}
		delete(as.Throttle, key)
		return nil
	case field == "":
		return badPath(op)
	case op.Op == opRemove:
		op = patchOp{Op: opReplace, Path: op.Path, Value: "0"}
	}
	if err := setThrottleField(&t, field, op); err != nil {
		return err
	}
	if !exists {
		t = newMethodThrottle(t, field, planThrottle)
	}
	if as.Throttle == nil {
		as.Throttle = map[string]plans.Throttle{}
	}
	as.Throttle[key] = t
	return nil
}

// newMethodThrottle completes a per-method throttle created by a patch of
// one field (AWS's CLI guide sets a method throttle with a lone rateLimit
// operation; AWS documents no default for the other field). With only
// rateLimit set, the burst is the plan's own burstLimit when the plan has
// a throttle, else one second's worth of requests (rateLimit rounded up,
// at least 1), so the method is not refused outright; with only
// burstLimit set, the rate is the plan's own rateLimit (else 0). A later
// operation of the same request may still set the field.
func newMethodThrottle(t plans.Throttle, field string, plan *plans.Throttle) plans.Throttle {
	switch {
	case field == "rateLimit" && plan != nil:
		t.BurstLimit = plan.BurstLimit
	case field == "rateLimit":
		t.BurstLimit = int32(min(max(math.Ceil(t.RateLimit), 1), math.MaxInt32))
	case field == "burstLimit" && plan != nil:
		t.RateLimit = plan.RateLimit
	}
	return t
}

// costField applies replace of /cost/{field} (remove of a field unsets
// it): weight, header and json (dot paths joined by "+") replace one
// another.
func (pp *planPatch) costField(op patchOp, field string) error {
	p := pp.plan
	if p.CostSettings == nil {
		p.CostSettings = &plans.CostSettings{}
	}
	c := p.CostSettings
	if op.Op == opRemove {
		switch field {
		case "weight":
			c.Weight = nil
		case "header":
			c.Header = ""
		case "json":
			c.JSON = nil
		case "reserve":
			c.Reserve = nil
		case "ifMissing":
			c.IfMissing = ""
		default:
			return badPath(op)
		}
		return nil
	}
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	switch field {
	case "weight", "reserve":
		n, err := parseInt32(op)
		if err != nil {
			return err
		}
		if field == "reserve" {
			c.Reserve = &n
			return nil
		}
		c.Weight, c.Header, c.JSON = &n, "", nil
	case "header":
		c.Weight, c.Header, c.JSON = nil, op.Value, nil
	case "json":
		c.Weight, c.Header, c.JSON = nil, "", strings.Split(op.Value, "+")
	case "ifMissing":
		c.IfMissing = op.Value
	default:
		return badPath(op)
	}
	return nil
}

// methodCost applies /apiStages/{apiId}:{stage}/methodCosts[/{path}/{METHOD}]
// (key: the part after "methodCosts/"): replace sets the method's weight,
// remove drops it (or all of them without a key).
func methodCost(as *plans.ApiStage, op patchOp, key string) error {
	if key == "" {
		if err := needOp(op, opRemove); err != nil {
			return err
		}
		as.MethodCosts = nil
		return nil
	}
	path, method, err := plans.ParseMethodThrottleKey(key)
	if err != nil {
		return plans.Invalid(op.Path, "%s: %s", op.Path, plans.ErrorMessage(err))
	}
	key = path + "/" + method
	if op.Op == opRemove {
		if _, ok := as.MethodCosts[key]; !ok {
			return plans.Invalid(op.Path, "%s: no method cost is set for %s", op.Path, key)
		}
		delete(as.MethodCosts, key)
		return nil
	}
	var n int32
	if err := setInt32(op, &n); err != nil {
		return err
	}
	if as.MethodCosts == nil {
		as.MethodCosts = map[string]int32{}
	}
	as.MethodCosts[key] = n
	return nil
}
