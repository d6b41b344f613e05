//go:build !race

// The race detector multiplies memory and time, so results of 50 and 100 MB
// are checked in the plain `go test` pass of scripts/test.sh.

package cli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
)

// writeBigResult streams a Tableau download_workbook result whose JSON-in-
// text block carries a base64 PDF of n bytes, and returns the PDF's sha256.
func writeBigResult(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	io.WriteString(w, `{"content":[{"type":"text","text":"{\"content\":\"`)
	h := sha256.New()
	enc := base64.NewEncoder(base64.StdEncoding, w)
	src := io.MultiReader(
		io.LimitReader(stringsReader("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), 16),
		io.LimitReader(rand.NewChaCha8([32]byte{1, 2}), n-16),
	)
	if _, err := io.Copy(io.MultiWriter(enc, h), src); err != nil {
		t.Fatal(err)
	}
	enc.Close()
	io.WriteString(w, `\",\"name\":\"Quarterly Review\",\"format\":\"pdf\"}"}],"isError":false}`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type stringsReader string

func (s stringsReader) Read(p []byte) (int, error) { return copy(p, s), nil }

// TestLargeResults runs the built binary on results of 50 and 100 MB (a
// common implementation gives up past 5 MB) and checks the artifact is
// byte-exact and the peak memory stays within 3x the result's size.
func TestLargeResults(t *testing.T) {
	dir := t.TempDir()
	bin := mcpxbin.Path(t)
	for _, mb := range []int64{50, 100} {
		in := filepath.Join(dir, "result.json")
		sum := writeBigResult(t, in, mb<<20*3/4)
		st, _ := os.Stat(in)
		store := filepath.Join(dir, "store")
		cmd := exec.Command(bin, "transform", "--server", "tableau", "--tool", "download_workbook", "--store", store, in)
		out, rss, err := runPeakRSS(cmd)
		if err != nil {
			t.Fatalf("%d MB: %v", mb, err)
		}
		ref := gjson.GetBytes(out, `_meta.mcpx/artifacts.0.artifact`) // the full ref
		if ref.Get("sha256").String() != sum || len(out) > 4000 {
			t.Fatalf("%d MB: output %d bytes, ref %s", mb, len(out), ref.Raw)
		}
		got := exec.Command(bin, "artifacts", "get", "--store", store, ref.Get("id").String())
		stdout, _ := got.StdoutPipe()
		if err := got.Start(); err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, stdout)
		if err := got.Wait(); err != nil || hex.EncodeToString(h.Sum(nil)) != sum {
			t.Fatalf("%d MB: artifacts get: %v, hash mismatch", mb, err)
		}
		t.Logf("%d MB result (%d bytes): max RSS %d MiB = %.2fx", mb, st.Size(), rss>>20, float64(rss)/float64(st.Size()))
		if rss > 3*st.Size() {
			t.Errorf("%d MB: peak memory %d bytes is over 3x the result (%d bytes)", mb, rss, st.Size())
		}
		os.Remove(in)
		os.RemoveAll(store)
	}
}

// runPeakRSS runs cmd and returns its stdout and its peak resident memory,
// the last VmHWM read from /proc while it ran. Not the rusage of its
// wait: Go starts a child on its own memory map (vfork), and Linux keeps
// that map's peak, the test process's own, as the child's ru_maxrss (a
// 418 MiB go build in this test once made both results "8.4x" and "4.2x").
func runPeakRSS(cmd *exec.Cmd) (stdout []byte, peak int64, err error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	done := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var hwm int64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			b, _ := os.ReadFile(status) // a zombie's has no VmHWM: the last sample stands
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					hwm = max(hwm, kb<<10)
				}
			}
			select {
			case <-done:
				sampled <- hwm
				return
			case <-tick.C:
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	return out.Bytes(), <-sampled, err
}
