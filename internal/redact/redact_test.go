package redact

import (
	"bytes"
	"testing"
)

func TestRedactor(t *testing.T) {
	x := New(map[string]string{"TOKEN": "s3cr3t-value", "LONG": "s3cr3t-value-longer", "SHORT": "on"})
	got := x.String("url https://h/mcp?key=s3cr3t-value&b=s3cr3t-value-longer on")
	want := "url https://h/mcp?key=${TOKEN:masked}&b=${LONG:masked} on"
	if got != want {
		t.Fatalf("String: got %q want %q", got, want)
	}
	var buf bytes.Buffer
	n, err := x.Writer(&buf).Write([]byte("[WARN] connect s3cr3t-value failed\n"))
	if err != nil || n != len("[WARN] connect s3cr3t-value failed\n") {
		t.Fatalf("Write: %d %v", n, err)
	}
	if buf.String() != "[WARN] connect ${TOKEN:masked} failed\n" {
		t.Fatalf("Writer: %q", buf.String())
	}
	var none *Redactor
	if none.String("s3cr3t-value") != "s3cr3t-value" || New(nil).String("x") != "x" {
		t.Fatal("nil or empty redactor changed text")
	}
}
