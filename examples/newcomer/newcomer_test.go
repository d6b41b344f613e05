// Package newcomer_test walks the plugin author's path of
// examples/newcomer/README.md from a clone, in Go and in Rust, with the
// mcpx binary built from this checkout: plugin new, ./build.sh, plugin
// test, transform --plugin, then mcpx serve with a watched plugins folder
// where version 2 is dropped in and serves the next call.
package newcomer_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
)

// The walkthrough's names.
const (
	server = "helpdesk"
	tool   = "get_ticket"
	plugin = "ticket_plugin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds mcpx (internal/mcpxbin: linked once for the suite)
// and the helpdesk server from this checkout, once per process, the way
// a newcomer does in a clone (no -trimpath: the binary knows its
// checkout, so plugin new --lang go needs no --sdk).
func binaries(t *testing.T) (mcpx, helpdesk string) {
	t.Helper()
	mcpx = mcpxbin.Path(t)
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "mcpx-newcomer-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command(goTool(), "build", "-o", filepath.Join(binDir, "helpdesk"), "./examples/newcomer/helpdesk")
		cmd.Dir = wasmtest.Root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./examples/newcomer/helpdesk: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return mcpx, filepath.Join(binDir, "helpdesk")
}

func goTool() string { return filepath.Join(runtime.GOROOT(), "bin", "go") }

// walk is one newcomer's session: a work folder and an environment.
type walk struct {
	t        *testing.T
	mcpx     string
	helpdesk string
	work     string
	env      []string
}

// run runs a command in dir and returns its stdout; stderr goes into the
// failure message.
func (w *walk) run(dir string, stdin io.Reader, name string, args ...string) (stdout, stderr string) {
	w.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = w.env
	cmd.Stdin = stdin
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, o.String(), e.String())
	}
	return o.String(), e.String()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	// Write beside, then rename: a watched folder never sees half a file.
	tmp := filepath.Join(filepath.Dir(to), "."+filepath.Base(to)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

func TestNewcomerPluginGo(t *testing.T)   { newcomer(t, "go") }
func TestNewcomerPluginRust(t *testing.T) { newcomer(t, "rust") }

func newcomer(t *testing.T, lang string) {
	mcpx, helpdesk := binaries(t)
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// Every command and copy below is one README.md tells the reader to
	// type, word for word: a step the README skips fails here.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	says := func(line string) {
		t.Helper()
		if !bytes.Contains(readme, []byte(line)) {
			t.Fatalf("README.md does not say to run %q, which the walk does", line)
		}
	}
	w := &walk{t: t, mcpx: mcpx, helpdesk: helpdesk, work: t.TempDir()}
	w.env = append(os.Environ(), "MCPX_HOME="+filepath.Join(w.work, "home"), "MCPX_LOG_LEVEL=")
	var compiler string
	switch lang {
	case "go":
		// TinyGo where scripts/wasm-toolchains.sh puts it, not on PATH:
		// build.sh finds it through TINYGOROOT.
		path := filepath.Dir(goTool()) + string(os.PathListSeparator) + "/usr/bin:/bin"
		if _, root, ok := wasmtest.TinyGoPath(); ok {
			w.env = append(w.env, "PATH="+path, "TINYGOROOT="+root)
			compiler = "TinyGo"
		} else {
			wasmtest.Missing(t, "TinyGo v0.42.0") // fails under CI=true
			w.env = append(w.env, "PATH="+path, "TINYGOROOT=", "MCPX_TOOLS="+t.TempDir())
			compiler = "Go"
		}
	case "rust":
		rustc, ok := wasmtest.RustcPath()
		if !ok {
			wasmtest.Missing(t, "Debian's rustc with libstd-rust-dev-wasm32 and lld-14")
		}
		w.env = append(w.env, "RUSTC="+rustc)
		compiler = "rustc"
	}

	// 1. plugin new: files, the server it is for, what to run next.
	says("mcpx plugin new --lang go --server helpdesk --tool get_ticket ticket-plugin   # or --lang rust")
	out, _ := w.run(w.work, nil, mcpx, "plugin", "new", "--lang", lang, "--server", server, "--tool", tool, "ticket-plugin")
	for _, want := range []string{`plugin "ticket_plugin" for server "helpdesk"`, "Nothing is built yet. Next:", "./build.sh", "ticket_plugin.json"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plugin new output lacks %q:\n%s", want, out)
		}
	}
	proj := filepath.Join(w.work, "ticket-plugin")
	wasmFile := filepath.Join(proj, plugin+".wasm")
	ticket := filepath.Join(proj, "testdata", "ticket.json")
	says("cp $MCPX/examples/newcomer/helpdesk-go/testdata/ticket.json testdata/")
	copyFile(t, filepath.Join(here, "helpdesk-go", "testdata", "ticket.json"), ticket)

	// 2. ./build.sh: the scaffold's tests pass and the module is built.
	says("./build.sh")
	out, _ = w.run(proj, nil, "./build.sh")
	if !strings.Contains(out, "built "+plugin+".wasm with "+compiler) {
		t.Fatalf("build.sh did not build with %s:\n%s", compiler, out)
	}

	// 3. plugin test on the sample and on a ticket: version 1 moves every
	// base64 file.
	says("mcpx plugin test ticket_plugin.wasm --server helpdesk --tool get_ticket testdata/sample.json")
	out, _ = w.run(proj, nil, mcpx, "plugin", "test", plugin+".wasm", "--server", server, "--tool", tool, "testdata/sample.json")
	if n := len(gjson.Get(out, "artifacts").Array()); n != 1 {
		t.Fatalf("plugin test on the sample: %d artifacts\n%s", n, out)
	}
	says("mcpx plugin test ticket_plugin.wasm --server helpdesk --tool get_ticket testdata/ticket.json")
	out, _ = w.run(proj, nil, mcpx, "plugin", "test", plugin+".wasm", "--server", server, "--tool", tool, "testdata/ticket.json")
	if n := len(gjson.Get(out, "artifacts").Array()); n != 2 {
		t.Fatalf("plugin test on the ticket: %d artifacts\n%s", n, out)
	}

	// 4. transform --plugin stores the attachments, byte for byte.
	store := filepath.Join(w.work, "store")
	says("mcpx transform --plugin ticket_plugin.wasm --server helpdesk --tool get_ticket testdata/ticket.json")
	out, _ = w.run(proj, nil, mcpx, "transform", "--plugin", plugin+".wasm", "--store", store, "--server", server, "--tool", tool, "testdata/ticket.json")
	p := payload(t, out)
	if s := p.Get("attachments.0.data.summary").String(); !strings.Contains(s, "from helpdesk/get_ticket") {
		t.Fatalf("transform: version 1's summary missing: %s", p.Raw)
	}
	id := p.Get("attachments.0.data.artifact.id").String()
	got, _ := w.run(proj, nil, mcpx, "artifacts", "get", "--store", store, id)
	want := attachmentBytes(t, ticket, 0)
	if got != string(want) {
		t.Fatalf("artifact %s: %d bytes, want the %d bytes of invoice-march.pdf", id, len(got), len(want))
	}

	// 5. mcpx serve with a watched plugins folder, started from another
	// folder: the config's paths are its own folder's.
	cfgDir := filepath.Join(w.work, "mcpx")
	plugins := filepath.Join(cfgDir, "plugins")
	copyFile(t, wasmFile, filepath.Join(plugins, plugin+".wasm"))
	copyFile(t, filepath.Join(proj, plugin+".json"), filepath.Join(plugins, plugin+".json"))
	cfg, _ := json.Marshal(map[string]any{
		"store":      map[string]any{"dir": "artifacts"},
		"pipeline":   map[string]any{"layers": map[string]any{"custom": map[string]any{"dir": "plugins"}}},
		"mcpServers": map[string]any{server: map[string]any{"command": helpdesk}},
	})
	if err := os.WriteFile(filepath.Join(cfgDir, "mcpx.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, w, filepath.Join(cfgDir, "mcpx.json"))
	p = c.getTicket(t)
	if !strings.Contains(p.Get("attachments.0.data.summary").String(), "from helpdesk/get_ticket") || len(p.Get("history").Array()) != 40 {
		t.Fatalf("serve with version 1: %s\nmcpx stderr:\n%s", p.Raw, c.stderr.String())
	}

	// 6. Version 2: edit the source, rebuild, drop it in; the next calls
	// get the new behaviour without a restart.
	switch lang {
	case "go":
		says("cp $MCPX/examples/newcomer/helpdesk-go/main.go $MCPX/examples/newcomer/helpdesk-go/main_test.go .")
		copyFile(t, filepath.Join(here, "helpdesk-go", "main.go"), filepath.Join(proj, "main.go"))
		copyFile(t, filepath.Join(here, "helpdesk-go", "main_test.go"), filepath.Join(proj, "main_test.go"))
	case "rust":
		says("cp $MCPX/examples/newcomer/helpdesk-rust/lib.rs src/lib.rs")
		says("mcpx plugin test --dump-request --server helpdesk --tool get_ticket testdata/ticket.json > testdata/request.json")
		copyFile(t, filepath.Join(here, "helpdesk-rust", "lib.rs"), filepath.Join(proj, "src", "lib.rs"))
		req, _ := w.run(proj, nil, mcpx, "plugin", "test", "--dump-request", "--server", server, "--tool", tool, "testdata/ticket.json")
		if err := os.WriteFile(filepath.Join(proj, "testdata", "request.json"), []byte(req), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = w.run(proj, nil, "./build.sh")
	if !strings.Contains(out, "built "+plugin+".wasm") {
		t.Fatalf("build.sh, version 2:\n%s", out)
	}
	copyFile(t, wasmFile, filepath.Join(plugins, plugin+".wasm"))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p = c.getTicket(t)
		if len(p.Get("history").Array()) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("version 2 was not loaded: %s\nmcpx stderr:\n%s", p.Raw, c.stderr.String())
		}
		<-time.After(100 * time.Millisecond) // poll interval
	}
	for i, name := range []string{"invoice-march.pdf", "test-page.png"} {
		at := fmt.Sprintf("attachments.%d.data", i)
		// The plugin's words, then the engine's: the id is named by the
		// engine's reference only, not by the plugin's words too.
		s, id := p.Get(at+".summary").String(), p.Get(at+".artifact.id").String()
		if !strings.HasPrefix(s, "Attachment '"+name+"' — ") || id == "" || strings.Index(s, id) != strings.Index(s, "stored as artifact "+id)+len("stored as artifact ") {
			t.Errorf("%s summary = %q", at, s)
		}
		// The model reads a compact ref; the file name is in the full
		// ref in _meta.
		f := ""
		for _, m := range c.result.Get(`_meta.mcpx/artifacts`).Array() {
			if m.Get("artifact.id").String() == p.Get(at+".artifact.id").String() {
				f = m.Get("artifact.filename").String()
			}
		}
		if f != name {
			t.Errorf("%s filename = %q, want %q", at, f, name)
		}
	}
	if note := p.Get("history.4.note").String(); note != "Update 40 on T-1042: checked the printer queue, restarted spooler, customer replied." {
		t.Errorf("the last history entry is %q", note)
	}
	c.close(t)

	// The full history is in the store.
	ls, _ := w.run(w.work, nil, mcpx, "artifacts", "ls", "--json", "--store", filepath.Join(cfgDir, "artifacts"))
	full := false
	for _, line := range strings.Split(strings.TrimSpace(ls), "\n") {
		aid := gjson.Get(line, "id").String()
		b, _ := w.run(w.work, nil, mcpx, "artifacts", "get", "--store", filepath.Join(cfgDir, "artifacts"), aid)
		if h := gjson.Parse(b); h.IsArray() && len(h.Array()) == 40 {
			full = true
		}
	}
	if !full {
		t.Fatalf("no stored artifact holds the full history of 40 entries:\n%s", ls)
	}
}

// payload returns the ticket in a transformed get_ticket result (its text
// block's JSON).
func payload(t *testing.T, result string) gjson.Result {
	t.Helper()
	text := gjson.Get(result, "content.0.text")
	if !text.Exists() || !gjson.Valid(text.String()) {
		t.Fatalf("not a get_ticket result: %s", result)
	}
	return gjson.Parse(text.String())
}

// attachmentBytes decodes attachment n of the ticket file.
func attachmentBytes(t *testing.T, file string, n int) []byte {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := payload(t, string(raw))
	b, err := base64.StdEncoding.DecodeString(p.Get(fmt.Sprintf("attachments.%d.data", n)).String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// client is an MCP client of "mcpx serve" over stdio.
type client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	exited chan error // the process's exit, once stdout is drained
	stderr *syncbuf.Buffer
	nextID int
	// result is the last get_ticket result: its _meta holds the full refs.
	result gjson.Result
}

// startServe starts "mcpx serve --config cfg" from the root folder and
// initializes an MCP session.
func startServe(t *testing.T, w *walk, cfg string) *client {
	t.Helper()
	c := &client{cmd: exec.Command(w.mcpx, "serve", "--config", cfg), lines: make(chan []byte, 16), exited: make(chan error, 1), stderr: &syncbuf.Buffer{}}
	c.cmd.Dir = "/"
	c.cmd.Env = w.env
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
		for sc.Scan() {
			c.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(c.lines)
		c.exited <- c.cmd.Wait() // after the last read, as Wait requires
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill() // a no-op once it has exited
		for range c.lines {      // drain, so the reader reaches Wait
		}
	})
	init := c.call(t, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "newcomer", "version": "1"}})
	if !init.Get("result.serverInfo").Exists() {
		t.Fatalf("initialize: %s\nmcpx stderr:\n%s", init.Raw, c.stderr.String())
	}
	c.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *client) send(t *testing.T, msg any) {
	t.Helper()
	b, _ := json.Marshal(msg)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("write to mcpx: %v\nmcpx stderr:\n%s", err, c.stderr.String())
	}
}

