package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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

// rawConn opens a connection to tg, closed when the test ends.
func rawConn(t *testing.T, tg *testGateway) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, bufio.NewReader(conn)
}

// readRaw reads one response within a generous bound.
func readRaw(t *testing.T, conn net.Conn, br *bufio.Reader) response {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
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
			conn, br := rawConn(t, tg)
			method := map[string]string{"/prod/post": "POST", "/prod/keyed": "GET"}[c.path]
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nContent-Length: 100000\r\n\r\nabcd", method, c.path, testHost, c.key)
			got := readRaw(t, conn, br)
			if got.status != c.status {
				t.Fatalf("got %d %s, want %d", got.status, got.body, c.status)
			}
			if c.status == http.StatusRequestTimeout {
				wantError(t, got, http.StatusRequestTimeout, "Request Timeout", "RequestTimeoutException")
			}
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the response: got %v, want the connection closed", err)
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
	conn, br := rawConn(t, tg)
	const chunks, size = 8, 200 // about 1.2 s against a 200 ms integration timeout
	fmt.Fprintf(conn, "POST /prod/upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", testHost, chunks*size)
	for range chunks {
		time.Sleep(150 * time.Millisecond)
		fmt.Fprint(conn, strings.Repeat("x", size))
	}
	if e := echo(t, readRaw(t, conn, br)); e.Body != chunks*size {
		t.Errorf("upstream got %d bytes, want %d", e.Body, chunks*size)
	}
}

// A malformed chunked body is the client's fault: 400, not 502.
func TestMalformedChunkedBodyIs400(t *testing.T) {
	t.Parallel()
	tg := bodyGateway(t)
	conn, br := rawConn(t, tg)
	fmt.Fprintf(conn, "POST /prod/post HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabcd\r\n0\r\n\r\n", testHost)
	got := readRaw(t, conn, br)
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
