package compat_test

// The artifact tools (artifacts_query, artifacts_search) through real
// clients: the TypeScript SDK client and the go-sdk client, over stdio
// through `mcpx wrap` and over streamable HTTP through `mcpx serve
// --listen`, in both protocol revisions, in front of a stdio server (this
// test binary, re-executed) that returns a 200 KB log and a JSON document.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// queryServerEnv makes TestMain run the query fixture server instead of
// the tests.
const queryServerEnv = "MCPX_COMPAT_QUERY_SERVER"

// queryServerName is the fixture server's name behind mcpx (its script's
// base name): its artifacts' ids start with it.
const queryServerName = "logsrv"

// The fixture log: queryLogLines lines, one of them (queryErrorLine) the
// only line that says "declined".
const (
	queryLogLines  = 2400
	queryErrorLine = 1234
)

// queryLogLine is line n (1-based) of the fixture log, without its newline.
func queryLogLine(n int) string {
	if n == queryErrorLine {
		return fmt.Sprintf("2026-11-23T18:%02d:%02d.000Z ERROR payment declined order=ord-77731 reason=insufficient_funds", n/60%60, n%60)
	}
	return fmt.Sprintf("2026-11-23T18:%02d:%02d.000Z INFO request id=%d method=GET path=/api/v1/items/%d status=200", n/60%60, n%60, n, n*7919%100000)
}

// queryLog is the fixture log: about 200 KB.
func queryLog() string {
	var b strings.Builder
	for n := 1; n <= queryLogLines; n++ {
		b.WriteString(queryLogLine(n))
		b.WriteByte('\n')
	}
	return b.String()
}

// queryDoc is the fixture JSON document: 500 items, about 50 KB.
func queryDoc() string {
	items := make([]map[string]any, 500)
	for i := range items {
		items[i] = map[string]any{"id": i, "name": fmt.Sprintf("item-%d", i), "price": float64(i%97) + 0.5, "tags": []string{"t" + fmt.Sprint(i%3), "stock"}}
	}
	b, _ := json.Marshal(map[string]any{"service": "billing", "owner": map[string]any{"name": "Ada"}, "items": items})
	return string(b)
}

// runQueryServer is the fixture server: a go-sdk stdio server with the
// tools get_log (a text block) and get_json (an embedded JSON resource).
// The document is a resource rather than a text block: mcpx reads JSON in
// a text block as a payload and stores only its long strings, of which
// this document has none.
func runQueryServer() int {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "query-fixture", Version: "1.0.0"}, nil)
	answer := func(c gosdk.Content) gosdk.ToolHandler {
		return func(context.Context, *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
			return &gosdk.CallToolResult{Content: []gosdk.Content{c}}, nil
		}
	}
	noArgs := map[string]any{"type": "object"}
	s.AddTool(&gosdk.Tool{Name: "get_log", Description: "the service's log", InputSchema: noArgs}, answer(&gosdk.TextContent{Text: queryLog()}))
	doc := &gosdk.EmbeddedResource{Resource: &gosdk.ResourceContents{URI: "file:///srv/catalogue.json", MIMEType: "application/json", Text: queryDoc()}}
	s.AddTool(&gosdk.Tool{Name: "get_json", Description: "the service's catalogue", InputSchema: noArgs}, answer(doc))
	if err := s.Run(context.Background(), &gosdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// queryServerScript returns a script named queryServerName that runs the
// fixture server.
func queryServerScript(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), queryServerName)
	body := fmt.Sprintf("#!/bin/sh\nexport %s=1\nexec %s\n", queryServerEnv, shellQuote(exe))
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// queryTimeout and queryMemory are the artifact tools' caps in these
// tests (serve.artifact_tools): lower than the defaults (5 s, 256 MiB) to
// keep the run short and the machine's memory free.
const (
	queryTimeout = 2 * time.Second
	queryMemory  = 64 << 20
)

var queryToolsConfig = map[string]any{"timeout": queryTimeout.String(), "max_memory": queryMemory}

