package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// openTestStore opens a new folder store for a test to fill; the test
// closes it before the CLI opens the folder.
func openTestStore(t *testing.T) (dir string, st *fsstore.Store) {
	t.Helper()
	dir = t.TempDir()
	st, err := fsstore.Open(context.Background(), dir, fsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

// fillRetentionStore puts 5 artifacts in session a and 2 in session b,
// and writes a config whose retention keeps 2 per session (fifo, ttl 1h).
func fillRetentionStore(t *testing.T) (dir, cfgPath string, a []string) {
	t.Helper()
	dir, st := openTestStore(t)
	ctx := context.Background()
	for i := range 7 {
		sess := "a"
		if i >= 5 {
			sess = "b"
		}
		ref, err := st.Put(ctx, strings.NewReader(fmt.Sprintf("artifact %d", i)), store.PutOptions{Namespace: "test", Scope: store.Scope{SessionID: sess}})
		if err != nil {
			t.Fatal(err)
		}
		if sess == "a" {
			a = append(a, ref.ID)
		}
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(t.TempDir(), "mcpx.json")
	os.WriteFile(cfgPath, []byte(`{"store": {"retention": {"ttl": "1h", "max_artifacts_per_session": 2, "strategy": "fifo"}}}`), 0o600)
	return dir, cfgPath, a
}

func gcLines(t *testing.T, out string) []store.Removal {
	t.Helper()
	var rs []store.Removal
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r store.Removal
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestArtifactsGc(t *testing.T) {
	isolate(t)
	dir, cfg, a := fillRetentionStore(t)
	dry := runCLI(t, nil, "artifacts", "gc", "--store", dir, "--config", cfg, "--dry-run", "--json")
	rs := gcLines(t, dry.stdout)
	if dry.code != exitOK || len(rs) != 3 {
		t.Fatalf("gc --dry-run: exit code %d, %d lines; stderr %s", dry.code, len(rs), dry.stderr)
	}
	for i, r := range rs {
		if r.ID != a[i] || r.Why != "max_artifacts_per_session session=a" || r.Bytes != int64(len("artifact 0")) {
			t.Errorf("line %d: %+v, want %s removed for the session limit", i, r, a[i])
		}
	}
	if got := decodeRefs(t, runCLI(t, nil, "artifacts", "ls", "--json", "--store", dir).stdout); len(got) != 7 {
		t.Fatalf("gc --dry-run removed something: %d left", len(got))
	}
	none := runCLI(t, nil, "artifacts", "gc", "--store", dir)
	if none.code != exitOK || !strings.Contains(none.stdout, "removed 0 artifacts") || !strings.Contains(none.stderr, "no store.retention") {
		t.Errorf("gc without a policy: exit code %d, stdout %q, stderr %q", none.code, none.stdout, none.stderr)
	}
	gc := runCLI(t, nil, "artifacts", "gc", "--store", dir, "--config", cfg)
	if gc.code != exitOK || !strings.Contains(gc.stdout, a[0]+"\t10\tmax_artifacts_per_session session=a\n") || !strings.Contains(gc.stdout, "removed 3 artifacts (30 B)") {
		t.Errorf("gc: exit code %d, stdout:\n%s\nstderr: %s", gc.code, gc.stdout, gc.stderr)
	}
	if got := decodeRefs(t, runCLI(t, nil, "artifacts", "ls", "--json", "--store", dir, "--scope", "session=a").stdout); len(got) != 2 || got[0].ID != a[3] {
		t.Errorf("after gc session a lists %v, want %v", got, a[3:])
	}
	help := runCLI(t, nil, "artifacts", "gc", "--help")
	if help.code != exitOK || !strings.Contains(help.stdout, "Example:") || !strings.Contains(help.stdout, "--dry-run") {
		t.Errorf("gc --help: %d\n%s", help.code, help.stdout)
	}
}

// Past one user's limit gc releases that user's hold on an artifact
// another user put too: it stays, and the output says so.
func TestArtifactsGcRelease(t *testing.T) {
	isolate(t)
	dir, st := openTestStore(t)
	ctx := context.Background()
	u1 := store.Scope{TenantID: "t", UserID: "u1", SessionID: "s"}
	var shared store.Ref
	for i, p := range []struct {
		data string
		sc   store.Scope
	}{{"shared", u1}, {"shared", store.Scope{TenantID: "t", UserID: "u2", SessionID: "s"}}, {"u1's newer", u1}} {
		ref, err := st.Put(ctx, strings.NewReader(p.data), store.PutOptions{Namespace: "test", Scope: p.sc})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			shared = ref
		}
		time.Sleep(2 * time.Millisecond)
	}
	st.Close(ctx)
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	os.WriteFile(cfg, []byte(`{"store": {"retention": {"max_artifacts_per_user": 1, "strategy": "fifo"}}}`), 0o600)
	js := runCLI(t, nil, "artifacts", "gc", "--store", dir, "--config", cfg, "--dry-run", "--json")
	if rs := gcLines(t, js.stdout); len(rs) != 1 || rs[0].ID != shared.ID || rs[0].Bytes != 0 || len(rs[0].Released) != 1 || rs[0].Released[0] != u1 {
		t.Errorf("gc --dry-run --json: %+v, want u1's scope of %s released", rs, shared.ID)
	}
	gc := runCLI(t, nil, "artifacts", "gc", "--store", dir, "--config", cfg)
	want := shared.ID + "\t0\tmax_artifacts_per_user tenant=t user=u1 (released 1 scope: others still hold it)\nremoved 0 artifacts (0 B), released 1\n"
	if gc.code != exitOK || gc.stdout != want {
		t.Errorf("gc: exit code %d, stdout %q, want %q; stderr %s", gc.code, gc.stdout, want, gc.stderr)
	}
	if got := decodeRefs(t, runCLI(t, nil, "artifacts", "ls", "--json", "--store", dir, "--scope", "user=u2").stdout); len(got) != 1 || got[0].ID != shared.ID {
		t.Errorf("u2 lists %v after u1's release, want %s", got, shared.ID)
	}
}

func TestArtifactsLsRetentionColumns(t *testing.T) {
	isolate(t)
	dir, cfg, a := fillRetentionStore(t)
	js := runCLI(t, nil, "artifacts", "ls", "--json", "--store", dir, "--config", cfg, "--scope", "session=a")
	var entries []lsEntry
	sc := bufio.NewScanner(strings.NewReader(js.stdout))
	for sc.Scan() {
		var e lsEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if js.code != exitOK || len(entries) != 5 {
		t.Fatalf("ls --scope session=a: exit code %d, %d entries; stderr %s", js.code, len(entries), js.stderr)
	}
	for i, e := range entries {
		if e.ID != a[i] || e.LastAccess == nil || e.ExpiresAt == nil {
			t.Fatalf("entry %d: %+v", i, e)
		}
		// fifo: expiry is the TTL after creation, which LastAccess equals here.
		if d := e.ExpiresAt.Sub(*e.LastAccess); d != time.Hour {
			t.Errorf("entry %d expires %v after its last access, want 1h", i, d)
		}
	}
	table := runCLI(t, nil, "artifacts", "ls", "--store", dir, "--config", cfg, "--scope", "session=b")
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	if table.code != exitOK || len(lines) != 3 || !strings.Contains(lines[0], "LAST ACCESS") || !strings.Contains(lines[0], "EXPIRES") {
		t.Fatalf("ls --scope session=b: exit code %d:\n%s", table.code, table.stdout)
	}
	if strings.HasSuffix(strings.TrimSpace(lines[1]), " -") {
		t.Errorf("row shows no expiry with a ttl configured: %q", lines[1])
	}
	// without a store.retention section: the gateway's default policy,
	// an hour after the last access, as serve collects and its UI shows
	noSection := runCLI(t, nil, "artifacts", "ls", "--json", "--store", dir, "--scope", "session=b")
	if es := decodeLs(t, noSection.stdout); len(es) != 2 || es[0].ExpiresAt == nil || !es[0].ExpiresAt.Equal(es[0].LastAccess.Add(time.Hour)) {
		t.Errorf("without a store.retention section the expiry should be the default 1h after the last access:\n%s", noSection.stdout)
	}
	noTTL := filepath.Join(t.TempDir(), "mcpx.json")
	os.WriteFile(noTTL, []byte(`{"store": {"retention": {"ttl": "0s"}}}`), 0o600)
	noPolicy := runCLI(t, nil, "artifacts", "ls", "--store", dir, "--config", noTTL, "--scope", "session=b")
	if rows := strings.Split(strings.TrimSpace(noPolicy.stdout), "\n"); len(rows) != 3 || !strings.HasSuffix(rows[1], "-") {
		t.Errorf("with the ttl off the expiry should be -:\n%s", noPolicy.stdout)
	}
	bad := runCLI(t, nil, "artifacts", "ls", "--store", dir, "--scope", "colour=red")
	if bad.code != exitUsage {
		t.Errorf("--scope colour=red: exit code %d, want %d", bad.code, exitUsage)
	}
}
