package wasm_test

import (
	"os"
	"testing"

	"github.com/mcpx-dev/mcpx/layers/wasm/wasmtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	wasmtest.Cleanup()
	os.Exit(code)
}
