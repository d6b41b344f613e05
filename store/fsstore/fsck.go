package fsstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Report is what Check found in a store's folder.
type Report struct {
	// Dir is the store's folder (an absolute path).
	Dir string `json:"dir"`
	// Artifacts is the number of artifacts the index lists.
	Artifacts int `json:"artifacts"`
	// IndexDamaged is set when the index is missing while blobs exist, is
	// not a whole SQLite database (damaged, truncated), or fails SQLite's
	// integrity check; IndexError says how. Repair rebuilds it from the
	// blobs.
	IndexDamaged bool   `json:"index_damaged"`
	IndexError   string `json:"index_error,omitempty"`
	// BadLines counts complete lines of a not yet adopted journal (a
	// version 1 store) that fail their checksum or do not decode.
	BadLines int `json:"bad_lines"`
	// TornTail is set when a not yet adopted journal ends in a partial
	// line.
	TornTail bool `json:"torn_tail"`
	// Missing lists the ids whose blob is missing, of the wrong size or
	// not a regular file.
	Missing []string `json:"missing"`
	// Unindexed lists the sha256 of blobs that no artifact holds (a lost
	// or damaged index).
	Unindexed []string `json:"unindexed"`
	// Corrupt lists the sha256 names of blobs whose bytes hash to
	// something else.
	Corrupt []string `json:"corrupt"`
	// Unfinished counts temp files of puts that never finished: what a
	// kill leaves, removed by the next Open that has the folder to itself.
	// Not damage.
	Unfinished int `json:"unfinished"`
	// Leftover counts blobs parked by deletes a kill cut short, settled
	// like Unfinished. Not damage.
	Leftover int `json:"leftover"`
	// Unknown lists files under blobs/ and tmp/ that the store did not
	// make, relative to Dir. The store never touches them, so they are
	// not damage either.
	Unknown []string `json:"unknown"`
}

// Damaged reports whether the report found damage that Repair fixes.
func (r Report) Damaged() bool {
	return r.IndexDamaged || r.BadLines > 0 || r.TornTail || len(r.Missing) > 0 || len(r.Unindexed) > 0 || len(r.Corrupt) > 0
}

// Check reads the store in dir and reports damage without changing
// anything: it opens the store read-only (see Config.ReadOnly), runs
// SQLite's integrity check on the index, looks for every artifact's blob
// and hashes every blob. Writers of other processes go on meanwhile; what
// they change while it looks may show as damage that is not.
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
	if err := s.open(ctx, openMode{}); err != nil {
		s.closeFiles()
		return Report{}, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	defer s.Close(ctx)
	rep, err := check(ctx, s.dir, s.idx, s.files)
	if err != nil {
		return Report{}, fmt.Errorf("fsstore: dir[%s]: check: %w", s.dir, err)
	}
	return rep, nil
}

// check builds the report of the store in dir.
func check(ctx context.Context, dir string, idx *index, files *blobFolders) (Report, error) {
	rep := Report{Dir: dir}
	if !files.present() {
		return rep, nil
	}
	held := map[string]bool{}
	db, err := idx.db(ctx)
	switch {
	case err != nil && !isCorrupt(err):
		return rep, err
	case err != nil:
		rep.IndexDamaged, rep.IndexError = true, err.Error()
	case db == nil:
		if files.hasBlobs() {
			rep.IndexDamaged, rep.IndexError = true, "the store has blobs but no index"
		}
	default:
		if msg, err := integrityCheck(ctx, db); err != nil || msg != "ok" {
			if err != nil {
				msg = err.Error()
			}
			rep.IndexDamaged, rep.IndexError = true, msg
			break
		}
		if err := checkRows(ctx, db, files, &rep, held); err != nil {
			if !isCorrupt(err) {
				return rep, err
			}
			rep.IndexDamaged, rep.IndexError = true, err.Error()
		}
	}
	rel := func(path string) string {
		if r, err := filepath.Rel(dir, path); err == nil {
			return r
		}
		return path
	}
	err = files.walk(func(sum, path string, _ fs.FileInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sum == "" {
			rep.Unknown = append(rep.Unknown, rel(path))
			return nil
		}
		got, err := files.hashBlob(sum)
		if err != nil {
			return err
		}
		switch {
		case got != sum:
			rep.Corrupt = append(rep.Corrupt, sum)
		case held[sum]:
		default:
			rep.Unindexed = append(rep.Unindexed, sum)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	tmps, err := os.ReadDir(filepath.Join(dir, tmpName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	for _, t := range tmps {
		kind, _ := tempKind(t.Name())
		switch {
		case !t.Type().IsRegular() || kind == "":
			rep.Unknown = append(rep.Unknown, rel(filepath.Join(dir, tmpName, t.Name())))
		case kind == "del":
			rep.Leftover++
		default:
			rep.Unfinished++
		}
	}
	return rep, nil
}

// integrityCheck runs PRAGMA integrity_check and returns its first line
// ("ok" when the index is sound).
func integrityCheck(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check(10)`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "", err
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return strings.Join(lines, "; "), nil
}

// checkRows counts the artifacts, lists those whose blob is unusable and
// collects the blobs they hold.
func checkRows(ctx context.Context, db *sql.DB, files *blobFolders, rep *Report, held map[string]bool) error {
	rows, err := db.QueryContext(ctx, `SELECT id, sha256, size FROM artifacts ORDER BY seq`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, sum string
		var size int64
		if err := rows.Scan(&id, &sum, &size); err != nil {
			return err
		}
		rep.Artifacts++
		held[sum] = true
		fi, err := files.stat(sum)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
			rep.Missing = append(rep.Missing, id)
		}
	}
	return rows.Err()
}

// Repair checks the store in dir (see Check) and, when it finds damage,
// repairs it: a damaged index is moved to lost+found/ and rebuilt from the
// blobs, artifacts whose blob is missing are dropped, blobs no artifact
// holds are re-indexed (see the package doc), and blobs whose bytes do not
// match their name are moved to lost+found/ with the artifacts that held
// them dropped. No blob is deleted. It returns what Check found before the
// repair.
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
	if err := s.open(ctx, openMode{repair: true, rebuild: rep.IndexDamaged, corrupt: rep.Corrupt}); err != nil {
		s.closeFiles()
		return rep, fmt.Errorf("fsstore: dir[%s]: repair: %w", s.dir, err)
	}
	if err := s.Close(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}