// toolAnswer is a tools/call result as the model reads it.
type toolAnswer struct {
	text    string
	isError bool
	sc      json.RawMessage
}

func answerOf(raw json.RawMessage) (toolAnswer, error) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return toolAnswer{}, fmt.Errorf("result %.200s: %w", raw, err)
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type != "text" {
			return toolAnswer{}, fmt.Errorf("a %s block in %.300s: want text only", c.Type, raw)
		}
		parts = append(parts, c.Text)
	}
	return toolAnswer{text: strings.Join(parts, "\n"), isError: r.IsError, sc: r.StructuredContent}, nil
}

// queryCase is one artifacts_query or artifacts_search call and what its
// answer must hold.
type queryCase struct {
	name string
	tool string
	args func(logID, jsonID string) map[string]any
	// isError: the answer is a tool error (isError: true).
	isError bool
	// want are substrings of the answer's text; not are substrings it
	// must not hold.
	want, not func(logID, jsonID string) []string
	// within bounds the call's wall time (a runaway jq program).
	within time.Duration
	// slow cases run at one revision per client and transport: what
	// stops them does not depend on the revision.
	slow bool
	// hits: a search whose first hit (structuredContent) must be the
	// log's error line.
	hits bool
}

func strs(s ...string) func(string, string) []string {
	return func(string, string) []string { return s }
}

