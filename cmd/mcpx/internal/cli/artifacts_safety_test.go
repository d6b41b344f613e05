package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store/storetest"
)

// The tests in this file hold the artifacts commands to touching only what
// is theirs: a folder that is not a store, a huge invalid id and a relative
// home are refused, ls and get change nothing, fsck reports a damaged
// index.

// TestArtifactsRefuseForeignFolder: {"store":{"dir":"."}} in a project
// folder, or --store ~, fails with a clear error and touches nothing.
func TestArtifactsRefuseForeignFolder(t *testing.T) {
	isolate(t)
	project := t.TempDir()
	for p, text := range map[string]string{
		"go.mod":          "module example.com/p\n",
		"tmp/scratch.txt": "the user's own notes",
		"tmp/cache/a":     "cached",
	} {
		if err := os.MkdirAll(filepath.Join(project, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(project, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(project, "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"store":{"dir":"."}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := storetest.Tree(t, project)
	t.Chdir(project)
	raw := tableauResult(t, samplePDF())
	for _, args := range [][]string{
		{"transform", "--config", cfg},
		{"artifacts", "ls", "--config", cfg},
		{"artifacts", "ls", "--store", project},
		{"artifacts", "get", "--store", project, "tableau_0123456789ab"},
		{"artifacts", "rm", "--store", project, "tableau_0123456789ab"},
		{"artifacts", "fsck", "--repair", "--store", project},
	} {
		got := runCLI(t, bytes.NewReader(raw), args...)
		if got.code != exitFail || !strings.Contains(got.stderr, "not an artifact store folder") || !strings.Contains(got.stderr, "go.mod") {
			t.Errorf("%v: exit code %d, stderr %q; want 1 and a clear error", args, got.code, got.stderr)
		}
		storetest.WantSameTree(t, strings.Join(args, " "), before, storetest.Tree(t, project))
	}
}

// TestArtifactsGetLongInvalidID: a 100 KB invalid id is not echoed back.
func TestArtifactsGetLongInvalidID(t *testing.T) {
	isolate(t)
	storeDir := t.TempDir()
	long := strings.Repeat("A", 100_000)
	for _, cmd := range []string{"get", "rm"} {
		got := runCLI(t, nil, "artifacts", cmd, "--store", storeDir, long)
		if got.code != exitFail || len(got.stderr) > 400 || !strings.Contains(got.stderr, "is not an artifact id") ||
			!strings.Contains(got.stderr, "(100000 bytes)") {
			t.Errorf("%s: exit code %d, stderr of %d bytes: %.300q", cmd, got.code, len(got.stderr), got.stderr)
		}
	}
	got := runCLI(t, nil, "artifacts", "get", "--store", storeDir, "bad\x1b[2Jid")
	if strings.Contains(got.stderr, "\x1b") {
		t.Errorf("stderr carries the id's control characters: %q", got.stderr)
	}
}

// TestArtifactsRelativeHome: a relative MCPX_HOME is an error.
func TestArtifactsRelativeHome(t *testing.T) {
	isolate(t)
	t.Chdir(t.TempDir())
	t.Setenv("MCPX_HOME", "relative/home")
	for _, args := range [][]string{{"artifacts", "ls"}, {"transform"}} {
		got := runCLI(t, strings.NewReader(`{"content":[]}`), args...)
		if got.code != exitFail || !strings.Contains(got.stderr, `MCPX_HOME "relative/home"`) || !strings.Contains(got.stderr, "not an absolute path") {
			t.Errorf("%v: exit code %d, stderr %q; want 1 naming MCPX_HOME", args, got.code, got.stderr)
		}
	}
	if _, err := os.Stat("relative"); err == nil {
		t.Errorf("a store was made under the working folder")
	}
}

// TestArtifactsReadOnly: ls and get change nothing in the store, and work
// where the folder cannot be written.
func TestArtifactsReadOnly(t *testing.T) {
	isolate(t)
	storeDir := t.TempDir()
	pdf := samplePDF()
	tr := runCLI(t, bytes.NewReader(tableauResult(t, pdf)), "transform", "--store", storeDir, "--server", "tableau")
	if tr.code != exitOK {
		t.Fatalf("transform: %d %s", tr.code, tr.stderr)
	}
	id := artifactOf(t, tr.stdout)
	// A temp file a killed put left: a read-write open would remove it.
	if err := os.WriteFile(filepath.Join(storeDir, "tmp", "put-42"), []byte("unfinished"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(storeDir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(storeDir, 0o700) })
	before := storetest.Tree(t, storeDir)
	ls := runCLI(t, nil, "artifacts", "ls", "--store", storeDir)
	if ls.code != exitOK || !strings.Contains(ls.stdout, id) {
		t.Errorf("ls: exit code %d, stdout %q, stderr %q", ls.code, ls.stdout, ls.stderr)
	}
	get := runCLI(t, nil, "artifacts", "get", "--store", storeDir, id)
	if get.code != exitOK || get.stdout != string(pdf) {
		t.Errorf("get: exit code %d, %d bytes, stderr %q", get.code, len(get.stdout), get.stderr)
	}
	storetest.WantSameTree(t, "ls and get", before, storetest.Tree(t, storeDir))
}

// TestArtifactsFsck: an index cut to half its size is reported (exit 3)
// without a change, repaired (exit 0) without losing the blob, and the
// artifact reads back.
func TestArtifactsFsck(t *testing.T) {
	isolate(t)
	storeDir := t.TempDir()
	pdf := samplePDF()
	sum := sha256.Sum256(pdf)
	tr := runCLI(t, bytes.NewReader(tableauResult(t, pdf)), "transform", "--store", storeDir, "--server", "tableau")
	if tr.code != exitOK {
		t.Fatalf("transform: %d %s", tr.code, tr.stderr)
	}
	clean := runCLI(t, nil, "artifacts", "fsck", "--store", storeDir)
	if clean.code != exitOK || !strings.Contains(clean.stdout, "no damage found") {
		t.Errorf("fsck on a sound store: exit code %d, stdout %q, stderr %q", clean.code, clean.stdout, clean.stderr)
	}

	index := filepath.Join(storeDir, "index.db")
	fi, err := os.Stat(index)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(index, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	before := storetest.Tree(t, storeDir)
	check := runCLI(t, nil, "artifacts", "fsck", "--store", storeDir)
	if check.code != exitDamaged || !strings.Contains(check.stdout, "index damaged") ||
		!strings.Contains(check.stdout, "blob no artifact holds: "+hex.EncodeToString(sum[:])) ||
		!strings.Contains(check.stdout, "fsck --repair") {
		t.Errorf("fsck: exit code %d, stdout %q, stderr %q", check.code, check.stdout, check.stderr)
	}
	storetest.WantSameTree(t, "fsck without --repair", before, storetest.Tree(t, storeDir))

	js := runCLI(t, nil, "artifacts", "fsck", "--json", "--store", storeDir)
	var rep struct {
		Damaged   bool     `json:"damaged"`
		Unindexed []string `json:"unindexed"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil || js.code != exitDamaged || !rep.Damaged || len(rep.Unindexed) != 1 {
		t.Errorf("fsck --json: exit code %d, %q (%v)", js.code, js.stdout, err)
	}

	fix := runCLI(t, nil, "artifacts", "fsck", "--repair", "--store", storeDir)
	if fix.code != exitOK || !strings.Contains(fix.stdout, "repaired") {
		t.Errorf("fsck --repair: exit code %d, stdout %q, stderr %q", fix.code, fix.stdout, fix.stderr)
	}
	after := runCLI(t, nil, "artifacts", "fsck", "--store", storeDir)
	if after.code != exitOK || !strings.Contains(after.stdout, "no damage found") {
		t.Errorf("fsck after repair: exit code %d, stdout %q", after.code, after.stdout)
	}
	recovered := "recovered_" + hex.EncodeToString(sum[:])[:12]
	get := runCLI(t, nil, "artifacts", "get", "--store", storeDir, recovered)
	if get.code != exitOK || get.stdout != string(pdf) {
		t.Errorf("get %s after repair: exit code %d, %d bytes, stderr %q", recovered, get.code, len(get.stdout), get.stderr)
	}
}
