package compat_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

var update = flag.Bool("update", false, "rewrite docs/compatibility.md from this run's matrix")

// revisions are the downstream protocol revisions the matrix runs; a
// column per revision in docs/compatibility.md. 2026-07-28 joins when the
// gateway speaks it downstream.
var revisions = []string{"2025-11-25", "2026-07-28"}

// serverRevision is what every server of the matrix speaks.
const serverRevision = "2025-11-25"

// maxInline is the size net's default (sizenet.max_inline_size): no string
// the model sees through mcpx is longer.
const maxInline = 10000

var (
	npmDir      = mustAbs("../../tools/npm")
	modDir      = filepath.Join(npmDir, "node_modules", "@modelcontextprotocol")
	inspectorJS = filepath.Join(modDir, "inspector", "clients", "launcher", "build", "index.js")
	docPath     = mustAbs("../../docs/compatibility.md")
	nodeBin     string
	mcpxBin     string
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// TestMain builds the mcpx binary once, as a user runs it. Started with
// queryServerEnv set, the test binary is the artifact tools' fixture
// server instead (query_tools_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(queryServerEnv) != "" {
		os.Exit(runQueryServer())
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "mcpx-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcpxBin = filepath.Join(dir, "mcpx")
	if out, err := exec.Command("go", "build", "-o", mcpxBin, "github.com/mcpx-dev/mcpx/cmd/mcpx").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build cmd/mcpx: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needPeers fails under CI and skips elsewhere when node or the pinned npm
// packages are missing: in CI a test never passes by skipping its subject.
func needPeers(t *testing.T) {
	t.Helper()
	var missing string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = "node is not on PATH"
	}
	for _, p := range []string{inspectorJS, filepath.Join(npmDir, "node_modules", ".package-lock.json")} {
		if _, err := os.Stat(p); err != nil && missing == "" {
			missing = p + " is missing (run npm ci in tools/npm)"
		}
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	nodeBin = node
}

// call is one tool call of a server's row.
type call struct {
	tool string
	args func(fx *fixtures) map[string]any
	// offloads: the direct result holds a blob or a long text that mcpx
	// must store.
	offloads bool
	// names are the file names the stored artifacts must carry (from the
	// call's arguments where the result names none).
	names []string
}

// server is a row of the matrix.
type server struct {
	pkg, version string
	// script returns the server's command line (a shell script named after
	// the package, so that mcpx wrap names the server after it); tag keeps
	// the direct and the wrapped runs' state apart.
	script func(t *testing.T, fx *fixtures, tag string) string
	calls  []call
	// resources are read through resources/read and must come back
	// unchanged (MCP Apps' ui:// resources among them).
	resources []string
	// note explains the row in the table.
	note string
}

func nodeScript(t *testing.T, name string, env map[string]string, args ...string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	b.WriteString("exec " + shellQuote(nodeBin))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var servers = []server{
	{
		pkg: "server-filesystem", version: "2026.8.31",
		script: func(t *testing.T, fx *fixtures, _ string) string {
			return nodeScript(t, "server-filesystem", nil, filepath.Join(modDir, "server-filesystem", "dist", "index.js"), fx.dir)
		},
		calls: []call{
			{tool: "read_media_file", args: func(fx *fixtures) map[string]any { return map[string]any{"path": fx.png} }, offloads: true, names: []string{"photo.png"}},
			{tool: "read_text_file", args: func(fx *fixtures) map[string]any { return map[string]any{"path": fx.log} }, offloads: true, names: []string{"server.log"}},
			{tool: "list_directory", args: func(fx *fixtures) map[string]any { return map[string]any{"path": fx.dir} }},
		},
		note: "read_media_file: 1.4 MB PNG; read_text_file: 2 MB log",
	},
	{
		pkg: "server-memory", version: "2026.8.31",
		script: func(t *testing.T, fx *fixtures, tag string) string {
			return nodeScript(t, "server-memory", map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), tag+"-memory.jsonl")}, filepath.Join(modDir, "server-memory", "dist", "index.js"))
		},
		calls: []call{
			{tool: "create_entities", args: func(*fixtures) map[string]any {
				return map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []any{"wrote the first program"}}}}
			}},
			{tool: "read_graph", args: func(*fixtures) map[string]any { return map[string]any{} }},
		},
	},
	{
		pkg: "server-pdf", version: "2.0.4",
		script: func(t *testing.T, fx *fixtures, _ string) string {
			// The PDF is allowed by its path: a client with roots (mcpx
			// declares them upstream when it does) answers roots/list with
			// none, which clears the server's allowed directories but not
			// its allowed files.
			return nodeScript(t, "server-pdf", nil, filepath.Join(modDir, "server-pdf", "dist", "index.js"), "--stdio", fx.pdf)
		},
		calls: []call{
			{tool: "read_pdf_bytes", args: func(fx *fixtures) map[string]any { return map[string]any{"url": fx.pdf} }, offloads: true, names: []string{"report.pdf"}},
			{tool: "list_pdfs", args: func(*fixtures) map[string]any { return map[string]any{} }},
		},
		resources: []string{"ui://pdf-viewer/mcp-app.html"},
		note:      "read_pdf_bytes: 300 KB PDF, allowed by its path; ui:// MCP App resource read unchanged",
	},
	{
		pkg: "server-everything", version: "2026.8.31",
		script: func(t *testing.T, fx *fixtures, _ string) string {
			return nodeScript(t, "server-everything", nil, filepath.Join(modDir, "server-everything", "dist", "index.js"), "stdio")
		},
		calls: []call{
			{tool: "get-tiny-image", args: func(*fixtures) map[string]any { return map[string]any{} }, offloads: true},
			{tool: "get-structured-content", args: func(*fixtures) map[string]any { return map[string]any{"location": "New York"} }},
			{tool: "echo", args: func(*fixtures) map[string]any { return map[string]any{"message": "hello"} }},
		},
	},
	{
		pkg: "server-sequential-thinking", version: "2026.8.31",
		script: func(t *testing.T, fx *fixtures, _ string) string {
			return nodeScript(t, "server-sequential-thinking", map[string]string{"DISABLE_THOUGHT_LOGGING": "true"}, filepath.Join(modDir, "server-sequential-thinking", "dist", "index.js"))
		},
		calls: []call{
			{tool: "sequentialthinking", args: func(*fixtures) map[string]any {
				return map[string]any{"thought": "One step is enough.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}
			}},
		},
	},
}

