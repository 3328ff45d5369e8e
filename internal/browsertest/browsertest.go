// Package browsertest drives Debian's headless Chromium through the
// DevTools protocol (chromedp) for tollgate's browser tests. It finds
// controls the way assistive technology does, and the way Playwright's
// getByRole and getByLabel do (with exact names): by role and accessible
// name, read from Chromium's accessibility tree, so a test breaks when a
// control loses its name.
//
// Chromium is required, never optional: MustPage fails the test (it does
// not skip) when no Chromium is found, and says how to install it
// (`make chromium`, which runs `apt-get install -y chromium`).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumEnv names the environment variable that overrides the Chromium
// executable (a path); by default MustChromium looks for chromium, then
// chromium-browser, on PATH.
const ChromiumEnv = "TOLLGATE_TEST_CHROMIUM"

// ArtifactsEnv names the environment variable holding the directory that
// Screenshot writes to; by default it is .artifacts/ at the root of the
// module (gitignored).
const ArtifactsEnv = "TOLLGATE_TEST_ARTIFACTS"

// Wait is how long a Page waits for something to appear before it fails
// the test: generous, for a loaded two-core machine (never a timing
// assertion).
const Wait = 30 * time.Second

// MustChromium returns the Chromium executable: $TOLLGATE_TEST_CHROMIUM,
// else chromium or chromium-browser from PATH. It fails tb, saying how to
// install Chromium, when there is none.
func MustChromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s=%s: %v", ChromiumEnv, p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Fatalf("the browser tests need Chromium and found none on PATH: run `make chromium` " +
		"(apt-get install -y chromium, as root) or set " + ChromiumEnv + " to a Chromium executable")
	return ""
}

// Page is one tab of a headless Chromium started for one test. Its
// methods fail the test on error; they are not safe for concurrent use.
type Page struct {
	tb  testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string // uncaught exceptions, console errors, CSP violations
}

// MustPage starts Chromium headless with a fresh profile (the flags this
// machine needs: no sandbox as root, no GPU, no QUIC, no background
// networking) and returns its first tab, 1280 × 900. Everything is closed
// at test cleanup.
func MustPage(tb testing.TB) *Page {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(MustChromium(tb)),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	p := &Page{tb: tb, ctx: ctx}
	messages := chromedp.Console(ctx)
	go p.collect(messages)
	p.Viewport(1280, 900)
	tb.Cleanup(p.onFailure) // runs before the browser closes
	return p
}

// onFailure keeps a screenshot of the page and its problems when the test
// failed, to show what the test saw.
func (p *Page) onFailure() {
	if !p.tb.Failed() {
		return
	}
	name := "failed-" + strings.NewReplacer("/", "-", " ", "-").Replace(p.tb.Name())
	ctx, cancel := context.WithTimeout(p.ctx, Wait)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(ArtifactsDir(p.tb), name+".png")
		if os.WriteFile(path, png, 0o644) == nil {
			p.tb.Logf("the page when the test failed: %s", path)
		}
	}
	if probs := p.Problems(); len(probs) > 0 {
		p.tb.Logf("problems the page reported:\n%s", strings.Join(probs, "\n"))
	}
}

// collect records the page's exceptions, console errors and Content
// Security Policy violations (network errors such as an expected 403 are
// left out).
func (p *Page) collect(messages func(func(chromedp.ConsoleMessage, error) bool)) {
	for m, err := range messages {
		if err != nil {
			return
		}
		csp := strings.Contains(m.Text, "Content Security Policy")
		if m.IsException() || csp || m.Source == "security" || (m.Type == chromedp.ConsoleError && m.Source == "") {
			p.mu.Lock()
			p.problems = append(p.problems, m.String())
			p.mu.Unlock()
		}
	}
}

// Problems returns the exceptions, console errors and Content Security
// Policy violations the page reported so far.
func (p *Page) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// Do runs chromedp actions on the tab, failing the test on error.
func (p *Page) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Wait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.tb.Fatalf("%s: %v", what, err)
	}
}

// Goto opens url.
func (p *Page) Goto(url string) {
	p.tb.Helper()
	p.Do("open "+url, chromedp.Navigate(url))
}

// Viewport sets the tab's viewport, in CSS pixels.
func (p *Page) Viewport(width, height int64) {
	p.tb.Helper()
	p.Do(fmt.Sprintf("viewport %dx%d", width, height), chromedp.EmulateViewport(width, height))
}

// Eval evaluates a JavaScript expression and decodes its JSON value.
func Eval[T any](p *Page, expr string) T {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Wait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.tb.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Eventually calls check until it returns nil, and fails the test with its
// last error after Wait.
func (p *Page) Eventually(what string, check func() error) {
	p.tb.Helper()
	deadline := time.Now().Add(Wait)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			p.tb.Fatalf("%s: still failing after %v: %v", what, Wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot writes a full-page PNG named name.png into the artifacts
// directory and returns its path.
func (p *Page) Screenshot(name string) string {
	p.tb.Helper()
	// A capture asked for while the page navigates can go unanswered:
	// each try has a third of Wait, and the next starts on a settled page.
	var png []byte
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(p.ctx, Wait/3)
		png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err == nil || p.ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		p.tb.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(ArtifactsDir(p.tb), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.tb.Fatalf("screenshot %s: %v", name, err)
	}
	return path
}

// ArtifactsDir returns (and creates) the directory screenshots go to:
// $TOLLGATE_TEST_ARTIFACTS, else .artifacts/ at the module root.
func ArtifactsDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			tb.Fatalf("artifacts directory: %v", err)
		}
		dir = filepath.Join(root, ".artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("artifacts directory: %v", err)
	}
	return dir
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
