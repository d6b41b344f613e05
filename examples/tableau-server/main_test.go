package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// runMainEnv makes the test binary run main: the server under test, as a
// subprocess speaking MCP on stdin/stdout.
const runMainEnv = "TABLEAU_SERVER_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestServer runs main and calls every tool the way an MCP client does.
func TestServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server exited with %v: %s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("server did not exit when stdin closed")
		}
	}()
	lines := make(chan []byte, 4)
	go func() {
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	id := 0
	call := func(method, params string) gjson.Result {
		t.Helper()
		id++
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("%s: server closed stdout: %s", method, stderr.String())
			}
			r := gjson.ParseBytes(line)
			if r.Get("id").Int() != int64(id) || r.Get("error").Exists() {
				t.Fatalf("%s: %s", method, line)
			}
			return r.Get("result")
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer", method)
		}
		return gjson.Result{}
	}
	call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	_, _ = io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	if names := call("tools/list", `{}`).Get("tools.#.name").String(); names != `["download_workbook","get_view_as_image","list_workbooks"]` && names != `["list_workbooks","download_workbook","get_view_as_image"]` {
		t.Errorf("tools: %s", names)
	}
	wbs := gjson.Parse(call("tools/call", `{"name":"list_workbooks","arguments":{}}`).Get("content.0.text").String())
	if wbs.Get("workbooks.#").Int() != 3 || wbs.Get("workbooks.0.id").String() != "wb-7f3a" {
		t.Errorf("list_workbooks: %s", wbs.Raw)
	}
	dl := gjson.Parse(call("tools/call", `{"name":"download_workbook","arguments":{"workbook_id":"wb-7f3a"}}`).Get("content.0.text").String())
	pdf, err := base64.StdEncoding.DecodeString(dl.Get("content").String())
	if err != nil || !bytes.HasPrefix(pdf, []byte("%PDF-")) || !bytes.Equal(pdf, salesPDF) || dl.Get("format").String() != "pdf" {
		t.Errorf("download_workbook: a %d-byte %q..., err %v", len(pdf), pdf[:min(len(pdf), 8)], err)
	}
	img := call("tools/call", `{"name":"get_view_as_image","arguments":{"workbook_id":"wb-19c2"}}`).Get(`content.#(type=="image")`)
	png, _ := base64.StdEncoding.DecodeString(img.Get("data").String())
	if img.Get("mimeType").String() != "image/png" || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("get_view_as_image: %s, %d bytes", img.Get("mimeType"), len(png))
	}
	if !call("tools/call", `{"name":"download_workbook","arguments":{"workbook_id":"nope"}}`).Get("isError").Bool() {
		t.Error("an unknown workbook is not an error result")
	}
}
