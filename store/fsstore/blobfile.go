package fsstore

// The blob files: blobs/ and tmp/, opened once as directory handles. Every
// read, write, link and rename of a blob goes through blobFolders, so a
// folder swapped for a link while the store is open is never followed
// (see the package doc). The file system orders what it does: blobFolders
// holds no lock.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// blobFolders is the store's blobs/ and tmp/ (nil handles on a read-only
// store of a missing folder, or of one with a marker only).
type blobFolders struct {
	dir      string // the store's folder, for the paths logs and lost+found/ name
	readOnly bool   // tmp/ is not opened
	log      hclog.Logger

	blobs, tmp       *os.Root
	blobsDir, tmpDir *os.File
}

// open opens blobs/ and tmp/ as directory handles; checkOwnFolder has
// made sure neither is a link.
func (b *blobFolders) open() error {
	var err error
	if b.blobs, err = os.OpenRoot(filepath.Join(b.dir, blobsName)); err != nil {
		return err
	}
	if b.blobsDir, err = b.blobs.Open("."); err != nil {
		return err
	}
	if b.readOnly {
		return nil
	}
	if b.tmp, err = os.OpenRoot(filepath.Join(b.dir, tmpName)); err != nil {
		return err
	}
	b.tmpDir, err = b.tmp.Open(".")
	return err
}

// present reports whether blobs/ is open (false on a read-only store of
// a folder without one).
func (b *blobFolders) present() bool { return b.blobs != nil }

// close closes the handles; a second close does nothing.
func (b *blobFolders) close() error {
	var errs []error
	for _, f := range []**os.File{&b.blobsDir, &b.tmpDir} {
		if *f != nil {
			errs = append(errs, (*f).Close())
			*f = nil
		}
	}
	for _, r := range []**os.Root{&b.blobs, &b.tmp} {
		if *r != nil {
			errs = append(errs, (*r).Close())
			*r = nil
		}
	}
	return errors.Join(errs...)
}

// blobName is the blob's path relative to blobs/.
func blobName(sha256hex string) string {
	return sha256hex[:2] + "/" + sha256hex
}

// hasBlobs reports whether blobs/ holds anything.
func (b *blobFolders) hasBlobs() bool {
	if b.blobs == nil {
		return false
	}
	d, err := b.blobs.Open(".")
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) > 0
}

