//go:build wasip1

// Command noexport is a test guest that claims ABI v1 but lacks
// plugin_transform.
package main

import "unsafe"

var keep [][]byte

//go:wasmexport plugin_abi_v1
func abi() {}

//go:wasmexport plugin_alloc
func alloc(n uint32) uint32 {
	b := make([]byte, n+1)
	keep = append(keep, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport plugin_free
func free(p, n uint32) {}

func main() {}
