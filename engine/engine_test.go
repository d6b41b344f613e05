package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// fixed is a layer that returns the same rewrites for every document.
type fixed []layer.Rewrite

func (f fixed) Plan(context.Context, *layer.Doc) ([]layer.Rewrite, error) { return f, nil }

// newEngine builds an engine whose only layer returns rws.
func newEngine(t *testing.T, st store.Store, l layer.Layer, listener engine.Listener) *engine.Engine {
	t.Helper()
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return l, nil }})
	eng, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"test"}}, Listener: listener})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

var pdf = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("binary \x00\x01\x02 stuff\n"), 200)...)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func readAll(t *testing.T, st store.Store, id string) []byte {
	t.Helper()
	rc, _, err := st.Get(context.Background(), id, nil)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRewriteActions(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3000)
	one, two := strings.Repeat("one ", 120), strings.Repeat("two ", 120)
	for _, tc := range []struct {
		name   string
		in     string
		rws    []layer.Rewrite
		check  func(t *testing.T, out gjson.Result, stored map[string][]byte)
		stored int
		fails  int
	}{
		{
			name: "artifact base64 in place",
			in:   `{"pdf":"` + b64(pdf) + `","name":"Q3 report"}`,
			rws:  []layer.Rewrite{{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Verify: true}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				ref := out.Get("pdf.artifact")
				// The name is in the summary; the model's ref is compact.
				if ref.Get("mime_type").String() != "application/pdf" || ref.Get("sha256").Exists() || ref.Get("source").Exists() {
					t.Errorf("ref %s", ref.Raw)
				}
				if !bytes.Equal(stored[ref.Get("id").String()], pdf) {
					t.Error("stored bytes differ from the decoded PDF")
				}
				if s := out.Get("pdf.summary").String(); !strings.Contains(s, "PDF 'Q3 report.pdf'") || !strings.Contains(s, ref.Get("id").String()) {
					t.Errorf("summary %q", s)
				}
				if out.Get("name").String() != "Q3 report" {
					t.Error("sibling changed")
				}
			},
			stored: 1,
		},
		{
			name: "github style wrapped and escaped slashes",
			in:   `{"content":"` + strings.ReplaceAll(wrap(b64(pdf), 60), "/", `\/`) + `"}`,
			rws:  []layer.Rewrite{{Path: "content", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				if !bytes.Equal(stored[out.Get("content.artifact.id").String()], pdf) {
					t.Error("decoded bytes differ")
				}
			},
			stored: 1,
		},
		{
			name:  "verify refuses bytes without a signature",
			in:    `{"tok":"` + strings.Repeat("QUFB", 400) + `"}`,
			rws:   []layer.Rewrite{{Path: "tok", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Verify: true}},
			check: unchanged(`{"tok":"` + strings.Repeat("QUFB", 400) + `"}`),
			fails: 1,
		},
		{
			name:  "truncated base64 fails and stores nothing",
			in:    `{"pdf":"` + b64(pdf)[:len(b64(pdf))-3] + `"}`,
			rws:   []layer.Rewrite{{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}},
			check: func(t *testing.T, out gjson.Result, _ map[string][]byte) {},
			fails: 1,
		},
		{
			name:  "pdf prefix on garbage",
			in:    `{"pdf":"JVBERi0xLjQK` + strings.Repeat("!?", 600) + `"}`,
			rws:   []layer.Rewrite{{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Verify: true}},
			check: func(t *testing.T, out gjson.Result, _ map[string][]byte) {},
			fails: 1,
		},
		{
			name: "text artifact with preview",
			in:   `{"log":"` + big + `"}`,
			rws:  []layer.Rewrite{{Path: "log", Action: layer.ActionArtifact, Encoding: layer.EncodingText, Keep: 10}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				if out.Get("log.preview").String() != strings.Repeat("x", 10) {
					t.Errorf("preview %q", out.Get("log.preview").String())
				}
				if string(stored[out.Get("log.artifact.id").String()]) != big {
					t.Error("text not stored byte-exact")
				}
			},
			stored: 1,
		},
		{
			name: "truncate string, array and object",
			in:   `{"s":"` + big + `","a":[1,2,3,4,5],"o":{"k1":1,"k2":2,"k3":3}}`,
			rws: []layer.Rewrite{
				{Path: "s", Action: layer.ActionTruncate, Keep: 5},
				{Path: "a", Action: layer.ActionTruncate, Keep: 2},
				{Path: "o", Action: layer.ActionTruncate, Keep: 1},
			},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				if s := out.Get("s").String(); !strings.HasPrefix(s, "xxxxx\n… [truncated: showing 5 of 3000 chars") {
					t.Errorf("string: %q", s)
				}
				if a := out.Get("a").Array(); len(a) != 3 || a[1].Int() != 2 || !strings.Contains(a[2].String(), "showing 2 of 5 items") {
					t.Errorf("array: %s", out.Get("a").Raw)
				}
				if o := out.Get("o"); o.Get("k1").Int() != 1 || o.Get("k2").Exists() || !strings.Contains(o.Get("_mcpx_truncated").String(), "1 of 3 members") {
					t.Errorf("object: %s", o.Raw)
				}
				var found int
				for _, b := range stored {
					switch string(b) {
					case big, `[1,2,3,4,5]`, `{"k1":1,"k2":2,"k3":3}`:
						found++
					}
				}
				if found != 3 {
					t.Errorf("%d of 3 originals stored", found)
				}
			},
			stored: 3,
		},
		{
			name: "replace, create, drop and splat",
			in:   `{"a":1,"list":[1,2,3],"gone":"` + big + `","keep":true}`,
			rws: []layer.Rewrite{
				{Path: "a", Action: layer.ActionReplace, Value: json.RawMessage(`{"b":2}`)},
				{Path: "new.deep", Action: layer.ActionReplace, Value: json.RawMessage(`"made"`)},
				{Path: "gone", Action: layer.ActionDrop},
				{Path: "list.1", Action: layer.ActionReplace, Value: json.RawMessage(`["x","y"]`), Splat: true},
			},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				if out.Get("a.b").Int() != 2 || out.Get("new.deep").String() != "made" || out.Get("gone").Exists() || !out.Get("keep").Bool() {
					t.Errorf("out %s", out.Raw)
				}
				if out.Get("list").Raw != `[1,"x","y",3]` {
					t.Errorf("splat %s", out.Get("list").Raw)
				}
				var kept bool
				for _, b := range stored {
					kept = kept || string(b) == big
				}
				if !kept {
					t.Error("dropped value over 1 KiB was not stored")
				}
			},
			stored: 1,
		},
		{
			name: "wildcard reaches every match",
			in:   `{"files":[{"b64":"` + b64([]byte(one)) + `"},{"n":1},{"b64":"` + b64([]byte(two)) + `"}]}`,
			rws:  []layer.Rewrite{{Path: "files.#.b64", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, MIME: "text/plain"}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				if string(stored[out.Get("files.0.b64.artifact.id").String()]) != one || string(stored[out.Get("files.2.b64.artifact.id").String()]) != two {
					t.Errorf("out %s", out.Raw)
				}
			},
			stored: 2,
		},
		{
			name: "one rewrite reaches every carrier",
			in:   `{"content":[{"type":"text","text":"{\"blob\":\"` + b64(pdf) + `\"}"}],"structuredContent":{"blob":"` + b64(pdf) + `"}}`,
			rws:  []layer.Rewrite{{Path: "blob", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				text := gjson.Parse(out.Get("content.0.text").String())
				id := out.Get("structuredContent.blob.artifact.id").String()
				if id == "" || text.Get("blob.artifact.id").String() != id {
					t.Errorf("carriers disagree: %s", out.Raw)
				}
			},
			stored: 1,
		},
		{
			name: "image block becomes text and resource_link",
			in:   `{"content":[{"type":"image","data":"` + b64(pdf) + `","mimeType":"image/png","annotations":{"priority":1}}]}`,
			rws:  []layer.Rewrite{{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				blocks := out.Get("content").Array()
				if len(blocks) != 2 || blocks[0].Get("type").String() != "text" || blocks[1].Get("type").String() != "resource_link" {
					t.Fatalf("blocks %s", out.Get("content").Raw)
				}
				if blocks[0].Get("annotations.priority").Int() != 1 {
					t.Error("annotations lost")
				}
				// The model reads the summary; the host finds the full ref in _meta.
				ref := out.Get(`_meta.mcpx/artifacts.0.artifact`)
				if !strings.Contains(blocks[0].Get("text").String(), ref.Get("uri").String()) || strings.Contains(blocks[0].Get("text").String(), "sha256") {
					t.Errorf("text %s", blocks[0].Get("text").String())
				}
				if blocks[1].Get("uri").String() != "mcpx://artifacts/"+ref.Get("id").String() || ref.Get("mime_type").String() != "image/png" || len(ref.Get("sha256").String()) != 64 {
					t.Errorf("link %s ref %s", blocks[1].Raw, ref.Raw)
				}
				if !bytes.Equal(stored[ref.Get("id").String()], pdf) {
					t.Error("block bytes differ")
				}
			},
			stored: 1,
		},
		{
			// Only the stored value leaves: the block's _meta and members
			// outside the schema stay on the text block, one named as a
			// member of the text block under a free name.
			name: "image block keeps its other members",
			in: `{"content":[{"type":"image","data":"` + b64(pdf) + `","mimeType":"image/gif","_meta":{"k":"meta"},"x":"extra","text":"own",` +
				`"annotations":{"priority":1},"":"empty","x":"again"}]}`,
			rws: []layer.Rewrite{{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock, MIME: "image/png"}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				text := out.Get("content.0")
				for path, want := range map[string]string{
					"type": "text", "_meta.k": "meta", "x": "extra", "x\\.2": "again", "text\\.2": "own", "": "empty", "mimeType": "image/gif",
				} {
					if got := text.Get(path).String(); got != want {
						t.Errorf("text block's %q = %q, want %q: %s", path, got, want, text.Raw)
					}
				}
				if strings.Count(text.Raw, `"annotations"`) != 1 || strings.Contains(text.Raw, `"data"`) {
					t.Errorf("text block %s", text.Raw)
				}
			},
			stored: 1,
		},
		{
			// The text block replaces the block's type: its summary says
			// what the block claimed to be and why its data is not that.
			name: "image block whose data is not base64 says what it was",
			in:   `{"content":[{"type":"image","data":"VBORw0KGgoAAAANSUhEUgAAAAo"}]}`,
			rws:  []layer.Rewrite{{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				text := out.Get("content.0.text").String()
				for _, want := range []string{"(not base64 that decodes back to this string: the string itself is stored)", "It came as image content, but its data is not an image."} {
					if !strings.Contains(text, want) {
						t.Errorf("summary lacks %q: %s", want, text)
					}
				}
				for _, b := range stored {
					if string(b) != "VBORw0KGgoAAAANSUhEUgAAAAo" {
						t.Errorf("stored %q", b)
					}
				}
			},
			stored: 1,
		},
		{
			name: "audio block whose data is a PDF says what it was",
			in:   `{"content":[{"type":"audio","data":"` + b64(pdf) + `"}]}`,
			rws:  []layer.Rewrite{{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				text := out.Get("content.0.text").String()
				if !strings.HasPrefix(text, "PDF") || !strings.Contains(text, "It came as audio content, but its data is not audio.") || strings.Contains(text, "base64") {
					t.Errorf("summary: %s", text)
				}
			},
			stored: 1,
		},
		{
			name: "embedded resource keeps its other members on the link",
			in: `{"content":[{"type":"resource","_meta":{"b":1},"resource":{"uri":"file:///r.pdf","mimeType":"application/pdf","blob":"` + b64(pdf) +
				`","_meta":{"r":2},"name":"own"}}]}`,
			rws: []layer.Rewrite{{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock}},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				text, link := out.Get("content.0"), out.Get("content.1")
				if text.Get("_meta.b").Int() != 1 || text.Get("resource").Exists() || !strings.Contains(text.Get("text").String(), "file:///r.pdf") {
					t.Errorf("text block %s", text.Raw)
				}
				if link.Get("_meta.r").Int() != 2 || link.Get("name\\.2").String() != "own" || link.Get("name").String() == "own" ||
					link.Get("mimeType").String() != "application/pdf" || strings.Count(link.Raw, "mimeType") != 1 || strings.Contains(link.Raw, "blob") {
					t.Errorf("link %s", link.Raw)
				}
			},
			stored: 1,
		},
		{
			name: "overlapping rewrites: the outer one wins",
			in:   `{"a":{"b":"` + big + `"}}`,
			rws: []layer.Rewrite{
				{Path: "a", Action: layer.ActionArtifact},
				{Path: "a.b", Action: layer.ActionArtifact},
			},
			check: func(t *testing.T, out gjson.Result, stored map[string][]byte) {
				if !out.Get("a.artifact").Exists() {
					t.Errorf("out %s", out.Raw)
				}
			},
			stored: 1,
			fails:  1,
		},
		{
			name:  "malformed rewrite",
			in:    `{"a":1}`,
			rws:   []layer.Rewrite{{Path: "a|b", Action: layer.ActionDrop}, {Path: "a", Action: "explode"}},
			check: unchanged(`{"a":1}`),
			fails: 3, // each bad rewrite, and "none of the step's rewrites applied"
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New(memstore.Config{})
			eng := newEngine(t, st, fixed(tc.rws), nil)
			res, err := eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "tool"}, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(res.Raw) {
				t.Fatalf("invalid JSON out: %s", res.Raw)
			}
			if len(res.Failures) != tc.fails {
				t.Errorf("failures %v, want %d", res.Failures, tc.fails)
			}
			for _, f := range res.Failures {
				var re *engine.RewriteError
				if !errors.As(f, &re) || re.Step != "test" {
					t.Errorf("failure %v is not a *RewriteError of step test", f)
				}
			}
			refs, _, err := st.List(context.Background(), store.Scope{}, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != tc.stored {
				t.Errorf("%d artifacts stored, want %d", len(refs), tc.stored)
			}
			stored := map[string][]byte{}
			for _, r := range refs {
				stored[r.ID] = readAll(t, st, r.ID)
			}
			tc.check(t, gjson.ParseBytes(res.Raw), stored)
		})
	}
}

func unchanged(want string) func(*testing.T, gjson.Result, map[string][]byte) {
	return func(t *testing.T, out gjson.Result, _ map[string][]byte) {
		t.Helper()
		if out.Raw != want {
			t.Errorf("got %s, want it unchanged", out.Raw)
		}
	}
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n])
		b.WriteString(`\n`)
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, memstore.New(memstore.Config{}), fixed(nil), nil)
	for _, in := range []string{`{"a":`, `{"a":"\x"}`, "[1,2]]", `{"a":01}`, ""} {
		_, err := eng.Transform(context.Background(), engine.Call{}, []byte(in))
		if !errors.Is(err, engine.ErrBadJSON) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// failingStore refuses every put, as a full disk would.
type failingStore struct{ store.Store }

// errDiskFull is what the folder store returns on a full disk.
var errDiskFull = fmt.Errorf("fsstore: %w", &fs.PathError{Op: "write", Path: "/srv/mcpx/artifacts/tmp/put-1", Err: syscall.ENOSPC})

func (failingStore) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	return store.Ref{}, errDiskFull
}