// outcome is a cell of the matrix.
type outcome struct {
	ok     bool
	na     bool // the client does not run at this revision
	detail string
}

var (
	cellsMu sync.Mutex
	cells   = map[[3]string]outcome{} // server, client, revision
)

// TestMatrix runs every server behind `mcpx wrap` with every client, and
// compares each call with the same client's direct call.
func TestMatrix(t *testing.T) {
	needPeers(t)
	fx := makeFixtures(t)
	t.Run("servers", func(t *testing.T) {
		for _, srv := range servers {
			t.Run(srv.pkg, func(t *testing.T) {
				t.Parallel()
				for _, cl := range clients {
					for _, rev := range revisions {
						t.Run(cl.name+"/"+rev, func(t *testing.T) {
							var o outcome
							if why, ok := cl.skip[rev]; ok {
								o = outcome{na: true, detail: why}
							} else if err := runCell(t, fx, srv, cl, rev); errors.Is(err, errRevisionNotSpoken) {
								o = outcome{na: true, detail: "the client settles on another revision"}
								t.Log(err)
							} else if err != nil {
								o.detail = err.Error()
								t.Error(err)
							} else {
								o.ok = true
							}
							cellsMu.Lock()
							cells[[3]string{srv.pkg, cl.name, rev}] = o
							cellsMu.Unlock()
						})
					}
				}
			})
		}
	})
	checkDoc(t)
}

