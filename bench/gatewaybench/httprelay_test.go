package main

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestMain makes the test binary a stdio server when asked: it answers
// initialize and tools/call, and sends a notification and a
// server-to-client request before each answer, which the relay must not
// take for it.
func TestMain(m *testing.M) {
	if os.Getenv("GATEWAYBENCH_FAKE_SERVER") == "1" {
		fakeServer()
		return
	}
	os.Exit(m.Run())
}

func fakeServer() {
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id")
		if !id.Exists() {
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`+"\n"+
			`{"jsonrpc":"2.0","id":%s,"method":"roots/list"}`+"\n", id.Raw)
		switch gjson.GetBytes(line, "method").Str {
		case "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`+"\n", id.Raw)
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"Hi %s"}]}}`+"\n", id.Raw,
				gjson.GetBytes(line, "params.arguments.name").Str)
		}
	}
}

// TestHTTPRelay: each client gets its own answer under its own id, with
// clients calling at once, and initialize is answered from the server's.
func TestHTTPRelay(t *testing.T) {
	t.Setenv("GATEWAYBENCH_FAKE_SERVER", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := startHTTPRelay([]string{exe})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()
	defer r.close()
	cs, err := newHTTPClients(srv.URL+"/mcp", 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].session != "relay" {
		t.Errorf("session %q, want the relay's", cs[0].session)
	}
	if _, err := httpRun(cs, 50); err != nil {
		t.Fatal(err)
	}
	c := cs[2]
	res, err := c.post("tools/call", `{"name":"greet","arguments":{"name":"relay"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(res, "id").Int(); got != int64(c.id) {
		t.Errorf("answer under id %d, want the client's %d: %s", got, c.id, res)
	}
	if got := gjson.GetBytes(res, "result.content.0.text").Str; got != "Hi relay" {
		t.Errorf("text %q, want %q: %s", got, "Hi relay", res)
	}
	ir, err := c.post("initialize", initParams)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(ir, "result.serverInfo.name").Str; got != "fake" || gjson.GetBytes(ir, "id").Int() != int64(c.id) {
		t.Errorf("initialize answered %s, want the server's result under id %d", ir, c.id)
	}

	// A server that ends fails the calls waiting on it and those after,
	// rather than holding them for ever.
	r.close()
	for range 2 {
		if _, err := c.post("tools/call", callParams); err == nil || !strings.Contains(err.Error(), "502") {
			t.Errorf("a call after the server ended: %v, want 502 Bad Gateway", err)
		}
	}
}
