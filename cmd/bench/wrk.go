package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// load is one wrk run's target: URL, Host header and API key ("" for
// none), or keys to take in turn, one per request; missQuery names a query
// parameter given a new value in every request (a cache miss each time).
// redis are the servers whose counters the run reads, metrics the
// gateway node's metrics address ("" for the bare proxy and the peers).
type load struct {
	url, host, key string
	keys           []string
	missQuery      string
	redis          []*redis.Client
	metrics        string
}

// wrkResult is what the report needs from one wrk run.
type wrkResult struct {
	Requests int64         // completed requests
	RPS      float64       // requests per second
	P50, P99 time.Duration // latency percentiles
	Non2xx   int64         // responses outside 2xx/3xx (429s on the refusal path)
	Errors   int64         // socket errors (connect, read, write, timeout)
}

// runWrk loads l with conns connections for d on 2 threads. A positive
// delay makes every connection wait that long between requests (wrk's Lua
// delay hook), to offer a fixed rate instead of saturating.
func runWrk(ctx context.Context, wrk, dir string, l load, conns int, d, delay time.Duration) (wrkResult, error) {
	threads := min(2, conns)
	args := []string{"-t", itoa(threads), "-c", itoa(conns), "-d", fmt.Sprintf("%.0fs", d.Seconds()), "--latency", "--timeout", "5s"}
	if l.host != "" {
		args = append(args, "-H", "Host: "+l.host)
	}
	if l.key != "" {
		args = append(args, "-H", "x-api-key: "+l.key)
	}
	if src := wrkScript(l.keys, l.missQuery, time.Now().UnixNano(), delay); src != "" {
		f, err := os.CreateTemp(dir, "wrk-*.lua")
		if err != nil {
			return wrkResult{}, err
		}
		_, err = f.WriteString(src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return wrkResult{}, err
		}
		args = append(args, "-s", f.Name())
	}
	args = append(args, l.url)
	out, err := exec.CommandContext(ctx, wrk, args...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return parseWrk(string(out))
}

// wrkScript returns the wrk Lua script for keys taken in turn (each thread
// starts at its own place in the list), a query parameter with a value no
// other request of any run has (the run's nonce, the thread and a count),
// and a delay between requests, or "" when none is wanted.
func wrkScript(keys []string, query string, nonce int64, delay time.Duration) string {
	var b strings.Builder
	if len(keys) > 0 || query != "" {
		// setup runs in wrk's main state and numbers the threads
		b.WriteString("local threads = 0\nfunction setup(thread)\n  threads = threads + 1\n  thread:set(\"id\", threads)\nend\n")
		b.WriteString("local keys = {")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(k)) // key values are [A-Za-z0-9]
		}
		b.WriteString("}\nlocal i, n = 0, 0\nfunction init(args)\n  if #keys > 0 then i = (id * 7919) % #keys end\nend\n")
		b.WriteString("function request()\n")
		if len(keys) > 0 {
			b.WriteString("  i = i % #keys + 1\n  wrk.headers[\"x-api-key\"] = keys[i]\n")
		}
		if query != "" {
			fmt.Fprintf(&b, "  n = n + 1\n  return wrk.format(nil, wrk.path .. \"?%s=%d-\" .. id .. \"-\" .. n)\n", query, nonce)
		} else {
			b.WriteString("  return wrk.format()\n")
		}
		b.WriteString("end\n")
	}
	if delay > 0 {
		fmt.Fprintf(&b, "function delay()\n  return %d\nend\n", delay.Milliseconds())
	}
	return b.String()
}

// parseWrk reads wrk 4's text report (with --latency).
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	var err error
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "Requests/sec:":
			r.RPS, err = strconv.ParseFloat(f[1], 64)
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			r.Requests, err = strconv.ParseInt(f[0], 10, 64)
		case len(f) == 2 && f[0] == "50%":
			r.P50, err = parseWrkDuration(f[1])
		case len(f) == 2 && f[0] == "99%":
			r.P99, err = parseWrkDuration(f[1])
		case len(f) >= 5 && f[0] == "Non-2xx":
			r.Non2xx, err = strconv.ParseInt(f[len(f)-1], 10, 64)
		case len(f) >= 3 && f[0] == "Socket" && f[1] == "errors:":
			r.Errors = socketErrors(f[2:])
		}
		if err != nil {
			return r, fmt.Errorf("wrk output %q: %w", sc.Text(), err)
		}
	}
	if r.Requests == 0 {
		return r, fmt.Errorf("wrk made no requests:\n%s", out)
	}
	return r, nil
}

// socketErrors sums "connect 0, read 1, write 0, timeout 2".
func socketErrors(f []string) int64 {
	var n int64
	for _, s := range f {
		v, err := strconv.ParseInt(strings.TrimSuffix(s, ","), 10, 64)
		if err == nil {
			n += v
		}
	}
	return n
}

// parseWrkDuration reads wrk's "812.00us", "1.23ms", "2.01s" or "1.50m".
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(f * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("unknown duration %q", s)
}
