package main

import (
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
	"unicode"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

const artifactsUsage = `Usage: mcpx artifacts <ls|get|rm|fsck> [flags] [arguments]

Artifacts lists, reads and deletes what "mcpx transform" stored.

Commands:
  ls     list the stored artifacts
  get    write an artifact's exact bytes to stdout or a file
  rm     delete artifacts
  fsck   check the store for damage, and repair it

Run "mcpx artifacts <command> --help" for its flags and an example.
`

// runArtifacts is "mcpx artifacts": it dispatches ls, get and rm.
func runArtifacts(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, artifactsUsage)
		return exitUsage
	}
	switch args[0] {
	case "ls", "list":
		return runArtifactsLs(args[1:], stdout, stderr)
	case "get":
		return runArtifactsGet(args[1:], stdout, stderr)
	case "rm", "delete":
		return runArtifactsRm(args[1:], stdout, stderr)
	case "fsck":
		return runArtifactsFsck(args[1:], stdout, stderr)
	case "query":
		return runArtifactsQuery(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, artifactsUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "mcpx artifacts: unknown command %q\nRun 'mcpx artifacts --help' for the commands.\n", args[0])
	return exitUsage
}

var lsCmd = command{
	name:     "artifacts ls",
	synopsis: "[--config FILE] [--store DIR] [--json]",
	about: `
Ls lists the stored artifacts, oldest first, as a table: ID, MIME type,
SIZE, FILENAME, SOURCE (server/tool) and CREATED (local time). With --json
it writes one ArtifactRef JSON object per line instead, the same object
transform puts in the output. Ls opens the store read-only: it changes
nothing, and works on a folder this user cannot write.`,
	example: `
mcpx artifacts ls
mcpx artifacts ls --json | jq -r 'select(.mime_type == "application/pdf") | .id'`,
}

// runArtifactsLs is "mcpx artifacts ls".
func runArtifactsLs(args []string, stdout, stderr io.Writer) int {
	c := lsCmd
	fs := newFlagSet(c)
	var (
		o      common
		asJSON bool
	)
	o.register(fs)
	o.readOnly = true
	fs.BoolVar(&asJSON, "json", false, "write one ArtifactRef JSON object per line")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, c, fmt.Errorf("unexpected argument %q", pos[0]))
	}
	ctx := context.Background()
	st, code := o.open(ctx, c, stderr)
	if st == nil {
		return code
	}
	defer st.Close(ctx)

	// --json streams page by page; the table needs every row to align.
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	var refs []store.Ref
	for cursor := ""; ; {
		page, next, err := st.List(ctx, store.Scope{}, cursor)
		if err != nil {
			return fail(stderr, c, err)
		}
		if !asJSON {
			refs = append(refs, page...)
		}
		for i := 0; asJSON && i < len(page); i++ {
			if err := enc.Encode(engine.RefFromStore(page[i])); err != nil {
				return fail(stderr, c, fmt.Errorf("write output: %w", err))
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if asJSON {
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMIME\tSIZE\tFILENAME\tSOURCE\tCREATED")
	for _, r := range refs {
		source := r.Source.Server
		if r.Source.Tool != "" {
			source += "/" + r.Source.Tool
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n",
			cell(r.ID), cell(r.MIMEType), humanize.Bytes(r.SizeBytes), cell(r.Filename),
			cell(source), r.Created.Local().Format("2006-01-02 15:04:05"))
	}
	if err := tw.Flush(); err != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", err))
	}
	return exitOK
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
func runArtifactsGet(args []string, stdout, stderr io.Writer) int {
	c := getCmd
	fs := newFlagSet(c)
	var (
		o   common
		out string
	)
	o.register(fs)
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
func runArtifactsRm(args []string, stdout, stderr io.Writer) int {
	c := rmCmd
	fs := newFlagSet(c)
	var o common
	o.register(fs)
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
func (o *common) open(ctx context.Context, c command, stderr io.Writer) (*fsstore.Store, int) {
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
func describe(err error, id string, st *fsstore.Store) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w (store %s; see 'mcpx artifacts ls')", err, st.Dir())
	case errors.Is(err, store.ErrInvalidID):
		return fmt.Errorf("%w (ids look like tableau_1a2b3c4d5e6f; see 'mcpx artifacts ls')", err)
	}
	return err
}
