package admin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tollgate/internal/rawhttptest"
	"tollgate/internal/reqbody"
)

// slowBodyLimits are short slow-body limits, loose enough for a loaded
// machine (a sender may stall for two seconds per 200 bytes).
var slowBodyLimits = reqbody.Limits{Grace: 300 * time.Millisecond, MinRate: 100, Drain: 100 * time.Millisecond}

// bodyServer is authOnly with slowBodyLimits, echoing the body's length.
func bodyServer(t *testing.T) string {
	t.Helper()
	s := &Server{bodyLimits: slowBodyLimits}
	s.log = testLogger(t)
	s.now = time.Now
	s.auth = newAuthenticator(Credentials{BearerToken: testToken}, s.now, nil)
	h := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		b, err := readBody(r)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]int{"bytes": len(b)})
		return nil
	})
	srv := httptest.NewServer(s.limitBody(s.authenticate(h)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A client that announces a body and stops sending it gets 408 and a
// closed connection once its deadline passes, with or without valid
// credentials.
func TestSlowBodyAnswered408AndClosed(t *testing.T) {
	t.Parallel()
	addr := bodyServer(t)
	for _, c := range []struct {
		name, auth string
		status     int
		errType    string
	}{
		{"valid token", "Bearer " + testToken, http.StatusRequestTimeout, "RequestTimeoutException"},
		{"no credentials: refused without reading", "", http.StatusForbidden, typeMissingToken},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := "POST /restapis HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nAuthorization: " + c.auth + "\r\n\r\nabcd"
			conn := rawhttptest.MustDial(t, addr)
			conn.Send(head)
			resp, body := conn.MustRead()
			if resp.StatusCode != c.status || resp.Header.Get("x-amzn-ErrorType") != c.errType {
				t.Errorf("got %d %s %s, want %d %s", resp.StatusCode, resp.Header.Get("x-amzn-ErrorType"), body, c.status, c.errType)
			}
			if !conn.Closed() {
				t.Errorf("after the response: the connection is open, want it closed")
			}
		})
	}
}

// A body sent slowly but within the rate is read whole.
func TestSlowUploadWithinRateCompletes(t *testing.T) {
	t.Parallel()
	chunks := make([]string, 8)
	for i := range chunks {
		chunks[i] = strings.Repeat("x", 200)
	}
	head := fmt.Sprintf("POST /restapis HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1600\r\n\r\n", testToken)
	conn := rawhttptest.MustDial(t, bodyServer(t))
	conn.Send(head)
	conn.Trickle(150*time.Millisecond, chunks...)
	resp, body := conn.MustRead()
	if resp.StatusCode != http.StatusOK || body != `{"bytes":1600}` {
		t.Errorf("got %d %s, want 200 {\"bytes\":1600}", resp.StatusCode, body)
	}
}
