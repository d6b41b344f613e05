// Command floor is the tight single-purpose program that `mcpx transform`
// is measured against (BENCHMARKS.md, "The engine against its floor"):
// read a result file into one buffer of its size, find the one base64 value after
// `"content":"` (escaped or not), decode it with SIMD base64 in 64 KiB
// chunks while hashing it (SHA-256) and writing it to a temp file, fsync,
// and rename it to its hash. It does nothing else: no validation, no
// layers, no index.
//
//	floor RESULT.json DIR
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	asmb64 "github.com/segmentio/asm/base64"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: floor RESULT.json DIR")
	}
	in, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	key := []byte(`\"content\":\"`)
	start := bytes.Index(in, key)
	if start < 0 {
		key = []byte(`"content":"`)
		start = bytes.Index(in, key)
	}
	if start < 0 {
		return fmt.Errorf("no content value")
	}
	start += len(key)
	end := start + bytes.IndexAny(in[start:], `"\`)
	f, err := os.CreateTemp(args[1], "put-")
	if err != nil {
		return err
	}
	h := sha256.New()
	const chunk = 64 << 10 // a multiple of 4: whole base64 quanta
	buf := make([]byte, asmb64.StdEncoding.DecodedLen(chunk))
	for p := start; p < end; p += chunk {
		q := min(p+chunk, end)
		n, err := asmb64.StdEncoding.Decode(buf, in[p:q])
		if err != nil {
			return err
		}
		h.Write(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(args[1], hex.EncodeToString(h.Sum(nil))))
}
