package wasm_test

import (
	"os"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/wasmtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	wasmtest.Cleanup()
	os.Exit(code)
}
