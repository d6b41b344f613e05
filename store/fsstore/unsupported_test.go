//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package fsstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestOpenUnsupported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Open(context.Background(), dir, Config{})
	if !errors.Is(err, ErrUnsupportedPlatform) || !errors.Is(err, errors.ErrUnsupported) ||
		!strings.Contains(err.Error(), "not supported") || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open on this system: %v, want a clear 'not supported' error naming %s", err, dir)
	}
}
