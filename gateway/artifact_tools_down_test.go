package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// With every upstream failed to start, tools/list was empty
// (the routes were built only when an upstream came up), so the artifacts
// the store still holds could not be queried or searched.
func TestArtifactToolsWhenEveryUpstreamIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	text := "first line\nthe needle is here [ref=e42]\nlast line\n"
	ref, err := st.Put(ctx, strings.NewReader(text), store.PutOptions{Namespace: "earlier", MIMEType: "text/plain; charset=utf-8", Filename: "snapshot.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Annotate(ctx, ref.ID, nil, []store.TextPart{{Place: "line 1", Text: text}}); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-server")
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{
			"a": {Command: missing},
			"b": {Command: missing, Args: []string{"--flag"}},
		},
		Engine:          engine.Options{Store: st},
		StdioReadsStore: true,
		StartWait:       time.Second,
	})
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	g.WaitReady(wctx)
	cancel()
	for _, s := range g.Status() {
		if s.State == "ready" {
			t.Fatalf("upstream %s is ready; want every upstream down: %+v", s.Name, g.Status())
		}
	}
	c := connect(t, g)
	var names []string
	for _, tool := range c.result("tools/list", "{}").Get("tools").Array() {
		names = append(names, tool.Get("name").String())
	}
	if strings.Join(names, ",") != config.DefaultQueryToolName+","+config.DefaultSearchToolName {
		t.Fatalf("tools/list with every upstream down: %v, want the artifact tools", names)
	}
	q := c.result("tools/call", toolCall(config.DefaultQueryToolName, `{"id":"`+ref.ID+`","grep":"needle"}`))
	if q.Get("isError").Bool() || !strings.Contains(q.Get("content.0.text").String(), "[ref=e42]") {
		t.Errorf("%s grep: %s", config.DefaultQueryToolName, q.Raw)
	}
	s := c.result("tools/call", toolCall(config.DefaultSearchToolName, `{"query":"needle"}`))
	if s.Get("isError").Bool() || !strings.Contains(s.Raw, ref.ID) || !strings.Contains(s.Raw, "needle") {
		t.Errorf("%s: %s", config.DefaultSearchToolName, s.Raw)
	}
}
