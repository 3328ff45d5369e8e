package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"tollgate/internal/rawhttptest"
	"tollgate/internal/reqbody"
	"tollgate/plans"
)

// bodyLimits are the slow-body limits of these tests: short, and loose
// enough for a loaded machine (a sender may stall for two seconds per 200
// bytes).
var bodyLimits = reqbody.Limits{Grace: 300 * time.Millisecond, MinRate: 100, Drain: 100 * time.Millisecond}

// bodyGateway is proxyGateway with bodyLimits.
func bodyGateway(t *testing.T) *testGateway {
	t.Helper()
	tg := mustGateway(t, proxySnapshot(mustUpstream(t)), func(o *Options) { o.BodyLimits = bodyLimits })
	addTestKeys(tg.keys)
	return tg
}

// A client that announces a body and stops sending it is answered 408 and
// its connection closed once the body's deadline passes, on a proxied
// route (keyed or not) and on one that never reads the body.
func TestSlowBodyAnswered408AndClosed(t *testing.T) {
	t.Parallel()
	tg := bodyGateway(t)
	for _, c := range []struct {
		name, path, key string
		status          int
	}{
		{"proxied", "/prod/post", "", http.StatusRequestTimeout},
		{"proxied, keyed", "/prod/keyed", goodKey, http.StatusRequestTimeout},
		{"refused key, body never read", "/prod/keyed", "NoSuchKey0123456789abcdef", http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := rawhttptest.MustDial(t, tg.http.URL)
			method := map[string]string{"/prod/post": "POST", "/prod/keyed": "GET"}[c.path]
			conn.Send(fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nContent-Length: 100000\r\n\r\nabcd", method, c.path, testHost, c.key))
			got := asResponse(conn.MustRead())
			if got.status != c.status {
				t.Fatalf("got %d %s, want %d", got.status, got.body, c.status)
			}
			if c.status == http.StatusRequestTimeout {
				wantError(t, got, http.StatusRequestTimeout, "Request Timeout", "RequestTimeoutException")
			}
			if !conn.Closed() {
				t.Errorf("after the response: the connection is open, want it closed")
			}
		})
	}
}

// An upload slower than the integration's timeout but within the body's
// rate still reaches the upstream whole: the integration timeout counts
// time spent waiting on the upstream, not on the client.
func TestSlowUploadWithinRateCompletes(t *testing.T) {
	t.Parallel()
	tg := bodyGateway(t)
	conn := rawhttptest.MustDial(t, tg.http.URL)
	const chunks, size = 8, 200 // 8 chunks 150 ms apart against a 200 ms integration timeout
	conn.Send(fmt.Sprintf("POST /prod/upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", testHost, chunks*size))
	conn.Trickle(150*time.Millisecond, slices.Repeat([]string{strings.Repeat("x", size)}, chunks)...)
	if e := echo(t, asResponse(conn.MustRead())); e.Body != chunks*size {
		t.Errorf("upstream got %d bytes, want %d", e.Body, chunks*size)
	}
}

// A malformed chunked body is the client's fault: 400, not 502.
func TestMalformedChunkedBodyIs400(t *testing.T) {
	t.Parallel()
	tg := bodyGateway(t)
	conn := rawhttptest.MustDial(t, tg.http.URL)
	conn.Send(fmt.Sprintf("POST /prod/post HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabcd\r\n0\r\n\r\n", testHost))
	got := asResponse(conn.MustRead())
	wantError(t, got, http.StatusBadRequest, "Bad Request", "BadRequestException")
	if line := tg.logLine(t, got.header.Get("x-amzn-RequestId")); line["error_type"] != ErrorTypeBadRequest {
		t.Errorf("access log error_type: got %v, want %s", line["error_type"], ErrorTypeBadRequest)
	}
}

// An upstream that does not read the body is timed out by the
// integration's timeout (the body's rate does not excuse it).
func TestUpstreamNotReadingBodyTimesOut(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	up := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(func() { close(block) }) // before up.Close, which waits for the handler
	m := proxy(false, up.URL+"/x")
	m.MethodIntegration.TimeoutInMillis = 200
	tg := mustGateway(t, snapshot(plans.Stage{}, res{"/sink", methods(m, "POST")}), func(o *Options) { o.BodyLimits = bodyLimits })
	got := tg.doBody(t, "POST", "/prod/sink", strings.NewReader(strings.Repeat("x", 4<<20)))
	wantError(t, got, http.StatusGatewayTimeout, "Endpoint request timed out", "IntegrationTimeoutException")
}
