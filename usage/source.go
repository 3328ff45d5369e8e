package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
	"tollgate/keyspace"
	"tollgate/plans"
	"tollgate/script"
)

// DefaultHold is Options.HoldFor's default: how long usage one Drain
// handed out stays held without an Ack before a later Drain (of any admin
// node) hands it out again.
const DefaultHold = time.Minute

// Source is the limiter's ledger.UsageSource: it hands the ledger's flush
// worker the (key, plan) pairs whose usage the limiter counted since they
// were last handed out, with their absolute day counts and quota state.
// Any number of admin nodes may drain one limiter at once: what one Drain
// takes stays held, on Redis time, until its Ack or until HoldFor ends,
// so nothing is lost when a node dies and nothing counted meanwhile is
// dropped. The change sets and holds behind it are described in
// docs/usage.md ("How the limiter knows what changed").
type Source struct{ l *Limiter }

// sourceState is a Limiter's drain position on Redis Cluster.
type sourceState struct {
	mu   sync.Mutex
	next int // the slot the next cluster drain starts at (fairness)
}

// Source returns the limiter's source of changed usage for the ledger's
// flush worker (package ledger).
func (l *Limiter) Source() *Source { return &Source{l: l} }

// held is one change set's part of a Drain token: the score of its hold.
type held struct {
	Set  string `json:"s"`
	Hold string `json:"h"`
}

// taken is what one hold run took from one change set.
type taken struct {
	set     string
	hold    string
	nowMS   int64
	members []string
	scores  []string // each member's score before the hold
}

// Drain implements ledger.UsageSource: up to limit observations of pairs
// whose usage changed, and a token to Ack them with. Errors are wrapped;
// after an error nothing stays held (see UsageSource).
func (s *Source) Drain(ctx context.Context, limit int) ([]plans.UsageObservation, string, error) {
	if limit < 1 {
		limit = 1
	}
	sets, err := s.readySets(ctx, limit)
	if err != nil {
		return nil, "", fmt.Errorf("engine: usage drain: %w", err)
	}
	if len(sets) == 0 {
		return nil, "", nil
	}
	takes, err := s.hold(ctx, sets)
	if err != nil {
		return nil, "", fmt.Errorf("engine: usage drain: %w", errors.Join(err, s.putBack(ctx, takes)))
	}
	obs, err := s.observe(ctx, takes)
	if err != nil {
		return nil, "", fmt.Errorf("engine: usage drain: %w", errors.Join(err, s.putBack(ctx, takes)))
	}
	var tok []held
	for _, t := range takes {
		if len(t.members) > 0 {
			tok = append(tok, held{Set: t.set, Hold: t.hold})
		}
	}
	if len(tok) == 0 {
		return obs, "", nil
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return nil, "", fmt.Errorf("engine: usage drain: %w", errors.Join(err, s.putBack(ctx, takes)))
	}
	return obs, string(b), nil
}

// Ack implements ledger.UsageSource: it ends the holds of token, removing
// the members still held by them.
func (s *Source) Ack(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	var tok []held
	if err := json.Unmarshal([]byte(token), &tok); err != nil {
		return fmt.Errorf("engine: usage ack: token: %w", err)
	}
	pipe := s.l.rdb.Pipeline()
	for _, h := range tok {
		pipe.ZRemRangeByScore(ctx, h.Set, h.Hold, h.Hold)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("engine: usage ack: %w", err)
	}
	return nil
}

// setLimit is one change set to hold in, with the most members to take.
type setLimit struct {
	set, holds string // the change set and the score of its last hold
	limit      int
}

// readySets returns the change sets to hold in and how many members to
// take from each, limit in all: the one set on one primary; on Redis
// Cluster the slots whose sets have ready members (a probe by the node's
// clock; the hold decides by Redis time), from a start that moves on
// between drains so no slot waits behind busier ones.
func (s *Source) readySets(ctx context.Context, limit int) ([]setLimit, error) {
	if !s.l.cluster {
		return []setLimit{{set: s.l.keys.UsageChanges(0), holds: s.l.keys.UsageHolds(0), limit: limit}}, nil
	}
	now, err := s.l.Now(ctx)
	if err != nil {
		return nil, err
	}
	max := strconv.FormatInt(now.UnixMilli()*1000, 10)
	counts := make([]*redis.IntCmd, keyspace.Slots)
	pipe := s.l.rdb.Pipeline()
	for slot := range counts {
		counts[slot] = pipe.ZCount(ctx, s.l.keys.UsageChanges(slot), "-inf", max)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	st := &s.l.source
	st.mu.Lock()
	start := st.next
	st.mu.Unlock()
	var out []setLimit
	left, last := limit, start
	for i := range keyspace.Slots {
		slot := (start + i) % keyspace.Slots
		n := int(counts[slot].Val())
		if n == 0 {
			continue
		}
		n = min(n, left)
		out = append(out, setLimit{set: s.l.keys.UsageChanges(slot), holds: s.l.keys.UsageHolds(slot), limit: n})
		left -= n
		last = slot
		if left == 0 {
			break
		}
	}
	st.mu.Lock()
	st.next = (last + 1) % keyspace.Slots
	st.mu.Unlock()
	return out, nil
}

// hold runs op "hold" on every set of sets, in one pipeline (NOSCRIPT:
// the script is loaded and the runs that got it are sent again). It
// returns what the runs took, also when some failed.
func (s *Source) hold(ctx context.Context, sets []setLimit) ([]taken, error) {
	cmds := make([]*redis.Cmd, len(sets))
	todo := make([]int, len(sets))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; ; attempt++ {
		pipe := s.l.rdb.Pipeline()
		for _, i := range todo {
			cmds[i] = limitsScript.EvalSha(ctx, pipe, []string{sets[i].set, sets[i].holds}, script.OpHold, s.l.clockArg(), sets[i].limit, s.l.holdFor.Milliseconds())
		}
		_, _ = pipe.Exec(ctx)
		var again []int
		var noScript error
		for _, i := range todo {
			if redisscript.IsNoScript(cmds[i].Err()) {
				again, noScript = append(again, i), cmds[i].Err()
			}
		}
		if len(again) == 0 || attempt > 0 {
			break
		}
		if _, err := redisscript.Reload(ctx, s.l.rdb, limitsScript, noScript); err != nil {
			return nil, err
		}
		todo = again
	}
	var out []taken
	var errs error
	for i, cmd := range cmds {
		vals, err := cmd.StringSlice()
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("hold in %s: %w", sets[i].set, err))
			continue
		}
		if len(vals) < 2 {
			continue
		}
		t := taken{set: sets[i].set, hold: vals[0]}
		if t.nowMS, err = strconv.ParseInt(vals[1], 10, 64); err != nil {
			errs = errors.Join(errs, fmt.Errorf("hold in %s: time %q", sets[i].set, vals[1]))
		}
		for j := 2; j+1 < len(vals); j += 2 {
			t.members, t.scores = append(t.members, vals[j]), append(t.scores, vals[j+1])
		}
		out = append(out, t)
	}
	return out, errs
}

