package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestRefusedValueNote: a value over a store limit is not stored and not
// silently dropped: the result keeps a truncated preview and a note naming
// the limit, and an artifact_refused event says so.
func TestRefusedValueNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, limit, reason string
		opts                func(*engine.Options)
	}{
		{"max_artifact_bytes", "max_artifact_bytes", "it is larger than the store's limit max_artifact_bytes (1.0 kB)",
			func(o *engine.Options) { o.Config.MaxArtifactBytes = 1000 }},
		{"session quota", "max_artifacts_per_session", "this session has reached the store's limit max_artifacts_per_session (1)",
			func(o *engine.Options) {
				o.Quota = store.Retention{MaxArtifactsPerSession: 1, Strategy: store.StrategyNone}.PutQuota()
			}},
		// The value is smaller than the limit: the user's artifacts with
		// it are not.
		{"user quota", "max_user_bytes", "it would take this user's artifacts to 5.2 kB, past the store's limit max_user_bytes (3.0 kB)",
			func(o *engine.Options) {
				o.Quota = store.Retention{MaxUserBytes: 3000, Strategy: store.StrategyNone}.PutQuota()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var events []engine.Event
			st := memstore.New(memstore.Config{})
			switch tc.limit {
			case "max_artifacts_per_session":
				// The session's one artifact is taken already.
				st.Put(context.Background(), strings.NewReader("earlier"), store.PutOptions{Scope: store.Scope{SessionID: "s1"}})
			case "max_user_bytes":
				// An earlier session's artifact counts for the user.
				st.Put(context.Background(), strings.NewReader(strings.Repeat("x", 2000)), store.PutOptions{Scope: store.Scope{SessionID: "s0"}})
			}
			reg := layer.NewRegistry()
			reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) {
				return fixed{{Path: "text", Action: layer.ActionArtifact, Encoding: layer.EncodingText}}, nil
			}})
			o := engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"test"}},
				Listener: engine.ListenerFunc(func(ev engine.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() })}
			tc.opts(&o)
			eng, err := engine.New(o)
			if err != nil {
				t.Fatal(err)
			}
			text := "BEGIN " + strings.Repeat("a long log line\n", 200)
			in, _ := json.Marshal(map[string]string{"text": text})
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "logs", Scope: store.Scope{SessionID: "s1"}}, in)
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Text struct {
					Artifact engine.ArtifactRef `json:"artifact"`
					Summary  string             `json:"summary"`
					Preview  string             `json:"preview"`
				} `json:"text"`
			}
			if err := json.Unmarshal(res.Raw, &out); err != nil {
				t.Fatalf("%v: %s", err, res.Raw)
			}
			ref := out.Text.Artifact
			if !ref.Truncated || ref.NotStored == nil || ref.NotStored.Limit != tc.limit || ref.SizeBytes != int64(len(text)) {
				t.Fatalf("ref %+v (not stored %+v), want truncated, over %s, %d bytes", ref, ref.NotStored, tc.limit, len(text))
			}
			if ref.NotStored.Reason != tc.reason {
				t.Errorf("reason %q, want %q", ref.NotStored.Reason, tc.reason)
			}
			if !strings.Contains(out.Text.Summary, "NOT stored: "+tc.reason) {
				t.Errorf("summary %q does not say the value was not stored and why", out.Text.Summary)
			}
			if !strings.HasPrefix(out.Text.Preview, "BEGIN a long log line") || len([]rune(out.Text.Preview)) != 500 {
				t.Errorf("preview %d runes: %.40q", len([]rune(out.Text.Preview)), out.Text.Preview)
			}
			if len(res.Artifacts) != 0 || len(res.Failures) != 0 {
				t.Errorf("artifacts %v, failures %v", res.Artifacts, res.Failures)
			}
			if ok, _ := st.Exists(context.Background(), ref.ID); ok {
				t.Error("the refused value is stored")
			}
			if len(events) != 1 || events[0].Type != engine.EventArtifactRefused || events[0].Artifact.NotStored.Limit != tc.limit {
				t.Errorf("events %+v", events)
			}
		})
	}
}
