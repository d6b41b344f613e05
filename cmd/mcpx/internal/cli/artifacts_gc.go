package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

var gcCmd = command{
	name:     "artifacts gc",
	brief:    "remove what the retention policy (store.retention) says must go",
	synopsis: "[--config FILE] [--store DIR] [--dry-run] [--json]",
	about: `
Gc applies the retention policy of the config's store.retention section
and prints what it removed, one artifact a line: ID, BYTES and WHY (the
rule: ttl, max_artifact_bytes, max_artifacts_per_session session=ID,
max_session_bytes session=ID, the same per trace, max_artifacts_per_user
and max_user_bytes, each with the tenant= and user= it counted for, or
max_bytes), then a total. Sessions, traces and users are counted per
tenant and user: past one's limit only that principal's scopes of an
artifact go, and an artifact another principal also holds stays (printed
as released, with the scopes that let it go). With lru (the default strategy) an artifact's age is counted from
its last read, with fifo and none from its creation; lru and fifo evict
the least recently used (or oldest) artifacts beyond a limit, none evicts
nothing. Without a store.retention section the CLI keeps everything (mcpx
serve and wrap apply the default policy and collect by themselves every
minute). --dry-run removes nothing and prints what would go. --json writes
one {"id","bytes","why"} object per line ("released" lists the scopes of
a release). Gc is safe while a gateway or
another gc uses the store: an artifact being read stays readable to its
end. Exit code 0 whatever was removed.`,
	example: `
mcpx artifacts gc --config mcpx.json --dry-run
mcpx artifacts gc --store ./artifacts --config mcpx.json --json | jq -s 'map(.bytes) | add'`,
}

// runArtifactsGc is "mcpx artifacts gc".
func (p program) runArtifactsGc(args []string, stdout, stderr io.Writer) int {
	c := gcCmd
	fs := newFlagSet(c)
	var (
		o              common
		dryRun, asJSON bool
	)
	o.register(fs, p.stores)
	fs.BoolVar(&dryRun, "dry-run", false, "remove nothing; print what would be removed")
	fs.BoolVar(&asJSON, "json", false, "write one {\"id\",\"bytes\",\"why\"} JSON object per line")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, c, fmt.Errorf("unexpected argument %q", pos[0]))
	}
	o.readOnly = dryRun
	ctx := context.Background()
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	policy := cfg.Store.RetentionFor(false)
	if cfg.Store.Retention == nil {
		log.Warn("no store.retention in the configuration: nothing is collected (see 'mcpx artifacts gc --help')")
	}
	st, err := o.openStore(ctx, cfg, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer closeStore(ctx, st, log)

	bw := bufio.NewWriterSize(stdout, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var werr error
	released := 0
	rep, err := st.Collect(ctx, policy, store.CollectOptions{DryRun: dryRun, Each: func(r store.Removal) {
		if len(r.Released) > 0 {
			released++
		}
		if asJSON {
			werr = enc.Encode(r)
			return
		}
		why := r.Why
		if n := len(r.Released); n > 0 {
			why += fmt.Sprintf(" (released %d %s: others still hold it)", n, plural(n, "scope", "scopes"))
		}
		_, werr = fmt.Fprintf(bw, "%s\t%d\t%s\n", r.ID, r.Bytes, why)
	}})
	if err != nil {
		return fail(stderr, c, err)
	}
	if !asJSON {
		verb := "removed"
		if dryRun {
			verb = "would remove"
		}
		n := rep.Count - released
		_, werr = fmt.Fprintf(bw, "%s %d %s (%s)", verb, n, plural(n, "artifact", "artifacts"), humanize.Bytes(rep.Bytes))
		if werr == nil && released > 0 {
			_, werr = fmt.Fprintf(bw, ", released %d", released)
		}
		if werr == nil {
			_, werr = fmt.Fprintln(bw)
		}
	}
	if werr == nil {
		werr = bw.Flush()
	}
	if werr != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", werr))
	}
	return exitOK
}