// putBack gives the members of takes their earlier scores (ZADD XX LT:
// a member acknowledged meanwhile is not added, one counted again keeps
// its day), so the next Drain hands them out again.
func (s *Source) putBack(ctx context.Context, takes []taken) error {
	if len(takes) == 0 {
		return nil
	}
	// context.WithoutCancel: the drain may have failed on ctx's deadline
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	pipe := s.l.rdb.Pipeline()
	for _, t := range takes {
		for i, m := range t.members {
			score, _ := strconv.ParseFloat(t.scores[i], 64)
			pipe.ZAddArgs(ctx, t.set, redis.ZAddArgs{XX: true, LT: true, Members: []redis.Z{{Score: score, Member: m}}})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("put back (their holds end after %v): %w", s.l.holdFor, err)
	}
	return nil
}

// maxDayScore is the highest score of a member marked by a day (days
// since 1970-01-01); a higher one is a hold.
const maxDayScore = 1 << 30

// observe reads the day counts and quota states of what takes took, in
// one pipeline.
func (s *Source) observe(ctx context.Context, takes []taken) ([]plans.UsageObservation, error) {
	type read struct {
		obs   plans.UsageObservation
		days  []string
		hmget *redis.SliceCmd
		all   *redis.MapStringStringCmd
		quota *redis.StringCmd
	}
	var reads []*read
	pipe := s.l.rdb.Pipeline()
	for _, t := range takes {
		today := plans.UTCDate(time.UnixMilli(t.nowMS))
		for i, m := range t.members {
			keyID, planID, ok := s.l.keys.ParseUsage(m)
			if !ok {
				continue // not a usage hash of this prefix: acknowledged with the rest
			}
			r := &read{obs: plans.UsageObservation{KeyID: keyID, PlanID: planID}}
			score, err := strconv.ParseFloat(t.scores[i], 64)
			if err == nil && score <= maxDayScore {
				from := time.Unix(int64(score)*86400, 0).UTC()
				if from.After(today) {
					from = today
				}
				if from.Before(today.AddDate(0, 0, -usageKeepDays)) {
					from = today.AddDate(0, 0, -usageKeepDays)
				}
				r.days = daysBetween(from, today)
				fields := make([]string, 0, 2*len(r.days))
				for _, d := range r.days {
					fields = append(fields, d, d+script.UsageExtra)
				}
				r.hmget = pipe.HMGet(ctx, m, fields...)
			} else {
				r.all = pipe.HGetAll(ctx, m) // the mark's day was lost with an ended hold
			}
			r.quota = pipe.Get(ctx, s.l.keys.Quota(keyID, planID))
			reads = append(reads, r)
		}
	}
	if len(reads) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]plans.UsageObservation, 0, len(reads))
	for _, r := range reads {
		fields := map[string]string{}
		if r.hmget != nil {
			for i, v := range r.hmget.Val() {
				if str, ok := v.(string); ok {
					fields[r.hmget.Args()[2+i].(string)] = str
				}
			}
		} else {
			fields = r.all.Val()
		}
		days, err := script.ParseUsage(fields)
		if err != nil {
			return nil, fmt.Errorf("usage of key %s: %w", r.obs.KeyID, err)
		}
		for day, u := range days {
			d, err := time.Parse(plans.UsageDateLayout, day)
			if err != nil {
				continue // not a day
			}
			r.obs.Days = append(r.obs.Days, plans.DayCount{Day: d, Count: u.Units, Requests: u.Requests})
		}
		if q, ok := decodeQuota(r.quota.Val()); ok {
			r.obs.Quota = &q
		}
		out = append(out, r.obs)
	}
	return out, nil
}

// usageKeepDays is how many days back the limiter keeps usage days
// (script/lua/usage.lua's USAGE_KEEP_DAYS).
const usageKeepDays = 100

// decodeQuota reads a stored quota state (script.QuotaState); ok is false
// for anything else.
func decodeQuota(v string) (plans.QuotaCount, bool) {
	var q script.QuotaState
	if _, err := q.Decode(v); err != nil || len(v) != script.QuotaStateSize {
		return plans.QuotaCount{}, false
	}
	return plans.QuotaCount{PeriodStart: time.Unix(int64(q.PeriodStartS), 0).UTC(), Count: int64(q.Used), Seq: int64(q.Seq)}, true
}