// TestUnwritableStoreLeavesANote: a value the store cannot keep (a full
// disk) is not passed on whole: the result keeps a preview and a
// not_stored note in its place, as for a value over a store limit, naming
// the store's failure in its own words (not its paths); Failures and a
// layer_failed event carry the whole error for the host, and an
// artifact_refused event the note.
func TestUnwritableStoreLeavesANote(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []engine.Event
	listener := engine.ListenerFunc(func(ev engine.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() })
	text := "BEGIN " + strings.Repeat("a long log line\n", 200)
	rows := make([]int, 50)
	for i := range rows {
		rows[i] = i
	}
	in, _ := json.Marshal(map[string]any{"pdf": b64(pdf), "log": text, "rows": rows})
	eng := newEngine(t, failingStore{memstore.New(memstore.Config{})}, fixed{
		{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Path: "log", Action: layer.ActionArtifact, Encoding: layer.EncodingText},
		{Path: "rows", Action: layer.ActionTruncate, Keep: 2},
	}, listener)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s"}, in)
	if err != nil {
		t.Fatal(err)
	}
	const reason = "the artifact store failed (no space left on device)"
	out := gjson.ParseBytes(res.Raw)
	for _, v := range []struct {
		path, mime string
		size       int
	}{{"pdf", "application/pdf", len(pdf)}, {"log", "text/plain; charset=utf-8", len(text)}} {
		ref := out.Get(v.path + ".artifact")
		if !ref.Get("truncated").Bool() || ref.Get("not_stored").Raw != `{"reason":"`+reason+`"}` || ref.Get("size_bytes").Int() != int64(v.size) || ref.Get("mime_type").String() != v.mime || !strings.HasPrefix(ref.Get("id").String(), "truncated_") {
			t.Errorf("%s: ref %s", v.path, ref.Raw)
		}
		if sum := out.Get(v.path + ".summary").String(); !strings.HasSuffix(sum, " was removed from this result and NOT stored: "+reason+". Artifact: "+ref.Get("id").String()) {
			t.Errorf("%s: summary %q", v.path, sum)
		}
	}
	if p := out.Get("log.preview").String(); !strings.HasPrefix(p, "BEGIN a long log line") || len([]rune(p)) != 500 {
		t.Errorf("preview %d runes: %.40q", len([]rune(p)), p)
	}
	if got, want := out.Get("rows").Raw, `[0,1,"[truncated: showing 2 of 50 items; the rest was NOT stored: `+reason+`]"]`; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	if strings.Contains(string(res.Raw), "/srv/mcpx") || strings.Contains(string(res.Raw), b64(pdf)[:100]) {
		t.Errorf("the result holds the store's path or the value: %.400s", res.Raw)
	}
	if len(res.Failures) != 3 || len(res.Artifacts) != 0 {
		t.Fatalf("failures %v, artifacts %v", res.Failures, res.Artifacts)
	}
	for _, f := range res.Failures {
		if !errors.Is(f, engine.ErrStoreWrite) || !errors.Is(f, syscall.ENOSPC) {
			t.Errorf("failure %v: want ErrStoreWrite and ENOSPC", f)
		}
	}
	kinds := map[engine.EventType]int{}
	for _, ev := range events {
		kinds[ev.Type]++
		if ev.Type == engine.EventArtifactRefused && ev.Artifact.NotStored.Reason != reason {
			t.Errorf("artifact_refused note %+v", ev.Artifact.NotStored)
		}
	}
	if kinds[engine.EventLayerFailed] != 3 || kinds[engine.EventArtifactRefused] != 3 || len(events) != 6 {
		t.Errorf("events %v", kinds)
	}
}