// createTemp creates tmp/name for a put.
func (b *blobFolders) createTemp(name string) (*os.File, error) {
	return b.tmp.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

// removeTemp removes tmp/name; one already gone is no error.
func (b *blobFolders) removeTemp(name string) error {
	if err := b.tmp.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// temps lists tmp/.
func (b *blobFolders) temps() ([]fs.DirEntry, error) { return readDir(b.tmp, ".") }

// readDir lists the folder name in root.
func readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// statTemp returns the file info of tmp/name, not following a link.
func (b *blobFolders) statTemp(name string) (fs.FileInfo, error) { return b.tmp.Lstat(name) }

// stat returns the file info of the blob sum, not following a link.
func (b *blobFolders) stat(sum string) (fs.FileInfo, error) { return b.blobs.Lstat(blobName(sum)) }

// openBlob opens the blob sum for reading.
func (b *blobFolders) openBlob(sum string) (*os.File, error) { return b.blobs.Open(blobName(sum)) }

// remove removes the blob sum; one already gone is no error.
func (b *blobFolders) remove(sum string) error {
	if err := b.blobs.Remove(blobName(sum)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// hashBlob and hashTemp return the sha256 of the blob sum's bytes and of
// tmp/name's.
func (b *blobFolders) hashBlob(sum string) (string, error)  { return hashIn(b.blobs, blobName(sum)) }
func (b *blobFolders) hashTemp(name string) (string, error) { return hashIn(b.tmp, name) }

// hashIn returns the lower-case hex sha256 of the file name in root.
func hashIn(root *os.Root, name string) (string, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// place links the temp file tmpName to the blob's name and makes the
// link durable. It reports false when the blob was there already.
func (b *blobFolders) place(tmpName, sum string) (bool, error) {
	shard := sum[:2]
	created := false
	switch err := b.blobs.Mkdir(shard, 0o700); {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return false, err
	}
	fi, err := b.blobs.Lstat(shard)
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("blobs/%s is not a folder (mode %v): %w", shard, fi.Mode(), ErrNotAStore)
	}
	d, err := b.blobs.Open(shard)
	if err != nil {
		return false, err
	}
	defer d.Close()
	// A new shard's entry in blobs/ is synced after the link, not before:
	// both are durable before the put commits either way, and where the
	// file system has one journal (ext4, xfs) the shard's sync commits
	// the folder's creation too, so this one finds nothing left to write.
	syncShard := func() error {
		if !created {
			return nil
		}
		return b.blobsDir.Sync()
	}
	err = linkAt(b.tmpDir, tmpName, d, sum)
	if errors.Is(err, fs.ErrExist) {
		// Another process linked the same bytes into the shard this put
		// made: the shard is still this put's to sync.
		return false, syncShard()
	}
	if err != nil {
		return false, fmt.Errorf("link blob %s: %w", sum, err)
	}
	if err := d.Sync(); err != nil {
		return false, err
	}
	return true, syncShard()
}

// park moves the blob sum to tmp/name; "" when there was no blob.
func (b *blobFolders) park(sum, name string) (string, error) {
	d, err := b.blobs.Open(sum[:2])
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer d.Close()
	err = renameAt(d, sum, b.tmpDir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return name, err
}

// unpark moves tmp/name back to the blob sum.
func (b *blobFolders) unpark(name, sum string) error {
	d, err := b.blobs.Open(sum[:2])
	if err != nil {
		return err
	}
	defer d.Close()
	if err := renameAt(b.tmpDir, name, d, sum); err != nil {
		return err
	}
	return d.Sync()
}

// parkedBlob is a blob a transaction moved to tmp/ (see removeArtifact).
type parkedBlob struct{ name, sum string }

// unparkAll puts back the blobs of a transaction that did not commit.
func (b *blobFolders) unparkAll(parked []parkedBlob) {
	for i := len(parked) - 1; i >= 0; i-- {
		if err := b.unpark(parked[i].name, parked[i].sum); err != nil {
			b.log.Warn("could not put back the blob of a failed removal", "file", parked[i].name, "error", err)
		}
	}
}

// removeParked removes the blobs a committed transaction parked; one left
// behind is removed by the next recovering Open.
func (b *blobFolders) removeParked(parked []parkedBlob) {
	for _, p := range parked {
		if err := b.removeTemp(p.name); err != nil {
			b.log.Warn("could not remove blob", "file", p.name, "error", err)
		}
	}
}

// walk calls fn for every file under blobs/: sum is its name when the
// name is a sha256 in the right shard and the file a regular one, else "".
func (b *blobFolders) walk(fn func(sum, path string, fi fs.FileInfo) error) error {
	shards, err := readDir(b.blobs, ".")
	if err != nil {
		return err
	}
	for _, sh := range shards {
		dir := filepath.Join(b.dir, blobsName, sh.Name())
		if !sh.IsDir() || len(sh.Name()) != 2 {
			if err := fn("", dir, nil); err != nil {
				return err
			}
			continue
		}
		files, err := readDir(b.blobs, sh.Name())
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

// moveToLostFound renames path into lost+found/ as name (name.1, name.2,
// … when taken) and returns where it went.
func (b *blobFolders) moveToLostFound(path, name string) (string, error) {
	dir := filepath.Join(b.dir, lostFoundName)
	if err := checkOwnFolder(b.dir, lostFoundName); err != nil {
		return "", err
	}
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

// blobReader reads a section of an open blob file.
type blobReader struct {
	*io.SectionReader
	f *os.File
}

// Close closes the blob file.
func (b *blobReader) Close() error { return b.f.Close() }

// OSFile returns the open blob file when the reader spans all of it (a
// Get without a range), else nil: an HTTP server then sends the file
// with sendfile instead of copying it through user space. The file
// belongs to the reader: closing the reader closes it.
func (b *blobReader) OSFile() *os.File {
	_, off, n := b.Outer()
	if off != 0 {
		return nil
	}
	if fi, err := b.f.Stat(); err != nil || fi.Size() != n {
		return nil
	}
	return b.f
}
