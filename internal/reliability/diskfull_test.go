//go:build reliability

package reliability

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDiskFull: a gateway whose fs store lives on an 8 MiB tmpfs is
// asked for 3 MB blobs until the disk is long full: every call answers;
// each artifact a result names reads back byte-exact, and each result
// that names none tells the model its value was not stored; fsck finds
// the store sound afterwards (nothing listed that cannot be read). It
// needs to mount a tmpfs (root): without it, it is skipped.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	disk := filepath.Join(dir, "disk")
	if out, err := exec.Command("mkdir", "-p", disk).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(disk, syscall.MNT_DETACH) })
	addr := freeAddr(t)
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{"blobs": nil, "spare": nil},
		map[string]any{"dir": filepath.Join(disk, "artifacts")})
	g := startGateway(t, cfg, addr)
	s, err := newSession(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stored, refused, inline int
	for seed := int64(1); seed <= 6; seed++ {
		r, err := s.callBlob("blobs", seed, 3<<20)
		if err != nil {
			t.Fatalf("call %d on a full disk: %v", seed, err)
		}
		if r.Inline != nil {
			inline++
			if !bytes.Equal(r.Inline, blob(r.Seed, r.Size)) {
				t.Errorf("call %d: the result passed through with other bytes", seed)
			}
			continue
		}
		if r.NotStored != "" {
			refused++
			t.Logf("call %d: told not stored: %s", seed, noteOf(r.NotStored))
			continue
		}
		stored++
		if err := readBack(r); err != nil {
			t.Errorf("call %d: told artifact %s: %v", seed, r.ID, err)
		}
	}
	t.Logf("disk full: %d stored, %d told not stored, %d passed through whole (the store could not write)", stored, refused, inline)
	if refused+inline == 0 {
		t.Errorf("18 MB on an 8 MiB disk: every value stored?")
	}
	out, err := exec.Command(mcpx(t), "artifacts", "fsck", "--config", cfg).CombinedOutput()
	if err != nil {
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
