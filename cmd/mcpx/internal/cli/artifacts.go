package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

var lsCmd = command{
	name:     "artifacts ls",
	brief:    "list the stored artifacts",
	synopsis: "[--config FILE] [--store DIR] [--scope FIELD=VALUE]... [--json]",
	about: `
Ls lists the stored artifacts, oldest first, as a table: ID, MIME type,
SIZE, FILENAME, SOURCE (server/tool), CREATED, LAST ACCESS (the last read
or put, local time) and EXPIRES (when mcpx serve or wrap on this store
removes it, as their UI shows it: by the config's store.retention ttl,
else by their default of 1h; "-" with a ttl of 0). --scope keeps the
artifacts put under a session, trace, user or tenant (repeat it to
require several). With --json
it writes one ArtifactRef JSON object per line instead, the same object
transform puts in the output, with last_access and expires_at added. Rows
are written as the store reads them: the first at once, then a page at a
time (the table aligns its first 10 rows, then each page, and a column
never narrows), so memory stays that of a page whatever the store
holds. Ls opens the store
read-only: it changes nothing, and works on a folder this user cannot
write.`,
	example: `
mcpx artifacts ls
mcpx artifacts ls --scope session=3f2a9c
mcpx artifacts ls --json | jq -r 'select(.mime_type == "application/pdf") | .id'`,
}

// scopeFlag is a repeatable --scope FIELD=VALUE.
type scopeFlag struct{ store.Scope }

func (f *scopeFlag) String() string { return "" }

func (f *scopeFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || val == "" {
		return fmt.Errorf("want FIELD=VALUE, such as session=3f2a9c")
	}
	switch k {
	case "session":
		f.SessionID = val
	case "trace":
		f.TraceID = val
	case "user":
		f.UserID = val
	case "tenant":
		f.TenantID = val
	default:
		return fmt.Errorf("unknown scope field %q: want session, trace, user or tenant", k)
	}
	return nil
}

// lsFirstBlock is how many rows the table of ls aligns before the first
// of it is written: enough for the columns to settle, few enough to read
// in a fraction of a page.
const lsFirstBlock = 10

