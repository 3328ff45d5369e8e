package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tollgate/internal/rawhttptest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans/postgres/postgrestest"
)

// mustNode starts one all-in-one node (admin and gateway) on a fresh
// database and Redis prefix, with a bearer token; edit adjusts its config.
func mustNode(t *testing.T, edit func(*Config)) *Main {
	t.Helper()
	_, prefix := redistest.MustClient(t)
	cfg := Config{
		DatabaseURL: postgrestest.MustURL(t), RedisURL: redistest.URL(), RedisPrefix: prefix,
		RedisTimeout: 5 * time.Second, AdminAddr: "127.0.0.1:0", GatewayAddr: "127.0.0.1:0",
		MetricsAddr: "127.0.0.1:0", AccountRateLimit: 10000, AccountBurstLimit: 5000,
		LimiterFailureMode: "open", LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
		Secrets: Secrets{AdminToken: testAdminToken},
	}
	if edit != nil {
		edit(&cfg)
	}
	cfg.Role = "all"
	m := NewMain(cfg)
	t.Cleanup(func() { _ = m.Close() })
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	var err error
	ready := func() bool {
		var res *http.Response
		if res, err = http.Get("http://" + m.GatewayAddr + "/readyz"); err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	}
	if _, ok := waittest.Poll(20*time.Second, ready); !ok {
		t.Fatalf("gateway not ready after 20 s: %v", err)
	}
	return m
}

// Both ports answer a client that announces a body and stops sending it,
// and close its connection, within the configured bounds; an upload that
// keeps to the minimum rate goes through however long it takes.
func TestSlowBodiesBoundedOnBothPorts(t *testing.T) {
	t.Parallel()
	m := mustNode(t, func(c *Config) { c.BodyTimeout, c.BodyMinRate = 300*time.Millisecond, 100 })
	trickle := "Content-Length: 100000\r\n\r\nabcd"
	cases := []struct {
		name, addr, head string
		status           int
	}{
		{"gateway, an API host", m.GatewayAddr, "POST /prod/x HTTP/1.1\r\nHost: nosuchapi1.execute-api.localhost\r\n" + trickle, http.StatusNotFound},
		{"gateway, another host", m.GatewayAddr, "POST /healthz HTTP/1.1\r\nHost: x\r\n" + trickle, http.StatusOK},
		{"admin, authenticated", m.AdminAddr, "POST /restapis HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testAdminToken + "\r\n" + trickle, http.StatusRequestTimeout},
		{"admin, no credentials", m.AdminAddr, "POST /restapis HTTP/1.1\r\nHost: x\r\n" + trickle, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := rawhttptest.MustDial(t, c.addr)
			conn.Send(c.head)
			resp, body := conn.MustRead()
			if closed := conn.Closed(); resp.StatusCode != c.status || !closed {
				t.Errorf("got %d %s (closed %v), want %d and the connection closed", resp.StatusCode, body, closed, c.status)
			}
		})
	}
	t.Run("admin, slow upload within the rate", func(t *testing.T) {
		name := `{"name":"` + strings.Repeat("n", 996) + `"}` // 1006 bytes in 5 pieces over about 1 s
		var chunks []string
		for i := 0; i < len(name); i += 202 {
			chunks = append(chunks, name[i:min(i+202, len(name))])
		}
		head := fmt.Sprintf("POST /restapis HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", testAdminToken, len(name))
		conn := rawhttptest.MustDial(t, m.AdminAddr)
		conn.Send(head)
		conn.Trickle(200*time.Millisecond, chunks...)
		if resp, body := conn.MustRead(); resp.StatusCode != http.StatusCreated {
			t.Errorf("got %d %s, want 201", resp.StatusCode, body)
		}
	})
}

// The gateway's http.Server leaves the header limit to the handler, which
// is exact: 64 KiB of headers after an 8 KiB request target are not cut by
// net/http (whose own count includes the request line).
func TestGatewayServerKeepsTheExactHeaderLimit(t *testing.T) {
	t.Parallel()
	m := mustNode(t, nil)
	host := "Host: nosuchapi1.execute-api.localhost\r\n"
	target := "/prod/" + strings.Repeat("a", 8<<10-len("/prod/"))
	fill := "X-Fill: " + strings.Repeat("f", 64<<10-len(host)-len("X-Fill: \r\n")) + "\r\n"
	resp, body := rawhttptest.MustExchange(t, m.GatewayAddr, "GET "+target+" HTTP/1.1\r\n"+host+fill+"\r\n")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("8 KiB target and 64 KiB headers: got %d %.80s, want 404 (within every limit; the API does not exist)", resp.StatusCode, body)
	}
}
