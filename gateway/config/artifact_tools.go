package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/store"
)

// Defaults of ArtifactToolsOptions.
const (
	DefaultQueryToolName         = engine.DefaultQueryTool
	DefaultSearchToolName        = engine.DefaultSearchTool
	DefaultArtifactAnswerChars   = 10000
	DefaultArtifactQueryTimeout  = 5 * time.Second
	DefaultArtifactSearchTimeout = 30 * time.Second
	DefaultArtifactQueryMemory   = 256 << 20
	DefaultSearchHits            = 10
	DefaultMaxSearchHits         = 50
	DefaultMaxResourceTextBytes  = 1 << 20
	DefaultArtifactJSONDepth     = query.DefaultMaxDepth
	DefaultArtifactExprChars     = query.DefaultMaxExprChars
	DefaultMaxSearchQueryChars   = 1000
	DefaultMaxSearchTerms        = 32
)

// ArtifactToolsOptions configure the artifact tools and how resources/read
// returns a text artifact (config: serve.artifact_tools). The zero value
// means every default.
type ArtifactToolsOptions struct {
	// Disabled leaves artifacts_query and artifacts_search out of
	// tools/list. Defaults to false: both are offered (search only when
	// the store is a store.Searcher, as the fsstore and memstore are).
	Disabled bool `json:"disabled,omitempty"`
	// QueryName is the query tool's name. Defaults to
	// DefaultQueryToolName ("artifacts_query").
	QueryName string `json:"query_name,omitempty"`
	// SearchName is the search tool's name. Defaults to
	// DefaultSearchToolName ("artifacts_search").
	SearchName string `json:"search_name,omitempty"`
	// MaxChars caps the text of one answer of either tool (a call's
	// max_chars may only lower it); what is cut is named with how to ask
	// for the rest. It is also the tool definitions' _meta
	// "anthropic/maxResultSizeChars". Defaults to
	// DefaultArtifactAnswerChars (10,000).
	MaxChars int `json:"max_chars,omitempty"`
	// Timeout bounds one query: a jq program that loops stops here (and
	// when its caller leaves), with a tool error that says so. Defaults
	// to DefaultArtifactQueryTimeout (5 s).
	Timeout store.Duration `json:"timeout,omitempty"`
	// SearchTimeout bounds one search, its wait for the store to index
	// what was just stored included (seconds for a large result on a
	// busy machine); past it the search stops with a tool error that says
	// so. Defaults to DefaultArtifactSearchTimeout (30 s).
	SearchTimeout store.Duration `json:"search_timeout,omitempty"`
	// MaxMemory bounds what one query may hold, reserved from the
	// process's serve.limits.max_work_bytes before it allocates: a jq
	// program runs in a child process whose memory the kernel caps at
	// it (its heap reserved up front, the kernel's address-space limit
	// over it with 128 MiB for its threads and tables; measured, its peak
	// RSS stays under the cap); JSON a json or jq query reads may be a
	// quarter of it. Defaults
	// to DefaultArtifactQueryMemory (256 MiB).
	MaxMemory int64 `json:"max_memory,omitempty"`
	// MaxJSONDepth is how deep a JSON artifact may nest for a json path
	// query; a deeper one is refused with its depth (ask lines or grep).
	// Defaults to DefaultArtifactJSONDepth (10,000).
	MaxJSONDepth int `json:"max_json_depth,omitempty"`
	// MaxExprChars is the longest json path, jq program or grep
	// expression a query takes. Defaults to DefaultArtifactExprChars
	// (4,096).
	MaxExprChars int `json:"max_expr_chars,omitempty"`
	// MaxSearchHits caps a search's "limit". Defaults to
	// DefaultMaxSearchHits (50); a search without one returns
	// DefaultSearchHits (10).
	MaxSearchHits int `json:"max_search_hits,omitempty"`
	// MaxSearchQueryChars is the longest search query, in bytes.
	// Defaults to DefaultMaxSearchQueryChars (1,000).
	MaxSearchQueryChars int `json:"max_search_query_chars,omitempty"`
	// MaxSearchTerms is the most words and "quoted phrases" one search
	// takes: each costs a pass over the index. Defaults to
	// DefaultMaxSearchTerms (32).
	MaxSearchTerms int `json:"max_search_terms,omitempty"`
	// MaxResourceTextBytes caps the text a resources/read of a text
	// artifact returns (text/*, JSON, XML, YAML that is valid UTF-8: as
	// "text", never a base64 "blob"). A larger one returns its first
	// bytes (cut at a line end, else a character) and says in the
	// content's _meta "mcpx/cut" how to read the rest. Defaults to
	// DefaultMaxResourceTextBytes (1 MiB).
	MaxResourceTextBytes int64 `json:"max_resource_text_bytes,omitempty"`
}

// WithDefaults fills what is unset.
func (o ArtifactToolsOptions) WithDefaults() ArtifactToolsOptions {
	if o.QueryName == "" {
		o.QueryName = DefaultQueryToolName
	}
	if o.SearchName == "" {
		o.SearchName = DefaultSearchToolName
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultArtifactAnswerChars
	}
	if o.Timeout <= 0 {
		o.Timeout = store.Duration(DefaultArtifactQueryTimeout)
	}
	if o.SearchTimeout <= 0 {
		o.SearchTimeout = store.Duration(DefaultArtifactSearchTimeout)
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = DefaultArtifactQueryMemory
	}
	if o.MaxJSONDepth <= 0 {
		o.MaxJSONDepth = DefaultArtifactJSONDepth
	}
	if o.MaxExprChars <= 0 {
		o.MaxExprChars = DefaultArtifactExprChars
	}
	if o.MaxSearchHits <= 0 {
		o.MaxSearchHits = DefaultMaxSearchHits
	}
	if o.MaxSearchQueryChars <= 0 {
		o.MaxSearchQueryChars = DefaultMaxSearchQueryChars
	}
	if o.MaxSearchTerms <= 0 {
		o.MaxSearchTerms = DefaultMaxSearchTerms
	}
	if o.MaxResourceTextBytes <= 0 {
		o.MaxResourceTextBytes = DefaultMaxResourceTextBytes
	}
	return o
}

// Validate checks the options.
func (o ArtifactToolsOptions) Validate() error {
	for _, n := range []string{o.QueryName, o.SearchName} {
		if n != "" && !validToolName(n) {
			return fmt.Errorf("artifact_tools: tool name %q: want 1-64 characters of A-Z a-z 0-9 . _ -", n)
		}
	}
	if o.QueryName != "" && o.QueryName == o.SearchName {
		return fmt.Errorf("artifact_tools: query_name and search_name are both %q", o.QueryName)
	}
	if o.MaxChars < 0 || o.Timeout < 0 || o.SearchTimeout < 0 || o.MaxMemory < 0 || o.MaxJSONDepth < 0 || o.MaxExprChars < 0 || o.MaxSearchHits < 0 ||
		o.MaxSearchQueryChars < 0 || o.MaxSearchTerms < 0 || o.MaxResourceTextBytes < 0 {
		return errors.New("artifact_tools: limits must not be negative")
	}
	return nil
}

// validToolName reports whether n is a tool name MCP clients accept.
func validToolName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
