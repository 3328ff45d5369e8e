package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// UsageCounter reads and sets the request counters of keys in plans
// (implemented in cmd over the engine; the admin does not import it).
type UsageCounter interface {
	// Now returns the limiter's time (Redis TIME): its UTC date is today
	// for usage, whatever the admin node's clock says.
	Now(ctx context.Context) (time.Time, error)
	// Usage returns the admitted requests of keyID in planID per UTC day
	// and their cost units (Count), from from's to to's date inclusive,
	// keyed "YYYY-MM-DD" (zero for a day without requests).
	Usage(ctx context.Context, keyID, planID string, from, to time.Time) (map[string]plans.DayCount, error)
	// QuotaRemaining returns the requests left to keyID under quota q in
	// the current period (never negative), charging nothing.
	QuotaRemaining(ctx context.Context, keyID, planID string, q plans.Quota) (int64, error)
	// SetRemaining sets the requests left to keyID under quota q in the
	// current period, clamped to 0..q.Limit.
	SetRemaining(ctx context.Context, keyID, planID string, q plans.Quota, remaining int64) error
}

// CustomerUsageReader is implemented by a UsageCounter that can read a
// customer quota (tollgate:customer-quota; usage.Limiter does); without it
// the customer usage read answers 400 as an unsupported operation.
type CustomerUsageReader interface {
	// CustomerQuota reads the quota of limit units per q's period that
	// the keys of customerID share in planID, charging nothing.
	CustomerQuota(ctx context.Context, customerID, planID string, q plans.Quota, limit int32) (plans.CustomerUsage, error)
}

// UsageAnnouncer is implemented by a Publisher (push.Publisher) that can
// tell the gateways a key's usage was changed, so they clear their local
// refusal memory for it. UpdateUsage calls it when Options.Publisher
// implements it.
type UsageAnnouncer interface {
	// AnnounceUsageUpdate announces that the usage of keyID in planID
	// changed.
	AnnounceUsageUpdate(ctx context.Context, planID, keyID string) error
}

// MaxUsageDays is the longest GetUsage range, in days (both ends included).
const MaxUsageDays = 90

// usageOutput is AWS's Usage shape. The per-key map is "values" on the
// wire (the SDK's GetUsageOutput.Items): keyId → one [used, remaining]
// pair per day, used and remaining in cost units (docs/cost.md),
// remaining being -1 without a quota. Requests, tollgate's extension
// beside it, is keyId → the requests of each of those days, so a plan
// with a cost shows units and requests side by side. On a plan with a
// quota, Periods (tollgate's too) is the quota period each day of the
// range counts in (the one holding the day's first instant: remaining is
// counted in it), and CurrentPeriod the period holding the limiter's time
// now, so that a client need not know anchors, time zones or offsets:
// the plan's, or with keyId that key's own (plans.KeyCalendar);
// KeyPeriods has them per key for the keys on their own calendar.
type usageOutput struct {
	UsagePlanID   string                `json:"usagePlanId"`
	StartDate     string                `json:"startDate"`
	EndDate       string                `json:"endDate"`
	Values        map[string][][]int64  `json:"values"`
	Requests      map[string][]int64    `json:"requests,omitempty"`
	Periods       []usagePeriod         `json:"periods,omitempty"`
	CurrentPeriod *usagePeriod          `json:"currentPeriod,omitempty"`
	KeyPeriods    map[string]keyPeriods `json:"keyPeriods,omitempty"`
	Position      string                `json:"position,omitempty"`
}

// usagePeriod is one quota period: its start and end, RFC 3339 UTC.
type usagePeriod struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// keyPeriods are the quota periods of a key on its own calendar
// (plans.KeyCalendar), as usageOutput has the plan's.
type keyPeriods struct {
	Periods       []usagePeriod `json:"periods"`
	CurrentPeriod *usagePeriod  `json:"currentPeriod"`
}

// periodsOf returns the period of q holding each day of [from, to] (its
// first instant) and the one holding now; none without a quota.
func periodsOf(q *plans.Quota, from, to, now time.Time) ([]usagePeriod, *usagePeriod) {
	if q == nil {
		return nil, nil
	}
	var ps []usagePeriod
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		ps = append(ps, periodOf(q, d))
	}
	cur := periodOf(q, now)
	return ps, &cur
}

// periodOf returns the period of q that holds t.
func periodOf(q *plans.Quota, t time.Time) usagePeriod {
	start, end := q.Bounds(t)
	return usagePeriod{Start: start.UTC().Format(time.RFC3339), End: end.UTC().Format(time.RFC3339)}
}

