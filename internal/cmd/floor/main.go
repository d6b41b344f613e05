// Command floor is the minimal program that `mcpx transform` is measured
// against in BENCHMARKS.md: read a result file, find the one base64 value
// after `"content":"` (escaped or not), decode it, SHA-256 it and write +
// fsync it into a folder. It does nothing else: no validation, no layers,
// no index.
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
	out := make([]byte, asmb64.StdEncoding.DecodedLen(end-start))
	n, err := asmb64.StdEncoding.Decode(out, in[start:end])
	if err != nil {
		return err
	}
	sum := sha256.Sum256(out[:n])
	f, err := os.Create(filepath.Join(args[1], hex.EncodeToString(sum[:])))
	if err != nil {
		return err
	}
	if _, err := f.Write(out[:n]); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
