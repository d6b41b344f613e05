package store_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
)

// The per-user limits are read from the config, defaulted, refused when
// negative and carried by a put under strategy none.
func TestRetentionUserLimits(t *testing.T) {
	p := store.DefaultRetention()
	if p.MaxUserBytes != store.DefaultMaxUserBytes || p.MaxArtifactsPerUser != store.DefaultMaxArtifactsPerUser ||
		p.MaxUserBytes < p.MaxSessionBytes || p.MaxArtifactsPerUser < p.MaxArtifactsPerSession {
		t.Errorf("default policy %+v: want user limits of at least a session's", p)
	}
	if err := json.Unmarshal([]byte(`{"max_user_bytes": 1000, "max_artifacts_per_user": 3, "strategy": "none"}`), &p); err != nil {
		t.Fatal(err)
	}
	if q := p.PutQuota(); q.MaxUserBytes != 1000 || q.MaxArtifactsPerUser != 3 {
		t.Errorf("quota %+v, want the user limits", q)
	}
	for field, r := range map[string]store.Retention{
		"max_user_bytes":         {MaxUserBytes: -1},
		"max_artifacts_per_user": {MaxArtifactsPerUser: -1},
	} {
		if err := r.Check(); err == nil || err.Error() != field+" is negative" {
			t.Errorf("Check of a negative %s: %v", field, err)
		}
	}
}
