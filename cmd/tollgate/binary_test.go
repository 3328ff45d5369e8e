package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"tollgate/internal/waittest"
)

// startTollgate runs this test binary as `tollgate args...` (TestMain's
// TOLLGATE_TEST_RUN_MAIN hook), its stderr in logs; it is killed at
// cleanup if still running.
func startTollgate(t *testing.T, logs *logBuffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), "TOLLGATE_TEST_RUN_MAIN=1")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// jsonLines parses every non-empty line of out as a JSON object, failing
// on any that is not one.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		lines = append(lines, m)
	}
	return lines
}

// A gateway node whose Redis does not answer writes only JSON lines (the
// Redis client's own complaints included: go-redis writes plain text
// unless given a logger), and SIGTERM is logged, as is the end of the
// shutdown.
func TestServeLogsJSONOnlyAndItsShutdown(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	cmd := startTollgate(t, logs, "serve", "--role=gateway", "--log-format=json",
		fmt.Sprintf("--redis-url=redis://127.0.0.1:%d/0", freePort(t)),
		"--gateway-addr=127.0.0.1:0", "--gateway-tls-addr=127.0.0.1:0", "--metrics-addr=127.0.0.1:0", "--redis-timeout=100ms", "--shutdown-timeout=5s")
	waittest.Until(t, "the Redis client's dial failure in the log", 20*time.Second, func() bool {
		return strings.Contains(logs.String(), "failed to dial")
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tollgate still running 30 s after SIGTERM")
	}
	var dial, shutdown, stopped bool
	for _, l := range jsonLines(t, logs.String()) {
		msg, _ := l["msg"].(string)
		dial = dial || msg == "redis client" && strings.Contains(fmt.Sprint(l["detail"]), "failed to dial")
		shutdown = shutdown || strings.HasPrefix(msg, "shutting down") && strings.Contains(fmt.Sprint(l["cause"]), "terminated")
		stopped = stopped || msg == "stopped"
	}
	if !dial || !shutdown || !stopped {
		t.Errorf("log lines: redis client dial failure %v, shutting down (cause terminated) %v, stopped %v; want all three in:\n%s",
			dial, shutdown, stopped, logs.String())
	}
}
