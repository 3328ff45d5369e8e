package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"tollgate/internal/rawhttptest"
)

// rawExchange sends raw on a new connection to tg and reads one response.
func rawExchange(t *testing.T, tg *testGateway, raw string) response {
	t.Helper()
	return asResponse(rawhttptest.MustExchange(t, tg.http.URL, raw))
}

// asResponse is a raw response as the tests compare it.
func asResponse(resp *http.Response, body string) response {
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// The header limit is exact: request headers, each counted as the
// "Name: value" line with its CRLF (Host included), may total
// MaxHeaderBytes, not net/http's looser count; one byte more is 431.
func TestHeaderLimitIsExact(t *testing.T) {
	t.Parallel()
	tg := proxyGateway(t)
	host := "Host: " + testHost + "\r\n"
	fill := func(total int) string { // one X-Fill line making the headers total bytes
		return "X-Fill: " + strings.Repeat("f", total-len(host)-len("X-Fill: \r\n")) + "\r\n"
	}
	at := rawExchange(t, tg, "GET /prod/pets/1 HTTP/1.1\r\n"+host+fill(MaxHeaderBytes)+"\r\n")
	if at.status != http.StatusCreated {
		t.Errorf("headers of exactly %d bytes: got %d, want 201 from the upstream", MaxHeaderBytes, at.status)
	}
	over := rawExchange(t, tg, "GET /prod/pets/1 HTTP/1.1\r\n"+host+fill(MaxHeaderBytes+1)+"\r\n")
	wantError(t, over, http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large", "RequestHeaderFieldsTooLargeException")
}

// An "Expect: 100-continue" upload is logged and counted with its final
// status, not the interim 100.
func TestExpectContinueLoggedWithFinalStatus(t *testing.T) {
	t.Parallel()
	metrics := NewMetrics()
	tg := mustGateway(t, proxySnapshot(mustUpstream(t)), func(o *Options) { o.Metrics = metrics })
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /prod/post HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", testHost)
	br := bufio.NewReader(conn)
	interim, err := http.ReadResponse(br, nil)
	if err != nil || interim.StatusCode != http.StatusContinue {
		t.Fatalf("interim response: got %v (%v), want 100 Continue", interim, err)
	}
	io.WriteString(conn, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("final response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("final status: got %d, want 201", resp.StatusCode)
	}
	line := tg.logLine(t, resp.Header.Get("x-amzn-RequestId"))
	if line["status"] != float64(201) {
		t.Errorf("access log status: got %v, want 201", line["status"])
	}
	if n := counterValue(t, metrics.Requests.WithLabelValues(testAPI, testStage, "POST", "/post", "1xx")); n != 0 {
		t.Errorf("tollgate_requests_total{1xx}: got %v, want 0", n)
	}
	if n := counterValue(t, metrics.Requests.WithLabelValues(testAPI, testStage, "POST", "/post", "2xx")); n != 1 {
		t.Errorf("tollgate_requests_total{2xx}: got %v, want 1", n)
	}
}
