package fsstore

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpx-dev/mcpx/store"
)

// recover runs when this process has the folder to itself (open.lock held
// exclusively): it removes unfinished puts, replays the journal, drops
// entries whose blob is gone, collects blobs no entry holds and compacts the
// journal when it needs it.
func (s *Store) recover() error {
	tmps, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return err
	}
	for _, t := range tmps {
		if err := os.RemoveAll(filepath.Join(s.tmpDir, t.Name())); err != nil {
			return fmt.Errorf("remove unfinished put: %w", err)
		}
	}
	if len(tmps) > 0 {
		s.log.Info("removed unfinished puts", "dir", s.tmpDir, "files", len(tmps))
	}

	if s.journal, err = s.openJournal(); err != nil {
		return err
	}
	res, err := s.catchUp()
	if err != nil {
		return err
	}
	if res.torn {
		s.log.Warn("ignored torn last journal line", "journal", s.journalPath, "offset", s.off)
	}

	dropped := 0
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
		dropped++
	}

	if err := s.collectBlobs(); err != nil {
		return err
	}

	live := 0
	for _, e := range s.cat.Entries() {
		live += len(e.Scopes)
	}
	records := res.records
	if len(res.bad) > 0 || res.torn || s.skipped > 0 || dropped > 0 ||
		(records >= compactMinRecords && records > 2*live+1) {
		// A journal that cannot be rewritten (a full disk) still works:
		// the next append closes off a torn line.
		if err := s.compact(); err != nil {
			s.log.Warn("could not compact journal", "journal", s.journalPath, "error", err)
		} else {
			s.log.Info("compacted journal", "journal", s.journalPath, "records_before", records, "records_after", live)
		}
	}
	return nil
}

// collectBlobs deletes blob files that no entry holds.
func (s *Store) collectBlobs() error {
	shards, err := os.ReadDir(s.blobsDir)
	if err != nil {
		return err
	}
	removed := 0
	for _, sh := range shards {
		if !sh.IsDir() || len(sh.Name()) != 2 {
			s.log.Warn("left unknown file in blobs folder", "file", filepath.Join(s.blobsDir, sh.Name()))
			continue
		}
		dir := filepath.Join(s.blobsDir, sh.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, f := range files {
			name := f.Name()
			if !store.ValidSHA256(name) || name[:2] != sh.Name() || !f.Type().IsRegular() {
				s.log.Warn("left unknown file in blobs folder", "file", filepath.Join(dir, name))
				continue
			}
			if s.cat.BlobRefs(name) > 0 {
				continue
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("collect unreferenced blob: %w", err)
			}
			removed++
		}
	}
	if removed > 0 {
		s.log.Info("collected unreferenced blobs", "dir", s.blobsDir, "files", removed)
	}
	return nil
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
