package gateway

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/schema"
	"github.com/mcpx-dev/mcpx/gateway/internal/schema/schematest"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

// hostileSchemaEnv makes the test binary a stdio MCP server whose tools
// declare hostile outputSchemas: see runHostileSchemaStub.
const hostileSchemaEnv = "MCPX_GATEWAY_TEST_HOSTILE_SCHEMA"

func init() {
	// Before TestMain: this stub is its own program.
	if os.Getenv(hostileSchemaEnv) != "" {
		runHostileSchemaStub()
		os.Exit(0)
	}
}

// The outputSchemas of the hostile stub's tools; each answers
// structuredContent {"image": <a 256 KiB PNG in base64>}, which the
// engine moves out, so the rewritten result is validated.
var hostileSchemas = map[string]string{
	"selfref": `{"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"object"}]}}}`,
	"fanout5": schematest.FanOut(5),
	"fanout6": schematest.FanOut(6),
	// ordinary recursion that descends: validated as usual
	"tree": `{"$defs":{"n":{"type":"object","properties":{"image":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`,
}

func runHostileSchemaStub() {
	image := bigImageB64(256 << 10)
	serveStub(func(r stubRequest) {
		switch r.method() {
		case "initialize":
			r.result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile-schema","version":"1"}}`)
		case "tools/list":
			var tools []string
			for name, schema := range hostileSchemas {
				tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object"},"outputSchema":`+schema+`}`)
			}
			tools = append(tools, `{"name":"ping","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}`)
			r.result(`{"tools":[` + strings.Join(tools, ",") + `]}`)
		case "tools/call":
			if gjson.GetBytes(r.line, "params.name").String() == "ping" {
				r.result(`{"content":[{"type":"text","text":"pong"}],"structuredContent":{"pong":true}}`)
				return
			}
			r.result(`{"content":[{"type":"text","text":"a screenshot"}],"structuredContent":{"image":"` + image + `"}}`)
		default:
			r.notFound()
		}
	})
}

// A self-referential outputSchema killed the gateway with a
// stack overflow, and one that fans out took 45 s and 7 GB (with six
// branches, the kernel's OOM killer). Each call now answers within
// seconds with the schema fallback (the image's place holds a
// placeholder and its reference is in content and _meta), the warning is
// logged, and the gateway goes on serving.
func TestHostileOutputSchemas(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{"h": {Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{hostileSchemaEnv: "1"}}},
		Logger:  hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Warn}),
	})
	c := connect(t, g)
	for _, tool := range []string{"selfref", "fanout5", "fanout6"} {
		start := time.Now()
		res := c.result("tools/call", toolCall(tool, ""))
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: answered in %v", tool, d)
		}
		uri := res.Get(`_meta.mcpx/artifacts.0.artifact.uri`).String()
		if !strings.HasPrefix(uri, "mcpx://artifacts/") || res.Get(`_meta.mcpx/artifacts.0.path`).String() != "structuredContent.image" {
			t.Fatalf("%s: no reference to the moved image in _meta: %.600s", tool, res.Raw)
		}
		if img := res.Get("structuredContent.image"); len(img.Raw) > 1024 || strings.Contains(img.Raw, "iVBOR") {
			t.Errorf("%s: structuredContent.image = %.200s, want the placeholder", tool, img.Raw)
		}
		if !strings.Contains(res.Get("content").Raw, uri) {
			t.Errorf("%s: content does not name %s: %s", tool, uri, res.Get("content").Raw)
		}
		if pong := c.result("tools/call", toolCall("ping", "")); !pong.Get("structuredContent.pong").Bool() {
			t.Fatalf("after %s: %s", tool, pong.Raw)
		}
	}
	for _, want := range []string{schema.ErrCycle.Error(), "limits.max_schema_nodes", "not validated"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%.3000s", want, log.String())
		}
	}
	// The descending recursion is validated as usual: the image's place
	// is typed as a string, and the summary naming the artifact fits.
	res := c.result("tools/call", toolCall("tree", ""))
	// (A fallback would add a text block naming the image; the full ref
	// is in _meta either way.)
	if img := res.Get("structuredContent.image").String(); !strings.Contains(img, "mcpx://artifacts/") || len(res.Get("content").Array()) != 1 || res.Get(`_meta.mcpx/artifacts.0.path`).String() != "structuredContent.image" {
		t.Fatalf("tree: structuredContent.image = %.200q, want the summary in place and no fallback; %.600s", img, res.Raw)
	}
	_ = g.Close(context.Background())
}
