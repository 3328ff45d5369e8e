package cache

import (
	"net/http"
	"testing"
	"time"
)

func TestStale(t *testing.T) {
	stage := Staleness{IfError: 30 * time.Second}
	cases := []struct {
		name  string
		cc    string
		stage Staleness
		want  Staleness
	}{
		{"stage alone", "max-age=60", stage, stage},
		{"none at all", "", Staleness{}, Staleness{}},
		{"upstream's longer window", "stale-if-error=90", stage, Staleness{IfError: 90 * time.Second}},
		{"stage's longer window", "stale-if-error=10", stage, stage},
		{"upstream's without the stage", `max-age=1, stale-if-error="20"`, Staleness{}, Staleness{IfError: 20 * time.Second}},
		{"capped at a day", "stale-if-error=99999999999999999999999", Staleness{}, Staleness{IfError: MaxStale}},
		{"not a number", "stale-if-error=-5, stale-if-error=1x", Staleness{}, Staleness{}},
		{"must-revalidate forbids", "stale-if-error=90, must-revalidate", stage, Staleness{}},
		{"both windows", "stale-while-revalidate=5, stale-if-error=60", Staleness{WhileRevalidate: 10 * time.Second},
			Staleness{IfError: time.Minute, WhileRevalidate: 10 * time.Second}},
		{"no-cache forbids both", "no-cache, stale-while-revalidate=5", Staleness{IfError: 1, WhileRevalidate: 1}, Staleness{}},
		{"proxy-revalidate forbids", "Proxy-Revalidate", stage, Staleness{}},
		{"no-cache forbids", `no-cache="X-A"`, stage, Staleness{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.cc != "" {
				h.Set("Cache-Control", c.cc)
			}
			if got := Stale(h, c.stage); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestEntryStaleWithin(t *testing.T) {
	stored := time.Unix(1_700_000_000, 0)
	e := &Entry{Stored: stored, TTL: 10 * time.Second}
	cases := []struct {
		at     time.Duration // after stored
		window time.Duration
		want   bool
	}{
		{9 * time.Second, time.Minute, false}, // fresh
		{10 * time.Second, 0, false},          // expired, no window
		{10 * time.Second, time.Second, true}, // expired, within
		{70*time.Second - time.Millisecond, time.Minute, true},
		{70 * time.Second, time.Minute, false}, // the window ended
	}
	for _, c := range cases {
		if got := e.StaleWithin(stored.Add(c.at), c.window); got != c.want {
			t.Errorf("StaleWithin(stored+%v, %v): got %v, want %v", c.at, c.window, got, c.want)
		}
	}
	if got := e.Expires(); !got.Equal(stored.Add(10 * time.Second)) {
		t.Errorf("Expires: got %v, want stored+10s", got)
	}
}

func TestStalenessKeep(t *testing.T) {
	s := Staleness{IfError: time.Minute, WhileRevalidate: time.Hour}
	if got := s.Keep(); got != time.Hour {
		t.Errorf("Keep: got %v, want the longer window, 1h", got)
	}
}
