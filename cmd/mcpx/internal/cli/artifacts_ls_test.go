package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// lines is an io.Writer that counts the lines written to it so far.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Count(l.buf.Bytes(), []byte("\n"))
}

// watchedStore is the folder store noting, for each row it reads for a
// listing, how many lines the command had written by then.
type watchedStore struct {
	artifactStore
	out  *lines
	seen *[]int
}

func (s watchedStore) EachAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order, each func(store.Ref, time.Time) error) (string, error) {
	return s.artifactStore.EachAccess(ctx, scope, cursor, order, func(r store.Ref, la time.Time) error {
		*s.seen = append(*s.seen, s.out.count())
		return each(r, la)
	})
}

func (s watchedStore) ListAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, []time.Time, string, error) {
	refs, access, next, err := s.artifactStore.ListAccess(ctx, scope, cursor, order)
	// A page returned whole: every row of it was read before any was
	// written.
	for range refs {
		*s.seen = append(*s.seen, s.out.count())
	}
	return refs, access, next, err
}

// TestArtifactsLsFirstLineAtOnce: ls writes its first line as soon as
// the store has read the first row (--json), or the table's head as soon
// as its first block is read, not once a page (or a buffer) is full; and
// a later block's columns are never narrower than an earlier one's.
func TestArtifactsLsFirstLineAtOnce(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	ctx := context.Background()
	st, err := fsstore.Open(ctx, dir, fsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*fsstore.DefaultPageSize/2 + 1
	for i := range n {
		// The first block's file names are the widest.
		name := "b.pdf"
		if i < lsFirstBlock {
			name = "a-much-longer-file-name.pdf"
		}
		if _, err := st.Put(ctx, strings.NewReader(fmt.Sprintf("artifact %d", i)), store.PutOptions{Namespace: "ls", MIMEType: "application/pdf", Filename: name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"store": {"s3": {"bucket": "watched"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ls := func(args ...string) (string, []int) {
		t.Helper()
		out := &lines{}
		var seen []int
		p := program{stores: store.DefaultBackends().With(store.Backend{Kind: "s3", Open: func(ctx context.Context, _ json.RawMessage, _ store.OpenOptions) (store.Store, error) {
			st, err := fsstore.Open(ctx, dir, fsstore.Config{ReadOnly: true})
			if err != nil {
				return nil, err
			}
			return watchedStore{st, out, &seen}, nil
		}})}
		var stderr bytes.Buffer
		if code := p.run(append([]string{"artifacts", "ls", "--config", cfg}, args...), strings.NewReader(""), out, &stderr); code != exitOK {
			t.Fatalf("ls %v: exit %d: %s", args, code, stderr.String())
		}
		if len(seen) != n {
			t.Fatalf("ls %v: the store read %d rows, want %d", args, len(seen), n)
		}
		return out.buf.String(), seen
	}

	if _, seen := ls("--json"); seen[1] != 1 {
		t.Errorf("ls --json: %d lines written when the store read the second row, want the first one", seen[1])
	}
	table, seen := ls()
	if seen[lsFirstBlock] != 1+lsFirstBlock {
		t.Errorf("ls: %d lines written when the store read row %d, want the head and the first %d rows", seen[lsFirstBlock], lsFirstBlock+1, lsFirstBlock)
	}
	rows := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(rows) != n+1 {
		t.Fatalf("ls: %d lines, want %d:\n%s", len(rows), n+1, table)
	}
	at := strings.Index(rows[0], "SOURCE")
	for i, r := range rows[1:] {
		if !strings.HasPrefix(r[at:], "-  ") {
			t.Fatalf("ls: row %d's SOURCE is not under the head's (column %d):\n%s\n%s", i+1, at, rows[0], r)
		}
	}
}
