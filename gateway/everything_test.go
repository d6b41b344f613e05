package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
)

// The real peers, installed by scripts/test.sh (npm ci in tools/npm).
var (
	npmDir        = filepath.Join("..", "tools", "npm")
	everythingJS  = filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	inspectorJS   = filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	loopbackJS    = filepath.Join(npmDir, "loopback.cjs")
	longBase64    = regexp.MustCompile(`[A-Za-z0-9+/]{200,}={0,2}`)
	everythingUse = []string{"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference", "get-structured-content", "get-sum", "get-tiny-image", "toggle-simulated-logging", "toggle-subscriber-updates", "trigger-long-running-operation"}
)

// needPeers fails in CI and skips elsewhere when node or the npm packages
// are missing: in CI a test never passes by skipping its subject.
func needPeers(t testing.TB, files ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not on PATH"
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil && missing == "" {
			missing = f + " is missing"
		}
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: run ./scripts/test.sh, which runs npm ci in tools/npm", missing)
		}
		t.Skipf("%s (run ./scripts/test.sh to install the real peers)", missing)
	}
	return node
}

func everythingStdio(t testing.TB) config.ServerConfig {
	node := needPeers(t, everythingJS)
	abs, _ := filepath.Abs(everythingJS)
	return config.ServerConfig{Command: node, Args: []string{abs, "stdio"}}
}

// everythingHTTP starts server-everything's streamableHttp mode on a free
// loopback port and returns its URL.
func everythingHTTP(t *testing.T) config.ServerConfig {
	node := needPeers(t, everythingJS, loopbackJS)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	abs, _ := filepath.Abs(everythingJS)
	pre, _ := filepath.Abs(loopbackJS)
	cmd := exec.Command(node, "--require", pre, abs, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i == 200 {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return config.ServerConfig{Type: config.TypeStreamableHTTP, URL: "http://" + addr + "/mcp"}
}

// direct calls a tool on a fresh direct connection to server-everything
// (stdio), for what the server itself sends.
func direct(t *testing.T, tool, args string) gjson.Result {
	cfg := everythingStdio(t)
	c, err := upstream.DialStdio("direct", cfg, config.Limits{}.WithDefaults(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.Notify(ctx, "notifications/initialized", nil)
	res, err := c.Call(ctx, "tools/call", json.RawMessage(toolCall(tool, args)))
	if err != nil {
		t.Fatal(err)
	}
	return gjson.ParseBytes(res)
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"everything": everythingStdio(t)}, engine.Options{})
	testEverything(t, g)
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"everything": everythingHTTP(t)}, engine.Options{})
	testEverything(t, g)
}

