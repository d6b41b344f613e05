package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
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
