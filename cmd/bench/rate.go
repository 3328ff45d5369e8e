package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tollgate/internal/benchproxy"
)

// rateConns is the number of connections (and workers) of the
// fixed-rate load: far more than the offered rate needs at the latencies
// measured, so a request waits for a free worker only when the target
// falls behind.
const rateConns = 64

// runRate offers l a fixed rate of requests (req/s) for d, as wrk2 does
// (wrk itself only saturates): request i is due at start + i/rate, the
// next free one of rateConns workers sends it once due, and its latency
// counts from its due time, so a target that falls behind does not slow
// the offered load down and hide its own queueing (coordinated omission).
// The workers keep their connections alive (a transport tuned as the bare
// proxy's). It returns p50 and p99, the requests completed and the non-2xx
// answers and errors among them.
func runRate(ctx context.Context, l load, rate float64, d time.Duration) (wrkResult, error) {
	tr := benchproxy.Transport(rateConns)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	n := int64(rate * d.Seconds())
	lat := make([]time.Duration, n)
	status := make([]int, n)
	interval := float64(time.Second) / rate
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range rateConns {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				due := start.Add(time.Duration(float64(i) * interval))
				time.Sleep(time.Until(due))
				key := l.key
				if len(l.keys) > 0 {
					key = l.keys[i%int64(len(l.keys))]
				}
				status[i], lat[i] = rateRequest(ctx, client, l, key, due)
			}
		})
	}
	wg.Wait()
	var r wrkResult
	done := lat[:0]
	for i, st := range status {
		switch {
		case st == 0:
			r.Errors++
		case st < 200 || st > 299:
			r.Non2xx++
		}
		if st != 0 {
			done = append(done, lat[i])
		}
	}
	r.Requests = int64(len(done))
	r.RPS = float64(r.Requests) / time.Since(start).Seconds()
	if len(done) > 0 {
		slices.Sort(done)
		r.P50, r.P99 = done[len(done)/2], done[(len(done)*99+99)/100-1]
	}
	return r, ctx.Err()
}

// rateRequest sends one request of l with key and returns its status (0
// on an error) and its latency counted from due.
func rateRequest(ctx context.Context, c *http.Client, l load, key string, due time.Time) (int, time.Duration) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return 0, 0
	}
	if l.host != "" {
		req.Host = l.host
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, time.Since(due)
}