// queryCases are every query mode that applies to text and JSON, search,
// and bad input.
var queryCases = []queryCase{
	{
		name: "lines", tool: "artifacts_query",
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "lines": "1233-1235"} },
		want: strs(queryLogLine(1233)+"\n", queryLogLine(queryErrorLine)+"\n", queryLogLine(1235)),
		not:  strs(queryLogLine(1232)+"\n", queryLogLine(1236)),
	},
	{
		name: "lines by URI", tool: "artifacts_query",
		args: func(l, _ string) map[string]any { return map[string]any{"id": "mcpx://artifacts/" + l, "lines": "1"} },
		want: strs(queryLogLine(1)),
		not:  strs(queryLogLine(2)),
	},
	{
		name: "lines past the budget say how to read on", tool: "artifacts_query",
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "lines": "1-2400"} },
		want: strs(queryLogLine(1)+"\n", "of 2,400 shown; ask for lines "),
		not:  strs(queryLogLine(2400)),
	},
	{
		name: "bytes", tool: "artifacts_query",
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "bytes": "0-24"} },
		want: strs(queryLogLine(1)[:24]),
		not:  strs(queryLogLine(1)[:25]),
	},
	{
		// "A" alone reads from byte A on, as the tool's schema says.
		name: "bytes from an offset to the end", tool: "artifacts_query",
		args: func(l, _ string) map[string]any {
			return map[string]any{"id": l, "bytes": fmt.Sprint(len(queryLog()) - len(queryLogLine(queryLogLines)) - 1)}
		},
		want: strs(queryLogLine(queryLogLines)),
		not:  strs(queryLogLine(queryLogLines - 1)),
	},
	{
		name: "grep with context", tool: "artifacts_query",
		args: func(l, _ string) map[string]any {
			return map[string]any{"id": l, "grep": "payment declined", "context": 1}
		},
		want: strs(fmt.Sprintf("%d-%s\n", queryErrorLine-1, queryLogLine(queryErrorLine-1)), fmt.Sprintf("%d:%s\n", queryErrorLine, queryLogLine(queryErrorLine)), fmt.Sprintf("%d-%s", queryErrorLine+1, queryLogLine(queryErrorLine+1))),
		not:  strs(queryLogLine(queryErrorLine - 2)),
	},
	{
		name: "grep without a match", tool: "artifacts_query",
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "grep": "status=500"} },
		want: strs(`no line matches "status=500"`),
	},
	{
		name: "json path", tool: "artifacts_query",
		args: func(_, j string) map[string]any { return map[string]any{"id": j, "json": "items.42.name"} },
		want: strs("item-42"),
		not:  strs("item-43"),
	},
	{
		name: "jq", tool: "artifacts_query",
		args: func(_, j string) map[string]any {
			return map[string]any{"id": j, "jq": "[.items[] | select(.id % 100 == 7) | .name], .owner.name"}
		},
		want: strs(`["item-7","item-107","item-207","item-307","item-407"]`, `"Ada"`),
		not:  strs("item-8"),
	},
	{
		name: "search", tool: "artifacts_search", hits: true,
		args: func(string, string) map[string]any { return map[string]any{"query": "payment declined"} },
		want: func(l, _ string) []string {
			return []string{l + " line " + fmt.Sprint(queryErrorLine) + " (stored ", "payment declined", "ord-77731", fmt.Sprintf(`"id": %q`, l)}
		},
	},
	{
		name: "search without a hit", tool: "artifacts_search",
		args: func(string, string) map[string]any { return map[string]any{"query": "refunded"} },
		want: strs("No line of your artifacts holds refunded"),
	},
	{
		name: "unknown id", tool: "artifacts_query", isError: true,
		args: func(l, _ string) map[string]any { return map[string]any{"id": otherID(l), "lines": "1"} },
		want: func(l, _ string) []string { return []string{"artifact " + otherID(l) + " not found"} },
	},
	{
		name: "lines past the end", tool: "artifacts_query", isError: true,
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "lines": "999999-1000000"} },
		want: strs("out of range", "line 999999", "has 2,400 lines"),
	},
	{
		name: "bytes past the end", tool: "artifacts_query", isError: true,
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "bytes": "9999999-10000000"} },
		want: strs("out of range", "byte 9999999", fmt.Sprintf("has %s bytes", commaInt(len(queryLog())))),
	},
	{
		name: "json path that matches nothing", tool: "artifacts_query", isError: true,
		args: func(_, j string) map[string]any { return map[string]any{"id": j, "json": "items.9999.name"} },
		want: strs("out of range", "matches nothing"),
	},
	{
		name: "invalid regex", tool: "artifacts_query", isError: true,
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "grep": "(unclosed"} },
		want: strs("invalid regular expression", "missing closing )"),
	},
	{
		name: "invalid jq program", tool: "artifacts_query", isError: true,
		args: func(_, j string) map[string]any { return map[string]any{"id": j, "jq": ".items["} },
		want: strs("invalid jq program"),
	},
	{
		name: "two modes", tool: "artifacts_query", isError: true,
		args: func(l, _ string) map[string]any { return map[string]any{"id": l, "lines": "1", "grep": "x"} },
		want: strs("exactly one of"),
	},
	{
		name: "jq program that loops", tool: "artifacts_query", isError: true, slow: true,
		args:   func(_, j string) map[string]any { return map[string]any{"id": j, "jq": "def f: f; f"} },
		want:   strs("over budget"),
		within: 3*queryTimeout + 5*time.Second,
	},
	{
		name: "jq program that allocates without bound", tool: "artifacts_query", isError: true, slow: true,
		args:   func(_, j string) map[string]any { return map[string]any{"id": j, "jq": `[range(1e9) | "x" * 4096]`} },
		want:   strs("over budget", "it needed more than the 67.1 MB of memory a query may use"),
		within: 3*queryTimeout + 5*time.Second,
	},
}

// otherID is a well-formed id that names no artifact: id with its last
// character changed.
func otherID(id string) string {
	last := id[len(id)-1]
	repl := byte('a')
	if last == 'a' {
		repl = 'b'
	}
	return id[:len(id)-1] + string(repl)
}