// runCell runs one server with one client and one revision, directly and
// through mcpx, and returns the first mismatch.
func runCell(t *testing.T, fx *fixtures, srv server, cl client, rev string) (cellErr error) {
	// The servers speak 2025-11-25: the direct call always does, and mcpx
	// bridges the column's revision to it.
	direct, err := cl.connect(t, target{launch: launch{Command: srv.script(t, fx, "direct")}}, serverRevision)
	if err != nil {
		return fmt.Errorf("connecting directly: %w", err)
	}
	type got struct {
		res json.RawMessage
		err error
	}
	wantTools, err := direct.Tools()
	if err != nil {
		direct.Close()
		return fmt.Errorf("tools/list directly: %w", err)
	}
	want := map[string]got{}
	for _, c := range srv.calls {
		r, err := direct.Call(c.tool, c.args(fx))
		want[c.tool] = got{r, err}
	}
	wantRes := map[string]json.RawMessage{}
	for _, uri := range srv.resources {
		r, err := direct.Read(uri)
		if err != nil {
			direct.Close()
			return fmt.Errorf("resources/read %s directly: %w", uri, err)
		}
		wantRes[uri] = r
	}
	direct.Close()

	storeDir := t.TempDir()
	logPath := storeDir + ".log"
	var storeLog syncbuf.Buffer // what the store said when this test opened it
	defer func() {
		// mcpx's own account of a failed cell: the clients drop the
		// stderr of the process they launch.
		if b, _ := os.ReadFile(logPath); cellErr != nil && len(b) > 0 {
			t.Logf("mcpx's log:\n%s", b)
		}
		if cellErr != nil && storeLog.String() != "" {
			t.Logf("the store's log when the test opened it:\n%s", storeLog.String())
		}
	}()
	tg := target{launch: wrapLaunch(srv.script(t, fx, "mcpx"), storeDir, logPath)}
	stop := func() error { return nil }
	if cl.http {
		if tg.url, stop, err = serveHTTP(t, srv.pkg, srv.script(t, fx, "mcpx"), storeDir, cl.caps); err != nil {
			return err
		}
	}
	via, err := cl.connect(t, tg, rev)
	if err != nil {
		_ = stop()
		return fmt.Errorf("connecting through mcpx: %w", err)
	}
	tools, err := via.Tools()
	if err != nil {
		via.Close()
		_ = stop()
		return fmt.Errorf("tools/list through mcpx: %w", err)
	}
	if err := sameTools(wantTools, tools, rev == serverRevision); err != nil {
		via.Close()
		_ = stop()
		return fmt.Errorf("tools/list through mcpx: %w", err)
	}
	gotRes := map[string]json.RawMessage{}
	var failure error
	for _, c := range srv.calls {
		w := want[c.tool]
		if w.err != nil {
			failure = fmt.Errorf("%s directly: %w", c.tool, w.err)
			break
		}
		r, err := via.Call(c.tool, c.args(fx))
		if err != nil {
			failure = fmt.Errorf("%s through mcpx: the client rejected the result: %w", c.tool, err)
			break
		}
		gotRes[c.tool] = r
	}
	for _, uri := range srv.resources {
		if failure != nil {
			break
		}
		r, err := via.Read(uri)
		if err != nil {
			failure = fmt.Errorf("resources/read %s through mcpx: %w", uri, err)
			break
		}
		// The contents pass untouched; 2026-07-28 adds resultType and
		// cache hints around them.
		if !reflect.DeepEqual(contentsOf(r), contentsOf(wantRes[uri])) || contentsOf(r) == nil {
			failure = fmt.Errorf("resources/read %s through mcpx: contents differ from the direct read: %.300s", uri, r)
		}
	}
	via.Close()
	if err := stop(); err != nil && failure == nil {
		failure = err
	}
	if failure != nil {
		return failure
	}

	// The store is the wrapped process's: read it once that has exited. A
	// client's close may return before the process it launched is gone
	// (the TypeScript SDK's sends SIGTERM after 2 s and does not wait).
	if err := waitReleased(storeDir, 30*time.Second); err != nil {
		return err
	}
	st, err := fsstore.Open(context.Background(), storeDir, fsstore.Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &storeLog, Level: hclog.Info})})
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	defer st.Close(context.Background())
	read := func(id string) ([]byte, error) {
		rc, _, err := st.Get(context.Background(), id, nil)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	for _, c := range srv.calls {
		r := gotRes[c.tool]
		if err := modelVisible(r); err != nil {
			return fmt.Errorf("%s through mcpx: %w", c.tool, err)
		}
		ids := artifactIDs(r)
		if c.offloads && len(ids) == 0 {
			return fmt.Errorf("%s through mcpx: nothing was offloaded: %.300s", c.tool, r)
		}
		var names []string
		for _, id := range ids {
			ref, err := st.Stat(context.Background(), id)
			if err != nil {
				return fmt.Errorf("%s through mcpx: artifact %s: %w", c.tool, id, err)
			}
			names = append(names, ref.Filename)
		}
		// The same blob in content and structuredContent is one artifact.
		if len(c.names) > 0 && len(ids) != len(c.names) {
			return fmt.Errorf("%s through mcpx: %d artifacts %q, want %d", c.tool, len(ids), names, len(c.names))
		}
		for _, n := range c.names {
			if !slices.Contains(names, n) {
				return fmt.Errorf("%s through mcpx: artifacts are named %q, want %q among them", c.tool, names, n)
			}
		}
		cmp := comparer{read: read}
		if err := cmp.equal("result", decode(want[c.tool].res), decode(r)); err != nil {
			return fmt.Errorf("%s through mcpx: %w", c.tool, err)
		}
		if schema := outputSchemaOf(tools[c.tool]); schema != nil {
			if err := validate(schema, r); err != nil {
				return fmt.Errorf("%s through mcpx: structuredContent fails the outputSchema: %w", c.tool, err)
			}
		}
	}
	return nil
}

