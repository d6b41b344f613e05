package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// TestArtifactLifecycle follows one artifact from transform through ls,
// get (stdout and -o) and rm.
func TestArtifactLifecycle(t *testing.T) {
	isolate(t)
	storeDir := t.TempDir()
	pdf := samplePDF()
	raw := tableauResult(t, pdf)
	sum := sha256.Sum256(pdf)

	tr := runCLI(t, bytes.NewReader(raw), "transform", "--store", storeDir, "--server", "tableau", "--tool", "download_workbook")
	if tr.code != exitOK {
		t.Fatalf("transform: exit code %d; stderr:\n%s", tr.code, tr.stderr)
	}
	id := artifactOf(t, tr.stdout)

	// The same bytes again: the same id, still one artifact.
	again := runCLI(t, bytes.NewReader(raw), "transform", "--store", storeDir, "--server", "tableau", "--tool", "download_workbook")
	if again.code != exitOK || artifactOf(t, again.stdout) != id {
		t.Fatalf("second transform: exit code %d, want the same id %s", again.code, id)
	}

	t.Run("ls --json", func(t *testing.T) {
		got := runCLI(t, nil, "artifacts", "ls", "--json", "--store", storeDir)
		if got.code != exitOK || got.stderr != "" {
			t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
		}
		refs := decodeRefs(t, got.stdout)
		if len(refs) != 1 {
			t.Fatalf("%d refs listed, want 1:\n%s", len(refs), got.stdout)
		}
		want := engine.ArtifactRef{
			ID: id, MIMEType: "application/pdf", SizeBytes: int64(len(pdf)), Filename: refs[0].Filename,
			SHA256: hex.EncodeToString(sum[:]), Source: store.Source{Server: "tableau", Tool: "download_workbook", Path: "content", Layer: refs[0].Source.Layer},
			URI: "mcpx://artifacts/" + id, Content: refs[0].Content,
		}
		if k := gjson.GetBytes(refs[0].Content, "kind").String(); k != "pdf" {
			t.Errorf("content %s, want the summary of a PDF", refs[0].Content)
		}
		if !reflect.DeepEqual(refs[0], want) {
			t.Errorf("ref\n%+v\nwant\n%+v", refs[0], want)
		}
	})
	t.Run("ls table", func(t *testing.T) {
		got := runCLI(t, nil, "artifacts", "ls", "--store", storeDir)
		if got.code != exitOK {
			t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d lines, want a header and one row:\n%s", len(lines), got.stdout)
		}
		if h := strings.Fields(lines[0]); strings.Join(h, " ") != "ID MIME SIZE FILENAME SOURCE CREATED LAST ACCESS EXPIRES" {
			t.Errorf("header %q", lines[0])
		}
		for _, w := range []string{id, "application/pdf", humanize.Bytes(int64(len(pdf))), "tableau/download_workbook"} {
			if !strings.Contains(lines[1], w) {
				t.Errorf("row lacks %q: %q", w, lines[1])
			}
		}
		// Aligned: every column starts at the same byte in both lines.
		if strings.Index(lines[0], "MIME") != strings.Index(lines[1], "application/pdf") {
			t.Errorf("columns not aligned:\n%s", got.stdout)
		}
	})
	t.Run("get to stdout", func(t *testing.T) {
		got := runCLI(t, nil, "artifacts", "get", "--store", storeDir, id)
		if got.code != exitOK || got.stderr != "" {
			t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
		}
		if !bytes.Equal([]byte(got.stdout), pdf) {
			t.Errorf("got %d bytes, want the %d original bytes", len(got.stdout), len(pdf))
		}
	})
	for _, order := range [][]string{{"-o", "FILE", "ID"}, {"ID", "-o", "FILE"}, {"ID", "--o=FILE"}} {
		t.Run("get "+strings.Join(order, " "), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "sales.pdf")
			if err := os.WriteFile(out, []byte("old content"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"artifacts", "get", "--store", storeDir}
			for _, a := range order {
				args = append(args, strings.NewReplacer("FILE", out, "ID", id).Replace(a))
			}
			got := runCLI(t, nil, args...)
			if got.code != exitOK || got.stdout != "" {
				t.Fatalf("exit code %d, stdout %d bytes; stderr:\n%s", got.code, len(got.stdout), got.stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil || !bytes.Equal(b, pdf) {
				t.Errorf("file holds %d bytes (%v), want the %d original bytes", len(b), err, len(pdf))
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("folder holds %v, want only sales.pdf (no temp files)", names)
			}
		})
	}
	t.Run("rm then get", func(t *testing.T) {
		rm := runCLI(t, nil, "artifacts", "rm", "--store", storeDir, id)
		if rm.code != exitOK || rm.stdout != "" || rm.stderr != "" {
			t.Fatalf("rm: exit code %d, stdout %q, stderr %q", rm.code, rm.stdout, rm.stderr)
		}
		get := runCLI(t, nil, "artifacts", "get", "--store", storeDir, id)
		if get.code != exitFail || get.stdout != "" {
			t.Errorf("get after rm: exit code %d, stdout %d bytes; want 1 and nothing", get.code, len(get.stdout))
		}
		if !strings.HasPrefix(get.stderr, "mcpx artifacts get: ") || !strings.Contains(get.stderr, "not found") || !strings.Contains(get.stderr, id) {
			t.Errorf("get after rm: stderr %q, want \"not found\" and the id", get.stderr)
		}
		again := runCLI(t, nil, "artifacts", "rm", "--store", storeDir, id)
		if again.code != exitFail || !strings.Contains(again.stderr, "not found") {
			t.Errorf("second rm: exit code %d, stderr %q; want 1 and \"not found\"", again.code, again.stderr)
		}
		ls := runCLI(t, nil, "artifacts", "ls", "--json", "--store", storeDir)
		if ls.code != exitOK || ls.stdout != "" {
			t.Errorf("ls after rm: exit code %d, stdout %q; want 0 and nothing", ls.code, ls.stdout)
		}
	})
}

func TestArtifactsBadIDs(t *testing.T) {
	isolate(t)
	storeDir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "get not an id", args: []string{"get", "../../etc/passwd"}, want: "invalid artifact id"},
		{name: "get unknown", args: []string{"get", "local_0123456789ab"}, want: "not found"},
		{name: "rm unknown", args: []string{"rm", "local_0123456789ab"}, want: "not found"},
		{name: "rm not an id", args: []string{"rm", "x y"}, want: "invalid artifact id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"artifacts", tt.args[0], "--store", storeDir}, tt.args[1:]...)
			got := runCLI(t, nil, args...)
			if got.code != exitFail || got.stdout != "" {
				t.Errorf("exit code %d, stdout %q; want 1 and nothing", got.code, got.stdout)
			}
			if !strings.Contains(got.stderr, tt.want) || strings.Count(got.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line with %q", got.stderr, tt.want)
			}
		})
	}
}

