package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpx-dev/mcpx/store/internal/catalog"
)

// Report is what Check found in a store's folder.
type Report struct {
	// Dir is the store's folder (an absolute path).
	Dir string `json:"dir"`
	// Artifacts is the number of artifacts the journal lists.
	Artifacts int `json:"artifacts"`
	// BadLines counts complete journal lines that fail their checksum or
	// do not decode (a flipped byte, an edited line).
	BadLines int `json:"bad_lines"`
	// TornTail is set when the journal ends in a partial line (a kill
	// mid-append, or a journal cut short).
	TornTail bool `json:"torn_tail"`
	// Missing lists the ids whose blob is missing, of the wrong size or
	// not a regular file.
	Missing []string `json:"missing"`
	// Unindexed lists the sha256 of blobs that no artifact holds and no
	// journaled delete freed (a lost or damaged journal line, a kill
	// between a put's rename and its journal record).
	Unindexed []string `json:"unindexed"`
	// Corrupt lists the sha256 names of blobs whose bytes hash to
	// something else.
	Corrupt []string `json:"corrupt"`
	// Unfinished counts temp files of puts that never finished: what a
	// kill leaves, removed by the next Open that has the folder to itself.
	// Not damage.
	Unfinished int `json:"unfinished"`
	// Leftover counts blobs of deleted artifacts whose removal a kill cut
	// short, removed like Unfinished. Not damage.
	Leftover int `json:"leftover"`
	// Unknown lists files under blobs/ and tmp/ that the store did not
	// make, relative to Dir. The store never touches them, so they are
	// not damage either.
	Unknown []string `json:"unknown"`
}

// Damaged reports whether the report found damage that Repair fixes.
func (r Report) Damaged() bool {
	return r.BadLines > 0 || r.TornTail || len(r.Missing) > 0 || len(r.Unindexed) > 0 || len(r.Corrupt) > 0
}

// Check reads the store in dir and reports damage without changing
// anything: it opens the store read-only (see Config.ReadOnly), holds its
// write lock shared while it looks, so other processes' writes wait for it,
// and hashes every blob.
//
// # Errors
//
// Those of Open; an error wrapping fs.ErrNotExist when dir does not exist.
func Check(ctx context.Context, dir string, cfg Config) (Report, error) {
	cfg.ReadOnly = true
	s, err := newStore(dir, cfg)
	if err != nil {
		return Report{}, err
	}
	if _, err := os.Stat(s.dir); err != nil {
		return Report{}, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	s.deletedBlobs = make(map[string]bool)
	if err := s.open(ctx); err != nil {
		s.closeFiles()
		return Report{}, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	defer s.Close(ctx)
	unlock, err := s.lockWrite(ctx, false)
	if err != nil {
		return Report{}, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	defer unlock()
	rep, err := s.check(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("fsstore: dir[%s]: check: %w", s.dir, err)
	}
	return rep, nil
}

// check builds the report. The caller holds mu and write.lock.
func (s *Store) check(ctx context.Context) (Report, error) {
	rep := Report{Dir: s.dir, Artifacts: s.cat.Len(), BadLines: s.badLines, TornTail: s.torn}
	for _, e := range s.cat.Entries() {
		fi, err := os.Lstat(s.blobPath(e.Ref.SHA256))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.Ref.SizeBytes {
			rep.Missing = append(rep.Missing, e.Ref.ID)
		}
	}
	rel := func(path string) string {
		if r, err := filepath.Rel(s.dir, path); err == nil {
			return r
		}
		return path
	}
	err := s.walkBlobs(func(sum, path string, _ fs.FileInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sum == "" {
			rep.Unknown = append(rep.Unknown, rel(path))
			return nil
		}
		got, err := hashFile(path)
		if err != nil {
			return err
		}
		switch {
		case got != sum:
			rep.Corrupt = append(rep.Corrupt, sum)
		case s.cat.BlobRefs(sum) > 0:
		case s.deletedBlobs[sum]:
			rep.Leftover++
		default:
			rep.Unindexed = append(rep.Unindexed, sum)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	tmps, err := os.ReadDir(s.tmpDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	for _, t := range tmps {
		if t.Type().IsRegular() && mintedTemp(t.Name()) {
			rep.Unfinished++
		} else {
			rep.Unknown = append(rep.Unknown, rel(filepath.Join(s.tmpDir, t.Name())))
		}
	}
	return rep, nil
}

// Repair checks the store in dir (see Check) and, when it finds damage,
// repairs it: damaged journal lines are copied to lost+found/ and the
// journal rewritten without them, artifacts whose blob is missing are
// dropped, blobs no artifact holds are re-indexed (see the package doc),
// and blobs whose bytes do not match their name are moved to lost+found/
// with the artifacts that held them dropped. No blob is deleted. It returns
// what Check found before the repair.
//
// # Errors
//
// Those of Check and Open; ErrBusy when another process has the store
// open (repair needs the folder to itself).
func Repair(ctx context.Context, dir string, cfg Config) (Report, error) {
	rep, err := Check(ctx, dir, cfg)
	if err != nil || !rep.Damaged() {
		return rep, err
	}
	cfg.ReadOnly = false
	s, err := newStore(dir, cfg)
	if err != nil {
		return rep, err
	}
	s.repair, s.corrupt = true, rep.Corrupt
	if err := s.open(ctx); err != nil {
		s.closeFiles()
		return rep, fmt.Errorf("fsstore: dir[%s]: repair: %w", s.dir, err)
	}
	if err := s.Close(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}

// quarantine moves the blobs in corrupt whose bytes still do not match
// their name to lost+found/ and journals the deletion of every artifact
// that held them. It runs during a repair, with the folder to itself.
func (s *Store) quarantine(corrupt []string) error {
	for _, sum := range corrupt {
		path := s.blobPath(sum)
		got, err := hashFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // recovery moved it already (no artifact held it)
		}
		if err != nil {
			return err
		}
		if got == sum {
			continue
		}
		var holders []*catalog.Entry
		for _, e := range s.cat.Entries() {
			if e.Ref.SHA256 == sum {
				holders = append(holders, e)
			}
		}
		for _, e := range holders {
			if err := s.appendRecords(record{Op: opDel, ID: e.Ref.ID}); err != nil {
				return err
			}
			s.cat.Remove(e.Ref.ID)
		}
		to, err := s.moveToLostFound(path, sum)
		if err != nil {
			return err
		}
		s.log.Warn("moved a blob whose bytes do not match its name to lost+found", "blob", path, "sha256", got, "to", to, "artifacts_dropped", len(holders))
	}
	return nil
}
