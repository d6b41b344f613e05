package engine_test

// Reproductions of what went wrong on hostile input and with the rewrite
// language attacked within its rules, engine side: each test feeds such an
// input and asserts what must hold instead.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// run transforms in with one step whose answer is rws.
func run(t *testing.T, in string, args string, rws ...layer.Rewrite) (*engine.Result, store.Store) {
	t.Helper()
	st := memstore.New(memstore.Config{})
	eng := newEngine(t, st, fixed(rws), nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "tool", Arguments: json.RawMessage(args)}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(res.Raw) {
		t.Fatalf("invalid JSON out: %.500s", res.Raw)
	}
	return res, st
}

func storedCount(t *testing.T, st store.Store) int {
	t.Helper()
	refs, _, err := st.List(context.Background(), store.Scope{}, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(refs)
}

// Keep 4611686018427387904 overflowed 6*n+16 in prefixRunes and
// took the process down. Every numeric field is bounded; the step fails.
func TestHugeKeepIsRejected(t *testing.T) {
	t.Parallel()
	in := `{"s":"` + strings.Repeat("x", 3000) + `"}`
	for _, rw := range []layer.Rewrite{
		{Path: "s", Action: layer.ActionTruncate, Keep: 4611686018427387904},
		{Path: "s", Action: layer.ActionArtifact, Encoding: layer.EncodingText, Keep: 4611686018427387904},
		{Path: "s", Action: layer.ActionDrop, MinSize: -1},
		{Path: "s", Action: layer.ActionTruncate, KeepLast: 1 << 62},
	} {
		res, st := run(t, in, "", rw)
		if string(res.Raw) != in || len(res.Failures) == 0 || !errors.Is(res.Failures[0], engine.ErrLimit) {
			t.Errorf("%+v: failures %v, out %.80s", rw, res.Failures, res.Raw)
		}
		if n := storedCount(t, st); n != 0 {
			t.Errorf("%d artifacts stored by a rejected step", n)
		}
	}
	// A keep within bounds but past the string still works.
	res, _ := run(t, in, "", layer.Rewrite{Path: "s", Action: layer.ActionTruncate, Keep: layer.MaxKeep})
	if len(res.Failures) != 0 || !strings.HasPrefix(gjson.GetBytes(res.Raw, "s").String(), strings.Repeat("x", 3000)) {
		t.Errorf("keep MaxKeep: %v", res.Failures)
	}
}

// panickingStore panics inside Put, as a bug in the executor would.
type panickingStore struct{ store.Store }

func (panickingStore) Put(context.Context, io.Reader, store.PutOptions) (store.Ref, error) {
	panic("store bug")
}

// No recover guarded the executor. A panic while executing a
// layer's rewrites fails that layer and the result flows on.
func TestPanicInExecutionFailsTheLayer(t *testing.T) {
	t.Parallel()
	in := `{"s":"` + strings.Repeat("x", 3000) + `"}`
	eng := newEngine(t, panickingStore{memstore.New(memstore.Config{})}, fixed{{Path: "s", Action: layer.ActionArtifact}}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "srv"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var le *engine.LayerError
	if string(res.Raw) != in || len(res.Failures) != 1 || !errors.As(res.Failures[0], &le) || !strings.Contains(le.Error(), "store bug") {
		t.Fatalf("out %.80s failures %v", res.Raw, res.Failures)
	}
}

// One invalid rewrite left the rest of the answer applied. A
// step's rewrites are validated as a whole first.
func TestInvalidAnswerAppliesNothing(t *testing.T) {
	t.Parallel()
	in := `{"a":"` + strings.Repeat("x", 3000) + `","b":1}`
	res, st := run(t, in, "",
		layer.Rewrite{Path: "a", Action: layer.ActionArtifact},
		layer.Rewrite{Path: "b", Action: layer.ActionReplace, Value: json.RawMessage(`{`)})
	if string(res.Raw) != in || storedCount(t, st) != 0 || len(res.Failures) != 2 {
		t.Fatalf("out %.80s failures %v", res.Raw, res.Failures)
	}
}

// Summary templates ran gjson modifiers on the arguments
// (@pretty with a 4 KB indent: seconds and hundreds of MB). Plain paths
// only; anything else renders empty.
func TestSummaryTemplateArgsArePlainPaths(t *testing.T) {
	t.Parallel()
	args := `{"q":"report","big":[` + strings.Repeat(`{"k":[1,2,3]},`, 20000) + `1]}`
	indent := strings.Repeat(" ", 3000) // the template stays under MaxTemplateBytes
	in := `{"s":"` + strings.Repeat("x", 3000) + `"}`
	res, _ := run(t, in, args, layer.Rewrite{
		Path: "s", Action: layer.ActionArtifact,
		Summary: `Q={arg.q} P={arg.big|@pretty:{"indent":"` + indent + `"}} M={arg.@pretty} X={arg.big.#(k)}`,
	})
	got := gjson.GetBytes(res.Raw, "s.summary").String()
	if !strings.HasPrefix(got, "Q=report P=") || strings.Contains(got, indent[:64]) || len(got) > 5000 {
		t.Fatalf("summary %.300q", got)
	}
}

// A replace that matched nothing sent the raw path to sjson: a
// query, a trailing backslash or a path through a string replaced existing
// 1.1 KB values that were never stored.
func TestCreatingReplaceNeverOverwrites(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("S", 1100)
	in := `{"arr":[{"name":"SECRET-1","v":"` + secret + `"}],"s":"` + secret + `","o":{"k":1}}`
	for _, path := range []string{`arr.#(%"SECRET*")`, `arr.#(name%"SECRET*").v`, `s.x`, `arr.5`, `o.k.deeper`} {
		res, st := run(t, in, "", layer.Rewrite{Path: path, Action: layer.ActionReplace, Value: json.RawMessage(`"gone"`)})
		if !bytes.Contains(res.Raw, []byte(secret)) || strings.Count(string(res.Raw), secret) != 2 || len(res.Failures) == 0 {
			t.Errorf("%s: out %.200s failures %v", path, res.Raw, res.Failures)
		}
		if storedCount(t, st) != 0 {
			t.Errorf("%s: stored something", path)
		}
	}
	// A trailing backslash is a key like any other: it is created, and
	// nothing else changes.
	res, _ := run(t, in, "", layer.Rewrite{Path: `new\`, Action: layer.ActionReplace, Value: json.RawMessage(`1`)})
	if gjson.GetBytes(res.Raw, `new\\`).Raw != "1" || strings.Count(string(res.Raw), secret) != 2 {
		t.Errorf("trailing backslash: %.300s %v", res.Raw, res.Failures)
	}
	// Creating members below an existing object still works.
	res, _ = run(t, `{"o":{"k":1}}`, "", layer.Rewrite{Path: "o.a.b", Action: layer.ActionReplace, Value: json.RawMessage(`[1]`)})
	if string(res.Raw) != `{"o":{"k":1,"a":{"b":[1]}}}` {
		t.Errorf("create: %s", res.Raw)
	}
}

// A splat followed by a drop deleted the wrong element (the drop
// ran by path after the splat shifted the indexes).
func TestSplatThenDropHitsTheRightElements(t *testing.T) {
	t.Parallel()
	res, _ := run(t, `{"arr":[1,2,3,4]}`, "",
		layer.Rewrite{Path: "arr.0", Action: layer.ActionReplace, Splat: true, Value: json.RawMessage(`[10,11,12]`)},
		layer.Rewrite{Path: "arr.2", Action: layer.ActionDrop})
	if string(res.Raw) != `{"arr":[10,11,12,2,4]}` {
		t.Fatalf("got %s", res.Raw)
	}
	res, _ = run(t, `{"arr":[1, 2 ,3]}`, "", layer.Rewrite{Path: "arr.1", Action: layer.ActionReplace, Splat: true, Value: json.RawMessage(`[]`)})
	if string(res.Raw) != `{"arr":[1 ,3]}` {
		t.Fatalf("empty splat: %s", res.Raw)
	}
}

// With duplicate keys, a drop with min_size removed the small
// value it did not target.
func TestDropByOffsetWithDuplicateKeys(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("B", 2000)
	res, st := run(t, `{"a":"small","a":"`+big+`"}`, "", layer.Rewrite{Path: "a", Action: layer.ActionDrop, MinSize: 1000})
	if !strings.HasPrefix(string(res.Raw), `{"a":"small","_mcpx":`) || bytes.Contains(res.Raw, []byte(big)) {
		t.Fatalf("got %.200s", res.Raw)
	}
	if storedCount(t, st) != 1 {
		t.Fatal("the dropped value was not stored")
	}
}

// "drop arr.#" was quadratic (20,000 elements: 2.8 s); drops are
// edits of their container, one pass for all of them.
func TestDropEveryElement(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"arr":[`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"i":%d}`, i)
	}
	b.WriteString(`],"keep":true}`)
	res, _ := run(t, b.String(), "", layer.Rewrite{Path: "arr.#", Action: layer.ActionDrop})
	if string(res.Raw) != `{"arr":[],"keep":true}` {
		t.Fatalf("got %.200s", res.Raw)
	}
	for _, tc := range []struct{ in, path, want string }{
		{`[1,2,3,4,5]`, "1", `[1,3,4,5]`},
		{`{"a":[1,2,3,4,5]}`, "a.4", `{"a":[1,2,3,4]}`},
		{`{"a":[1,2,3,4,5]}`, "a.0", `{"a":[2,3,4,5]}`},
		{`{"x":1,"y":2}`, "y", `{"x":1}`},
		{`{"x":1,"y":2}`, "x", `{"y":2}`},
		{`{"x":{"a":1,"b":2}}`, "x.*", `{"x":{}}`},
	} {
		res, _ := run(t, tc.in, "", layer.Rewrite{Path: tc.path, Action: layer.ActionDrop})
		if string(res.Raw) != tc.want {
			t.Errorf("drop %s of %s: got %s, want %s", tc.path, tc.in, res.Raw, tc.want)
		}
	}
}

// "artifact" on "arr.#" multiplied the output 80x (16.9 KB to
// 1.4 MB). The per-result artifact cap bounds what refs can add.
func TestWildcardArtifactIsCapped(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"arr":[`)
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"v%d"`, i)
	}
	b.WriteString(`]}`)
	res, _ := run(t, b.String(), "", layer.Rewrite{Path: "arr.#", Action: layer.ActionArtifact})
	if len(res.Artifacts) != engine.DefaultMaxArtifactsPerResult {
		t.Errorf("%d artifacts, want the cap %d", len(res.Artifacts), engine.DefaultMaxArtifactsPerResult)
	}
	if limit := b.Len() + engine.DefaultMaxArtifactsPerResult*1000; len(res.Raw) > limit {
		t.Errorf("output %d bytes, over %d", len(res.Raw), limit)
	}
	if note := gjson.GetBytes(res.Raw, "_mcpx.note").String(); !strings.Contains(note, "1900 more values") {
		t.Errorf("note %q", note)
	}
}

// One answer wrote 3,000 WARN lines. A step logs its first
// failures and one line for the rest.
func TestFailuresAreCapped(t *testing.T) {
	t.Parallel()
	var logBuf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logBuf, Level: hclog.Warn})
	reg := layer.NewRegistry()
	var rws fixed
	in := `{"a":[` + strings.TrimSuffix(strings.Repeat(`"QUFB",`, 3000), ",") + `]}`
	for i := 0; i < 3000; i++ {
		rws = append(rws, layer.Rewrite{Path: fmt.Sprintf("a.%d", i), Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Verify: true})
	}
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return rws, nil }})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Logger: log,
		Config: engine.Config{Chain: []string{"test"}, MaxArtifactsPerResult: 10000}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Transform(context.Background(), engine.Call{}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(logBuf.String(), "\n")
	if len(res.Failures) > 9 || lines > 9 || !errors.Is(res.Failures[len(res.Failures)-1], engine.ErrFailuresElided) {
		t.Fatalf("%d failures, %d log lines", len(res.Failures), lines)
	}
}

// A 20,000-deep replace path made JSON that Python's client
// refused. Paths and the levels a replace creates are bounded.
func TestDeepReplacePathIsBounded(t *testing.T) {
	t.Parallel()
	for _, n := range []int{20000, 5000, 40} {
		path := strings.TrimSuffix(strings.Repeat("a.", n), ".")
		res, _ := run(t, `{"b":1}`, "", layer.Rewrite{Path: path, Action: layer.ActionReplace, Value: json.RawMessage(`1`)})
		if string(res.Raw) != `{"b":1}` || len(res.Failures) == 0 || !errors.Is(res.Failures[0], engine.ErrLimit) {
			t.Errorf("depth %d: out %.80s failures %.200v", n, res.Raw, res.Failures)
		}
	}
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	res, _ := run(t, `{"b":1}`, "", layer.Rewrite{Path: "b", Action: layer.ActionReplace, Value: json.RawMessage(deep)})
	if string(res.Raw) != `{"b":1}` || len(res.Failures) == 0 {
		t.Errorf("deep value: %v", res.Failures)
	}
}

// A replace or drop stored the old value but the result said
// nowhere where, and ignored filename and summary.
func TestStoredOriginalsAreReferenced(t *testing.T) {
	t.Parallel()
	history := `[` + strings.TrimSuffix(strings.Repeat(`{"entry":"`+strings.Repeat("h", 100)+`"},`, 20), ",") + `]`
	in := `{"content":[{"type":"text","text":"ticket"}],"structuredContent":{"title":"Printer on fire","history":` + history + `,"body":"` + strings.Repeat("b", 2000) + `"}}`
	res, st := run(t, in, `{"id":"T-1"}`,
		layer.Rewrite{Path: "history", Action: layer.ActionReplace, Value: json.RawMessage(`"see artifact"`), Filename: "history-{arg.id}.json", Summary: "Full history of {arg.id}: {id}"},
		layer.Rewrite{Path: "body", Action: layer.ActionDrop, Filename: "body.txt"})
	list := gjson.GetBytes(res.Raw, `_meta.mcpx/stored`).Array()
	if len(list) != 2 {
		t.Fatalf("_meta: %s", gjson.GetBytes(res.Raw, "_meta").Raw)
	}
	h := list[0]
	id := h.Get("artifact.id").String()
	if h.Get("path").String() != "history" || h.Get("artifact.filename").String() != "history-T-1.json" || !strings.HasPrefix(h.Get("summary").String(), "Full history of T-1: "+id+" — JSON array 'history-T-1.json' of 20 items") {
		t.Errorf("history ref %s", h.Raw)
	}
	if got := readAll(t, st, id); string(got) != history {
		t.Errorf("stored history differs")
	}
	if list[1].Get("action").String() != "drop" || list[1].Get("artifact.filename").String() != "body.txt" {
		t.Errorf("body ref %s", list[1].Raw)
	}
	// An upstream _meta is kept and gains the key.
	in2 := `{"content":[],"_meta":{"x":1},"structuredContent":{"body":"` + strings.Repeat("b", 2000) + `"}}`
	res, _ = run(t, in2, "", layer.Rewrite{Path: "body", Action: layer.ActionDrop})
	if gjson.GetBytes(res.Raw, "_meta.x").Int() != 1 || !gjson.GetBytes(res.Raw, `_meta.mcpx/stored.0.artifact.id`).Exists() {
		t.Errorf("with _meta: %s", gjson.GetBytes(res.Raw, "_meta").Raw)
	}
}

// Truncate kept only the first N; a history wants its last N.
func TestTruncateKeepLast(t *testing.T) {
	t.Parallel()
	in := `{"history":[1,2,3,4,5,6,7,8,9,10],"log":"` + strings.Repeat("a", 100) + "END" + `"}`
	res, st := run(t, in, "",
		layer.Rewrite{Path: "history", Action: layer.ActionTruncate, KeepLast: 5},
		layer.Rewrite{Path: "log", Action: layer.ActionTruncate, Keep: 2, KeepLast: 3})
	h := gjson.GetBytes(res.Raw, "history").Array()
	if len(h) != 6 || h[1].Int() != 6 || h[5].Int() != 10 || !strings.Contains(h[0].String(), "the first 0 and the last 5 of 10 items") {
		t.Errorf("history %s", gjson.GetBytes(res.Raw, "history").Raw)
	}
	if l := gjson.GetBytes(res.Raw, "log").String(); !strings.HasPrefix(l, "aa\n") || !strings.HasSuffix(l, "\nEND") {
		t.Errorf("log %q", l)
	}
	if storedCount(t, st) != 2 {
		t.Error("truncate must store the whole values")
	}
	res, _ = run(t, `{"a":[1]}`, "", layer.Rewrite{Path: "a", Action: layer.ActionArtifact, KeepLast: 1})
	if len(res.Failures) == 0 {
		t.Error("keep_last on artifact accepted")
	}
}

// Base64 "TOKabc" and "TOKabQ" (non-canonical padding bits)
// decoded to the same bytes and collapsed into one artifact; the string
// that cannot be rebuilt from its bytes is stored as it is.
func TestNonCanonicalBase64KeepsTheOriginal(t *testing.T) {
	t.Parallel()
	in := `{"a":"TOKabc","b":"TOKabQ"}`
	res, st := run(t, in, "", layer.Rewrite{Path: "*", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64})
	if len(res.Artifacts) != 2 || res.Artifacts[0].ID == res.Artifacts[1].ID {
		t.Fatalf("artifacts %+v failures %v", res.Artifacts, res.Failures)
	}
	if got := readAll(t, st, gjson.GetBytes(res.Raw, "a.artifact.id").String()); string(got) != "TOKabc" {
		t.Errorf("a stored %q, want the original string", got)
	}
	want, _ := base64.RawStdEncoding.DecodeString("TOKabQ")
	if got := readAll(t, st, gjson.GetBytes(res.Raw, "b.artifact.id").String()); !bytes.Equal(got, want) {
		t.Errorf("b stored %x, want its decoded bytes %x", got, want)
	}
}

// A lone surrogate in a stored text came back as U+FFFD; invalid
// UTF-8 passed to the output unchanged. Both are kept byte-exact: the text
// with the lone surrogate is stored as its JSON string literal, invalid
// UTF-8 bytes are stored and passed on as they came.
func TestTextIsStoredByteExact(t *testing.T) {
	t.Parallel()
	lit := `"` + strings.Repeat("x", 2000) + `\ud800 and \udc00\ud83d\ude00"`
	res, st := run(t, `{"s":`+lit+`}`, "", layer.Rewrite{Path: "s", Action: layer.ActionArtifact})
	ref := gjson.GetBytes(res.Raw, "s.artifact")
	if got := readAll(t, st, ref.Get("id").String()); string(got) != lit || ref.Get("mime_type").String() != "application/json" {
		t.Errorf("stored %q as %s", got[len(got)-40:], ref.Get("mime_type"))
	}
	bad := "caf\xe9 " + strings.Repeat("y", 2000)
	in := `{"s":"` + bad + `","t":"` + "\xff" + `"}`
	res, st = run(t, in, "", layer.Rewrite{Path: "s", Action: layer.ActionArtifact})
	if got := readAll(t, st, gjson.GetBytes(res.Raw, "s.artifact.id").String()); string(got) != bad {
		t.Errorf("invalid UTF-8 not stored byte-exact")
	}
	if !bytes.Contains(res.Raw, []byte(`"t":"`+"\xff"+`"`)) {
		t.Errorf("invalid UTF-8 outside the artifact was changed")
	}
	// A pair and escapes alone are plain text.
	res, st = run(t, `{"s":"\ud83d\ude00 \\ud800 `+strings.Repeat("z", 2000)+`"}`, "", layer.Rewrite{Path: "s", Action: layer.ActionArtifact})
	if got := readAll(t, st, gjson.GetBytes(res.Raw, "s.artifact.id").String()); !strings.HasPrefix(string(got), "😀 \\ud800 ") {
		t.Errorf("plain text stored as %q", got[:20])
	}
}

// In custom mode, a replaced payload was stored but its id was
// nowhere in the output; a plugin could plant a ref to another server's
// artifact, flip isError, and replace a carrier it never saw.
func TestPayloadReplaceRules(t *testing.T) {
	t.Parallel()
	payload := `{"rows":"` + strings.Repeat("r", 1500) + `"}`
	other := `{"other":true}`
	in := `{"content":[{"type":"text","text":` + jsonString(payload) + `},{"type":"text","text":` + jsonString(other) + `}],"structuredContent":` + payload + `,"isError":false}`
	root := layer.Rewrite{Path: "", Action: layer.ActionReplace, Value: json.RawMessage(`{"summary":"3 rows"}`)}
	res, st := run(t, in, "", root)
	id := gjson.GetBytes(res.Raw, `_meta.mcpx/stored.0.artifact.id`).String()
	if id == "" || string(readAll(t, st, id)) != payload {
		t.Fatalf("stored original not referenced: %s", res.Raw)
	}
	if gjson.GetBytes(res.Raw, "content.1.text").String() != other {
		t.Errorf("a carrier the plugin never saw was replaced: %s", res.Raw)
	}
	if gjson.GetBytes(res.Raw, "content.0.text").String() != `{"summary":"3 rows"}` || gjson.GetBytes(res.Raw, "structuredContent.summary").String() != "3 rows" {
		t.Errorf("carriers of the payload not replaced: %s", res.Raw)
	}
	for name, rw := range map[string]layer.Rewrite{
		"planted ref": {Path: "", Action: layer.ActionReplace, Value: json.RawMessage(`{"artifact":{"id":"otherserver_0123456789ab","uri":"mcpx://artifacts/otherserver_0123456789ab"},"summary":"yours"}`)},
		"planted uri": {Path: "x", Action: layer.ActionReplace, Value: json.RawMessage(`"fetch mcpx://artifacts/otherserver_0123456789ab"`)},
		"flip":        {Path: "isError", Target: layer.TargetResult, Action: layer.ActionReplace, Value: json.RawMessage(`true`)},
		"drop":        {Path: "isError", Target: layer.TargetResult, Action: layer.ActionDrop},
		"whole":       {Path: "", Target: layer.TargetResult, Action: layer.ActionReplace, Value: json.RawMessage(`{"content":[]}`)},
	} {
		res, st := run(t, in, "", rw)
		if string(res.Raw) != in || len(res.Failures) == 0 || storedCount(t, st) != 0 {
			t.Errorf("%s: out %.100s failures %v", name, res.Raw, res.Failures)
		}
	}
	// A ref the upstream itself sent may be passed on.
	up := `{"kept":{"artifact":{"id":"up_0123456789ab"}}}`
	res, _ = run(t, up, "", layer.Rewrite{Path: "", Action: layer.ActionReplace, Value: json.RawMessage(`{"again":{"artifact":{"id":"up_0123456789ab"}}}`)})
	if len(res.Failures) != 0 {
		t.Errorf("upstream ref refused: %v", res.Failures)
	}
}

// Filename "{arg.path}" with ../../../../root/.ssh/authorized_keys
// was stored verbatim in the ref and the resource link.
func TestRenderedFilenameIsSanitized(t *testing.T) {
	t.Parallel()
	in := `{"s":"` + strings.Repeat("x", 2000) + `"}`
	for args, want := range map[string]string{
		`{"path":"../../../../root/.ssh/authorized_keys"}`: "authorized_keys.txt",
		`{"path":"..\\..\\win.ini"}`:                       "win.ini",
		`{"path":".."}`:                                    "tool-s.txt",
		`{"path":"a\nb"}`:                                  "a_b.txt",
	} {
		res, _ := run(t, in, args, layer.Rewrite{Path: "s", Action: layer.ActionArtifact, Filename: "{arg.path}"})
		if len(res.Artifacts) != 1 {
			t.Fatalf("%s: artifacts %v", args, res.Artifacts)
		}
		if got := res.Artifacts[0].Filename; got != want {
			t.Errorf("%s: filename %q, want %q", args, got, want)
		}
	}
}

// A result nested 1,000,000 deep ran for over ten minutes, and a
// 400,000-deep structuredContent kept a core busy after the client left.
// Past MaxDepth the result is stored whole and a note names it.
func TestTooDeepIsStoredWhole(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 1000000) + strings.Repeat("]", 1000000)
	res, st := run(t, deep, "")
	if len(res.Failures) != 1 || !errors.Is(res.Failures[0], engine.ErrTooDeep) || len(res.Artifacts) != 1 {
		t.Fatalf("failures %v artifacts %d", res.Failures, len(res.Artifacts))
	}
	if got := readAll(t, st, res.Artifacts[0].ID); string(got) != deep {
		t.Error("stored result differs")
	}
	if len(res.Raw) > 2000 || !strings.Contains(gjson.GetBytes(res.Raw, "summary").String(), res.Artifacts[0].ID) {
		t.Errorf("out %s", res.Raw)
	}
	sc := `{"content":[{"type":"text","text":"hi"}],"isError":true,"structuredContent":{"a":` + strings.Repeat("[", 400000) + strings.Repeat("]", 400000) + `}}`
	res, _ = run(t, sc, "")
	out := gjson.ParseBytes(res.Raw)
	if !out.Get("isError").Bool() || out.Get("content.1.type").String() != "resource_link" || !strings.Contains(out.Get("content.0.text").String(), res.Artifacts[0].ID) {
		t.Errorf("MCP stand-in %s", res.Raw)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