// sameTools checks that tools/list through mcpx lists the tools the
// direct one does (besides the resource tools mcpx adds), and with defs
// set the same definitions: a server that lists tools by its client's
// capabilities (server-everything) must see, through mcpx, the
// capabilities the client has. Definitions are compared at the server's
// own revision only: a client may show a tool differently at another
// (the TypeScript SDK keeps inputSchema's $schema at 2026-07-28 and
// drops it at 2025-11-25, from the same bytes).
func sameTools(direct, via map[string]json.RawMessage, defs bool) error {
	var extra, missing []string
	for name := range via {
		if _, ok := direct[name]; !ok && !generatedTool(name) {
			extra = append(extra, name)
		}
	}
	for name := range direct {
		if _, ok := via[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	switch {
	case len(extra) > 0:
		return fmt.Errorf("lists %q, which the direct tools/list does not", extra)
	case len(missing) > 0:
		return fmt.Errorf("lacks %q, which the direct tools/list has", missing)
	}
	if !defs {
		return nil
	}
	names := make([]string, 0, len(direct))
	for name := range direct {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !jsonEqual(direct[name], via[name]) {
			return fmt.Errorf("tool %q differs: %.200s directly, %.200s through mcpx", name, direct[name], via[name])
		}
	}
	return nil
}

// generatedTool reports whether name is one of the tools mcpx adds: for a
// server with resources ({server}_resources_list and the like), and the
// artifact tools (artifacts_query, artifacts_search).
func generatedTool(name string) bool {
	if name == "artifacts_query" || name == "artifacts_search" {
		return true
	}
	for _, suffix := range []string{"_resources_list", "_resources_read", "_resources_templates_list"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// wrapLaunch puts `mcpx wrap --store DIR --` in front of a server's
// script.
// wrapLaunch is the command line of mcpx wrap in front of script, its
// stderr appended to logPath.
func wrapLaunch(script, storeDir, logPath string) launch {
	return launch{Command: "/bin/sh", Args: []string{"-c", `exec "$0" wrap --store "$1" -- "$2" 2>>"$3"`, mcpxBin, storeDir, script, logPath}}
}

// waitReleased waits until no process holds the store in dir open (each
// holds its open.lock shared while it does), for at most limit.
func waitReleased(dir string, limit time.Duration) error {
	f, err := os.Open(filepath.Join(dir, "open.lock"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no process opened it
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for deadline := time.Now().Add(limit); ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("open.lock: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mcpx still holds its store %v after its client closed", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func decode(raw json.RawMessage) any {
	var v any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}

func contentsOf(raw json.RawMessage) any {
	m, _ := decode(raw).(map[string]any)
	return m["contents"]
}

func jsonEqual(a, b json.RawMessage) bool { return reflect.DeepEqual(decode(a), decode(b)) }

var artifactURI = regexp.MustCompile(`mcpx://artifacts/([A-Za-z0-9_.-]*[A-Za-z0-9_-])`)

func artifactIDs(raw []byte) []string {
	seen := map[string]bool{}
	var ids []string
	for _, m := range artifactURI.FindAllSubmatch(raw, -1) {
		if id := string(m[1]); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

var base64Run = regexp.MustCompile(`^[A-Za-z0-9+/]{256,}={0,2}$`)

// modelVisible checks what the model reads: no base64 blob and no string
// over the size net's limit anywhere in the result.
func modelVisible(raw json.RawMessage) error {
	var walk func(path string, v any) error
	walk = func(path string, v any) error {
		switch x := v.(type) {
		case string:
			if len(x) > maxInline {
				return fmt.Errorf("%s: a string of %d chars reaches the model (limit %d)", path, len(x), maxInline)
			}
			if base64Run.MatchString(x) {
				return fmt.Errorf("%s: base64 reaches the model: %.60s…", path, x)
			}
		case map[string]any:
			for k, e := range x {
				if err := walk(path+"."+k, e); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range x {
				if err := walk(fmt.Sprintf("%s.%d", path, i), e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("result", decode(raw))
}

// comparer checks that a result through mcpx equals the direct one except
// where mcpx put an artifact reference, and that each such artifact holds
// exactly the bytes it replaced.
type comparer struct {
	read func(id string) ([]byte, error)
}

func (c comparer) equal(path string, d, m any) error {
	if reflect.DeepEqual(d, m) {
		return nil
	}
	mj, _ := json.Marshal(m)
	ids := artifactIDs(mj)
	switch dv := d.(type) {
	case map[string]any:
		mv, ok := m.(map[string]any)
		// A value mcpx replaced: {artifact, summary}, or a content block
		// that became a text block with the reference.
		if ok && len(ids) > 0 && (mv["artifact"] != nil || (dv["type"] != nil && dv["type"] != mv["type"])) {
			return c.stored(path, d, ids)
		}
		if !ok {
			break
		}
		for k, e := range dv {
			if err := c.equal(path+"."+k, e, mv[k]); err != nil {
				return err
			}
		}
		for k := range mv {
			// 2026-07-28 results say what they are (resultType); a
			// 2025-11-25 server's do not.
			if _, ok := dv[k]; !ok && k != "_meta" && !(path == "result" && k == "resultType") {
				return fmt.Errorf("%s: mcpx added member %q", path, k)
			}
		}
		return nil
	case []any:
		mv, ok := m.([]any)
		if !ok {
			break
		}
		j := 0
		for i, e := range dv {
			if j >= len(mv) {
				return fmt.Errorf("%s: %d items directly, fewer through mcpx", path, len(dv))
			}
			if err := c.equal(fmt.Sprintf("%s.%d", path, i), e, mv[j]); err != nil {
				return err
			}
			// A block mcpx stored is followed by a resource_link to it.
			if j+1 < len(mv) && isArtifactLink(mv[j+1]) && (i+1 >= len(dv) || !reflect.DeepEqual(dv[i+1], mv[j+1])) {
				j++
			}
			j++
		}
		if j != len(mv) {
			return fmt.Errorf("%s: %d items directly, %d through mcpx", path, len(dv), len(mv))
		}
		return nil
	case string:
		if ms, ok := m.(string); ok {
			dd, md := decode(json.RawMessage(dv)), decode(json.RawMessage(ms))
			if _, isStr := dd.(string); !isStr {
				return c.equal(path, dd, md)
			}
		}
	}
	if len(ids) > 0 {
		return c.stored(path, d, ids)
	}
	return fmt.Errorf("%s: differs: %.200v directly, %.200v through mcpx", path, d, m)
}

func isArtifactLink(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || m["type"] != "resource_link" {
		return false
	}
	uri, _ := m["uri"].(string)
	return strings.HasPrefix(uri, "mcpx://artifacts/")
}

// stored checks that one of the artifacts ids holds what d held.
func (c comparer) stored(path string, d any, ids []string) error {
	var cands [][]byte
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case string:
			cands = append(cands, []byte(x))
			if b, err := base64.StdEncoding.DecodeString(x); err == nil {
				cands = append(cands, b)
			}
		case map[string]any:
			for _, k := range []string{"data", "blob", "text", "resource"} {
				if e, ok := x[k]; ok {
					add(e)
				}
			}
		}
	}
	add(d)
	dj, _ := json.Marshal(d)
	for _, id := range ids {
		b, err := c.read(id)
		if err != nil {
			return fmt.Errorf("%s: artifact %s: %w", path, id, err)
		}
		for _, cand := range cands {
			if string(cand) == string(b) {
				return nil
			}
		}
		if jsonEqual(b, dj) {
			return nil
		}
	}
	return fmt.Errorf("%s: no artifact of %v holds the value it replaced (%.120v)", path, ids, d)
}

func outputSchemaOf(tool json.RawMessage) json.RawMessage {
	var v struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	_ = json.Unmarshal(tool, &v)
	if len(v.OutputSchema) == 0 || string(v.OutputSchema) == "null" {
		return nil
	}
	return v.OutputSchema
}

func validate(schema, result json.RawMessage) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("outputSchema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("outputSchema: %w", err)
	}
	var r struct {
		StructuredContent any  `json:"structuredContent"`
		IsError           bool `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return err
	}
	if r.IsError {
		return nil
	}
	return rs.Validate(r.StructuredContent)
}
