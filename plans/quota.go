package plans

import "time"

// Bounds returns the UTC calendar period of q that contains t: [start, end).
// DAY starts at 00:00 UTC; WEEK on Sunday 00:00 UTC plus Offset days; MONTH
// on the 1st 00:00 UTC plus Offset days. This is the rule of AWS API Gateway
// usage plan quotas ("Quota ... period: DAY, WEEK or MONTH; offset: the
// number of requests subtracted ... / days the period is shifted"), and the
// reference the limiter's Lua script is tested against.
func (q Quota) Bounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch q.Period {
	case PeriodWeek:
		back := (int(t.Weekday()) - int(q.Offset) + 7) % 7
		start = day.AddDate(0, 0, -back)
		return start, start.AddDate(0, 0, 7)
	case PeriodMonth:
		start = time.Date(t.Year(), t.Month(), 1+int(q.Offset), 0, 0, 0, 0, time.UTC)
		if start.After(t) {
			start = time.Date(t.Year(), t.Month()-1, 1+int(q.Offset), 0, 0, 0, 0, time.UTC)
		}
		return start, time.Date(start.Year(), start.Month()+1, 1+int(q.Offset), 0, 0, 0, 0, time.UTC)
	default:
		return day, day.AddDate(0, 0, 1)
	}
}
