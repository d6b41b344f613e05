// Command embed shows a Go host embedding the mcpx engine: every tool
// result goes through Transform before the model sees it, and base64 blobs
// come out as artifacts in the host's own store. Importing package layers
// registers every layer of the default chain, the WASM ones (custom
// plugins, the built-in presets) included; the host makes the WASM host
// they run on, binds them to it (wasm.Layers) in the engine's registry, and
// closes it after the engine. Without a registry of its own the engine's
// WASM layers make a host on first need and close it with the engine.
//
//	go run ./examples/embed
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	_ "github.com/mcpx-dev/mcpx/layers" // registers every layer of the default chain
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// run transforms one Tableau-like tool result and reports what the model
// gets instead of the PDF.
func run(w io.Writer) error {
	ctx := context.Background()
	st := memstore.New(memstore.Config{}) // or fsstore.Open(ctx, dir, fsstore.Config{})
	defer st.Close(ctx)
	// One WASM host serves every server and tool: the built-in presets
	// (tableau, github) and any plugin the config names, e.g.
	// Config.Layers["custom"] = {"plugins": ["x.wasm"]}.
	host, err := wasm.NewHost(ctx, wasm.HostOptions{Presets: plugins.Catalog()})
	if err != nil {
		return err
	}
	defer host.Close(ctx) // runs after the engine's Close, deferred below

	// The default chain, every layer with its defaults; custom and presets
	// run on host.
	reg := layer.DefaultRegistry().With(wasm.Layers(host)...)
	eng, err := engine.New(engine.Options{Store: st, Registry: reg})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)

	raw := toolResult()
	res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, raw)
	if err != nil {
		return err
	}
	for _, ref := range res.Artifacts {
		fmt.Fprintf(w, "artifact: %s (%s, %d bytes)\n", ref.ID, ref.MIMEType, ref.SizeBytes)
	}
	summary, err := summaryOf(res.Raw)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "summary: %s\n", summary)
	fmt.Fprintf(w, "result: %d bytes in, %d bytes to the model\n", len(raw), len(res.Raw))
	return nil
}

// toolResult is what Tableau's download_workbook returns: a JSON object,
// serialized into a text block, holding the workbook as a base64 PDF.
func toolResult() []byte {
	var pdf bytes.Buffer
	pdf.WriteString("%PDF-1.4\n")
	for i := 0; pdf.Len() < 2000; i++ {
		fmt.Fprintf(&pdf, "%% row %03d: revenue %d\n", i, i*7919)
	}
	pdf.WriteString("%%EOF\n")
	payload, _ := json.Marshal(map[string]string{"name": "Sales", "content": base64.StdEncoding.EncodeToString(pdf.Bytes())})
	raw, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(payload)}}})
	return raw
}

// summaryOf digs the summary that replaced the PDF out of the rewritten
// result: content[0].text is the payload, whose "content" is now
// {"artifact": {...}, "summary": "..."}.
func summaryOf(raw []byte) (string, error) {
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("unexpected result %s: %w", raw, err)
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("unexpected result %s: no content", raw)
	}
	var payload struct {
		Content struct{ Summary string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &payload); err != nil {
		return "", fmt.Errorf("unexpected payload %s: %w", res.Content[0].Text, err)
	}
	return payload.Content.Summary, nil
}
