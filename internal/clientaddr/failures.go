package clientaddr

import (
	"math"
	"net/netip"
	"time"

	"tollgate/internal/shardmap"
)

// Failures limits failed attempts per client address: a local token bucket
// per address, Burst tokens refilled at Rate per second; each failure takes
// a token, and an address with no token left is Blocked until one has
// refilled. Memory is bounded (a shardmap.Map): a full shard first forgets
// addresses whose bucket has refilled, then half of the others. Safe for
// concurrent use; create it with NewFailures.
type Failures struct {
	rate, burst float64
	now         func() time.Time
	buckets     *shardmap.Map[netip.Addr, *bucket] // Blocked, on every keyed request, only reads
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
	return &Failures{rate: rate, burst: burst, now: now, buckets: shardmap.New[netip.Addr, *bucket](maxAddrs)}
}

// Blocked reports whether addr has no failure left, and if so how long
// until it has one again.
func (f *Failures) Blocked(addr netip.Addr) (blocked bool, wait time.Duration) {
	f.buckets.Read(addr, func(b *bucket, ok bool) {
		if !ok {
			return
		}
		if tokens := f.refill(b, f.now()); tokens < 1 {
			blocked, wait = true, time.Duration((1-tokens)/f.rate*float64(time.Second))
		}
	})
	return blocked, wait
}

// Fail takes one token from addr's bucket.
func (f *Failures) Fail(addr netip.Addr) {
	now := f.now()
	f.buckets.Update(addr, func(buckets map[netip.Addr]*bucket, capacity int) {
		b := buckets[addr]
		if b == nil {
			if len(buckets) >= capacity {
				f.evict(buckets, capacity, now)
			}
			b = &bucket{tokens: f.burst, at: now}
			buckets[addr] = b
		}
		b.tokens = math.Max(f.refill(b, now)-1, 0)
		b.at = now
	})
}

// refill returns b's tokens at now.
func (f *Failures) refill(b *bucket, now time.Time) float64 {
	return math.Min(f.burst, b.tokens+now.Sub(b.at).Seconds()*f.rate)
}

// evict forgets a full shard's addresses whose bucket is full again; if
// that leaves the shard more than half full, it forgets others down to half.
func (f *Failures) evict(buckets map[netip.Addr]*bucket, capacity int, now time.Time) {
	for addr, b := range buckets {
		if f.refill(b, now) >= f.burst {
			delete(buckets, addr)
		}
	}
	shardmap.EvictAny(buckets, capacity/2)
}
