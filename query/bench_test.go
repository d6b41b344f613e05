package query

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// benchArtifact writes size bytes made by line(i) to a file, stores it in
// an fsstore and returns the store, the ref and the file's path (for the
// binaries run beside).
func benchArtifact(b *testing.B, size int, mime string, write func(w *bufio.Writer, size int)) (store.Store, store.Ref, string) {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "input")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	write(w, size)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	ctx := context.Background()
	st, err := fsstore.Open(ctx, filepath.Join(dir, "artifacts"), fsstore.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(ctx) })
	in, _ := os.Open(path)
	defer in.Close()
	ref, err := st.Put(ctx, in, store.PutOptions{Namespace: "bench", MIMEType: mime})
	if err != nil {
		b.Fatal(err)
	}
	return st, ref, path
}

// logLines writes a log in which one line in 1,000 is an ERROR.
func logLines(w *bufio.Writer, size int) {
	n := 0
	for i := 0; n < size; i++ {
		level := "INFO"
		if i%1000 == 999 {
			level = "ERROR"
		}
		k, _ := fmt.Fprintf(w, "2026-11-25T16:%02d:%02d.%03dZ %s request %d served in %d ms from 10.0.%d.%d\n",
			i/60000%60, i/1000%60, i%1000, level, i, i%997, i%256, i%199)
		n += k
	}
}

// BenchmarkGrep100MB: mcpx's --grep against grep -c over the same 100 MB
// log, for a literal, a regexp with a literal prefix, and one without.
func BenchmarkGrep100MB(b *testing.B) {
	st, ref, path := benchArtifact(b, 100<<20, "text/plain", logLines)
	for _, expr := range []string{`ERROR`, `ERROR request \d+9 `, `\d+ ms from 10\.0\.3\.`, `(?i)error request`} {
		b.Run("mcpx/"+expr, func(b *testing.B) {
			b.SetBytes(ref.SizeBytes)
			for b.Loop() {
				a, err := Run(context.Background(), st, ref, Request{Grep: expr}, Budget{Timeout: 60e9})
				if err != nil || a.Total == 0 {
					b.Fatal(a.Total, err)
				}
			}
		})
		grep, err := exec.LookPath("grep")
		if err != nil {
			continue
		}
		b.Run("grep-c/"+expr, func(b *testing.B) {
			b.SetBytes(ref.SizeBytes)
			for b.Loop() {
				args := []string{"-c", "-E"}
				ere, fold := strings.CutPrefix(strings.ReplaceAll(expr, `\d`, `[0-9]`), "(?i)")
				if fold {
					args = append(args, "-i")
				}
				out, err := exec.Command(grep, append(args, ere, path)...).Output()
				if err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPageImage renders a US Letter page of text as the default
// view (1568 px, PNG): what artifacts_query's page with view "image"
// costs, against the memory runPageImage reserves for it.
func BenchmarkPageImage(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "inspect", "testdata", "pdf", "chromium.pdf"))
	if err != nil {
		b.Fatal(err)
	}
	st, ref, _ := benchArtifact(b, len(data), "application/pdf", func(w *bufio.Writer, _ int) { w.Write(data) })
	ctx := context.Background()
	if _, err := Run(ctx, st, ref, Request{Page: 1, View: ViewImage}, Budget{}); err != nil {
		b.Fatal(err) // the PDF reader's one-time start, outside the timing
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		a, err := Run(ctx, st, ref, Request{Page: 1, View: ViewImage}, Budget{})
		if err != nil || a.Image == nil {
			b.Fatal(err)
		}
	}
}
