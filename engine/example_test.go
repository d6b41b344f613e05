package engine_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A Tableau download_workbook result carries a base64 PDF inside JSON. The
// engine stores the PDF and leaves a ref and a summary in its place: here
// the tableau preset's words, then what the engine knows of the bytes, how
// to reference them and how to read further (package layers registers
// every layer of the default chain, the WASM presets included).
func ExampleEngine_Transform() {
	pdf := "%PDF-1.4\n" + strings.Repeat("% a page of the workbook\n", 80)
	result := `{"content":"` + base64.StdEncoding.EncodeToString([]byte(pdf)) + `","name":"Sales Dashboard","format":"pdf"}`

	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st})
	if err != nil {
		panic(err)
	}
	res, err := eng.Transform(context.Background(), engine.Call{Server: "tableau", Tool: "download_workbook"}, []byte(result))
	if err != nil {
		panic(err)
	}
	fmt.Println(gjson.GetBytes(res.Raw, "content.summary"))
	fmt.Println(len(result), "->", len(res.Raw), "bytes")
	// Output:
	// Downloaded workbook 'Sales Dashboard' as PDF — PDF 'Sales Dashboard.pdf' (2.0 kB) is not in this result: it is stored as artifact tableau_9212786b22d1 and can be referenced by that id or as mcpx://artifacts/tableau_9212786b22d1 — ask artifacts_query for page 1, artifacts_search for words
	// 2734 -> 493 bytes
}
