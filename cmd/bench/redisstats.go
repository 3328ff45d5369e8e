package main

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisCounters are the bench Redis's cumulative counters: reads is
// INFO stats total_reads_processed (one per batch of commands a client
// sends at once, i.e. one per round trip, pipelines included), commands
// is the sum of INFO commandstats calls by command name (commands run
// inside scripts included).
type redisCounters struct {
	reads    int64
	commands map[string]int64
}

// readCounters reads INFO stats and INFO commandstats of every server in
// rdbs (the bench Redis, or each node of its cluster) and sums them. The
// INFO call itself counts as one read and one command; the per-request
// figures are large enough that this does not matter.
func readCounters(ctx context.Context, rdbs []*redis.Client) (redisCounters, error) {
	c := redisCounters{commands: map[string]int64{}}
	for _, rdb := range rdbs {
		if err := c.add(ctx, rdb); err != nil {
			return c, err
		}
	}
	return c, nil
}

// add adds rdb's counters to c.
func (c *redisCounters) add(ctx context.Context, rdb *redis.Client) error {
	info, err := rdb.Info(ctx, "stats", "commandstats").Result()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			c.reads += n
		}
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		c.commands[strings.TrimPrefix(name, "cmdstat_")] += n
	}
	return nil
}

// redisPerRequest is the Redis work of one run divided by its requests.
type redisPerRequest struct {
	RoundTrips float64 // client reads processed per request
	Commands   float64 // commands per request, script-internal ones included
	Top        string  // the most frequent top-level commands, "evalsha 1.00 get 0.01"
}

// perRequest returns the deltas from before to after divided by n.
func perRequest(before, after redisCounters, n int64) redisPerRequest {
	if n <= 0 {
		return redisPerRequest{}
	}
	var p redisPerRequest
	p.RoundTrips = float64(after.reads-before.reads) / float64(n)
	var top []string
	for name, v := range after.commands {
		d := float64(v-before.commands[name]) / float64(n)
		p.Commands += d
		if d >= 0.005 && topLevel[name] {
			top = append(top, name+" "+strconv.FormatFloat(d, 'f', 2, 64))
		}
	}
	slices.Sort(top)
	p.Top = strings.Join(top, ", ")
	return p
}

// topLevel lists commands the gateway sends itself (the limiter and cache
// scripts, cache entry, generation and key record reads, script loads). The limiter
// script's own MGET, SET, HMGET... count in Commands only; a GET inside a
// script would count here too, so the list names what, not who.
var topLevel = map[string]bool{
	"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true, "get": true, "getrange": true,
	"script|load": true,
}
