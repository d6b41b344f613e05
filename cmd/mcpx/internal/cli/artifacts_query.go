package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/query/jq"
	"github.com/mcpx-dev/mcpx/store"
)

var queryCmd = command{
	name:     "artifacts query",
	brief:    "read part of an artifact: lines, bytes, grep, a JSON path, jq, a PDF page, an archive entry",
	synopsis: "[--config FILE] [--store DIR] [--format text|json] [--max-chars N] ID (--lines A-B | --bytes A-B | --grep REGEX [--context N] | --json PATH | --jq EXPR | --page N | --entry NAME)",
	about: `
Query answers one question about artifact ID without writing all of its
bytes: a window of lines (1-based, inclusive) or bytes (0-based, B
excluded; binary bytes come as a hex dump), the lines a Go regular
expression matches (with line numbers, like grep -n), a gjson path or a jq
program over JSON, a PDF page's text, or an archive member (text inline;
binary, or text over the budget, stored as its own artifact whose id is
printed). Give exactly one of the mode flags.

The answer fits --max-chars characters. When something was cut, a note on
stderr says what, and how to ask for the next part. With --format json the
answer is one JSON object on stdout: text, cut, stored (an ArtifactRef) and total (lines,
bytes, matching lines, results or pages in all).

Exit codes: 0 answered, 1 the query failed (unknown id, a range past the
end, an invalid regex or jq program, over the time or memory budget),
2 bad flags.`,
	example: `
mcpx artifacts query --grep 'button "Submit"' --context 2 playwright_1a2b3c4d5e6f
mcpx artifacts query --lines 181-360 github_9f8e7d6c5b4a
mcpx artifacts query --jq '.items[] | select(.state == "open") | .title' github_9f8e7d6c5b4a
mcpx artifacts query --page 2 tableau_1a2b3c4d5e6f`,
}

// runArtifactsQuery is "mcpx artifacts query".
func (p program) runArtifactsQuery(args []string, stdout, stderr io.Writer) int {
	c := queryCmd
	fs := newFlagSet(c)
	var (
		o                         common
		format                    string
		maxChars                  int
		lines, byteRange, jsonArg string
		req                       query.Request
	)
	o.register(fs, p.stores)
	fs.StringVar(&format, "format", "text", "write the answer as `text`, or as json: one object {text, cut, stored, total}")
	fs.IntVar(&maxChars, "max-chars", query.DefaultMaxChars, fmt.Sprintf("answer in at most `N` characters (at least %d)", query.MinMaxChars))
	fs.StringVar(&lines, "lines", "", "show lines `A-B` (1-based, inclusive; \"A-\" as many as fit)")
	fs.StringVar(&byteRange, "bytes", "", "show bytes `A-B` (0-based, B excluded); binary as a hex dump")
	fs.StringVar(&req.Grep, "grep", "", "show the lines `REGEX` (Go syntax) matches, numbered")
	fs.IntVar(&req.Context, "context", 0, "with --grep, show `N` lines around each match")
	fs.StringVar(&jsonArg, "json", "", "show the JSON value at the gjson `PATH` (items.#.name)")
	fs.StringVar(&req.JQ, "jq", "", "run the jq program `EXPR` over the JSON artifact")
	fs.IntVar(&req.Page, "page", 0, "show the text of PDF page `N` (from 1)")
	fs.StringVar(&req.Entry, "entry", "", "show the archive member `NAME`")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, c, fmt.Errorf("want one artifact ID, got %d arguments", len(pos)))
	}
	req.JSON = jsonArg
	if format != "text" && format != "json" {
		return usageError(stderr, c, fmt.Errorf("--format %q: want text or json", format))
	}
	for _, r := range []struct {
		flag, arg string
		dst       **query.Range
	}{{"--lines", lines, &req.Lines}, {"--bytes", byteRange, &req.Bytes}} {
		if r.arg == "" {
			continue
		}
		rg, err := query.ParseRange(r.arg)
		if err != nil {
			return usageError(stderr, c, fmt.Errorf("%s %q: want A-B, A- or A", r.flag, r.arg))
		}
		*r.dst = &rg
	}
	if err := checkOneMode(req); err != nil {
		return usageError(stderr, c, err)
	}
	id := pos[0]
	if !store.ValidID(id) {
		return fail(stderr, c, invalidID(id))
	}
	// Only --entry writes: a binary member becomes its own artifact.
	o.readOnly = req.Entry == ""
	ctx := context.Background()
	st, code := o.open(ctx, c, stderr)
	if st == nil {
		return code
	}
	defer st.Close(ctx)

	ref, err := st.Stat(ctx, id)
	if err != nil {
		return fail(stderr, c, describe(err, id, st))
	}
	ans, err := query.Run(ctx, st, ref, req, query.Budget{MaxChars: maxChars, JQ: jq.Run, Memory: membudget.New(0)})
	if err != nil {
		return fail(stderr, c, fmt.Errorf("artifact %s: %w", id, err))
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ans); err != nil {
			return fail(stderr, c, fmt.Errorf("write output: %w", err))
		}
		return exitOK
	}
	if ans.Text != "" {
		if _, err := io.WriteString(stdout, strings.TrimSuffix(ans.Text, "\n")+"\n"); err != nil {
			return fail(stderr, c, fmt.Errorf("write output: %w", err))
		}
	}
	if ans.Cut != "" {
		fmt.Fprintf(stderr, "mcpx %s: %s\n", c.name, oneLine(ans.Cut))
	}
	return exitOK
}

// checkOneMode says which mode flags are missing or too many before the
// store is opened; query.Run checks the same.
func checkOneMode(r query.Request) error {
	var set []string
	for _, m := range []struct {
		name string
		on   bool
	}{
		{"--lines", r.Lines != nil}, {"--bytes", r.Bytes != nil}, {"--grep", r.Grep != ""}, {"--json", r.JSON != ""},
		{"--jq", r.JQ != ""}, {"--page", r.Page != 0}, {"--entry", r.Entry != ""},
	} {
		if m.on {
			set = append(set, m.name)
		}
	}
	switch {
	case len(set) == 0:
		return errors.New("give one of --lines, --bytes, --grep, --json, --jq, --page, --entry")
	case len(set) > 1:
		return fmt.Errorf("give one mode, not %s", strings.Join(set, " and "))
	case r.Context != 0 && r.Grep == "":
		return errors.New("--context goes with --grep")
	case r.Context < 0 || r.Page < 0:
		return errors.New("--context and --page take positive numbers")
	}
	return nil
}
