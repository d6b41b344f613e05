package gateway

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// maxRootLines bounds the gateway package's own code (its non-test Go
// files): the root builds the rooms and routes between them; a concern
// that grows here belongs in a room of its own (docs/design.md, "The
// gateway's rooms").
const maxRootLines = 2500

func TestRootStaysSmall(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := os.Open(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines++
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if lines > maxRootLines {
		t.Errorf("the gateway package's own files hold %d lines, over %d: move the concern that grew into a room (gateway/internal/...)", lines, maxRootLines)
	}
}
