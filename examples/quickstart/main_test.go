package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// TestQuickstart runs the quickstart from the repository root, as the
// README does, with its store in a temp folder: it prints the call's size
// before and after the gateway, the artifact id and where to fetch it.
func TestQuickstart(t *testing.T) {
	home := t.TempDir()
	t.Setenv("MCPX_HOME", home)
	t.Chdir("../..")
	var out bytes.Buffer
	if err := run(&out, withGoEnv(t, configPath)); err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out.String())
	}
	checkOutput(t, home, out.String())
	checkREADME(t, home, out.String())
}

// checkREADME checks that the README shows what the quickstart printed,
// byte for byte: the block after "The first command prints", the store's
// folder under home read as the README's.
func checkREADME(t *testing.T, home, got string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "The first command prints")
	_, block, ok2 := strings.Cut(after, "\n```\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no block after \"The first command prints\"")
	}
	shownDir := regexp.MustCompile(`\) is in (\S+)\n`).FindStringSubmatch(block)
	if shownDir == nil {
		t.Fatalf("the README's block names no store folder:\n%s", block)
	}
	got = strings.ReplaceAll(got, filepath.Join(home, "artifacts"), shownDir[1])
	if got != block {
		t.Errorf("README.md shows what the quickstart does not print; it prints:\n%s\nthe README shows:\n%s", got, block)
	}
}

// coldStartSleep is how long the upstream of TestQuickstartColdStart
// takes to start, as "go run" compiling on a new machine did (33 s and
// more against the gateway's 15 s StartWait).
const coldStartSleep = "30"

// TestQuickstartColdStart is the quickstart's path on a new machine: the
// gateway's upstream sleeps 30 s before it execs the server, as a cold
// "go run" compiles first. The client's initialize waits for it (the
// default start-up timeout of a stdio server, 2 minutes), the call finds
// download_workbook (it answered "unknown tool" before), and the artifact
// is stored. The config's "env" reaches the gateway's upstream only: the
// direct call does not sleep.
func TestQuickstartColdStart(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the cold-start wrapper is a POSIX shell script")
	}
	home := t.TempDir()
	t.Setenv("MCPX_HOME", home)
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"tableau": {
		"command": "sh",
		"args": ["-c", "sleep \"${MCPX_QUICKSTART_SLEEP:-0}\"; exec go run ./examples/tableau-server"],
		"env": {"MCPX_QUICKSTART_SLEEP": "`+coldStartSleep+`"},
		"timeout": "120s"
	}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..")
	var out bytes.Buffer
	start := time.Now()
	if err := run(&out, withGoEnv(t, cfg)); err != nil {
		t.Fatalf("quickstart with a 30 s start: %v\n%s", err, out.String())
	}
	if took := time.Since(start); took < 30*time.Second {
		t.Errorf("the run took %s: the upstream did not sleep 30 s (the test's premise)", took)
	}
	checkOutput(t, home, out.String())
}

// withGoEnv writes a copy of the config at path whose servers' "env"
// also holds the Go settings this test builds with, and returns the
// copy's path. The gateway passes an upstream only
// upstream.InheritedEnv (PATH, HOME, ...), so where the build and module
// caches are set apart from HOME (as on CI, and in the suite's timing in
// BENCHMARKS.md), the upstream's "go run" would compile the server and
// all it imports from nothing: a minute and more on a busy machine,
// which the direct call, run with this process's environment, does not
// pay. Nothing the quickstart prints depends on it.
func withGoEnv(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "env", "-json", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goEnv map[string]string
	if err := json.Unmarshal(out, &goEnv); err != nil {
		t.Fatalf("go env: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	servers, _ := cfg["mcpServers"].(map[string]any)
	for _, s := range servers {
		s := s.(map[string]any)
		env, _ := s["env"].(map[string]any)
		if env == nil {
			env = map[string]any{}
		}
		for k, v := range goEnv {
			if v != "" {
				env[k] = v
			}
		}
		s["env"] = env
	}
	b, err = json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(copied, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return copied
}

// checkOutput checks what the quickstart printed, and that the artifact
// it names in the store under home is the server's PDF.
func checkOutput(t *testing.T, home, got string) {
	t.Helper()
	before := regexp.MustCompile(`before: download_workbook returns (\d+) bytes to the model; the PDF is (\d+) characters of base64`).FindStringSubmatch(got)
	after := regexp.MustCompile(`after:  through mcpx the model gets (\d+) bytes`).FindStringSubmatch(got)
	art := regexp.MustCompile(`artifact (tableau_[0-9a-f]{12}) \(application/pdf, (\d+) bytes\)`).FindStringSubmatch(got)
	fetch := regexp.MustCompile(`fetch it: go run ./cmd/mcpx artifacts get -o sales.pdf (tableau_[0-9a-f]{12})`).FindStringSubmatch(got)
	if before == nil || after == nil || art == nil || fetch == nil {
		t.Fatalf("quickstart output lacks the before/after sizes, the artifact or the fetch line:\n%s", got)
	}
	b, _ := strconv.Atoi(before[1])
	a, _ := strconv.Atoi(after[1])
	pdf, _ := strconv.Atoi(art[2])
	if a >= b || pdf == 0 || fetch[1] != art[1] {
		t.Errorf("before %d bytes, after %d bytes, PDF %d bytes, fetch %s for %s:\n%s", b, a, pdf, fetch[1], art[1], got)
	}
	// the artifact is the server's PDF, byte for byte
	st, err := fsstore.Open(context.Background(), filepath.Join(home, "artifacts"), fsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	rc, _, err := st.Get(context.Background(), art[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	stored, _ := io.ReadAll(rc)
	want, err := os.ReadFile("examples/tableau-server/sales_dashboard.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, want) || len(stored) != pdf {
		t.Errorf("artifact %s holds %d bytes, not the server's %d-byte PDF", art[1], len(stored), len(want))
	}
}
