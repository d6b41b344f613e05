package compat_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// launch is a stdio server's command line.
type launch struct {
	Command string
	Args    []string
	Env     []string // KEY=VALUE, added to the test's environment
}

// session is one client connected to one server.
type session interface {
	// Tools returns tools/list's tools as JSON objects.
	Tools() (map[string]json.RawMessage, error)
	// Call returns tools/call's result as JSON; an error is what the
	// client reported, e.g. a structuredContent its validator rejected.
	Call(name string, args map[string]any) (json.RawMessage, error)
	// Read returns resources/read's result as JSON.
	Read(uri string) (json.RawMessage, error)
	Close() error
}

// target is what a client connects to: a stdio command line, or a
// streamable HTTP endpoint and the headers sent with every request (a
// bearer token).
type target struct {
	launch  launch
	url     string
	headers map[string]string
}

// client is a way to connect. An http client reaches mcpx through `mcpx
// serve --listen` (the direct call still runs over the server's stdio); the
// others through `mcpx wrap`.
type client struct {
	name string
	http bool
	// caps are the client capabilities it declares, which an HTTP
	// deployment of such clients sets as client_capabilities: over
	// --listen mcpx cannot wait for the first client to learn them
	// (docs/protocol.md, Client capabilities declared upstream).
	caps    json.RawMessage
	connect func(t *testing.T, tg target, revision string) (session, error)
	// skip gives, per revision, why the matrix does not run the client
	// there; the table shows the reason.
	skip map[string]string
}

// errRevisionNotSpoken is returned by connect when the client settled on
// another revision than the one asked for.
var errRevisionNotSpoken = errors.New("the client does not speak this revision")

var clients = []client{
	{name: "TypeScript SDK (@modelcontextprotocol/client 2.x)", connect: connectTS},
	{name: "inspector CLI 2.12", connect: connectInspector},
	{name: "go-sdk v1.8.0", connect: connectGoSDK},
	{name: "mcp-go v1.2.1", connect: connectMCPGo},
	{name: "TypeScript SDK, HTTP (mcpx serve)", http: true, caps: json.RawMessage(`{}`), connect: connectTS},
	// go-sdk declares roots with listChanged unless told otherwise
	{name: "go-sdk v1.8.0, HTTP (mcpx serve)", http: true, caps: json.RawMessage(`{"roots":{"listChanged":true}}`), connect: connectGoSDK},
}

// --- the TypeScript SDK, through tools/npm/mcp-client.mjs ---

type tsSession struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
}

func connectTS(t *testing.T, tg target, revision string) (session, error) {
	cmd := exec.Command(nodeBin, filepath.Join(npmDir, "mcp-client.mjs"))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &tsSession{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	req := map[string]any{"op": "connect", "revision": revision}
	if tg.url != "" {
		req["url"], req["headers"] = tg.url, tg.headers
	} else {
		env := map[string]string{}
		for _, kv := range tg.launch.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		req["command"], req["args"], req["env"] = tg.launch.Command, tg.launch.Args, env
	}
	if _, err := s.do(req); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *tsSession) do(req map[string]any) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(req)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("mcp-client.mjs: %w", err)
	}
	var ans struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return nil, fmt.Errorf("mcp-client.mjs answered %q: %w", line, err)
	}
	if !ans.OK {
		return nil, errors.New(ans.Error)
	}
	return ans.Result, nil
}

func (s *tsSession) Tools() (map[string]json.RawMessage, error) {
	raw, err := s.do(map[string]any{"op": "listTools"})
	if err != nil {
		return nil, err
	}
	return toolMap(raw)
}

func (s *tsSession) Call(name string, args map[string]any) (json.RawMessage, error) {
	return s.do(map[string]any{"op": "callTool", "name": name, "arguments": args})
}

func (s *tsSession) Read(uri string) (json.RawMessage, error) {
	return s.do(map[string]any{"op": "readResource", "uri": uri})
}

func (s *tsSession) Close() error {
	_, _ = s.do(map[string]any{"op": "close"})
	s.in.Close()
	return s.cmd.Wait()
}

func toolMap(raw []byte) (map[string]json.RawMessage, error) {
	var v struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	for _, tool := range v.Tools {
		var n struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(tool, &n)
		m[n.Name] = tool
	}
	return m, nil
}

// --- the inspector CLI: one process (and one server) per request ---

type inspectorSession struct {
	script string
	era    string // --protocol-era: legacy (2025-11-25) or modern
}

