package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Test_main runs main with os.Stdout swapped for a pipe and checks what it
// printed: the PDF became one artifact, and the model sees its summary and
// id instead of the base64.
func Test_main(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	func() {
		defer func() { os.Stdout = stdout; w.Close() }()
		main()
	}()
	out := string(<-done)

	m := regexp.MustCompile(`(?m)^artifact: (tableau_[0-9a-f]{12,}) \(application/pdf, (\d+) bytes\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no artifact line in:\n%s", out)
	}
	id := m[1]
	if !regexp.MustCompile(`(?m)^summary: .*PDF.*` + id).MatchString(out) {
		t.Errorf("no summary naming the PDF and %s in:\n%s", id, out)
	}
	if strings.Count(out, "artifact: ") != 1 {
		t.Errorf("want exactly one artifact in:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^result: \d+ bytes in, \d+ bytes to the model$`).MatchString(out) {
		t.Errorf("no result line in:\n%s", out)
	}
}

// TestRun checks the sizes run reports: the input is the sample's size
// and the model gets a fraction of it.
func TestRun(t *testing.T) {
	var buf bytes.Buffer
	if err := run(&buf); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^result: (\d+) bytes in, (\d+) bytes to the model$`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("no result line in:\n%s", buf.String())
	}
	in, _ := strconv.Atoi(m[1])
	out, _ := strconv.Atoi(m[2])
	if in != len(toolResult()) || out >= in/2 {
		t.Errorf("%d bytes in, %d out: want the sample's %d in and well under half of it out", in, out, len(toolResult()))
	}
}