// TestWriteFileAtomic checks that a failed write leaves the old file and
// no temp file behind.
func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(out, strings.NewReader("new"), 5); err == nil {
		t.Fatal("a short read succeeded")
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("file holds %q after a failed write, want \"old\"", b)
	}
	if err := writeFileAtomic(out, errReader{}, 5); err == nil {
		t.Fatal("a read error succeeded")
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v after failed writes, want only a.bin", names)
	}
	if err := writeFileAtomic(out, strings.NewReader("new"), 3); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("file holds %q, want \"new\"", b)
	}
	if err := writeFileAtomic(filepath.Join(dir, "missing", "a.bin"), strings.NewReader("x"), 1); err == nil {
		t.Error("writing into a missing folder succeeded")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func decodeRefs(t *testing.T, out string) []engine.ArtifactRef {
	t.Helper()
	var refs []engine.ArtifactRef
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		var r lsEntry
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %q is not an ArtifactRef: %v", sc.Text(), err)
		}
		if r.LastAccess == nil {
			t.Fatalf("line %q has no last_access", sc.Text())
		}
		refs = append(refs, r.ArtifactRef)
	}
	return refs
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestArtifactsLsPages checks that ls lists every artifact, not just the
// store's first page.
func TestArtifactsLsPages(t *testing.T) {
	isolate(t)
	dir, st := openTestStore(t)
	ctx := context.Background()
	const n = fsstore.DefaultPageSize + 5
	for i := range n {
		if _, err := st.Put(ctx, strings.NewReader(fmt.Sprintf("artifact %d", i)), store.PutOptions{Namespace: "test", MIMEType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	js := runCLI(t, nil, "artifacts", "ls", "--json", "--store", dir)
	if got := len(decodeRefs(t, js.stdout)); js.code != exitOK || got != n {
		t.Errorf("ls --json: exit code %d, %d refs; want 0 and %d", js.code, got, n)
	}
	table := runCLI(t, nil, "artifacts", "ls", "--store", dir)
	if got := strings.Count(table.stdout, "\n"); table.code != exitOK || got != n+1 {
		t.Errorf("ls: exit code %d, %d lines; want 0 and %d", table.code, got, n+1)
	}
}

// ls reports the expiry the gateway applies: with no store.retention in
// the config, mcpx serve removes artifacts an hour after their last use
// (the default policy), and ls says when, as the UI (GET /artifacts)
// does, rather than "-".
func TestArtifactsLsExpiryMatchesServe(t *testing.T) {
	isolate(t)
	base, dir := startServeProcess(t)
	resp, err := http.Post(base+"/transform?server=files&tool=report", "application/json", bytes.NewReader(uiToolResult()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("transform: %s", resp.Status)
	}
	resp, err = http.Get(base + "/artifacts")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ui := map[string]string{}
	for _, a := range gjson.GetBytes(page, "artifacts").Array() {
		ui[a.Get("artifact.id").String()] = a.Get("expires_at").String()
	}
	if len(ui) != 4 {
		t.Fatalf("GET /artifacts: %s", page)
	}
	args := []string{"artifacts", "ls", "--store", filepath.Join(dir, "store"), "--config", filepath.Join(dir, "mcpx.json")}
	js := runCLI(t, nil, append(args, "--json")...)
	table := runCLI(t, nil, args...)
	if js.code != exitOK || table.code != exitOK {
		t.Fatalf("ls: exit codes %d, %d; stderr %s%s", js.code, table.code, js.stderr, table.stderr)
	}
	rows := strings.Split(strings.TrimSpace(table.stdout), "\n")[1:]
	for i, e := range decodeLs(t, js.stdout) {
		want, err := time.Parse(time.RFC3339Nano, ui[e.ID])
		if err != nil || e.ExpiresAt == nil || !e.ExpiresAt.Equal(want) || !want.Equal(e.LastAccess.Add(time.Hour)) {
			t.Errorf("ls --json: %s expires at %v, the UI says %s (last access %v, ttl 1h)", e.ID, e.ExpiresAt, ui[e.ID], e.LastAccess)
			continue
		}
		if cell := want.Local().Format("2006-01-02 15:04:05"); i >= len(rows) || !strings.HasSuffix(rows[i], cell) {
			t.Errorf("ls: row %d = %q, want it to end with the expiry %s", i, rows[i], cell)
		}
	}
}

// decodeLs reads ls --json's lines.
func decodeLs(t *testing.T, out string) []lsEntry {
	t.Helper()
	var es []lsEntry
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e lsEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("ls --json line %q: %v", l, err)
		}
		es = append(es, e)
	}
	return es
}