// TestUnwritableStoreBlock: an image block the store cannot keep becomes
// the text block of a value not stored; its bytes do not stay.
func TestUnwritableStoreBlock(t *testing.T) {
	t.Parallel()
	block := `{"type":"image","mimeType":"image/png","data":"` + b64(pdf) + `"}`
	in := `{"content":[` + block + `]}`
	eng := newEngine(t, failingStore{memstore.New(memstore.Config{})}, fixed{{Target: layer.TargetResult, Path: "content.0", Form: layer.FormBlock, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 1 || !errors.Is(res.Failures[0], engine.ErrStoreWrite) || !errors.Is(res.Failures[0], errDiskFull) {
		t.Fatalf("failures %v", res.Failures)
	}
	blocks := gjson.GetBytes(res.Raw, "content").Array()
	if len(blocks) == 0 || strings.Contains(string(res.Raw), b64(pdf)[:100]) {
		t.Fatalf("the value stayed in the result: %.300s", res.Raw)
	}
	if note := blocks[0].Get("text").String(); blocks[0].Get("type").String() != "text" || !strings.Contains(note, "NOT stored: the artifact store failed (no space left on device)") {
		t.Errorf("note %q", note)
	}
}

// panicky is a layer with a bug.
type panicky struct{}

func (panicky) Plan(context.Context, *layer.Doc) ([]layer.Rewrite, error) { panic("boom") }

func TestLayerPanicIsContained(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, memstore.New(memstore.Config{}), panicky{}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{}, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var le *engine.LayerError
	if string(res.Raw) != `{"a":1}` || len(res.Failures) != 1 || !errors.As(res.Failures[0], &le) || !strings.Contains(le.Error(), "boom") {
		t.Fatalf("raw %s failures %v", res.Raw, res.Failures)
	}
}

func TestEventsAndScope(t *testing.T) {
	t.Parallel()
	var events []engine.Event
	st := memstore.New(memstore.Config{})
	eng := newEngine(t, st, fixed{{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Meta: map[string]string{"k": "v"}}}, engine.ListenerFunc(func(ev engine.Event) { events = append(events, ev) }))
	scope := store.Scope{TenantID: "t1", SessionID: "sess-9", TraceID: "tr"}
	res, err := eng.Transform(context.Background(), engine.Call{Server: "Tableau Cloud", Tool: "dl", Scope: scope}, []byte(`{"pdf":"`+b64(pdf)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Type != engine.EventArtifactStored || events[0].Artifact == nil || events[0].Meta["k"] != "v" || events[0].Scope != scope {
		t.Fatalf("events %+v", events)
	}
	a := res.Artifacts[0]
	if !strings.HasPrefix(a.ID, "tableau-cloud_") || a.Scope == nil || *a.Scope != scope || a.Source.Server != "Tableau Cloud" || a.Source.Path != "pdf" {
		t.Fatalf("ref %+v", a)
	}
	refs, _, _ := st.List(context.Background(), store.Scope{SessionID: "sess-9"}, "")
	if len(refs) != 1 {
		t.Fatalf("scoped list: %v", refs)
	}
	// The same bytes again, in another session: stored (the value left
	// the result) but already held, so whoever counts bytes counts none.
	if _, err := eng.Transform(context.Background(), engine.Call{Server: "Tableau Cloud", Tool: "dl", Scope: store.Scope{SessionID: "sess-10"}}, []byte(`{"pdf":"`+b64(pdf)+`"}`)); err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].AlreadyStored || events[1].Type != engine.EventArtifactStored || !events[1].AlreadyStored {
		t.Fatalf("a re-store's event: AlreadyStored %v then %v, want false then true (%+v)", events[0].AlreadyStored, events[len(events)-1].AlreadyStored, events)
	}
}

func TestConfigMergesPerServerAndTool(t *testing.T) {
	t.Parallel()
	var got []string
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "probe", New: func(opts json.RawMessage, r layer.Resources) (layer.Layer, error) {
		got = append(got, r.Server+"/"+r.Tool+"="+string(opts))
		return fixed(nil), nil
	}})
	reg.Register(layer.Info{Name: "other", New: func(opts json.RawMessage, r layer.Resources) (layer.Layer, error) {
		got = append(got, "other:"+r.Server)
		return fixed(nil), nil
	}})
	cfg := engine.Config{
		Chain:  []string{"probe", "other"},
		Layers: map[string]json.RawMessage{"probe": json.RawMessage(`{"a":1,"b":{"x":1}}`)},
		Servers: map[string]engine.ServerConfig{
			"git*": {Layers: map[string]json.RawMessage{"probe": json.RawMessage(`{"a":2}`), "other": json.RawMessage(`{"enabled":false}`)}},
			"github": {
				Layers: map[string]json.RawMessage{"probe": json.RawMessage(`{"b":{"y":2}}`)},
				Tools:  map[string]engine.ToolConfig{"get_*": {Layers: map[string]json.RawMessage{"probe": json.RawMessage(`{"a":3,"b":null}`)}}},
			},
		},
	}
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"github", "get_file_contents"}, {"github", "list"}, {"tableau", "x"}} {
		if err := eng.Validate(c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`github/get_file_contents={"a":3}`,
		`github/list={"a":2,"b":{"x":1,"y":2}}`,
		`tableau/x={"a":1,"b":{"x":1}}`, "other:tableau",
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if _, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{Layers: map[string]json.RawMessage{"nope": nil}}}); err == nil {
		t.Fatal("unknown layer accepted")
	}
}

