package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// exitDamaged is fsck's exit code when it found damage and was not asked
// to repair it.
const exitDamaged = 3

var fsckCmd = command{
	name:     "artifacts fsck",
	brief:    "check the store for damage, and repair it",
	synopsis: "[--config FILE] [--store DIR] [--repair] [--json]",
	about: `
Fsck checks the store for damage and, with --repair, repairs it. It runs
SQLite's integrity check on the index, reads every blob and hashes it, and
reports:

  index damaged               index.db is not a whole database (damaged,
                              truncated) or missing while blobs exist
  artifacts without a blob    listed, but the bytes are gone or the wrong size
  blobs no artifact holds     bytes the index does not mention (lost rows)
  blobs that fail their hash  bytes that no longer match their sha256 name
  damaged journal lines       lines of a not yet adopted index.jsonl (a store
                              of an older mcpx) that fail their checksum

Without --repair nothing is changed; other processes using the store go on
writing meanwhile. --repair needs the store to itself (stop "mcpx serve"
and the like first). It deletes no blob: a damaged index is moved to
lost+found/ and rebuilt from the blobs, artifacts without a blob are
dropped, blobs no artifact holds are listed again as
recovered_<sha256 prefix> (their bytes, sha256 and size survive; their MIME
type, file name, source and session do not), and blobs that fail their hash
move to lost+found/.

Files under tmp/ and blobs/ that the store did not make are listed and left
alone.

Exit codes: 0 when the store is sound, or was repaired; 3 when damage was
found and --repair was not given; 1 when the check could not run (not a
store, in use during --repair, unreadable); 2 for bad flags.`,
	example: `
mcpx artifacts fsck
mcpx artifacts fsck --repair --store ~/.local/share/mcpx/artifacts`,
}

// runArtifactsFsck is "mcpx artifacts fsck".
func (p program) runArtifactsFsck(args []string, stdout, stderr io.Writer) int {
	c := fsckCmd
	fs := newFlagSet(c)
	var (
		o              common
		repair, asJSON bool
	)
	o.register(fs, p.stores)
	fs.BoolVar(&repair, "repair", false, "repair the damage found (needs the store to itself)")
	fs.BoolVar(&asJSON, "json", false, "write the report as one JSON object")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, c, fmt.Errorf("unexpected argument %q", pos[0]))
	}
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	dir, err := o.resolveStoreDir(cfg, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	ctx := context.Background()
	scfg := fsstore.Config{Logger: log.Named("store")}
	check := fsstore.Check
	if repair {
		check = fsstore.Repair
	}
	rep, err := check(ctx, dir, scfg)
	if errors.Is(err, fsstore.ErrBusy) {
		err = fmt.Errorf("%w: stop the mcpx processes that use it, then run --repair again", err)
	}
	if err != nil {
		return fail(stderr, c, err)
	}
	if asJSON {
		out := struct {
			fsstore.Report
			Damaged  bool `json:"damaged"`
			Repaired bool `json:"repaired"`
		}{rep, rep.Damaged(), repair && rep.Damaged()}
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			return fail(stderr, c, fmt.Errorf("write output: %w", err))
		}
	} else if err := writeFsckReport(stdout, rep, repair); err != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", err))
	}
	if rep.Damaged() && !repair {
		return exitDamaged
	}
	return exitOK
}

// writeFsckReport writes rep for a person: one line per finding, then a
// verdict.
func writeFsckReport(w io.Writer, rep fsstore.Report, repaired bool) error {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("store %s: %d artifacts", cell(rep.Dir), rep.Artifacts)
	if rep.IndexDamaged {
		add("index damaged: %s", cell(rep.IndexError))
	}
	if rep.BadLines > 0 {
		add("damaged journal lines: %d", rep.BadLines)
	}
	if rep.TornTail {
		add("torn last journal line")
	}
	for _, id := range rep.Missing {
		add("artifact without a blob: %s", id)
	}
	for _, sum := range rep.Unindexed {
		add("blob no artifact holds: %s", sum)
	}
	for _, sum := range rep.Corrupt {
		add("blob that fails its hash: %s", sum)
	}
	for _, p := range rep.Unknown {
		add("not the store's (left alone): %s", cell(p))
	}
	if rep.Unfinished > 0 || rep.Leftover > 0 {
		add("left by an interrupted process (cleaned up on the next open): %d unfinished puts, %d blobs of deleted artifacts",
			rep.Unfinished, rep.Leftover)
	}
	switch {
	case !rep.Damaged():
		add("no damage found")
	case repaired:
		add("repaired: no blob was deleted; see lost+found/ in the store")
	default:
		add("damage found: run 'mcpx artifacts fsck --repair' to repair it")
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