// commaInt writes n with thousands separators, as the answers do.
func commaInt(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// queryClients are the clients the artifact tools are checked with.
var queryClients = []client{
	{name: "TypeScript SDK", connect: connectTS},
	{name: "go-sdk", connect: connectGoSDK},
	{name: "TypeScript SDK, HTTP", http: true, connect: connectTS},
	{name: "go-sdk, HTTP", http: true, connect: connectGoSDK},
}

// TestArtifactToolsThroughClients runs every query mode, search and bad
// input through each client, transport and revision.
func TestArtifactToolsThroughClients(t *testing.T) {
	needPeers(t)
	script := queryServerScript(t)
	cfg := map[string]any{"serve": map[string]any{"artifact_tools": queryToolsConfig}}
	cfgPath := filepath.Join(t.TempDir(), "mcpx.json")
	b, _ := json.Marshal(cfg)
	write(t, cfgPath, b)
	for _, cl := range queryClients {
		for i, rev := range revisions {
			t.Run(cl.name+"/"+rev, func(t *testing.T) {
				storeDir := t.TempDir()
				tg := target{launch: launch{Command: mcpxBin, Args: []string{"wrap", "--config", cfgPath, "--store", storeDir, "--", script}}}
				if cl.http {
					url, stop, err := serveHTTPConfig(t, map[string]any{
						"mcpServers": map[string]any{queryServerName: map[string]any{"command": script}},
						"serve":      map[string]any{"artifact_tools": queryToolsConfig},
					}, storeDir)
					if err != nil {
						t.Fatal(err)
					}
					defer stop()
					tg.url = url
				}
				s, err := cl.connect(t, tg, rev)
				if err != nil {
					t.Fatalf("connecting through mcpx: %v", err)
				}
				defer s.Close()
				checkQueryTools(t, s, i == 0)
			})
		}
	}
}

// checkQueryTools lists the tools, stores the log and the document, and
// runs queryCases (the slow ones when slow is set).
func checkQueryTools(t *testing.T, s session, slow bool) {
	t.Helper()
	tools, err := s.Tools()
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, name := range []string{"get_log", "get_json", "artifacts_query", "artifacts_search"} {
		if _, ok := tools[name]; !ok {
			t.Fatalf("tools/list lacks %s: %d tools", name, len(tools))
		}
	}
	logID, jsonID := storedID(t, s, "get_log"), storedID(t, s, "get_json")
	for _, c := range queryCases {
		if c.slow && !slow {
			continue
		}
		args := c.args(logID, jsonID)
		start := time.Now()
		raw, err := s.Call(c.tool, args)
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s: %s %v: the client reported %v", c.name, c.tool, args, err)
			continue
		}
		ans, err := answerOf(raw)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if ans.isError != c.isError {
			t.Errorf("%s: isError %v, want %v: %.500s", c.name, ans.isError, c.isError, ans.text)
		}
		for _, w := range c.want(logID, jsonID) {
			if !strings.Contains(ans.text, w) {
				t.Errorf("%s: the answer lacks %q: %.800s", c.name, w, ans.text)
			}
		}
		if c.not != nil {
			for _, w := range c.not(logID, jsonID) {
				if strings.Contains(ans.text, w) {
					t.Errorf("%s: the answer holds %q: %.800s", c.name, w, ans.text)
				}
			}
		}
		if n := len(ans.text); n > maxInline {
			t.Errorf("%s: the answer holds %d characters, over the %d budget", c.name, n, maxInline)
		}
		if c.within > 0 && took > c.within {
			t.Errorf("%s: answered after %v, want within %v", c.name, took, c.within)
		}
		if c.hits {
			checkSearchHits(t, ans.sc, logID)
		}
		if testing.Verbose() {
			t.Logf("%s (%v): %.200q", c.name, took.Round(time.Millisecond), ans.text)
		}
	}
}

// storedID calls tool and returns the one artifact its result references.
func storedID(t *testing.T, s session, tool string) string {
	t.Helper()
	raw, err := s.Call(tool, map[string]any{})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	ids := artifactIDs(raw)
	if len(ids) != 1 {
		t.Fatalf("%s: want one artifact referenced, got %q in %.500s", tool, ids, raw)
	}
	if !strings.HasPrefix(ids[0], queryServerName) {
		t.Errorf("%s: artifact id %q does not start with the server's name %q", tool, ids[0], queryServerName)
	}
	return ids[0]
}

