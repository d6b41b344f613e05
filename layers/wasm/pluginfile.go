package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// DefaultMaxPluginFileBytes caps a plugin module read from disk: the
// largest guest we build (standard Go) is a few MiB.
const DefaultMaxPluginFileBytes = 64 << 20

// maxSidecarBytes caps a NAME.json sidecar.
const maxSidecarBytes = 1 << 20

// pluginReadTimeout bounds reading one plugin file: a file system that
// stalls (a network mount) must not hold the folder's loads, nor the
// layer's construction, forever.
const pluginReadTimeout = 10 * time.Second

// Errors of reading a plugin file.
var (
	// ErrNotRegularFile: a plugin file is a FIFO, a device, a socket or a
	// folder (directly or through a symlink).
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrFileTooLarge: a plugin file is over the size cap.
	ErrFileTooLarge = errors.New("file over the size cap")
)

// readPluginFile reads a plugin module or sidecar. Only regular files are
// read: a symlink is followed when it leads to a regular file (a folder of
// symlinks to build outputs is a common deploy), never to a FIFO (whose
// open blocks until a writer comes, forever), a device (/dev/zero never
// ends) or a socket. The size is checked before reading (a sparse 300 MB
// file is not read), the read stops one byte past the cap in case the file
// grows meanwhile, and it gives up after pluginReadTimeout.
func readPluginFile(ctx context.Context, path string, maxBytes int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(fi, maxBytes); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// O_NONBLOCK: the file may have been swapped for a FIFO since the
	// Stat; opening a FIFO without a writer then fails rather than hangs.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := checkRegular(fi, maxBytes); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
		done <- read{b, err}
	}()
	timer := time.NewTimer(pluginReadTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		if int64(len(r.b)) > maxBytes {
			return nil, fmt.Errorf("%s: %w (%d bytes)", path, ErrFileTooLarge, maxBytes)
		}
		return r.b, nil
	case <-timer.C:
		return nil, fmt.Errorf("%s: read did not finish within %v", path, pluginReadTimeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", path, ctx.Err())
	}
}

func checkRegular(fi fs.FileInfo, maxBytes int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w (%s)", ErrNotRegularFile, fileKind(fi.Mode()))
	}
	if fi.Size() > maxBytes {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrFileTooLarge, fi.Size(), maxBytes)
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	}
	return "mode " + m.String()
}

// escapeGlob quotes the glob metacharacters of a name so that path.Match
// matches the name alone: a plugin file x*.wasm serves the server "x*",
// not every server whose name starts with x.
func escapeGlob(name string) string {
	if !strings.ContainsAny(name, `*?[]\`) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if strings.IndexByte(`*?[]\`, name[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(name[i])
	}
	return b.String()
}
