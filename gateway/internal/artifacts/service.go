// Package artifacts is the gateway's artifact room: what a client may
// read of the store and how it reads it. The engine's results are
// transformed here for a caller, and the artifacts they store join those
// its session was shown; the artifact tools (artifacts_query,
// artifacts_search, tools.go), the artifacts as MCP resources
// (mcpx://artifacts/{id}, resources.go) and the rewriting of a call's
// arguments that name artifacts (args.go) all read through one access
// rule (access.go). A Service holds no state of its own beyond what it
// was built with; a Reader says who asks.
package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
)

// Service reads, lists and stores artifacts for the gateway's clients.
type Service struct {
	eng    *engine.Engine
	st     store.Store
	linker engine.Linker // nil: no download URLs
	mem    *membudget.Budget
	o      config.ArtifactToolsOptions // defaults applied
	log    hclog.Logger
}

// Options are what a Service is built from.
type Options struct {
	Engine *engine.Engine
	Store  store.Store
	// Linker makes download URLs; nil: none.
	Linker engine.Linker
	// Memory is the process's work memory, which queries reserve from.
	Memory *membudget.Budget
	// Tools configure the artifact tools, defaults applied.
	Tools config.ArtifactToolsOptions
	Log   hclog.Logger
}

// New returns the Service of o.
func New(o Options) *Service {
	return &Service{eng: o.Engine, st: o.Store, linker: o.Linker, mem: o.Memory, o: o.Tools, log: o.Log}
}

// Shown are the artifacts a session was shown or handed; an argument
// that names an artifact by id is looked for among them first. The zero
// value is ready.
type Shown struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// Add records id as shown.
func (sh *Shown) Add(id string) {
	sh.mu.Lock()
	if sh.ids == nil {
		sh.ids = map[string]struct{}{}
	}
	sh.ids[id] = struct{}{}
	sh.mu.Unlock()
}

// Has reports whether id was shown.
func (sh *Shown) Has(id string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.ids[id]
	return ok
}

// Transform runs the engine over a result for rd: the artifacts it
// stores join those rd's session was shown.
func (s *Service) Transform(ctx context.Context, rd Reader, c engine.Call, raw json.RawMessage) (*engine.Result, error) {
	var start time.Time // for the debug line only
	if s.log.IsDebug() {
		start = time.Now()
	}
	res, err := s.eng.Transform(ctx, c, raw)
	if err != nil {
		if errors.Is(err, engine.ErrBadJSON) {
			return nil, fmt.Errorf("result of %s/%s: %w", c.Server, c.Tool, errors.Join(err, jsonrpc.ErrUpstreamInvalidJSON))
		}
		return nil, fmt.Errorf("transform result of %s/%s: %w", c.Server, c.Tool, err)
	}
	if len(res.Artifacts) > 0 {
		sh := rd.Shown
		sh.mu.Lock()
		if sh.ids == nil {
			sh.ids = map[string]struct{}{}
		}
		for _, a := range res.Artifacts {
			sh.ids[a.ID] = struct{}{}
		}
		sh.mu.Unlock()
		if s.log.IsDebug() {
			s.log.Debug("result transformed", "server", c.Server, "tool", c.Tool, "artifacts", len(res.Artifacts), "bytes_in", len(raw), "bytes_out", len(res.Raw), "dur_ms", float64(time.Since(start).Microseconds())/1000)
		}
	}
	return res, nil
}

// Link sets a ref's download URL when a Linker is configured.
func (s *Service) Link(r engine.ArtifactRef) engine.ArtifactRef {
	if s.linker != nil && r.URL == "" {
		r.URL = s.linker.ArtifactURL(r)
	}
	return r
}

// Instructions is what initialize tells a client of artifacts and the
// tools that read them.
func (s *Service) Instructions() string {
	text := "mcpx stores binary and oversized tool output as artifacts: results then hold {\"artifact\": {...}, \"summary\": \"...\"} and a resource_link whose URI (mcpx://artifacts/ followed by the id) resources/read reads"
	if o := s.o; !o.Disabled {
		text += fmt.Sprintf("; %s reads part of one (lines, grep, a JSON path, jq, a PDF page, an archive entry)", o.QueryName)
		if _, ok := s.st.(store.Searcher); ok {
			text += fmt.Sprintf(" and %s finds lines in all of them", o.SearchName)
		}
	}
	return text
}
