package cache

import (
	"net/http"
	"strconv"
	"time"
)

// MaxStale bounds each stale window, a stage's and an upstream's alike:
// a day.
const MaxStale = 24 * time.Hour

// Staleness is how long past its freshness an entry may still be served
// (RFC 5861; docs/behaviour.md, "Response cache"). IfError: while the
// upstream fails (answers 5xx, times out or cannot be reached).
// WhileRevalidate: at once, while the entry is refreshed in the
// background. Zero means never.
type Staleness struct {
	IfError, WhileRevalidate time.Duration
}

// Keep is how long past its freshness an entry allowed s must stay
// stored: its longer window.
func (s Staleness) Keep() time.Duration { return max(s.IfError, s.WhileRevalidate) }

// Stale returns the windows within which a response with header h may be
// served stale: the longer of the stage's and the one h's Cache-Control
// grants (stale-if-error=<seconds>, stale-while-revalidate=<seconds>,
// each capped at MaxStale), or none when h
// forbids stale answers (must-revalidate, proxy-revalidate or no-cache:
// RFC 9111 sections 4.2.4 and 5.2.2).
func Stale(h http.Header, stage Staleness) Staleness {
	s := stage
	for name, value := range Directives(h) {
		switch name {
		case "must-revalidate", "proxy-revalidate", "no-cache":
			return Staleness{}
		case "stale-if-error":
			s.IfError = max(s.IfError, deltaSeconds(value))
		case "stale-while-revalidate":
			s.WhileRevalidate = max(s.WhileRevalidate, deltaSeconds(value))
		}
	}
	return s
}

// deltaSeconds reads a delta-seconds value (RFC 9111 section 1.2.2),
// capped at MaxStale; 0 when it is not one.
func deltaSeconds(v string) time.Duration {
	if v == "" || v[0] < '0' || v[0] > '9' {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil && n == 0 { // a syntax error; a value out of range is the cap
		return 0
	}
	return time.Duration(min(n, uint64(MaxStale/time.Second))) * time.Second
}

// Expires is when e stops being fresh: Stored plus TTL. Its Redis key
// outlives that by Keep, for stale answers.
func (e *Entry) Expires() time.Time { return e.Stored.Add(e.TTL) }

// StaleWithin reports whether e is past its freshness at now, by less
// than window.
func (e *Entry) StaleWithin(now time.Time, window time.Duration) bool {
	return !e.Fresh(now) && now.Before(e.Expires().Add(window))
}