func TestConcurrentTransforms(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	eng := newEngine(t, st, fixed{{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, nil)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := append(append([]byte(nil), pdf...), byte(i))
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(`{"pdf":"`+b64(body)+`"}`))
			if err != nil || len(res.Artifacts) != 1 {
				t.Errorf("%d: %v %v", i, err, res)
				return
			}
			if !bytes.Equal(readAll(t, st, res.Artifacts[0].ID), body) {
				t.Errorf("%d: bytes differ", i)
			}
		}(i)
	}
	wg.Wait()
}

// The registry's default order is the chain of a Config without one: its
// unregistered names (custom and presets in a build without layers/wasm)
// are skipped there and accepted in Config, while a name neither registered
// nor in the order is an error.
func TestRegistryChainIsTheDefaultChain(t *testing.T) {
	t.Parallel()
	var built []string
	reg := layer.NewRegistry()
	for _, name := range []string{"second", "first"} {
		reg.Register(layer.Info{Name: name, New: func(json.RawMessage, layer.Resources) (layer.Layer, error) {
			built = append(built, name)
			return fixed(nil), nil
		}})
	}
	st := memstore.New(memstore.Config{})
	if _, err := engine.New(engine.Options{Store: st, Registry: reg}); err == nil || !strings.Contains(err.Error(), "no chain") {
		t.Fatalf("a registry without a default order and no Config.Chain: err = %v, want the no-chain error", err)
	}
	order := []string{"first", "unlinked", "second"}
	reg.SetChain(order)
	order[0] = "changed" // SetChain keeps a copy
	reg.Chain()[0] = "changed"
	if got := reg.Chain(); strings.Join(got, ",") != "first,unlinked,second" {
		t.Fatalf("Chain() = %v", got)
	}
	eng, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{
		Layers: map[string]json.RawMessage{"unlinked": json.RawMessage(`{"x":1}`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Validate("s", "t"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(built, ",") != "first,second" {
		t.Fatalf("built %v, want first,second in the registry's order", built)
	}
	if _, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"first", "unlinked"}}}); err != nil {
		t.Fatalf("a chain naming a layer of the default order that is not linked in: %v", err)
	}
	for _, cfg := range []engine.Config{
		{Chain: []string{"first", "nope"}},
		{Layers: map[string]json.RawMessage{"nope": nil}},
	} {
		if _, err := engine.New(engine.Options{Store: st, Registry: reg, Config: cfg}); err == nil || !strings.Contains(err.Error(), `unknown layer "nope"`) {
			t.Fatalf("config %+v: err = %v, want unknown layer", cfg, err)
		}
	}
}