// lsEntry is one line of ls --json.
type lsEntry struct {
	engine.ArtifactRef
	LastAccess *time.Time `json:"last_access,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// runArtifactsLs is "mcpx artifacts ls".
func (p program) runArtifactsLs(args []string, stdout, stderr io.Writer) int {
	c := lsCmd
	fs := newFlagSet(c)
	var (
		o      common
		asJSON bool
		scope  scopeFlag
	)
	o.register(fs, p.stores)
	o.readOnly = true
	fs.BoolVar(&asJSON, "json", false, "write one ArtifactRef JSON object per line")
	fs.Var(&scope, "scope", "list only the artifacts put under `FIELD=VALUE` (session=, trace=, user=, tenant=)")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, c, fmt.Errorf("unexpected argument %q", pos[0]))
	}
	if asJSON {
		// encoding/json builds a type's encoder by reflection on its
		// first use: build lsEntry's beside the store's opening rather
		// than before the first line.
		go func() { _, _ = json.Marshal(lsEntry{}) }()
	}
	ctx := context.Background()
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	st, err := o.openStore(ctx, cfg, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer st.Close(ctx)
	// The expiry is the gateway's, as its UI shows it: serve and wrap
	// collect by the default policy (a 1h TTL) when the config has no
	// store.retention section, where the CLI's own policy keeps
	// everything and would say "-" for an artifact due to go.
	policy := cfg.Store.RetentionFor(true)

	bw := bufio.NewWriterSize(stdout, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	tw := tabwriter.NewWriter(bw, 0, 8, 2, ' ', 0)
	var cols widths
	if !asJSON {
		cols.row(tw, "ID", "MIME", "SIZE", "FILENAME", "SOURCE", "CREATED", "LAST ACCESS", "EXPIRES")
	}
	const stamp = "2006-01-02 15:04:05"
	// flush writes what is buffered: the table's block so far aligned.
	flush := func() error {
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return nil
	}
	rows := 0
	row := func(r store.Ref, la time.Time) error {
		rows++
		exp := policy.Expiry(r.Created, la)
		if asJSON {
			e := lsEntry{ArtifactRef: engine.RefFromStore(r), LastAccess: &la}
			if !exp.IsZero() {
				e.ExpiresAt = &exp
			}
			if err := enc.Encode(e); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			// The first line goes out as soon as the store yields it,
			// as soon as on an empty store; the rest a page at a time.
			if rows == 1 {
				return flush()
			}
			return nil
		}
		expires := "-"
		if !exp.IsZero() {
			expires = exp.Local().Format(stamp)
		}
		if err := cols.row(tw, cell(r.ID), cell(r.MIMEType), humanize.Bytes(r.SizeBytes), cell(r.Filename),
			cell(r.Source.Call()), r.Created.Local().Format(stamp), la.Local().Format(stamp), expires); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		// The table's first block is its first lsFirstBlock rows, so that
		// its head is on screen about as soon as on an empty store; then
		// a block per page.
		if rows == lsFirstBlock {
			return flush()
		}
		return nil
	}
	for cursor := ""; ; {
		next, err := st.EachAccess(ctx, scope.Scope, cursor, store.OldestFirst, row)
		if err != nil {
			return fail(stderr, c, err)
		}
		// One page at a time: the table aligns within a page, memory
		// stays that of a page whatever the store holds, and each page
		// reaches the reader as soon as it is read.
		if err := flush(); err != nil {
			return fail(stderr, c, err)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return exitOK
}

// widths keeps the widest cell of each column of ls's table so far. The
// table is aligned a block at a time (tabwriter, flushed per block); a
// cell padded to its column's width so far keeps a later block's columns
// from being narrower than an earlier one's.
type widths []int

// row writes cells as one tab-separated row to w, each padded to the
// widest cell its column has had.
func (ws *widths) row(w io.Writer, cells ...string) error {
	if len(*ws) < len(cells) {
		*ws = append(*ws, make([]int, len(cells)-len(*ws))...)
	}
	var b strings.Builder
	for i, c := range cells {
		n := utf8.RuneCountInString(c)
		(*ws)[i] = max((*ws)[i], n)
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		b.WriteString(strings.Repeat(" ", (*ws)[i]-n))
		b.WriteByte('\t')
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes a table cell of s: "-" when empty, and no control
// characters, since file names and MIME types come from upstream servers.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
}

var getCmd = command{
	name:     "artifacts get",
	brief:    "write an artifact's bytes to stdout or a file",
	synopsis: "[--config FILE] [--store DIR] [-o FILE] ID",
	about: `
Get writes the exact bytes of artifact ID to stdout, or to FILE with -o.
FILE is written whole or not at all: the bytes go to a temporary file in the
same folder, which is then renamed over FILE. Get opens the store
read-only.`,
	example: `
mcpx artifacts get -o sales.pdf tableau_1a2b3c4d5e6f
mcpx artifacts get tableau_1a2b3c4d5e6f | file -`,
}

// runArtifactsGet is "mcpx artifacts get".
func (p program) runArtifactsGet(args []string, stdout, stderr io.Writer) int {
	c := getCmd
	fs := newFlagSet(c)
	var (
		o   common
		out string
	)
	o.register(fs, p.stores)
	o.readOnly = true
	fs.StringVar(&out, "o", "", "write the bytes to `FILE` instead of stdout (\"-\" is stdout)")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, c, fmt.Errorf("want one artifact ID, got %d arguments", len(pos)))
	}
	id := pos[0]
	if !store.ValidID(id) {
		return fail(stderr, c, invalidID(id))
	}
	ctx := context.Background()
	st, code := o.open(ctx, c, stderr)
	if st == nil {
		return code
	}
	defer st.Close(ctx)

	rc, ref, err := st.Get(ctx, id, nil)
	if err != nil {
		return fail(stderr, c, describe(err, id, st))
	}
	defer rc.Close()
	if out == "" || out == "-" {
		n, err := io.Copy(stdout, rc)
		if err == nil && n != ref.SizeBytes {
			err = fmt.Errorf("read %d bytes, the store lists %d", n, ref.SizeBytes)
		}
		if err != nil {
			return fail(stderr, c, fmt.Errorf("artifact %s: %w", id, err))
		}
		return exitOK
	}
	if err := writeFileAtomic(out, rc, ref.SizeBytes); err != nil {
		return fail(stderr, c, fmt.Errorf("artifact %s: %w", id, err))
	}
	return exitOK
}

// writeFileAtomic writes size bytes from r to path through a temporary file
// in the same folder, synced and then renamed over path, so path never
// holds a partial artifact. The new file's mode is 0666 less the umask.
func writeFileAtomic(path string, r io.Reader, size int64) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var tmp *os.File
	for range 10 {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return err
		}
		name := filepath.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+".tmp")
		tmp, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, r)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if n != size {
		return fmt.Errorf("read %d bytes, the store lists %d", n, size)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

var rmCmd = command{
	name:     "artifacts rm",
	brief:    "delete artifacts",
	synopsis: "[--config FILE] [--store DIR] ID...",
	about: `
Rm deletes the named artifacts from the store. Bytes shared with an
artifact that is kept stay stored. Deleting an ID that is not stored is an
error (exit code 1); the other IDs are still deleted.`,
	example: `
mcpx artifacts rm tableau_1a2b3c4d5e6f
mcpx artifacts ls --json | jq -r .id | xargs mcpx artifacts rm`,
}

// runArtifactsRm is "mcpx artifacts rm".
func (p program) runArtifactsRm(args []string, stdout, stderr io.Writer) int {
	c := rmCmd
	fs := newFlagSet(c)
	var o common
	o.register(fs, p.stores)
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return usageError(stderr, c, errors.New("want at least one artifact ID"))
	}
	ctx := context.Background()
	st, code := o.open(ctx, c, stderr)
	if st == nil {
		return code
	}
	defer st.Close(ctx)

	code = exitOK
	for _, id := range pos {
		if !store.ValidID(id) {
			code = fail(stderr, c, invalidID(id))
			continue
		}
		if err := st.Delete(ctx, id); err != nil {
			code = fail(stderr, c, describe(err, id, st))
		}
	}
	return code
}

// open sets up logging and opens the store for an artifacts subcommand; on
// failure it prints the error and returns a nil store and the exit code.
func (o *common) open(ctx context.Context, c command, stderr io.Writer) (artifactStore, int) {
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return nil, fail(stderr, c, err)
	}
	st, err := o.openStore(ctx, cfg, log)
	if err != nil {
		return nil, fail(stderr, c, err)
	}
	return st, exitOK
}

// invalidID is the error for an argument that is not an artifact id. It
// shows the argument quoted and cut short (store.QuoteID): a pasted
// document must not come back whole on the terminal.
func invalidID(id string) error {
	return fmt.Errorf("%s is not an artifact id (ids look like tableau_1a2b3c4d5e6f; see 'mcpx artifacts ls'): %w",
		store.QuoteID(id), store.ErrInvalidID)
}

// describe words the store errors a user meets by mistyping an id.
func describe(err error, id string, st artifactStore) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w (store %s; see 'mcpx artifacts ls')", err, storeWhere(st))
	case errors.Is(err, store.ErrInvalidID):
		return fmt.Errorf("%w (ids look like tableau_1a2b3c4d5e6f; see 'mcpx artifacts ls')", err)
	}
	return err
}
