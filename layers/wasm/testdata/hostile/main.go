//go:build wasip1

// Command hostile is a test guest that misbehaves on request: the "mode"
// of its config picks the failure. It speaks ABI v1 by hand (no SDK) so it
// can also answer garbage.
package main

import (
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

const errFlag = 1 << 31

var pinned = map[uint32][]byte{}

var hoard [][]byte

func ptr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport plugin_abi_v1
func abi() {}

//go:wasmexport plugin_alloc
func alloc(n uint32) uint32 {
	b := make([]byte, n+1)
	p := ptr(b)
	pinned[p] = b
	return p
}

//go:wasmexport plugin_free
func free(p, n uint32) { delete(pinned, p) }

//go:wasmimport host log
func hostLog(level, p, n uint32)

//go:wasmimport host get_value
func getValue(pp, pl, bp, bc uint32) int64

//go:wasmimport host get_config
func getConfig(kp, kl, bp, bc uint32) int64

func str(s string) (uint32, uint32) {
	b := []byte(s)
	return ptr(b), uint32(len(b))
}

func out(b []byte, isErr bool) uint64 {
	p := ptr(b)
	pinned[p] = b
	r := uint64(p)<<32 | uint64(len(b))
	if isErr {
		r |= errFlag
	}
	return r
}

// field pulls a string field's value out of the request, crudely: this
// guest has no JSON library on purpose.
func field(req, key string) string {
	i := strings.Index(req, `"`+key+`":"`)
	if i < 0 {
		return ""
	}
	rest := req[i+len(key)+4:]
	return rest[:strings.IndexByte(rest, '"')]
}

//go:wasmexport plugin_transform
func transform(p, n uint32) uint64 {
	req := string(pinned[p][:n])
	switch mode := field(req, "mode_"); mode {
	case "loop":
		for {
		}
	case "sleep":
		time.Sleep(time.Hour)
		return out([]byte(`{"rewrites":[]}`), false)
	case "grow":
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	case "trap":
		var m map[string]int
		m["x"] = 1 // nil map write: a panic
	case "slow":
		// Busy for a while, then a good answer: an in-flight call. The
		// log line tells the test that the call is inside the guest.
		pp, pl := str("slow call started")
		hostLog(2, pp, pl)
		n := 0
		for i := 0; i < 20_000_000; i++ {
			n += i & 3
		}
		return out([]byte(`{"payload":{"slow":`+strconv.Itoa(n%2)+`}}`), false)
	case "garbage":
		return out([]byte("this is not JSON {"), false)
	case "wrong":
		return out([]byte(`{"rewrites":[{"path":"a","action":"explode"}]}`), false)
	case "unknown_field":
		return out([]byte(`{"rewritez":[]}`), false)
	case "huge":
		return out(make([]byte, 2<<20), false)
	case "badptr":
		return uint64(0xfffff000)<<32 | 4096
	case "guesterr":
		return out([]byte("cannot handle tool "+field(req, "tool")), true)
	case "log":
		for i := 0; i < 100; i++ {
			pp, pl := str("line " + strconv.Itoa(i))
			hostLog(2, pp, pl)
		}
	case "getvalue":
		path := field(req, "path_")
		pp, pl := str(path)
		// 1 MiB holds any value of the test documents; a larger buffer only
		// costs time (it grows guest memory by as much on every instance).
		buf := make([]byte, 1<<20)
		got := getValue(pp, pl, ptr(buf), uint32(len(buf)))
		cp, cl := str("")
		cfg := getConfig(cp, cl, ptr(buf[:0:1]), 0)
		return out([]byte(`{"payload":{"len":`+strconv.FormatInt(got, 10)+`,"config_len":`+strconv.FormatInt(cfg, 10)+`}}`), false)
	case "sandbox":
		_, ferr := os.ReadFile("/etc/hostname")
		_, derr := os.ReadDir("/")
		wd, _ := os.Getwd()
		now := time.Now().UTC().Format(time.RFC3339)
		s := `{"payload":{"read_err":` + q(errs(ferr)) + `,"readdir_err":` + q(errs(derr)) +
			`,"env":` + strconv.Itoa(len(os.Environ())) + `,"home":` + q(os.Getenv("HOME")) +
			`,"args":` + strconv.Itoa(len(os.Args)) + `,"wd":` + q(wd) + `,"now":` + q(now) + `}}`
		return out([]byte(s), false)
	}
	return out([]byte(`{"rewrites":[]}`), false)
}

func errs(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func q(s string) string { return strconv.Quote(s) }

func main() {}
