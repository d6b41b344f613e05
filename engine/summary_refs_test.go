package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// signedLinker makes download URLs shaped like web.Signer's.
type signedLinker struct{}

func (signedLinker) ArtifactURL(r engine.ArtifactRef) string {
	return "https://mcpx.example/artifacts/" + r.ID + "?exp=1999999999&sig=AbC-dEf_123"
}

// refToken finds URLs and mcpx URIs as a reader delimits them (up to
// white space or a quote); idTouched finds an artifact id with
// punctuation right after it.
var (
	refToken  = regexp.MustCompile(`(https?|mcpx)://[^\s"\\]+`)
	idTouched = regexp.MustCompile(`artifact [a-z0-9-]+_[0-9a-f]{12,}[.,)'\];:]`)
)

// bareRefsViolations returns the references in s that punctuation
// touches: taken literally, "URL." gets a 403 and "mcpx://artifacts/ID."
// an unknown resource.
func bareRefsViolations(s string) []string {
	var bad []string
	for _, tok := range refToken.FindAllString(s, -1) {
		if strings.ContainsAny(tok[len(tok)-1:], ".,)'];:") {
			bad = append(bad, tok)
		}
	}
	return append(bad, idTouched.FindAllString(s, -1)...)
}

// Summaries ended a URL with a period ("download: <url>."),
// and the truncation markers closed a URI with ")". Every text the engine
// writes leaves ids, URIs and URLs bare.
func TestSummariesLeaveReferencesBare(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 400)
	items := strings.Repeat(`{"n":1},`, 40) + `{"n":2}`
	in := `{"content":[` +
		`{"type":"image","mimeType":"image/png","data":"` + b64(png1x1) + `"},` +
		`{"type":"resource","resource":{"uri":"file:///tmp/report.pdf","mimeType":"application/pdf","blob":"` + b64(pdf) + `"}}` +
		`],"structuredContent":{"pdf":"` + b64(pdf) + `","text":` + jsonString(long) + `,"tail":` + jsonString(long+"end") + `,"rows":[` + items + `],"more":[` + items + `]}}`
	rws := fixed{
		{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock},
		{Path: "content.1", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock},
		{Path: "structuredContent.pdf", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Path: "structuredContent.text", Target: layer.TargetResult, Action: layer.ActionTruncate, Keep: 20},
		{Path: "structuredContent.tail", Target: layer.TargetResult, Action: layer.ActionTruncate, Keep: 20, KeepLast: 5},
		{Path: "structuredContent.rows", Target: layer.TargetResult, Action: layer.ActionTruncate, Keep: 2},
		{Path: "structuredContent.more", Target: layer.TargetResult, Action: layer.ActionTruncate, Keep: 2, KeepLast: 2},
	}
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return rws, nil }})
	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"test"}}, Linker: signedLinker{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "t"}, []byte(in))
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("transform: %v %v", err, res.Failures)
	}
	if len(res.Artifacts) < 7 {
		t.Fatalf("%d artifacts, want 7: %s", len(res.Artifacts), res.Raw)
	}
	texts := 0
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.IsObject() || v.IsArray():
			v.ForEach(func(_, c gjson.Result) bool { walk(c); return true })
		case v.Type == gjson.String:
			s := v.String()
			if strings.Contains(s, "mcpx://") {
				texts++
			}
			if bad := bareRefsViolations(s); len(bad) > 0 {
				t.Errorf("punctuation touches a reference %q in %q", bad, s)
			}
			if inner := gjson.Parse(s); (inner.IsObject() || inner.IsArray()) && gjson.Valid(s) {
				walk(inner)
			}
		}
	}
	walk(gjson.ParseBytes(res.Raw))
	if texts < 7 {
		t.Errorf("only %d texts name an artifact URI: %s", texts, res.Raw)
	}
	if !strings.Contains(string(res.Raw), "https://mcpx.example/artifacts/") {
		t.Errorf("no download URL in the summaries: %s", res.Raw)
	}
	// The deep-result stand-in too.
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	res, _ = eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "t"}, []byte(deep))
	if s := gjson.GetBytes(res.Raw, "summary").String(); !strings.Contains(s, "mcpx://artifacts/") || len(bareRefsViolations(s)) > 0 {
		t.Errorf("deep-result summary %q", s)
	}
	// the checker itself
	for _, bad := range []string{"download: https://h/a?sig=x.", "as mcpx://artifacts/srv_0123456789ab.", "(mcpx://artifacts/srv_0123456789ab)", "artifact srv_0123456789ab;", "'https://h/x'"} {
		if len(bareRefsViolations(bad)) == 0 {
			t.Errorf("the check misses %q", bad)
		}
	}
}

