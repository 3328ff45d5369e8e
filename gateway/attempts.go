package gateway

import (
	"hash/maphash"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Failed key attempts per client address (DESIGN.md 4.2): a local token
// bucket per address, refilled at FailedKeyRate per second up to
// FailedKeyBurst; each refused key takes a token, and an address with no
// token left gets 429 before any key lookup.
const (
	FailedKeyRate  = 20.0
	FailedKeyBurst = 40.0
	// maxFailedAddrs bounds the addresses remembered per shard; a full
	// shard first forgets addresses whose bucket has refilled, then any.
	maxFailedAddrs = 4096
	failedShards   = 16
)

// attempts limits failed key attempts per client address. It is safe for
// concurrent use; the zero value is not: use newAttempts.
type attempts struct {
	seed   maphash.Seed
	shards [failedShards]attemptShard
	now    func() time.Time
}

type attemptShard struct {
	mu      sync.Mutex
	buckets map[netip.Addr]*attemptBucket
}

// attemptBucket is a token bucket: tokens at instant at.
type attemptBucket struct {
	tokens float64
	at     time.Time
}

func newAttempts(now func() time.Time) *attempts {
	a := &attempts{seed: maphash.MakeSeed(), now: now}
	for i := range a.shards {
		a.shards[i].buckets = map[netip.Addr]*attemptBucket{}
	}
	return a
}

func (a *attempts) shard(addr netip.Addr) *attemptShard {
	b := addr.As16()
	return &a.shards[maphash.Bytes(a.seed, b[:])%failedShards]
}

// blocked reports whether addr has no failed attempt left, and if so how
// long until it has one again.
func (a *attempts) blocked(addr netip.Addr) (bool, time.Duration) {
	s := a.shard(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[addr]
	if b == nil {
		return false, 0
	}
	tokens := refill(b, a.now())
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - tokens) / FailedKeyRate * float64(time.Second))
}

// fail takes one token from addr's bucket.
func (a *attempts) fail(addr netip.Addr) {
	s := a.shard(addr)
	now := a.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[addr]
	if b == nil {
		if len(s.buckets) >= maxFailedAddrs {
			s.evict(now)
		}
		b = &attemptBucket{tokens: FailedKeyBurst, at: now}
		s.buckets[addr] = b
	}
	b.tokens = math.Max(refill(b, now)-1, 0)
	b.at = now
}

// refill returns b's tokens at now.
func refill(b *attemptBucket, now time.Time) float64 {
	return math.Min(FailedKeyBurst, b.tokens+now.Sub(b.at).Seconds()*FailedKeyRate)
}

// evict forgets addresses whose bucket is full again; if none is, it
// forgets half of the shard (map order is random enough).
func (s *attemptShard) evict(now time.Time) {
	for addr, b := range s.buckets {
		if refill(b, now) >= FailedKeyBurst {
			delete(s.buckets, addr)
		}
	}
	for addr := range s.buckets {
		if len(s.buckets) < maxFailedAddrs/2 {
			return
		}
		delete(s.buckets, addr)
	}
}
