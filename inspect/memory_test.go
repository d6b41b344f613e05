package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// budget is a Memory that records what it was asked for and refuses
// everything when refuse is set.
type budget struct {
	refuse error
	asked  []int64
	whats  []string
	held   int64
}

func (b *budget) Reserve(_ context.Context, n int64, what string) (func(), error) {
	b.asked, b.whats = append(b.asked, n), append(b.whats, what)
	if b.refuse != nil {
		return nil, b.refuse
	}
	b.held += n
	return func() { b.held -= n }, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bytes.Reader
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestInspectReservesItsFootprint: an inspection reserves what its kind
// may hold before it reads past the head (a PDF what it may read, twice,
// and its text; text its text; an image its header) and gives it back;
// when the budget refuses, it reads nothing more and says the kind alone,
// Partial "memory", with ErrMemory wrapping the refusal.
func TestInspectReservesItsFootprint(t *testing.T) {
	pdf := buildPDF("Q3", "Ada", [][]string{{"Revenue grew"}})
	log := []byte(strings.Repeat("12:00:01 GET /items 200\n", 2000))
	img := encodeImage(t, 640, 480, png.Encode)
	// A time cap no load reaches: the PDF's first summary in a process
	// readies the PDF reader, which past the default 250 ms on a loaded
	// machine made the summary partial ("time") and failed the test.
	lim := Limits{MaxBytes: 1 << 20, MaxTextBytes: 64 << 10, Timeout: 10 * time.Minute}
	for _, c := range []struct {
		name, mime string
		b          []byte
		want       int64
		what       string
		kind       string
	}{
		{"pdf", "application/pdf", pdf, 2*int64(len(pdf)) + 64<<10 + footprintSlack, "pdf", "pdf"},
		{"text", "text/plain", log, 64<<10 + footprintSlack, "text", "text"},
		{"image", "image/png", img, footprintSlack, "image", "image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := &budget{}
			l := lim
			l.Memory = mem
			s, _ := inspectBytes(t, c.b, c.mime, l)
			if s.Kind != c.kind || s.Partial != "" {
				t.Fatalf("summary %+v", s)
			}
			wantWhat := fmt.Sprintf("inspecting a %d-byte %s", len(c.b), c.what)
			if !reflect.DeepEqual(mem.asked, []int64{c.want}) || mem.whats[0] != wantWhat || mem.held != 0 {
				t.Errorf("asked %v for %q, %d held after; want [%d] for %q and 0", mem.asked, mem.whats, mem.held, c.want, wantWhat)
			}
			refusal := errors.New("other work holds the budget")
			r := &countingReader{r: bytes.NewReader(c.b)}
			l.Memory = &budget{refuse: refusal}
			s, parts, err := Inspect(context.Background(), r, int64(len(c.b)), c.mime, l)
			if !errors.Is(err, ErrMemory) || !errors.Is(err, refusal) {
				t.Fatalf("err %v, want ErrMemory wrapping the refusal", err)
			}
			if s.Kind != c.kind || s.Partial != PartialMemory || s.Pages != 0 || s.Lines != 0 || s.Width != 0 || parts != nil {
				t.Errorf("refused summary %+v, %d parts; want the kind alone, partial memory", s, len(parts))
			}
			if got := r.n.Load(); got != min(int64(len(c.b)), headSize) {
				t.Errorf("read %d bytes after the refusal; want the %d-byte head only", got, headSize)
			}
		})
	}
}
