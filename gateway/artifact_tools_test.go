package gateway

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// playwrightSnapshot is a browser_snapshot answer as @playwright/mcp
// writes it: page state, then a YAML accessibility tree of about size
// bytes, one of whose buttons is "Submit order" [ref=e1234].
func playwrightSnapshot(size int) string {
	var b strings.Builder
	b.WriteString("### Page state\n- Page URL: http://127.0.0.1/checkout\n- Page Title: Checkout\n- Page Snapshot:\n```yaml\n- generic [ref=e1]:\n")
	for i := 2; b.Len() < size; i++ {
		switch {
		case i == 1234:
			fmt.Fprintf(&b, "  - button \"Submit order\" [ref=e%d] [cursor=pointer]\n", i)
		case i%4 == 0:
			fmt.Fprintf(&b, "  - link \"Order %d details\" [ref=e%d] [cursor=pointer]:\n    - /url: /orders/%d\n", i, i, i)
		case i%4 == 1:
			fmt.Fprintf(&b, "  - button \"Submit review %d\" [ref=e%d]\n", i, i)
		default:
			fmt.Fprintf(&b, "  - generic [ref=e%d]: Item %d in your cart, quantity %d\n", i, i, i%7)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

var artifactURI = regexp.MustCompile(`mcpx://artifacts/([a-z0-9_-]+)`)

// snapshotGateway starts a gateway in front of the Playwright stub with
// an fsstore (FTS5 search), calls browser_snapshot in a new session and
// indexes the stored snapshot as the engine does (one text part). It
// returns the gateway, the session, the artifact id and the snapshot.
func snapshotGateway(t *testing.T, at config.ArtifactToolsOptions) (*Gateway, *client, string, string) {
	t.Helper()
	return snapshotGatewayOn(t, at, func(st *fsstore.Store) store.Store { return st })
}

// snapshotGatewayOn is snapshotGateway with the engine's store made by
// wrap from the fs store.
func snapshotGatewayOn(t *testing.T, at config.ArtifactToolsOptions, wrap func(*fsstore.Store) store.Store) (*Gateway, *client, string, string) {
	t.Helper()
	ctx := context.Background()
	snap := playwrightSnapshot(600_000)
	st, err := fsstore.Open(ctx, t.TempDir(), fsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(ctx) })
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"playwright": playwrightUpstream(t, snap)}, Engine: engine.Options{Store: wrap(st)}, ArtifactTools: at})
	c := connect(t, g)
	res := c.result("tools/call", toolCall("browser_snapshot", "{}"))
	visible := res.Get("content.0.text").String()
	m := artifactURI.FindStringSubmatch(res.Raw)
	if m == nil || len(res.Raw) > 10_000 {
		t.Fatalf("browser_snapshot through mcpx: %d bytes, no artifact: %.500s", len(res.Raw), res.Raw)
	}
	if !strings.Contains(g.rooms.Describe(false)["instructions"].(string), g.artTools.SearchName+" finds lines") {
		t.Errorf("instructions do not name artifacts_search: %v", g.rooms.Describe(false)["instructions"])
	}
	t.Logf("model-visible text (%d bytes): %.300s", len(visible), visible)
	// what the model reads says how to find an element in the snapshot
	for _, tool := range []string{g.artTools.QueryName, g.artTools.SearchName} {
		if !strings.Contains(visible, tool) {
			t.Errorf("the model-visible text does not name %s: %.500s", tool, visible)
		}
	}
	// the engine indexed the stored text itself (its summary hook)
	rc, _, err := st.Get(ctx, m[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(rc)
	rc.Close()
	return g, c, m[1], string(stored)
}

// The Playwright case: a 600 KB accessibility snapshot is stored; the
// model finds the [ref=…] of the "Submit order" button with
// artifacts_search and with artifacts_query grep, in the session era and
// statelessly; another session finds nothing and reads "not found".
func TestArtifactToolsPlaywrightSnapshot(t *testing.T) {
	t.Parallel()
	g, c, id, stored := snapshotGateway(t, config.ArtifactToolsOptions{})
	wantLine := `- button "Submit order" [ref=e1234]`
	lineNo := 0
	for i, l := range strings.Split(stored, "\n") {
		if strings.Contains(l, wantLine) {
			lineNo = i + 1
		}
	}

	tools := c.result("tools/list", "{}").Get("tools")
	for _, name := range []string{"artifacts_query", "artifacts_search"} {
		def := tools.Get(`#(name=="` + name + `")`)
		if !def.Exists() || def.Get(`_meta.anthropic/maxResultSizeChars`).Int() != config.DefaultArtifactAnswerChars || !def.Get("inputSchema.properties").IsObject() {
			t.Fatalf("tools/list: %s = %s", name, def.Raw)
		}
	}

	search := c.result("tools/call", toolCall("artifacts_search", `{"query":"\"Submit order\""}`))
	text := search.Get("content.0.text").String()
	// Each hit says when its artifact was stored and by which call.
	storedAt := search.Get("structuredContent.hits.0.stored_at").String()
	if at, err := time.Parse(time.RFC3339, storedAt); err != nil || time.Since(at) > time.Hour || time.Since(at) < -time.Minute {
		t.Fatalf("hit stored at %q (%v), want the snapshot's time, just now", storedAt, err)
	}
	if at := fmt.Sprintf("%s line %d (stored %s by playwright/browser_snapshot):   %s", id, lineNo, storedAt, wantLine); search.Get("isError").Bool() || !strings.Contains(text, at) || len(text) > config.DefaultArtifactAnswerChars {
		t.Fatalf("artifacts_search: %s; want a line %q", search.Raw, at)
	}
	if h := search.Get("structuredContent.hits.0"); h.Get("id").String() != id || h.Get("place").String() != fmt.Sprintf("line %d", lineNo) ||
		h.Get("stored_at").String() != storedAt || h.Get("source.server").String() != "playwright" || h.Get("source.tool").String() != "browser_snapshot" {
		t.Fatalf("structured hit = %s", h.Raw)
	}
	if !strings.Contains(text, fmt.Sprintf(`artifacts_query {"id": %q, "lines": "%d-%d"}`, id, lineNo-10, lineNo+10)) {
		t.Errorf("search answer says no way to read around the hit: %s", text)
	}

	grep := c.result("tools/call", toolCall("artifacts_query", `{"id":"mcpx://artifacts/`+id+`","grep":"Submit order"}`))
	if grep.Get("isError").Bool() || !strings.Contains(grep.Get("content.0.text").String(), fmt.Sprintf("%d:  %s", lineNo, wantLine)) {
		t.Fatalf("artifacts_query grep: %s", grep.Raw)
	}
	lines := c.result("tools/call", toolCall("artifacts_query", fmt.Sprintf(`{"id":%q,"lines":"%d-%d"}`, id, lineNo, lineNo)))
	if got := lines.Get("content.0.text").String(); !strings.Contains(got, wantLine) || strings.Count(got, "\n") > 1 {
		t.Fatalf("artifacts_query lines: %s", lines.Raw)
	}
	// The budget: all lines of a 600 KB text come back cut, saying so.
	all := c.result("tools/call", toolCall("artifacts_query", fmt.Sprintf(`{"id":%q,"lines":"1-100000","max_chars":2000}`, id))).Get("content.0.text").String()
	if len([]rune(all)) > 2000 || !strings.Contains(all, "cut") {
		t.Fatalf("a 2000-character budget answered %d characters: %.300s", len(all), all)
	}

	// Stateless (2026-07-28) on the same connection: same tools, same scope.
	sl := c.result("tools/list", statelessParams("{}", ""))
	if !sl.Get(`tools.#(name=="artifacts_search")`).Exists() {
		t.Fatalf("stateless tools/list: %s", sl.Raw)
	}
	ss := c.result("tools/call", statelessParams(toolCall("artifacts_search", `{"query":"submit order","limit":3}`), ""))
	if !strings.Contains(ss.Get("content.0.text").String(), wantLine) {
		t.Fatalf("stateless artifacts_search: %s", ss.Raw)
	}

	// Another session: another principal's artifact is not found.
	other := connect(t, g)
	if r := other.result("tools/call", toolCall("artifacts_search", `{"query":"Submit order"}`)); strings.Contains(r.Raw, id) {
		t.Fatalf("another session's search found the artifact: %s", r.Raw)
	}
	r := other.result("tools/call", toolCall("artifacts_query", fmt.Sprintf(`{"id":%q,"grep":"Submit"}`, id)))
	if !r.Get("isError").Bool() || !strings.Contains(r.Get("content.0.text").String(), "not found") || strings.Contains(r.Raw, "Submit") {
		t.Fatalf("another session's query: %s", r.Raw)
	}
	unknown := other.result("tools/call", toolCall("artifacts_query", `{"id":"playwright_000000000000","grep":"x"}`))
	if !unknown.Get("isError").Bool() || unknown.Get("content.0.text").String() != strings.Replace(r.Get("content.0.text").String(), id, "playwright_000000000000", 1) {
		t.Fatalf("unknown id and another's id answer differently: %s / %s", unknown.Raw, r.Raw)
	}
}

// Bad input is a tool error the model can read, never a protocol error.
func TestArtifactToolsBadInput(t *testing.T) {
	t.Parallel()
	_, c, id, _ := snapshotGateway(t, config.ArtifactToolsOptions{})
	for _, tc := range []struct{ tool, args, want string }{
		{"artifacts_query", fmt.Sprintf(`{"id":%q,"lines":"1-2","grep":"x"}`, id), "exactly one"},
		{"artifacts_query", fmt.Sprintf(`{"id":%q}`, id), "exactly one"},
		{"artifacts_query", fmt.Sprintf(`{"id":%q,"grep":"(["}`, id), "invalid regular expression"},
		{"artifacts_query", fmt.Sprintf(`{"id":%q,"lines":"900000-900010"}`, id), "out of range"},
		{"artifacts_query", fmt.Sprintf(`{"id":%q,"lines":"b-a"}`, id), "lines: want A-B"},
		{"artifacts_query", `{"grep":"x"}`, `"id" is required`},
		{"artifacts_query", `{"id":"../../etc/passwd","grep":"x"}`, "not found"},
		{"artifacts_search", `{"query":"\"-*:"}`, "want words"},
		{"artifacts_search", `{"query":"x","limit":0}`, "limit"},
	} {
		r := c.result("tools/call", toolCall(tc.tool, tc.args))
		if !r.Get("isError").Bool() || !strings.Contains(r.Get("content.0.text").String(), tc.want) {
			t.Errorf("%s %s = %s, want an error saying %q", tc.tool, tc.args, r.Raw, tc.want)
		}
	}
	// Query syntax of FTS5 in the model's words is taken literally.
	for _, q := range []string{`Submit OR order`, `NEAR(submit order)`, `submit*`, `"Submit order`, `ref:e1234`} {
		r := c.result("tools/call", toolCall("artifacts_search", fmt.Sprintf(`{"query":%s}`, quote(q))))
		if r.Get("isError").Bool() {
			t.Errorf("artifacts_search %q: %s", q, r.Raw)
		}
	}
}

// "bytes": "A" and "A-" read from byte A to the end (as much as fits),
// as the tool's schema says; they were refused as empty ranges.
func TestArtifactToolsBytesFromOffset(t *testing.T) {
	t.Parallel()
	_, c, id, stored := snapshotGateway(t, config.ArtifactToolsOptions{})
	from := len(stored) - 40
	for _, arg := range []string{fmt.Sprint(from), fmt.Sprintf(`"%d"`, from), fmt.Sprintf(`"%d-"`, from)} {
		r := c.result("tools/call", toolCall("artifacts_query", fmt.Sprintf(`{"id":%q,"bytes":%s}`, id, arg)))
		if got := r.Get("content.0.text").String(); r.Get("isError").Bool() || !strings.HasPrefix(got, stored[from:]) {
			t.Errorf("bytes %s = %s, want %q", arg, r.Raw, stored[from:])
		}
	}
}

// resources/read of a text artifact answers text, not base64: whole
// under the limit, else its first lines and _meta saying how to read on.
func TestArtifactResourceReadText(t *testing.T) {
	t.Parallel()
	_, c, id, stored := snapshotGateway(t, config.ArtifactToolsOptions{})
	uri := "mcpx://artifacts/" + id
	res := c.result("resources/read", fmt.Sprintf(`{"uri":%q}`, uri)).Get("contents.0")
	if res.Get("blob").Exists() || res.Get("text").String() != stored || !strings.HasPrefix(res.Get("mimeType").String(), "text/") {
		t.Fatalf("resources/read: mime %s, blob %v, text %d bytes of %d", res.Get("mimeType"), res.Get("blob").Exists(), len(res.Get("text").String()), len(stored))
	}

	_, c, id, stored = snapshotGateway(t, config.ArtifactToolsOptions{MaxResourceTextBytes: 100_000, QueryName: "peek", SearchName: "find"})
	res = c.result("resources/read", fmt.Sprintf(`{"uri":"mcpx://artifacts/%s"}`, id)).Get("contents.0")
	text := res.Get("text").String()
	cut := res.Get(`_meta.mcpx/cut`).String()
	if len(text) > 100_000 || len(text) < 90_000 || !strings.HasSuffix(text, "\n") || !strings.HasPrefix(stored, text) ||
		!strings.Contains(cut, fmt.Sprintf(`peek tool ("id": %q, "bytes": "%d-%d"`, id, len(text), len(stored))) {
		t.Fatalf("resources/read over the limit: %d bytes, cut %q", len(text), cut)
	}
	if tools := c.result("tools/list", "{}").Get("tools.#.name").String(); !strings.Contains(tools, `"peek"`) || !strings.Contains(tools, `"find"`) || strings.Contains(tools, "artifacts_") {
		t.Fatalf("configured names: %s", tools)
	}
}
