// Package wasmmem holds the linear memories of WebAssembly guests: the
// WASM plugins' (layers/wasm) and the PDF reader's (inspect).
//
// wazero's default grows a linear memory by append on the
// Go heap: each step copies the memory, the old copies wait for the
// collector, and a guest that grows to its limit leaves several times
// the limit of garbage. Sixteen guests allocating without bound beside
// a load of 1-10 MB results took the gateway to 1.36 GB (the
// reliability suite's TestLoadWithHostilePlugins). Where the platform
// allows (memory_unix.go), a guest's memory is one mapping of its limit
// instead, reserved but not committed: growth touches new pages in place,
// nothing is copied, and closing the instance returns its pages to the
// system at once.
//
// A mapped memory is gone once its instance closes: a host must not read
// a guest's memory after closing the instance, nor close it while a call
// runs (ending the call's context stops a call; wazero frees its memory
// when the call returns).
package wasmmem

import "github.com/tetratelabs/wazero/experimental"

// heapMemory is a linear memory on the Go heap, grown by append: the
// fallback where no mapping can be made.
type heapMemory struct{ buf []byte }

func newHeapMemory(capacity uint64) *heapMemory {
	return &heapMemory{buf: make([]byte, 0, capacity)}
}

func (m *heapMemory) Reallocate(size uint64) []byte {
	if n := uint64(len(m.buf)); size > n {
		m.buf = append(m.buf, make([]byte, size-n)...)
	}
	return m.buf[:size]
}

func (m *heapMemory) Free() { m.buf = nil }

var _ experimental.LinearMemory = (*heapMemory)(nil)
