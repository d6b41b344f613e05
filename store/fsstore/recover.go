package fsstore

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/store"
)

// recoveryCounts are what one recovery found and did, for its log line.
type recoveryCounts struct {
	unfinished  int // temp files of unfinished puts removed
	badLines    int // damaged journal lines skipped (and kept in lost+found/)
	tornTail    bool
	missing     int // entries dropped: blob missing, of the wrong size or type
	reindexed   int // blobs no entry held, re-indexed from their name and size
	lostFound   int // blobs whose bytes do not match their name, moved to lost+found/
	deletedGone int // blobs of journaled deletes, removed
	unknown     int // files the store did not make, left alone
}

func (c recoveryCounts) damaged() bool {
	return c.badLines > 0 || c.tornTail || c.missing > 0 || c.reindexed > 0 || c.lostFound > 0
}

// recover runs when this process has the folder to itself (open.lock held
// exclusively): it removes unfinished puts, replays the journal, drops
// entries whose blob is gone, re-indexes or sets aside blobs no entry holds,
// removes blobs of journaled deletes and compacts the journal when it needs
// it. It deletes only files the store made and the journal (or the name
// the store minted) proves are garbage.
func (s *Store) recover() error {
	var c recoveryCounts
	if err := s.removeUnfinished(&c); err != nil {
		return err
	}

	var err error
	if s.journal, err = s.openJournal(); err != nil {
		return err
	}
	var damaged [][]byte
	s.deletedBlobs = make(map[string]bool)
	s.damagedLines = &damaged
	defer func() { s.deletedBlobs, s.damagedLines = nil, nil }()
	res, err := s.catchUp()
	if err != nil {
		return err
	}
	c.badLines = len(res.bad)
	c.tornTail = res.torn
	if res.torn {
		tail, err := s.tail()
		if err != nil {
			return err
		}
		damaged = append(damaged, tail)
		s.log.Warn("ignored torn last journal line", "journal", s.journalPath, "offset", s.off)
	}

	for _, e := range s.cat.Entries() {
		fi, err := os.Lstat(s.blobPath(e.Ref.SHA256))
		if err == nil && fi.Mode().IsRegular() && fi.Size() == e.Ref.SizeBytes {
			continue
		}
		why := "wrong size or type"
		if err != nil {
			why = err.Error()
		}
		s.log.Warn("dropped artifact whose blob is unusable", "artifact", e.Ref.ID, "reason", why)
		s.cat.Remove(e.Ref.ID)
		c.missing++
	}

	if err := s.collectBlobs(&c); err != nil {
		return err
	}

	live := 0
	for _, e := range s.cat.Entries() {
		live += len(e.Scopes)
	}
	records := res.records
	if len(res.bad) > 0 || res.torn || s.skipped > 0 || c.missing > 0 ||
		(records >= compactMinRecords && records > 2*live+1) {
		// Compaction drops the damaged lines: keep them first, they may
		// hold the only copy of a re-indexed artifact's name and type.
		// A journal that cannot be rewritten (a full disk) still works:
		// the next append closes off a torn line.
		if kept, err := s.keepDamaged(damaged); err != nil {
			s.log.Warn("could not keep damaged journal lines; journal left as it is", "journal", s.journalPath, "error", err)
		} else if err := s.compact(); err != nil {
			s.log.Warn("could not compact journal", "journal", s.journalPath, "error", err)
		} else {
			s.log.Info("compacted journal", "journal", s.journalPath, "records_before", records, "records_after", live, "damaged_lines_kept_in", kept)
		}
	}
	if c.damaged() {
		s.log.Warn("recovered a damaged store: no blob was deleted",
			"dir", s.dir,
			"damaged_journal_lines", c.badLines, "torn_last_line", c.tornTail,
			"artifacts_without_blob", c.missing,
			"blobs_reindexed", c.reindexed, "blobs_moved_to_lost_found", c.lostFound,
			"files_left_alone", c.unknown)
	}
	if c.unfinished > 0 || c.deletedGone > 0 {
		s.log.Info("cleaned up after an interrupted process", "dir", s.dir,
			"unfinished_puts_removed", c.unfinished, "deleted_blobs_removed", c.deletedGone)
	}
	return nil
}

// tail returns the bytes after the journal's last complete line.
func (s *Store) tail() ([]byte, error) {
	fi, err := s.journal.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, min(fi.Size()-s.off, maxLine))
	_, err = s.journal.ReadAt(b, s.off)
	return b, err
}

// mintedTemp reports whether name is one the store gives its temp files:
// os.CreateTemp's patterns "put-*" and "index-*.jsonl", where * is digits.
func mintedTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, "put-")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "index-"); ok {
			rest, ok = strings.CutSuffix(rest, ".jsonl")
		}
	}
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

// removeUnfinished removes the temp files the store minted under tmp/;
// anything else there is left alone and logged.
func (s *Store) removeUnfinished(c *recoveryCounts) error {
	tmps, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return err
	}
	for _, t := range tmps {
		path := filepath.Join(s.tmpDir, t.Name())
		if !t.Type().IsRegular() || !mintedTemp(t.Name()) {
			s.log.Warn("left a file the store did not make", "file", path)
			c.unknown++
			continue
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove unfinished put: %w", err)
		}
		c.unfinished++
	}
	return nil
}

