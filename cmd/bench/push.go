package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/apigateway"
)

// pushResult is the config push latency over n changes: from the admin's
// 2xx to the moment every gateway node enforces the change.
type pushResult struct {
	N             int
	P50, P99, Max time.Duration
}

// measurePush toggles the probe plan's throttle between blocking (rate 0,
// burst 0: every request 429) and open, n times, and after each 2xx polls
// every gateway with the probe key until all answer with the new status.
// Polling is every 1 ms per node, so figures are rounded up by up to 1 ms
// (plus one request's latency).
func measurePush(ctx context.Context, c *apigateway.Client, f fixture, gateways []string, n int) (pushResult, error) {
	var lat []time.Duration
	for i := range n {
		block := i%2 == 0
		rate, burst, want := float64(planRate), int32(planBurst), http.StatusOK
		if block {
			rate, burst, want = 0, 0, http.StatusTooManyRequests
		}
		if err := setPlanThrottle(ctx, c, f.probePlanID, rate, burst); err != nil {
			return pushResult{}, fmt.Errorf("change %d: %w", i, err)
		}
		start := time.Now()
		d, err := waitEnforced(ctx, gateways, f, want, start)
		if err != nil {
			return pushResult{}, fmt.Errorf("change %d: %w", i, err)
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	return pushResult{N: n, P50: lat[len(lat)/2], P99: lat[(len(lat)*99+99)/100-1], Max: lat[len(lat)-1]}, nil
}

// waitEnforced polls every gateway concurrently until each answers want
// and returns the time from start until the last one did.
func waitEnforced(ctx context.Context, gateways []string, f fixture, want int, start time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	type result struct {
		d   time.Duration
		err error
	}
	done := make(chan result, len(gateways))
	for _, g := range gateways {
		go func() {
			for {
				status, err := probe(ctx, g, f)
				if err != nil {
					done <- result{err: err}
					return
				}
				if status == want {
					done <- result{d: time.Since(start)}
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	var worst time.Duration
	for range gateways {
		r := <-done
		if r.err != nil {
			return 0, r.err
		}
		worst = max(worst, r.d)
	}
	return worst, nil
}

// probe sends one GET /uncached with the probe key to gateway addr.
func probe(ctx context.Context, addr string, f fixture) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/"+stageName+"/uncached", nil)
	if err != nil {
		return 0, err
	}
	req.Host = f.apiID + ".execute-api.localhost"
	req.Header.Set("x-api-key", f.probeKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, nil
}
