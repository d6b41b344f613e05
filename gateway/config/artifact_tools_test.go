package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

func TestArtifactToolsDefaults(t *testing.T) {
	o := ArtifactToolsOptions{}.WithDefaults()
	if o.Timeout != store.Duration(5*time.Second) || o.SearchTimeout != store.Duration(30*time.Second) || o.MaxMemory != 256<<20 || o.MaxJSONDepth != 10_000 || o.MaxExprChars != 4096 ||
		o.MaxSearchQueryChars != 1000 || o.MaxSearchTerms != 32 || o.MaxSearchHits != 50 {
		t.Errorf("defaults: %+v", o)
	}
	for name, o := range map[string]ArtifactToolsOptions{
		"search_timeout":         {SearchTimeout: -1},
		"max_json_depth":         {MaxJSONDepth: -1},
		"max_expr_chars":         {MaxExprChars: -1},
		"max_search_query_chars": {MaxSearchQueryChars: -1},
		"max_search_terms":       {MaxSearchTerms: -1},
	} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%s -1: %v", name, err)
		}
	}
}
