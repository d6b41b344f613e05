package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A host runs the gateway in front of its MCP servers and serves one
// client over stdio (os.Stdin and os.Stdout in a real host; pipes here).
// Every tool result passes through the engine on its way to the client.
func Example() {
	// Any stdio MCP server; here this test binary, which serves a small
	// one when the variable is set (helpers_test.go).
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	servers := map[string]config.ServerConfig{
		"demo": {Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"MCPX_GATEWAY_TEST_STUB": "1"}},
	}
	gw, err := gateway.New(gateway.Options{
		Servers: servers,
		Engine:  engine.Options{Store: memstore.New(memstore.Config{})},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	gw.Start(ctx)
	defer gw.Close(ctx)

	toGateway, fromClient := io.Pipe()
	toClient, fromGateway := io.Pipe()
	go func() { _ = gw.ServeStdio(ctx, toGateway, fromGateway) }()
	replies := bufio.NewScanner(toClient)
	replies.Buffer(nil, 1<<20)
	ask := func(msg string) gjson.Result {
		if _, err := io.WriteString(fromClient, msg+"\n"); err != nil {
			log.Fatal(err)
		}
		for replies.Scan() { // skipping notifications (list changes)
			if m := gjson.Parse(replies.Text()); m.Get("id").Exists() {
				return m
			}
		}
		log.Fatal("no reply")
		return gjson.Result{}
	}

	init := ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	fmt.Println("server:", init.Get("result.serverInfo.name"))
	_, _ = io.WriteString(fromClient, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	res := ask(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"v":"hello"}}}`)
	fmt.Println("echo:", res.Get("result.structuredContent.v"))
	// Output:
	// server: mcpx
	// echo: hello
}
