package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	got := parse(strings.NewReader("init runtime @0.010 ms, 0.030 ms clock, 0 bytes, 0 allocs\n" +
		"some other line\n" +
		"init os @0.20 ms, 0.005 ms clock, 96 bytes, 3 allocs\n" +
		"init os @0.30 ms, 0.002 ms clock, 0 bytes, 0 allocs\n" +
		"init broken @1 ms, x ms clock, 0 bytes, 0 allocs\n"))
	if len(got) != 2 || got["runtime"] != 0.030 || got["os"] != 0.005+0.002 {
		t.Errorf("parse: %v", got)
	}
}

// TestRun measures this test binary against itself: the same packages,
// so the first command adds none; a program that prints no init lines
// stops the run.
func TestRun(t *testing.T) {
	self := os.Args[0] + " -test.run=^$"
	var out bytes.Buffer
	if err := run([]string{"-n", "3", "-warmup", "0", "-top", "5", self, self}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+2+1+5+1 || !strings.HasPrefix(lines[0], "3 rounds") ||
		!strings.HasSuffix(lines[len(lines)-1], ": 0 packages, medians summing to 0.000 ms") {
		t.Errorf("output:\n%s", out.String())
	}
	if err := run([]string{"-n", "1", "/bin/sh -c exit"}, &out); err == nil || !strings.Contains(err.Error(), "no init lines") {
		t.Errorf("a program that is not Go: %v", err)
	}
}
