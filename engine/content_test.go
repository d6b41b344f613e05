package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func pngOf(w, h int) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return b.Bytes()
}

// wavOf is a silent 8 kHz mono 16-bit WAV of ms milliseconds.
func wavOf(ms int) []byte {
	data := make([]byte, 16*ms)
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(8000), uint32(16000), uint16(2), uint16(16)} {
		le(v)
	}
	b.WriteString("data")
	le(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

// TestContentSummaries: each stored artifact's summary says what is
// inside, with the numbers its bytes give (dimensions, lines, keys, rows,
// duration), the ref in the artifact list and in the store carries the
// content, template fields read it, and no reference is touched by
// punctuation.
func TestContentSummaries(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&log, "12:00:%02d GET /items/%d 200\n", i%60, i)
	}
	csv := "id,name,city\n1,Ada,London\n2,Grace,\"New York\"\n"
	obj := `{"users":[1,2],"total":2,"next":null}`
	arr := `[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3}]`
	in := `{"structuredContent":{` +
		`"shot":"` + b64(pngOf(1280, 720)) + `",` +
		`"log":` + jsonString(log.String()) + `,` +
		`"csv":` + jsonString(csv) + `,` +
		`"obj":` + jsonString(obj) + `,` +
		`"arr":` + jsonString(arr) + `,` +
		`"wav":"` + b64(wavOf(2500)) + `",` +
		`"tmpl":"` + b64(pngOf(64, 48)) + `"}}`
	rws := fixed{
		{Path: "structuredContent.shot", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Path: "structuredContent.log", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingText, MIME: "text/plain"},
		{Path: "structuredContent.csv", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingText, MIME: "text/csv"},
		{Path: "structuredContent.obj", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingText, MIME: "application/json"},
		{Path: "structuredContent.arr", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingText, MIME: "application/json"},
		{Path: "structuredContent.wav", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Path: "structuredContent.tmpl", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64,
			Summary: "{content.format} {content.width}x{content.height} px, {content.kind}{content.pages} {id}"},
	}
	st := memstore.New(memstore.Config{})
	res, err := newEngine(t, st, rws, nil).Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	sum := func(k string) string { return gjson.GetBytes(res.Raw, "structuredContent."+k+".summary").String() }
	id := func(k string) string { return gjson.GetBytes(res.Raw, "structuredContent."+k+".artifact.id").String() }
	for k, want := range map[string]string{
		"shot": "PNG image 't-shot.png' 1280x720 (",
		"log":  "Text 't-log.txt' of 1,500 lines (42,390 chars, 42.4 kB) is not in this result",
		"csv":  "CSV 't-csv.csv' with 2 rows and columns id, name, city (",
		"obj":  "JSON object 't-obj.json' with keys users, total, next (",
		"arr":  "JSON array 't-arr.json' of 3 items with keys id, name (",
		"wav":  "WAV audio 't-wav.wav' (2.5 s, ",
		"tmpl": "png 64x48 px, image " + id("tmpl"),
	} {
		if got := sum(k); !strings.HasPrefix(got, want) {
			t.Errorf("%s: summary %q\nwant prefix %q", k, got, want)
		}
		if bad := bareRefsViolations(sum(k)); len(bad) > 0 {
			t.Errorf("%s: punctuation touches %q", k, bad)
		}
	}
	if got := sum("log"); !strings.HasSuffix(got, " — ask artifacts_query for lines 1-100 or a grep, artifacts_search for words") {
		t.Errorf("log summary does not say how to look further: %q", got)
	}
	// The model reads the summary; the content JSON is in the refs hosts
	// get (the artifact list, the store), not in the model's text.
	if gjson.GetBytes(res.Raw, "structuredContent.shot.artifact.content").Exists() {
		t.Errorf("content JSON in the model-visible ref: %s", gjson.GetBytes(res.Raw, "structuredContent.shot.artifact"))
	}
	if len(res.Artifacts) != 7 || gjson.GetBytes(res.Artifacts[0].Content, "width").Int() != 1280 {
		t.Fatalf("artifact list: %d refs, first content %s", len(res.Artifacts), res.Artifacts[0].Content)
	}
	ref, err := st.Stat(context.Background(), id("csv"))
	if err != nil || gjson.GetBytes(ref.Content, "rows").Int() != 2 {
		t.Errorf("store ref of the CSV: content %s, %v", ref.Content, err)
	}
}

