//go:build reliability

package reliability

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"
)

// tinyDisk mounts a tmpfs of size (mount's "8m") at a new folder and
// returns it; without root it skips t: a full disk needs a mount.
func tinyDisk(t *testing.T, size string) string {
	t.Helper()
	disk := filepath.Join(t.TempDir(), "disk")
	if out, err := exec.Command("mkdir", "-p", disk).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(disk, syscall.MNT_DETACH) })
	return disk
}

// TestDiskFull: a gateway whose fs store lives on an 8 MiB tmpfs is
// asked for 3 MB blobs until the disk is long full: every call answers;
// each artifact a result names reads back byte-exact, and each result
// that names none tells the model its value was not stored (and never
// passes the bytes on: callBlob fails on that); fsck finds the store
// sound afterwards (nothing listed that cannot be read). It needs to
// mount a tmpfs (root): without it, it is skipped.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	disk := tinyDisk(t, "8m")
	addr := freeAddr(t)
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{"blobs": nil, "spare": nil},
		map[string]any{"dir": filepath.Join(disk, "artifacts")})
	g := startGateway(t, cfg, addr)
	s, err := newSession(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stored, refused int
	for seed := int64(1); seed <= 6; seed++ {
		r, err := s.callBlob("blobs", seed, 3<<20)
		if err != nil {
			t.Fatalf("call %d on a full disk: %v", seed, err)
		}
		if r.NotStored != "" {
			refused++
			t.Logf("call %d: told not stored: %s", seed, noteOf(r.NotStored))
			if !strings.Contains(r.NotStored, "NOT stored: the artifact store failed (") {
				t.Errorf("call %d: the note does not say the store failed: %s", seed, noteOf(r.NotStored))
			}
			continue
		}
		stored++
		if err := readBack(r); err != nil {
			t.Errorf("call %d: told artifact %s: %v", seed, r.ID, err)
		}
	}
	t.Logf("disk full: %d stored, %d told not stored", stored, refused)
	if refused == 0 {
		t.Errorf("18 MB on an 8 MiB disk: every value stored?")
	}
	out, err := exec.Command(mcpx(t), "artifacts", "fsck", "--config", cfg).CombinedOutput()
	if err != nil {
		t.Errorf("fsck on the full disk: %v\n%s", err, out)
	}
}

// TestDiskFullTransform: `mcpx transform` with its store on a 1 MiB
// tmpfs, given a 2.67 MB base64 image and a listing of a megabyte, exits
// 0 with a result clamped to max_observation_chars in which the image and
// the cut listing are previews with notes that the store failed (no space
// left on device), and says so on stderr; fsck finds the store sound.
func TestDiskFullTransform(t *testing.T) {
	disk := tinyDisk(t, "1m")
	store := filepath.Join(disk, "artifacts")
	png := append([]byte("\x89PNG\r\n\x1a\n"), blob(1, 2<<20)...)
	rows := make([]string, 20000)
	for i := range rows {
		rows[i] = fmt.Sprintf("row %05d of a listing that is long only in number", i)
	}
	listing, _ := json.Marshal(map[string]any{"rows": rows})
	in, _ := json.Marshal(map[string]any{"content": []any{
		map[string]string{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png)},
		map[string]string{"type": "text", "text": string(listing)},
	}})
	cmd := exec.Command(mcpx(t), "transform", "--store", store, "--server", "shots")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("transform on a full disk: %v\n%s", err, stderr.String())
	}
	out := stdout.Bytes()
	meta := len(gjson.GetBytes(out, "_meta").Raw)
	t.Logf("%d bytes in, %d out (_meta %d)", len(in), len(out), meta)
	if !json.Valid(out) || len(out)-meta > 50000 {
		t.Fatalf("%d bytes out (_meta %d): not clamped to max_observation_chars 50000", len(out), meta)
	}
	if n := strings.Count(string(out), "NOT stored: the artifact store failed (no space left on device)"); n < 2 {
		t.Errorf("%d notes that the disk is full, want the image's and the listing's: %.600s", n, out)
	}
	if bytes.Contains(out, []byte(base64.StdEncoding.EncodeToString(png[:300]))) {
		t.Error("the image's bytes are in the output")
	}
	if warn := stderr.String(); !strings.Contains(warn, "mcpx transform: warning: 2 values not stored, the artifact store failed: ") || !strings.Contains(warn, "no space left on device; the output holds a preview and a not_stored note in place of each\n") {
		t.Errorf("stderr %s\nwant the warning that names the failure", warn)
	}
	if out, err := exec.Command(mcpx(t), "artifacts", "fsck", "--store", store).CombinedOutput(); err != nil {
		t.Errorf("fsck on the full disk: %v\n%s", err, out)
	}
}

// noteOf is the sentence of a result that says a value was not stored.
func noteOf(raw string) string {
	if i := strings.Index(raw, "NOT stored"); i >= 0 {
		return raw[max(0, i-80):min(len(raw), i+200)]
	}
	return tail(raw, 300)
}
