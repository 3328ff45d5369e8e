package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// slogLine is what slog's handler (text or JSON) writes for the same
// fields at time t.
func slogLine(t time.Time, text bool, fill func(fieldSink)) string {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewJSONHandler(&buf, nil)
	if text {
		h = slog.NewTextHandler(&buf, nil)
	}
	var attrs attrSink
	fill(&attrs)
	r := slog.NewRecord(t, slog.LevelInfo, "request", 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(context.Background(), r)
	return buf.String()
}

// accessLine is what AccessLog writes for the fields at time t.
func accessLine(t time.Time, text bool, fill func(fieldSink)) string {
	var buf bytes.Buffer
	NewAccessLog(&buf, text).line(t, fill)
	return buf.String()
}

// FuzzAccessLogMatchesSlog checks that the access log's own encoder writes
// exactly the line slog's JSON and text handlers write for the same
// record: strings with quotes, control characters, invalid UTF-8 and
// line separators, any addresses, integers and latencies.
func FuzzAccessLogMatchesSlog(f *testing.F) {
	f.Add("GET", "/pets/{petId}", "a\"b\\c\n\t\x01", []byte{127, 0, 0, 1}, int64(200), int64(1234567), int64(1))
	f.Add("", "/x y=z", "\xff\u2028\u2029é", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, int64(-1), int64(0), int64(999_999_999))
	f.Add("P\u00e4TCH", "", "", []byte{}, int64(599), int64(1), int64(1_000_000_000_000))
	f.Fuzz(func(t *testing.T, method, resource, reason string, ip []byte, status, micros, nanos int64) {
		addr, _ := netip.AddrFromSlice(ip)
		at := time.Unix(1_780_000_000, nanos%1_000_000_000).UTC()
		fill := func(s fieldSink) {
			s.str("request_id", "0123456789abcdef")
			s.addr("client", addr)
			s.str("resource", resource)
			s.str("method", method)
			s.int("status", status)
			s.float("latency_ms", float64(micros)/1000)
			s.float("tiny", float64(micros)/1e12)
			s.str("reason", reason)
		}
		sameLine(t, at, fill)
	})
}

// sameLine fails t unless AccessLog and slog write the same line for the
// fields at time at, in both formats.
func sameLine(t *testing.T, at time.Time, fill func(fieldSink)) {
	t.Helper()
	for _, text := range []bool{false, true} {
		if got, want := accessLine(at, text, fill), slogLine(at, text, fill); got != want {
			t.Fatalf("text=%v:\ngot  %q\nwant %q", text, got, want)
		}
	}
}

// TestAccessLogMatchesSlogOnRandomFields runs the comparison on random
// printable and unprintable fields, a few thousand lines per format.
func TestAccessLogMatchesSlogOnRandomFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	for range 3000 {
		a, b, c := str(), str(), rng.Int64N(1<<40)
		at := time.Unix(rng.Int64N(4_000_000_000), rng.Int64N(1_000_000_000))
		fill := func(s fieldSink) {
			s.str("a", a)
			s.str("b", b)
			s.float("latency_ms", float64(c)/1000)
			s.int("bytes", c)
		}
		sameLine(t, at, fill)
	}
}

// TestAccessLogLineAllocatesNothing: a line is built in a pooled buffer
// and written whole.
func TestAccessLogLineAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers")
	}
	l := NewAccessLog(io.Discard, false)
	ex := &exchange{id: "0123456789abcdef0123456789abcdef", client: netip.MustParseAddr("10.1.2.3"), api: "a1b2c3d4e5",
		stage: "prod", resource: "/pets/{petId}", method: "GET", keyID: "k1", planID: "p1", integrationCalled: true}
	write := func() { l.line(time.Now(), func(f fieldSink) { ex.logFields(f, 200, 512, time.Millisecond) }) }
	write()
	if n := testing.AllocsPerRun(100, write); n != 0 {
		t.Errorf("allocations per line: got %v, want 0", n)
	}
}
