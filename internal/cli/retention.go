package cli

// Retention in mcpx serve and mcpx wrap: the policy applied to the engine,
// the background collector and the drop of a closed session's artifacts.

import (
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// engineRetention makes an engine follow policy's put-time rules: no
// artifact over max_artifact_bytes is stored (the pipeline's own cap
// applies when lower), and under strategy none a session's or trace's
// quota refuses puts. mcpx transform applies it too.
func engineRetention(policy store.Retention, eo *engine.Options) {
	if m := policy.MaxArtifactBytes; m > 0 && (eo.Config.MaxArtifactBytes <= 0 || eo.Config.MaxArtifactBytes > m) {
		eo.Config.MaxArtifactBytes = m
	}
	eo.Quota = policy.PutQuota()
}
