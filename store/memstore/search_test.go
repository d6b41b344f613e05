package memstore

import (
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) store.Store { return New(Config{}) })
}
