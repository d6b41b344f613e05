package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// putArtifacts stores each content in a new store folder and returns it
// with the ids.
func putArtifacts(t *testing.T, contents ...[2]string) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "artifacts")
	ctx := context.Background()
	st, err := fsstore.Open(ctx, dir, fsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	var ids []string
	for _, c := range contents {
		ref, err := st.Put(ctx, strings.NewReader(c[1]), store.PutOptions{Namespace: "test", MIMEType: c[0]})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	return dir, ids
}

func TestArtifactsQuery(t *testing.T) {
	isolate(t)
	var log bytes.Buffer
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&log, "%d ok\n", i)
	}
	log.WriteString("501 ERROR disk full\n")
	pdf, err := os.ReadFile("../../../../examples/tableau-server/sales_dashboard.pdf")
	if err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("docs/readme.txt")
	w.Write([]byte("read me first\n"))
	w, _ = zw.Create("logo.png")
	w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	zw.Close()
	dir, ids := putArtifacts(t,
		[2]string{"text/plain", log.String()},
		[2]string{"application/json", `{"items":[{"title":"a","state":"open"},{"title":"b","state":"closed"}]}`},
		[2]string{"application/pdf", string(pdf)},
		[2]string{"application/zip", zb.String()},
	)
	text, js, pdfID, zipID := ids[0], ids[1], ids[2], ids[3]
	q := func(args ...string) cli {
		return runCLI(t, nil, append([]string{"artifacts", "query", "--store", dir}, args...)...)
	}
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"--lines", "2-3", text}, exitOK, "2 ok\n3 ok\n", ""},
		{[]string{"--lines", "1-", "--max-chars", "400", text}, exitOK, "", "lines 1-34 of 501 shown; ask for lines 35-68"},
		{[]string{"--grep", "ERROR", "--context", "1", text}, exitOK, "500-500 ok\n501:501 ERROR disk full\n", ""},
		{[]string{"--bytes", "0-4", text}, exitOK, "1 ok\n", ""},
		{[]string{"--json", "items.#.title", js}, exitOK, "[\"a\",\"b\"]\n", ""},
		{[]string{"--jq", `.items[] | select(.state == "open") | .title`, js}, exitOK, "\"a\"\n", ""},
		{[]string{"--page", "1", pdfID}, exitOK, "", ""},
		{[]string{"--entry", "docs/readme.txt", zipID}, exitOK, "read me first\n", ""},
		{[]string{"--bytes", "0-4", zipID}, exitOK, "00000000: 504b 0304                                PK..\n", ""},
		// bad input
		{[]string{"--page", "2", pdfID}, exitFail, "", "has 1 pages"},
		{[]string{"--entry", "nope", zipID}, exitFail, "", "its first entries: docs/readme.txt, logo.png"},
		{[]string{text}, exitUsage, "", "give one of --lines"},
		{[]string{"--grep", "a", "--jq", ".", text}, exitUsage, "", "give one mode, not --grep and --jq"},
		{[]string{"--lines", "x-y", text}, exitUsage, "", `--lines "x-y": want A-B`},
		{[]string{"--format", "xml", "--lines", "1", text}, exitUsage, "", "want text or json"},
		{[]string{"--lines", "1", "test_0123456789ab"}, exitFail, "", "not found"},
		{[]string{"--lines", "900-901", text}, exitFail, "", "has 501 lines"},
		{[]string{"--grep", "a(", text}, exitFail, "", "invalid regular expression"},
		{[]string{"--jq", ".items |||", js}, exitFail, "", "invalid jq program"},
		{[]string{"--page", "1", text}, exitFail, "", "not a PDF"},
	} {
		got := q(c.args...)
		if got.code != c.code || (c.stdout != "" && got.stdout != c.stdout) || !strings.Contains(got.stderr, c.stderr) || (c.stderr == "" && got.stderr != "") {
			t.Errorf("%q: exit %d\nstdout %q\nstderr %q", c.args, got.code, got.stdout, got.stderr)
		}
	}
	got := q("--format", "json", "--max-chars", "400", "--grep", "ok$", text)
	if got.code != exitOK || gjson.Get(got.stdout, "total").Int() != 500 || !strings.HasPrefix(gjson.Get(got.stdout, "text").String(), "1:1 ok\n2:2 ok") ||
		!strings.Contains(gjson.Get(got.stdout, "cut").String(), "of 500 matching lines shown") {
		t.Errorf("--format json: %d %s %s", got.code, got.stdout, got.stderr)
	}
	if got := q("--page", "1", pdfID); !strings.Contains(got.stdout, "Sales Dashboard") {
		t.Errorf("--page 1: %q", got.stdout)
	}
	if got := q("--grep", "Export", pdfID); got.code != exitOK || !strings.HasPrefix(got.stdout, "page 1, line ") || !strings.Contains(got.stdout, ":Export ") {
		t.Errorf("--grep on a PDF reads its text, each line named by its page: exit %d %q %q", got.code, got.stdout, got.stderr)
	}
	got = q("--entry", "logo.png", zipID)
	if !strings.Contains(got.stdout, "entry \"logo.png\" is image/png (16 bytes), stored as artifact test_") {
		t.Errorf("--entry logo.png: %+v", got)
	} else if id := strings.TrimSpace(got.stdout[strings.LastIndex(got.stdout, " ")+1:]); q("--bytes", "0-4", id).stdout != "00000000: 8950 4e47                                .PNG\n" {
		t.Errorf("stored entry %s: %+v", id, q("--bytes", "0-4", id))
	}
	if help := q("--help"); help.code != exitOK || !strings.Contains(help.stdout, "Example:") {
		t.Errorf("help: %+v", help)
	}
}
