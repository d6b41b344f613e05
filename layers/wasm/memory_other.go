//go:build !unix

package wasm

import "github.com/tetratelabs/wazero/experimental"

// guestMemory is wazero's default where no mapping is made (memory.go).
var guestMemory experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(capacity, _ uint64) experimental.LinearMemory {
	return newHeapMemory(capacity)
})
