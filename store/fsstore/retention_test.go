package fsstore

import (
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestRetention(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) store.Store {
		return openT(t, t.TempDir(), Config{PageSize: 7})
	})
}
