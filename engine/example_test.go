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
// the tableau preset's (package layers registers every layer of the default
// chain, the WASM presets included).
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
	// Downloaded workbook 'Sales Dashboard' as PDF (2.0 kB). Artifact: tableau_9212786b22d1
	// 2734 -> 286 bytes
}