// TestContentSummaryDisabled: "inspect": {"enabled": false} keeps the
// plain summary and reads nothing back.
func TestContentSummaryDisabled(t *testing.T) {
	t.Parallel()
	reg := layer.NewRegistry()
	rws := fixed{{Path: "shot", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return rws, nil }})
	off := false
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{Chain: []string{"test"}, Inspect: engine.InspectConfig{Enabled: &off}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(`{"shot":"`+b64(pngOf(10, 10))+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(res.Raw, "shot.summary").String(); !strings.HasPrefix(got, "PNG image 't-shot.png' (") || res.Artifacts[0].Content != nil {
		t.Errorf("summary %q, content %s", got, res.Artifacts[0].Content)
	}
}

// stalledStore reads back as a store on a disk that stalls would: the
// first free bytes of an artifact at once, and a read past them only
// once wait has passed since the artifact's first read. An inspection's
// time cap starts before its first read, so with wait over the cap no
// inspection reads past free in time, however fast or loaded the
// machine: what the cap stops is the test's doing, not the machine's.
type stalledStore struct {
	store.Store
	free int64
	wait time.Duration
}

type stalledReadCloser struct {
	io.ReadCloser
	ra    io.ReaderAt
	free  int64
	wait  time.Duration
	first *time.Time
	mu    *sync.Mutex
}

func (s stalledReadCloser) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	if s.first.IsZero() {
		*s.first = time.Now()
	}
	until := s.first.Add(s.wait)
	s.mu.Unlock()
	if off+int64(len(p)) > s.free {
		time.Sleep(time.Until(until))
	}
	return s.ra.ReadAt(p, off)
}

func (s stalledStore) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	rc, ref, err := s.Store.Get(ctx, id, rng)
	if err != nil {
		return nil, ref, err
	}
	return stalledReadCloser{ReadCloser: rc, ra: rc.(io.ReaderAt), free: s.free, wait: s.wait, first: new(time.Time), mu: new(sync.Mutex)}, ref, nil
}

// TestContentSummaryNeverBlocks: inputs a summary cannot finish in time
// (a store that stalls past the first chunk, a malformed PDF, a zip whose one entry
// claims to inflate to 4 GiB, a large text) cost at most the time cap and
// the call goes on with the summary it got.
func TestContentSummaryNeverBlocks(t *testing.T) {
	bomb := []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x00\x00\xff\xff\xff\xff\x05\x00\x00\x00bomb!" + strings.Repeat("\x00", 512))
	malformedPDF := []byte("%PDF-1.7\n1 0 obj << /Type /Pages /Count 99999999 /Kids [1 0 R] >> endobj\ntrailer << /Root 1 0 R /Size -5 >>\nstartxref\n999999999\n%%EOF")
	bigText := strings.Repeat("a line of a large log that nobody reads whole\n", 200_000) // 9.2 MB
	in := `{"pdf":"` + b64(malformedPDF) + `","zip":"` + b64(bomb) + `","big":` + jsonString(bigText) + `}`
	rws := fixed{
		{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Path: "zip", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Path: "big", Action: layer.ActionArtifact, Encoding: layer.EncodingText},
	}
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return rws, nil }})
	// The cap is long enough that even a loaded machine reads the large
	// text's first chunk within it (a summary that counted no line says
	// no count); the store stalls every read past that chunk until the
	// cap has passed, so the text never finishes in time.
	const timeout = time.Second
	eng, err := engine.New(engine.Options{
		Store:    stalledStore{Store: memstore.New(memstore.Config{}), free: 64 << 10, wait: timeout + 50*time.Millisecond},
		Registry: reg,
		Config:   engine.Config{Chain: []string{"test"}, Inspect: engine.InspectConfig{TimeoutMS: timeout.Milliseconds()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(in))
	took := time.Since(start)
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("Transform: %v, %v", err, res.Failures)
	}
	// Each summary stops at the cap: the large text's says it was cut by
	// time (below), which is the assertion that does not depend on the
	// machine's speed. The wall-clock bound only catches a summary that
	// blocks the call outright; it is far above what decoding and storing
	// the inputs take on a loaded machine under -race.
	if limit := 30 * time.Second; took > limit {
		t.Errorf("took %v, over %v", took, limit)
	}
	for i, kind := range []string{"pdf", "archive", "text"} {
		if got := gjson.GetBytes(res.Artifacts[i].Content, "kind").String(); got != kind {
			t.Errorf("artifact %d: content %s, want kind %s", i, res.Artifacts[i].Content, kind)
		}
	}
	if got := gjson.GetBytes(res.Artifacts[2].Content, "partial").String(); got != "time" {
		t.Errorf("the large text's summary: %s, want partial time", res.Artifacts[2].Content)
	}
	if got := gjson.GetBytes(res.Raw, "big.summary").String(); !strings.Contains(got, "of at least ") {
		t.Errorf("partial line count not marked: %q", got)
	}
}

// streamStore reads back as a stream, as an object store does: no
// io.ReaderAt, so a summary reads the bytes into memory first.
type streamStore struct{ store.Store }

func (s streamStore) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	rc, ref, err := s.Store.Get(ctx, id, rng)
	if err != nil {
		return nil, ref, err
	}
	return struct{ io.ReadCloser }{rc}, ref, nil
}