// call sends a request and waits for its response (other messages are
// skipped).
func (c *client) call(t *testing.T, method string, params any) gjson.Result {
	t.Helper()
	c.nextID++
	id := c.nextID
	c.send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("mcpx closed stdout during %s\nmcpx stderr:\n%s", method, c.stderr.String())
			}
			r := gjson.ParseBytes(line)
			if r.Get("id").Int() == int64(id) && (r.Get("result").Exists() || r.Get("error").Exists()) {
				return r
			}
		case <-timeout:
			t.Fatalf("no answer to %s in a minute\nmcpx stderr:\n%s", method, c.stderr.String())
		}
	}
}

// getTicket calls get_ticket and returns the ticket the model would see.
func (c *client) getTicket(t *testing.T) gjson.Result {
	t.Helper()
	r := c.call(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"id": "T-1042"}})
	if r.Get("error").Exists() || r.Get("result.isError").Bool() {
		t.Fatalf("get_ticket: %s\nmcpx stderr:\n%s", r.Raw, c.stderr.String())
	}
	c.result = r.Get("result")
	return payload(t, r.Get("result").Raw)
}

// close ends the session: mcpx exits when its stdin closes.
func (c *client) close(t *testing.T) {
	t.Helper()
	_ = c.stdin.Close()
	go func() {
		for range c.lines { // drain what is left
		}
	}()
	select {
	case err := <-c.exited:
		if err != nil {
			t.Fatalf("mcpx serve: %v\nmcpx stderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpx serve did not exit when its stdin closed\nmcpx stderr:\n%s", c.stderr.String())
	}
}
