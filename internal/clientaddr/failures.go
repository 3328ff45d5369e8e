package clientaddr

import (
	"hash/maphash"
	"math"
	"net/netip"
	"sync"
	"time"
)

// shards of a Failures; each remembers at most maxAddrs/shards addresses.
const shards = 16

// Failures limits failed attempts per client address: a local token bucket
// per address, Burst tokens refilled at Rate per second; each failure takes
// a token, and an address with no token left is Blocked until one has
// refilled. Memory is bounded: a full shard first forgets addresses whose
// bucket has refilled, then half of the others. Safe for concurrent use;
// create it with NewFailures.
type Failures struct {
	rate, burst float64
	perShard    int
	now         func() time.Time
	seed        maphash.Seed
	shards      [shards]failureShard
}

type failureShard struct {
	mu      sync.RWMutex // Blocked, on every keyed request, only reads
	buckets map[netip.Addr]*bucket
}

// bucket is a token bucket: tokens at instant at.
type bucket struct {
	tokens float64
	at     time.Time
}

// NewFailures returns a limiter of burst failures per address, refilled at
// rate per second, remembering about maxAddrs addresses, on the clock now
// (time.Now when nil).
func NewFailures(rate, burst float64, maxAddrs int, now func() time.Time) *Failures {
	if now == nil {
		now = time.Now
	}
	f := &Failures{rate: rate, burst: burst, perShard: max(1, maxAddrs/shards), now: now, seed: maphash.MakeSeed()}
	for i := range f.shards {
		f.shards[i].buckets = map[netip.Addr]*bucket{}
	}
	return f
}

func (f *Failures) shard(addr netip.Addr) *failureShard {
	b := addr.As16()
	return &f.shards[maphash.Bytes(f.seed, b[:])%shards]
}

// Blocked reports whether addr has no failure left, and if so how long
// until it has one again.
func (f *Failures) Blocked(addr netip.Addr) (bool, time.Duration) {
	s := f.shard(addr)
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := s.buckets[addr]
	if b == nil {
		return false, 0
	}
	tokens := f.refill(b, f.now())
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - tokens) / f.rate * float64(time.Second))
}

// Fail takes one token from addr's bucket.
func (f *Failures) Fail(addr netip.Addr) {
	s := f.shard(addr)
	now := f.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[addr]
	if b == nil {
		if len(s.buckets) >= f.perShard {
			f.evict(s, now)
		}
		b = &bucket{tokens: f.burst, at: now}
		s.buckets[addr] = b
	}
	b.tokens = math.Max(f.refill(b, now)-1, 0)
	b.at = now
}

// refill returns b's tokens at now.
func (f *Failures) refill(b *bucket, now time.Time) float64 {
	return math.Min(f.burst, b.tokens+now.Sub(b.at).Seconds()*f.rate)
}

// evict forgets s's addresses whose bucket is full again; if that leaves
// the shard more than half full, it forgets others (map order is random
// enough) down to half.
func (f *Failures) evict(s *failureShard, now time.Time) {
	for addr, b := range s.buckets {
		if f.refill(b, now) >= f.burst {
			delete(s.buckets, addr)
		}
	}
	for addr := range s.buckets {
		if len(s.buckets) < f.perShard/2 {
			return
		}
		delete(s.buckets, addr)
	}
}
