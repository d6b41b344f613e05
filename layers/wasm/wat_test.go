package wasm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/layers/wasm/wasmtest"
)

// watGuest compiles testdata/wat/name with its placeholders rendered:
// "{{KEY}}" becomes vars[KEY]; a value meant for a WAT string literal is
// passed through watString first.
func watGuest(t testing.TB, name string, vars map[string]string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "wat", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	if i := strings.Index(s, "{{"); i >= 0 {
		t.Fatalf("%s: placeholder left unrendered at %q", name, s[i:min(len(s), i+20)])
	}
	return wasmtest.BuildWAT(t, []byte(s))
}

// watString spells b as the body of a WAT string literal: every byte as a
// \hh escape, so any bytes survive.
func watString(b string) string {
	var sb strings.Builder
	sb.Grow(3 * len(b))
	for i := 0; i < len(b); i++ {
		fmt.Fprintf(&sb, "\\%02x", b[i])
	}
	return sb.String()
}
