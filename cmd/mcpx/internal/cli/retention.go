package cli

// Retention in mcpx serve and mcpx wrap: the policy applied to the engine,
// the background collector and the drop of a closed session's artifacts.

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
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

// collectInterval is how often the gateway's collector applies the
// retention policy (and once at start).
const collectInterval = time.Minute

// maxRemovalsLogged is how many removed ids one collection logs by name;
// the rest are counted.
const maxRemovalsLogged = 20

// applyRetention sets gwo's OnSessionEnd to drop a closed session's
// artifacts under drop_on_session_end (the CLI applied policy's put-time
// rules to the engine).
func applyRetention(policy store.Retention, st store.Store, gwo *gateway.Options, log hclog.Logger) {
	c, ok := st.(store.Collector)
	if !ok || !policy.DropOnSessionEnd {
		return
	}
	gwo.OnSessionEnd = func(id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := c.DropScope(ctx, store.Scope{SessionID: id})
		if err != nil {
			log.Warn("could not drop the artifacts of a closed session", "session", id, "error", err)
			return
		}
		if rep.Count > 0 {
			log.Info("dropped the artifacts of a closed session", "session", id, "count", rep.Count, "bytes", rep.Bytes)
		}
	}
}

// runCollector applies policy to st now and every collectInterval until
// ctx ends, logging what it removed and handing each removal to each
// (the HTTP API's artifact_evicted events; may be nil).
func runCollector(ctx context.Context, st store.Store, policy store.Retention, log hclog.Logger, each func(store.Removal)) {
	c, ok := st.(store.Collector)
	if !ok || policy == (store.Retention{DropOnSessionEnd: policy.DropOnSessionEnd, Strategy: policy.Strategy}) {
		return // nothing to collect
	}
	t := time.NewTicker(collectInterval)
	defer t.Stop()
	for {
		collectOnce(ctx, c, policy, log, each)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func collectOnce(ctx context.Context, c store.Collector, policy store.Retention, log hclog.Logger, each func(store.Removal)) {
	var ids []string
	rep, err := c.Collect(ctx, policy, store.CollectOptions{Each: func(r store.Removal) {
		if each != nil {
			each(r)
		}
		if len(ids) < maxRemovalsLogged {
			ids = append(ids, r.ID+" ("+r.Why+")")
		}
	}})
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("retention: gc failed", "error", err)
		}
		return
	}
	if rep.Count > 0 {
		log.Info("removed artifacts", "count", rep.Count, "bytes", rep.Bytes, "ids", ids)
	}
}
