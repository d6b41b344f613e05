//go:build reliability

package reliability

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
)

// upstreamEnv makes the test binary the "blobs" stdio upstream of the
// gateways the tests start (TestMain).
const upstreamEnv = "MCPX_RELIABILITY_UPSTREAM"

func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) != "" {
		serveBlobs(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// blob is the content the upstream's "blob" tool returns for seed and
// size: the same bytes every time, so a reader can check them.
func blob(seed, size int64) []byte {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(size)))
	b := make([]byte, size)
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// serveBlobs is a stdio MCP server (JSON-RPC lines) with one tool,
// "blob" {seed, size}: an embedded binary resource of size bytes. It
// answers one request at a time, as most Python servers do, and reports
// its pid in the resource's URI.
func serveBlobs(in io.Reader, out io.Writer) {
	br := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		m := gjson.ParseBytes(line)
		id := m.Get("id")
		if !id.Exists() {
			continue
		}
		var result any
		switch m.Get("method").String() {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "blobs", "version": "1"}}
		case "ping":
			result = map[string]any{}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{
				"name": "blob", "description": "a binary file",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"seed": map[string]any{"type": "integer"}, "size": map[string]any{"type": "integer"}}},
			}, map[string]any{
				"name": "image", "description": "a PNG of w×h pixels, 8 or 16 bits a channel (images_test.go)",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"w": map[string]any{"type": "integer"}, "h": map[string]any{"type": "integer"}, "depth": map[string]any{"type": "integer"}}},
			}}}
		case "tools/call":
			if m.Get("params.name").String() == "image" {
				result = imageResult(m.Get("params.arguments"))
				break
			}
			seed, size := m.Get("params.arguments.seed").Int(), m.Get("params.arguments.size").Int()
			result = map[string]any{"content": []any{map[string]any{"type": "resource", "resource": map[string]any{
				"uri": fmt.Sprintf("file:///blob-%d-%d-pid%d.bin", seed, size, os.Getpid()), "mimeType": "application/octet-stream",
				"blob": base64.StdEncoding.EncodeToString(blob(seed, size)),
			}}}}
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id.Raw), "error": map[string]any{"code": -32601, "message": "method not found"}})
			w.Write(append(b, '\n'))
			w.Flush()
			continue
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id.Raw), "result": result})
		w.Write(append(b, '\n'))
		w.Flush()
	}
}

// mcpx is the mcpx binary, built once per test binary.
func mcpx(t *testing.T) string { return mcpxbin.Path(t) }

// urlSecret signs the gateways' download URLs; a restarted gateway with
// the same one honours the URLs of the one before.
const urlSecret = "reliability-test-url-secret-0123456789abcdef"

