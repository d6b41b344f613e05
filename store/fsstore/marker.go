package fsstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The marker file says "this folder is an fsstore": Open turns a folder into
// a store only when it is empty or carries it, so a mistyped --store (a
// project folder, the home folder) fails before recovery touches anything.
const (
	markerName    = "mcpx-store.json"
	markerFormat  = "mcpx-fsstore"
	markerVersion = 2
	// markerVersionJournal is the marker of a store whose index is a
	// journal (index.jsonl); Open adopts it and writes markerVersion.
	markerVersionJournal = 1
	// markerTempPrefix starts the name of a marker being written; such a
	// file does not make a folder "not empty" (two processes may create a
	// store in one empty folder at once).
	markerTempPrefix = ".mcpx-store-"
)

// marker is the content of the marker file.
type marker struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// legacyNames are the names a store made before it wrote a marker: a folder
// holding only these, with a journal that reads as one, is adopted.
var legacyNames = []string{journalName, blobsName, tmpName, openLockName, writeLockName, lostFoundName}

// checkMarker reports whether dir carries a valid marker. A marker of
// another format or a newer version is an error wrapping ErrNotAStore.
func checkMarker(dir string) (bool, error) {
	v, err := markerVersionIn(dir)
	return v > 0, err
}

// markerVersionIn returns the version of dir's marker, 0 when it has none.
func markerVersionIn(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, markerName))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil || m.Format != markerFormat {
		return 0, fmt.Errorf("%s is not an fsstore marker (want format %q): %w", markerName, markerFormat, ErrNotAStore)
	}
	if m.Version < markerVersionJournal || m.Version > markerVersion {
		return 0, fmt.Errorf("%s says format version %d; this mcpx reads versions %d to %d: %w", markerName, m.Version, markerVersionJournal, markerVersion, ErrNotAStore)
	}
	return m.Version, nil
}

// claimFolder decides whether dir may be used as a store, and writes the
// marker when it may but has none (write is false for a read-only open). It
// reports whether dir exists.
func claimFolder(dir string, write bool) (exists bool, err error) {
	v, err := markerVersionIn(dir)
	ok := v > 0
	if ok && write && v < markerVersion && err == nil {
		// A journal store: Open adopts its journal, and the new marker
		// keeps older versions (which would misread the store) out.
		return true, writeMarker(dir)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		// ReadFile's error for a missing or closed dir itself is reported
		// by ReadDir below with the folder's own name.
		err = nil
	}
	if err != nil || ok {
		return ok, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	var others []string
	for _, e := range entries {
		if e.Name() == markerName {
			// Another process claimed the folder since the first look.
			ok, err := checkMarker(dir)
			if err != nil || ok {
				return true, err
			}
		}
		if !strings.HasPrefix(e.Name(), markerTempPrefix) {
			others = append(others, e.Name())
		}
	}
	switch {
	case len(others) == 0:
	case isLegacyStore(dir, others):
	default:
		if len(others) > 3 {
			others = append(others[:3], "…")
		}
		return true, fmt.Errorf("the folder holds %s and no %s: %w", strings.Join(others, ", "), markerName, ErrNotAStore)
	}
	if !write {
		return true, nil
	}
	return true, writeMarker(dir)
}

// isLegacyStore reports whether a folder without a marker is a store made
// before markers existed: only the store's own names, and a journal that is
// empty or starts with a good record.
func isLegacyStore(dir string, names []string) bool {
	if !slices.Contains(names, journalName) {
		return false
	}
	for _, n := range names {
		if !slices.Contains(legacyNames, n) {
			return false
		}
	}
	f, err := os.Open(filepath.Join(dir, journalName))
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := f.Read(buf)
	if n == 0 {
		return true
	}
	line, _, found := bytes.Cut(buf[:n], []byte{'\n'})
	if !found {
		return false
	}
	_, err = parseLine(line)
	return err == nil
}

// writeMarker writes the marker durably: a temp file, fsynced, renamed to
// its name, the folder fsynced. Two processes claiming one empty folder at
// once write the same bytes, so either rename may win.
func writeMarker(dir string) error {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(dir, markerTempPrefix+hex.EncodeToString(rnd[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	b, _ := json.Marshal(marker{Format: markerFormat, Version: markerVersion})
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, markerName)); err != nil {
		return err
	}
	return syncDir(dir)
}

// checkOwnFolder checks that name under dir, when present, is a folder and
// not a symbolic link: the store deletes and renames files in tmp/ and
// blobs/, and must never do it through a link to someone else's folder.
func checkOwnFolder(dir, name string) error {
	fi, err := os.Lstat(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; the store uses only its own folders: %w", name, ErrNotAStore)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (mode %v): %w", name, fi.Mode(), ErrNotAStore)
	}
	return nil
}