func connectInspector(t *testing.T, tg target, revision string) (session, error) {
	l := tg.launch
	// The inspector consumes a bare "--" and takes no environment for the
	// server: wrap the command line in a script.
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	b.WriteString("exec")
	for _, a := range append([]string{l.Command}, l.Args...) {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	script := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		return nil, err
	}
	era := "legacy"
	if revision != "2025-11-25" {
		era = "modern"
	}
	return &inspectorSession{script: script, era: era}, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *inspectorSession) run(args ...string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// The CLI gives a server 15 s to connect by default: a 2-core CI
	// machine running the suite's packages side by side starts an npx
	// server (direct or behind mcpx) slower than that now and then.
	cmd := exec.CommandContext(ctx, nodeBin, append([]string{inspectorJS, "--cli", s.script, "--protocol-era", s.era, "--connect-timeout", "90000"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("inspector %v: %w: %s", args, err, stderr.String())
	}
	return out, nil
}

func (s *inspectorSession) Tools() (map[string]json.RawMessage, error) {
	raw, err := s.run("--method", "tools/list")
	if err != nil {
		return nil, err
	}
	return toolMap(raw)
}

func (s *inspectorSession) Call(name string, args map[string]any) (json.RawMessage, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return s.run("--method", "tools/call", "--tool-name", name, "--tool-args-json", string(b))
}

func (s *inspectorSession) Read(uri string) (json.RawMessage, error) {
	return s.run("--method", "resources/read", "--uri", uri)
}

func (s *inspectorSession) Close() error { return nil }

// --- the go-sdk client ---

type goSDKSession struct{ cs *gosdk.ClientSession }

func connectGoSDK(t *testing.T, tg target, revision string) (session, error) {
	cs, err := dialGoSDK(t, tg, revision)
	if err != nil {
		return nil, err
	}
	return &goSDKSession{cs: cs}, nil
}

// dialGoSDK connects the go-sdk client, with roots when given (it
// declares the capability either way).
func dialGoSDK(t *testing.T, tg target, revision string, roots ...*gosdk.Root) (*gosdk.ClientSession, error) {
	var tr gosdk.Transport
	if tg.url != "" {
		tr = &gosdk.StreamableClientTransport{Endpoint: tg.url, HTTPClient: &http.Client{Transport: headerTransport(tg.headers)}}
	} else {
		cmd := exec.Command(tg.launch.Command, tg.launch.Args...)
		cmd.Env = append(os.Environ(), tg.launch.Env...)
		cmd.Stderr = testWriter{t}
		tr = &gosdk.CommandTransport{Command: cmd}
	}
	c := gosdk.NewClient(&gosdk.Implementation{Name: "mcpx-compat", Version: "1.0.0"}, nil)
	c.AddRoots(roots...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &gosdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		return nil, err
	}
	if v := cs.InitializeResult().ProtocolVersion; v != revision {
		cs.Close()
		return nil, fmt.Errorf("%w: asked for %s, settled on %s", errRevisionNotSpoken, revision, v)
	}
	return cs, nil
}

// headerTransport sends headers with every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (s *goSDKSession) Tools() (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	for tool, err := range s.cs.Tools(context.Background(), nil) {
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(tool)
		m[tool.Name] = b
	}
	return m, nil
}

func (s *goSDKSession) Call(name string, args map[string]any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &gosdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (s *goSDKSession) Read(uri string) (json.RawMessage, error) {
	res, err := s.cs.ReadResource(context.Background(), &gosdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (s *goSDKSession) Close() error { return s.cs.Close() }

// --- the mcp-go client ---

type mcpGoSession struct{ c *mcpgoclient.Client }

func connectMCPGo(t *testing.T, tg target, revision string) (session, error) {
	l := tg.launch
	tr := mcpgotransport.NewStdio(l.Command, append(os.Environ(), l.Env...), l.Args...)
	if err := tr.Start(context.Background()); err != nil {
		return nil, err
	}
	// mcp-go gives server/discover five seconds before it falls back to
	// initialize; mcpx answers it once its upstream has started, which on
	// a loaded CI machine can take longer. The cell is about the revision,
	// not the start-up time: bound it like the other clients' connect.
	c := mcpgoclient.NewClient(tr, mcpgoclient.WithDiscoverTimeout(60*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = revision
	req.Params.ClientInfo = mcpgo.Implementation{Name: "mcpx-compat", Version: "1.0.0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		c.Close()
		return nil, err
	}
	if res.ProtocolVersion != revision {
		c.Close()
		return nil, fmt.Errorf("%w: asked for %s, settled on %s", errRevisionNotSpoken, revision, res.ProtocolVersion)
	}
	return &mcpGoSession{c: c}, nil
}

func (s *mcpGoSession) Tools() (map[string]json.RawMessage, error) {
	res, err := s.c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool)
		m[tool.Name] = b
	}
	return m, nil
}

func (s *mcpGoSession) Call(name string, args map[string]any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (s *mcpGoSession) Read(uri string) (json.RawMessage, error) {
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := s.c.ReadResource(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (s *mcpGoSession) Close() error { return s.c.Close() }

// testWriter sends a child's stderr to the test's stderr when
// MCPX_COMPAT_VERBOSE is set, and drops it otherwise (a child may write
// after its subtest ended, when t.Log would panic).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if os.Getenv("MCPX_COMPAT_VERBOSE") != "" {
		return os.Stderr.Write(p)
	}
	return len(p), nil
}
