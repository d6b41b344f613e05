// Command quickstart shows mcpx's gateway at work: it calls Tableau's
// download_workbook on the example server directly, then through the
// gateway configured by examples/quickstart/mcpx.json, and prints both
// results' sizes, the artifact id and where to fetch the PDF.
//
//	go run ./examples/quickstart    # from the repository root
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/gateway/config"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

const configPath = "examples/quickstart/mcpx.json"

const (
	initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"quickstart","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	download    = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"download_workbook","arguments":{"workbook_id":"wb-7f3a"}}}`
)

func main() {
	if err := run(os.Stdout, configPath); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run calls the "tableau" server of the config file at path directly,
// then through the gateway. On a new machine each "go run" of the server
// compiles it first, for minutes: the gateway waits for it as its
// mcpx.startup_timeout allows (and logs that it does), so the call
// finds the tool.
func run(out io.Writer, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	servers, pipeline, err := loadConfig(path)
	if err != nil {
		return err
	}
	up := servers["tableau"]

	// 1. The server, called directly.
	fmt.Fprintln(out, "starting the example server (a first \"go run\" compiles it: a minute or more on a new machine)")
	before, err := callDirect(ctx, up)
	if err != nil {
		return fmt.Errorf("direct call: %w", err)
	}
	fmt.Fprintf(out, "before: download_workbook returns %d bytes to the model; the PDF is %d characters of base64 in a text block\n",
		len(before), len(gjson.Get(gjson.GetBytes(before, "result.content.0.text").String(), "content").String()))

	// 2. The same call through the gateway, with the default store.
	dir, why, err := fsstore.DefaultDir()
	if err != nil {
		return err
	}
	if why != "" {
		fmt.Fprintln(out, "store:", why)
	}
	st, err := fsstore.Open(ctx, dir, fsstore.Config{})
	if err != nil {
		return err
	}
	defer st.Close(context.Background())
	// a server still starting past 15 s is logged (a warning) every 5 s
	log := hclog.New(&hclog.LoggerOptions{Name: "mcpx", Level: hclog.Warn, Output: os.Stderr})
	gw, err := gateway.New(gateway.Options{Servers: servers, Engine: engine.Options{Store: st, Config: pipeline}, Logger: log})
	if err != nil {
		return err
	}
	gw.Start(ctx)
	defer gw.Close(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = gw.ServeStdio(ctx, inR, outW); outW.Close() }()
	lines := bufio.NewReaderSize(outR, 1<<20)
	after, err := exchange(inW, lines)
	inW.Close()
	if err != nil {
		return fmt.Errorf("gateway call: %w", err)
	}
	if e := gjson.GetBytes(after, "error"); e.Exists() {
		return fmt.Errorf("gateway call: %s", e.Get("message"))
	}
	text := gjson.GetBytes(after, "result.content.0.text").String()
	ref := gjson.Get(text, "content.artifact")
	fmt.Fprintf(out, "after:  through mcpx the model gets %d bytes:\n        %s\n", len(after), gjson.Get(text, "content.summary").String())
	fmt.Fprintf(out, "artifact %s (%s, %d bytes) is in %s\n", ref.Get("id"), ref.Get("mime_type"), ref.Get("size_bytes").Int(), dir)
	fmt.Fprintf(out, "fetch it: go run ./cmd/mcpx artifacts get -o sales.pdf %s   (or read %s through the gateway)\n", ref.Get("id"), ref.Get("uri"))
	return nil
}

// loadConfig reads the "mcpServers" and "pipeline" sections of the
// configuration file at path, the parts of it this program uses; "mcpx
// serve --config" reads the same file whole (its other sections and
// checks live in the CLI). The file gives the PDF's summary time to read
// the PDF's text (pipeline.inspect.timeout_ms): under mcpx's default
// (250 ms) a machine busy with other work, or a binary built with the
// race detector, ends the summary before the text, and the output would
// not be the one the README shows.
func loadConfig(path string) (map[string]config.ServerConfig, engine.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, engine.Config{}, err
	}
	var file struct {
		MCPServers map[string]config.ServerConfig `json:"mcpServers"`
		Pipeline   engine.Config                  `json:"pipeline"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, engine.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return file.MCPServers, file.Pipeline, nil
}

// callDirect runs the upstream and calls download_workbook on it.
func callDirect(ctx context.Context, up config.ServerConfig) ([]byte, error) {
	cmd := exec.CommandContext(ctx, up.Command, up.Args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	return exchange(in, bufio.NewReaderSize(stdout, 1<<20))
}

// exchange initializes an MCP stdio peer and returns its answer to the
// download call.
func exchange(w io.Writer, r *bufio.Reader) ([]byte, error) {
	werr := make(chan error, 1)
	go func() { // the peer may answer before it has read every line
		for _, msg := range []string{initialize, initialized, download} {
			if _, err := io.WriteString(w, msg+"\n"); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	for {
		select {
		case err := <-werr:
			if err != nil {
				return nil, err
			}
		default:
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		if gjson.GetBytes(line, "id").Int() == 2 {
			return line, nil
		}
	}
}
