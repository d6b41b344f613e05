package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

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
	if err := run(&out); err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out.String())
	}
	got := out.String()
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
