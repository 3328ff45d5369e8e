// Package ledgertest gives tests a ledger.UsageSource on the real test
// Redis, so the flush path (source, ledger.Flusher, PostgreSQL, GetUsage,
// exports) is tested end to end. It is not the limiter's source: tests
// write usage into it with Count and SetQuota, as the limiter would.
package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/plans"
	"tollgate/script"
)

// RedisSource is a ledger.UsageSource on Redis, under a test's key prefix:
//
//	<prefix>:usage:{<keyId>}:<planId>  hash: "YYYY-MM-DD" → absolute count of that UTC day
//	<prefix>:quota:{<keyId>}:<planId>  hash: start (Unix seconds), count, seq
//	<prefix>:dirty                      set of "<keyId> <planId>" changed since handed out
//	<prefix>:held:<token>               set of the pairs one Drain handed out, until Ack
//	<prefix>:holds                      zset of the tokens not yet acknowledged, scored by
//	                                    the Unix milliseconds (Redis time) their hold ends
//
// Drain first puts the pairs of expired holds back into dirty, then moves
// up to limit pairs from dirty to a new held set, in one script (so a pair
// is never lost between the two), and reads their hashes; when that read
// fails it puts the pairs back before it returns the error. Ack deletes
// the held set; Requeue puts every held pair back at once, as the end of
// every lease would after a worker died. The script builds held keys from
// the prefix, so the source runs on one Redis server, not a Cluster. It is
// safe for concurrent use.
type RedisSource struct {
	rdb    redis.UniversalClient
	prefix string
	// HoldFor is how long what one Drain handed out stays held without an
	// Ack before a later Drain hands it out again; default DefaultHoldFor.
	HoldFor time.Duration
}

// DefaultHoldFor is RedisSource.HoldFor's default.
const DefaultHoldFor = time.Minute

// MustRedisSource returns a RedisSource on a fresh key prefix of the test
// Redis (deleted at cleanup); it fails tb when Redis does not answer.
func MustRedisSource(tb testing.TB) *RedisSource {
	tb.Helper()
	rdb, prefix := redistest.MustClient(tb)
	return NewRedisSource(rdb, prefix)
}

// NewRedisSource returns a RedisSource on rdb under prefix.
func NewRedisSource(rdb redis.UniversalClient, prefix string) *RedisSource {
	return &RedisSource{rdb: rdb, prefix: prefix}
}

func (s *RedisSource) usageKey(keyID, planID string) string {
	return s.prefix + ":usage:{" + keyID + "}:" + planID
}

func (s *RedisSource) quotaKey(keyID, planID string) string {
	return s.prefix + ":quota:{" + keyID + "}:" + planID
}

func (s *RedisSource) dirtyKey() string { return s.prefix + ":dirty" }
func (s *RedisSource) holdsKey() string { return s.prefix + ":holds" }
func (s *RedisSource) heldKey(token string) string {
	return s.prefix + ":held:" + token
}

// Count adds n admitted requests of keyID in planID on day's UTC date and
// marks the pair changed, in one transaction.
func (s *RedisSource) Count(ctx context.Context, keyID, planID string, day time.Time, n int64) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, s.usageKey(keyID, planID), plans.UTCDate(day).Format(plans.UsageDateLayout), n)
		p.SAdd(ctx, s.dirtyKey(), keyID+" "+planID)
		return nil
	})
	return err
}

// SetQuota sets the quota state of keyID in planID and marks the pair
// changed.
func (s *RedisSource) SetQuota(ctx context.Context, keyID, planID string, q plans.QuotaCount) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.quotaKey(keyID, planID), "start", q.PeriodStart.Unix(), "count", q.Count, "seq", q.Seq)
		p.SAdd(ctx, s.dirtyKey(), keyID+" "+planID)
		return nil
	})
	return err
}

// holdScript puts the pairs of the holds in the zset KEYS[3] that ended
// (score <= now, Redis time in ms) back into the dirty set KEYS[1] (held
// sets are named ARGV[3] .. ':held:' .. token), then moves up to ARGV[1]
// members of KEYS[1] into the held set KEYS[2] and records ARGV[2] (the
// token) in KEYS[3] with the deadline now + ARGV[4] ms; it returns the
// members moved.
var holdScript = redis.NewScript(`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _, ended in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  local held = ARGV[3] .. ':held:' .. ended
  local back = redis.call('SMEMBERS', held)
  if #back > 0 then
    redis.call('SADD', KEYS[1], unpack(back))
  end
  redis.call('DEL', held)
  redis.call('ZREM', KEYS[3], ended)
end
local pairs = redis.call('SPOP', KEYS[1], ARGV[1])
if #pairs > 0 then
  redis.call('SADD', KEYS[2], unpack(pairs))
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[2])
end
return pairs`)