// checkSearchHits checks search's structuredContent: the first hit is the
// log's error line.
func checkSearchHits(t *testing.T, sc json.RawMessage, logID string) {
	t.Helper()
	var v struct {
		Hits []struct {
			ID, URI, Place, Snippet string
		} `json:"hits"`
	}
	if err := json.Unmarshal(sc, &v); err != nil || len(v.Hits) == 0 {
		t.Errorf("search: structuredContent %.300s holds no hits (%v)", sc, err)
		return
	}
	h := v.Hits[0]
	if h.ID != logID || h.URI != "mcpx://artifacts/"+logID || h.Place != fmt.Sprintf("line %d", queryErrorLine) || !strings.Contains(h.Snippet, "declined") {
		t.Errorf("search: first hit %+v, want %s line %d with the error line", h, logID, queryErrorLine)
	}
}

// TestArtifactToolsPrincipals: over `mcpx serve --listen` with bearer
// tokens, an artifact one principal stored is "not found" to another,
// through artifacts_query (by id and by URI) and absent from its
// artifacts_search, with each client.
func TestArtifactToolsPrincipals(t *testing.T) {
	needPeers(t)
	script := queryServerScript(t)
	url, stop, err := serveHTTPConfig(t, map[string]any{
		"mcpServers": map[string]any{queryServerName: map[string]any{"command": script}},
		"serve": map[string]any{
			"artifact_tools": queryToolsConfig,
			"tokens":         map[string]string{"tok-alice": "alice", "tok-bob": "bob"},
		},
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	call := func(t *testing.T, s session, tool string, args map[string]any) toolAnswer {
		t.Helper()
		raw, err := s.Call(tool, args)
		if err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
		ans, err := answerOf(raw)
		if err != nil {
			t.Fatal(err)
		}
		return ans
	}
	for _, cl := range queryClients {
		if !cl.http {
			continue
		}
		for _, rev := range revisions {
			t.Run(cl.name+"/"+rev, func(t *testing.T) {
				alice, err := cl.connect(t, target{url: url, headers: bearer("tok-alice")}, rev)
				if err != nil {
					t.Fatalf("connecting as alice: %v", err)
				}
				defer alice.Close()
				bob, err := cl.connect(t, target{url: url, headers: bearer("tok-bob")}, rev)
				if err != nil {
					t.Fatalf("connecting as bob: %v", err)
				}
				defer bob.Close()
				id := storedID(t, alice, "get_log")
				line := fmt.Sprint(queryErrorLine)
				if a := call(t, alice, "artifacts_query", map[string]any{"id": id, "lines": line}); a.isError || !strings.Contains(a.text, queryLogLine(queryErrorLine)) {
					t.Errorf("alice's query of her artifact: isError %v: %.300s", a.isError, a.text)
				}
				if a := call(t, alice, "artifacts_search", map[string]any{"query": "ord-77731"}); !strings.Contains(a.text, id+" line "+line) {
					t.Errorf("alice's search does not find her artifact: %.300s", a.text)
				}
				for _, ref := range []string{id, "mcpx://artifacts/" + id} {
					a := call(t, bob, "artifacts_query", map[string]any{"id": ref, "grep": "declined"})
					if !a.isError || !strings.Contains(a.text, "artifact "+id+" not found") || strings.Contains(a.text, "declined order") {
						t.Errorf("bob's query of alice's artifact (%s): isError %v: %.300s", ref, a.isError, a.text)
					}
				}
				if a := call(t, bob, "artifacts_search", map[string]any{"query": "ord-77731"}); a.isError || strings.Contains(a.text, id) || !strings.Contains(a.text, "No line of your artifacts holds") {
					t.Errorf("bob's search: isError %v: %.300s", a.isError, a.text)
				}
			})
		}
	}
}
