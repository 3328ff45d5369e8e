package cache

import (
	"bytes"
	"net/http"
	"testing"
	"time"
)

func TestEntryEncodeRoundTrip(t *testing.T) {
	e := &Entry{Status: 203, Header: http.Header{"Content-Type": {"text/plain"}, "X-Multi": {"a", ""}},
		Body: []byte("hello"), Stored: time.UnixMilli(1700000000123), TTL: 300 * time.Second}
	got, err := DecodeEntry(e.Encode())
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.Status != e.Status || !bytes.Equal(got.Body, e.Body) || !got.Stored.Equal(e.Stored) || got.TTL != e.TTL ||
		len(got.Header) != 2 || got.Header.Values("X-Multi")[1] != "" {
		t.Errorf("got %+v, want %+v", got, e)
	}
	for _, bad := range [][]byte{nil, {9}, e.Encode()[:10]} {
		if _, err := DecodeEntry(bad); err == nil {
			t.Errorf("decode %q: got no error, want one", bad)
		}
	}
}

func TestEntryFreshAndAge(t *testing.T) {
	now := time.Now()
	e := &Entry{Stored: now.Add(-10 * time.Second), TTL: 11 * time.Second}
	if !e.Fresh(now) || e.Fresh(now.Add(time.Second)) {
		t.Errorf("Fresh: got %v then %v, want true then false", e.Fresh(now), e.Fresh(now.Add(time.Second)))
	}
	if got := e.Age(now); got != 10*time.Second {
		t.Errorf("Age: got %v, want 10s", got)
	}
	if got := (&Entry{Stored: now.Add(time.Second)}).Age(now); got != 0 {
		t.Errorf("Age of a future entry: got %v, want 0", got)
	}
}

func TestStorable(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		h        http.Header
		n        int
		complete bool
		want     bool
	}{
		{"200", 200, nil, 10, true, true},
		{"201", 201, nil, 0, true, false},
		{"204", 204, nil, 0, true, false},
		{"206", 206, http.Header{"Content-Range": {"bytes 0-9/135"}}, 10, true, false},
		{"body of exactly 1 MiB", 200, nil, MaxBody, true, true},
		{"body over 1 MiB", 200, nil, MaxBody + 1, true, false},
		{"incomplete", 200, nil, 10, false, false},
		{"301", 301, nil, 0, true, false},
		{"404", 404, nil, 0, true, false},
		{"429", 429, nil, 0, true, false},
		{"503", 503, nil, 0, true, false},
		{"Set-Cookie", 200, http.Header{"Set-Cookie": {"a=b"}}, 1, true, false},
		{"no-store", 200, http.Header{"Cache-Control": {"max-age=60, no-store"}}, 1, true, false},
		{"private", 200, http.Header{"Cache-Control": {"Private"}}, 1, true, false},
		{"private with field names", 200, http.Header{"Cache-Control": {`private="x"`}}, 1, true, false},
		{"public", 200, http.Header{"Cache-Control": {"public, max-age=60"}}, 1, true, true},
		{"Vary star", 200, http.Header{"Vary": {"Accept, *"}}, 1, true, false},
		{"Vary header", 200, http.Header{"Vary": {"Accept-Encoding"}}, 1, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Storable(c.status, c.h, c.n, c.complete); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestAcceptEncoding(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{"none", nil, "identity"},
		{"gzip", []string{"gzip"}, "gzip"},
		{"x-gzip", []string{"x-gzip"}, "gzip"},
		{"browsers", []string{"gzip, deflate, br, zstd"}, "br,gzip"},
		{"order does not matter", []string{"br;q=0.5, gzip"}, "br,gzip"},
		{"q=0 refuses", []string{"gzip;q=0, br"}, "br"},
		{"q=0.000 refuses", []string{"gzip;q=0.000"}, "identity"},
		{"star", []string{"*"}, "br,gzip"},
		{"deflate only", []string{"deflate"}, "identity"},
		{"two lines", []string{"gzip", "br"}, "br,gzip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AcceptEncoding(c.lines); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
