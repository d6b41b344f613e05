package fsstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/mcpx-dev/mcpx/store"
)

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

// appendLine appends rec's journal line to b.
func appendLine(b []byte, rec record) ([]byte, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return b, fmt.Errorf("encode %s record: %w", rec.Op, err)
	}
	if len(js)+10 > maxLine {
		return b, fmt.Errorf("%s record of %d bytes is over the %d byte limit (a huge file name?)", rec.Op, len(js), maxLine)
	}
	b = fmt.Appendf(b, "%08x ", crc32.Checksum(js, castagnoli))
	b = append(b, js...)
	return append(b, '\n'), nil
}

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
		return rec, fmt.Errorf("%w: %v", errBadLine, err)
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
