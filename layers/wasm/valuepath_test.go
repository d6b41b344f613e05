package wasm

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePlainPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a.0.b-c d", []string{"a", "0", "b-c d"}},
		{`we\.ird.\@key.\#`, []string{"we.ird", "@key", "#"}},
		{`\\`, []string{`\`}},
	} {
		got, err := parsePlainPath(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parsePlainPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"@pretty", "a|b", "a.#", "a.#(b=1)", "[a]", "{a}", "a*", "a?", "..a", "a..b", "a.", ".a", `a\`, "!true", `a"b`, "a,b", "a=b", strings.Repeat("a", maxPathBytes+1)} {
		if _, err := parsePlainPath(bad); !errors.Is(err, errNotPlainPath) {
			t.Errorf("parsePlainPath(%q) = %v, want errNotPlainPath", bad, err)
		}
	}
}

// TestLookupPlainStopsAtDeadline: a lookup over a long array gives up once
// the call's context is done, and hands back a slice of the document.
func TestLookupPlainStopsAtDeadline(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"a":[` + strings.Repeat(`1,`, 100_000) + `"last"]}`)
	raw, ok, err := lookupPlain(context.Background(), doc, []string{"a", "100000"})
	if err != nil || !ok || string(raw) != `"last"` {
		t.Fatalf("lookup = %q, %v, %v", raw, ok, err)
	}
	if &raw[0] != &doc[len(doc)-len(`"last"]}`)] {
		t.Fatal("the value is a copy, not a slice of the document")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := lookupPlain(ctx, doc, []string{"a", "100000"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("lookup after the deadline = %v, want context.Canceled", err)
	}
}