func (s *Server) usageRoutes(r chi.Router) {
	if s.usage == nil {
		return // the operations stay unsupported (400)
	}
	r.Get("/usageplans/{usagePlanId}/usage", s.handle(s.getUsage))
	r.Patch("/usageplans/{usagePlanId}/keys/{keyId}/usage", s.handle(s.updateUsage))
	r.Get("/usageplans/{usagePlanId}/customers/{customerId}/usage", s.handle(s.getCustomerUsage))
}

// customerUsageOutput is the customer usage read's answer (docs/cost.md).
type customerUsageOutput struct {
	UsagePlanID string `json:"usagePlanId"`
	CustomerID  string `json:"customerId"`
	Limit       int64  `json:"limit"`
	Used        int64  `json:"used"`
	Remaining   int64  `json:"remaining"`
	Period      string `json:"period"`
	PeriodStart string `json:"periodStart"`
	PeriodEnd   string `json:"periodEnd"`
}

// getCustomerUsage: GET /usageplans/{id}/customers/{customerId}/usage →
// 200 the customer quota of the plan (tollgate:customer-quota) that the
// keys with that customerId share: limit, used and remaining units in the
// current period, on the limiter's clock. 400 when the plan has no
// customer quota, or the usage counter cannot read one (unsupported).
func (s *Server) getCustomerUsage(w http.ResponseWriter, r *http.Request) error {
	reader, ok := s.usage.(CustomerUsageReader)
	if !ok {
		return unsupported(w, r)
	}
	ctx := r.Context()
	planID, customerID := param(r, "usagePlanId"), param(r, "customerId")
	if customerID == "" || len(customerID) > plans.MaxNameLen {
		return plans.Invalid("customerId", "customerId must be 1 to %d characters", plans.MaxNameLen)
	}
	plan, u, err := s.customerUsage(ctx, reader, planID, customerID)
	if err != nil {
		return err
	}
	if u == nil {
		return plans.Invalid("tags."+plans.CustomerQuotaTag, "usage plan %s has no customer quota (tag %s)", planID, plans.CustomerQuotaTag)
	}
	writeJSON(w, http.StatusOK, customerUsageOutput{UsagePlanID: planID, CustomerID: customerID, Limit: u.Limit, Used: u.Used,
		Remaining: u.Remaining, Period: plan.Quota.Period, PeriodStart: u.PeriodStart.Format(time.RFC3339),
		PeriodEnd: u.PeriodEnd.Format(time.RFC3339)})
	return nil
}

// customerUsage reads the customer quota of plan planID that the keys of
// customerID share; nil when the plan has none.
func (s *Server) customerUsage(ctx context.Context, reader CustomerUsageReader, planID, customerID string) (*plans.UsagePlan, *plans.CustomerUsage, error) {
	plan, err := s.store.GetUsagePlan(ctx, planID)
	if err != nil {
		return nil, nil, err
	}
	limit, ok := plan.CustomerQuota()
	if !ok || plan.Quota == nil {
		return plan, nil, nil
	}
	u, err := reader.CustomerQuota(ctx, customerID, planID, *plan.QuotaRule(), limit) // anchored as the tags say
	if err != nil {
		return nil, nil, plans.Unavailable(err, "customer quota of %s is unavailable", customerID)
	}
	return plan, &u, nil
}

// CustomerUsage is the customer quota (budget) of plan planID that the
// keys of customerID share, now, on the limiter's clock (the developer
// portal's usage page reads it); nil when the plan has none or this node
// cannot read one. Errors: the store's (KindNotFound for the plan),
// KindUnavailable.
func (s *Server) CustomerUsage(ctx context.Context, planID, customerID string) (*plans.CustomerUsage, error) {
	reader, ok := s.usage.(CustomerUsageReader)
	if !ok {
		return nil, nil
	}
	_, u, err := s.customerUsage(ctx, reader, planID, customerID)
	return u, err
}

// parseUsageDate reads a required YYYY-MM-DD query parameter.
func parseUsageDate(r *http.Request, name string) (time.Time, error) {
	return plans.ParseUsageDate(name, r.URL.Query().Get(name))
}

// usageRange reads startDate and endDate, at most maxDays days apart.
func usageRange(r *http.Request, maxDays int) (from, to time.Time, err error) {
	if from, err = parseUsageDate(r, "startDate"); err != nil {
		return from, to, err
	}
	if to, err = parseUsageDate(r, "endDate"); err != nil {
		return from, to, err
	}
	return from, to, plans.ValidateUsageRange(from, to, maxDays)
}

