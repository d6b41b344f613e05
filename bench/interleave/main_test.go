package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRun: every command runs once per round, after the prepare command,
// and gets one line of figures; a failing command stops the run.
func TestRun(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "log")
	var out bytes.Buffer
	err = run([]string{"-n", "3", "-warmup", "1", "-prepare", "echo p >> " + log,
		sh + " -c exit", "/bin/sh -c exit"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "3 rounds") || !strings.Contains(lines[2], "1.00x") {
		t.Errorf("output:\n%s", out.String())
	}
	b, err := exec.Command("wc", "-l", log).Output()
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), "8") {
		t.Errorf("prepare ran %s times, want 8 (4 rounds of 2 commands): %v", b, err)
	}
	if err := run([]string{"-n", "1", sh + " -c false"}, &out); err == nil {
		t.Error("a failing command: no error")
	}
}

// TestRunFirstLine: -first-line times a command to the first line it
// writes, not to its exit.
func TestRunFirstLine(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "late.sh")
	if err := os.WriteFile(script, []byte("echo first\nsleep 1\necho second\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		short bool
	}{
		{[]string{"-n", "1", "-warmup", "0", "-first-line", sh + " " + script}, true},
		{[]string{"-n", "1", "-warmup", "0", sh + " " + script}, false},
	} {
		var out bytes.Buffer
		if err := run(tc.args, &out); err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(strings.Split(out.String(), "\n")[1])
		ms, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			t.Fatalf("output:\n%s", out.String())
		}
		// The script writes its first line at once and exits a second later.
		if short := ms < 800; short != tc.short {
			t.Errorf("%v: %.1f ms, want under 800 ms: %v\n%s", tc.args, ms, tc.short, out.String())
		}
	}
}
