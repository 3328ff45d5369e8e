package main

import (
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// naiveScript is the naive peer's limiter: three token buckets (the key's
// plan bucket, the stage method bucket, the account bucket) and a monthly
// quota counter, all or nothing, on Redis TIME; one EVALSHA per request.
// Each bucket is a hash of tokens and the time they were counted at,
// expiring when idle; the quota is a counter per key and month.
//
//	KEYS  1..3 bucket hashes, 4 the quota counter
//	ARGV  1..6 rate (tokens/s) and burst of each bucket, 7 quota limit,
//	      8 the quota counter's TTL (s)
//	reply {1, 0} admitted; {0, i} refused by bucket i (4: the quota)
var naiveScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local left = {}
for i = 1, 3 do
  local rate, burst = tonumber(ARGV[2*i-1]), tonumber(ARGV[2*i])
  local s = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local tokens = tonumber(s[1]) or burst
  local at = tonumber(s[2]) or now
  tokens = math.min(burst, tokens + (now - at) * rate / 1000000)
  if tokens < 1 then return {0, i} end
  left[i] = tokens - 1
end
local used = tonumber(redis.call('GET', KEYS[4]) or '0')
if used >= tonumber(ARGV[7]) then return {0, 4} end
for i = 1, 3 do
  redis.call('HSET', KEYS[i], 'tokens', left[i], 'at', now)
  redis.call('PEXPIRE', KEYS[i], 60000)
end
if redis.call('INCR', KEYS[4]) == 1 then redis.call('EXPIRE', KEYS[4], ARGV[8]) end
return {1, 0}
`)

// limits are the naive limiter's limits (flags; by default the bench's
// configuration, cmd/bench/setup.go).
type limits struct {
	PlanRate, PlanBurst       float64
	StageRate, StageBurst     float64
	AccountRate, AccountBurst float64
	Quota                     int64
}

// naive is the naive peer: it admits a request whose x-api-key is one of
// its keys only when the script admits it (403 for another key, 429 when
// refused, 503 when Redis fails), then hands it to next.
type naive struct {
	rdb    redis.UniversalClient
	prefix string // of every Redis key: "naive:", or "{naive}:" on a cluster (one slot)
	keys   map[string]bool
	limits limits
	argv   []any // the script's ARGV but the quota TTL (the same for every request)
	next   http.Handler
}

// newNaive returns the naive limiter over rdb in front of next; tag is a
// hash tag every Redis key carries ("" for none).
func newNaive(rdb redis.UniversalClient, tag string, keys []string, l limits, next http.Handler) *naive {
	n := &naive{rdb: rdb, prefix: tag + "naive:", keys: map[string]bool{}, limits: l, next: next,
		argv: []any{l.PlanRate, l.PlanBurst, l.StageRate, l.StageBurst, l.AccountRate, l.AccountBurst, l.Quota}}
	for _, k := range keys {
		n.keys[k] = true
	}
	return n
}

func (n *naive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("x-api-key")
	if !n.keys[key] {
		http.Error(w, `{"message":"Forbidden"}`, http.StatusForbidden)
		return
	}
	now := time.Now().UTC()
	month := now.Format("200601")
	end := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	p := n.prefix
	keys := []string{p + "plan:" + key, p + "stage:" + r.Method + r.URL.Path, p + "account", p + "quota:" + key + ":" + month}
	argv := append(n.argv[:len(n.argv):len(n.argv)], int64(end.Sub(now)/time.Second)+3600)
	res, err := naiveScript.Run(r.Context(), n.rdb, keys, argv...).Int64Slice()
	switch {
	case err != nil:
		http.Error(w, `{"message":"Service Unavailable"}`, http.StatusServiceUnavailable)
	case res[0] != 1:
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"message":"Too Many Requests","limit":`+strconv.FormatInt(res[1], 10)+`}`, http.StatusTooManyRequests)
	default:
		n.next.ServeHTTP(w, r)
	}
}
