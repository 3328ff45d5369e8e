// Package usage is the admin's side of usage in the limiter Redis
// (docs/usage.md): the ledger's source of changed usage (Source), the
// restore of a limiter that lost its data (Restore), and the real-time
// reads and writes of GetUsage and UpdateUsage (Now, Usage,
// QuotaRemaining, SetRemaining). The gateway's side counts usage in the
// decisions themselves (package engine); both run the limiter script
// (package script) and name keys through package keyspace.
//
// One clock: every day and period here is decided on Redis time (TIME, or
// a test clock), never the admin node's, so the admin's "today" is the day
// the gateways count in, however far the node's clock is from Redis's.
package usage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/keyspace"
	"tollgate/plans"
	"tollgate/script"
)

// Options configures a Limiter; the zero value gives the defaults.
type Options struct {
	// Prefix of every Redis key name; "" means keyspace.DefaultPrefix.
	Prefix string
	// Clock replaces Redis TIME (tests); nil, or a zero time, means Redis
	// TIME.
	Clock func() time.Time
	// HoldFor is how long usage one Drain handed out stays held without an
	// Ack; 0 means DefaultHold.
	HoldFor time.Duration
}

// Limiter is the limiter Redis as the admin sees it. Safe for concurrent
// use; create it with New.
type Limiter struct {
	rdb     redis.UniversalClient
	keys    keyspace.Space
	clock   func() time.Time
	cluster bool
	holdFor time.Duration
	source  sourceState
}

// New returns the Limiter over rdb (one primary, Sentinel or Cluster).
func New(rdb redis.UniversalClient, opts Options) *Limiter {
	if opts.HoldFor <= 0 {
		opts.HoldFor = DefaultHold
	}
	_, cluster := rdb.(*redis.ClusterClient)
	return &Limiter{rdb: rdb, keys: keyspace.Space{Prefix: opts.Prefix}, clock: opts.Clock, cluster: cluster, holdFor: opts.HoldFor}
}

// limitsScript is the limiter script (package script's library).
var limitsScript = redis.NewScript(script.Source)

// clockArg returns the script's time argument: the test clock's time in
// Unix µs, or "" for Redis TIME.
func (l *Limiter) clockArg() string {
	if l.clock != nil {
		if t := l.clock(); !t.IsZero() {
			return strconv.FormatInt(t.UnixMicro(), 10)
		}
	}
	return ""
}

// Now returns the limiter's time: Redis TIME (or the test clock). Its UTC
// date is the day the gateways count usage in.
func (l *Limiter) Now(ctx context.Context) (time.Time, error) {
	if l.clock != nil {
		if t := l.clock(); !t.IsZero() {
			return t.UTC(), nil
		}
	}
	t, err := l.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("usage: limiter time: %w", err)
	}
	return t.UTC(), nil
}

// run runs op of the limiter script on keys (one slot) with the packed
// arguments args; NOSCRIPT loads the script and runs it again.
func (l *Limiter) run(ctx context.Context, keys []string, op string, args ...any) *redis.Cmd {
	argv := append([]any{op, l.clockArg()}, args...)
	cmd := limitsScript.EvalSha(ctx, l.rdb, keys, argv...)
	if again, err := redisscript.Reload(ctx, l.rdb, limitsScript, cmd.Err()); err != nil {
		failed := redis.NewCmd(ctx)
		failed.SetErr(err)
		return failed
	} else if again {
		return limitsScript.EvalSha(ctx, l.rdb, keys, argv...)
	}
	return cmd
}

// Usage returns the admitted requests of one key in one plan per UTC day
// and their cost units (Count; docs/cost.md: one per request unless the
// plan says otherwise), for every day from from's to to's UTC date inclusive, keyed
// "YYYY-MM-DD" (0 for a day without requests, and for days older than the
// 100 days the limiter keeps). to before from gives an empty map. Callers
// bound the range (GetUsage allows 90 days). Errors are wrapped.
func (l *Limiter) Usage(ctx context.Context, keyID, planID string, from, to time.Time) (map[string]plans.DayCount, error) {
	days := daysBetween(from, to)
	out := make(map[string]plans.DayCount, len(days))
	if len(days) == 0 {
		return out, nil
	}
	fields := make([]string, 0, 2*len(days))
	for _, d := range days {
		fields = append(fields, d, d+script.UsageExtra)
	}
	vals, err := l.rdb.HMGet(ctx, l.keys.Usage(keyID, planID), fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("usage of key %s: %w", keyID, err)
	}
	got := make(map[string]string, len(fields))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			got[fields[i]] = s
		}
	}
	parsed, err := script.ParseUsage(got)
	if err != nil {
		return nil, fmt.Errorf("usage of key %s: %w", keyID, err)
	}
	for _, d := range days {
		day, _ := time.Parse(plans.UsageDateLayout, d)
		out[d] = plans.DayCount{Day: day, Count: parsed[d].Units, Requests: parsed[d].Requests}
	}
	return out, nil
}