// getUsage: GET /usageplans/{id}/usage?startDate&endDate[&keyId][&limit]
// [&position] → 200 Usage, paging over the plan's keys; at most
// MaxUsageDays days.
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) error {
	from, to, err := usageRange(r, MaxUsageDays)
	if err != nil {
		return err
	}
	p, err := page(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	planID := param(r, "usagePlanId")
	plan, err := s.store.GetUsagePlan(ctx, planID)
	if err != nil {
		return err
	}
	var keyIDs []string
	next := ""
	if k := r.URL.Query().Get("keyId"); k != "" {
		_, err := s.store.GetUsagePlanKey(ctx, planID, k)
		switch {
		case err == nil:
			keyIDs = []string{k}
		case plans.ErrorKind(err) != plans.KindNotFound:
			return err
		}
	} else {
		keys, n, err := s.store.ListUsagePlanKeys(ctx, planID, "", p)
		if err != nil {
			return err
		}
		next = n
		for _, k := range keys {
			keyIDs = append(keyIDs, k.ID)
		}
	}
	out := usageOutput{
		UsagePlanID: planID,
		StartDate:   from.Format(plans.UsageDateLayout),
		EndDate:     to.Format(plans.UsageDateLayout),
		Values:      make(map[string][][]int64, len(keyIDs)),
		Requests:    make(map[string][]int64, len(keyIDs)),
		Position:    next,
	}
	now, err := s.usageNow(ctx)
	if err != nil {
		return err
	}
	today := utcDate(now)
	rules, err := s.keyRules(ctx, plan, keyIDs)
	if err != nil {
		return err
	}
	planRule := plan.QuotaRule()
	if k := r.URL.Query().Get("keyId"); k != "" && len(keyIDs) == 1 {
		planRule = rules[k] // one key: its own periods
	}
	out.Periods, out.CurrentPeriod = periodsOf(planRule, from, to, now)
	first := from // the earliest start of a period any key's remaining counts from
	for _, k := range keyIDs {
		first = earlier(first, periodStart(rules[k], from))
		if !rules[k].SameCalendar(planRule) { // a key on its own calendar
			if out.KeyPeriods == nil {
				out.KeyPeriods = map[string]keyPeriods{}
			}
			kp := keyPeriods{}
			kp.Periods, kp.CurrentPeriod = periodsOf(rules[k], from, to, now)
			out.KeyPeriods[k] = kp
		}
	}
	counts, requests, err := s.usageCounts(ctx, planID, keyIDs, first, to, today)
	if err != nil {
		return err
	}
	for _, k := range keyIDs {
		v, err := s.keyUsage(ctx, planID, k, rules[k], from, to, today, counts[k])
		if err != nil {
			return err
		}
		out.Values[k] = v
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			out.Requests[k] = append(out.Requests[k], requests[k][d.Format(plans.UsageDateLayout)])
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// keyRules returns the quota rule each of keyIDs runs on in plan (nil
// without a quota): the plan's, on the key's own calendar where it has
// one (plans.KeyCalendar).
func (s *Server) keyRules(ctx context.Context, plan *plans.UsagePlan, keyIDs []string) (map[string]*plans.Quota, error) {
	rule := plan.QuotaRule()
	var cals map[string]plans.KeyCalendar
	if rule != nil && len(keyIDs) > 0 {
		var err error
		if cals, err = s.store.KeyCalendars(ctx, keyIDs); err != nil {
			return nil, err
		}
	}
	out := make(map[string]*plans.Quota, len(keyIDs))
	for _, k := range keyIDs {
		out[k] = cals[k].Apply(rule)
	}
	return out, nil
}

// keyRule is keyRules for one key.
func (s *Server) keyRule(ctx context.Context, plan *plans.UsagePlan, keyID string) (*plans.Quota, error) {
	rules, err := s.keyRules(ctx, plan, []string{keyID})
	return rules[keyID], err
}

// periodStart is the UTC date of the start of q's period that contains
// day, or day without a quota: GetUsage's remaining counts from there.
// Usage is counted per UTC day; a day counts in the period that holds its
// first instant (an anchored or zoned period starts within a day).
func periodStart(q *plans.Quota, day time.Time) time.Time {
	if q == nil {
		return day
	}
	start, _ := q.Bounds(day)
	return utcDate(start)
}

// keyUsage returns one [used, remaining] pair per day from from to to for
// keyID in planID, from counts (day "YYYY-MM-DD" → requests, from
// periodStart(q, from) on; see usageCounts). remaining is -1 without a
// quota; otherwise what was left in the enclosing quota period at the end
// of that day: the limit minus the requests of that period up to and
// including the day, except that today (and later days of the current
// period) use the live quota counter, which UpdateUsage may have set.
func (s *Server) keyUsage(ctx context.Context, planID, keyID string, q *plans.Quota, from, to, today time.Time, counts map[string]int64) ([][]int64, error) {
	first := periodStart(q, from)
	var live int64
	curEnd := today
	if q != nil {
		_, curEnd = q.Bounds(today)
		if !to.Before(today) && from.Before(curEnd) {
			var err error
			if live, err = s.usage.QuotaRemaining(ctx, keyID, planID, *q); err != nil {
				return nil, plans.Unavailable(err, "quota of key %s is unavailable", keyID)
			}
		}
	}
	var out [][]int64
	var start time.Time // of the period d is in
	var used int64
	for d := first; !d.After(to); d = d.AddDate(0, 0, 1) {
		n := counts[d.Format(plans.UsageDateLayout)]
		remaining := int64(-1)
		if q != nil {
			if ps, _ := q.Bounds(d); !ps.Equal(start) {
				start, used = ps, 0
			}
			used += n
			switch {
			case !d.Before(today) && d.Before(curEnd):
				remaining = live
			case d.After(today):
				remaining = int64(q.Limit) // a later period, not begun
			default:
				remaining = max(0, int64(q.Limit)-used)
			}
		}
		if !d.Before(from) {
			out = append(out, []int64{n, remaining})
		}
	}
	return out, nil
}

// utcDate is t's UTC date at 00:00.
func utcDate(t time.Time) time.Time { return plans.UTCDate(t) }

// usageToday is the limiter's UTC date (Redis time): the day the gateways
// count usage in, which GetUsage and UpdateUsage split live counts from
// ledger rows by.
func (s *Server) usageToday(ctx context.Context) (time.Time, error) {
	now, err := s.usageNow(ctx)
	return utcDate(now), err
}

// usageNow is the limiter's time (Redis time).
func (s *Server) usageNow(ctx context.Context) (time.Time, error) {
	now, err := s.usage.Now(ctx)
	if err != nil {
		return time.Time{}, plans.Unavailable(err, "the limiter's time is unavailable")
	}
	return now, nil
}

// updateUsage: PATCH /usageplans/{id}/keys/{keyId}/usage with replace
// /remaining N → sets the requests left in the current quota period
// (clamped to 0..limit), announces it to the gateways, and answers 200
// Usage for today. A plan without a quota is 400.
func (s *Server) updateUsage(w http.ResponseWriter, r *http.Request) error {
	ops, err := decodePatch(r)
	if err != nil {
		return err
	}
	remaining := int64(-1)
	for _, op := range ops {
		if op.Path != "/remaining" {
			return badPath(op)
		}
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(op.Value), 10, 64)
		if err != nil {
			return plans.Invalid("/remaining", "/remaining: value %q must be an integer", op.Value)
		}
		remaining = max(0, n)
	}
	if remaining < 0 {
		return plans.Invalid("patchOperations", "UpdateUsage needs replace /remaining")
	}
	ctx := r.Context()
	planID, keyID := param(r, "usagePlanId"), param(r, "keyId")
	plan, err := s.store.GetUsagePlan(ctx, planID)
	if err != nil {
		return err
	}
	if _, err := s.store.GetUsagePlanKey(ctx, planID, keyID); err != nil {
		return err
	}
	if plan.Quota == nil {
		return plans.Invalid("/remaining", "usage plan %s has no quota: there is no remaining count to set", planID)
	}
	rule, err := s.keyRule(ctx, plan, keyID) // the key's own periods
	if err != nil {
		return err
	}
	if err := s.usage.SetRemaining(ctx, keyID, planID, *rule, remaining); err != nil {
		return plans.Unavailable(err, "quota of key %s is unavailable", keyID)
	}
	if a, ok := s.pub.(UsageAnnouncer); ok {
		if err := a.AnnounceUsageUpdate(context.WithoutCancel(ctx), planID, keyID); err != nil {
			s.log.Warn("admin: usage update announcement failed; gateways may refuse the key until their refusal memory expires",
				"plan", planID, "key", keyID, "err", err)
		}
	}
	today, err := s.usageToday(ctx)
	if err != nil {
		return err
	}
	counts, _, err := s.usageCounts(ctx, planID, []string{keyID}, periodStart(rule, today), today, today)
	if err != nil {
		return err
	}
	v, err := s.keyUsage(ctx, planID, keyID, rule, today, today, today, counts[keyID])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, usageOutput{
		UsagePlanID: planID,
		StartDate:   today.Format(plans.UsageDateLayout),
		EndDate:     today.Format(plans.UsageDateLayout),
		Values:      map[string][][]int64{keyID: v},
	})
	return nil
}
