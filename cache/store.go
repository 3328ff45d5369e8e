package cache

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redisscript"
)

//go:embed lookup.lua
var lookupSource string

// lookupScript is lookup.lua, hashed once: lookups send its SHA1
// (EVALSHA), not its text.
var lookupScript = redis.NewScript(lookupSource)

// Options configures a Store.
type Options struct {
	// Prefix starts every entry's Redis key ("tg" in production; tests
	// use a unique prefix each).
	Prefix string
	// MemoryCheck is how often Put re-reads the Redis memory state (see
	// ErrFull); 0 means DefaultMemoryCheck.
	MemoryCheck time.Duration
}

// Store keeps response cache entries in the cache Redis: one hash per
// entry key (Key), holding the stored response's Vary names and one field
// per variant, expiring with the entry's TTL. It is safe for concurrent
// use.
type Store struct {
	rdb         redis.UniversalClient
	prefix      string
	memoryCheck time.Duration
	full        atomic.Bool  // the last memory check found the Redis full
	checked     atomic.Int64 // Unix ns of the last memory check
	checking    atomic.Bool
}

// New returns a Store on rdb, the cache Redis (TOLLGATE_CACHE_REDIS_URL,
// which should run allkeys-lru).
func New(rdb redis.UniversalClient, opts Options) *Store {
	s := &Store{rdb: rdb, prefix: opts.Prefix, memoryCheck: opts.MemoryCheck}
	if s.memoryCheck <= 0 {
		s.memoryCheck = DefaultMemoryCheck
	}
	return s
}

// Client returns the cache Redis client, so a caller can tell whether it
// is the limiter's and put both in one pipeline.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Load runs SCRIPT LOAD of the lookup script on the cache Redis (every
// shard of a Cluster or Ring client), so the first lookups do not pay a
// NOSCRIPT round trip. Errors are wrapped; lookups load it anyway.
func (s *Store) Load(ctx context.Context) error {
	if err := redisscript.Load(ctx, s.rdb, lookupScript); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Key returns the entry key of req under params (see the package Key).
func (s *Store) Key(params []Param, req *Request) string { return Key(s.prefix, params, req) }

// Lookup is an entry read queued on a pipeline by Queue.
type Lookup struct {
	s   *Store
	key string
	arg string
	cmd *redis.Cmd
}

// Queue adds the read of entry key's variant for request header h to pipe
// (EVALSHA of lookup.lua). Run pipe, then call Result.
func (s *Store) Queue(ctx context.Context, pipe redis.Pipeliner, key string, h http.Header) *Lookup {
	l := &Lookup{s: s, key: key, arg: headerArg(h)}
	l.cmd = lookupScript.EvalSha(ctx, pipe, []string{key}, l.arg)
	return l
}

// Result returns the entry read, nil without an error when there is none
// (stale entries are returned: check Entry.Fresh). A NOSCRIPT reply (a
// restarted or flushed cache Redis; go-redis cannot fall back inside a
// pipeline) reads again with EVAL under ctx, which also loads the script.
// An error means the cache Redis did not answer or the entry is corrupt.
func (l *Lookup) Result(ctx context.Context) (*Entry, error) {
	s, err := l.cmd.Text()
	if redisscript.IsNoScript(err) {
		s, err = lookupScript.Eval(ctx, l.s.rdb, []string{l.key}, l.arg).Text()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache: lookup: %w", err)
	}
	return decodeEntry([]byte(s))
}

// Get reads entry key's variant for request header h in its own round
// trip; see Lookup.Result.
func (s *Store) Get(ctx context.Context, key string, h http.Header) (*Entry, error) {
	pipe := s.rdb.Pipeline()
	l := s.Queue(ctx, pipe, key, h)
	_, _ = pipe.Exec(ctx)
	return l.Result(ctx)
}

// Put stores e as the variant of entry key for request header h (by the
// Vary names of e.Header) and sets the key's expiry to e.TTL, in one
// MULTI. Older variants keep their own Stored and TTL and are not served
// once stale. The caller checks Storable first. Errors come from Redis,
// or are ErrFull while the Redis is near maxmemory without eviction (its
// memory state is re-read in the background every Options.MemoryCheck).
func (s *Store) Put(ctx context.Context, key string, h http.Header, e *Entry) error {
	s.maybeCheckMemory()
	if s.full.Load() {
		return ErrFull
	}
	names, _ := VaryNames(e.Header)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "vary", strings.Join(names, ","), Variant(names, h), e.encode())
		p.PExpire(ctx, key, e.TTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("cache: store %s: %w", key, err)
	}
	return nil
}

// headerArg flattens a request header into lookup.lua's ARGV[1]: one line
// "<lowercase name>:<VaryValue>\n" per header (HTTP forbids line breaks in
// names and values, and ':' in names). Credentials go as VaryValue's
// digests, never as themselves, exactly as Put names variants.
func headerArg(h http.Header) string {
	var b strings.Builder
	for k := range h {
		v, _ := VaryValue(h, k)
		b.Grow(len(k) + len(v) + 2)
		for i := 0; i < len(k); i++ {
			c := k[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		b.WriteByte(':')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String()
}
