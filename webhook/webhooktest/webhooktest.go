// Package webhooktest is a webhook receiver for tests: a real HTTP server
// that checks every delivery's signature and records the events.
package webhooktest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"tollgate/webhook"
)

// Receiver records the webhooks sent to URL. It answers 500 to the first
// Fail tries, then 200.
type Receiver struct {
	URL string

	secret []byte
	mu     sync.Mutex
	fail   int
	tries  int
	events []map[string]any
	bad    error
}

// MustReceiver starts a Receiver checking signatures under secret and
// refusing the first fail tries; it stops at the test's cleanup.
func MustReceiver(tb testing.TB, secret []byte, fail int) *Receiver {
	tb.Helper()
	rc := &Receiver{secret: secret, fail: fail}
	srv := httptest.NewServer(rc)
	tb.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

// ServeHTTP implements http.Handler.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.tries++
	if err := webhook.Verify(rc.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), time.Minute); err != nil && rc.bad == nil {
		rc.bad = err
	}
	if rc.tries <= rc.fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	var ev map[string]any
	_ = json.Unmarshal(body, &ev)
	rc.events = append(rc.events, ev)
}

// Tries returns how many deliveries arrived, refused ones included.
func (rc *Receiver) Tries() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.tries
}

// Events returns the accepted events whose fields have the given values
// (all of them when match is empty), and the first signature error seen.
func (rc *Receiver) Events(match map[string]any) ([]map[string]any, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []map[string]any
next:
	for _, ev := range rc.events {
		for k, v := range match {
			if ev[k] != v {
				continue next
			}
		}
		out = append(out, ev)
	}
	return out, rc.bad
}
