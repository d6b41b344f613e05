package fsstore

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
)

// The journal was the index of a version 1 store: JSON lines, each
// prefixed with the CRC-32C of its JSON. This file only reads it, to adopt
// such a store (see the package doc).

// Journal operations.
const (
	opPut   = "put"   // a new artifact: Seq and Ref (Ref.Scope is its first scope)
	opScope = "scope" // one more scope for artifact ID
	opDel   = "del"   // artifact ID deleted
	opSeq   = "seq"   // sequence numbers up to Seq are used (written by compaction)
)

// record is one journal line. A line is "<crc32c of the JSON, 8 hex> <JSON>\n".
type record struct {
	Op    string       `json:"op"`
	Seq   uint64       `json:"seq,omitempty"`
	ID    string       `json:"id,omitempty"`
	Ref   *store.Ref   `json:"ref,omitempty"`
	Scope *store.Scope `json:"scope,omitempty"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxLine bounds one journal line; refs are small, so a longer line is
// damage, not data.
const maxLine = 1 << 20

var errBadLine = errors.New("bad journal line")

// parseLine decodes one journal line without its '\n'.
func parseLine(line []byte) (record, error) {
	var rec record
	if len(line) < 10 || line[8] != ' ' {
		return rec, fmt.Errorf("%w: no checksum", errBadLine)
	}
	want, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return rec, fmt.Errorf("%w: checksum %q", errBadLine, line[:8])
	}
	js := line[9:]
	if crc32.Checksum(js, castagnoli) != uint32(want) {
		return rec, fmt.Errorf("%w: checksum mismatch", errBadLine)
	}
	if err := json.Unmarshal(js, &rec); err != nil {
		return rec, fmt.Errorf("%w: %w", errBadLine, err)
	}
	switch {
	case rec.Op == opPut && rec.Ref != nil && rec.Seq > 0:
	case rec.Op == opScope && rec.ID != "" && rec.Scope != nil:
	case rec.Op == opDel && rec.ID != "":
	case rec.Op == opSeq && rec.Seq > 0:
	default:
		return rec, fmt.Errorf("%w: malformed %q record", errBadLine, rec.Op)
	}
	return rec, nil
}

// scanResult says what scanJournal read.
type scanResult struct {
	consumed int64 // bytes of complete lines (good or bad)
	records  int   // good records
	bad      []int // 1-based numbers (from the scan's start) of bad complete lines
	torn     bool  // bytes follow the last complete line: a torn append
}

// scanJournal reads lines from r until EOF and calls apply for each good
// record. A complete line that fails its checksum or does not decode is
// counted as bad, passed to keepBad (when not nil) and skipped; bytes after
// the last '\n' are a torn append, left unconsumed.
func scanJournal(r io.Reader, apply func(record), keepBad func(line []byte)) (scanResult, error) {
	var res scanResult
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, size, err := readLine(br)
		if errors.Is(err, io.EOF) {
			res.torn = size > 0
			return res, nil
		}
		if err != nil {
			return res, err
		}
		res.consumed += size
		rec, perr := parseLine(line)
		if perr != nil {
			res.bad = append(res.bad, n)
			if keepBad != nil {
				keepBad(line)
			}
			continue
		}
		res.records++
		apply(rec)
	}
}

// readLine returns the next line without its '\n' and its size in bytes
// with the '\n'. At EOF it returns the size of what is left (a line without
// '\n') and io.EOF. A line over maxLine bytes comes back empty (unparsable)
// with its full size.
func readLine(br *bufio.Reader) (line []byte, size int64, err error) {
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		size += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			if size <= maxLine {
				long = append(long, chunk...)
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, size, err
		}
		switch {
		case size > maxLine:
			chunk = nil
		case long != nil:
			chunk = append(long, chunk...)
		}
		return bytes.TrimSuffix(chunk, []byte{'\n'}), size, err
	}
}

// firstFew returns the first ten line numbers of bad, for a log line that
// stays short however damaged the journal is.
func firstFew(bad []int) []int {
	return bad[:min(len(bad), 10)]
}

// importJournal replays the journal into a catalog and inserts what it
// holds into the index, keeping each artifact's sequence number (so List
// cursors stay valid) and scopes. With checkBlobs, an entry whose blob is
// missing or of the wrong size is dropped. deleted collects the sha256 of
// blobs the journal's deletes freed. It returns the number imported.
func (r *recovery) importJournal(ctx context.Context, tx *sql.Tx, c *recoveryCounts, deleted map[string]bool, checkBlobs bool) (int, error) {
	f, err := os.Open(r.journalPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cat := catalog.New()
	res, err := scanJournal(f, func(rec record) {
		switch rec.Op {
		case opPut:
			if _, err := cat.Insert(rec.Seq, *rec.Ref); err != nil {
				r.log.Warn("skipped journal record", "journal", r.journalPath, "error", err)
			}
		case opScope:
			// The journal kept no time per scope: the artifact's
			// creation stands in.
			if e, ok := cat.Get(rec.ID); ok {
				cat.AddScope(rec.ID, *rec.Scope, e.Ref.Created)
			}
		case opDel:
			if e, free, ok := cat.Remove(rec.ID); ok && free {
				deleted[e.Ref.SHA256] = true
			}
		case opSeq:
			cat.AdvanceSeq(rec.Seq)
		}
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", r.journalPath, err)
	}
	c.badLines, c.tornTail = len(res.bad), res.torn
	if len(res.bad) > 0 || res.torn {
		r.log.Warn("skipped damaged journal lines; the journal is kept as "+journalImportedName,
			"journal", r.journalPath, "count", len(res.bad), "lines", firstFew(res.bad), "torn_last_line", res.torn)
	}
	n := 0
	for _, e := range cat.Entries() {
		if checkBlobs {
			fi, err := r.files.stat(e.Ref.SHA256)
			if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.Ref.SizeBytes {
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return n, err
				}
				r.log.Warn("dropped journal entry whose blob is unusable", "artifact", e.Ref.ID)
				c.missing++
				continue
			}
		}
		ns, _, _ := store.SplitID(e.Ref.ID)
		seq, err := insertArtifactSeq(ctx, tx, int64(e.Seq), ns, e.Ref)
		if err != nil {
			return n, fmt.Errorf("artifact[%s]: %w", e.Ref.ID, err)
		}
		for _, sc := range e.Scopes[1:] {
			if err := addScope(ctx, tx, seq, sc.Scope, sc.Created, e.Ref.Filename, e.Ref.Source); err != nil {
				return n, err
			}
		}
		n++
	}
	// Sequence numbers of deleted artifacts stay used, so a cursor handed
	// out before never points at a new artifact.
	if last := int64(cat.LastSeq()); last > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) SELECT 'artifacts', 0
			WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'artifacts')`); err != nil {
			return n, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'artifacts'`, last); err != nil {
			return n, err
		}
	}
	return n, nil
}
