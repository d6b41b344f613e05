package jq

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// BenchmarkSmall is the cost of one small jq query: in a child process
// (what query.Run does with Run), and the same program evaluated in this
// process (what it did before the child).
func BenchmarkSmall(b *testing.B) {
	st := memstore.New(memstore.Config{})
	js := put(b, st, "application/json", []byte(`{"items":[{"name":"a","n":1},{"name":"b","n":2}]}`))
	const program = `.items[] | select(.n > 1) | .name`
	b.Run("child", func(b *testing.B) {
		for b.Loop() {
			a, err := query.Run(context.Background(), st, js, query.Request{JQ: program}, query.Budget{JQ: Run})
			if err != nil || a.Text != `"b"` {
				b.Fatal(a, err)
			}
		}
	})
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			rc, _, err := st.Get(context.Background(), js.ID, nil)
			if err != nil {
				b.Fatal(err)
			}
			resp := evaluate(context.Background(), request{Program: program, MaxOutput: 10000}, rc)
			rc.Close()
			if resp.Text != "\"b\"\n" {
				b.Fatal(resp)
			}
		}
	})
}

// BenchmarkJQ10MB: mcpx's --jq against the jq binary over 10 MB of JSON.
func BenchmarkJQ10MB(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"items":[`)
	for i := 0; doc.Len() < 10<<20; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"id":%d,"name":"item %d","state":"%s","tags":["a","b"],"score":%d.5}`, i, i, []string{"open", "closed"}[i%2], i%100)
	}
	doc.WriteString(`]}`)
	st := memstore.New(memstore.Config{})
	ref := put(b, st, "application/json", doc.Bytes())
	const program = `[.items[] | select(.score > 98 and .state == "open") | .id] | length`
	b.Run("mcpx", func(b *testing.B) {
		b.SetBytes(ref.SizeBytes)
		for b.Loop() {
			a, err := query.Run(context.Background(), st, ref, query.Request{JQ: program}, query.Budget{JQ: Run, Timeout: 60e9})
			if err != nil || a.Text == "" {
				b.Fatal(err)
			}
		}
	})
	jq, err := exec.LookPath("jq")
	if err != nil {
		return
	}
	path := filepath.Join(b.TempDir(), "input.json")
	if err := os.WriteFile(path, doc.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("jq", func(b *testing.B) {
		b.SetBytes(ref.SizeBytes)
		for b.Loop() {
			if out, err := exec.Command(jq, program, path).Output(); err != nil || len(out) == 0 {
				b.Fatal(err)
			}
		}
	})
}
