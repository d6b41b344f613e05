// Command wasm-go is an example mcpx custom transformer written with the Go
// guest SDK. For a CRM server's export_report tool it moves every
// attachment (base64 in attachments[].data) into the artifact store under
// its own file name, and drops the debug section the model has no use for
// (the host keeps a copy in the store when it is large).
//
// Build it with either compiler:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o wasm-go.wasm ./examples/wasm-go
//	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o wasm-go.wasm ./examples/wasm-go
//
// and run it on a result:
//
//	mcpx plugin test wasm-go.wasm --server crm --tool export_report examples/wasm-go/testdata/export_report.json
package main

import (
	"strconv"
	"strings"

	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
)

func init() { guest.Register(transform) }

func main() {}

func transform(req *guest.Request) (*guest.Response, error) {
	var out guest.Response
	if req.Tool() != "export_report" {
		return &out, nil // leave every other tool alone
	}
	title := req.Payload().Get("report.title").String()
	for _, c := range req.Candidates() {
		// attachments.<n>.data, base64 of a file.
		if c.Target != guest.Payload || !strings.HasPrefix(c.Path, "attachments.") || !strings.HasSuffix(c.Path, ".data") || !c.IsBase64() {
			continue
		}
		n := strings.TrimSuffix(strings.TrimPrefix(c.Path, "attachments."), ".data")
		if _, err := strconv.Atoi(n); err != nil {
			continue
		}
		out.Add(guest.Rewrite{
			Path:     c.Path,
			Action:   guest.Artifact,
			Encoding: guest.Base64,
			Verify:   true, // only files with a known signature
			Filename: "{.name}",
			// The engine appends what the file is, its id and how to read
			// it; the summary says only what the engine cannot know.
			Summary: "Attachment '{.name}' of report '" + title + "'",
		})
	}
	if req.Payload().Get("debug").Exists() {
		out.Add(guest.Rewrite{Path: "debug", Action: guest.Drop})
	}
	guest.Log(guest.LevelDebug, "export_report: "+strconv.Itoa(len(out.Rewrites))+" rewrites")
	return &out, nil
}