// Each summary appeared twice in one result, in the text block
// and as the resource_link's description. The link is described by kind
// and size only.
func TestResourceLinkHasShortDescription(t *testing.T) {
	t.Parallel()
	in := `{"content":[{"type":"image","mimeType":"image/png","data":"` + b64(png1x1) + `"}]}`
	eng := newEngine(t, memstore.New(memstore.Config{}), fixed{{Path: "content.0", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock}}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "t"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := gjson.ParseBytes(res.Raw)
	summary := out.Get("content.0.text").String()
	link := out.Get("content.1")
	if link.Get("type").String() != "resource_link" || summary == "" {
		t.Fatalf("result %s", res.Raw)
	}
	if d := link.Get("description").String(); d == summary || strings.Contains(d, "mcpx://") || !strings.HasPrefix(d, "PNG image, ") || !strings.HasSuffix(d, " B") {
		t.Errorf("resource_link description %q; want the kind and size, not the summary %q", d, summary)
	}
	if strings.Count(string(res.Raw), "is not in this result") != 1 {
		t.Errorf("the summary appears more than once: %s", res.Raw)
	}
}

// png1x1 is a 1x1 PNG.
var png1x1, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// TestLayerSummaryKeepsContentAndReference: a layer that names a value
// in its own terms (a preset, a fields rule, a plugin) no longer hides
// what the engine knows: its words come first, then what the bytes say,
// the mcpx:// URI and how to look further, in place and in block form.
func TestLayerSummaryKeepsContentAndReference(t *testing.T) {
	t.Parallel()
	log := strings.Repeat("GET /api/items 200 12ms\n", 500)
	in := `{"content":[{"type":"text","text":` + jsonString(`{"name":"api.log","log":`+jsonString(log)+`}`) + `},` +
		`{"type":"resource","resource":{"uri":"file:///var/log/web.log","mimeType":"text/plain","text":` + jsonString(log) + `}}]}`
	eng := newEngine(t, memstore.New(memstore.Config{}), fixed{
		{Path: "log", Action: layer.ActionArtifact, Encoding: layer.EncodingText, Summary: "Log '{.name}' of the web tier"},
		{Path: "content.1", Target: layer.TargetResult, Action: layer.ActionArtifact, Form: layer.FormBlock, Summary: "Log of the web tier"},
	}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "ops", Tool: "tail"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := gjson.ParseBytes(res.Raw)
	inPlace := gjson.Get(out.Get("content.0.text").String(), "log.summary").String()
	block := out.Get("content.1.text").String()
	for _, tc := range []struct{ got, own string }{{inPlace, "Log 'api.log' of the web tier — "}, {block, "Log of the web tier — "}} {
		id := res.Artifacts[0].ID
		want := tc.own + "Text 'api.log' of 500 lines (12,000 chars, 12.0 kB) is not in this result: it is stored as artifact " + id +
			" and can be referenced by that id or as mcpx://artifacts/" + id + " — ask artifacts_query for lines 1-100 or a grep, artifacts_search for words"
		if tc.own == "Log of the web tier — " {
			want = strings.Replace(want, "'api.log'", "'web.log'", 1)
		}
		if !strings.HasPrefix(tc.got, want) {
			t.Errorf("summary\n%q\nwant it to start\n%q", tc.got, want)
		}
	}
}

// TestTruncateTemplateKeepsTheCount: a truncate rewrite's template no
// longer replaces the engine's marker: its words come first, then what
// was kept and where the whole value is.
func TestTruncateTemplateKeepsTheCount(t *testing.T) {
	t.Parallel()
	items := strings.TrimSuffix(strings.Repeat(`{"n":1},`, 40), ",")
	in := `{"structuredContent":{"log":` + jsonString(strings.Repeat("line of the build log\n", 100)) + `,"rows":[` + items + `]}}`
	eng := newEngine(t, memstore.New(memstore.Config{}), fixed{
		{Path: "log", Action: layer.ActionTruncate, Keep: 21, Summary: "build log of {server}"},
		{Path: "rows", Action: layer.ActionTruncate, Keep: 2, Summary: "rows of {tool}"},
	}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "ci", Tool: "rows"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := gjson.ParseBytes(res.Raw)
	logID, rowsID := res.Artifacts[0].ID, res.Artifacts[1].ID
	if got, want := out.Get("structuredContent.log").String(), "line of the build log\n… [build log of ci — truncated: showing 21 of 2200 chars; the full text is artifact "+logID+" at mcpx://artifacts/"+logID+" ]"; got != want {
		t.Errorf("log\n%q\nwant\n%q", got, want)
	}
	if got, want := out.Get("structuredContent.rows.2").String(), "[rows of rows — truncated: showing 2 of 40 items; all of it (321 B) is artifact "+rowsID+" at mcpx://artifacts/"+rowsID+" ; query it by this result's paths, as rows.39 ]"; got != want {
		t.Errorf("rows marker\n%q\nwant\n%q", got, want)
	}
}
