//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestSearch(t *testing.T) {
	t.Parallel()
	storetest.RunSearch(t, func(t *testing.T) store.Store { return openT(t, t.TempDir(), Config{}) })
}
