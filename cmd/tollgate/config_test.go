package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"tollgate/internal/redistest"
)

func TestLoadSecrets(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(strings.Repeat("t", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(Secrets) bool
	}{
		{"none", nil, "", func(s Secrets) bool { return !s.HasAdminCredentials() }},
		{"token from file", map[string]string{"TOLLGATE_ADMIN_TOKEN_FILE": file}, "", func(s Secrets) bool { return s.AdminToken == strings.Repeat("t", 40) }},
		{"short token", map[string]string{"TOLLGATE_ADMIN_TOKEN": "short"}, "at least 32", nil},
		{"half sigv4 pair", map[string]string{"TOLLGATE_ADMIN_ACCESS_KEY_ID": "AKID"}, "set together", nil},
		{"missing file", map[string]string{"TOLLGATE_KEY_PEPPER_FILE": filepath.Join(dir, "nope")}, "TOLLGATE_KEY_PEPPER_FILE", nil},
		{"pepper", map[string]string{"TOLLGATE_KEY_PEPPER": "p"}, "", func(s Secrets) bool { return string(s.KeyPepper) == "p" }},
		{"short secrets key", map[string]string{"TOLLGATE_SECRETS_KEY": "short"}, "TOLLGATE_SECRETS_KEY must be at least 32", nil},
		{"secrets key", map[string]string{"TOLLGATE_SECRETS_KEY": strings.Repeat("s", 32)}, "", func(s Secrets) bool { return len(s.SecretsKey) == 32 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSecrets(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(s) {
				t.Fatalf("got %+v, %v", s, err)
			}
		})
	}
}

func TestTrustedProxies(t *testing.T) {
	got, err := trustedProxies("TOLLGATE_TRUSTED_PROXIES", []string{"10.0.0.0/8, 192.168.1.7", "::1"})
	if err != nil || len(got) != 3 || got[1].String() != "192.168.1.7/32" || got[2].String() != "::1/128" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := trustedProxies("TOLLGATE_TRUSTED_PROXIES", []string{"nonsense"}); err == nil {
		t.Fatal("want an error for nonsense")
	}
}

func TestLoopbackOnly(t *testing.T) {
	for in, want := range map[string]string{":8001": "127.0.0.1:8001", "0.0.0.0:1": "127.0.0.1:1", "127.0.0.1:5": "127.0.0.1:5", "10.1.1.1:9": "127.0.0.1:9"} {
		if got := loopbackOnly(in); got != want {
			t.Errorf("loopbackOnly(%q) = %q, want %q", in, got, want)
		}
	}
}

// The gateway listens on every interface by default, the admin on loopback
// only (docs/operations.md, "What listens where").
func TestListenDefaults(t *testing.T) {
	c := parseServe(t, map[string]string{"TOLLGATE_ADMIN_ADDR": "", "TOLLGATE_GATEWAY_ADDR": ""})
	if c.Serve.AdminAddr != "127.0.0.1:8001" || c.Serve.GatewayAddr != ":8000" {
		t.Errorf("defaults: admin %q, gateway %q; want 127.0.0.1:8001 and :8000", c.Serve.AdminAddr, c.Serve.GatewayAddr)
	}
}

func TestVersionLine(t *testing.T) {
	if got := versionLine(); !strings.HasPrefix(got, "tollgate ") || !strings.Contains(got, "go1.") {
		t.Errorf("without a linked version: %q, want tollgate <version> (... go1.N)", got)
	}
	old := version
	version = "v1.2.3"
	defer func() { version = old }()
	if got := versionLine(); !strings.HasPrefix(got, "tollgate v1.2.3 (") {
		t.Errorf("with a linked version: %q", got)
	}
}

func TestRunRefusesARedisPrefixWithABrace(t *testing.T) {
	m := NewMain(Config{Role: "gateway", RedisPrefix: "tg{eu}"})
	err := m.Run(context.Background())
	_ = m.Close()
	if err == nil || !strings.Contains(err.Error(), "TOLLGATE_REDIS_PREFIX") || !strings.Contains(err.Error(), "tg{eu}") {
		t.Errorf("got %v, want an error naming TOLLGATE_REDIS_PREFIX and the prefix", err)
	}
}

func TestRunRefusesAnIdleTimeoutOutOfRange(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 2 * time.Hour} {
		m := NewMain(Config{Role: "gateway", IdleTimeout: d})
		err := m.Run(context.Background())
		_ = m.Close()
		if err == nil || !strings.Contains(err.Error(), "TOLLGATE_IDLE_TIMEOUT") {
			t.Errorf("idle timeout %v: got %v, want an error naming TOLLGATE_IDLE_TIMEOUT", d, err)
		}
	}
}

func TestIdleTimeoutDefaultsTo120sFromTheEnvironment(t *testing.T) {
	if c := parseServe(t, map[string]string{"TOLLGATE_IDLE_TIMEOUT": ""}); c.Serve.IdleTimeout != 120*time.Second {
		t.Errorf("default idle timeout %v, want 120s", c.Serve.IdleTimeout)
	}
	if c := parseServe(t, map[string]string{"TOLLGATE_IDLE_TIMEOUT": "45s"}); c.Serve.IdleTimeout != 45*time.Second {
		t.Errorf("TOLLGATE_IDLE_TIMEOUT=45s gave %v", c.Serve.IdleTimeout)
	}
}

// parseServe parses `tollgate serve` with env set for the test ("" unsets
// the variable).
func parseServe(t *testing.T, env map[string]string) cli {
	t.Helper()
	var c cli
	parser, err := kong.New(&c, kong.Name("tollgate"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
	if _, err := parser.Parse([]string{"serve"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// A keep-alive connection that stays idle for TOLLGATE_IDLE_TIMEOUT is
// closed by the gateway (the default, 120 s, would outlast the read
// deadline below).
func TestGatewayClosesAConnectionIdleForTheIdleTimeout(t *testing.T) {
	m := NewMain(Config{
		Role: "gateway", RedisURL: redistest.URL(), RedisPrefix: redistest.MustPrefix(t),
		GatewayAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", LimiterFailureMode: "open",
		LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second, IdleTimeout: time.Second,
	})
	t.Cleanup(func() { _ = m.Close() })
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", m.GatewayAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: gateway.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.Close {
		t.Fatal("the gateway closed the connection after its answer; want keep-alive")
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("reading the idle connection: %v, want EOF (closed by the gateway after its idle timeout)", err)
	}
}