// TestContentSummaryWaitsForTheBudget: while other work holds the
// process's memory budget, a summary waits at most its timeout, then the
// artifact gets the plain summary (the kind alone where the bytes were
// looked at), a work_refused event says what it needed, and nothing is
// kept in the store: once the budget is free the same value gets its full
// summary. A store that reads back as a stream reserves its buffer with
// the inspection, in one go.
func TestContentSummaryWaitsForTheBudget(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&log, "12:00:%02d GET /items/%d 200\n", i%60, i)
	}
	in := []byte(`{"log":` + jsonString(log.String()) + `}`)
	rws := fixed{{Path: "log", Action: layer.ActionArtifact, Encoding: layer.EncodingText, MIME: "text/plain"}}
	for _, c := range []struct {
		name    string
		st      store.Store
		content string
		why     string
	}{
		{"reader at", memstore.New(memstore.Config{}), `{"kind":"text","partial":"memory"}`,
			"content summary: inspect: the memory budget could not hold the inspection: membudget: the memory budget is in use by other work: inspecting a 42390-byte text needs 2.1 MB and other work held 8.4 MB of the 8.4 MB budget until context deadline exceeded"},
		{"stream", streamStore{memstore.New(memstore.Config{})}, ``,
			"content summary: membudget: the memory budget is in use by other work: reading a 42.4 kB artifact back for its summary needs 2.2 MB and other work held 8.4 MB of the 8.4 MB budget until context deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := membudget.New(8 << 20)
			hold, err := mem.Reserve(context.Background(), 8<<20, "other work")
			if err != nil {
				t.Fatal(err)
			}
			reg := layer.NewRegistry()
			reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return rws, nil }})
			var refused []engine.Event
			eng, err := engine.New(engine.Options{Store: c.st, Registry: reg, Memory: mem,
				Config: engine.Config{Chain: []string{"test"}, Inspect: engine.InspectConfig{TimeoutMS: 50}},
				Listener: engine.ListenerFunc(func(ev engine.Event) {
					if ev.Type == engine.EventWorkRefused {
						refused = append(refused, ev)
					}
				})})
			if err != nil {
				t.Fatal(err)
			}
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
			if err != nil {
				t.Fatal(err)
			}
			const plain = "Text 't-log.txt' (42390 chars, 42.4 kB) is not in this result"
			if got := gjson.GetBytes(res.Raw, "log.summary").String(); !strings.HasPrefix(got, plain) || string(res.Artifacts[0].Content) != c.content {
				t.Errorf("summary %q, content %s; want %q…, %s", got, res.Artifacts[0].Content, plain, c.content)
			}
			if len(refused) != 1 || refused[0].Path != "log" || refused[0].Layer != "test" || refused[0].Error != c.why {
				t.Errorf("work_refused events %+v\nwant one for log: %s", refused, c.why)
			}
			if ref, err := c.st.Stat(context.Background(), res.Artifacts[0].ID); err != nil || ref.Content != nil {
				t.Errorf("the store kept %s (%v); want no summary kept", ref.Content, err)
			}
			hold()
			res, err = eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := gjson.GetBytes(res.Raw, "log.summary").String(); !strings.HasPrefix(got, "Text 't-log.txt' of 1,500 lines (42,390 chars, 42.4 kB)") {
				t.Errorf("summary once the budget is free: %q", got)
			}
		})
	}
}
