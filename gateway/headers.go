package gateway

import (
	"cmp"
	"math"
	"net/http"
	"strconv"
	"time"

	"tollgate/limit"
)

// Rate-limit response headers (docs/behaviour.md, "Throttles and quota"; the IETF fields follow
// draft-ietf-httpapi-ratelimit-headers-10).
const (
	HeaderLimit        = "X-RateLimit-Limit"
	HeaderRemaining    = "X-RateLimit-Remaining"
	HeaderReset        = "X-RateLimit-Reset"
	HeaderRateLimit    = "RateLimit"
	HeaderRatePolicy   = "RateLimit-Policy"
	HeaderRetryAfter   = "Retry-After"
	HeaderAPIKeyID     = "X-Tollgate-Api-Key-Id"
	headerAPIKey       = "X-Api-Key"
	headerXCache       = "X-Cache"
	headerForwardedFor = "X-Forwarded-For"
)

// ownedHeaders are the response headers the gateway owns: any copy an
// upstream sends is dropped so the gateway's (or none) reaches the client.
var ownedHeaders = []string{HeaderLimit, HeaderRemaining, HeaderReset, HeaderRateLimit, HeaderRatePolicy, headerXCache, headerAge, headerRequestID}

// writeRateLimitHeaders sets the caller's own rate-limit headers from a
// decision: X-RateLimit-* from the quota when the plan has one (or the
// customer quota when it has fewer units left), else from the plan (or
// plan-method) bucket; RateLimit-Policy and RateLimit with a "throttle"
// item for that bucket, a "quota" item, a "customer" item for the
// customer quota (docs/cost.md), and an item per
// enforcing rule of rules that counts by something of the caller's own
// (limit.Rule.Private: a rule counting every caller together describes
// other callers' traffic too), named after the rule (docs/rules.md). A
// bucket at rate 0 never refills, so its items are left out. Times are
// relative to d.Now, the limiter's (Redis) clock. vals (5 strings) backs
// the header values; nil allocates it.
func writeRateLimitHeaders(h http.Header, vals []string, d limit.Decision, bucket *limit.Bucket, hasQuota bool, rules []limit.Rule) {
	var ts, qs *limit.State
	if bucket != nil && bucket.RateLimit > 0 {
		ts = d.Plan
	}
	if hasQuota {
		qs = d.Quota
	}
	cs := d.Customer
	shown := shownRules(d, rules)
	if qs == nil && ts == nil && cs == nil && shown == 0 {
		return
	}
	// The five values are written into one buffer, made one string and
	// cut into its parts: one allocation.
	var buf [320]byte // the plan's values fit: at most 19-digit numbers
	b := buf[:0]
	var ends [5]int
	st := cmp.Or(qs, ts)
	if cs != nil && (qs == nil || cs.Remaining < qs.Remaining) {
		st = cs
	}
	if st != nil {
		b = strconv.AppendInt(b, st.Limit, 10)
		ends[0] = len(b)
		b = strconv.AppendInt(b, max(st.Remaining, 0), 10)
		ends[1] = len(b)
		b = strconv.AppendInt(b, ceilUnix(st.Reset), 10)
		ends[2] = len(b)
	}
	var pbuf, cbuf [128]byte
	policy, current := pbuf[:0], cbuf[:0]
	if ts != nil {
		policy = appendItem(policy, "throttle", 'q', ts.Limit, ceilSeconds(ts.Window))
		current = appendItem(current, "throttle", 'r', max(ts.Remaining, 0), ceilSeconds(ts.Reset.Sub(d.Now)))
	}
	if qs != nil {
		policy = appendItem(policy, "quota", 'q', qs.Limit, ceilSeconds(qs.Window))
		current = appendItem(current, "quota", 'r', max(qs.Remaining, 0), ceilSeconds(qs.Reset.Sub(d.Now)))
	}
	if cs != nil {
		policy = appendItem(policy, "customer", 'q', cs.Limit, ceilSeconds(cs.Window))
		current = appendItem(current, "customer", 'r', max(cs.Remaining, 0), ceilSeconds(cs.Reset.Sub(d.Now)))
	}
	if shown > 0 {
		for i := range d.Rules {
			if !showRule(&rules[i]) {
				continue
			}
			o := &d.Rules[i]
			st := &o.State
			w, t := ceilSeconds(st.Window), ceilSeconds(st.Reset.Sub(d.Now))
			if !o.Admitted && !o.NoRetry { // never sooner than its Retry-After (a sliding window's end may be)
				t = max(t, ceilSeconds(o.RetryAfter))
			}
			if rules[i].Algorithm == limit.Concurrency { // a count in flight: no window, no reset
				w, t = -1, -1
			}
			policy = appendItem(policy, rules[i].Name, 'q', st.Limit, w)
			current = appendItem(current, rules[i].Name, 'r', max(st.Remaining, 0), t)
		}
	}
	b = append(b, policy...)
	ends[3] = len(b)
	b = append(b, current...)
	ends[4] = len(b)
	all := string(b)
	if len(vals) < len(ends) {
		vals = make([]string, len(ends))
	}
	start := 0
	for i, end := range ends {
		vals[i] = all[start:end]
		start = end
	}
	if ends[2] > 0 {
		h[HeaderLimit], h[HeaderRemaining], h[HeaderReset] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
	}
	h[HeaderRatePolicy], h[HeaderRateLimit] = vals[3:4:4], vals[4:5:5]
}

// shownRules counts the rules of d that the caller's headers show: those
// decided (d.Rules has their outcomes) that showRule accepts.
func shownRules(d limit.Decision, rules []limit.Rule) int {
	if len(d.Rules) != len(rules) {
		return 0
	}
	n := 0
	for i := range rules {
		if showRule(&rules[i]) {
			n++
		}
	}
	return n
}

// showRule reports whether a rule's state is the caller's to see: it
// enforces (a shadow rule limits nothing) and counts by something of the
// caller's own.
func showRule(r *limit.Rule) bool { return r.Private && !r.Shadow }

// appendItem appends one structured-field item `"name";<k>=<n>;<w|t>=<secs>`
// to a list; secs < 0 leaves out its parameter.
func appendItem(b []byte, name string, k byte, n, secs int64) []byte {
	if len(b) > 0 {
		b = append(b, ", "...)
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ';', k, '=')
	b = strconv.AppendInt(b, n, 10)
	if secs < 0 {
		return b
	}
	if k == 'q' {
		b = append(b, ";w="...)
	} else {
		b = append(b, ";t="...)
	}
	return strconv.AppendInt(b, secs, 10)
}

// ceilSeconds rounds d up to whole seconds, never below 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

// ceilUnix returns t in Unix epoch seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// setRetryAfter sets Retry-After to d in whole seconds, rounded up, at
// least 1.
func setRetryAfter(h http.Header, d time.Duration) {
	h[HeaderRetryAfter] = []string{strconv.FormatInt(max(ceilSeconds(d), 1), 10)}
}
