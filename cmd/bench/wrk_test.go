package main

import (
	"testing"
	"time"
)

const wrkSample = `Running 2s test @ http://127.0.0.1:41234/bench/uncached
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.02ms    4.01ms  52.11ms   91.00%
    Req/Sec     2.31k   301.12     2.90k    70.00%
  Latency Distribution
     50%    1.80ms
     75%    2.51ms
     90%    5.00ms
     99%  812.00us
  9212 requests in 2.00s, 3.10MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 9212
Requests/sec:   4604.51
Transfer/sec:      1.55MB
`

func TestParseWrk(t *testing.T) {
	got, err := parseWrk(wrkSample)
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{Requests: 9212, RPS: 4604.51, P50: 1800 * time.Microsecond, P99: 812 * time.Microsecond, Non2xx: 9212, Errors: 5}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseWrk("unable to connect"); err == nil {
		t.Error("got no error for output without requests, want one")
	}
}

func TestParseWrkDuration(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     time.Duration
	}{
		{"microseconds", "812.00us", 812 * time.Microsecond},
		{"milliseconds", "1.25ms", 1250 * time.Microsecond},
		{"seconds", "2.50s", 2500 * time.Millisecond},
		{"minutes", "1.00m", time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseWrkDuration(c.in)
			if err != nil || got != c.want {
				t.Errorf("parseWrkDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
		})
	}
	if _, err := parseWrkDuration("3 fortnights"); err == nil {
		t.Error("got no error for an unknown unit, want one")
	}
}

func TestPerRequest(t *testing.T) {
	before := redisCounters{reads: 100, commands: map[string]int64{"evalsha": 10, "hmget": 30}}
	after := redisCounters{reads: 300, commands: map[string]int64{"evalsha": 210, "hmget": 630, "get": 1}}
	got := perRequest(before, after, 200)
	want := redisPerRequest{RoundTrips: 1, Commands: 4.005, Top: "evalsha 1.00, get 0.01"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMetricValue(t *testing.T) {
	text := "# HELP tollgate_limiter_errors_total x\n# TYPE tollgate_limiter_errors_total counter\ntollgate_limiter_errors_total 42\ntollgate_limiter_errors_total_other 7\n"
	for _, c := range []struct {
		name, metric string
		want         int64
	}{
		{"present", "tollgate_limiter_errors_total", 42},
		{"absent", "tollgate_requests_total", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := metricValue(text, c.metric); got != c.want {
				t.Errorf("metricValue(%s): got %d, want %d", c.metric, got, c.want)
			}
		})
	}
}
