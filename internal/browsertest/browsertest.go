// Package browsertest starts a headless Chromium for the UI tests
// (chromedp): Debian's chromium, installed by scripts/chromium-tools.sh
// and named by MCPX_CHROMIUM. Without one a test skips, or fails under
// CI=true, where the browser tests must run.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Env names the Chromium binary; scripts/test.sh sets it.
const Env = "MCPX_CHROMIUM"

// ArtifactsEnv names the folder screenshots are kept in for review;
// without it they go to testdata/out in the test's package (git-ignored).
const ArtifactsEnv = "MCPX_TEST_ARTIFACTS"

// Path returns the Chromium binary: $MCPX_CHROMIUM, else chromium on
// PATH; "" when there is none.
func Path() string {
	if p := os.Getenv(Env); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start returns a chromedp context of a fresh headless Chromium, closed
// when t ends, with a deadline of timeout. It skips t when no Chromium is
// installed, and fails it under CI=true.
func Start(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	bin := Path()
	if bin == "" {
		msg := "no Chromium: run scripts/chromium-tools.sh (Debian's chromium) or set " + Env
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox (containers)
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}

// OutDir returns the folder for t's screenshots, created:
// $MCPX_TEST_ARTIFACTS/<test>, else testdata/out/<test>.
func OutDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv(ArtifactsEnv)
	if base == "" {
		base = filepath.Join("testdata", "out")
	}
	dir := filepath.Join(base, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot saves the page as OutDir(t)/name.png and logs where.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(OutDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// Do runs actions on ctx's page; when one fails it keeps a screenshot
// ("failed") and fails t, saying what was being done.
func Do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		Screenshot(t, ctx, "failed")
		t.Fatalf("%s: %v", what, err)
	}
}

// Poll waits up to timeout for the expression js to be true on ctx's
// page; when it is not it keeps a screenshot ("failed") and fails t,
// saying what it waited for.
func Poll(t testing.TB, ctx context.Context, what, js string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(timeout))); err != nil {
		Screenshot(t, ctx, "failed")
		t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// Console records what the page's console shows from now on: the
// browser's log entries (a failed request's "Failed to load resource:
// the server responded with a status of 404", with its URL) and uncaught
// exceptions, one line each; the returned func reads them so far.
func Console(t testing.TB, ctx context.Context) func() []string {
	t.Helper()
	var (
		mu    sync.Mutex
		lines []string
	)
	add := func(s string) {
		mu.Lock()
		lines = append(lines, s)
		mu.Unlock()
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdplog.EventEntryAdded:
			add(fmt.Sprintf("%s %s: %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			add(fmt.Sprintf("exception: %s %s:%d", msg, d.URL, d.LineNumber+1))
		}
	}); err != nil {
		t.Fatalf("listening to the console: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enabling the log: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}
