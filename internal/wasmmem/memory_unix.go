//go:build unix

package wasmmem

import (
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// Allocator makes each instance's linear memory one private anonymous
// mapping of its maximum size (the memory limit), committed page by page
// as the guest touches it; see memory.go. Pass it to InstantiateModule's
// context with experimental.WithMemoryAllocator.
func Allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(mapMemory)
}

func mapMemory(capacity, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 || uint64(int(max)) != max {
		return newHeapMemory(capacity)
	}
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return newHeapMemory(capacity) // address space exhausted (ulimit -v): the heap still works
	}
	return &mappedMemory{mapped: b}
}

// mappedMemory is a linear memory in a mapping of its maximum size:
// growing never moves it, and fresh pages read as zero, as WebAssembly
// wants of grown memory.
type mappedMemory struct{ mapped []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.mapped == nil || size > uint64(len(m.mapped)) {
		return nil
	}
	return m.mapped[:size]
}

// Free unmaps the memory. wazero calls it when the instance closes, after
// its last call; the host functions copy what they read from it.
func (m *mappedMemory) Free() {
	if m.mapped != nil {
		_ = unix.Munmap(m.mapped)
		m.mapped = nil
	}
}