// gatewayConfig writes a config for `mcpx serve` on addr with the blobs
// upstream under each name of servers (its mcpx options) and store
// (the "store" section), and returns its path.
func gatewayConfig(t *testing.T, dir, addr string, servers map[string]map[string]any, st map[string]any) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]any{}
	for name, opts := range servers {
		e := map[string]any{"command": self, "args": []string{"-test.run=^$"}, "env": map[string]string{upstreamEnv: "1"}}
		if opts != nil {
			e["mcpx"] = opts
		}
		ms[name] = e
	}
	cfg := map[string]any{
		"mcpServers": ms,
		"store":      st,
		// The suite measures what the gateway carries: rate limits off
		// (the local user has none by default; this keeps it so if the
		// defaults change).
		"serve": map[string]any{"base_url": "http://" + addr, "url_secret": urlSecret,
			"auth": map[string]any{"limits": map[string]any{"requests_per_second": -1, "tool_calls_per_second": -1}}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	path := filepath.Join(dir, "mcpx.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// gateway is a running `mcpx serve --listen`.
type gateway struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	exited chan struct{}
	// servers: how many upstreams the config names
	servers int
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// URL is its MCP endpoint.
func (g *gateway) URL() string { return "http://" + g.addr + "/mcp" }

// startGateway runs mcpx serve with config on addr until the test ends
// (or kill), and waits until it answers.
func startGateway(t *testing.T, config, addr string) *gateway {
	t.Helper()
	dir := filepath.Dir(config)
	logPath := filepath.Join(dir, fmt.Sprintf("mcpx-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcpx(t), "serve", "--config", config, "--listen", addr)
	cmd.Env = append(os.Environ(), "MCPX_HOME="+dir, "MCPX_LOG_LEVEL=debug") // the log is read only when a test fails
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gateway{cmd: cmd, addr: addr, log: logPath, exited: make(chan struct{}), servers: int(gjson.GetBytes(mustRead(t, config), "mcpServers.@keys.#").Int())}
	go func() { _ = cmd.Wait(); logf.Close(); close(g.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-g.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("gateway log %s (tail):\n%s", logPath, tail(string(b), 3000))
		}
	})
	deadline := time.Now().Add(2 * time.Minute) // a loaded machine starts slowly
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-g.exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("mcpx serve exited: %s", tail(string(b), 3000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcpx serve did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Ready once every server's tool is listed (a call before gets
	// "unknown tool").
	s, err := newSession(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for {
		res, err := s.rpc("tools/list", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		res.Get("result.tools.#.name").ForEach(func(_, v gjson.Result) bool {
			// one upstream's tools keep their names; several are prefixed
			if v.String() == "blob" || strings.HasSuffix(v.String(), "_blob") {
				n++
			}
			return true
		})
		if n == g.servers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway lists %d of %d servers' tools", n, g.servers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return g
}

// kill ends the gateway with SIGKILL, as a crash would, and its
// upstreams (its process group) with it.
func (g *gateway) kill() {
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	<-g.exited
}

// peakRSS is the gateway process's peak resident memory so far (VmHWM).
func (g *gateway) peakRSS(t *testing.T) int64 { return rss(t, g.cmd.Process.Pid, "VmHWM:") }

// resetPeakRSS starts the gateway's peak resident memory (VmHWM) again
// from what it holds now.
func (g *gateway) resetPeakRSS(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", g.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the gateway's peak RSS: %v", err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// session is one 2025-11-25 streamable-HTTP client session.
type session struct {
	url string
	id  string
	hc  *http.Client
	seq int
}

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: 2 * time.Minute}

// newSession initializes a session on the gateway at url.
func newSession(url string) (*session, error) { return newSessionAs(url, "reliability") }

// newSessionAs initializes a session on the gateway at url for a client
// of that name (the gateway fits results to its profile: "claude-code").
func newSessionAs(url, client string) (*session, error) {
	s := &session{url: url, hc: httpClient}
	if _, err := s.rpc("initialize", fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}`, client)); err != nil {
		return nil, err
	}
	if err := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// rpc sends one request and returns its response.
func (s *session) rpc(method, params string) (gjson.Result, error) {
	s.seq++
	var res gjson.Result
	err := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.seq, method, params), &res)
	if err == nil && res.Get("error").Exists() {
		err = fmt.Errorf("%s: %s", method, res.Get("error").Raw)
	}
	return res, err
}

func (s *session) post(body string, out *gjson.Result) error {
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, tail(string(b), 300))
	}
	if out == nil {
		return nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, l := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok && gjson.GetBytes(d, "id").Exists() {
				last = d
			}
		}
		b = last
	}
	*out = gjson.ParseBytes(b)
	return nil
}

// close ends the session (DELETE).
func (s *session) close() {
	req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	if resp, err := s.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

var (
	artifactURI = regexp.MustCompile(`mcpx://artifacts/([A-Za-z0-9_.-]+)`)
	signedURL   = regexp.MustCompile(`http://[^"\\\s]+/artifacts/[^"\\\s]+`)
)

// told is what one call's result told the model: the artifact's id and
// signed URL, or that it was not stored (and why).
type told struct {
	Seed, Size int64
	ID, URL    string
	NotStored  string
	Text       string
}

// callBlob calls server's blob tool and returns what the model was told.
func (s *session) callBlob(server string, seed, size int64) (told, error) {
	res, err := s.rpc("tools/call", fmt.Sprintf(`{"name":"%s_blob","arguments":{"seed":%d,"size":%d}}`, server, seed, size))
	if err != nil {
		return told{}, err
	}
	raw := res.Get("result").Raw
	r := told{Seed: seed, Size: size, Text: tail(raw, 600)}
	if m := artifactURI.FindStringSubmatch(raw); m != nil {
		r.ID = m[1]
	}
	r.URL = strings.ReplaceAll(signedURL.FindString(raw), `\u0026`, "&")
	if strings.Contains(raw, "NOT stored") || strings.Contains(raw, "not_stored") {
		r.NotStored = raw
	}
	if b64 := res.Get("result.content.0.resource.blob").String(); b64 != "" {
		// A store that cannot keep the value (a full disk, an object
		// store that is down) leaves a preview and a not_stored note,
		// never the bytes (engine: TestUnwritableStoreLeavesANote).
		return r, fmt.Errorf("%s_blob seed %d: the bytes passed through (%d base64 chars): %s", server, seed, len(b64), tail(raw, 400))
	}
	if r.NotStored == "" && (r.ID == "" || r.URL == "") {
		return r, fmt.Errorf("%s_blob seed %d: no artifact and no note in %s", server, seed, tail(raw, 400))
	}
	return r, nil
}

// readBack fetches a told artifact by its signed URL and checks its bytes.
func readBack(r told) error {
	resp, err := httpClient.Get(r.URL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("artifact %s: HTTP %d: %s", r.ID, resp.StatusCode, tail(string(b), 200))
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", r.ID, err)
	}
	if !bytes.Equal(got, blob(r.Seed, r.Size)) {
		return fmt.Errorf("artifact %s: %d bytes read back differ from the %d returned", r.ID, len(got), r.Size)
	}
	return nil
}
