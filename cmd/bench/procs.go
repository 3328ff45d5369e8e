package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// procs starts the processes of one bench run and stops them, in reverse,
// at the end. Each process logs to its own file in dir.
type procs struct {
	dir    string
	cmds   []*exec.Cmd
	labels []string // label of each of cmds
}

// start runs name with args and the extra environment, logging to
// dir/<label>.log.
func (p *procs) start(label, name string, env []string, args ...string) error {
	logf, err := os.Create(filepath.Join(p.dir, label+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", label, err)
	}
	p.cmds = append(p.cmds, cmd)
	p.labels = append(p.labels, label)
	return nil
}

// stop sends SIGTERM to every started process, newest first, and waits up
// to 5 s for each before killing it.
func (p *procs) stop() {
	for i := len(p.cmds) - 1; i >= 0; i-- {
		cmd := p.cmds[i]
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	p.cmds, p.labels = nil, nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// portOf returns the port of a "host:port" address.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// waitHTTP polls url (with host and key as x-api-key when not "") until
// it answers 200 or the deadline passes.
func waitHTTP(ctx context.Context, url, host, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if host != "" {
			req.Host = host
		}
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v", url, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitTCP polls addr until it accepts a connection.
func waitTCP(ctx context.Context, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s does not accept connections: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// itoa is strconv.Itoa, short.
func itoa(n int) string { return strconv.Itoa(n) }