func testEverything(t *testing.T, g *Gateway) {
	c := connect(t, g)
	names := map[string]bool{}
	for _, n := range c.result("tools/list", "").Get("tools.#.name").Array() {
		names[n.Str] = true
	}
	for _, want := range append(everythingUse, "everything_resources_read", "everything_resources_list", "everything_resources_templates_list") {
		if !names[want] {
			t.Errorf("tool %s not offered (have %v)", want, names)
		}
	}

	t.Run("tools work", func(t *testing.T) {
		calls := map[string]string{
			"echo":                   `{"message":"hi"}`,
			"get-sum":                `{"a":2,"b":3}`,
			"get-structured-content": `{"location":"New York"}`,
			"get-env":                `{}`,
		}
		for tool, args := range calls {
			r := c.call("tools/call", toolCall(tool, args))
			if e := gjson.GetBytes(r, "error"); e.Exists() || gjson.GetBytes(r, "result.isError").Bool() {
				t.Errorf("%s: %s", tool, r)
			}
		}
		if s := c.result("tools/call", toolCall("get-structured-content", `{"location":"New York"}`)); !s.Get("structuredContent").IsObject() {
			t.Errorf("structuredContent lost: %s", s.Raw)
		}
	})

	made := map[string]bool{} // artifact URIs this session's calls made
	for _, tc := range []struct {
		tool, args, path string
		dynamic          bool
	}{
		{"get-tiny-image", `{}`, `content.#(type=="image").data`, false},
		{"get-resource-reference", `{"resourceType":"Blob","resourceId":1}`, `content.#(type=="resource").resource.blob`, true},
		{"get-annotated-message", `{"messageType":"success","includeImage":true}`, `content.#(type=="image").data`, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			orig := direct(t, tc.tool, tc.args).Get(tc.path).String()
			want, err := base64.StdEncoding.DecodeString(orig)
			if err != nil || len(want) == 0 {
				t.Fatalf("direct %s: no base64 at %s", tc.tool, tc.path)
			}
			res := c.result("tools/call", toolCall(tc.tool, tc.args))
			if strings.Contains(res.Raw, orig) || longBase64.MatchString(res.Raw) {
				t.Fatalf("base64 in model-visible content: %.300s", res.Raw)
			}
			uri := res.Get(`content.#(type=="resource_link").uri`).String()
			id, ok := artifacts.ID(uri)
			if !ok {
				t.Fatalf("no artifact link in %s", res.Raw)
			}
			made[uri] = true
			read := c.result("resources/read", `{"uri":"`+uri+`"}`)
			// a text artifact reads back as text (never as base64), a
			// binary one as a blob: the same bytes either way
			got := []byte(read.Get("contents.0.text").String())
			if b := read.Get("contents.0.blob"); b.Exists() {
				got, _ = base64.StdEncoding.DecodeString(b.String())
			}
			if tc.dynamic {
				// the server stamps the time into this one: same length,
				// same text up to the stamp
				if len(got) != len(want) || string(got[:20]) != string(want[:20]) {
					t.Fatalf("bytes read back %q, the server sends %q", got, want)
				}
			} else if string(got) != string(want) {
				t.Fatalf("bytes read back (%d) differ from the server's (%d)", len(got), len(want))
			}
			if sum := sha256.Sum256(got); !strings.HasPrefix(fmt.Sprintf("%x", sum), strings.SplitN(id, "_", 2)[1]) {
				t.Errorf("id %s is not the content's sha256 prefix", id)
			}
		})
	}

	t.Run("resource links stay lazy", func(t *testing.T) {
		res := c.result("tools/call", toolCall("get-resource-links", `{"count":2}`))
		links := res.Get(`content.#(type=="resource_link")#.uri`).Array()
		if len(links) != 2 || !strings.HasPrefix(links[0].Str, "demo://") {
			t.Fatalf("links: %s", res.Raw)
		}
		if !strings.Contains(res.Raw, "everything_resources_read") {
			t.Errorf("no read hint: %s", res.Raw)
		}
		// the generated read tool fetches one: text inline, no base64
		rd := c.result("tools/call", toolCall("everything_resources_read", `{"uri":"`+links[0].Str+`"}`))
		if rd.Get("isError").Bool() || longBase64.MatchString(rd.Raw) {
			t.Errorf("generated read: %.300s", rd.Raw)
		}
	})

	t.Run("pagination", func(t *testing.T) {
		seen := map[string]bool{}
		cursor := ""
		for page := 0; page < 100; page++ {
			p := "{}"
			if cursor != "" {
				p = `{"cursor":"` + cursor + `"}`
			}
			r := c.result("resources/list", p)
			for _, u := range r.Get("resources.#.uri").Array() {
				if seen[u.Str] {
					t.Fatalf("resource %s listed twice", u.Str)
				}
				seen[u.Str] = true
			}
			if cursor = r.Get("nextCursor").String(); cursor == "" {
				break
			}
		}
		artifacts := 0
		for u := range seen {
			if strings.HasPrefix(u, engine.URIScheme) {
				artifacts++
			}
		}
		// how many distinct artifacts the calls above made depends on the
		// server's bytes (equal bytes are one artifact; the blob's text
		// holds a time in seconds): every one of them must be listed
		for uri := range made {
			if !seen[uri] {
				t.Errorf("artifact %s of this session is not listed", uri)
			}
		}
		if len(seen)-artifacts < 5 || artifacts < 2 || len(made) < 2 {
			t.Fatalf("listed %d upstream resources and %d artifacts of this session across pages (made %d)", len(seen)-artifacts, artifacts, len(made))
		}
		if code := gjson.GetBytes(c.call("resources/list", `{"cursor":"garbage!"}`), "error.code").Int(); code != jsonrpc.CodeInvalidParams {
			t.Errorf("bad cursor: code %d", code)
		}
	})

	t.Run("progress", func(t *testing.T) {
		_, ch := c.start("tools/call", `{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"tok-1"}}`)
		var got []gjson.Result
		for len(got) < 3 {
			p, ok := c.waitNote("notifications/progress", 20*time.Second)
			if !ok {
				break
			}
			got = append(got, p)
		}
		select {
		case r := <-ch:
			if gjson.GetBytes(r, "error").Exists() {
				t.Fatalf("long-running: %s", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("long-running did not finish")
		}
		if len(got) != 3 || got[2].Get("progressToken").String() != "tok-1" || got[2].Get("progress").Int() != 3 {
			t.Fatalf("progress: %v", got)
		}
	})

	t.Run("subscription", func(t *testing.T) {
		other := connect(t, g)
		uri := "demo://resource/static/document/architecture.md"
		c.result("resources/subscribe", `{"uri":"`+uri+`"}`)
		if n := g.rooms.Subs.Count(uri); n != 1 {
			t.Fatalf("subscribers: %d", n)
		}
		c.result("tools/call", toolCall("toggle-subscriber-updates", ""))
		p, ok := c.waitNote("notifications/resources/updated", 20*time.Second)
		if !ok || p.Get("uri").String() != uri {
			t.Fatalf("no resources/updated for %s (got %s)", uri, p.Raw)
		}
		if _, ok := other.waitNote("notifications/resources/updated", 100*time.Millisecond); ok {
			t.Errorf("a session without the subscription got the update")
		}
		c.result("resources/unsubscribe", `{"uri":"`+uri+`"}`)
		if n := g.rooms.Subs.Count(uri); n != 0 {
			t.Errorf("subscribers after unsubscribe: %d", n)
		}
		c.result("tools/call", toolCall("toggle-subscriber-updates", ""))
	})
}

// TestInspectorCLI drives the gateway (mcpx wrap's code path, as a
// subprocess) with the MCP inspector's CLI as the client.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	node := needPeers(t, everythingJS, inspectorJS)
	mcpx := buildMCPX(t)
	ev, _ := filepath.Abs(everythingJS)
	dir := t.TempDir()
	// the inspector consumes a bare "--": wrap the command line in a script
	script := filepath.Join(dir, "gw.sh")
	body := fmt.Sprintf("#!/bin/sh\nexec %q wrap --store %q -- %q %q stdio\n", mcpx, filepath.Join(dir, "store"), node, ev)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) gjson.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{inspectorJS, "--cli", script, "--connect-timeout", "90000"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return gjson.ParseBytes(out)
	}
	tools := inspect("--method", "tools/list").Get("tools.#.name").Array()
	if len(tools) < len(everythingUse) {
		t.Fatalf("tools: %v", tools)
	}
	img := inspect("--method", "tools/call", "--tool-name", "get-tiny-image")
	if longBase64.MatchString(img.Raw) || !strings.Contains(img.Raw, engine.URIScheme) {
		t.Fatalf("get-tiny-image through the inspector: %.400s", img.Raw)
	}
	sum := inspect("--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=40")
	if !strings.Contains(sum.Get("content.0.text").String(), "42") {
		t.Fatalf("get-sum: %s", sum.Raw)
	}
}

// buildMCPX builds the CLI once per test binary run.
func buildMCPX(t testing.TB) string { return mcpxbin.Path(t) }
