package portal

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"tollgate/plans"
)

// usageDays is how many UTC days the usage page shows, today included.
const usageDays = 30

type usageDay struct {
	Day        string
	Used       int64
	Remaining  int64  // -1 without a quota
	BudgetLeft string // the customer budget left at the day's end; "" outside its current period
}

type usageData struct {
	Keys  []keyView
	Key   *plans.ApiKey
	Plan  *plans.UsagePlan
	Quota string
	// Budget is the plan's customer quota (tollgate:customer-quota) that
	// all the partner's keys share, now; nil when the plan has none.
	Budget *plans.CustomerUsage
	Days   []usageDay
	// The chart's series as comma lists (data attributes the chart module
	// reads: no inline script).
	ChartDays, ChartUsed, ChartRemaining, ChartBudget string
}

// usagePage shows one of the partner's keys' requests per day over the
// last usageDays days against its plan's quota, as a chart and a table.
func (s *Server) usagePage(w http.ResponseWriter, r *http.Request) {
	acct := sessionOf(r.Context()).account
	keys, err := s.customerKeys(r.Context(), acct.CustomerID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := usageData{}
	for _, k := range keys {
		data.Keys = append(data.Keys, keyView{ID: k.ID, Name: k.Name})
	}
	id := r.URL.Query().Get("key")
	if id == "" && len(keys) > 0 {
		id = keys[0].ID
	}
	if id != "" {
		if err := s.keyUsage(r, id, &data); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "usage", page{Title: "Usage", Nav: "usage", Data: data})
}

// keyUsage fills data with key id's usage in its first plan.
func (s *Server) keyUsage(r *http.Request, id string, data *usageData) error {
	ctx := r.Context()
	k, err := s.ownKey(ctx, id)
	if err != nil {
		return err
	}
	data.Key = k
	ps, _, err := s.keys.ListUsagePlans(ctx, k.ID, plans.Page{Limit: 1})
	if err != nil || len(ps) == 0 {
		return err
	}
	data.Plan = &ps[0]
	data.Quota = limitsText(data.Plan)
	to := plans.UTCDate(time.Now())
	from := to.AddDate(0, 0, 1-usageDays)
	rows, err := s.usage.KeyUsage(ctx, data.Plan.ID, k.ID, from, to)
	if err != nil {
		return err
	}
	var days, used, remaining []string
	for i, row := range rows {
		d := usageDay{Day: from.AddDate(0, 0, i).Format(plans.UsageDateLayout), Used: row[0], Remaining: row[1]}
		data.Days = append(data.Days, d)
		days, used = append(days, d.Day), append(used, strconv.FormatInt(d.Used, 10))
		if data.Plan.Quota != nil {
			remaining = append(remaining, strconv.FormatInt(d.Remaining, 10))
		}
	}
	data.ChartDays, data.ChartUsed, data.ChartRemaining = strings.Join(days, ","), strings.Join(used, ","), strings.Join(remaining, ",")
	return s.budget(r, data, from, to)
}

// budget fills data's customer budget (the plan's customer quota, which
// every key of the partner's customer draws on) and its line: what was
// left at the end of each UTC day of the current period, counted back
// from what the limiter says is left now by the units all the partner's
// keys used on the days after.
func (s *Server) budget(r *http.Request, data *usageData, from, to time.Time) error {
	if _, ok := data.Plan.CustomerQuota(); !ok {
		return nil
	}
	ctx, customer := r.Context(), sessionOf(r.Context()).account.CustomerID
	u, err := s.usage.CustomerUsage(ctx, data.Plan.ID, customer)
	if err != nil || u == nil {
		return err
	}
	data.Budget = u
	keys, err := s.customerKeys(ctx, customer)
	if err != nil {
		return err
	}
	used := make([]int64, len(data.Days))
	for _, k := range keys {
		rows, err := s.usage.KeyUsage(ctx, data.Plan.ID, k.ID, from, to)
		if err != nil {
			return err
		}
		for i := range min(len(rows), len(used)) {
			used[i] += rows[i][0]
		}
	}
	start := plans.UTCDate(u.PeriodStart).Format(plans.UsageDateLayout)
	left, line := u.Remaining, make([]string, len(data.Days))
	for i := len(data.Days) - 1; i >= 0 && data.Days[i].Day >= start; i-- {
		data.Days[i].BudgetLeft = strconv.FormatInt(left, 10)
		line[i] = data.Days[i].BudgetLeft
		left += used[i]
	}
	data.ChartBudget = strings.Join(line, ",")
	return nil
}
