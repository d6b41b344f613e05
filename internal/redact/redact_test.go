package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
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

// A secret with a quote, a backslash or a space reached logs and
// clients in its escaped forms (JSON, %q, percent-encoded), which the
// raw-value replacement did not see.
func TestRedactorEncodedForms(t *testing.T) {
	const secret = `p@ss "word"\ with/spaces&more<>`
	x := New(map[string]string{"PW": secret})
	jsonEsc, _ := json.Marshal(secret) // HTML-escaped: \u003c
	var plain strings.Builder
	e := json.NewEncoder(&plain)
	e.SetEscapeHTML(false)
	_ = e.Encode(secret)
	inner := string(jsonEsc[1 : len(jsonEsc)-1])
	nested, _ := json.Marshal(inner)
	for name, form := range map[string]string{
		"raw":          secret,
		"json":         string(jsonEsc[1 : len(jsonEsc)-1]),
		"json no html": strings.TrimSpace(plain.String())[1 : len(strings.TrimSpace(plain.String()))-1],
		"json in json": string(nested[1 : len(nested)-1]),
		"go quoted":    strconv.Quote(secret)[1 : len(strconv.Quote(secret))-1],
		"query escape": url.QueryEscape(secret),
		"path escape":  url.PathEscape(secret),
		"query %20":    strings.ReplaceAll(url.QueryEscape(secret), "+", "%20"),
	} {
		line := "connect https://h/mcp?key=" + form + " failed"
		got := x.String(line)
		if got != "connect https://h/mcp?key=${PW:masked} failed" {
			t.Errorf("%s form %q: String gave %q", name, form, got)
		}
		var buf bytes.Buffer
		_, _ = x.Writer(&buf).Write([]byte(line + "\n"))
		if strings.Contains(buf.String(), form) {
			t.Errorf("%s form %q: Writer passed it on: %q", name, form, buf.String())
		}
	}
	// an hclog line quotes a value with spaces: the secret in an error
	// message, JSON-escaped inside it, then %q'd by the logger
	msg := fmt.Sprintf("error=%q", `upstream said {"key":`+string(jsonEsc)+`}`)
	if got := x.String(msg); strings.Contains(got, "word") {
		t.Errorf("a JSON-escaped secret quoted again: %q", got)
	}
}