// Drain implements ledger.UsageSource: it hands out up to limit changed
// pairs with every day count and the quota state they have. On error
// nothing stays held: pairs it took are put back (and should that fail
// too, their hold ends after HoldFor).
func (s *RedisSource) Drain(ctx context.Context, limit int) ([]plans.UsageObservation, string, error) {
	token := newToken()
	holdFor := s.HoldFor
	if holdFor <= 0 {
		holdFor = DefaultHoldFor
	}
	keys := []string{s.dirtyKey(), s.heldKey(token), s.holdsKey()}
	pairs, err := holdScript.Run(ctx, s.rdb, keys, limit, token, s.prefix, holdFor.Milliseconds()).StringSlice()
	if err != nil || len(pairs) == 0 {
		return nil, "", err
	}
	obs, err := s.observe(ctx, pairs)
	if err != nil {
		return nil, "", errors.Join(err, s.requeue(ctx, token))
	}
	return obs, token, nil
}

// observe reads the hashes of pairs ("<keyId> <planId>").
func (s *RedisSource) observe(ctx context.Context, pairs []string) ([]plans.UsageObservation, error) {
	days := make([]*redis.MapStringStringCmd, len(pairs))
	quotas := make([]*redis.MapStringStringCmd, len(pairs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pair := range pairs {
			keyID, planID, _ := strings.Cut(pair, " ")
			days[i], quotas[i] = p.HGetAll(ctx, s.usageKey(keyID, planID)), p.HGetAll(ctx, s.quotaKey(keyID, planID))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]plans.UsageObservation, len(pairs))
	for i, pair := range pairs {
		keyID, planID, _ := strings.Cut(pair, " ")
		out[i] = plans.UsageObservation{KeyID: keyID, PlanID: planID}
		if out[i].Days, err = dayCounts(days[i].Val()); err != nil {
			return nil, err
		}
		if out[i].Quota, err = quotaCount(quotas[i].Val()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func dayCounts(h map[string]string) ([]plans.DayCount, error) {
	days, err := script.ParseUsage(h)
	if err != nil {
		return nil, fmt.Errorf("ledgertest: %w", err)
	}
	var out []plans.DayCount
	for day, u := range days {
		d, err := time.Parse(plans.UsageDateLayout, day)
		if err != nil {
			return nil, fmt.Errorf("ledgertest: usage day %q: %w", day, err)
		}
		out = append(out, plans.DayCount{Day: d, Count: u.Units, Requests: u.Requests})
	}
	return out, nil
}

func quotaCount(h map[string]string) (*plans.QuotaCount, error) {
	if len(h) == 0 {
		return nil, nil
	}
	var v [3]int64
	for i, f := range []string{"start", "count", "seq"} {
		n, err := strconv.ParseInt(h[f], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ledgertest: quota %s %q: %w", f, h[f], err)
		}
		v[i] = n
	}
	return &plans.QuotaCount{PeriodStart: time.Unix(v[0], 0).UTC(), Count: v[1], Seq: v[2]}, nil
}

// Ack implements ledger.UsageSource: it forgets what token held.
func (s *RedisSource) Ack(ctx context.Context, token string) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.heldKey(token))
		p.ZRem(ctx, s.holdsKey(), token)
		return nil
	})
	return err
}

// Requeue marks every held pair changed again and drops the holds, as the
// end of their lease would after the worker that drained them died.
func (s *RedisSource) Requeue(ctx context.Context) error {
	tokens, err := s.rdb.ZRange(ctx, s.holdsKey(), 0, -1).Result()
	if err != nil {
		return err
	}
	for _, tok := range tokens {
		if err := s.requeue(ctx, tok); err != nil {
			return err
		}
	}
	return nil
}

// requeue marks the pairs token holds changed again and drops the hold.
func (s *RedisSource) requeue(ctx context.Context, token string) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SUnionStore(ctx, s.dirtyKey(), s.dirtyKey(), s.heldKey(token))
		p.Del(ctx, s.heldKey(token))
		p.ZRem(ctx, s.holdsKey(), token)
		return nil
	})
	return err
}

// Held returns the number of pairs handed out and not acknowledged.
func (s *RedisSource) Held(ctx context.Context) (int64, error) {
	tokens, err := s.rdb.ZRange(ctx, s.holdsKey(), 0, -1).Result()
	var n int64
	for _, tok := range tokens {
		if err != nil {
			break
		}
		var c int64
		c, err = s.rdb.SCard(ctx, s.heldKey(tok)).Result()
		n += c
	}
	return n, err
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