// collectBlobs deals with blob files that no entry holds: removed when the
// journal recorded their deletion, else re-indexed when their bytes match
// their name, else moved to lost+found/.
func (s *Store) collectBlobs(c *recoveryCounts) error {
	return s.walkBlobs(func(sum, path string, fi fs.FileInfo) error {
		if sum == "" {
			s.log.Warn("left a file the store did not make", "file", path)
			c.unknown++
			return nil
		}
		if s.cat.BlobRefs(sum) > 0 {
			return nil
		}
		if s.deletedBlobs[sum] {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove blob of a deleted artifact: %w", err)
			}
			c.deletedGone++
			return nil
		}
		got, err := hashFile(path)
		if err != nil {
			return err
		}
		if got != sum {
			to, err := s.moveToLostFound(path, sum)
			if err != nil {
				return err
			}
			s.log.Warn("moved a blob whose bytes do not match its name to lost+found", "blob", path, "sha256", got, "to", to)
			c.lostFound++
			return nil
		}
		ref, err := s.reindex(sum, fi)
		if err != nil {
			return err
		}
		s.log.Warn("re-indexed a blob the journal did not hold; its MIME type, file name, source and scope are lost",
			"artifact", ref.ID, "size", ref.SizeBytes)
		c.reindexed++
		return nil
	})
}

// reindex journals the blob sum as a new artifact in the "recovered"
// namespace, with what the blob proves: its sha256 and size (and its
// modification time as the creation time).
func (s *Store) reindex(sum string, fi fs.FileInfo) (store.Ref, error) {
	id, err := s.cat.AllocateID(recoveredNamespace, sum, s.idPrefixLen)
	if err != nil {
		return store.Ref{}, err
	}
	ref := store.NewRef(id, sum, fi.Size(), store.PutOptions{})
	ref.Created = fi.ModTime().UTC().Round(0)
	seq := s.cat.NextSeq()
	if err := s.appendRecords(record{Op: opPut, Seq: seq, Ref: &ref}); err != nil {
		return store.Ref{}, fmt.Errorf("re-index blob %s: %w", sum, err)
	}
	if _, err := s.cat.Insert(seq, ref); err != nil {
		return store.Ref{}, fmt.Errorf("re-index blob %s: %w", sum, err)
	}
	return ref, nil
}

// recoveredNamespace names the artifacts recovery re-indexes.
const recoveredNamespace = "recovered"

// walkBlobs calls fn for every file under blobs/: sum is its name when the
// name is a sha256 in the right shard and the file a regular one, else "".
func (s *Store) walkBlobs(fn func(sum, path string, fi fs.FileInfo) error) error {
	shards, err := os.ReadDir(s.blobsDir)
	if err != nil {
		return err
	}
	for _, sh := range shards {
		dir := filepath.Join(s.blobsDir, sh.Name())
		if !sh.IsDir() || len(sh.Name()) != 2 {
			if err := fn("", dir, nil); err != nil {
				return err
			}
			continue
		}
		files, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, f := range files {
			name, path := f.Name(), filepath.Join(dir, f.Name())
			fi, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted by a writer since ReadDir
			}
			if err != nil {
				return err
			}
			if !store.ValidSHA256(name) || name[:2] != sh.Name() || !fi.Mode().IsRegular() {
				name = ""
			}
			if err := fn(name, path, fi); err != nil {
				return err
			}
		}
	}
	return nil
}

// hashFile returns the lower-case hex sha256 of the file at path.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// moveToLostFound renames path into lost+found/ as name (name.1, name.2,
// … when taken) and returns where it went.
func (s *Store) moveToLostFound(path, name string) (string, error) {
	dir := filepath.Join(s.dir, lostFoundName)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	for i := 0; ; i++ {
		to := filepath.Join(dir, name)
		if i > 0 {
			to += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return "", err
			}
			continue
		}
		if err := os.Rename(path, to); err != nil {
			return "", err
		}
		return to, syncDir(dir)
	}
}

// keepDamaged writes the damaged journal lines to a new file in
// lost+found/ and returns its path ("" when there are none).
func (s *Store) keepDamaged(lines [][]byte) (string, error) {
	if len(lines) == 0 {
		return "", nil
	}
	dir := filepath.Join(s.dir, lostFoundName)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	f, err := os.CreateTemp(dir, "index-damaged-*.jsonl")
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		w.Write(l)
		w.WriteByte('\n')
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// compact rewrites the journal from the catalog: a temp file under tmp/,
// fsynced, renamed over the journal, folder fsynced.
func (s *Store) compact() error {
	f, err := os.CreateTemp(s.tmpDir, "index-*.jsonl")
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	var line []byte
	write := func(rec record) error {
		var err error
		if line, err = appendLine(line[:0], rec); err != nil {
			return err
		}
		_, err = w.Write(line)
		return err
	}
	var maxSeq uint64
	for _, e := range s.cat.Entries() {
		ref := e.Ref
		maxSeq = e.Seq
		if err := write(record{Op: opPut, Seq: e.Seq, Ref: &ref}); err != nil {
			return err
		}
		for _, sc := range e.Scopes[1:] {
			if err := write(record{Op: opScope, ID: ref.ID, Scope: &sc}); err != nil {
				return err
			}
		}
	}
	// Keep deleted artifacts' sequence numbers used, so cursors handed
	// out before never point at a new artifact.
	if last := s.cat.LastSeq(); last > maxSeq {
		if err := write(record{Op: opSeq, Seq: last}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), s.journalPath); err != nil {
		return err
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.journal.Close()
	if s.journal, err = s.openJournal(); err != nil {
		return err
	}
	fi, err := s.journal.Stat()
	if err != nil {
		return err
	}
	s.off, s.seen, s.torn, s.skipped = fi.Size(), fi.Size(), false, 0
	return nil
}
