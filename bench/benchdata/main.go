// Command benchdata writes the inputs of BENCHMARKS.md: a Tableau
// download_workbook CallToolResult whose JSON-in-text block carries a base64
// PDF of about SIZE bytes of JSON; or a CallToolResult whose one text block
// holds CHARS characters of an accessibility snapshot (as @playwright/mcp's
// browser_snapshot answers) or of plain text with no JSON escape.
//
//	benchdata SIZE_MIB OUT.json
//	benchdata snapshot|text CHARS OUT.json
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	asmb64 "github.com/segmentio/asm/base64"

	"github.com/mcpx-dev/mcpx/internal/snapshottext"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 3 {
		return runText(args)
	}
	if len(args) != 2 {
		return fmt.Errorf("usage: benchdata SIZE_MIB OUT.json")
	}
	mib, err := strconv.ParseFloat(args[0], 64)
	if err != nil {
		return err
	}
	raw := make([]byte, int(mib*(1<<20))*3/4)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	copy(raw, "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	inner := `{"content":"` + asmb64.StdEncoding.EncodeToString(raw) + `","name":"Sales Dashboard","format":"pdf"}`
	text, err := json.Marshal(inner)
	if err != nil {
		return err
	}
	f, err := os.Create(args[1])
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, `{"content":[{"type":"text","text":%s}],"isError":false}`, text)
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// runText writes the text results of `BENCH=text ./scripts/bench.sh`.
func runText(args []string) error {
	chars, err := strconv.Atoi(args[1])
	if err != nil || chars < 0 {
		return fmt.Errorf("CHARS %q: want a count of characters", args[1])
	}
	var text string
	switch args[0] {
	case "snapshot":
		text = snapshottext.Snapshot(chars)
	case "text":
		text = snapshottext.Plain(chars)
	default:
		return fmt.Errorf("usage: benchdata snapshot|text CHARS OUT.json")
	}
	return os.WriteFile(args[2], snapshottext.Result(text), 0o644)
}