// daysBetween lists the UTC dates ("YYYY-MM-DD") from from to to inclusive.
func daysBetween(from, to time.Time) []string {
	var days []string
	for d, t := plans.UTCDate(from), plans.UTCDate(to); !d.After(t); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(plans.UsageDateLayout))
	}
	return days
}

// QuotaRemaining returns the requests left to keyID under q in the current
// period (Redis time), charging nothing. Errors are wrapped.
func (l *Limiter) QuotaRemaining(ctx context.Context, keyID, planID string, q plans.Quota) (int64, error) {
	r, err := l.quota(ctx, keyID, planID, q, false, 0)
	return r.Remaining, err
}

// SetRemaining sets the requests left to keyID under q in the current
// period (Redis time) to remaining clamped to 0..q.Limit (UpdateUsage
// "replace /remaining"). Later decisions count from there; a later period
// starts afresh. Errors are wrapped.
func (l *Limiter) SetRemaining(ctx context.Context, keyID, planID string, q plans.Quota, remaining int64) error {
	_, err := l.quota(ctx, keyID, planID, q, true, max(0, min(remaining, int64(q.Limit))))
	return err
}

// quota runs op "quota" for keyID's quota q. An anchored or zoned period
// goes as a table around the limiter's time (script.PeriodBounds): the
// admin's clock first, then the time a reply that missed gave.
func (l *Limiter) quota(ctx context.Context, keyID, planID string, q plans.Quota, set bool, remaining int64) (script.QuotaReply, error) {
	r, err := l.quotaOf(ctx, l.keys.Quota(keyID, planID), q, set, remaining)
	if err != nil {
		return r, fmt.Errorf("quota of key %s: %w", keyID, err)
	}
	return r, nil
}

// quotaOf runs op "quota" on the quota state key under q.
func (l *Limiter) quotaOf(ctx context.Context, key string, q plans.Quota, set bool, remaining int64) (script.QuotaReply, error) {
	code, _ := script.PeriodCode(q.Period)
	a := script.QuotaArgs{Limit: max(0, q.Limit), Period: code, Offset: uint8(min(max(q.Offset, 0), 255)), Remaining: remaining}
	if set {
		a.Set = 1
	}
	c := q.Calendar()
	at := time.Now()
	if l.clock != nil {
		if t := l.clock(); !t.IsZero() {
			at = t
		}
	}
	if !c.Plain() {
		a.Period, a.Offset = script.PeriodTable, 0
	}
	var r script.QuotaReply
	for range 3 {
		spec := a.Append(nil)
		if !c.Plain() {
			b := script.TableOf(c, at)
			spec = b.Append(spec)
		}
		reply, err := l.run(ctx, []string{key}, script.OpQuota, spec).Text()
		if err == nil {
			_, err = r.Decode(reply)
		}
		if err != nil {
			return r, err
		}
		if r.PeriodEndS != 0 {
			return r, nil
		}
		at = time.UnixMicro(r.NowUS)
	}
	return r, errors.New("the period table did not hold the limiter's time")
}

// CustomerQuota reads the customer quota (tollgate:customer-quota, limit
// units per q's period) of customerID in planID now, charging nothing.
// Errors are wrapped.
func (l *Limiter) CustomerQuota(ctx context.Context, customerID, planID string, q plans.Quota, limit int32) (plans.CustomerUsage, error) {
	q.Limit = limit
	r, err := l.quotaOf(ctx, l.keys.CustomerQuota(customerID, planID), q, false, 0)
	if err != nil {
		return plans.CustomerUsage{}, fmt.Errorf("customer quota of %s: %w", customerID, err)
	}
	return plans.CustomerUsage{Limit: int64(limit), Used: r.Used, Remaining: r.Remaining, Now: time.UnixMicro(r.NowUS).UTC(),
		PeriodStart: time.Unix(r.PeriodStartS, 0).UTC(), PeriodEnd: time.Unix(r.PeriodEndS, 0).UTC()}, nil
}
