//go:build !unix

package wasmmem

import "github.com/tetratelabs/wazero/experimental"

// Allocator is wazero's default where no mapping is made (memory.go).
func Allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capacity, _ uint64) experimental.LinearMemory {
		return newHeapMemory(capacity)
	})
}
