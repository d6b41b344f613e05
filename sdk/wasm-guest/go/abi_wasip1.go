//go:build wasip1

package guest

import "unsafe"

// errFlag marks a response length as an error message.
const errFlag = 1 << 31

// pinned keeps the buffers the host holds pointers to alive, by address.
var pinned = map[uint32][]byte{}

// The request and response buffers are reused from call to call: an
// instance serves one call at a time, and every allocation a call avoids
// is garbage-collector work (and loop iterations under the host's deadline
// watch) saved.
var (
	inBuf, outBuf   []byte
	inBusy, outBusy bool
	inAddr, outAddr uint32
)

func ptrOf(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport plugin_abi_v1
func pluginABIv1() {}

//go:wasmexport plugin_alloc
func pluginAlloc(size uint32) uint32 {
	if size == 0 {
		size = 1
	}
	if !inBusy {
		if uint32(cap(inBuf)) < size {
			inBuf = make([]byte, size, size+size/4)
			inAddr = ptrOf(inBuf[:1])
		}
		inBuf = inBuf[:size]
		inBusy = true
		return inAddr
	}
	b := make([]byte, size)
	p := ptrOf(b)
	pinned[p] = b
	return p
}

//go:wasmexport plugin_free
func pluginFree(ptr, size uint32) {
	switch {
	case inBusy && ptr == inAddr:
		inBusy = false
	case outBusy && ptr == outAddr:
		outBusy = false
	default:
		delete(pinned, ptr)
	}
}

//go:wasmexport plugin_transform
func pluginTransform(ptr, size uint32) uint64 {
	var in []byte
	if inBusy && ptr == inAddr {
		in = inBuf
	} else {
		in = pinned[ptr]
	}
	if uint32(len(in)) < size {
		out := []byte("guest: plugin_transform: the input was not allocated by plugin_alloc")
		return pin(out) | errFlag
	}
	out, isErr := handle(in[:size], outBuf[:0])
	r := pin(out)
	if isErr {
		r |= errFlag
	}
	return r
}

// pin hands out a response: the reusable buffer when it is free and the
// response was written into it, else a pinned copy.
func pin(out []byte) uint64 {
	p := ptrOf(out)
	switch {
	case p == 0:
	case !outBusy:
		outBuf, outAddr, outBusy = out, p, true
	default:
		pinned[p] = out
	}
	return uint64(p)<<32 | uint64(uint32(len(out)))
}

//go:wasmimport host log
func hostLogImport(level, ptr, size uint32)

//go:wasmimport host get_config
func hostGetConfigImport(kptr, klen, bptr, bcap uint32) int64

//go:wasmimport host get_value
func hostGetValueImport(pptr, plen, bptr, bcap uint32) int64

func strPtr(s string) uint32 {
	if len(s) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

func hostLog(level Level, msg string) {
	hostLogImport(uint32(level), strPtr(msg), uint32(len(msg)))
}

// fetch calls a get_* import, growing the buffer once when the value is
// bigger than the first guess.
// (TinyGo cannot take a wasmimport function as a value, hence the flag.)
func fetch(value bool, key string) ([]byte, bool) {
	buf := make([]byte, 4096)
	for {
		var n int64
		if value {
			n = hostGetValueImport(strPtr(key), uint32(len(key)), ptrOf(buf), uint32(len(buf)))
		} else {
			n = hostGetConfigImport(strPtr(key), uint32(len(key)), ptrOf(buf), uint32(len(buf)))
		}
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(buf) {
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}

func hostGetConfig(key string) ([]byte, bool) { return fetch(false, key) }

func hostGetValue(path string) ([]byte, bool) { return fetch(true, path) }
