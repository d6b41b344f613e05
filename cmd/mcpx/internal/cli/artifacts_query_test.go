package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
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

// TestArtifactsQueryImages: --page N --image renders a PDF page and
// --region part of a stored image, each written to --out (or stdout)
// with what it shows on stderr, as artifacts_query answers a client that
// takes images; flags that cannot go together are refused before the
// store is opened.
func TestArtifactsQueryImages(t *testing.T) {
	isolate(t)
	pdf, err := os.ReadFile("../../../../inspect/testdata/pdf/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	var pb bytes.Buffer
	if err := png.Encode(&pb, image.NewGray(image.Rect(0, 0, 300, 200))); err != nil {
		t.Fatal(err)
	}
	dir, ids := putArtifacts(t, [2]string{"application/pdf", string(pdf)}, [2]string{"image/png", pb.String()})
	pdfID, pngID := ids[0], ids[1]
	q := func(args ...string) cli {
		return runCLI(t, nil, append([]string{"artifacts", "query", "--store", dir}, args...)...)
	}
	decode := func(what string, data []byte) image.Rectangle {
		t.Helper()
		img, _, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return img.Bounds()
	}

	file := filepath.Join(t.TempDir(), "page2.png")
	got := q("--page", "2", "--image", "--out", file, pdfID)
	data, _ := os.ReadFile(file)
	if got.code != exitOK || got.stdout != "" || !strings.Contains(got.stderr, "Page 2 of 3 of the PDF "+pdfID+", as a 1212x1568 PNG (") ||
		!strings.Contains(got.stderr, "written to "+file) || !strings.Contains(got.stderr, "ask for page 3") {
		t.Fatalf("--page 2 --image: exit %d\nstdout %q\nstderr %q", got.code, got.stdout, got.stderr)
	}
	if b := decode("the page", data); b.Dx() != 1212 || b.Dy() != 1568 {
		t.Errorf("the page is %v, want 1212x1568", b)
	}
	got = q("--region", "100,50,0,0", pngID)
	if got.code != exitOK || !strings.Contains(got.stderr, "Region 100, 50, 200, 150 (x, y, width and height in pixels) of the 300x200 image") || !strings.Contains(got.stderr, "written to stdout") {
		t.Fatalf("--region: exit %d\nstderr %q", got.code, got.stderr)
	}
	if b := decode("the region", []byte(got.stdout)); b.Dx() != 200 || b.Dy() != 150 {
		t.Errorf("the region is %v, want 200x150", b)
	}
	got = q("--format", "json", "--page", "1", "--image", "--out", file, pdfID)
	if got.code != exitOK || gjson.Get(got.stdout, "total").Int() != 3 || !strings.HasPrefix(gjson.Get(got.stdout, "text").String(), "Page 1 of 3") {
		t.Errorf("--format json: exit %d %s %s", got.code, got.stdout, got.stderr)
	}

	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--image", "--lines", "1", pdfID}, exitUsage, "--image goes with --page"},
		{[]string{"--out", file, "--page", "1", pdfID}, exitUsage, "--out goes with --image or --region"},
		{[]string{"--format", "json", "--page", "1", "--image", pdfID}, exitUsage, "give the image --out FILE"},
		{[]string{"--region", "1,2,3", pngID}, exitUsage, `--region "1,2,3": want X,Y,W,H in pixels`},
		{[]string{"--region", "0,0,10,10", "--page", "1", pngID}, exitUsage, "give one mode, not --page and --region"},
		{[]string{"--region", "0,0,10,10", pdfID}, exitFail, "is not an image"},
		{[]string{"--page", "9", "--image", pdfID}, exitFail, "has 3 pages"},
	} {
		if got := q(c.args...); got.code != c.code || !strings.Contains(got.stderr, c.stderr) {
			t.Errorf("%q: exit %d, stderr %q, want %d and %q", c.args, got.code, got.stderr, c.code, c.stderr)
		}
	}
}
