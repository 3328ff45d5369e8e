package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/keyspace"
	"tollgate/limit"
	"tollgate/script"
)

// batchRequests derives up to 40 requests from data over three API keys
// and two stages, with limits that change between requests (so states are
// rebased mid-batch), rate 0, fractional rates, burst 0, quotas of each
// period, and requests without a quota or usage.
func batchRequests(k keyspace.Space, data []byte) []*keyedRequest {
	rates := []float64{0, 0.001, 1, 10.0 / 13, 2.5, 1000}
	bursts := []int32{0, 1, 2, 3, 5, 40}
	periods := []uint8{script.PeriodDay, script.PeriodWeek, script.PeriodMonth}
	var reqs []*keyedRequest
	for i := 0; i+3 < len(data) && len(reqs) < 40; i += 4 {
		a, b, c, d := data[i], data[i+1], data[i+2], data[i+3]
		key := fmt.Sprintf("key%d", a%3)
		plan := "p" + strconv.Itoa(int(a/3)%2)
		stage := "s" + strconv.Itoa(int(b)%2)
		req := &keyedRequest{Buckets: []keyedBucket{
			{Key: k.PlanBucket(key, plan), RateLimit: rates[int(b/2)%len(rates)], BurstLimit: bursts[int(c)%len(bursts)], Level: limit.LevelPlan},
			{Key: k.StageBucket("api", stage, "GET", "/x"), RateLimit: rates[int(c/8)%len(rates)], BurstLimit: bursts[int(d)%len(bursts)] + 3, Level: limit.LevelStage},
			{Key: k.AccountBucket(), RateLimit: 1000, BurstLimit: 30, Level: limit.LevelAccount},
		}}
		if d&0x10 == 0 {
			req.Quota = &keyedQuota{Key: k.Quota(key, plan), Limit: int32(d>>5) + 1, Period: periods[int(d)%3], Offset: c % 7}
		}
		if d&0x08 == 0 {
			req.UsageKey = k.Usage(key, plan)
		}
		if a&0x80 != 0 { // no plan bucket: the stage bucket decides alone
			req.Buckets = req.Buckets[1:]
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// runBatch decides reqs in one script run at now and returns the raw
// replies.
func runBatch(t testing.TB, l *Engine, now time.Time, reqs []*keyedRequest) []script.DecisionReply {
	t.Helper()
	a := newRunArgs()
	for _, r := range reqs {
		if r.Want == 0 {
			r.Want = 1
		}
		a.addDecision(r, nil, rulesAt{}, customerAt{}, 0)
	}
	keys, args, _ := a.build(runOpts{clock: strconv.FormatInt(now.UnixMicro(), 10), changes: l.r.changes0})
	reply, err := runOnce(context.Background(), l.r.rdb, keys, args).Text()
	if err != nil {
		t.Fatalf("batch run: %v", err)
	}
	rr, err := decodeRunReply(reply, len(reqs), 0)
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	return rr.decisions
}

// FuzzBatchEqualsSequential: a batch decides exactly as its requests
// decided one by one, each alone in its own script run, in order: the
// same replies and the same stored states, usage counts and TTLs.
func FuzzBatchEqualsSequential(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x00\x01\x02\x03\x00\x01\x02\x03\x00\x01\x02\x03"), uint32(1500))
	f.Add([]byte("\x81\x07\x05\x00\x01\x02\x01\x00\x02\x0b\x04\x20\x00\x0b\x04\x20\x00\x0b\x04\x20\x00\x0b\x04\x20"), uint32(0))
	f.Add([]byte("\x05\x09\x01\xe0\x05\x09\x01\xe0\x05\x09\x01\xe0\x05\x03\x01\xe0\x05\x09\x02\xf0\x05\x09\x01\xe0"), uint32(86_400_000))
	f.Add([]byte("\x06\x04\x03\x02\x07\x04\x03\x02\x08\x04\x03\x02\x06\x05\x03\x02\x06\x04\x03\x12\x06\x04\x03\x0a"), uint32(400))
	rdb, prefix := redistest.MustClient(f) // its cleanup deletes every sub-prefix
	var n atomic.Int64
	start := time.Date(2026, 2, 28, 23, 59, 59, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte, stepMS uint32) {
		i := n.Add(1)
		batched := New(rdb, Options{Prefix: fmt.Sprintf("%s:%db", prefix, i), Timeout: testTimeout})
		single := New(rdb, Options{Prefix: fmt.Sprintf("%s:%ds", prefix, i), Timeout: testTimeout})
		bReqs, sReqs := batchRequests(batched.r.keys, data), batchRequests(single.r.keys, data)
		if len(bReqs) == 0 {
			return
		}
		// two rounds: from absent state, then from the state the first left
		for round, now := range []time.Time{start, start.Add(time.Duration(stepMS) * time.Millisecond)} {
			got := runBatch(t, batched, now, bReqs)
			for i, r := range sReqs {
				want := runBatch(t, single, now, []*keyedRequest{r})[0]
				if got[i] != want {
					t.Fatalf("round %d request %d: batch %v, alone %v", round, i, got[i], want)
				}
			}
			compareStores(t, batched, single, bReqs, sReqs)
		}
	})
}

// compareStores checks that every key the requests name holds the same
// value in both stores, with TTLs within a second of each other. A quota
// TTL ends at a fixed moment in Redis time (period end + 1 h): the script
// keeps it (KEEPTTL) rather than setting it again from the script's now,
// and the two agree only when now is Redis's own clock, which the test's
// fixed times are not; for quotas both TTLs must only be set.
func compareStores(t *testing.T, a, b *Engine, aReqs, bReqs []*keyedRequest) {
	t.Helper()
	ctx := context.Background()
	names := func(r *keyedRequest) []string {
		var n []string
		for _, bk := range r.Buckets {
			n = append(n, bk.Key)
		}
		if r.Quota != nil {
			n = append(n, r.Quota.Key)
		}
		if r.UsageKey != "" {
			n = append(n, r.UsageKey)
		}
		return n
	}
	for i := range aReqs {
		an, bn := names(aReqs[i]), names(bReqs[i])
		for j := range an {
			av, aerr := a.r.rdb.Dump(ctx, an[j]).Result()
			bv, berr := b.r.rdb.Dump(ctx, bn[j]).Result()
			if (aerr == nil) != (berr == nil) || av != bv {
				t.Fatalf("%s: batch %q (%v), alone %q (%v)", an[j], av, aerr, bv, berr)
			}
			at, _ := a.r.rdb.PTTL(ctx, an[j]).Result()
			bt, _ := b.r.rdb.PTTL(ctx, bn[j]).Result()
			if j == len(aReqs[i].Buckets) && aReqs[i].Quota != nil {
				if (at <= 0 || bt <= 0) && aerr == nil { // -2 ns: absent in both (DUMP agreed)
					t.Fatalf("%s: TTL batch %v, alone %v, want both set", an[j], at, bt)
				}
				continue
			}
			if d := at - bt; d > time.Second || d < -time.Second {
				t.Fatalf("%s: TTL batch %v, alone %v", an[j], at, bt)
			}
		}
	}
}

// A panic while a batch is sent fails that batch's calls with an error and
// leaves the batcher usable.
func TestAlongPanicFailsBatch(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	req := nodeRequest(l, "k1", 1, 5, 10)
	for range maxFlushers + 1 {
		_, err := l.decideKeyed(t.Context(), req, func(context.Context, redis.Pipeliner) { panic("along broke") })
		if err == nil || !strings.Contains(err.Error(), "along broke") {
			t.Fatalf("decideKeyed: got %v, want the panic as an error", err)
		}
	}
	if d, err := l.decideKeyed(t.Context(), req, nil); err != nil || !d.Allowed {
		t.Fatalf("Decide after the panics: got %+v, %v, want admitted", d, err)
	}
	// The flusher goroutine leaves once it finds the queue empty, just
	// after it woke the caller.
	flushers := func() int {
		l.batch.mu.Lock()
		defer l.batch.mu.Unlock()
		return l.batch.flushers
	}
	if _, ok := waittest.Poll(5*time.Second, func() bool { return flushers() == 0 }); !ok {
		t.Fatalf("flushers after the panics: %d, want 0", flushers())
	}
}

// A usage or quota key of another type (not written by tollgate) does not
// fail the other decisions of its batch: the quota counts as absent and is
// replaced, the usage count of that key is lost.
func TestWrongTypeKeysDoNotFailBatch(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	ctx := t.Context()
	bad := nodeRequest(l, "bad", 1, 5, 10)
	if err := l.r.rdb.Set(ctx, bad.UsageKey, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.r.rdb.RPush(ctx, bad.Quota.Key, "x").Err(); err != nil {
		t.Fatal(err)
	}
	good := nodeRequest(l, "good", 1, 5, 10)
	got := runBatch(t, l, time.Now(), []*keyedRequest{good, bad})
	for i, r := range got {
		if r.Allowed != 1 || r.QuotaLeft != 9 {
			t.Fatalf("decision %d: %v, want admitted with 9 left", i, r)
		}
	}
	if n := l.usageToday(t, "good", "p1"); n != 1 {
		t.Fatalf("usage of the good key today: %d, want 1", n)
	}
}

// A batch may name more keys than one Lua unpack takes (about 8000).
func TestBatchOfManyKeys(t *testing.T) {
	t.Parallel()
	l := mustLimiter(t)
	k := l.r.keys
	var reqs []*keyedRequest
	for i := range 40 {
		r := &keyedRequest{}
		for j := range maxBuckets {
			r.Buckets = append(r.Buckets, keyedBucket{Key: k.PlanBucket(strconv.Itoa(i*maxBuckets+j), "p"), RateLimit: 1, BurstLimit: 1, Level: limit.LevelStage})
		}
		reqs = append(reqs, r)
	}
	for i, r := range runBatch(t, l, time.Now(), reqs) {
		if r.Allowed != 1 {
			t.Fatalf("decision %d: %+v, want admitted", i, r)
		}
	}
}
